"""Normalisation functions: ``batch_norm``, ``instance_norm``, ``layer_norm``, ``group_norm``.

All four compute the same thing, ``(x - mean) / sqrt(var + eps) * weight + bias``; they differ only
in *which axes* the mean and (biased) variance are taken over:

=============  =========================  =========================================
function       statistics over            ``weight`` / ``bias`` broadcast over
=============  =========================  =========================================
batch_norm     N and every spatial axis   the channel axis 1
instance_norm  each sample's spatial axes the channel axis 1
layer_norm     the trailing ``normalized_shape`` axes (and so are the weights)
group_norm     each sample's channel groups the channel axis 1
=============  =========================  =========================================

The training-mode kernel :func:`_normalize` is *fused*: one autograd node for input, weight and
bias, with the closed-form gradient ``invstd * (ĝ - mean(ĝ) - x̂ * mean(ĝ x̂))`` (ĝ = g · weight),
instead of the ~10 nodes the composed formula would record. Its backward works on arrays for
speed, except under ``create_graph=True`` where it is rebuilt from Tensor ops (differentiable).
Running statistics are updated in place (no autograd), with the *unbiased* variance, as torch
does.
"""
from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import _dtype as D
from ..._device import xp_for
from ..._ops._operands import check_same_device, quietly
from ..._ops.pointwise import div
from ..._pieces import piece, pieces
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import STATE, no_grad
from ...autograd.graph import needs_grad, record, sum_to
from ...autograd.piece_op import as_op

__all__ = ["batch_norm", "instance_norm", "layer_norm", "rms_norm", "group_norm", "normalize"]


# ----------------------------------------------------------------------------- the fused kernel
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _sum(arr: Any, axes: tuple[int, ...], xp: Any) -> Any:
    """``arr.sum(axes, keepdims=True)`` as a row-sum ``einsum`` (several times faster than NumPy's
    strided reduction) for the two layouts normalisations use: trailing axes (layer/instance/group
    norm) and every axis but 1 (batch norm)."""
    nd = arr.ndim
    k = len(axes)
    if axes == tuple(range(nd - k, nd)):
        size = math.prod(arr.shape[nd - k:])
        if xp is np and arr.dtype in _BLAS_FLOATS and arr.size:  # a matrix-vector product:
            flat = arr.reshape(-1, size) @ np.ones(size, arr.dtype)  # faster still
        else:
            flat = xp.einsum("ij->i", arr.reshape(-1, size))
        return flat.reshape(arr.shape[:nd - k] + (1,) * k)
    if nd >= 2 and axes == (0,) + tuple(range(2, nd)):
        n, c = arr.shape[:2]
        size = math.prod(arr.shape[2:])
        per_row = xp.einsum("ij->i", arr.reshape(n * c, size))
        return per_row.reshape(n, c).sum(axis=0).reshape((1, c) + (1,) * (nd - 2))
    return arr.sum(axis=axes, keepdims=True)


@quietly  # huge or infinite inputs give inf/nan silently, as in torch
def _normalize(input: Tensor, axes: tuple[int, ...], param_shape: tuple[int, ...],
               weight: Tensor | None, bias: Tensor | None, eps: float, node: str
               ) -> tuple[Tensor, Any, Any]:
    """``(x - mean) * invstd * weight + bias`` with statistics over ``axes``.

    ``param_shape`` is the shape ``weight``/``bias`` are viewed as to broadcast against ``input``.
    Returns the output and the (keepdim) mean and biased variance arrays, for running statistics.
    """
    xp = xp_for(input._device)
    x = input._data
    count = math.prod(x.shape[a] for a in axes)
    mean = _sum(x, axes, xp) / count
    xc = x - mean
    out = xp.multiply(xc, xc)  # scratch: squares first, then the output itself
    var = _sum(out, axes, xp) / count
    invstd = 1.0 / xp.sqrt(var + eps)
    scale = invstd if weight is None else invstd * weight._data.reshape(param_shape)
    xp.multiply(xc, scale, out=out)
    if bias is not None:
        out += bias._data.reshape(param_shape)
    res = wrap(out, input._device)
    if needs_grad(input, weight, bias):
        def backward(g: Tensor) -> tuple:
            if STATE.enabled:  # create_graph=True: the gradient must itself be differentiable
                return _backward_graph(g, input, weight, bias, axes, param_shape, eps)
            return _backward_fast(g, xc, invstd, count, input, weight, bias, axes, param_shape)

        # backward reads the weight's values too: changing it in place before then is an error
        record(node, res, (input, weight, bias), backward,
               saved=(input,) if weight is None else (input, weight))
    return res, mean, var


