"""Real PyTorch as the test oracle: run the same snippet on mytorch and torch, compare everything.

A case is a function ``fn(lib, *tensors)`` written once against the torch API and run twice, with
``lib`` = mytorch and ``lib`` = torch. ``check`` compares the outputs' values, dtypes and shapes, and
(with ``grad=True``) the gradients of every floating input after backpropagating a random weighting
of every floating output.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import numpy as np
import pytest

import mytorch

try:
    import torch  # type: ignore[no-redef]
except ImportError as e:  # the oracle is a test dependency: make its absence loud
    raise ImportError("tests need real PyTorch as the oracle: pip install torch==2.13.0 "
                      "(make test installs it)") from e


@dataclasses.dataclass
class Case:
    """One oracle comparison: ``fn(lib, *inputs)`` on both libraries."""

    name: str
    fn: Callable[..., Any]
    inputs: Sequence[Any]
    grad: bool = True
    atol: float = 1e-5
    rtol: float = 1.3e-6
    check_dtype: bool = True

    def __str__(self) -> str:
        return self.name


def to_torch(x: Any, requires_grad: bool = False) -> Any:
    if isinstance(x, np.ndarray):
        t = torch.from_numpy(x.copy())
        if requires_grad and t.is_floating_point():
            t.requires_grad_(True)
        return t
    return x


def to_mytorch(x: Any, requires_grad: bool = False) -> Any:
    if isinstance(x, np.ndarray):
        t = mytorch.from_numpy(x.copy())
        if requires_grad and t.is_floating_point():
            t.requires_grad_(True)
        return t
    return x


def as_numpy(x: Any) -> Any:
    """Either library's output → NumPy (recursively through tuples, lists, named tuples)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy(force=True)
    if isinstance(x, mytorch.Tensor):
        return np.asarray(x.detach().cpu().numpy())
    if isinstance(x, (tuple, list)):
        return type(x)(as_numpy(v) for v in x) if not hasattr(x, "_fields") else \
            tuple(as_numpy(v) for v in x)
    return x


def _flat(x: Any) -> list:
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _flat(item)]
    return [x]


def assert_same(mine: Any, ref: Any, atol: float = 1e-5, rtol: float = 1.3e-6,
                check_dtype: bool = True, what: str = "output") -> None:
    """Values, shapes and dtypes of ``mine`` (mytorch) equal ``ref`` (torch)."""
    m, r = _flat(mine), _flat(ref)
    assert len(m) == len(r), f"{what}: {len(m)} outputs vs torch's {len(r)}"
    for i, (a, b) in enumerate(zip(m, r)):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, mytorch.Tensor), f"{what}[{i}]: got {type(a).__name__}, torch gives a Tensor"
            assert tuple(a.shape) == tuple(b.shape), f"{what}[{i}]: shape {tuple(a.shape)} vs torch {tuple(b.shape)}"
            if check_dtype:
                assert str(a.dtype) == str(b.dtype), f"{what}[{i}]: dtype {a.dtype} vs torch {b.dtype}"
            an, bn = as_numpy(a), as_numpy(b)
            if bn.dtype == np.bool_ or np.issubdtype(bn.dtype, np.integer):
                np.testing.assert_array_equal(an, bn, err_msg=f"{what}[{i}]")
            else:
                np.testing.assert_allclose(an, bn, atol=atol, rtol=rtol, equal_nan=True,
                                           err_msg=f"{what}[{i}]")
        elif isinstance(b, (float, int, bool, complex)):
            assert not isinstance(a, (mytorch.Tensor,)), f"{what}[{i}]: torch returns a Python number"
            np.testing.assert_allclose(a, b, atol=atol, rtol=rtol, err_msg=f"{what}[{i}]")
        else:
            assert a == b or str(a) == str(b), f"{what}[{i}]: {a!r} vs torch {b!r}"


def check(case: Case, seed: int = 0) -> None:
    """Run ``case`` on both libraries; compare forward, then (optionally) every input's gradient."""
    grad = case.grad
    mins = [to_mytorch(x, grad) for x in case.inputs]
    tins = [to_torch(x, grad) for x in case.inputs]
    mout = case.fn(mytorch, *mins)
    tout = case.fn(torch, *tins)
    assert_same(mout, tout, case.atol, case.rtol, case.check_dtype)
    if not grad:
        return
    rng = np.random.default_rng(seed)
    mloss, tloss = None, None
    for a, b in zip(_flat(mout), _flat(tout)):
        if isinstance(b, torch.Tensor) and b.requires_grad and b.is_floating_point():
            w = rng.standard_normal(tuple(b.shape)).astype(as_numpy(b).dtype)
            ml = (a * mytorch.from_numpy(w.copy())).sum()
            tl = (b * torch.from_numpy(w.copy())).sum()
            mloss = ml if mloss is None else mloss + ml
            tloss = tl if tloss is None else tloss + tl
    if tloss is None:
        return
    tloss.backward()
    mloss.backward()
    for i, (a, b) in enumerate(zip(mins, tins)):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            if b.grad is None:
                assert a.grad is None or np.allclose(as_numpy(a.grad), 0), f"grad of input {i}: torch has none"
                continue
            assert a.grad is not None, f"grad of input {i}: mytorch computed none, torch did"
            assert_same(a.grad, b.grad, case.atol * 10, case.rtol * 10, case.check_dtype,
                        what=f"grad of input {i}")


def randn(*shape: int, dtype: Any = np.float32, seed: int | None = None) -> np.ndarray:
    """A reproducible standard-normal NumPy array (seeded by its shape unless told)."""
    rng = np.random.default_rng(seed if seed is not None else hash(shape) % 2**32)
    return rng.standard_normal(shape).astype(dtype)


def check_raises(fn: Callable[..., Any], *inputs: Any) -> BaseException:
    """Both libraries raise, with the same exception class; returns mytorch's exception."""
    with pytest.raises(Exception) as tinfo:
        fn(torch, *[to_torch(x) for x in inputs])
    with pytest.raises(Exception) as minfo:
        fn(mytorch, *[to_mytorch(x) for x in inputs])
    same = isinstance(minfo.value, type(tinfo.value)) or type(minfo.value).__name__ == \
        type(tinfo.value).__name__.lstrip("_")  # torch._C._LinAlgError vs mytorch.linalg.LinAlgError
    assert same, \
        f"mytorch raised {type(minfo.value).__name__}: {minfo.value}; torch raises " \
        f"{type(tinfo.value).__name__}: {tinfo.value}"
    return minfo.value
