"""Activation functions: ``leaky_relu``, ``rrelu``, ``prelu``, ``elu``, ``gelu``, ``silu``, ``softplus``,
``hardtanh``, ``relu6`` and the normalising ``softmax`` / ``log_softmax`` / ``softmin``.

Each element-wise activation computes its forward pass with one or two array calls and records a
single autograd node whose backward is written with Tensor ops (so ``create_graph`` works).
``inplace=True`` variants reuse the out-of-place function through ``pointwise._inplace_version``:
the op runs on a snapshot of the old value, which keeps the gradient correct.

``softmax`` subtracts the row maximum before ``exp`` (``softmax(x) == softmax(x - c)``) so that
large logits do not overflow; ``log_softmax`` is ``x - max - log(sum(exp(x - max)))``, which stays
finite where ``log(softmax(x))`` would give ``-inf``.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import _dtype as D
from ..._ops import pointwise as _pw
from ..._device import xp_for
from ..._ops._operands import check_same_device, quietly, wrap_dim
from ..._ops.random_ops import _on, _rng
from ..._ops.indexing import where
from ..._tensor import Tensor, wrap
from ..._pieces import piece, pieces
from ...autograd.grad_mode import STATE
from ...autograd.graph import SavedOutput, mask_grad, needs_grad, record, record_outputs, sum_to

__all__ = ["leaky_relu", "leaky_relu_", "rrelu", "rrelu_", "prelu", "elu", "elu_", "gelu", "silu", "softplus",
           "logsigmoid", "hardtanh", "hardtanh_", "relu6", "softmax", "log_softmax", "softmin",
           "sigmoid", "tanh"]

sigmoid = _pw.sigmoid
tanh = _pw.tanh

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


def _require_float(input: Tensor, kernel: str) -> Any:
    """The input's array; torch has no integer kernels for these activations."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_pw._cap(input.dtype)}\'')
    return x


def _unary(input: Tensor, y: Any, node: str, derivative: Callable[[Tensor], Tensor]) -> Tensor:
    """Wrap the result array ``y``; record ``grad = derivative(g)`` when autograd needs it."""
    res = wrap(y, input._device)
    if needs_grad(input):
        record(node, res, (input,), lambda g: (derivative(g),), saved=(input,))
    return res


# ----------------------------------------------------------------------------- ReLU family
@quietly
def _leaky_relu(input: Tensor, negative_slope: float = 0.01, node: str = "LeakyReluBackward0",
                twice: str = "LeakyReluBackwardBackward0") -> Tensor:
    x = _require_float(input, "leaky_relu_cpu")
    pos = x > 0
    slope = np.where(pos, 1, negative_slope).astype(x.dtype)
    return _unary(input, x * slope, node, lambda g: mask_grad(twice, g, slope, input))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0``, else ``negative_slope * x``: a ReLU whose negative side still learns."""
    return leaky_relu_(input, negative_slope) if inplace else _leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu` (torch's in-place kernel is node ``LeakyReluBackward1``)."""
    return _leaky_inplace(input, negative_slope, node="LeakyReluBackward1")


_leaky_inplace = _pw._inplace_version(_leaky_relu)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU (Xu et al., 2015): in training each element ``x <= 0`` gets its own
    slope, drawn uniformly from ``[lower, upper]``; in evaluation every negative element gets
    their mean ``(lower + upper) / 2``, a plain leaky ReLU."""
    if inplace:
        return rrelu_(input, lower, upper, training)
    return _rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place :func:`rrelu` (torch's node ``RreluWithNoiseBackward1``)."""
    return _rrelu_inplace(input, lower, upper, training, node="RreluWithNoiseBackward1")


