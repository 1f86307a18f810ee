"""``LayerNorm`` (normalise each sample over its last dims), ``RMSNorm`` (the same without
centring) and ``GroupNorm`` (over channel groups). Unlike BatchNorm they use no batch
statistics, so train and eval behave the same."""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from ..._creation import empty
from ..._tensor import Tensor
from .. import init
from .._functional.normalization import group_norm, layer_norm, rms_norm
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm"]


def _affine_parameters(module: Module, shape: tuple, affine: bool, bias: bool,
                       factory_kwargs: dict[str, Any]) -> None:
    """The learnable scale ``weight`` and shift ``bias`` of that shape (registered as None when
    ``affine`` or ``bias`` is off), set to 1 and 0."""
    module.register_parameter("weight", Parameter(empty(shape, **factory_kwargs)) if affine
                              else None)
    module.register_parameter("bias", Parameter(empty(shape, **factory_kwargs))
                              if affine and bias else None)
    module.reset_parameters()


def _reset_affine(module: Module) -> None:
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims; ``weight``/``bias`` have that shape."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, factory_kwargs)

    def reset_parameters(self) -> None:
        """``weight = 1``, ``bias = 0``."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale
    by ``weight`` (no bias); ``eps=None`` uses the input dtype's machine epsilon."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", Parameter(empty(self.normalized_shape, **factory_kwargs))
                                if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight = 1``."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Split ``num_channels`` into ``num_groups`` groups and normalise each group per sample."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, bias, factory_kwargs)

    def reset_parameters(self) -> None:
        """``weight = 1``, ``bias = 0``."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
