"""Helpers for the data-loading tests: build the same nested sample for mytorch and torch, and
compare nested outputs (tensors as NumPy arrays with their dtype, containers by type and order)."""
from __future__ import annotations

import collections
from typing import Any

import numpy as np
import torch

import mytorch


class T:
    """A tensor in a test sample: ``T(array)`` becomes a tensor of whichever library runs."""

    def __init__(self, array: Any) -> None:
        self.array = np.asarray(array)


def build(x: Any, lib: Any) -> Any:
    """The sample ``x`` with every ``T`` turned into a ``lib`` tensor (containers rebuilt)."""
    if isinstance(x, T):
        return lib.from_numpy(x.array.copy())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(build(v, lib) for v in x))
    if isinstance(x, collections.OrderedDict):
        return collections.OrderedDict((k, build(v, lib)) for k, v in x.items())
    if isinstance(x, dict):
        return {k: build(v, lib) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(build(v, lib) for v in x)
    return x


def canon(x: Any) -> Any:
    """A comparable picture of a nested output: tensors -> ("tensor", dtype, shape, values)."""
    if isinstance(x, (torch.Tensor, mytorch.Tensor)):
        arr = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x.numpy()
        return ("tensor", str(x.dtype), tuple(x.shape), arr.tolist())
    if isinstance(x, np.ndarray):
        return ("ndarray", x.dtype.str, x.shape, x.tolist())
    if isinstance(x, collections.abc.Mapping):
        return (type(x).__name__, [(k, canon(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [canon(v) for v in x])
    return (type(x).__name__, x)


def assert_same(mine: Any, theirs: Any) -> None:
    """mytorch's and torch's nested outputs hold the same types, dtypes, shapes and values."""
    a, b = canon(mine), canon(theirs)
    assert a == b, f"\nmytorch: {a}\ntorch:   {b}"


def same_error(fn_mine: Any, fn_torch: Any) -> BaseException:
    """Both calls raise the same exception class with the same message; returns mytorch's."""
    errors = []
    for fn in (fn_mine, fn_torch):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - the point is to compare whatever is raised
            errors.append(e)
        else:
            errors.append(None)
    mine, theirs = errors
    assert theirs is not None, "torch raised nothing"
    assert mine is not None, f"mytorch raised nothing; torch raised {type(theirs).__name__}: {theirs}"
    assert type(mine) is type(theirs) and str(mine) == str(theirs), \
        f"\nmytorch: {type(mine).__name__}: {mine}\ntorch:   {type(theirs).__name__}: {theirs}"
    return mine