@quietly
def _backward_fast(g: Tensor, xc: Any, invstd: Any, count: int, input: Tensor,
                   weight: Tensor | None, bias: Tensor | None, axes: tuple[int, ...],
                   param_shape: tuple[int, ...]) -> tuple:
    """The closed-form gradient on arrays, a handful of passes over the data.

    With x̂ = xc·invstd and ĝ = g·w:  dx = invstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ x̂)).
    When ``w`` is constant along the reduced axes (batch/instance norm: one per channel) it
    factors out of the means; layer norm's ``w`` lives *on* those axes and is applied to g first.
    """
    xp = xp_for(g._device)
    ga = g._data
    w = None if weight is None else weight._data.reshape(param_shape)
    offset = ga.ndim - len(param_shape)
    w_on_axes = w is not None and any(param_shape[a - offset] > 1 for a in axes if a >= offset)
    gw = ga * w if w_on_axes else ga
    k = invstd if w is None or w_on_axes else invstd * w
    sum_g = _sum(gw, axes, xp)
    tmp = xp.multiply(gw, xc)
    sum_gxc = _sum(tmp, axes, xp)
    gx = None
    if input._requires_grad:
        # dx = k·ĝ - k·mean(ĝ) - xc · k·invstd²·mean(ĝ·xc)
        xp.multiply(xc, k * invstd * invstd * (sum_gxc / count), out=tmp)
        gx_arr = xp.multiply(gw, k)
        gx_arr -= tmp
        gx_arr -= k * (sum_g / count)
        gx = wrap(gx_arr, g._device)
    g_weight = g_bias = None
    if weight is not None and weight._requires_grad:
        if w_on_axes:  # sum of g·x̂ over the batch dims, per normalised position
            g_weight = _to_param(xp.multiply(xp.multiply(ga, xc), invstd), param_shape, weight, xp)
        else:
            g_weight = _to_param(sum_gxc * invstd, param_shape, weight, xp)
        g_weight = wrap(g_weight, g._device)
    if bias is not None and bias._requires_grad:
        g_bias = wrap(_to_param(ga if w_on_axes else sum_g, param_shape, bias, xp), g._device)
    return gx, g_weight, g_bias


def _to_param(arr: Any, param_shape: tuple[int, ...], param: Tensor, xp: Any) -> Any:
    """Sum ``arr`` down to the parameter's shape (over the leading and broadcast dims)."""
    lead = arr.ndim - len(param_shape)
    if lead:  # the leading (batch) dims
        rows = math.prod(arr.shape[:lead])
        cols = math.prod(arr.shape[lead:])  # spelled out: rows may be 0 (an empty batch)
        if xp is np and arr.dtype in _BLAS_FLOATS and arr.size:
            arr = (np.ones(rows, arr.dtype) @ arr.reshape(rows, cols)).reshape(arr.shape[lead:])
        else:
            arr = xp.einsum("ij->j", arr.reshape(rows, cols)).reshape(arr.shape[lead:])
    axes = tuple(i for i, n in enumerate(param_shape) if n == 1 and arr.shape[i] != 1)
    if axes:
        arr = arr.sum(axis=axes, keepdims=True)
    return arr.reshape(param.shape).astype(param._data.dtype, copy=False)


def _backward_graph(g: Tensor, input: Tensor, weight: Tensor | None, bias: Tensor | None,
                    axes: tuple[int, ...], param_shape: tuple[int, ...], eps: float) -> tuple:
    """The same gradient written with Tensor ops from ``input``, so it can be differentiated."""
    xc = input - input.mean(axes, keepdim=True)
    invstd = ((xc * xc).mean(axes, keepdim=True) + eps).rsqrt()
    xhat = xc * invstd
    gw = g if weight is None else g * weight.reshape(param_shape)
    gx = None
    if input._requires_grad:
        gx = invstd * (gw - gw.mean(axes, keepdim=True)
                       - xhat * (gw * xhat).mean(axes, keepdim=True))
    g_weight = None if weight is None or not weight._requires_grad else \
        sum_to(g * xhat, param_shape).reshape(weight.shape)
    g_bias = None if bias is None or not bias._requires_grad else \
        sum_to(g, param_shape).reshape(bias.shape)
    return gx, g_weight, g_bias


