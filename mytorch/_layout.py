"""Layouts and memory formats: names that say how elements are arranged in memory."""
from __future__ import annotations

__all__ = ["layout", "strided", "memory_format", "contiguous_format", "channels_last",
           "preserve_format"]


class layout:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class memory_format:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
preserve_format = memory_format("preserve_format")
