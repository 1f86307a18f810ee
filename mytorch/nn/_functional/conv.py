"""Convolution (``conv1d/2d/3d``) and transposed convolution (``conv_transpose1d/2d/3d``).

**im2col.** Each output pixel of a convolution is a dot product between the weight of one output
channel and the input values under the kernel. Lay those values out as one column per output pixel
(a strided *view* of the padded input, then one copy: :func:`_im2col`) and the whole convolution
is a matrix product ``weight @ cols`` per image — no Python loop over pixels. With the columns in
that order the product lands directly in the output's ``(N, C, H, W)`` layout, so nothing is
transposed or copied afterwards.

**Three bilinear maps.** Write ``F(x, w)`` for the convolution. Its two gradients are again
bilinear maps of the same shapes:

* ``Bx(g, w)`` — the input gradient: ``g @ weight`` gives, for every kernel tap, the values to
  add back where that tap read from ("col2im"). This *is* the transposed convolution. It runs
  channels last, which makes those additions long runs of contiguous memory.
* ``Bw(x, g)`` — the weight gradient: ``g @ colsᵀ``, summed over the images.

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

from ..._ops._operands import check_same_device, quietly
from ..._pieces import piece, pieces
from ..._tensor import Tensor, wrap
from ...autograd.graph import needs_grad, record
from ...autograd.piece_op import as_op
from ._windows import add_windows, conv_output_size, out_size, pad_array, windows
from .padding import pad
from .sampling import unfold

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
def _split(x: Any, g: int) -> Any:
    """``(N, C, *S)`` → the view ``(N, G, C/G, *S)``: one block of channels per group."""
    return x.reshape(x.shape[0], g, x.shape[1] // g, *x.shape[2:])


def _im2col(x: Any, kernel: Sequence[int], out: Sequence[int], geo: _Geometry) -> Any:
    """``(N, G, C/G × kernel taps, L)``: column ``l`` holds the input under the kernel at output
    pixel ``l``, in the order ``(channel, *tap)`` of the weight's flattened rows."""
    d = len(kernel)
    xp = pad_array(_split(x, geo.groups), 3, geo.padding)               # (N, G, Cg, *S)
    win = windows(xp, 3, out, kernel, geo.stride, geo.dilation)          # (N, G, Cg, *out, *k)
    win = win.transpose(0, 1, 2, *range(3 + d, 3 + 2 * d), *range(3, 3 + d))  # (N, G, Cg, *k, *out)
    rows = x.shape[1] // geo.groups * math.prod(kernel)                  # explicit: N may be 0
    return win.reshape(x.shape[0], geo.groups, rows, math.prod(out))     # the one big copy


