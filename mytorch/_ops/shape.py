"""Shapes and memory: view/reshape, permute/transpose, squeeze/unsqueeze, expand/repeat, cat/stack,
split/chunk, flip/roll, contiguous/clone, copy_/fill_/zero_, resize_, as_strided, …"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor, make_view, tensor_method, wrap
from ..autograd.graph import needs_grad, record
from ._operands import size_args, wrap_dim

__all__ = ["reshape", "clone"]


def _infer(shape: tuple, numel: int, src: tuple) -> tuple:
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def reshape(input: Tensor, shape: Any) -> Tensor:
    """Same data, new shape: a view when the strides allow it, otherwise a copy."""
    shape = _infer(tuple(int(s) for s in shape), input._data.size, input._data.shape)
    arr = input._data.reshape(shape)
    res = make_view(input, arr) if np.shares_memory(arr, input._data) else wrap(arr, input._device)
    if needs_grad(input):
        src = tuple(input._data.shape)
        record("ViewBackward0", res, (input,), lambda g: (g.reshape(src),))
    return res


@tensor_method("reshape")
def _reshape_method(self: Tensor, *shape: Any) -> Tensor:
    return reshape(self, size_args(shape) if not (len(shape) == 1 and isinstance(shape[0], (tuple, list))) else shape[0])


@tensor_method()
def view(self: Tensor, *shape: Any) -> Tensor:
    """A view with a new shape; RuntimeError when the memory layout makes that impossible."""
    shape = _infer(tuple(int(s) for s in (shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)),
                   self._data.size, self._data.shape)
    try:
        arr = np.reshape(self._data, shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    res = make_view(self, arr)
    if needs_grad(self):
        src = tuple(self._data.shape)
        record("ViewBackward0", res, (self,), lambda g: (g.reshape(src),))
    return res


@tensor_method()
def unsqueeze(self: Tensor, dim: int) -> Tensor:
    d = wrap_dim(dim, self._data.ndim + 1)
    res = make_view(self, np.expand_dims(self._data, d))
    if needs_grad(self):
        record("UnsqueezeBackward0", res, (self,), lambda g: (g.squeeze(d),))
    return res


@tensor_method()
def squeeze(self: Tensor, dim: Any = None) -> Tensor:
    arr = self._data
    if dim is None:
        axes = tuple(i for i, s in enumerate(arr.shape) if s == 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        axes = tuple(wrap_dim(d, arr.ndim) for d in dims if arr.shape[wrap_dim(d, arr.ndim)] == 1) if arr.ndim else ()
    res = make_view(self, np.squeeze(arr, axis=axes) if axes else arr[...])
    if needs_grad(self):
        src = tuple(arr.shape)
        record("SqueezeBackward0", res, (self,), lambda g: (g.reshape(src),))
    return res


@tensor_method()
def expand(self: Tensor, *sizes: Any) -> Tensor:
    """A view that repeats size-1 dimensions without copying (their stride becomes 0)."""
    sizes = size_args(sizes) if not any(s == -1 for s in (sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes)) else tuple(sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes)
    arr = self._data
    lead = len(sizes) - arr.ndim
    if lead < 0:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(arr.shape)}}}, size={list(sizes)}): "
                           "the number of sizes provided must be greater or equal to the number "
                           "of dimensions in the tensor")
    shape = tuple(arr.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    for i, n in enumerate(arr.shape):
        if n != 1 and n != shape[i + lead]:
            raise RuntimeError(f"The expanded size of the tensor ({shape[i + lead]}) must match the "
                               f"existing size ({n}) at non-singleton dimension {i + lead}.  Target "
                               f"sizes: {list(sizes)}.  Tensor sizes: {list(arr.shape)}")
    strides = (0,) * lead + tuple(0 if n == 1 and shape[i + lead] != 1 else st
                                   for i, (n, st) in enumerate(zip(arr.shape, arr.strides)))
    out = np.lib.stride_tricks.as_strided(arr, shape, strides, subok=True, writeable=True) \
        if not type(arr).__module__.startswith("cupy") else np.broadcast_to(arr, shape)
    res = make_view(self, out)
    if needs_grad(self):
        from ..autograd.graph import sum_to
        src = tuple(arr.shape)
        record("ExpandBackward0", res, (self,), lambda g: (sum_to(g, src),))
    return res


def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy with its own memory (differentiable: the gradient passes straight through)."""
    res = wrap(input._data.copy(), input._device)
    if needs_grad(input):
        record("CloneBackward0", res, (input,), lambda g: (g,))
    return res


tensor_method("clone")(clone)
