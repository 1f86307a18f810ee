"""Reductions: sum, mean, var/std, max/min, argmax, prod, cumsum, norm, unique, sort, topk, …"""
from __future__ import annotations

from typing import Any

from .. import _dtype as D
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.graph import needs_grad, record
from ._operands import wrap_dims

__all__ = ["sum"]


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum of all elements, or over ``dim``; bool and integer inputs sum to int64 like torch."""
    arr = input._data
    dt = D.to_dtype(dtype) if dtype is not None else (
        D.int64 if input.dtype._cat <= D._INT else input.dtype)
    axes = None if dim is None or dim == () or dim == [] else wrap_dims(dim, arr.ndim)
    res = wrap(arr.sum(axis=axes, dtype=dt.np, keepdims=keepdim), input._device)
    if needs_grad(input):
        shape = tuple(arr.shape)

        def backward(g: Tensor) -> tuple:
            if not keepdim and axes is not None:
                for ax in sorted(axes):
                    g = g.unsqueeze(ax)
            return (g.expand(shape),)

        record("SumBackward0" if axes is None else "SumBackward1", res, (input,), backward)
    return res


tensor_method("sum")(sum)
