"""Helpers for layer tests: run the same layer in mytorch and torch with the *same weights*.

``F(lib)`` / ``NN(lib)`` give ``nn.functional`` / ``nn`` of either library, so one test body
serves both. ``copy_state`` copies torch's parameters and buffers into a mytorch module (same
names in the same order is itself checked). ``compare_module`` runs forward + backward on both
and compares outputs, the input's gradient, every parameter's gradient and every buffer.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from oracle import as_numpy, assert_same

import mytorch


def F(lib: Any) -> Any:
    return torch.nn.functional if lib is torch else mytorch.nn.functional


def NN(lib: Any) -> Any:
    return torch.nn if lib is torch else mytorch.nn


def copy_state(mine: Any, theirs: Any) -> None:
    """Give ``mine`` (mytorch) exactly ``theirs``'s (torch) parameters and buffers."""
    mp, tp = list(mine.named_parameters()), list(theirs.named_parameters())
    assert [n for n, _ in mp] == [n for n, _ in tp], "parameter names/order differ from torch"
    mb, tb = list(mine.named_buffers()), list(theirs.named_buffers())
    assert [n for n, _ in mb] == [n for n, _ in tb], "buffer names/order differ from torch"
    with mytorch.no_grad():
        for (_, a), (_, b) in zip(mp + mb, tp + tb, strict=False):
            assert tuple(a.shape) == tuple(b.shape)
            a.copy_(mytorch.from_numpy(b.detach().numpy().copy()))


def _outputs(out: Any) -> list:
    """Flatten outputs (tuples, PackedSequence) to a list of tensors."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _outputs(o)]
    return [out] if isinstance(out, (torch.Tensor, mytorch.Tensor)) else []


def compare_module(make: Callable[[Any], Any], inputs: list[np.ndarray], steps: int = 1,
                   train: bool = True, call: Callable | None = None, atol: float = 1e-5,
                   rtol: float = 1e-5, seed: int = 0) -> tuple[Any, Any]:
    """Build the layer with ``make(lib)`` in both libraries, copy torch's weights into mytorch's,
    then ``steps`` times: forward (``call(layer, lib, *inputs)``), backward of a random weighting
    of every output, and compare outputs, input grads, parameter grads and buffers."""
    tmod, mmod = make(torch), make(mytorch)
    copy_state(mmod, tmod)
    tmod.train(train)
    mmod.train(train)
    call = call or (lambda layer, lib, *xs: layer(*xs))
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        tin = [torch.from_numpy(x.copy()).requires_grad_(x.dtype.kind == "f") for x in inputs]
        min_ = [mytorch.from_numpy(x.copy()).requires_grad_(x.dtype.kind == "f") for x in inputs]
        for m in (tmod, mmod):
            m.zero_grad()
        tout, mout = call(tmod, torch, *tin), call(mmod, mytorch, *min_)
        touts, mouts = _outputs(tout), _outputs(mout)
        assert_same(mouts, touts, atol, rtol)
        tl, ml = 0, 0
        for a, b in zip(mouts, touts, strict=False):
            if b.requires_grad:
                w = rng.standard_normal(tuple(b.shape)).astype(as_numpy(b).dtype)
                tl = tl + (b * torch.from_numpy(w)).sum()
                ml = ml + (a * mytorch.from_numpy(w.copy())).sum()
        if isinstance(tl, torch.Tensor):
            tl.backward()
            ml.backward()
            for i, (a, b) in enumerate(zip(min_, tin, strict=False)):
                if b.grad is not None:
                    assert_same(a.grad, b.grad, atol * 10, rtol * 10, what=f"grad of input {i}")
            for (n, a), (_, b) in zip(mmod.named_parameters(), tmod.named_parameters(), strict=False):
                if b.grad is None:
                    assert a.grad is None or not np.any(as_numpy(a.grad)), f"grad of {n}"
                else:
                    assert a.grad is not None, f"{n}: no gradient (torch has one)"
                    assert_same(a.grad, b.grad, atol * 10, rtol * 10, what=f"grad of {n}")
        for (n, a), (_, b) in zip(mmod.named_buffers(), tmod.named_buffers(), strict=False):
            assert_same(a, b, atol, rtol, what=f"buffer {n}")
    return tmod, mmod
