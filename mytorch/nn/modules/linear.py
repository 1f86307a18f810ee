"""``nn.Linear`` (``y = x Wᵀ + b``) and ``nn.Identity``."""
from __future__ import annotations

import math
from typing import Any

from ..._creation import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Bilinear", "Identity", "LazyLinear", "Linear"]


class Identity(Module):
    """Returns its input unchanged; accepts (and ignores) any constructor arguments.

    Handy as a placeholder, e.g. to cut the classifier off a pretrained network.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """Fully connected layer: ``weight`` is ``(out_features, in_features)``, ``bias`` is
    ``(out_features,)``, both drawn from U(-1/√in_features, 1/√in_features) by default."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(empty(out_features, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default: kaiming_uniform_ with a=√5, i.e. U(-1/√fan_in, 1/√fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1ᵀ A x2 + b``: ``weight`` is ``(out_features, in1_features, in2_features)``, ``bias``
    is ``(out_features,)``, both drawn from U(-1/√in1_features, 1/√in1_features)."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), **factory_kwargs))
        if bias:
            self.bias = Parameter(empty(out_features, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last dimension of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(**factory_kwargs)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(**factory_kwargs)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