def _affine_with_stats(input: Tensor, mean: Tensor, var: Tensor, weight: Tensor | None,
                       bias: Tensor | None, eps: float, param_shape: tuple[int, ...]) -> Tensor:
    """Normalise with *given* statistics (eval mode): one scale and one shift per channel."""
    scale = (var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    return input * scale.reshape(param_shape) + shift.reshape(param_shape)


def _update_running(running: Tensor | None, value: Any, momentum: float) -> None:
    """``running = (1 - momentum) * running + momentum * value`` in place (bumps its version)."""
    if running is None:
        return
    arr = running._data
    arr *= 1.0 - momentum
    arr += (momentum * value).astype(arr.dtype, copy=False).reshape(arr.shape)
    running._bump()


def _check_param(name: str, t: Tensor | None, n: int) -> None:
    if t is not None and t.numel() != n:
        raise RuntimeError(f"{name} should contain {n} elements not {t.numel()}")


def _same_device(*tensors: Tensor | None) -> None:
    """torch's device check, in its argument order (input, weight, bias, running statistics):
    the fused kernels below work on the raw arrays, which must live on one device."""
    check_same_device(*(t for t in tensors if t is not None))


def _channel_shape(input: Tensor) -> tuple[int, ...]:
    """``(1, C, 1, …)``: how per-channel parameters broadcast against ``input``."""
    return (1, input.shape[1]) + (1,) * (input.dim() - 2)


# ----------------------------------------------------------------------------- batch_norm
def _batch_norm_fused(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                      weight: Tensor | None, bias: Tensor | None, momentum: float,
                      eps: float) -> Tensor:
    """The fast path of the piece :func:`batch_norm_train`: the fused kernel above."""
    count = x.numel() // x.shape[1]
    axes = (0,) + tuple(range(2, x.dim()))
    out, mean, var = _normalize(x, axes, _channel_shape(x), weight, bias, eps,
                                "NativeBatchNormBackward0")
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, var * (count / (count - 1)), momentum)
    return out


@piece("04.6", fast=_batch_norm_fused, wrap=as_op("NativeBatchNormBackward0", state=(1, 2)))
def batch_norm_train(x: "Tensor", running_mean: "Tensor | None", running_var: "Tensor | None",
                     weight: "Tensor | None", bias: "Tensor | None", momentum: float,
                     eps: float) -> "Tensor":
    """Batch normalisation in training mode of ``x`` ``(N, C, *)``: every channel standardised
    with this batch's statistics, then scaled by ``weight`` and shifted by ``bias`` (``(C,)``
    each, or None). ``running_mean`` and ``running_var`` (or None) move towards the batch's
    mean and *unbiased* variance by ``momentum``, in place."""
    dims = [0, *range(2, x.dim())]                  # every dim but the channels
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)   # a per-channel value, broadcast against x
    mean = x.mean(dims)
    var = x.var(dims, unbiased=False)               # biased: the batch is all there is
    n = x.numel() // x.shape[1]                     # values per channel
    with no_grad():                                 # bookkeeping, not part of the graph
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(momentum * mean)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(momentum * n / (n - 1) * var)
    out = (x - mean.reshape(shape)) / (var.reshape(shape) + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) over the batch and every spatial position.

    ``training=True`` uses the batch's statistics and updates ``running_mean``/``running_var``
    (``running = (1 - momentum) * running + momentum * batch_stat``, unbiased variance);
    ``training=False`` uses the running statistics instead.
    """
    if input.dim() < 2:
        raise ValueError(f"Expected 2D or higher input to batch_norm (got {input.dim()}D input)")
    _same_device(input, weight, bias, running_mean, running_var)
    c = input.shape[1]
    _check_param("running_mean", running_mean, c)
    _check_param("running_var", running_var, c)
    _check_param("weight", weight, c)
    _check_param("bias", bias, c)
    shape = _channel_shape(input)
    if not training:
        if running_mean is None:
            raise RuntimeError("running_mean must be defined in evaluation mode")
        if running_var is None:
            raise RuntimeError("running_var must be defined in evaluation mode")
        return _affine_with_stats(input, running_mean, running_var, weight, bias, eps, shape)
    if input.numel() == 0:  # an empty batch: nothing to normalise, running statistics unchanged
        out = input.clone()  # as torch: weight[0] and bias[0] join in, so both get (zero) grads
        out = out if weight is None else out * weight[0]
        return out if bias is None else out + bias[0]
    if input.numel() // c == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         f"{input.shape!r}")
    return pieces.batch_norm_train(input, running_mean, running_var, weight, bias, momentum, eps)


# ----------------------------------------------------------------------------- instance_norm
def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its own spatial positions.

    With running statistics, they track the batch average of the per-sample statistics.
    """
    _same_device(input, weight, bias, running_mean, running_var)
    shape = _channel_shape(input)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        return _affine_with_stats(input, running_mean, running_var, weight, bias, eps, shape)
    spatial = math.prod(input.shape[2:])
    if spatial == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{input.shape!r}")
    c = input.shape[1]
    _check_param("weight", weight, c)
    _check_param("bias", bias, c)
    axes = tuple(range(2, input.dim()))
    out, mean, var = _normalize(input, axes, shape, weight, bias, eps,
                                "NativeBatchNormBackward0")
    n = input.shape[0]
    if running_mean is not None:
        _update_running(running_mean, mean.reshape(n, c).mean(axis=0), momentum)
    if running_var is not None:
        unbiased = var.reshape(n, c) * (spatial / (spatial - 1))
        _update_running(running_var, unbiased.mean(axis=0), momentum)
    return out


