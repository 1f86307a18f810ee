"""Pooling: ``max_pool*``, ``avg_pool*``, ``adaptive_avg_pool*``, ``adaptive_max_pool*``,
``max_unpool*``.

A pooling window moves like a convolution kernel (``_windows.py``) but combines the values it sees
with ``max`` or a mean instead of a learned dot product. Both are computed as a loop over the few
kernel *taps*: each tap is one strided slice of the (padded) input holding, for every output
position at once, the value that tap sees there. So a 2×2 pool is four array operations, whatever
the image size.

* **max**: keep a running maximum and the index of the tap that produced it (``arg``). The
  backward pass sends each output gradient to that tap's input position (a scatter); its own
  backward is the matching gather. ``return_indices`` turns ``arg`` into flat input indices.
* **avg**: the sum of the taps divided by the window size (``count_include_pad`` and ``ceil_mode``
  decide how windows that hang over the border are counted). The backward pass spreads
  ``g / size`` back over every tap — the adjoint of "sum the taps".
* **adaptive**: output size given, window bounds ``floor(i*in/out)`` … ``ceil((i+1)*in/out)``.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..._creation import arange, zeros
from ..._dtype import iinfo
from ..._ops._operands import check_same_device, quietly
from ..._ops.shape import stack
from ..._pieces import piece, pieces
from ..._tensor import Tensor, wrap
from ...autograd.graph import depends_on, needs_grad, record
from ...autograd.piece_op import as_op
from ._windows import conv_output_size, out_size, pad_array, tap, taps
from .padding import pad

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "max_unpool1d", "max_unpool2d"]


class _Pool(NamedTuple):
    """Where the windows are: per spatial dim, input and output sizes and the window's motion."""

    size: tuple[int, ...]
    out: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]

    def pads(self) -> tuple[tuple[int, int], ...]:
        """(before, after) padding per dim: enough for the last window (ceil_mode may need more)."""
        return tuple((p, max(0, (o - 1) * s + dl * (k - 1) + 1 - n - p)) for n, o, k, s, p, dl in
                     zip(self.size, self.out, self.kernel, self.stride, self.padding,
                         self.dilation, strict=False))

    def slices(self, k: Sequence[int]) -> tuple:
        """``...`` plus the slices of tap ``k`` into the padded input."""
        return (Ellipsis, *tap(k, self.out, self.stride, self.dilation))

    def crop(self) -> tuple:
        return (Ellipsis, *(slice(p, p + n) for p, n in zip(self.padding, self.size, strict=False)))


# ---------------------------------------------------------------------- argument parsing
def _tuple(v: Any, d: int, fn: str, what: str) -> tuple[int, ...]:
    if isinstance(v, numbers.Integral):
        return (int(v),) * d
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * d
    if len(v) != d:
        raise RuntimeError(f"{fn}: {what} must either be a single int, or a tuple of {d} ints")
    return v


def _geometry(input: Tensor, d: int, fn: str, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool) -> _Pool:
    """Check the arguments like torch and compute the output size."""
    if input.dim() not in (d + 1, d + 2):
        raise RuntimeError(f"{fn}: Expected {d + 1}D or {d + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got: {list(input.shape)}")
    kernel = _tuple(kernel_size, d, fn, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, numbers.Integral)
                                          and len(stride) == 0) else _tuple(stride, d, fn, "stride")
    padding, dilation = _tuple(padding, d, fn, "padding"), _tuple(dilation, d, fn, "dilation")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{fn}: kernel_size must be greater than zero, but got {list(kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero" if 0 in stride else
                           f"{fn}: stride must be greater than zero, but got {list(stride)}")
    if any(dl <= 0 for dl in dilation):
        raise RuntimeError(f"{fn}: dilation must be greater than zero, but got {list(dilation)}")
    for p, k, dl in zip(padding, kernel, dilation, strict=False):
        if p < 0 or p > (dl * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={dl}")
    size = tuple(input.shape[-d:])
    out = tuple(out_size(n, k, s, p, dl, ceil_mode)
                for n, k, s, p, dl in zip(size, kernel, stride, padding, dilation, strict=False))
    if any(o <= 0 for o in out):
        c = input.shape[-d - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c, *size)))}). Calculated "
                           f"output size: ({'x'.join(map(str, (c, *out)))}). Output size is too small")
    return _Pool(size, out, kernel, stride, padding, dilation)


