"""``F.pad``: grow (or, with negative amounts, crop) the last dimensions of a tensor.

``pad`` lists ``(before, after)`` amounts starting from the **last** dimension:
``pad(x, (1, 2))`` adds 1 column on the left and 2 on the right; ``(1, 1, 2, 2)`` also adds 2 rows
above and below. What fills the new border depends on ``mode``:

=============  ==========================================  ===================
mode           new element at position ``i`` (``n`` = size) example ``[a b c]``
=============  ==========================================  ===================
``constant``   ``value``                                     ``0 0 a b c 0 0``
``reflect``    mirror at the edge, edge not repeated         ``c b a b c b a``
``replicate``  the nearest edge element                      ``a a a b c c c``
``circular``   wrap around: ``x[i mod n]``                   ``b c a b c a b``
=============  ==========================================  ===================

The last three read the input at computed indices (``index_select`` per padded dim), so their
backward pass — adding each gradient to the element it was read from — comes from
``index_select``. Constant padding copies the input into a filled array; its backward is
constant padding again with the amounts negated (which crops).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._creation import tensor
from ..._tensor import Tensor, wrap
from ...autograd.graph import needs_grad, record

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _pairs(pad: Sequence[int]) -> list[tuple[int, int]]:
    """``(l, r, t, b, …)`` → ``[(l, r), (t, b), …]``: the first pair is for the last dim."""
    return [(int(pad[i]), int(pad[i + 1])) for i in range(0, len(pad), 2)]


def _constant_pad(input: Tensor, pairs: list[tuple[int, int]], value: Any) -> Tensor:
    """A ``value``-filled array with the input copied in (negative amounts crop instead)."""
    x = input._data
    shape = list(x.shape)
    src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for j, (lo, hi) in enumerate(pairs):
        axis = x.ndim - 1 - j
        n = x.shape[axis]
        if n + lo + hi < 0:
            raise RuntimeError(f"The input size {n}, plus negative padding {lo} and {hi} resulted "
                               f"in a negative output size, which is invalid. Check dimension "
                               f"{axis} of your input.")
        shape[axis] = n + lo + hi
        keep = n + min(lo, 0) + min(hi, 0)  # what is left after the negative amounts crop
        if keep < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        src[axis] = slice(max(-lo, 0), max(-lo, 0) + keep)
        dst[axis] = slice(max(lo, 0), max(lo, 0) + keep)
    out = np.full_like(x, value, shape=tuple(shape))
    out[tuple(dst)] = x[tuple(src)]
    res = wrap(out, input._device)
    if needs_grad(input):
        back = [(-lo, -hi) for lo, hi in pairs]
        record("ConstantPadNdBackward0", res, (input,), lambda g: (_constant_pad(g, back, 0),))
    return res


def _source_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """For each position of the padded dim, the input index it copies."""
    i = np.arange(-lo, n + hi)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    start, stop = max(-lo, 0), n - max(-hi, 0)  # circular: wrap around what is kept
    return start + (i - start) % (stop - start)


def _check_index_pad(input: Tensor, pairs: list[tuple[int, int]], mode: str) -> None:
    d = len(pairs)
    if d not in (1, 2, 3) or input.dim() not in (d + 1, d + 2):
        raise NotImplementedError(
            f"Padding size {2 * d} is not supported for {input.dim()}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    for j, (lo, hi) in enumerate(pairs):
        axis = input.dim() - 1 - j
        n = input.shape[axis]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension "
                               f"{axis} of input {list(input.shape)}")
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and n == 0:
            raise RuntimeError(f"input tensor must have non-zero size at dimension {axis}")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad the last ``len(pad) // 2`` dimensions of ``input`` (see the module docstring)."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.dim()}")
    pairs = _pairs(pad)
    if mode == "constant":
        return _constant_pad(input, pairs, 0 if value is None else value)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_index_pad(input, pairs, mode)
    out = input
    for j, (lo, hi) in enumerate(pairs):
        axis = input.dim() - 1 - j
        if lo or hi:
            index = tensor(_source_index(input.shape[axis], lo, hi, mode), device=input.device)
            out = out.index_select(axis, index)
    return out if out is not input else input.clone()
