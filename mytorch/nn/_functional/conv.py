"""Convolution (``conv1d/2d/3d``) and transposed convolution (``conv_transpose1d/2d/3d``).

**im2col.** Each output pixel of a convolution is a dot product between the weight of one output
channel and the input values under the kernel. Lay those values out as one row per output pixel
(a strided *view* of the padded input, then one copy: :func:`_im2col`) and the whole convolution
is a single matrix product ``cols @ weightᵀ`` — no Python loop over pixels. Channels-last rows
make that product BLAS's fastest shape (many rows, few columns).

**Three bilinear maps.** Write ``F(x, w)`` for the convolution. Its two gradients are again
bilinear maps of the same shapes:

* ``Bx(g, w)`` — the input gradient: ``g @ weight`` back to rows, then each row's values added
  back where they came from ("col2im"). This *is* the transposed convolution.
* ``Bw(x, g)`` — the weight gradient: ``gᵀ @ cols``.

Each of the three is one recorded op whose backward calls the other two (e.g. the gradient of
``Bx(g, w)`` with respect to ``g`` is ``F(·, w)``), so gradients of gradients (``create_graph``)
work to any order without extra code. Groups split the channels into ``groups`` independent
convolutions: one batched matrix product with the group as the batch dimension.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..._tensor import Tensor, wrap
from ...autograd.graph import needs_grad, record
from ._windows import add_windows, pad_array, windows

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d"]

_NODE = "ConvolutionBackward0"


class _Geometry(NamedTuple):
    """How the kernel moves, per spatial dim: step, (before, after) zero padding, tap spacing."""

    stride: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilation: tuple[int, ...]
    groups: int


# ------------------------------------------------------------------------- array level
def _grouped(x: Any, g: int) -> Any:
    """``(N, C, *S)`` → the view ``(G, N, *S, C/G)``: channels last, one block per group."""
    n, c, d = x.shape[0], x.shape[1], x.ndim - 2
    return x.reshape(n, g, c // g, *x.shape[2:]).transpose(1, 0, *range(3, 3 + d), 2)


def _im2col(x: Any, kernel: Sequence[int], out: Sequence[int], geo: _Geometry) -> Any:
    """``(G, N*L, kernel taps × channels per group)``: one row per output pixel."""
    xg = pad_array(_grouped(x, geo.groups), 2, geo.padding)              # (G, N, *S, Cg)
    win = windows(xg, 2, out, kernel, geo.stride, geo.dilation)          # (G, N, *out, *k, Cg)
    return win.reshape(geo.groups, -1, win.shape[-1] * math.prod(kernel))   # the one big copy


def _weight_matrix(w: Any, g: int) -> Any:
    """Weight ``(O, Cg, *k)`` as ``(G, O/G, k taps × Cg)``: the column order of :func:`_im2col`."""
    d = w.ndim - 2
    wg = w.reshape(g, w.shape[0] // g, *w.shape[1:])
    return wg.transpose(0, 1, *range(3, 3 + d), 2).reshape(g, w.shape[0] // g, -1)


def _weight_from_matrix(m: Any, shape: Sequence[int]) -> Any:
    """Inverse of :func:`_weight_matrix`."""
    d = len(shape) - 2
    g, og = m.shape[:2]
    return m.reshape(g, og, *shape[2:], shape[1]).transpose(0, 1, 2 + d, *range(2, 2 + d)) \
        .reshape(shape)


def _to_rows(y: Any, g: int) -> Any:
    """``(N, O, *out)`` → ``(G, N*L, O/G)``, the row layout of the matrix products."""
    n, o = y.shape[:2]
    return y.reshape(n, g, o // g, -1).transpose(1, 0, 3, 2).reshape(g, -1, o // g)


def _from_rows(r: Any, n: int, out: Sequence[int]) -> Any:
    """``(G, N*L, O/G)`` → a contiguous ``(N, O, *out)``."""
    g, _, og = r.shape
    y = r.reshape(g, n, -1, og).transpose(1, 0, 3, 2).reshape(n, g * og, *out)
    return y if y.flags.c_contiguous else y.copy()


def _conv_out(size: Sequence[int], kernel: Sequence[int], geo: _Geometry) -> tuple[int, ...]:
    """Output spatial size: ``(size + pads - dilation*(kernel-1) - 1) // stride + 1`` per dim."""
    return tuple((s + lo + hi - dl * (k - 1) - 1) // st + 1 for s, k, (lo, hi), st, dl in
                 zip(size, kernel, geo.padding, geo.stride, geo.dilation, strict=False))


