"""dtypes: promotion tables, result_type priorities, can_cast, finfo/iinfo, casting methods."""
from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_same, check_raises

import mytorch

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
         "complex64", "complex128"]
PAIRS = list(itertools.product(NAMES, NAMES))


def dt(lib, name):
    return getattr(lib, name)


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promote_types_and_can_cast(a, b):
    assert str(mytorch.promote_types(dt(mytorch, a), dt(mytorch, b))) == \
        str(torch.promote_types(dt(torch, a), dt(torch, b)))
    assert mytorch.can_cast(dt(mytorch, a), dt(mytorch, b)) == \
        torch.can_cast(dt(torch, a), dt(torch, b))


# An operand is a dtype name plus a priority: "t" = tensor with dims, "z" = 0-dim tensor,
# "s" = a Python number of that category.
SCALARS = {"bool": True, "int64": 3, "float32": 2.5, "complex64": 1j}


def operand(lib, kind, name):
    if kind == "t":
        return lib.ones(2, dtype=dt(lib, name))
    if kind == "z":
        return lib.ones((), dtype=dt(lib, name))
    return SCALARS[name]


@pytest.mark.parametrize("ka,kb", [("t", "z"), ("z", "t"), ("z", "z"), ("t", "t"), ("t", "s"),
                                   ("s", "t"), ("z", "s"), ("s", "z")])
def test_result_type_pairs(ka, kb):
    checked = 0
    for a, b in PAIRS:
        if (ka == "s" and a not in SCALARS) or (kb == "s" and b not in SCALARS):
            continue
        ref = torch.result_type(operand(torch, ka, a), operand(torch, kb, b))
        if str(ref) == "torch.complex32":
            continue
        mine = mytorch.result_type(operand(mytorch, ka, a), operand(mytorch, kb, b))
        assert str(mine) == str(ref), f"{ka}:{a} with {kb}:{b}: {mine} vs torch {ref}"
        checked += 1
    assert checked >= 40


SCALAR_NAMES = list(SCALARS)


@given(first=st.tuples(st.sampled_from("tz"), st.sampled_from(NAMES)),
       rest=st.lists(st.one_of(st.tuples(st.sampled_from("tz"), st.sampled_from(NAMES)),
                               st.tuples(st.just("s"), st.sampled_from(SCALAR_NAMES))),
                     min_size=1, max_size=3))
@settings(max_examples=300, deadline=None)
@pytest.mark.filterwarnings("ignore:ComplexHalf")
def test_promotion_through_chained_add(first, rest):
    """``a + b + c + ...`` over tensors, 0-dim tensors and numbers has torch's dtype at each step."""
    ops = [first] + rest
    tres, mres = operand(torch, *first), operand(mytorch, *first)
    for kind, name in rest:
        tres = torch.add(tres, operand(torch, kind, name))
        if str(tres.dtype) == "torch.complex32":
            return  # torch's half-complex: mytorch has no such dtype
        mres = mytorch.add(mres, operand(mytorch, kind, name))
        assert str(mres.dtype) == str(tres.dtype), f"after {ops}: {mres.dtype} vs {tres.dtype}"
        assert tuple(mres.shape) == tuple(tres.shape)


@pytest.mark.parametrize("a,b", list(itertools.product(SCALARS.values(), repeat=2)), ids=str)
def test_result_type_of_two_numbers(a, b):
    assert str(mytorch.result_type(a, b)) == str(torch.result_type(a, b))


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes(name):
    m, r = dt(mytorch, name), dt(torch, name)
    assert repr(m) == repr(r) == f"torch.{name}" and str(m) == str(r)
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(m, attr) == getattr(r, attr), attr
    assert str(m.to_real()) == str(r.to_real())
    assert pickle.loads(pickle.dumps(m)) is m


def test_dtype_aliases():
    pairs = [("half", "float16"), ("float", "float32"), ("double", "float64"), ("short", "int16"),
             ("int", "int32"), ("long", "int64"), ("cfloat", "complex64"), ("cdouble", "complex128")]
    for alias, name in pairs:
        assert dt(mytorch, alias) is dt(mytorch, name)
        assert str(dt(mytorch, alias)) == str(dt(torch, alias))


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "complex64", "complex128", None])
def test_finfo(name):
    m = mytorch.finfo() if name is None else mytorch.finfo(dt(mytorch, name))
    r = torch.finfo() if name is None else torch.finfo(dt(torch, name))
    for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(m, f) == getattr(r, f), f
    assert repr(m) == repr(r)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    m, r = mytorch.iinfo(dt(mytorch, name)), torch.iinfo(dt(torch, name))
    for f in ("bits", "max", "min", "dtype"):
        assert getattr(m, f) == getattr(r, f), f
    assert repr(m) == repr(r)