# ----------------------------------------------------------------------------- layer_norm
@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    """A read-only vector of ``n`` ones: row and column sums of a matrix as BLAS products."""
    v = np.ones(n, dtype)
    v.flags.writeable = False
    return v


@quietly  # huge or infinite inputs give inf/nan silently, as in torch
def _layer_norm_rows(input: Tensor, ns: tuple[int, ...], weight: Tensor | None,
                     bias: Tensor | None, eps: float) -> Tensor | None:
    """:func:`layer_norm` of host float32/float64 arrays as rows of ``d = prod(ns)`` values, or
    None for other operands (:func:`_normalize` handles every case).

    The same arithmetic as the fused kernel, written for its one layout: each row's sums are
    matrix-vector products, and the backward saves the normalised rows ``x̂`` and ``rstd``
    (torch's ``NativeLayerNormBackward0`` saves the mean and ``rstd``) for
    ``dx = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ x̂))``, ``ĝ = g · weight``.
    """
    x = input._data
    w = None if weight is None else weight._data
    b = None if bias is None else bias._data
    if (type(x) is not np.ndarray or x.dtype not in _BLAS_FLOATS or not x.size
            or w is not None and (type(w) is not np.ndarray or w.dtype != x.dtype)
            or b is not None and (type(b) is not np.ndarray or b.dtype != x.dtype)):
        return None
    d = math.prod(ns)
    ones = _ones(d, x.dtype)
    rows = x.reshape(-1, d)
    xhat = rows - (rows @ ones / d)[:, None]
    out = np.multiply(xhat, xhat)                # scratch: squares first, then the output
    rstd = out @ ones                            # d · the biased variance ...
    rstd /= d
    rstd += eps
    np.sqrt(rstd, out=rstd)
    np.reciprocal(rstd, out=rstd)                # ... then 1 / sqrt(var + eps)
    xhat *= rstd[:, None]
    if w is None:
        np.copyto(out, xhat)
    else:
        np.multiply(xhat, w.reshape(d), out=out)
    if b is not None:
        out += b.reshape(d)
    res = wrap(out.reshape(x.shape), input._device)
    if needs_grad(input, weight, bias):
        def backward(g: Tensor) -> tuple:
            if STATE.enabled or type(g._data) is not np.ndarray or g._data.dtype != x.dtype:
                axes = tuple(range(x.ndim - len(ns), x.ndim))  # create_graph, or odd gradients
                return _backward_graph(g, input, weight, bias, axes, ns, eps)
            return _layer_norm_rows_backward(g._data.reshape(-1, d), xhat, rstd, input, weight,
                                             bias)

        # backward reads the weight's values too: changing it in place before then is an error
        record("NativeLayerNormBackward0", res, (input, weight, bias), backward,
               saved=(input,) if weight is None else (input, weight))
    return res


