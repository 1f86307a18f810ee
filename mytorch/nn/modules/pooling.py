"""Pooling layers: thin modules that store their arguments and call ``F.*pool*``.

Pooling has no parameters: a ``MaxPool2d(2)`` halves height and width by keeping the largest
value of every 2×2 window; ``AvgPool2d`` keeps the mean; the ``Adaptive`` variants take the
output size instead of a kernel and work out the windows themselves.
"""
from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from .._functional import pooling as P
from .module import Module
from .utils import _pair, _single

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "MaxUnpool1d", "MaxUnpool2d"]


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices", "ceil_mode"]

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, "
                "dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__))

    def _pool(self, fn: Any, input: Tensor) -> Any:
        return fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """Max over windows of ``(N, C, L)``; ``stride`` defaults to ``kernel_size``."""

    def forward(self, input: Tensor) -> Any:
        return self._pool(P.max_pool1d, input)


class MaxPool2d(_MaxPoolNd):
    """Max over windows of ``(N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Output size per dim: ``(in + 2*padding - dilation*(k-1) - 1) / stride + 1``, rounded down
    (up with ``ceil_mode``). ``return_indices=True`` also returns where each max came from.
    """

    def forward(self, input: Tensor) -> Any:
        return self._pool(P.max_pool2d, input)


class MaxPool3d(_MaxPoolNd):
    """Max over windows of ``(N, C, D, H, W)``."""

    def forward(self, input: Tensor) -> Any:
        return self._pool(P.max_pool3d, input)


class _AvgPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over windows of ``(N, C, L)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return P.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPool(_AvgPoolNd):
    """AvgPool2d/3d: same arguments, plus ``divisor_override``."""

    __constants__ = [*_AvgPoolNd.__constants__, "divisor_override"]
    _fn: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPool):
    """Mean over windows of ``(N, C, H, W)``; ``count_include_pad`` counts zero padding in the
    window size, ``divisor_override`` replaces the window size."""

    _fn = P.avg_pool2d


class AvgPool3d(_AvgPool):
    """Mean over windows of ``(N, C, D, H, W)``."""

    _fn = P.avg_pool3d


class _AdaptivePool(Module):
    __constants__ = ["output_size"]

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average-pool ``(N, C, L)`` to exactly ``output_size`` positions."""

    def forward(self, input: Tensor) -> Tensor:
        return P.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average-pool ``(N, C, H, W)`` to exactly ``output_size`` (``None`` keeps a dim)."""

    def forward(self, input: Tensor) -> Tensor:
        return P.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average-pool ``(N, C, D, H, W)`` to exactly ``output_size``."""

    def forward(self, input: Tensor) -> Tensor:
        return P.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Max-pool ``(N, C, L)`` to exactly ``output_size`` positions."""

    def forward(self, input: Tensor) -> Any:
        return P.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Max-pool ``(N, C, H, W)`` to exactly ``output_size``."""

    def forward(self, input: Tensor) -> Any:
        return P.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of ``MaxPool1d``: values back at their recorded indices, zeros elsewhere."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if (stride is not None) else kernel_size)
        self.padding = _single(padding)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return P.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of ``MaxPool2d``: values back at their recorded indices, zeros elsewhere."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride if (stride is not None) else kernel_size)
        self.padding = _pair(padding)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return P.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)