# --------------------------------------------------------------------------------- max
def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _first_taps(geo: _Pool) -> Any:
    """Index of the first in-bounds tap of each window: where torch starts its scan."""
    first = 0
    for i, (o, k, s, p, dl) in enumerate(zip(geo.out, geo.kernel, geo.stride, geo.padding,
                                             geo.dilation, strict=False)):
        pos = np.arange(o) * s - p                           # window start along this dim
        k0 = np.maximum(0, -(pos // dl))                     # ceil(-pos / dl), at least 0
        shape = [1] * len(geo.out)
        shape[i] = o
        first = first * k + k0.reshape(shape)
    return np.broadcast_to(first, geo.out)


def _max_arrays(x: Any, geo: _Pool, want_arg: bool) -> tuple[Any, Any]:
    """The window maxima and, if wanted, ``arg``: which tap each maximum came from.

    torch scans a window in order from ``-inf`` and moves to a value only if it is *larger* (or
    NaN), so ``arg`` is the first tap holding the maximum, the last NaN if there is one, and the
    first in-bounds element when everything in the window is ``-inf``.
    """
    lead = x.ndim - len(geo.size)
    low = _lowest(x.dtype)
    xp = pad_array(x, lead, geo.pads(), low)
    best = None
    for k in taps(geo.kernel):  # one maximum per tap (np.maximum propagates NaN, like torch)
        v = xp[geo.slices(k)]
        best = v.copy() if best is None else np.maximum(best, v, out=best)
    if not want_arg:
        return best, None
    # arg = how many taps come before the first one equal to the maximum. (Counting with
    # arithmetic is several times faster than masked writes, whose random masks defeat the CPU.)
    arg = np.zeros_like(best, dtype=np.int64)
    seen = np.zeros_like(best, dtype=bool)
    tap_list = list(enumerate(taps(geo.kernel)))
    for _, k in tap_list[:-1]:
        seen |= xp[geo.slices(k)] == best
        arg += ~seen
    if x.dtype.kind == "f" and (best != best).any():
        for i, k in tap_list:  # a NaN maximum: the last NaN in scan order
            v = xp[geo.slices(k)]
            np.copyto(arg, i, where=v != v)
    if any(geo.padding):
        np.copyto(arg, _to_device(_first_taps(geo), arg), where=best == low)
    return best, arg


def _to_device(host: Any, like: Any) -> Any:
    """A small host array in ``like``'s array type (a no-op on the CPU)."""
    if isinstance(like, np.ndarray):  # NumPy, or the simulated device's subclass of it
        return host if type(like) is np.ndarray else np.asarray(host).view(type(like))
    import cupy  # type: ignore[import-not-found]

    return cupy.asarray(host)


def _flat_indices(arg: Any, geo: _Pool) -> Any:
    """Tap numbers → flat indices into each (unpadded) input plane, as ``return_indices`` gives."""
    idx = np.zeros_like(arg)
    rest = arg
    inner = 1
    for j in reversed(range(len(geo.out))):
        o, k, s, p, dl = geo.out[j], geo.kernel[j], geo.stride[j], geo.padding[j], geo.dilation[j]
        kj = rest % k
        rest = rest // k
        shape = [1] * len(geo.out)
        shape[j] = o
        start = _to_device((np.arange(o) * s - p).reshape(shape), arg)
        idx += (start + kj * dl) * inner
        inner *= geo.size[j]
    return idx


def _scatter_taps(g: Tensor, arg: Any, geo: _Pool, name: str) -> Tensor:
    """Max-pool backward: each output gradient goes to the input position its tap read."""
    lead = g.shape[:g.dim() - len(geo.size)]
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(geo.size, geo.pads(), strict=False))
    dx = np.zeros_like(g._data, shape=(*lead, *padded))
    grad = g._data
    exact = bool(np.isfinite(grad).all())  # else 0 * inf would leak NaN into other taps
    for i, k in enumerate(taps(geo.kernel)):
        dx[geo.slices(k)] += grad * (arg == i) if exact else np.where(arg == i, grad, 0)
    dx = dx[geo.crop()]
    res = wrap(dx if dx.flags.c_contiguous else dx.copy(), g._device)
    if needs_grad(g):
        record(name, res, (g,), lambda gg: (_gather_taps(gg, arg, geo, name),))
    return res


def _gather_taps(x: Tensor, arg: Any, geo: _Pool, name: str) -> Tensor:
    """The adjoint of :func:`_scatter_taps`: read each window's winning input element."""
    xp = pad_array(x._data, x.dim() - len(geo.size), geo.pads())
    out = np.zeros_like(x._data, shape=arg.shape)
    for i, k in enumerate(taps(geo.kernel)):
        np.copyto(out, xp[geo.slices(k)], where=arg == i)
    res = wrap(out, x._device)
    if needs_grad(x):
        record("MaxPoolBackwardBackward0", res, (x,),
               lambda g: (_scatter_taps(g, arg, geo, name),))
    return res


# ------------------------------------------------------------- windows that tile the input
# The common pool of a CNN (2×2, stride 2, no padding, a size the kernel divides) cuts the input
# into tiles: every element lies in exactly one window. There the forward pass needs no ``arg``
# at all; the backward finds each window's first maximal tap itself, from the saved input and a
# copy of the maxima, and writes every tap's share straight into its own slice of the gradient:
# no scatter-add, about half the array operations of the general path.
def _tiles(x: Any, geo: _Pool) -> bool:
    """Whether ``geo``'s windows tile ``x`` exactly (a host array)."""
    return type(x) is np.ndarray and all(
        s == k and p == 0 and dl == 1 and n == o * k for n, o, k, s, p, dl in
        zip(geo.size, geo.out, geo.kernel, geo.stride, geo.padding, geo.dilation, strict=False))


def _tiled(x: Any, geo: _Pool) -> tuple[Any, list]:
    """``x`` as ``(*lead, o1, k1, o2, k2, ...)`` and the index of each tap into that shape."""
    lead = x.shape[:x.ndim - len(geo.size)]
    xv = x.reshape(*lead, *(v for o, k in zip(geo.out, geo.kernel, strict=False) for v in (o, k)))
    index = [(Ellipsis, *(i for kj in k for i in (slice(None), kj))) for k in taps(geo.kernel)]
    return xv, index


def _tile_grad(g: Tensor, input: Tensor, best: Any, geo: _Pool, name: str) -> Tensor:
    """Max-pool backward for tiling windows: the gradient goes to each window's first tap
    holding its maximum. A NaN maximum, a gradient with inf or NaN (``0 * inf``), or a graph to
    record (``create_graph``) take the general path."""
    grad = g._data
    if needs_grad(g) or type(grad) is not np.ndarray or grad.shape != best.shape or (
            best.dtype.kind == "f" and (best != best).any()) or not np.isfinite(grad).all():
        return _scatter_taps(g, _max_arrays(input._data, geo, True)[1], geo, name)
    xv, index = _tiled(input._data, geo)
    dx = np.empty_like(grad, shape=xv.shape)
    seen = None
    for i, idx in enumerate(index):
        if i == len(index) - 1:                    # the last tap wins where no other did
            first = True if seen is None else ~seen
        else:
            eq = xv[idx] == best
            first = eq if seen is None else np.greater(eq, seen)  # equal, and none before
            seen = eq if seen is None else np.logical_or(seen, eq, out=seen)
        np.multiply(grad, first, out=dx[idx])
    return wrap(dx.reshape(input._data.shape), g._device)


def _max_fused(input: Tensor, geo: _Pool, d: int, return_indices: bool) -> Any:
    """Max pooling as one fused kernel over the taps (any number of leading dims)."""
    grad = needs_grad(input)
    tiles = grad and not return_indices and _tiles(input._data, geo)  # backward finds the taps
    best, arg = _max_arrays(input._data, geo, return_indices or (grad and not tiles))
    res = wrap(best, input._device)
    if grad:
        name = f"MaxPool{d}DWithIndicesBackward0"
        if tiles:
            kept = best.copy()  # the output may be changed in place later (relu_): keep the maxima
            spread = lambda g: _tile_grad(g, input, kept, geo, name)  # noqa: E731
        else:
            spread = lambda g: _scatter_taps(g, arg, geo, name)  # noqa: E731
        # (depends_on: under create_graph the gradient is a function of the input too, with
        # derivative zero, like torch's max_pool*_with_indices_backward)
        second = name.replace("Backward0", "BackwardBackward0")
        record(name, res, (input,), lambda g: (depends_on(spread(g), input, second),),
               saved=(input,))
    if return_indices:
        return res, wrap(_flat_indices(arg, geo), input._device)
    return res


def _max_pool2d_fused(x: Tensor, kernel_size: tuple, stride: tuple, padding: tuple,
                      dilation: tuple, ceil_mode: bool, return_indices: bool) -> Any:
    """The fast path of the piece :func:`max_pool2d_windows`: the fused kernel."""
    size = tuple(x.shape[-2:])
    out = tuple(out_size(n, k, s, p, dl, ceil_mode)
                for n, k, s, p, dl in zip(size, kernel_size, stride, padding, dilation, strict=False))
    return _max_fused(x, _Pool(size, out, kernel_size, stride, padding, dilation), 2, return_indices)


@piece("04.4", fast=_max_pool2d_fused, wrap=as_op("MaxPool2DWithIndicesBackward0"))
def max_pool2d_windows(x: "Tensor", kernel_size: tuple, stride: tuple, padding: tuple,
                       dilation: tuple, ceil_mode: bool, return_indices: bool
                       ) -> "Tensor | tuple":
    """The largest value of every window of ``x`` ``(*, H, W)`` (``kernel_size``, ``stride``,
    ``padding``, ``dilation``: (height, width) pairs, as for a convolution) and, with
    ``return_indices``, where each maximum sits in its ``H*W`` plane (``row * W + col``)."""
    *lead, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    oh = conv_output_size(H, kh, sh, ph, dh, ceil_mode)
    ow = conv_output_size(W, kw, sw, pw, dw, ceil_mode)
    # Pad with the lowest value (never a maximum): `padding` before, after as much as the last
    # window needs (ceil_mode may need more than `padding`).
    low = -math.inf if x.is_floating_point() else iinfo(x.dtype).min
    after_h = max(0, (oh - 1) * sh + dh * (kh - 1) + 1 - H - ph)
    after_w = max(0, (ow - 1) * sw + dw * (kw - 1) + 1 - W - pw)
    xp = pad(x, (pw, after_w, ph, after_h), value=low)
    # Every window as a view: (*, rows, cols, span_h, span_w); keep the taps `dilation` apart.
    win = xp.unfold(-2, dh * (kh - 1) + 1, sh).unfold(-2, dw * (kw - 1) + 1, sw)
    win = win[..., :oh, :ow, ::dh, ::dw].reshape(*lead, oh, ow, kh * kw)
    values, tap = win.max(dim=-1)                     # tap: which of the kh*kw taps won
    if not return_indices:
        return values
    row = arange(oh, device=x.device).reshape(oh, 1) * sh - ph + tap // kw * dh
    col = arange(ow, device=x.device) * sw - pw + tap % kw * dw
    return values, row * W + col


def _special_windows(x: Tensor, values: Tensor, indices: Tensor, geo: _Pool) -> Tensor:
    """torch's choice of index where a window's maximum is NaN (the last NaN) or -inf (the
    first element inside the input): rare windows whose index a plain ``max`` picks otherwise."""
    v = values._data
    if v.dtype.kind != "f" or not ((v != v).any() or (v == -np.inf).any()):
        return indices
    _, arg = _max_arrays(x._data, geo, True)
    return wrap(_flat_indices(arg, geo), x._device)


def _max_poolnd(input: Tensor, d: int, kernel_size: Any, stride: Any, padding: Any,
                dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    fn = f"max_pool{d}d"
    geo = _geometry(input, d, fn, kernel_size, stride, padding, dilation, ceil_mode)
    if d != 2:
        return _max_fused(input, geo, d, return_indices)
    out = pieces.max_pool2d_windows(input, geo.kernel, geo.stride, geo.padding, geo.dilation,
                                    ceil_mode, return_indices)
    if not return_indices:
        return out
    return out[0], _special_windows(input, out[0], out[1], geo)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of the last dim of ``(N, C, L)`` (or ``(C, L)``)."""
    return _max_poolnd(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding ``kernel_size`` windows of ``(N, C, H, W)`` (or ``(C, H, W)``).

    ``stride`` defaults to ``kernel_size``; padding counts as ``-inf``. With ``return_indices``
    also returns, per output, the flat index (into its ``H*W`` plane) of the maximum.
    """
    return _max_poolnd(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``)."""
    return _max_poolnd(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                       return_indices)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d` that always returns ``(values, indices)``."""
    return _max_poolnd(input, 1, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d` that always returns ``(values, indices)``."""
    return _max_poolnd(input, 2, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """:func:`max_pool3d` that always returns ``(values, indices)``."""
    return _max_poolnd(input, 3, kernel_size, stride, padding, dilation, ceil_mode, True)


# --------------------------------------------------------------------------------- avg
def _divisor(geo: _Pool, count_include_pad: bool, like: Any) -> Any:
    """How many elements each window averages over (a product of one count per dim)."""
    div = np.ones((), dtype=np.float64)
    for j, (n, o, k, s, p) in enumerate(zip(geo.size, geo.out, geo.kernel, geo.stride,
                                            geo.padding, strict=False)):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)                   # windows stop at the padding's edge
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, n)
        shape = [1] * len(geo.out)
        shape[j] = o
        div = div * (end - start).reshape(shape)
    return _to_device(div.astype(like.dtype) if like.dtype.kind == "f" else div, like)


@quietly  # a window sum that overflows is inf, silently as in torch
def _window_mean(x: Tensor, geo: _Pool, div: Any, name: str, forward: bool = False) -> Tensor:
    """Sum of the taps over zero padding, divided by ``div``.

    ``forward``: this is avg_pool itself (not the backward of :func:`_window_spread`); its
    gradient then also depends, with derivative zero, on ``x`` under ``create_graph``.
    """
    xp = pad_array(x._data, x.dim() - len(geo.size), geo.pads())
    total = None
    for k in taps(geo.kernel):
        v = xp[geo.slices(k)]
        total = v.copy() if total is None else np.add(total, v, out=total)
    out = total / div
    res = wrap(out if out.dtype == total.dtype else out.astype(total.dtype), x._device)
    if needs_grad(x):
        if forward:
            second = name.replace("Backward0", "BackwardBackward0")
            record(name, res, (x,),
                   lambda g: (depends_on(_window_spread(g, geo, div, name), x, second),),
                   saved=(x,))
        else:
            record(name, res, (x,), lambda g: (_window_spread(g, geo, div, name),))
    return res


@quietly
def _window_spread(g: Tensor, geo: _Pool, div: Any, name: str) -> Tensor:
    """The adjoint of :func:`_window_mean`: ``g / div`` added back onto every tap's input."""
    share = g._data / div
    lead = g.shape[:g.dim() - len(geo.size)]
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(geo.size, geo.pads(), strict=False))
    dx = np.zeros_like(share, shape=(*lead, *padded))
    for k in taps(geo.kernel):
        dx[geo.slices(k)] += share
    res = wrap(dx[geo.crop()].copy(), g._device)
    if needs_grad(g):
        record(name.replace("Backward0", "BackwardBackward0"), res, (g,),
               lambda gg: (_window_mean(gg, geo, div, name),))
    return res


def _avg_poolnd(input: Tensor, d: int, kernel_size: Any, stride: Any, padding: Any,
                ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Tensor:
    geo = _geometry(input, d, f"avg_pool{d}d", kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        div = divisor_override
    else:
        div = _divisor(geo, count_include_pad, input._data)
    return _window_mean(input, geo, div, f"AvgPool{d}DBackward0", forward=True)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last dim of ``(N, C, L)``."""
    return _avg_poolnd(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of ``(N, C, H, W)``.

    ``count_include_pad`` counts zero padding in the window size; ``divisor_override`` replaces
    the window size altogether.
    """
    return _avg_poolnd(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over sliding windows of ``(N, C, D, H, W)``."""
    return _avg_poolnd(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override)


# ---------------------------------------------------------------------------- adaptive
def _adaptive_sizes(input: Tensor, output_size: Any, d: int, fn: str) -> tuple[int, ...]:
    if input.dim() not in (d + 1, d + 2):
        raise RuntimeError(f"{fn}(): Expected {d + 1}D or {d + 2}D tensor, but got "
                           f"{list(input.shape)}")
    sizes = (output_size,) * d if isinstance(output_size, numbers.Integral) or output_size is None \
        else tuple(output_size)
    if len(sizes) != d:
        raise ValueError(f"{fn}: output_size must be {d} ints, got {output_size}")
    return tuple(n if o is None else int(o) for o, n in zip(sizes, input.shape[-d:], strict=False))


def _bounds(n: int, o: int) -> list[tuple[int, int]]:
    """Adaptive window ``i``: from ``floor(i*n/o)`` up to ``ceil((i+1)*n/o)``."""
    return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]


_ADAPTIVE = {("avg", 1): "AdaptiveAvgPool2DBackward0", ("avg", 2): "AdaptiveAvgPool2DBackward0",
             ("avg", 3): "AdaptiveAvgPool3DBackward0", ("max", 1): "AdaptiveMaxPool2DBackward0",
             ("max", 2): "AdaptiveMaxPool2DBackward0"}


def _one_node(out: Tensor, input: Tensor, name: str) -> Tensor:
    """``out``, built by a composition of ops from ``input``, behind one node called ``name``.

    The node passes the gradient on unchanged; under ``create_graph`` it also makes that gradient
    depend on ``input`` (derivative zero), as torch's adaptive pooling backward ops do.
    """
    if not out._requires_grad:
        return out
    res = wrap(out._data, out._device)
    second = name.replace("Backward0", "BackwardBackward0")
    return record(name, res, (out,), lambda g: (depends_on(g, input, second),))


def _adaptive_avg(input: Tensor, output_size: Any, d: int) -> Tensor:
    """Mean over adaptive windows, one spatial dim at a time (a box mean is separable)."""
    return _one_node(_adaptive_avg_steps(input, output_size, d), input, _ADAPTIVE["avg", d])


def _adaptive_avg_steps(input: Tensor, output_size: Any, d: int) -> Tensor:
    sizes = _adaptive_sizes(input, output_size, d, f"adaptive_avg_pool{d}d")
    x = input
    for j, o in enumerate(sizes):
        axis = x.dim() - d + j
        n = x.shape[axis]
        if o == n:
            continue
        if o > 0 and n % o == 0:  # equal windows: a reshape and one mean
            x = x.unflatten(axis, (o, n // o)).mean(axis + 1)
        elif o == 0:
            x = x.narrow(axis, 0, 0)
        else:
            x = stack([x.narrow(axis, a, b - a).mean(axis) for a, b in _bounds(n, o)], axis)
    return x


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average-pool ``(N, C, L)`` down to exactly ``output_size`` positions."""
    return _adaptive_avg(input, output_size, 1)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average-pool ``(N, C, H, W)`` to exactly ``output_size`` (``None`` keeps that dim)."""
    return _adaptive_avg(input, output_size, 2)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average-pool ``(N, C, D, H, W)`` to exactly ``output_size``."""
    return _adaptive_avg(input, output_size, 3)


def _adaptive_max(input: Tensor, output_size: Any, d: int, return_indices: bool) -> Any:
    """Max over adaptive windows: a small loop over output cells finds each window's argmax;
    the values are then gathered from the input (so autograd comes from ``gather``)."""
    sizes = _adaptive_sizes(input, output_size, d, f"adaptive_max_pool{d}d")
    size = tuple(input.shape[-d:])
    x = input._data
    lead = x.shape[:x.ndim - d]
    idx = np.zeros_like(x, dtype=np.int64, shape=(*lead, *sizes))
    grids = [_bounds(n, o) for n, o in zip(size, sizes, strict=False)]
    for cell in np.ndindex(*sizes):
        box = [grids[j][c] for j, c in enumerate(cell)]
        win = x[(Ellipsis, *(slice(a, b) for a, b in box))]
        local = win.reshape(*lead, math.prod(win.shape[len(lead):])).argmax(-1)  # in the window
        flat = 0
        for j, (a, b) in enumerate(box):                     # → index inside the input plane
            inner = 1
            for w in [bb - aa for aa, bb in box[j + 1:]]:
                inner *= w
            flat = flat * size[j] + (local // inner % (b - a) + a)
        idx[(Ellipsis, *cell)] = flat
    indices = wrap(idx, input._device)
    values = input.flatten(-d).gather(-1, indices.flatten(-d)).view(indices.shape) if d > 1 \
        else input.gather(-1, indices)
    values = _one_node(values, input, _ADAPTIVE["max", d])
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max-pool ``(N, C, L)`` down to exactly ``output_size`` positions."""
    return _adaptive_max(input, output_size, 1, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max-pool ``(N, C, H, W)`` down to exactly ``output_size``."""
    return _adaptive_max(input, output_size, 2, return_indices)


# ---------------------------------------------------------------------------- unpooling
def _max_unpoolnd(input: Tensor, indices: Tensor, d: int, kernel_size: Any, stride: Any,
                  padding: Any, output_size: Any) -> Tensor:
    fn = f"max_unpool{d}d"
    check_same_device(input, indices)
    kernel = _tuple(kernel_size, d, fn, "kernel_size")
    stride = kernel if stride is None else _tuple(stride, d, fn, "stride")
    padding = _tuple(padding, d, fn, "padding")
    default = tuple((n - 1) * s - 2 * p + k for n, s, p, k in
                    zip(input.shape[-d:], stride, padding, kernel, strict=False))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-d:]
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    lead = tuple(input.shape[:input.dim() - d])
    flat = zeros((*lead, math.prod(size)), dtype=input.dtype, device=input.device)
    src = input.flatten(-d) if d > 1 else input
    idx = indices.flatten(-d) if d > 1 else indices
    return flat.scatter(-1, idx, src).view(*lead, *size)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Put each value back at the index ``max_pool1d(..., return_indices=True)`` recorded."""
    return _max_unpoolnd(input, indices, 1, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """Put each value back at the index ``max_pool2d(..., return_indices=True)`` recorded;
    everything else is zero."""
    return _max_unpoolnd(input, indices, 2, kernel_size, stride, padding, output_size)
