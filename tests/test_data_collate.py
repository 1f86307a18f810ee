"""default_collate / default_convert against torch's own functions as the oracle."""
from __future__ import annotations

import collections
from typing import NamedTuple

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch
import mytorch.utils.data as mdata
from mytorch._pieces import pieces
from tests.data_support import T, assert_same, build, same_error


class Point(NamedTuple):
    x: object
    y: object


class ListKind(list):
    """A list subclass: default_collate keeps the type (a MutableSequence is copied)."""


class FrozenMap(collections.abc.Mapping):
    """A read-only mapping: rebuilt by calling the type with a dict."""

    def __init__(self, d: dict) -> None:
        self._d = dict(d)

    def __getitem__(self, k: object) -> object:
        return self._d[k]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def collate_both(batch: list) -> tuple:
    return mdata.default_collate(build(batch, mytorch)), tdata.default_collate(build(batch, torch))


r = _rng()
CASES = {
    "tensors f32": [T(r.standard_normal((2, 3)).astype(np.float32)) for _ in range(3)],
    "tensors i64 scalar": [T(np.array(i, dtype=np.int64)) for i in range(4)],
    "tensors bool": [T(r.random(3) > 0.5) for _ in range(2)],
    "numpy f32": [r.standard_normal(4).astype(np.float32) for _ in range(3)],
    "numpy u8 image": [r.integers(0, 255, (2, 2, 3), dtype=np.uint8) for _ in range(2)],
    "numpy bool": [r.random(3) > 0.5 for _ in range(2)],
    "numpy f64 0-d": [np.array(1.5), np.array(2.5)],
    "numpy scalars f32": [np.float32(1.5), np.float32(-2)],
    "numpy scalars i16": [np.int16(3), np.int16(4)],
    "numpy scalars bool": [np.bool_(True), np.bool_(False)],
    "floats": [1.5, 2.0, -3.25],
    "ints": [1, 2, 3],
    "bools": [True, False],
    "int then float": [1, 2.5],           # the first sample decides: torch.tensor([1, 2.5]) -> float32
    "strings": ["a", "bb"],
    "bytes": [b"a", b"b"],
    "tuples": [(T(np.ones(2, np.float32)), 0), (T(np.zeros(2, np.float32)), 1)],
    "lists": [[1, 2.5, "x"], [3, 4.5, "y"]],
    "dict": [{"image": T(np.ones((1, 2), np.float32)), "label": 3, "name": "a"},
             {"image": T(np.zeros((1, 2), np.float32)), "label": 4, "name": "b"}],
    "nested": [{"a": ({"b": [1.0, np.float64(2.0)]}, "s"), "c": Point(1, T(np.ones(2)))},
               {"a": ({"b": [3.0, np.float64(4.0)]}, "t"), "c": Point(2, T(np.zeros(2)))}],
    "namedtuple": [Point(1.0, "p"), Point(2.0, "q")],
    "OrderedDict": [collections.OrderedDict(b=1, a=2.0), collections.OrderedDict(b=3, a=4.0)],
    "defaultdict": [collections.defaultdict(int, k=1), collections.defaultdict(int, k=2)],
    "list subclass": [ListKind([1, 2]), ListKind([3, 4])],
    "read-only mapping": [FrozenMap({"k": 1}), FrozenMap({"k": 2})],
    "numpy string scalars": [np.str_("a"), np.str_("b")],
}


@pytest.mark.parametrize("name", list(CASES))
def test_default_collate_matches_torch(name: str) -> None:
    mine, theirs = collate_both(CASES[name])
    assert_same(mine, theirs)


def test_int_then_float_is_float32() -> None:
    # The first sample's type picks the rule: [1, 2.5] goes through torch.tensor and becomes float32.
    assert mdata.default_collate([1, 2.5]).dtype == mytorch.float32
    assert mdata.default_collate([2.5, 1]).dtype == mytorch.float64


def test_defaultdict_keeps_its_default() -> None:
    out = mdata.default_collate([collections.defaultdict(list, k=1)])
    assert isinstance(out, collections.defaultdict) and out["missing"] == []


@pytest.mark.parametrize("batch", [
    [T(np.zeros(3, np.float32)), T(np.zeros(2, np.float32))],                    # stack sizes
    [np.zeros(3), np.zeros(2)],                                                 # arrays too
    [[1, 2], [3]],                                                              # ragged lists
    [np.array(["a", "b"]), np.array(["c", "d"])],                               # strings array
    [np.array([{}, 1], dtype=object), np.array([2, 3], dtype=object)],          # object array
    [None, None],
    [object(), object()],
    [{"a": 1}, {"b": 2}],                                                       # missing key
], ids=["tensor sizes", "array sizes", "ragged", "str array", "object array", "None", "object",
        "missing key"])
