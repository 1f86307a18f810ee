"""Chapter 01's pieces against torch: the strides, windows, broadcast shapes, gather keys, one-hot
and unique that mytorch computes through them, and each fused fast path against its readable
reference (exercise 01.N's solution)."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch
from mytorch._pieces import REGISTRY


def _geometry(rnd: random.Random) -> tuple[tuple, tuple]:
    """A random (shape, stride): permuted, strided, size-1 dims with odd strides, expanded dims."""
    nd = rnd.randint(1, 4)
    shape = [rnd.randint(1, 4) for _ in range(nd)]
    order = list(range(nd))
    rnd.shuffle(order)
    stride, step = [0] * nd, rnd.choice([1, 1, 2])
    for d in reversed(order):
        stride[d] = step
        step *= shape[d] * rnd.choice([1, 1, 2])
    for d in range(nd):
        if shape[d] == 1 and rnd.random() < 0.3:
            stride[d] = rnd.randint(0, 9)
        elif shape[d] == 1 and rnd.random() < 0.3:
            shape[d], stride[d] = 3, 0
    return tuple(shape), tuple(stride)


def _new_shape(n: int, rnd: random.Random) -> tuple:
    factors, m, p = [], n, 2
    while m > 1:
        while m % p == 0:
            factors.append(p)
            m //= p
        p += 1
    rnd.shuffle(factors)
    dims: list[int] = []
    for f in factors:
        if dims and rnd.random() < 0.5:
            dims[-1] *= f
        else:
            dims.append(f)
    for _ in range(rnd.randint(0, 2)):
        dims.insert(rnd.randint(0, len(dims)), 1)
    return tuple(dims) or (1,)


def _both(shape: tuple, stride: tuple) -> tuple:
    size = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    return (mytorch.arange(size).as_strided(shape, stride),
            torch.arange(size).as_strided(shape, stride))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_view_and_reshape_of_any_geometry_match_torch(seed: int) -> None:
    rnd = random.Random(seed)
    shape, stride = _geometry(rnd)
    mx, tx = _both(shape, stride)
    new = _new_shape(int(np.prod(shape)), rnd)
    try:
        want = tx.view(new).stride()
    except RuntimeError:
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            mx.view(new)
    else:
        assert mx.view(new).stride() == want
    assert mx.reshape(new).stride() == tx.reshape(new).stride()
    assert mx.is_contiguous() == tx.is_contiguous()


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_unfold_of_any_geometry_matches_torch(seed: int) -> None:
    rnd = random.Random(seed)
    shape, stride = _geometry(rnd)
    mx, tx = _both(shape, stride)
    d = rnd.randrange(len(shape))
    size, step = rnd.randint(0, shape[d]), rnd.randint(1, 3)
    mu, tu = mx.unfold(d, size, step), tx.unfold(d, size, step)
    assert (tuple(mu.shape), mu.stride()) == (tuple(tu.shape), tu.stride())
    assert mu.tolist() == tu.tolist()


def test_empty_tensors_strides_and_as_strided_bounds_match_torch() -> None:
    for shape in [(0,), (2, 0, 3), (0, 0), (4, 1, 0, 2)]:
        assert mytorch.zeros(shape).stride() == torch.zeros(shape).stride()
        assert mytorch.zeros(shape).t().stride() == torch.zeros(shape).t().stride() \
            if len(shape) == 2 else True
    for geometry in [((4, 3), (2, 1), 0), ((2, 2), (1, 2), 3), ((3,), (0,), 5)]:
        errors = []
        for lib in (mytorch, torch):
            try:
                lib.as_strided(lib.arange(6.0), *geometry)
                errors.append(None)
            except RuntimeError as exc:
                errors.append(str(exc))
        assert errors[0] == errors[1]


@pytest.mark.parametrize("shapes", [((3, 1), (4,)), ((2, 1), (3, 4)), ((1, 3), (4, 5)), ((2, 3), (4, 5)),
                                    ((5,), (2, 1, 4)), ((3, 1, 1), (2, 7, 9)), ((0,), (1,)), ((), (2, 0))])
def test_broadcast_shapes_and_their_errors_match_torch(shapes: tuple) -> None:
    def run(lib):
        try:
            return list(lib.broadcast_shapes(*shapes))
        except RuntimeError as exc:
            return str(exc)

    assert run(mytorch) == run(torch)


def test_gather_key_reference_and_fast_path_agree() -> None:
    p = REGISTRY["gather_index"]
    gen = mytorch.Generator().manual_seed(0)
    for shape, dim in [((3,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 2), ((2, 1, 3, 2), 1)]:
        index = mytorch.randint(0, 5, shape, generator=gen)
        ref, fast = p.reference(index, dim), p.fast(index, dim)
        assert len(ref) == len(fast) == index.dim()
        for r, f in zip(ref, fast, strict=True):
            assert tuple(r.shape) == tuple(f.shape) and r.tolist() == f.tolist()


def test_one_hot_reference_and_fast_path_agree() -> None:
    p = REGISTRY["encode_one_hot"]
    labels = mytorch.tensor([[3, 0, 1], [2, 2, 0]])
    ref, fast = p.reference(labels, 5), p.fast(labels, 5)
    assert ref.dtype is fast.dtype is mytorch.int64 and ref.tolist() == fast.tolist()
    assert mytorch.nn.functional.one_hot(labels).tolist() == \
        torch.nn.functional.one_hot(torch.tensor(labels.tolist())).tolist()


@pytest.mark.parametrize("values", [[3, 1, 3, 2, 3, 1], [2.5, float("nan"), -1.0, float("nan"), 2.5],
                                    [True, False, True], [7]])
def test_unique_reference_fast_path_and_torch_agree(values: list) -> None:
    p = REGISTRY["unique_sorted"]
    x = mytorch.tensor(values)
    want = torch.unique(torch.tensor(values), return_inverse=True, return_counts=True)
    for got in (p.reference(x), p.fast(x), mytorch.unique(x, return_inverse=True, return_counts=True)):
        assert [str(t.tolist()) for t in got] == [str(t.tolist()) for t in want]
        assert [str(t.dtype) for t in got] == [str(t.dtype) for t in want]


def test_get_device_matches_torch() -> None:
    assert mytorch.ones(2).get_device() == torch.ones(2).get_device() == -1
    assert mytorch.get_device(mytorch.ones(2)) == torch.get_device(torch.ones(2)) == -1
