"""More activations: ``selu``, ``celu``, ``hardsigmoid``, ``hardswish``, ``mish``, ``softsign``,
``tanhshrink``, ``hardshrink``, ``softshrink``, ``threshold``, ``glu`` and ``gumbel_softmax``.

They follow ``activation.py``: the forward pass on the arrays, one autograd node named as torch
names it, and a backward written with Tensor ops (or ``mask_grad`` where the derivative is a
constant mask), so ``create_graph`` works. ``softsign`` and ``tanhshrink`` are plain compositions
of Tensor ops, exactly as torch writes them.

``selu`` and ``celu`` are ELUs with extra constants, as in torch's one ``elu`` kernel::

    elu(x; alpha, scale, input_scale) = scale * x                                  for x > 0
                                        scale * alpha * (exp(input_scale * x) - 1)  for x <= 0

In-place forms of selu, celu and threshold name their node ``...Backward1``, as torch does (there
its formula reads the result instead of the input).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._creation import empty_like, zeros_like
from ..._ops import pointwise as _pw
from ..._ops._operands import quietly, wrap_dim
from ..._ops.indexing import where
from ..._ops.shape import cat
from ..._tensor import Tensor, tensor_method, wrap
from ...autograd.grad_mode import no_grad
from ...autograd.graph import mask_grad, needs_grad, record
from .activation import _require_float, _unary

__all__ = ["selu", "selu_", "celu", "celu_", "hardsigmoid", "hardswish", "mish", "softsign",
           "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_", "glu",
           "gumbel_softmax"]

# Klambauer et al., "Self-Normalizing Neural Networks" (2017): the constants that keep the mean
# and variance of activations near 0 and 1 through many layers.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# ----------------------------------------------------------------------------- the ELU family
@quietly
def _elu_like(input: Tensor, alpha: float, scale: float, input_scale: float, node: str,
              grad_scales: tuple[float, float] | None = None) -> Tensor:
    """torch's general ELU (see the module docstring); ``x <= 0`` takes the exponential side.

    The gradient there is ``alpha * scale * c * exp(input_scale' * x)``; ``grad_scales`` gives
    ``(input_scale', c)`` where torch's backward rounds them differently (celu)."""
    es, gs = (input_scale, input_scale) if grad_scales is None else grad_scales
    x = _require_float(input, "elu_cpu")
    t = x.dtype.type
    neg = x <= 0
    y = np.where(neg, np.expm1(x * t(input_scale)) * t(alpha * scale), x * t(scale))
    negative = wrap(neg, input._device)

    def derivative(g: Tensor) -> Tensor:
        # exp of the negative side only: a large positive x would give inf, and then a nan
        # in the second derivative
        x_neg = where(negative, input, 0.0)
        return g * where(negative, (x_neg * es).exp() * (alpha * scale * gs), scale)

    return _unary(input, y.astype(x.dtype, copy=False), node, derivative)


def _selu(input: Tensor, _inplace: bool = False) -> Tensor:
    return _elu_like(input, _SELU_ALPHA, _SELU_SCALE, 1.0,
                     "EluBackward1" if _inplace else "EluBackward0")


def _celu(input: Tensor, alpha: float = 1.0, _inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    # torch's backward rounds alpha to float32 before taking 1 / alpha (its forward does not);
    # the in-place form reuses the forward's exp(x / alpha) from the result
    inv, inv32 = 1.0 / alpha, 1.0 / float(np.float32(alpha))
    return _elu_like(input, alpha, 1.0, inv, "CeluBackward1" if _inplace else "CeluBackward0",
                     (inv if _inplace else inv32, inv32))


_selu_inplace = _pw._inplace_version(_selu)
_celu_inplace = _pw._inplace_version(_celu)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU with fixed constants: ``scale * (x if x > 0 else alpha * (exp(x) - 1))``."""
    return _selu_inplace(input, _inplace=True) if inplace else _selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return _selu_inplace(input, _inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``: an ELU whose slope is 1 at 0."""
    return _celu_inplace(input, alpha, _inplace=True) if inplace else _celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return _celu_inplace(input, alpha, _inplace=True)


# ----------------------------------------------------------------------------- hard ones
def _hardsigmoid(input: Tensor) -> Tensor:
    x = _require_float(input, "hardsigmoid_cpu")
    t = x.dtype.type
    y = np.clip(x + t(3), t(0), t(6)) / t(6)
    slope = np.where((x > -3) & (x < 3), t(np.float32(1 / 6)), t(0))  # torch: 1/6 in float32
    return _unary(input, y, "HardsigmoidBackward0",
                  lambda g: mask_grad("HardsigmoidBackwardBackward0", g, slope, input,
                                      twice="derivative for aten::hardsigmoid_backward is not implemented"))


@quietly  # inf * 0 is nan, silently (as in torch)
def _hardswish(input: Tensor) -> Tensor:
    x = _require_float(input, "hardswish_cpu")
    t = x.dtype.type
    y = x * np.clip(x + t(3), t(0), t(6)) / t(6)
    low, mid = wrap(x <= -3, input._device), wrap(x < 3, input._device)
    return _unary(input, y, "HardswishBackward0",
                  lambda g: where(low, 0.0, where(mid, g * (input / 3 + 0.5), g)))


_hardsigmoid_inplace = _pw._inplace_version(_hardsigmoid)
_hardswish_inplace = _pw._inplace_version(_hardswish)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``clamp(x + 3, 0, 6) / 6``: a piecewise-linear sigmoid (MobileNetV3)."""
    return (_hardsigmoid_inplace if inplace else _hardsigmoid)(input)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * hardsigmoid(x)``: a cheap swish (MobileNetV3)."""
    return (_hardswish_inplace if inplace else _hardswish)(input)


@quietly
def _mish(input: Tensor) -> Tensor:
    x = _require_float(input, "mish_cpu")
    y = x * np.tanh(np.log1p(np.exp(x)))

    def derivative(g: Tensor) -> Tensor:
        t = input.exp().log1p().tanh()
        return g * (t + input * input.sigmoid() * (1 - t * t))

    return _unary(input, y, "MishBackward0", derivative)


_mish_inplace = _pw._inplace_version(_mish)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``, a smooth self-gated activation (YOLOv4)."""
    return (_mish_inplace if inplace else _mish)(input)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``: like tanh, but approaching ±1 only polynomially."""
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - input.tanh()


# ----------------------------------------------------------------------------- shrink, threshold
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    x = _require_float(input, "hardshrink_cpu")
    inside = (x >= -lambd) & (x <= lambd)  # nan passes through the forward pass ...
    outside = (x > lambd) | (x < -lambd)     # ... but gets no gradient (as in torch)
    return _unary(input, np.where(inside, x.dtype.type(0), x), "HardshrinkBackward0",
                  lambda g: mask_grad("HardshrinkBackwardBackward0", g, outside, input))


@quietly
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Move ``x`` toward 0 by ``lambd``, and to 0 if it is closer than that (soft thresholding)."""
    x = _require_float(input, "softshrink_check")
    if not 0 <= lambd <= np.finfo(x.dtype).max:
        raise RuntimeError(f"lambda must be in range [0, {np.finfo(x.dtype).max:g}] for input "
                           f"dtype {_pw._cap(input.dtype)}, but found {lambd:g}")
    t = x.dtype.type
    y = np.where(x > lambd, x - t(lambd), np.where(x < -lambd, x + t(lambd), x * t(0)))
    outside = (x > lambd) | (x < -lambd)
    return _unary(input, y, "SoftshrinkBackward0",
                  lambda g: mask_grad("SoftshrinkBackwardBackward0", g, outside, input))


def _threshold(input: Tensor, threshold: float, value: float, _inplace: bool = False) -> Tensor:
    x = input._data
    if x.dtype.kind not in "fiu":
        raise NotImplementedError(f"\"threshold_cpu\" not implemented for '{_pw._cap(input.dtype)}'")
    t = x.dtype.type  # an integer tensor compares with, and fills in, the truncated numbers
    y = np.where(x <= t(threshold), t(value), x)
    keep = ~(x <= t(threshold))  # nan gets the gradient
    return _unary(input, y, "ThresholdBackward1" if _inplace else "ThresholdBackward0",
                  lambda g: mask_grad("ThresholdBackwardBackward0", g, keep, input))


_threshold_inplace = _pw._inplace_version(_threshold)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    if inplace:
        return _threshold_inplace(input, threshold, value, _inplace=True)
    return _threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _threshold_inplace(input, threshold, value, _inplace=True)


@tensor_method("hardshrink")
def _hardshrink_method(self: Tensor, lambd: float = 0.5) -> Tensor:
    """``x.hardshrink(lambd)``, as ``nn.functional.hardshrink``."""
    return hardshrink(self, lambd)


# ----------------------------------------------------------------------------- gated and Gumbel
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``input`` along ``dim`` times the sigmoid of the
    second half. One ``GluBackward0`` node, its backward written with Tensor ops."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.dim())
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    with no_grad():
        a, b = input.chunk(2, d)
        res = a * b.sigmoid()
    if needs_grad(input):
        def backward(g: Tensor) -> tuple:
            a, b = input.chunk(2, d)
            sb = b.sigmoid()
            return (cat([g * sb, g * a * sb * (1 - sb)], d),)

        record("GluBackward0", res, (input,), backward, saved=(input,))
    return res


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A differentiable sample of a categorical distribution: ``softmax((logits + g) / tau)``
    with Gumbel noise ``g = -log(E)``, ``E ~ Exp(1)``; ``hard=True`` returns the one-hot argmax
    whose gradient is the soft sample's (straight-through), as torch writes it."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()
    gumbels = (logits + gumbels) / tau
    y_soft = gumbels.softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
