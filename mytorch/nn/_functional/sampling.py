"""Resampling and rearranging images: ``interpolate``/``upsample*``, ``unfold``/``fold``,
``pixel_shuffle``/``pixel_unshuffle``.

**interpolate** is separable: resizing ``(N, C, H, W)`` to ``(N, C, h, w)`` resizes the rows, then
the columns. Along one dim, output position ``i`` reads the input at a real-valued coordinate
``src(i)``:

* ``align_corners=True``: ``src = i * (in-1)/(out-1)`` — the corner pixels' *centres* line up;
* otherwise ``src = (i + 0.5) * in/out - 0.5`` — the corner pixels' *edges* line up
  (``in/out`` becomes ``1/scale_factor`` when a scale factor is given).

``nearest`` takes ``x[floor(i * scale)]``; ``linear`` mixes the two neighbours of ``src`` with
weights ``1-λ, λ``; ``bicubic`` mixes four with Keys' cubic kernel (a = -0.75). Each is a short
list of *taps* (index, weight) per output position, applied with ``index_select`` and a multiply,
so autograd comes from those ops. The arithmetic follows torch's kernels (float32 coordinates for
float32 tensors) so the chosen indices agree exactly.

**unfold** is im2col exposed: ``(N, C, H, W)`` → ``(N, C·kH·kW, L)``, one column per window.
**fold** adds the columns back into an image (overlaps sum up) — unfold's adjoint, so each is the
other's backward.
"""
from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._creation import arange, tensor
from ..._dtype import float32
from ..._ops._operands import quietly
from ..._pieces import piece, pieces
from ..._tensor import Tensor, wrap
from ...autograd.graph import needs_grad, record
from ._windows import add_windows, out_size, pad_array, windows
from .pooling import _adaptive_avg

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "unfold", "fold",
           "pixel_shuffle", "pixel_unshuffle"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_NEEDS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75


# ------------------------------------------------------------------------ source taps
def _scale(n: int, o: int, scale: float | None, align_corners: bool, ft: type) -> Any:
    """How far apart output samples are, in input pixels (torch's area_pixel_compute_scale)."""
    if align_corners:
        return ft(n - 1) / ft(o - 1) if o > 1 else ft(0)
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(n) / ft(o)


@functools.lru_cache(maxsize=256)
def _nearest_index_fast(out_size: int, in_size: int, scale: float) -> Tensor:
    """The fast path of the piece :func:`nearest_source_index`: the same float32 arithmetic on a
    bare array (a resize is often tiny, and five tensor ops would cost more than it), kept for
    the next call with the same sizes (the library only reads it)."""
    pos = np.arange(out_size).astype(np.float32) * np.float32(scale)
    return wrap(np.minimum(np.floor(pos).astype(np.int64), in_size - 1))


@piece("04.2", fast=_nearest_index_fast)
def nearest_source_index(out_size: int, in_size: int, scale: float) -> "Tensor":
    """For a nearest-neighbour resize along one dimension: the input index that each of the
    ``out_size`` output positions copies (an int64 tensor). ``scale`` is how many input cells
    one output cell spans (``in_size / out_size``, or ``1 / scale_factor`` when one was given);
    torch does this arithmetic in float32."""
    start = arange(out_size, dtype=float32) * scale   # where each output cell starts, in input cells
    return start.floor().long().clamp(max=in_size - 1)


def _nearest_taps(n: int, o: int, scale: float | None, exact: bool) -> list:
    """``floor(i * scale)`` (``nearest``: the piece :func:`nearest_source_index`) or
    ``floor((i + 0.5) * scale)`` (``nearest-exact``)."""
    s = _scale(n, o, scale, False, np.float32)
    if not exact:
        return [(pieces.nearest_source_index(o, n, float(s))._data, None)]
    pos = (np.arange(o).astype(np.float32) + np.float32(0.5)) * s
    return [(np.minimum(np.floor(pos).astype(np.int64), n - 1), None)]


def _source(n: int, o: int, scale: float | None, align_corners: bool, ft: type,
            cubic: bool) -> Any:
    """The real-valued input coordinate of every output position."""
    s = _scale(n, o, scale, align_corners, ft)
    i = np.arange(o).astype(ft)
    if align_corners:
        return s * i
    src = s * (i + ft(0.5)) - ft(0.5)
    return src if cubic else np.maximum(src, ft(0))


def _linear_taps(n: int, o: int, scale: float | None, align_corners: bool, ft: type) -> list:
    """Two neighbours ``i0, i1`` of each source coordinate, weights ``1-λ`` and ``λ``."""
    src = _source(n, o, scale, align_corners, ft, cubic=False)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam = np.clip(src - i0.astype(ft), 0, 1).astype(ft)
    i1 = np.where(i0 < n - 1, i0 + 1, i0)
    return [(i0, (1 - lam).astype(ft)), (i1, lam)]


