"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad``,
``CircularPad`` (1d/2d/3d), each a stored ``padding`` tuple plus one ``F.pad`` call.

``padding`` is an int (same on every side) or a tuple ``(left, right[, top, bottom[, front,
back]])`` — the last dimension first, as ``F.pad`` expects.
"""
from __future__ import annotations

from typing import Any

from ..._tensor import Tensor
from .._functional.padding import pad
from .module import Module
from .utils import _ntuple, _pair, _quadruple

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]

_sextuple = _ntuple(6, "_sextuple")


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    padding: tuple

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(value)
        self.padding = _pair(padding)


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(value)
        self.padding = _quadruple(padding)


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(value)
        self.padding = _sextuple(padding)


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _IndexPadNd(Module):
    """Reflection/replication/circular padding: ``F.pad`` with ``mode``."""

    __constants__ = ["padding"]
    mode = ""
    _ntuple: Any = staticmethod(_pair)

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = type(self)._ntuple(padding)

    def forward(self, input: Tensor) -> Tensor:
        return pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_IndexPadNd):
    """Mirror the last dim at its edges (edge not repeated): ``[a b c]`` → ``[c b a b c b a]``."""

    mode, _ntuple = "reflect", staticmethod(_pair)


class ReflectionPad2d(_IndexPadNd):
    """Mirror the last two dims at their edges."""

    mode, _ntuple = "reflect", staticmethod(_quadruple)


class ReflectionPad3d(_IndexPadNd):
    """Mirror the last three dims at their edges."""

    mode, _ntuple = "reflect", staticmethod(_sextuple)


class ReplicationPad1d(_IndexPadNd):
    """Repeat the edge values of the last dim: ``[a b c]`` → ``[a a a b c c c]``."""

    mode, _ntuple = "replicate", staticmethod(_pair)


class ReplicationPad2d(_IndexPadNd):
    """Repeat the edge values of the last two dims."""

    mode, _ntuple = "replicate", staticmethod(_quadruple)


class ReplicationPad3d(_IndexPadNd):
    """Repeat the edge values of the last three dims."""

    mode, _ntuple = "replicate", staticmethod(_sextuple)


class _CircularPadNd(_IndexPadNd):
    mode = "circular"
    _dims = 1

    def forward(self, input: Tensor) -> Tensor:
        d = self._dims
        if input.dim() not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.dim()}D input)")
        return pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Wrap the last dim around: ``[a b c]`` → ``[b c a b c a b]``."""

    _dims, _ntuple = 1, staticmethod(_pair)


class CircularPad2d(_CircularPadNd):
    """Wrap the last two dims around (a torus)."""

    _dims, _ntuple = 2, staticmethod(_quadruple)


class CircularPad3d(_CircularPadNd):
    """Wrap the last three dims around."""

    _dims, _ntuple = 3, staticmethod(_sextuple)