def _weight_matrix(w: Any, g: int) -> Any:
    """Weight ``(O, C/G, *k)`` as ``(G, O/G, C/G × taps)``: a reshape, no copy."""
    return w.reshape(g, w.shape[0] // g, math.prod(w.shape[1:]))


def _conv_out(size: Sequence[int], kernel: Sequence[int], geo: _Geometry) -> tuple[int, ...]:
    """Output spatial size per dim: the piece :func:`conv_output_size` (an uneven padding, as
    ``padding='same'`` gives for even kernels, counts as a longer input)."""
    return tuple(out_size(s, k, st, lo, dl) if lo == hi else out_size(s + lo + hi, k, st, 0, dl)
                 for s, k, (lo, hi), st, dl in
                 zip(size, kernel, geo.padding, geo.stride, geo.dilation, strict=False))


@quietly  # products that overflow are inf, silently as in torch
def _forward_arrays(x: Any, w: Any, geo: _Geometry) -> tuple[Any, Any]:
    """``F(x, w)`` and the im2col columns it used (kept for the weight gradient).

    One batched product ``W[g] @ cols[n, g]`` per image and group lands directly in the output's
    ``(N, C_out, *out)`` layout: no transpose, no copy after the product.
    """
    out = _conv_out(x.shape[2:], w.shape[2:], geo)
    cols = _im2col(x, w.shape[2:], out, geo)
    y = _weight_matrix(w, geo.groups) @ cols                             # (N, G, O/G, L)
    return y.reshape(x.shape[0], w.shape[0], *out), cols


def _to_rows(y: Any, g: int) -> Any:
    """``(N, O, *out)`` → ``(G, N*L, O/G)``: one row per output pixel, channels last."""
    n, o = y.shape[:2]
    pixels = math.prod(y.shape[2:])                   # sizes spelled out: a -1 fails when n == 0
    return y.reshape(n, g, o // g, pixels).transpose(1, 0, 3, 2).reshape(g, n * pixels, o // g)


@quietly
def _input_grad_arrays(g: Any, w: Any, geo: _Geometry, size: Sequence[int]) -> Any:
    """``Bx(g, w)``: for every kernel tap, ``g @ W[tap]`` added back where that tap read from.

    This one works channels last: one batched product computes every tap's contribution as its
    own contiguous block ``(N*L, Cg)``, so the col2im additions run over long, contiguous stretches
    of memory (``W × C`` values per image row) instead of one short image row at a time.
    """
    d, groups, n = w.ndim - 2, geo.groups, g.shape[0]
    kernel, out = w.shape[2:], g.shape[2:]
    og, cg = w.shape[0] // groups, w.shape[1]
    w_taps = w.reshape(groups, og, cg, math.prod(kernel)).transpose(0, 3, 1, 2)  # (G, taps, O/G, Cg)
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


# Partial products of the weight gradient summed per chunk of images: bounded memory, few BLAS calls.
_CHUNK = 1 << 22


@quietly
def _weight_grad_arrays(x: Any, g: Any, geo: _Geometry, kernel: Sequence[int],
                        cols: Any = None) -> Any:
    """``Bw(x, g)``: ``Σ_n g[n, g] @ cols[n, g]ᵀ`` for every group, back in the weight's layout."""
    if cols is None:
        cols = _im2col(x, kernel, g.shape[2:], geo)
    n, groups = g.shape[0], geo.groups
    rows = g.reshape(n, groups, g.shape[1] // groups, math.prod(g.shape[2:]))  # (N, G, O/G, L)
    cols_t = cols.transpose(0, 1, 3, 2)                                  # (N, G, L, Cg·taps)
    dw = np.zeros_like(cols, shape=(groups, rows.shape[2], cols.shape[2]))
    step = max(1, _CHUNK // max(1, dw.size))
    for i in range(0, n, step):
        dw += (rows[i:i + step] @ cols_t[i:i + step]).sum(0)
    return dw.reshape(g.shape[1], x.shape[1] // groups, *kernel)


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


# ------------------------------------------------------------------------------ the piece
def _conv2d_fused(x: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple, padding: tuple,
                  dilation: tuple, groups: int) -> Tensor:
    """The fast path of the piece :func:`conv2d_unfold`: the fused kernel above."""
    return _conv(x, weight, bias, _Geometry(stride, tuple((p, p) for p in padding), dilation, groups))


@piece("04.5", fast=_conv2d_fused, wrap=as_op(_NODE))
def conv2d_unfold(x: "Tensor", weight: "Tensor", bias: "Tensor | None", stride: tuple,
                  padding: tuple, dilation: tuple, groups: int) -> "Tensor":
    """2-D convolution of ``x`` ``(N, C, H, W)`` with ``weight`` ``(O, C/groups, kh, kw)`` (and
    ``bias`` ``(O,)`` or None) as matrix products over the unfolded windows; ``stride``,
    ``padding`` and ``dilation`` are (height, width) pairs."""
    N, C, H, W = x.shape
    O, _, kh, kw = weight.shape
    oh = conv_output_size(H, kh, stride[0], padding[0], dilation[0])
    ow = conv_output_size(W, kw, stride[1], padding[1], dilation[1])
    rows = C // groups * kh * kw                      # one window of one group, as a column
    cols = unfold(x, (kh, kw), dilation, padding, stride)        # (N, C*kh*kw, oh*ow)
    cols = cols.reshape(N, groups, rows, oh * ow)                 # the groups' channels apart
    w = weight.reshape(groups, O // groups, rows)                 # (groups, O/groups, rows)
    out = (w @ cols).reshape(N, O, oh, ow)            # every group and image in one product
    if bias is not None:
        out = out + bias.reshape(1, O, 1, 1)
    return out


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
    _check_devices(input, weight, bias)
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


def _check_devices(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """Parameters on another device than the input: torch's convolution compares the tensors'
    *types* (``torch.cuda.FloatTensor`` …); a CPU input is headed for its MKLDNN kernel, whose
    message says so."""
    cpu = input.device.type == "cpu"
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.device.type != input.device.type:
            raise RuntimeError(f"Input type ({input.type()}) and {name} type ({t.type()}) should be "
                               "the same" + (f" or input should be a MKLDNN tensor and {name} is a "
                                             "dense tensor" if cpu else ""))
    check_same_device(input, weight, *(() if bias is None else (bias,)))  # cuda:0 vs cuda:1


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


def _check_weight_rows(weight: Tensor, groups: int) -> None:
    """At least one row of weights per group (an empty weight has nothing to convolve with)."""
    if weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")


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
    _check_weight_rows(weight, groups)
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
    if d == 2:
        if any(lo != hi for lo, hi in pads):  # 'same' with an even kernel: the odd one after
            x = pad(x, (0, pads[1][1] - pads[1][0], 0, pads[0][1] - pads[0][0]))
        res = pieces.conv2d_unfold(x, weight, bias, stride, tuple(lo for lo, _ in pads),
                                   dilation, groups)
    else:
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
    _check_weight_rows(weight, groups)
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