@quietly
def _rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Any = None, node: str = "RreluWithNoiseBackward0") -> Tensor:
    """rrelu, and ``torch.rrelu``'s ``generator=``. The gradient is the slope each element got
    (torch saves it as the "noise": 1 where ``x > 0``)."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return _leaky_relu(input, (lower + upper) / 2, node, "RreluWithNoiseBackwardBackward0")
    x = _require_float(input, "rrelu_with_noise_out_cpu")
    # one draw per element (torch draws for the negative ones only: its stream differs anyway)
    draws = np.asarray(_rng(generator, input._device).uniform(lower, upper, x.shape))
    noise = xp_for(input._device).where(x <= 0, _on(draws.astype(x.dtype), input._device),
                                        x.dtype.type(1))
    return _unary(input, x * noise, node,
                  lambda g: mask_grad("RreluWithNoiseBackwardBackward0", g, noise, input))


_rrelu_inplace = _pw._inplace_version(_rrelu)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Leaky ReLU with a *learned* slope: one per channel (dim 1), or one shared slope."""
    check_same_device(input, weight)  # the kernel below mixes the two raw arrays
    x = _require_float(input, "prelu_cpu")
    n = weight.numel()
    channels = input.shape[1] if input.dim() >= 2 else 1
    if n != 1 and n != channels:
        raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter "
                           f"numbers = {n} and channel size = {channels}.")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.dim()}")
    if n == 1 or input.dim() < 2:
        w = weight.reshape(())
    else:
        w = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    wa = w._data
    res = wrap(np.where(x > 0, x, wa * x).astype(x.dtype, copy=False), input._device)
    if needs_grad(input, w):
        record("PreluKernelBackward0", res, (input, w), lambda g: _prelu_backward(g, input, w),
               saved=(input, w))
    return res


def _prelu_backward(g: Tensor, x: Tensor, w: Tensor) -> tuple:
    """``(d/dx, d/dw)`` of prelu: ``g`` or ``w·g`` for x, ``0`` or ``x·g`` for the slope.

    Recorded as one node, because torch's second derivatives count ``x = 0`` as positive while
    the first derivative there uses the slope: no composition of ordinary ops does both.
    """
    pos = x._data > 0
    ga, wa = g._data, w._data
    gx = wrap(np.where(pos, ga, wa * ga).astype(ga.dtype, copy=False), g._device)
    gw = wrap(np.where(pos, 0, x._data * ga).astype(ga.dtype, copy=False), g._device)
    if needs_grad(g, x, w):
        record_outputs("PreluKernelBackwardBackward0", (gx, gw), (g, x, w),
                       lambda grads: _prelu_double_backward(grads, g, x, w), (g, x, w))
    return (gx if x._requires_grad else None,
            sum_to(gw, tuple(w.shape)) if w._requires_grad else None)


def _prelu_double_backward(grads: list, g: Tensor, x: Tensor, w: Tensor) -> tuple:
    """torch's formulas for the backward of :func:`_prelu_backward` (x >= 0 counts as positive)."""
    ggx, ggw = grads
    keep = wrap(x._data >= 0, x._device)
    d_g = d_x = d_w = None
    if g._requires_grad:
        neg = None if ggx is None else ggx * w
        if ggw is not None:
            neg = ggw * x if neg is None else neg + ggw * x
        d_g = where(keep, 0.0 if ggx is None else ggx, neg)
    if x._requires_grad:
        d_x = x.new_zeros(tuple(x.shape)) if ggw is None else where(keep, 0.0, g * ggw)
    if w._requires_grad:
        d_w = w.new_zeros(tuple(w.shape)) if ggx is None else \
            sum_to(where(keep, 0.0, g * ggx), tuple(w.shape))
    return d_g, d_x, d_w


def _hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    x = _require_float(input, "hardtanh_cpu")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    inside = (x > min_val) & (x < max_val)
    y = np.clip(x, x.dtype.type(min_val), x.dtype.type(max_val))
    return _unary(input, y, "HardtanhBackward0",
                  lambda g: mask_grad("HardtanhBackwardBackward0", g, inside, input))


