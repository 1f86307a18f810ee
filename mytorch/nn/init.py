"""``nn.init``: fill weights in place with the distributions deep-learning papers prescribe.

The scale of a good initialisation depends on how many numbers feed into each output
(``fan_in``) or receive each input's gradient (``fan_out``), and on the nonlinearity that follows
(its ``gain``). Every function here runs under ``no_grad`` and returns the tensor it filled.
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from .._creation import empty_like, eye
from .._device import xp_for
from .._ops.indexing import where
from .._pieces import piece, pieces
from .._tensor import Tensor, wrap
from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor by which ``nonlinearity`` shrinks the spread of its inputs, undone by init."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


@piece("04.3")
def fan_in_and_fan_out(shape: tuple) -> tuple:
    """``(fan_in, fan_out)`` of a weight of ``shape``, laid out ``(out, in, *kernel)`` as every
    layer of torch lays it out: how many inputs each output sums over, and how many outputs
    each input feeds."""
    receptive_field = 1                   # the kernel's positions (1 for a Linear weight)
    for k in shape[2:]:
        receptive_field *= k
    return shape[1] * receptive_field, shape[0] * receptive_field


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight laid out as ``(out, in, *kernel)`` (the piece
    :func:`fan_in_and_fan_out`); what every ``xavier_*``/``kaiming_*`` init and the layers'
    ``reset_parameters`` scale by."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    return pieces.fan_in_and_fan_out(tuple(tensor.shape))


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fill with samples from N(mean, std²)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Any = None) -> Tensor:
    """Fill with N(mean, std²) samples, redrawing those outside [a, b] until all are inside."""
    with no_grad():
        result = tensor.normal_(mean, std, generator=generator)
        while True:
            outside = (result < a) | (result > b)
            if not bool(outside.any()):
                return tensor
            redraw = empty_like(result).normal_(mean, std, generator=generator)
            tensor.copy_(where(outside, redraw, result))


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix (1 on the diagonal, 0 elsewhere; a non-square ``(out, in)`` keeps
    as many inputs as it can): a Linear layer that starts by passing its input through."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """A conv weight ``(out, in, *kernel)`` that copies input channel ``i`` to output channel
    ``i`` (a 1 at the kernel's centre), per group: the convolution starts as the identity."""
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_channels, in_channels = tensor.shape[:2]
    if out_channels % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = out_channels // groups
    centre = tuple(k // 2 for k in tensor.shape[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for c in range(min(per_group, in_channels)):
                tensor[(g * per_group + c, c, *centre)] = 1
    return tensor


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """A random (semi-)orthogonal matrix times ``gain``; trailing dims are flattened.

    The Q of a QR decomposition of a standard normal matrix, each column's sign fixed by the sign
    of R's diagonal: that makes Q uniformly distributed over the orthogonal matrices (without the
    fix, QR's sign convention would bias it). Rows stay orthonormal when there are fewer rows than
    columns, columns otherwise. Orthogonal weights keep every singular value at ``gain``: signals
    neither grow nor shrink through a deep (or recurrent) stack of such layers.
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        a = flat._data.T if rows < cols else flat._data  # QR of the tall orientation
        xp = xp_for(tensor._device)
        q, r = xp.linalg.qr(a)
        q = q * xp.sign(xp.diagonal(r))  # column j times sign(R[j, j])
        if rows < cols:
            q = q.T
        tensor.copy_(wrap(xp.ascontiguousarray(q), tensor._device).reshape(tensor.shape))
        return tensor.mul_(gain)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot: U(-a, a) with a = gain·√(6 / (fan_in + fan_out)), keeping the variance of
    activations and of gradients balanced."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std  # a uniform on [-a, a] has standard deviation a / √3
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot: N(0, std²) with std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """He: U(-bound, bound) with bound = gain·√(3 / fan); ``a`` is the leaky ReLU slope."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator: Any = None) -> Tensor:
    """He: N(0, std²) with std = gain / √fan."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
