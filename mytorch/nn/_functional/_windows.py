"""Sliding windows: the one idea behind convolution, pooling and ``unfold``/``fold``.

A layer with a ``kernel`` that moves by ``stride`` (and spreads its taps ``dilation`` apart) sees,
for output position ``o`` and kernel tap ``k``, the (padded) input element ``o*stride + k*dilation``
along every spatial dimension. Two ways of using that:

* :func:`windows` — a strided **view** of shape ``(..., *out, *kernel, ...)`` with no copying:
  element ``[o, k]`` is input ``o*stride + k*dilation``. Reshaping it copies out the "im2col"
  matrix that turns a convolution into one matrix product.
* :func:`tap` — for one kernel tap ``k``, the slices that pick ``input[o*stride + k*dilation]`` for
  every ``o`` at once. Looping over the (few) taps and combining slices gives pooling (``max`` or
  sum) and the *adjoint* of ``windows`` — adding each tap's values back where they came from
  (:func:`add_windows`, "col2im"), which is the backward pass of all of the above.

All arrays here are NumPy or CuPy; only slicing, ``+=`` and array methods are used.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..._pieces import piece, pieces
from ..._storage import restride

__all__ = ["conv_output_size", "out_size", "windows", "tap", "taps", "add_windows", "pad_array"]


@piece("04.1")
def conv_output_size(n: int, kernel_size: int, stride: int = 1, padding: int = 0,
                     dilation: int = 1, ceil_mode: bool = False) -> int:
    """How many positions a window takes along one dimension of length ``n``: ``kernel_size``
    taps ``dilation`` apart, moving by ``stride`` over the input padded by ``padding`` on each
    side. With ``ceil_mode`` a last, partial window counts too, if it starts inside the input or
    its left padding. (Zero or less: no window fits.)"""
    span = dilation * (kernel_size - 1) + 1           # how many elements one window covers
    room = n + 2 * padding - span                     # how far the window's start can move
    if not ceil_mode:
        return room // stride + 1
    count = -(-room // stride) + 1                    # rounded up: a partial window at the end
    if (count - 1) * stride >= n + padding:           # ...that would start in the right padding
        count -= 1
    return count


def out_size(size: int, kernel: int, stride: int, pad: int, dilation: int = 1,
             ceil_mode: bool = False) -> int:
    """How many window positions fit in ``size + 2*pad`` elements (torch's formula): the piece
    :func:`conv_output_size`, used by convolution, pooling and ``unfold`` alike."""
    return pieces.conv_output_size(size, kernel, stride, pad, dilation, ceil_mode)


def windows(arr: Any, first: int, out: Sequence[int], kernel: Sequence[int],
            stride: Sequence[int], dilation: Sequence[int]) -> Any:
    """A view of ``arr`` whose spatial axes ``first, first+1, …`` become ``(*out, *kernel)``.

    No data is copied: the output axes step ``stride`` elements, the kernel axes ``dilation``.
    """
    d = len(kernel)
    item = arr.itemsize
    st = [s // item for s in arr.strides]
    sp = st[first:first + d]
    shape = (*arr.shape[:first], *out, *kernel, *arr.shape[first + d:])
    strides = (*st[:first], *(s * k for s, k in zip(sp, stride, strict=False)),
               *(s * k for s, k in zip(sp, dilation, strict=False)), *st[first + d:])
    return restride(arr, shape, strides)


def tap(offset: Sequence[int], out: Sequence[int], stride: Sequence[int],
        dilation: Sequence[int]) -> tuple[slice, ...]:
    """Slices (one per spatial dim) selecting the input seen by kernel tap ``offset`` at every
    output position: ``offset*dilation + o*stride`` for ``o`` in ``range(out)``."""
    return tuple(slice(k * dl, k * dl + s * (n - 1) + 1, s)
                 for k, n, s, dl in zip(offset, out, stride, dilation, strict=False))


def taps(kernel: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Every kernel tap, in row-major order (torch's order when scanning a window)."""
    return itertools.product(*(range(k) for k in kernel))


def add_windows(dst: Any, src: Any, first: int, kernel: Sequence[int], stride: Sequence[int],
                dilation: Sequence[int]) -> Any:
    """The adjoint of :func:`windows` ("col2im"): ``dst[o*stride + k*dilation] += src[o, k]``.

    ``src`` is shaped like ``windows(dst, ...)``. Windows overlap when ``stride < kernel``, so
    this is a loop over the kernel taps, each adding one strided slice — no loop over pixels.
    """
    d = len(kernel)
    out = src.shape[first:first + d]
    lead = (slice(None),) * first
    for k in taps(kernel):
        dst[lead + tap(k, out, stride, dilation)] += src[lead + (slice(None),) * d + k]
    return dst


def pad_array(arr: Any, first: int, pads: Sequence[tuple[int, int]], value: Any = 0) -> Any:
    """A copy of ``arr`` with ``pads[i] = (before, after)`` elements of ``value`` added around
    spatial axis ``first + i`` (the zero padding of a convolution or the ``-inf`` of max-pool)."""
    if not any(lo or hi for lo, hi in pads):
        return arr
    shape = list(arr.shape)
    inner = [slice(None)] * arr.ndim
    for i, (lo, hi) in enumerate(pads):
        shape[first + i] += lo + hi
        inner[first + i] = slice(lo, lo + arr.shape[first + i])
    out = np.full_like(arr, value, shape=tuple(shape))  # NumPy, CuPy or simulated: like arr
    out[tuple(inner)] = arr
    return out