@pytest.mark.parametrize("fn", [lambda t: t.finfo(t.int32), lambda t: t.iinfo(t.float32),
                                lambda t: t.iinfo(t.bool), lambda t: t.finfo(t.bool)],
                         ids=["finfo_int", "iinfo_float", "iinfo_bool", "finfo_bool"])
def test_info_errors(fn):
    check_raises(fn)


# ----------------------------------------------------------------------------- casting
VALUES = np.array([-2.7, -1.5, -0.5, 0.0, 0.5, 1.5, 2.7, 127.9, -128.9, 200.2], dtype=np.float32)


@pytest.mark.parametrize("method", ["long", "int", "short", "char", "byte", "bool", "half",
                                    "float", "double", "cfloat", "cdouble"])
@pytest.mark.parametrize("src", ["float32", "float64", "int64", "bool", "uint8"])
def test_casting_methods(method, src):
    if src == "uint8" or method in ("char", "byte"):
        vals = np.abs(VALUES[:8]) if method == "byte" or src == "uint8" else VALUES[:8]
    else:
        vals = VALUES
    arr = vals.astype(src)
    assert_same(getattr(mytorch.from_numpy(arr.copy()), method)(),
                getattr(torch.from_numpy(arr.copy()), method)())


@pytest.mark.parametrize("target", NAMES)
def test_to_dtype_from_float_truncates_toward_zero(target):
    arr = VALUES[:8]
    if target in ("uint8",):
        arr = np.abs(arr)
    assert_same(mytorch.from_numpy(arr.copy()).to(dt(mytorch, target)),
                torch.from_numpy(arr.copy()).to(dt(torch, target)))


TO_CASES = {
    "positional_dtype": lambda t: t.tensor([1.5]).to(t.int32),
    "keyword_dtype": lambda t: t.tensor([1.5]).to(dtype=t.float64),
    "device_and_dtype": lambda t: t.tensor([1.5]).to("cpu", t.float64),
    "other_tensor": lambda t: t.tensor([1.5]).to(t.tensor([1], dtype=t.int8)),
    "python_float": lambda t: t.tensor([1, 2]).to(float),
    "int_wraps_uint8": lambda t: t.tensor([300, -1]).to(t.uint8),
    "int_wraps_int8": lambda t: t.tensor([200, 128]).to(t.int8),
    "bool_to_half": lambda t: t.tensor([True, False]).to(t.float16),
    "float_to_bool": lambda t: t.tensor([-2.7, 0.0, 0.5, float("nan")]).bool(),
    "half_overflow": lambda t: t.tensor([1 / 3, 70000.0]).half(),
    "type_string": lambda t: t.tensor([1.5]).type("torch.DoubleTensor"),
    "type_string_int": lambda t: t.tensor([1.5]).type("torch.IntTensor"),
    "type_dtype": lambda t: t.tensor([1.5]).type(t.int64),
    "type_as": lambda t: t.tensor([1.5]).type_as(t.ones(1, dtype=t.int16)),
    "to_keeps_grad": lambda t: t.ones(2, requires_grad=True).to(t.float64),
}


@pytest.mark.parametrize("fn", TO_CASES.values(), ids=TO_CASES.keys())
def test_to_and_type(fn):
    m, r = fn(mytorch), fn(torch)
    assert_same(m, r)
    assert m.requires_grad == r.requires_grad


def test_to_returns_self_unless_needed():
    for lib in (mytorch, torch):
        x = lib.tensor([1.5])
        assert x.to(lib.float32) is x and x.to("cpu") is x and x.type(lib.float32) is x
        assert x.to(lib.float32, copy=True) is not x
        assert x.double() is not x and x.float() is x


def test_to_backward_casts_gradient_back():
    for lib in (mytorch, torch):
        x = lib.ones(3, requires_grad=True)
        y = x.to(lib.float64)
        assert y.grad_fn.name() == "ToCopyBackward0"
        (y * 2).sum().backward()
        assert str(x.grad.dtype) == "torch.float32" and x.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("name", NAMES)
def test_type_names(name):
    assert mytorch.ones(1, dtype=dt(mytorch, name)).type() == torch.ones(1, dtype=dt(torch, name)).type()


@pytest.mark.parametrize("fn", [lambda t: t.ones(1).type("torch.FooTensor"),
                                lambda t: t.ones(1).type("float"),
                                lambda t: t.ones(1).to(foo=1)], ids=["bad_name", "bare_name", "bad_kw"])
def test_type_errors(fn):
    check_raises(fn)


@pytest.mark.parametrize("name", ["float", "int", "bool", "complex"])
def test_python_types_as_dtype(name):
    py = {"float": float, "int": int, "bool": bool, "complex": complex}[name]
    assert str(mytorch.zeros(2, dtype=py).dtype) == str(torch.zeros(2, dtype=py).dtype)
