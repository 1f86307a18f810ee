"""Activation modules: each stores its settings and calls the matching function in ``forward``.

``PReLU`` is the one with a learnable parameter, its negative slope.
"""
from __future__ import annotations

import warnings
from typing import Any

from ..._creation import empty
from ..._ops import pointwise as _pw
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from .._functional import activation as _F
from .._functional import activation_more as _Fm
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "Sigmoid", "Tanh", "LeakyReLU", "RReLU", "PReLU", "ELU", "GELU", "SiLU", "Softplus",
           "LogSigmoid", "Hardtanh", "ReLU6", "Softmax", "LogSoftmax", "Softmin", "SELU", "CELU",
           "Hardsigmoid", "Hardswish", "Mish", "Softsign", "Tanhshrink", "Hardshrink",
           "Softshrink", "Threshold", "GLU"]



class ReLU(Module):
    """``max(x, 0)``; ``inplace=True`` overwrites the input to save memory."""

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input: Tensor) -> Tensor:
        return _pw.sigmoid(input)


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        return _pw.tanh(input)



def _inplace_suffix(inplace: bool, lead: str = ", ") -> str:
    return f"{lead}inplace=True" if inplace else ""


class LeakyReLU(Module):
    """``x`` if ``x > 0`` else ``negative_slope * x``."""

    __constants__ = ["inplace", "negative_slope"]

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return _F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: in training a random slope in ``[lower, upper]`` for each negative
    element, in evaluation their mean ``(lower + upper) / 2``."""

    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return _F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}"


class PReLU(Module):
    """Leaky ReLU with a learnable slope per channel (``num_parameters = C``) or a shared one."""

    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope starts at ``init`` (0.25)."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return _F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class ELU(Module):
    """``x`` if ``x > 0`` else ``alpha * (exp(x) - 1)``."""

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return _F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class GELU(Module):
    """``x * Φ(x)``; ``approximate='tanh'`` uses the tanh formula."""

    __constants__ = ["approximate"]

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return _F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)``."""

    __constants__ = ["inplace"]

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return _F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, "")


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    __constants__ = ["beta", "threshold"]

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input: Tensor) -> Tensor:
        return _F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class LogSigmoid(Module):
    """``log(sigmoid(x))``, computed stably (see :func:`nn.functional.logsigmoid`)."""

    def forward(self, input: Tensor) -> Tensor:
        return _F.logsigmoid(input)


class Hardtanh(Module):
    """Clamp to ``[min_val, max_val]``."""

    __constants__ = ["min_val", "max_val", "inplace"]

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None) -> None:
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return _F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, "")


class _SoftmaxBase(Module):
    __constants__ = ["dim"]
    _fn = staticmethod(_F.softmax)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """``exp(x) / sum(exp(x))`` along ``dim``."""


class LogSoftmax(_SoftmaxBase):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    _fn = staticmethod(_F.log_softmax)


class Softmin(_SoftmaxBase):
    """``softmax(-x)`` along ``dim``."""

    _fn = staticmethod(_F.softmin)


# ----------------------------------------------------------------------------- more activations
class _InplaceActivation(Module):
    """An activation whose only setting is ``inplace`` (``fn`` is its function)."""

    __constants__ = ["inplace"]
    fn: Any = None
    show_inplace = True  # torch's Hardswish and Hardsigmoid do not show it in their repr

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self).fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_suffix(self.inplace, "") if self.show_inplace else ""


class SELU(_InplaceActivation):
    """Scaled ELU with the self-normalizing constants."""

    fn = staticmethod(_Fm.selu)


class Hardsigmoid(_InplaceActivation):
    """``clamp(x + 3, 0, 6) / 6``."""

    fn = staticmethod(_Fm.hardsigmoid)
    show_inplace = False


class Hardswish(_InplaceActivation):
    """``x * clamp(x + 3, 0, 6) / 6``."""

    fn = staticmethod(_Fm.hardswish)
    show_inplace = False


class Mish(_InplaceActivation):
    """``x * tanh(softplus(x))``."""

    fn = staticmethod(_Fm.mish)


class CELU(Module):
    """``x`` if ``x > 0`` else ``alpha * (exp(x / alpha) - 1)``."""

    __constants__ = ["alpha", "inplace"]

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.tanhshrink(input)


class _Shrink(Module):
    __constants__ = ["lambd"]

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """``x`` where ``|x| > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """``x`` moved toward 0 by ``lambd`` (0 within ``lambd`` of it)."""

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.softshrink(input, self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    __constants__ = ["threshold", "value", "inplace"]

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class GLU(Module):
    """Gated linear unit: one half of the input along ``dim`` times the sigmoid of the other."""

    __constants__ = ["dim"]
    dim: int

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return _Fm.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