def test_default_collate_errors_match_torch(batch: list) -> None:
    def mine() -> object:
        return mdata.default_collate(build(batch, mytorch))

    def theirs() -> object:
        return tdata.default_collate(build(batch, torch))

    err = same_error(mine, theirs)
    if isinstance(err, TypeError):
        # the message names the offending type, e.g. <class 'NoneType'> or <U1
        assert "default_collate: batch must contain" in str(err)


CONVERT = {
    "array": np.arange(6, dtype=np.int32).reshape(2, 3),
    "np scalar": np.float32(2.5),
    "np str scalar": np.str_("x"),
    "str array": np.array(["a", "b"]),
    "tuple -> list": (np.ones(2), 1, "s"),
    "namedtuple": Point(np.zeros(2), 3),
    "dict": {"a": np.ones(1), "b": [np.zeros(1), "t"]},
    "tensor": T(np.ones(2, np.float32)),
    "number": 3.5,
    "string": "hello",
    "list subclass": ListKind([np.ones(1)]),
}


@pytest.mark.parametrize("name", list(CONVERT))
def test_default_convert_matches_torch(name: str) -> None:
    x = CONVERT[name]
    assert_same(mdata.default_convert(build(x, mytorch)), tdata.default_convert(build(x, torch)))


def test_default_collate_does_not_copy_container_samples() -> None:
    batch = [{"a": 1}, {"a": 2}]
    mdata.default_collate(batch)
    assert batch == [{"a": 1}, {"a": 2}]


def test_collate_fn_map_extends_collate() -> None:
    class Box:
        def __init__(self, v: int) -> None:
            self.v = v

    def collate_box(batch: list, *, collate_fn_map: dict | None = None) -> list:
        return [b.v for b in batch]

    from mytorch.utils.data._utils.collate import collate, default_collate_fn_map
    out = collate([{"b": Box(1)}, {"b": Box(2)}],
                  collate_fn_map={**default_collate_fn_map, Box: collate_box})
    assert out == {"b": [1, 2]}


def test_collate_nested_piece_one_level() -> None:
    # The piece handles one level; `collate` (here: list) handles what is below.
    assert pieces.collate_nested([{"a": 1, "b": 2}, {"a": 3, "b": 4}], list) == {"a": [1, 3], "b": [2, 4]}
    assert pieces.collate_nested([(1, "x"), (2, "y")], list) == [[1, 2], ["x", "y"]]
    assert pieces.collate_nested([Point(1, 2), Point(3, 4)], list) == Point([1, 3], [2, 4])


# ---------------------------------------------------------------------------------- property test
def _schema() -> st.SearchStrategy:
    leaf = st.sampled_from(["float", "int", "bool", "str", "np_f32", "np_i64", "tensor_f32",
                            "tensor_i64", "np_scalar_f64", "np_scalar_i32"]).flatmap(
        lambda kind: st.tuples(st.just(kind), st.lists(st.integers(1, 3), max_size=2)))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.tuples(st.just("dict"), st.lists(inner, min_size=1, max_size=3)),
        st.tuples(st.just("tuple"), st.lists(inner, min_size=1, max_size=3)),
        st.tuples(st.just("list"), st.lists(inner, min_size=1, max_size=3)),
        st.tuples(st.just("point"), st.tuples(inner, inner))), max_leaves=6)


def _instance(schema: tuple, rng: np.random.Generator) -> object:
    kind, arg = schema
    shape = tuple(arg) if isinstance(arg, list) and all(isinstance(a, int) for a in arg) else None
    makers = {
        "float": lambda: float(rng.standard_normal()),
        "int": lambda: int(rng.integers(-5, 5)),
        "bool": lambda: bool(rng.random() > 0.5),
        "str": lambda: "s" + str(int(rng.integers(0, 9))),
        "np_f32": lambda: rng.standard_normal(shape).astype(np.float32),
        "np_i64": lambda: rng.integers(0, 9, shape),
        "tensor_f32": lambda: T(rng.standard_normal(shape).astype(np.float32)),
        "tensor_i64": lambda: T(rng.integers(0, 9, shape)),
        "np_scalar_f64": lambda: np.float64(rng.standard_normal()),
        "np_scalar_i32": lambda: np.int32(rng.integers(0, 9)),
    }
    if kind in makers:
        return makers[kind]()
    if kind == "dict":
        return {f"k{i}": _instance(s, rng) for i, s in enumerate(arg)}
    if kind == "tuple":
        return tuple(_instance(s, rng) for s in arg)
    if kind == "list":
        return [_instance(s, rng) for s in arg]
    return Point(_instance(arg[0], rng), _instance(arg[1], rng))


@settings(max_examples=60, deadline=None)
@given(schema=_schema(), batch_size=st.integers(1, 4), seed=st.integers(0, 2 ** 16))
def test_default_collate_nested_property(schema: tuple, batch_size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch = [_instance(schema, rng) for _ in range(batch_size)]
    mine, theirs = collate_both(batch)
    assert_same(mine, theirs)
