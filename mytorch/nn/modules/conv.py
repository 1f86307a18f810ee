"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``.

A convolution layer owns a ``weight`` of shape ``(out_channels, in_channels/groups, *kernel_size)``
(transposed: ``(in_channels, out_channels/groups, *kernel_size)``) and an optional ``bias`` of
``out_channels``, both initialised like ``nn.Linear`` with ``fan_in = in_channels/groups ×
kernel elements``. ``forward`` calls the functional ``conv*d``; a ``padding_mode`` other than
``'zeros'`` pads with ``F.pad`` first and then convolves without padding.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..._creation import empty
from ..._tensor import Tensor
from .. import init
from .._functional.conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d
from .._functional.padding import pad
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module
from .utils import _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """What every convolution layer shares: argument checks, parameters, init and repr."""

    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple,
                 padding: Any, dilation: tuple, transposed: bool, output_padding: tuple,
                 groups: int, bias: bool, padding_mode: str, device: Any = None,
                 dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad wants (last dim before, last dim after, second-to-last before, ...).
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1), strict=False):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(empty(shape, **factory_kwargs))
        if bias:
            self.bias = Parameter(empty(out_channels, **factory_kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default: weight ~ kaiming_uniform_(a=√5) = U(±1/√fan_in), bias ~ U(±1/√fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _Conv(_ConvNd):
    """Conv1d/2d/3d: the same code for every number of spatial dims."""

    _ntuple: Any = staticmethod(_pair)
    _fn: Any = staticmethod(conv2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        nt = self._ntuple
        super().__init__(in_channels, out_channels, nt(kernel_size), nt(stride),
                         padding if isinstance(padding, str) else nt(padding), nt(dilation),
                         False, nt(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        if self.padding_mode != "zeros":
            padded = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return self._fn(padded, weight, bias, self.stride, self._ntuple(0), self.dilation,
                            self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)``; weight ``(C_out, C_in/groups, k)``."""

    _ntuple = staticmethod(_single)
    _fn = staticmethod(conv1d)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)``; weight ``(C_out, C_in/groups, kH, kW)``.

    Output size per dim: ``(in + 2*padding - dilation*(k-1) - 1) // stride + 1``.
    """

    _ntuple = staticmethod(_pair)
    _fn = staticmethod(conv2d)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)``; weight ``(C_out, C_in/groups, kD, kH, kW)``."""

    _ntuple = staticmethod(_triple)
    _fn = staticmethod(conv3d)


class _ConvTransposeNd(_ConvNd):
    """ConvTranspose1d/2d/3d: the gradient of a convolution used as a layer (upsampling)."""

    _ntuple: Any = staticmethod(_pair)
    _fn: Any = staticmethod(conv_transpose2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        nt = self._ntuple
        super().__init__(in_channels, out_channels, nt(kernel_size), nt(stride), nt(padding),
                         nt(dilation), True, nt(output_padding), groups, bias, padding_mode,
                         device, dtype)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple:
        """The ``output_padding`` that makes the output exactly ``output_size`` (torch's rule)."""
        if output_size is None:
            return self.output_padding
        d = len(self.kernel_size)
        lead = 2 if input.dim() == d + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + d:
            output_size = output_size[lead:]
        if len(output_size) != d:
            raise ValueError(f"ConvTranspose{d}D: for {input.dim()}D input, output_size must have "
                             f"{d} or {lead + d} elements (got {len(output_size)})")
        min_sizes = [(input.size(i + lead) - 1) * self.stride[i] - 2 * self.padding[i]
                     + self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(d)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride, strict=False)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes, strict=False):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{input.size()[lead:]})")
        return tuple(s - m for s, m in zip(output_size, min_sizes, strict=False))

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                        self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution; weight ``(C_in, C_out/groups, k)``."""

    _ntuple = staticmethod(_single)
    _fn = staticmethod(conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution; weight ``(C_in, C_out/groups, kH, kW)``.

    Output size per dim: ``(in-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    """

    _ntuple = staticmethod(_pair)
    _fn = staticmethod(conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution; weight ``(C_in, C_out/groups, kD, kH, kW)``."""

    _ntuple = staticmethod(_triple)
    _fn = staticmethod(conv_transpose3d)


class _LazyConvXdMixin(LazyModuleMixin):
    """A convolution whose ``in_channels`` is the channel dimension of its first input."""

    _spatial_dims: int

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         **factory_kwargs)
        self.weight = UninitializedParameter(**factory_kwargs)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(**factory_kwargs)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                     *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        unbatched = self._spatial_dims + 1
        if input.dim() not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == unbatched + 1 else input.shape[0]


class LazyConv1d(_LazyConvXdMixin, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv1d
    _spatial_dims = 1


class LazyConv2d(_LazyConvXdMixin, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv2d
    _spatial_dims = 2


class LazyConv3d(_LazyConvXdMixin, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv3d
    _spatial_dims = 3