@quietly
def _layer_norm_rows_backward(g: np.ndarray, xhat: np.ndarray, rstd: np.ndarray, input: Tensor,
                              weight: Tensor | None, bias: Tensor | None) -> tuple:
    """The gradients of :func:`_layer_norm_rows` from the rows of ``g``, ``x̂`` and ``rstd``."""
    n, d = xhat.shape
    dev = input._device
    gx = g_weight = g_bias = None
    gw = g if weight is None else g * weight._data.reshape(d)
    if input._requires_grad:
        ones = _ones(d, xhat.dtype)
        mean_g = gw @ ones / d
        gx_arr = np.multiply(gw, xhat)
        mean_gx = gx_arr @ ones / d
        np.multiply(xhat, mean_gx[:, None], out=gx_arr)
        np.subtract(gw, gx_arr, out=gx_arr)
        gx_arr -= mean_g[:, None]
        gx_arr *= rstd[:, None]
        gx = wrap(gx_arr.reshape(input._data.shape), dev)
    if weight is not None and weight._requires_grad:
        g_weight = wrap((_ones(n, g.dtype) @ (g * xhat)).reshape(weight._data.shape), dev)
    if bias is not None and bias._requires_grad:
        g_bias = wrap((_ones(n, g.dtype) @ g).reshape(bias._data.shape), dev)
    return gx, g_weight, g_bias


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dimensions of each sample."""
    if not isinstance(normalized_shape, (tuple, list)):
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {type(normalized_shape).__name__}")
    ns = tuple(normalized_shape)
    k = len(ns)
    _same_device(input, weight, bias)
    shape = input._data.shape
    if len(shape) < k or shape[len(shape) - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.shape != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = {list(ns)}")
    fast = _layer_norm_rows(input, ns, weight, bias, eps)
    if fast is not None:
        return fast
    axes = tuple(range(input.dim() - k, input.dim()))
    return _normalize(input, axes, ns, weight, bias, eps, "NativeLayerNormBackward0")[0]


_RMS_WARNED: list[bool] = []
_C10_NAMES = {D.float32: "float", D.float64: "double", D.float16: "c10::Half",
              D.bfloat16: "c10::BFloat16"}


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x²) + eps) * weight`` over the last ``len(normalized_shape)`` dimensions:
    LayerNorm without the centring (LLaMA's norm). ``eps`` defaults to the machine epsilon of the
    dtype the math runs in. Composed of tensor ops, as torch's CPU version is (so its graph nodes
    are torch's): half types are computed in float32, weight included, and cast back at the end."""
    if not isinstance(normalized_shape, (tuple, list)):
        raise TypeError("rms_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {type(normalized_shape).__name__}")
    ns = tuple(normalized_shape)
    k = len(ns)
    _same_device(input, weight)
    if k > input.dim():
        raise ValueError(f"Input tensor must have at least {k} dimensions, but got {input.dim()}")
    if tuple(input.shape[input.dim() - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight "
                           f"of shape {list(weight.shape)} and normalized_shape = {list(ns)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"rms_norm" not implemented for \'{_type_name(input)}\'')
    if weight is not None and weight.dtype is not input.dtype and not _RMS_WARNED:
        _RMS_WARNED.append(True)  # (torch warns once per process)
        warnings.warn(f"Mismatch dtype between input and weight: input dtype = "
                      f"{_C10_NAMES.get(input.dtype, input.dtype)}, weight dtype = "
                      f"{_C10_NAMES.get(weight.dtype, weight.dtype)}, Cannot dispatch to fused "
                      "implementation.", stacklevel=2)
    upcast = input.float() if input.dtype.itemsize < 4 else input  # half types: float32 math
    if eps is None:
        eps = float(np.finfo(upcast._data.dtype).eps)
    dims = tuple(range(input.dim() - k, input.dim()))
    result = upcast.mul(upcast.pow(2).mean(dims, keepdim=True).add_(eps).rsqrt())
    if weight is not None:
        result = result.mul(weight)
    return result.type_as(input)


def _type_name(t: Tensor) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(t.dtype.name, t.dtype.name)


# ----------------------------------------------------------------------------- group_norm
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Split the channels into ``num_groups`` groups; normalise each sample's group as one set."""
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    _same_device(input, weight, bias)
    if c % num_groups != 0:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(input.shape)} and num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, c // num_groups * math.prod(input.shape[2:]))
    out = _normalize(grouped, (2,), (1, 1, 1), None, None, eps, "NativeGroupNormBackward0")[0]
    out = out.reshape(input.shape)
    shape = _channel_shape(input)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


# ----------------------------------------------------------------------------- normalize
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """Scale each slice along ``dim`` to unit ``p``-norm: ``x / max(‖x‖_p, eps)``.

    ``eps`` keeps an all-zero slice at zero instead of dividing by 0. Used e.g. for cosine
    similarity (normalise, then a dot product) and for embeddings compared by angle.
    """
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return div(input, denom, out=out)