_hardtanh_inplace = _pw._inplace_version(_hardtanh)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """Clamp to ``[min_val, max_val]``; gradient 1 strictly inside, 0 outside and on the edges."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return (_hardtanh_inplace if inplace else _hardtanh)(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``: a ReLU capped at 6 (``hardtanh(x, 0, 6)``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


# ----------------------------------------------------------------------------- smooth ones
def _elu(input: Tensor, alpha: float = 1.0, node: str = "EluBackward0") -> Tensor:
    x = _require_float(input, "elu_cpu")
    pos = x > 0
    with _pw._quiet():
        y = np.where(pos, x, alpha * np.expm1(x)).astype(x.dtype)
    res = wrap(y, input._device)
    if needs_grad(input):
        # d/dx alpha * (e^x - 1) = alpha * e^x. Written as g * (c + alpha * (e^x - 1) where x < 0)
        # with the constant c = 1 or alpha: the same first derivative, and a second derivative
        # that is 0 at x = 0 exactly, as torch's.
        c = wrap(np.where(pos, 1, alpha).astype(x.dtype), input._device)
        neg = wrap(x < 0, input._device)
        record(node, res, (input,),
               lambda g: (g * (c + where(neg, input.expm1(), 0.0) * alpha),), saved=(input,))
    return res


_elu_inplace = _pw._inplace_version(_elu)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``: smooth, saturating at ``-alpha``."""
    return elu_(input, alpha) if inplace else _elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu` (torch's in-place kernel is node ``EluBackward1``)."""
    return _elu_inplace(input, alpha, node="EluBackward1")


# GELU on float32 arrays in a few passes over memory. With a = |x| and the Gaussian
# e = exp(-x²/2), the tail Φ(-a) is e·s·P(s) for s = 1/(3.6 + a) and P of degree 5: a minimax
# fit (Lawson's iteration, in float64) of the absolute error, 6e-9 for every a; evaluated in
# float32, Φ is within 2.5e-7 of the exact value and GELU within a few ulps, as torch's own
# ``x/2 · (1 + erf(x/√2))``, which rounds 1 + erf for negative x. Φ(x) is then Φ(-a) for
# x < 0 and 1 - Φ(-a) otherwise; GELU's backward, Φ(x) + x·e/√(2π), reuses Φ and e.
# Coefficients of P, highest power first.
_GELU_P = tuple(np.float32(c) for c in (
    -239.61879, 252.66496, -46.831932, 13.886923, 0.7299914, 0.42145726))
_GELU_S = np.float32(3.6)
_SIGN_BIT = np.uint32(0x80000000)


def _gelu_float32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x·Φ(x), Φ(x), exp(-x²/2))`` for a float32 NumPy array ``x``."""
    f = np.float32
    s = np.abs(x)
    s += _GELU_S
    np.reciprocal(s, out=s)
    tail = s * _GELU_P[0]
    for c in _GELU_P[1:]:
        tail += c
        tail *= s
    gauss = np.multiply(x, x)
    gauss *= f(-0.5)
    np.exp(gauss, out=gauss)
    tail *= gauss                                # Φ(-|x|)
    cdf = np.subtract(f(0.5), tail, out=tail)    # 1/2 - Φ(-|x|) >= 0 ...
    cdf.view(np.uint32)[...] |= x.view(np.uint32) & _SIGN_BIT  # ... with the sign of x
    cdf += f(0.5)
    return x * cdf, cdf, gauss


@quietly  # huge inputs overflow to inf and nan silently, as in torch
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Φ(x)`` (Φ = the standard normal CDF); ``approximate='tanh'`` is GPT-2's formula."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    x = _require_float(input, "GeluKernelImpl")
    if approximate == "none":
        if type(x) is np.ndarray and x.dtype == np.float32 and x.ndim:
            y, cdf, gauss = _gelu_float32(x)
        else:
            cdf = 0.5 * (1.0 + _pw._erf_array(x * x.dtype.type(_SQRT_HALF)))
            y, gauss = x * cdf, None

        def derivative(g: Tensor) -> Tensor:
            if not STATE.enabled and g._data.dtype == x.dtype:  # a plain pass: the same formula
                a = input._data                                # on the arrays, reusing Φ(x)
                with _pw._quiet():
                    if gauss is None:
                        d = np.exp(a * a * -0.5) * _INV_SQRT_2PI
                        d *= a
                    else:
                        d = a * gauss
                        d *= d.dtype.type(_INV_SQRT_2PI)
                    d += cdf
                    d *= g._data
                    return wrap(d, g._device)
            pdf = (input * input * -0.5).exp() * _INV_SQRT_2PI
            return g * (0.5 * (1 + (input * _SQRT_HALF).erf()) + input * pdf)
    else:
        t = np.tanh(_SQRT_2_OVER_PI * (x + _GELU_C * x * x * x))
        y = (0.5 * x * (1.0 + t)).astype(x.dtype)

        def derivative(g: Tensor) -> Tensor:
            th = ((input + input.pow(3) * _GELU_C) * _SQRT_2_OVER_PI).tanh()
            inner = (1 + input * input * (3 * _GELU_C)) * _SQRT_2_OVER_PI
            return g * (0.5 * (1 + th) + 0.5 * input * (1 - th * th) * inner)
    if approximate == "none" and x.dtype == np.float32 and x.size > 1:
        y = _gelu_vectorised_edges(x, y)
    return _unary(input, y.astype(x.dtype, copy=False), "GeluBackward0", derivative)


_TWO_TO_127 = np.float32(2.0 ** 127)


def _gelu_vectorised_edges(x: Any, y: Any) -> Any:
    """torch's values at the top of the float32 range. Its vectorised kernel (every float32 tensor
    of more than one element) computes ``x * (1 + erf(x/√2)) / 2``, so ``2x`` overflows to inf
    from 2**127 on, and its erf makes +inf nan; a one-element tensor takes the scalar loop."""
    big = x >= _TWO_TO_127
    if not big.any():
        return y
    return np.where(big, np.where(x == np.inf, np.float32(np.nan), np.float32(np.inf)), y)


@quietly
def _silu(input: Tensor) -> Tensor:
    x = _require_float(input, "silu_cpu")
    y = x * _pw._sigmoid_array(x)

    def derivative(g: Tensor) -> Tensor:
        s = input.sigmoid()
        return g * s * (1 + input * (1 - s))

    return _unary(input, y, "SiluBackward0", derivative)


_silu_inplace = _pw._inplace_version(_silu)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (a.k.a. swish)."""
    return (_silu_inplace if inplace else _silu)(input)


@quietly
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, a smooth ReLU; linear where ``beta * x > threshold``."""
    x = _require_float(input, "softplus_cpu")
    bx = x * x.dtype.type(beta)
    linear = bx > threshold
    with _pw._quiet():
        y = np.where(linear, x, np.log1p(np.exp(bx)) / x.dtype.type(beta)).astype(x.dtype)
    keep = wrap(linear, input._device)
    return _unary(input, y, "SoftplusBackward0",
                  lambda g: where(keep, g, g * (input * beta).sigmoid()))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, finite for any ``x``: ``min(x, 0) - log(1 + exp(-|x|))``.

    ``log(x.sigmoid())`` gives ``-inf`` once ``sigmoid`` rounds to 0 (x < -104 in float32); this
    form never exponentiates a large positive number. Its derivative is ``sigmoid(-x)``.
    """
    x = _require_float(input, "log_sigmoid_forward")
    with _pw._quiet():
        y = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))
    return _unary(input, y.astype(x.dtype, copy=False), "LogSigmoidBackward0",
                  lambda g: g * (-input).sigmoid())


# ----------------------------------------------------------------------------- softmax family
def _softmax_dim(name: str, ndim: int) -> int:
    """torch's legacy guess when ``dim`` is not given (with its deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  "include dim=X as an argument.", UserWarning, stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(name: str, input: Tensor, dim: int | None, dtype: Any) -> tuple[Tensor, int]:
    if dim is None:
        dim = _softmax_dim(name, input.dim())
    d = wrap_dim(dim, input.dim())
    if dtype is not None:
        input = input.to(D.to_dtype(dtype))
    if input._data.dtype.kind != "f":
        last = "lastdim_" if d == input.dim() - 1 or input.dim() == 0 else ""
        raise NotImplementedError(f'"{name}_{last}kernel_impl" not implemented for '
                                  f"'{_pw._cap(input.dtype)}'")
    return input, d


# Reductions along the last axis of short rows (attention scores, a vocabulary's logits):
# NumPy's max and sum reduce each row of a few dozen values slowly (a few µs per thousand rows);
# ``argmax`` and a product with a column of ones do the same rows several times faster. Both
# give the max exactly (nan and ±inf too: argmax finds the first nan) and the sum to rounding.
_SHORT_ROW = 1024


def _short_rows(x: Any, axis: int) -> bool:
    """Whether ``x`` (an array) reduces along its last axis, in short rows, in host memory."""
    return (type(x) is np.ndarray and x.ndim > 0 and axis in (-1, x.ndim - 1) and x.size > 0
            and 1 < x.shape[-1] <= _SHORT_ROW and x.dtype.kind == "f")


def _row_max(x: Any, axis: int) -> Any:
    """``x.max(axis, keepdims=True)``."""
    if not _short_rows(x, axis):
        return x.max(axis=axis, keepdims=True)
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    at = rows.argmax(axis=1)
    at += np.arange(0, rows.size, n)  # the maxima's flat positions: cheaper than take_along_axis
    return rows.ravel()[at].reshape(x.shape[:-1] + (1,))


def _row_sum(x: Any, axis: int) -> Any:
    """``x.sum(axis, keepdims=True)`` (to rounding), by a matrix-vector product."""
    if not _short_rows(x, axis) or x.dtype not in (np.float32, np.float64):
        return x.sum(axis=axis, keepdims=True)
    n = x.shape[-1]
    flat = np.ascontiguousarray(x).reshape(-1, n) @ np.ones(n, x.dtype)
    return flat.reshape(x.shape[:-1] + (1,))


def _softmax_backward_arrays(y: Tensor, grad: Tensor, dim: int) -> Tensor:
    """:func:`softmax_backward` on arrays in a plain backward (grad mode off, host memory)."""
    ya, ga = y._data, grad._data
    if STATE.enabled or type(ya) is not np.ndarray or type(ga) is not np.ndarray or ya.ndim == 0 \
            or ya.dtype != ga.dtype or ya.shape != ga.shape:
        return softmax_backward(y, grad, dim)
    with _pw._quiet():
        out = ga * ya
        s = _row_sum(out, wrap_dim(dim, ya.ndim))
        out -= ya * s
    return wrap(out, grad._device)


@piece("02.3", fast=_softmax_backward_arrays)
def softmax_backward(y: "Tensor", grad: "Tensor", dim: int) -> "Tensor":
    """The gradient of softmax's input, from its output ``y`` (a softmax along ``dim``) and
    ``grad``, the gradient of ``y``."""
    return y * (grad - (grad * y).sum(dim, keepdim=True))


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``: each slice becomes a probability distribution."""
    input, d = _softmax_input("softmax", input, dim, dtype)
    x = input._data
    with _pw._quiet():
        if x.ndim:
            y = x - _row_max(x, d)
            np.exp(y, out=y)
            y /= _row_sum(y, d)
        else:
            y = np.exp(x - x)
    res = wrap(y, input._device)
    if needs_grad(input):
        out = SavedOutput(res)

        record("SoftmaxBackward0", res, (input,),
               lambda g: (pieces.softmax_backward(out(), g, d),), saved=(out,))
    return res


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """``log(softmax(x))`` computed stably as ``x - logsumexp(x)``."""
    input, d = _softmax_input("log_softmax", input, dim, dtype)
    x = input._data
    with _pw._quiet():
        if x.ndim:
            shifted = x - _row_max(x, d)
            y = shifted - np.log(_row_sum(np.exp(shifted), d))
        else:
            y = x - x
    res = wrap(y, input._device)
    if needs_grad(input):
        out = SavedOutput(res)
        record("LogSoftmaxBackward0", res, (input,),
               lambda g: (g - out().exp() * g.sum(d, keepdim=True),), saved=(out,))
    return res


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """``softmax(-x)``: small values get the large probabilities."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    if dtype is not None:
        input = input.to(D.to_dtype(dtype))
    return softmax(-input, dim)



# torch also offers the two as ``torch.softmax(x, dim)`` and as tensor methods ``x.softmax(dim)``.
def _top_level(fn: Callable) -> Callable:
    def op(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
        return fn(input, dim, dtype=dtype)

    op.__name__ = op.__qualname__ = fn.__name__
    op.__doc__ = f"``{fn.__name__}`` along ``dim`` (the same as ``nn.functional.{fn.__name__}``)."
    return op


softmax_ = _top_level(softmax)  # exported as mytorch.softmax
log_softmax_ = _top_level(log_softmax)  # exported as mytorch.log_softmax
Tensor.softmax = softmax_
Tensor.log_softmax = log_softmax_