def _cubic_taps(n: int, o: int, scale: float | None, align_corners: bool, ft: type) -> list:
    """Four neighbours ``i0-1 … i0+2`` (clamped to the image), Keys' cubic weights."""
    src = _source(n, o, scale, align_corners, ft, cubic=True)
    i0 = np.floor(src)
    t = (src - i0).astype(ft)
    a = ft(_CUBIC_A)

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Any) -> Any:   # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    i0 = i0.astype(np.int64)
    return [(np.clip(i0 - 1 + k, 0, n - 1), w.astype(ft)) for k, w in enumerate(weights)]


def _resample(x: Tensor, axis: int, taps: list) -> Tensor:
    """``Σ x[idx] * w`` along ``axis`` for the (index, weight) taps."""
    shape = [1] * x.dim()
    shape[axis] = -1
    out = None
    for idx, w in taps:
        v = x.index_select(axis, tensor(idx, device=x.device))
        if w is not None:
            v = v * tensor(w, device=x.device).reshape(shape)
        out = v if out is None else out + v
    return out


# --------------------------------------------------------------------------- interpolate
def _output_sizes(input: Tensor, size: Any, scale_factor: Any, d: int
                  ) -> tuple[tuple[int, ...], tuple]:
    """The output sizes and the per-dim scale factors (``None`` when sizes were given)."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * d
        if len(sizes) != d:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {spatial} and output size "
                             f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                             "format and output size in (o1, o2, ...,oK) format.")
        return tuple(int(s) for s in sizes), (None,) * d
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * d
    if len(scales) != d:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions,"
                         f" but got input with spatial dimensions of {spatial} and scale_factor of"
                         f" shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, "
                         "...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
    scales = tuple(float(s) for s in scales)
    return tuple(math.floor(n * s) for n, s in zip(spatial, scales, strict=False)), scales


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of ``(N, C, *spatial)`` to ``size`` or ``spatial * scale_factor``.

    ``mode``: ``nearest``, ``nearest-exact``, ``linear`` (3-D input), ``bilinear``/``bicubic``
    (4-D), ``trilinear`` (5-D) or ``area`` (adaptive average pooling).
    """
    d = input.dim() - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by mytorch")
    sizes, scales = _output_sizes(input, size, scale_factor, d)
    if recompute_scale_factor:
        scales = (None,) * d
    if mode in _NEEDS and d != _NEEDS[mode]:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{_NEEDS[mode] + 2}D input")
    if mode not in ("nearest", "nearest-exact", "area", *_NEEDS) or d not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: {_MODES} (got {mode})")
    if mode == "area":
        return _adaptive_avg(input, sizes, d)
    if not input.is_floating_point() and mode != "nearest":
        raise NotImplementedError(f'"upsample_{mode}{d}d" not implemented for '
                                  f"'{str(input.dtype)[6:].capitalize()}'")
    ft = np.float64 if input.dtype.itemsize == 8 else np.float32
    x = input
    for j, (n, o, s) in enumerate(zip(input.shape[2:], sizes, scales, strict=False)):
        if mode.startswith("nearest"):
            if mode == "nearest" and d == 2 and o in (n, 2 * n):
                s = None  # torch's 2-D kernel: a kept or doubled size ignores the scale factor
            taps = _nearest_taps(n, o, s, mode == "nearest-exact")
        elif mode == "bicubic":
            taps = _cubic_taps(n, o, s, align_corners, ft)
        else:
            taps = _linear_taps(n, o, s, align_corners, ft)
        x = _resample(x, 2 + j, taps)
    return _one_node(x, _NODES[mode, d])


#: torch's node for each mode and dimension: one node per resize, not one per dim and tap
_NODES = {("nearest", 1): "UpsampleNearest1DBackward0", ("nearest", 2): "UpsampleNearest2DBackward0",
          ("nearest", 3): "UpsampleNearest3DBackward0",
          ("nearest-exact", 1): "UpsampleNearestExact1DBackward0",
          ("nearest-exact", 2): "UpsampleNearestExact2DBackward0",
          ("nearest-exact", 3): "UpsampleNearestExact3DBackward0",
          ("linear", 1): "UpsampleLinear1DBackward0", ("bilinear", 2): "UpsampleBilinear2DBackward0",
          ("bicubic", 2): "UpsampleBicubic2DBackward0",
          ("trilinear", 3): "UpsampleTrilinear3DBackward0"}


def _one_node(out: Tensor, name: str) -> Tensor:
    """``out`` (composed of index_select, multiply and add nodes) behind one node ``name`` that
    passes its gradient on: the graph reads like torch's, where resizing is one op."""
    if not out._requires_grad:
        return out
    return record(name, wrap(out._data, out._device), (out,), lambda g: (g,))


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated spelling of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------------------- unfold/fold
def _pair(v: Any) -> tuple[int, int]:
    return (int(v),) * 2 if isinstance(v, numbers.Integral) else tuple(int(x) for x in v)