def _forward_arrays(x: Any, w: Any, geo: _Geometry) -> tuple[Any, Any]:
    """``F(x, w)`` and the im2col rows it used (kept for the weight gradient)."""
    out = _conv_out(x.shape[2:], w.shape[2:], geo)
    cols = _im2col(x, w.shape[2:], out, geo)
    y = cols @ _weight_matrix(w, geo.groups).transpose(0, 2, 1)          # (G, N*L, O/G)
    return _from_rows(y, x.shape[0], out), cols


def _input_grad_arrays(g: Any, w: Any, geo: _Geometry, size: Sequence[int]) -> Any:
    """``Bx(g, w)``: for every kernel tap, ``g @ W[tap]`` added back where that tap read from.

    One batched product computes every tap's contribution as its own contiguous block
    ``(N*L, Cg)``, which makes the col2im additions long, contiguous runs of memory.
    """
    d, groups, n = w.ndim - 2, geo.groups, g.shape[0]
    kernel, out = w.shape[2:], g.shape[2:]
    og, cg = w.shape[0] // groups, w.shape[1]
    w_taps = w.reshape(groups, og, cg, -1).transpose(0, 3, 1, 2)          # (G, taps, O/G, Cg)
    dcols = _to_rows(g, groups)[:, None] @ w_taps                         # (G, taps, N*L, Cg)
    src = dcols.reshape(groups, *kernel, n, *out, cg) \
        .transpose(0, d + 1, *range(d + 2, 2 * d + 2), *range(1, d + 1), 2 * d + 2)
    padded = [max(s + lo + hi, (o - 1) * st + dl * (k - 1) + 1) for s, (lo, hi), o, st, dl, k in
              zip(size, geo.padding, out, geo.stride, geo.dilation, kernel, strict=False)]
    dx = np.zeros_like(dcols, shape=(groups, n, *padded, cg))           # (G, N, *S, Cg)
    add_windows(dx, src, 2, kernel, geo.stride, geo.dilation)
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, geo.padding, strict=False))
    dx = dx[(slice(None), slice(None), *crop)]
    return dx.transpose(1, 0, d + 2, *range(2, d + 2)).reshape(n, groups * cg, *size)


