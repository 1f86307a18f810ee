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
import warnings
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
           "pixel_shuffle", "pixel_unshuffle", "affine_grid", "grid_sample"]

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


# ----------------------------------------------------------------------------- spatial transformers
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
                  "since 1.3.0. Please specify align_corners=True if the old behavior is desired. "
                  "See the documentation of grid_sample for details.")


def affine_grid(theta: Tensor, size: list[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of 2-D affine maps ``theta`` (N×2×3) for an output of
    ``size`` (N, C, H, W): ``grid[n, h, w] = theta[n] @ (x_w, y_h, 1)`` in [-1, 1] coordinates."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
    elif len(size) == 5:
        raise NotImplementedError("mytorch's affine_grid makes 2-D grids (4-D sizes) only")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, h, w = size
    ft = theta._data.dtype

    def steps(k: int) -> Any:
        s = np.linspace(-1, 1, k, dtype=ft) if k > 1 else np.zeros(1, ft)
        return s if align_corners else s * ft.type((k - 1) / k)

    base = np.empty((h, w, 3), ft)
    base[..., 0], base[..., 1], base[..., 2] = steps(w)[None, :], steps(h)[:, None], 1
    flat = base.reshape(h * w, 3)
    res = wrap((flat @ theta._data.transpose(0, 2, 1)).reshape(n, h, w, 2), theta._device)
    if needs_grad(theta):
        record("AffineGridGeneratorBackward0", res, (theta,),
               lambda g: (wrap(g._data.reshape(n, h * w, 2).transpose(0, 2, 1) @ flat,
                               theta._device),), saved=(theta,))
    return res


def _source_index(coord: Any, size: int, padding_mode: str, align_corners: bool) -> tuple:
    """Grid coordinates in [-1, 1] -> pixel positions, and d(position)/d(coordinate)."""
    ft = coord.dtype.type
    if align_corners:
        pos, scale = (coord + 1) / 2 * ft(size - 1), ft((size - 1) / 2)
    else:
        pos, scale = ((coord + 1) * ft(size) - 1) / 2, ft(size / 2)
    grad = np.full(coord.shape, scale, coord.dtype)
    if padding_mode == "border":  # clipped positions do not move with the grid
        outside = (pos <= 0) | (pos >= size - 1)
        pos, grad = np.clip(pos, 0, size - 1), np.where(outside, 0, grad).astype(coord.dtype)
    return pos, grad


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` (N, C, H, W) at the [-1, 1] positions of ``grid`` (N, H_out, W_out, 2):
    bilinear (or nearest) interpolation, zeros (or the border's values) outside."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
                         f"or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if mode == "bicubic" or padding_mode == "reflection" or input.dim() == 5:
        raise NotImplementedError("mytorch's grid_sample samples 4-D inputs, 'bilinear' or "
                                  "'nearest', with 'zeros' or 'border' padding")
    if input.dim() != 4 or grid.dim() != input.dim():
        raise RuntimeError("grid_sampler(): expected 4D or 5D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != 2:
        raise RuntimeError("grid_sampler(): expected grid to have size 2 in last dimension, but "
                           f"got grid with sizes {list(grid.shape)}")
    x, gd = input._data, grid._data
    n, c, h, w = x.shape
    ix, dix = _source_index(gd[..., 0], w, padding_mode, align_corners)
    iy, diy = _source_index(gd[..., 1], h, padding_mode, align_corners)
    batch = np.arange(n)[:, None, None]
    if mode == "nearest":  # ties to even, as std::nearbyint
        corners = [(np.rint(ix).astype(np.int64), np.rint(iy).astype(np.int64),
                    np.ones_like(ix), np.zeros_like(ix), np.zeros_like(ix))]
    else:
        x0, y0 = np.floor(ix), np.floor(iy)
        fx, fy = ix - x0, iy - y0
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        # (column, row, weight, d weight / d ix, d weight / d iy) of the four neighbours
        corners = [(x0, y0, (1 - fx) * (1 - fy), -(1 - fy), -(1 - fx)),
                   (x0 + 1, y0, fx * (1 - fy), 1 - fy, -fx),
                   (x0, y0 + 1, (1 - fx) * fy, -fy, 1 - fx),
                   (x0 + 1, y0 + 1, fx * fy, fy, fx)]
    taps = []
    out = np.zeros((n, gd.shape[1], gd.shape[2], c), x.dtype)
    for cx, cy, wt, dwx, dwy in corners:
        inside = (cx >= 0) & (cx < w) & (cy >= 0) & (cy < h)
        sx, sy = np.clip(cx, 0, w - 1), np.clip(cy, 0, h - 1)
        vals = x.transpose(0, 2, 3, 1)[batch, sy, sx] * inside[..., None]  # (n, h_o, w_o, c)
        out += vals * wt[..., None]
        taps.append((sx, sy, inside, wt, dwx, dwy, vals))
    res = wrap(np.ascontiguousarray(out.transpose(0, 3, 1, 2)), input._device)
    if needs_grad(input, grid):
        def backward(g: Tensor) -> tuple:
            ga = g._data.transpose(0, 2, 3, 1)  # (n, h_o, w_o, c)
            g_in = np.zeros((n, h, w, c), x.dtype) if input._requires_grad else None
            g_grid = np.zeros(gd.shape, gd.dtype) if grid._requires_grad else None
            for sx, sy, inside, wt, dwx, dwy, vals in taps:
                if g_in is not None:
                    np.add.at(g_in, (np.broadcast_to(batch, sx.shape), sy, sx),
                              ga * (wt * inside)[..., None])
                if g_grid is not None and mode == "bilinear":
                    dot = (ga * vals).sum(-1)
                    g_grid[..., 0] += dot * dwx * dix
                    g_grid[..., 1] += dot * dwy * diy
            return (None if g_in is None else wrap(np.ascontiguousarray(g_in.transpose(0, 3, 1, 2)),
                                                   input._device),
                    None if g_grid is None else wrap(g_grid, grid._device))
        record("GridSampler2DBackward0", res, (input, grid), backward, saved=(input, grid))
    return res