def _blocks(size: Sequence[int], kernel: tuple, dilation: tuple, padding: tuple,
            stride: tuple) -> tuple[int, ...]:
    return tuple(out_size(n, k, s, p, dl)
                 for n, k, dl, p, s in zip(size, kernel, dilation, padding, stride, strict=False))


def _unfold(x: Tensor, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> Tensor:
    """``(N, C, H, W)`` → ``(N, C·kH·kW, L)``: a strided view of the windows, copied once."""
    size = tuple(x.shape[2:])
    out = _blocks(size, kernel, dilation, padding, stride)
    xp = pad_array(x._data, 2, [(p, p) for p in padding])
    win = windows(xp, 2, out, kernel, stride, dilation)          # (N, C, oh, ow, kh, kw)
    n, c = x.shape[:2]
    cols = win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kernel[0] * kernel[1], out[0] * out[1])
    res = wrap(cols, x._device)
    if needs_grad(x):
        record("Im2ColBackward0", res, (x,),
               lambda g: (_fold(g, size, kernel, dilation, padding, stride),))
    return res


@quietly  # overlapping windows whose values overflow add up to inf, silently as in torch
def _fold(cols: Tensor, size: tuple, kernel: tuple, dilation: tuple, padding: tuple,
          stride: tuple) -> Tensor:
    """``(N, C·kH·kW, L)`` → ``(N, C, H, W)``: each column added back onto its window."""
    out = _blocks(size, kernel, dilation, padding, stride)
    n = cols.shape[0]
    c = cols.shape[1] // (kernel[0] * kernel[1])
    src = cols._data.reshape(n, c, *kernel, *out).transpose(0, 1, 4, 5, 2, 3)
    padded = tuple(s + 2 * p for s, p in zip(size, padding, strict=False))
    img = np.zeros_like(src, shape=(n, c, *padded))
    add_windows(img, src, 2, kernel, stride, dilation)
    img = img[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]].copy()
    res = wrap(img, cols._device)
    if needs_grad(cols):
        record("Col2ImBackward0", res, (cols,),
               lambda g: (_unfold(g, kernel, dilation, padding, stride),))
    return res


def _check_block_args(kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> None:
    for name, v, low in (("kernel", kernel, 1), ("dilation", dilation, 1),
                         ("padding", padding, 0), ("stride", stride, 1)):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name}_size equals to 2, but got size {len(v)}")
        if min(v) < low:
            raise RuntimeError(f"{name} should be greater than {'or equal to ' if low == 0 else ''}"
                               f"zero, but got {name}: {v}")


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """Extract sliding windows: ``(N, C, H, W)`` → ``(N, C·kH·kW, L)`` (``L`` = window count)."""
    kernel, dilation, padding, stride = _pair(kernel_size), _pair(dilation), _pair(padding), \
        _pair(stride)
    _check_block_args(kernel, dilation, padding, stride)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got: {list(input.shape)}")
    x = input if input.dim() == 4 else input.unsqueeze(0)
    out = _blocks(x.shape[2:], kernel, dilation, padding, stride)
    if any(o < 1 for o in out):
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size="
                           f"{kernel}, dilation={dilation}, padding={padding}, calculated shape of"
                           f" the array of sliding blocks as {out}, but its components must be at"
                           " least one.")
    res = _unfold(x, kernel, dilation, padding, stride)
    return res if input.dim() == 4 else res.squeeze(0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sum sliding windows back into an image: ``(N, C·kH·kW, L)`` → ``(N, C, *output_size)``."""
    size, kernel = _pair(output_size), _pair(kernel_size)
    dilation, padding, stride = _pair(dilation), _pair(padding), _pair(stride)
    _check_block_args(kernel, dilation, padding, stride)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got: {list(input.shape)}")
    x = input if input.dim() == 3 else input.unsqueeze(0)
    k = kernel[0] * kernel[1]
    if x.shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={kernel}.")
    out = _blocks(size, kernel, dilation, padding, stride)
    if out[0] * out[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's "
                           f"dimension 2 to match the calculated number of sliding blocks "
                           f"{out[0]} * {out[1]} = {out[0] * out[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    res = _fold(x, size, kernel, dilation, padding, stride)
    return res if input.dim() == 3 else res.squeeze(0)


# ------------------------------------------------------------------------- pixel shuffle
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C·r², H, W)`` → ``(*, C, H·r, W·r)``: channels become sub-pixel positions."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    nl = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H·r, W·r)`` → ``(*, C·r², H, W)``: the inverse of :func:`pixel_shuffle`."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} and input.size(-1)={w}")
    nl = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