def _weight_grad_arrays(x: Any, g: Any, geo: _Geometry, kernel: Sequence[int],
                        cols: Any = None) -> Any:
    """``Bw(x, g)``: ``gᵀ @ cols`` for every group, back in the weight's layout."""
    if cols is None:
        cols = _im2col(x, kernel, g.shape[2:], geo)
    dw = _to_rows(g, geo.groups).transpose(0, 2, 1) @ cols                # (G, O/G, k*Cg)
    return _weight_from_matrix(dw, (g.shape[1], x.shape[1] // geo.groups, *kernel))


# ------------------------------------------------------------------------ tensor level
def _rg(t: Any) -> bool:
    return t is not None and t._requires_grad


def _bias_view(b: Tensor, d: int) -> Any:
    return b._data.reshape(-1, *(1,) * d)


def _bias_grad(g: Tensor) -> Tensor:
    return g.sum(dim=(0, *range(2, g.ndim)))


def _conv(x: Tensor, w: Tensor, b: Tensor | None, geo: _Geometry) -> Tensor:
    """``F(x, w) + b`` as one recorded op."""
    y, cols = _forward_arrays(x._data, w._data, geo)
    if b is not None:
        y += _bias_view(b, y.ndim - 2)
    res = wrap(y, x._device)
    if needs_grad(x, w, b):
        size, kernel = x.shape[2:], w.shape[2:]
        record(_NODE, res, (x, w, b), lambda g: (
            _input_grad(g, w, None, geo, size) if _rg(x) else None,
            _weight_grad(x, g, geo, kernel, cols) if _rg(w) else None,
            _bias_grad(g) if _rg(b) else None), saved=(x, w))
    return res


def _input_grad(g: Tensor, w: Tensor, b: Tensor | None, geo: _Geometry,
                size: Sequence[int]) -> Tensor:
    """``Bx(g, w) + b``: the input gradient of a convolution, i.e. a transposed convolution."""
    y = _input_grad_arrays(g._data, w._data, geo, size)
    if b is not None:
        y += _bias_view(b, y.ndim - 2)
    res = wrap(y, g._device)
    if needs_grad(g, w, b):
        kernel = w.shape[2:]
        record(_NODE, res, (g, w, b), lambda gy: (
            _conv(gy, w, None, geo) if _rg(g) else None,
            _weight_grad(gy, g, geo, kernel) if _rg(w) else None,
            _bias_grad(gy) if _rg(b) else None), saved=(g, w))
    return res


def _weight_grad(x: Tensor, g: Tensor, geo: _Geometry, kernel: Sequence[int],
                 cols: Any = None) -> Tensor:
    """``Bw(x, g)``: the weight gradient of a convolution."""
    res = wrap(_weight_grad_arrays(x._data, g._data, geo, kernel, cols), g._device)
    if needs_grad(x, g):
        size = x.shape[2:]
        record(_NODE, res, (x, g), lambda gw: (
            _input_grad(g, gw, None, geo, size) if _rg(x) else None,
            _conv(x, gw, None, geo) if _rg(g) else None), saved=(x, g))
    return res


# ---------------------------------------------------------------------- argument checks
def _tuple(v: Any, d: int, name: str) -> tuple[int, ...]:
    """One int per spatial dim from an int or a sequence (torch's error when the length is off)."""
    if isinstance(v, numbers.Integral):
        return (int(v),) * d
    v = tuple(int(x) for x in v)
    if len(v) == 1:
        return v * d
    if len(v) != d:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {d} values "
                           f"to match the convolution dimensions, but got {name}={list(v)}")
    return v


def _same_padding(kernel: Sequence[int], dilation: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """``padding='same'``: ``dilation*(k-1)`` in total, the odd one out going after (as torch)."""
    return tuple((dl * (k - 1) // 2, dl * (k - 1) - dl * (k - 1) // 2)
                 for k, dl in zip(kernel, dilation, strict=False))


def _check_input(input: Tensor, weight: Tensor, bias: Tensor | None, d: int, fn: str) -> bool:
    """Rank and dtype checks shared by every convolution; True when ``input`` has a batch dim."""
    if input.dim() not in (d + 1, d + 2):
        raise RuntimeError(f"Expected {d + 1}D (unbatched) or {d + 2}D (batched) input to {fn}, "
                           f"but got input of size: {list(input.shape)}")
    if weight.dim() != d + 2:
        raise RuntimeError(f"expected stride to be a single integer value or a list of "
                           f"{weight.dim() - 2} values to match the convolution dimensions, but "
                           f"got stride={[1] * d}")
    if input.dtype != weight.dtype:
        if input.dtype.itemsize > weight.dtype.itemsize and input.is_floating_point():
            raise RuntimeError(f"expected scalar type {_cap(input)} but found {_cap(weight)}")
        raise RuntimeError(f"Input type ({input.type()}) and weight type "
                           f"({weight.type()}) should be the same or input should be a "
                           "MKLDNN tensor and weight is a dense tensor")
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"Input type ({_short(input)}) and bias type ({_short(bias)}) should "
                           "be the same")
    return input.dim() == d + 2


def _cap(t: Tensor) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int"}.get(str(t.dtype)[6:], str(t.dtype)[6:])


def _short(t: Tensor) -> str:
    return {"float32": "float", "float64": "double"}.get(str(t.dtype)[6:], str(t.dtype)[6:])


def _check_geometry(stride: tuple, padding: tuple, dilation: tuple, groups: int) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for pair in padding for p in pair):
        raise RuntimeError("negative padding is not supported")
    if any(dl <= 0 for dl in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_bias(weight: Tensor, bias: Tensor | None, channels: int) -> None:
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != channels):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {channels} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


def _convnd(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
            dilation: Any, groups: int, d: int) -> Tensor:
    batched = _check_input(input, weight, bias, d, f"conv{d}d")
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _tuple(stride, d, "stride"), _tuple(dilation, d, "dilation")
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * d
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = _same_padding(kernel, dilation)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _tuple(padding, d, "padding"))
    _check_geometry(stride, pads, dilation, groups)
    o, cg = weight.shape[:2]
    if o % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size [{list(weight.shape)}] instead")
    if x.shape[1] != cg * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cg * groups} channels, but got "
                           f"{x.shape[1]} channels instead")
    _check_bias(weight, bias, o)
    padded = [s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads, strict=False)]
    span = [dl * (k - 1) + 1 for k, dl in zip(kernel, dilation, strict=False)]
    if any(p < k for p, k in zip(padded, span, strict=False)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}"
                           f"). Kernel size: ({' x '.join(map(str, span))}). Kernel size can't be "
                           "greater than actual input size")
    res = _conv(x, weight, bias, _Geometry(stride, pads, dilation, groups))
    return res if batched else res.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution of ``(N, C_in, L)`` with ``weight`` ``(C_out, C_in/groups, k)``."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution of ``(N, C_in, H, W)`` with ``weight`` ``(C_out, C_in/groups, kH, kW)``.

    ``padding`` is an int, a pair, ``'valid'`` (none) or ``'same'`` (output as big as the input).
    Output size per dim: ``(in + 2*padding - dilation*(k-1) - 1) // stride + 1``.
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution of ``(N, C_in, D, H, W)`` with ``weight`` ``(C_out, C_in/groups, kD, kH, kW)``."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transposend(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
                      padding: Any, output_padding: Any, groups: int, dilation: Any,
                      d: int) -> Tensor:
    batched = _check_input(input, weight, bias, d, f"conv_transpose{d}d")
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _tuple(stride, d, "stride"), _tuple(dilation, d, "dilation")
    padding, out_pad = _tuple(padding, d, "padding"), _tuple(output_padding, d, "output_padding")
    pads = tuple((p, p) for p in padding)
    _check_geometry(stride, pads, dilation, groups)
    if any(op >= s and op >= dl for op, s, dl in zip(out_pad, stride, dilation, strict=False)):
        names = ("depth", "height", "width")[3 - d:]
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           "got " + " ".join(
                               [f"output_padding_{n}: {v}" for n, v in zip(names, out_pad, strict=False)]
                               + [f"stride_{n}: {v}" for n, v in zip(names, stride, strict=False)]
                               + [f"dilation_{n}: {v}" for n, v in zip(names, dilation, strict=False)]))
    cin, cg = weight.shape[:2]
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cin} channels, but got {x.shape[1]} "
                           "channels instead")
    if cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at "
                           f"dimension 0, but got weight of size [{list(weight.shape)}] instead")
    _check_bias(weight, bias, cg * groups)
    size = tuple((i - 1) * s - 2 * p + dl * (k - 1) + op + 1 for i, s, p, dl, k, op in
                 zip(x.shape[2:], stride, padding, dilation, weight.shape[2:], out_pad, strict=False))
    if any(s <= 0 for s in size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, x.shape[2:]))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, size))}). "
                           "Output size is too small")
    res = _input_grad(x, weight, bias, _Geometry(stride, pads, dilation, groups), size)
    return res if batched else res.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """1-D transposed convolution; ``weight`` is ``(C_in, C_out/groups, k)``."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """2-D transposed convolution: the input gradient of ``conv2d``, used to upsample.

    ``weight`` is ``(C_in, C_out/groups, kH, kW)``. Output size per dim:
    ``(in-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    """
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """3-D transposed convolution; ``weight`` is ``(C_in, C_out/groups, kD, kH, kW)``."""
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups,
                             dilation, 3)
