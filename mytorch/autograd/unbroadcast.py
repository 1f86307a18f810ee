"""Undo broadcasting in a backward formula: piece 02.1 (:func:`unbroadcast`) and :func:`sum_to`.

An op that broadcast an input gives it a gradient of the output's shape; the input's gradient is
that summed over the dimensions broadcasting added or stretched.
"""
from __future__ import annotations

import numpy as np

from .._fp import FP_IGNORE, FP_STATE
from .._pieces import piece, pieces
from .._tensor import Tensor, wrap
from .grad_mode import STATE

__all__ = ["unbroadcast", "sum_to"]


def _unbroadcast_arrays(grad: "Tensor", shape: tuple) -> "Tensor":
    """:func:`unbroadcast` on the bare array in a plain backward (grad mode off, a float array in
    host memory): the same sums in one NumPy call, without a tensor op per step."""
    arr = grad._data
    if STATE.enabled or type(arr) is not np.ndarray or arr.dtype.kind != "f":
        return unbroadcast(grad, shape)
    have = arr.shape
    if have == shape:
        return grad
    lead = len(have) - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape)
                                      if n == 1 and have[lead + i] != 1)
    if dims:
        token = FP_STATE.set(FP_IGNORE)  # an overflowing sum is inf, silently, as in torch
        try:
            arr = arr.sum(axis=dims, dtype=arr.dtype, keepdims=True)
        finally:
            FP_STATE.reset(token)
    return wrap(arr.reshape(shape), grad._device)


@piece("02.1", fast=_unbroadcast_arrays)
def unbroadcast(grad: "Tensor", shape: tuple) -> "Tensor":
    """Sum ``grad`` over the dimensions broadcasting created, back to ``shape``."""
    if tuple(grad.shape) == tuple(shape):
        return grad
    lead = grad.dim() - len(shape)
    dims = list(range(lead))                          # dimensions added in front
    dims += [lead + i for i, n in enumerate(shape)    # dimensions of size 1, stretched
             if n == 1 and grad.shape[lead + i] != 1]
    if dims:
        grad = grad.sum(dim=tuple(dims), keepdim=True)
    return grad.reshape(shape)


def sum_to(grad: "Tensor", shape: tuple) -> "Tensor":
    """Undo broadcasting in a backward formula: ``grad`` summed back to ``shape`` (the piece
    :func:`unbroadcast`, skipped when nothing was broadcast)."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    return pieces.unbroadcast(grad, shape)
