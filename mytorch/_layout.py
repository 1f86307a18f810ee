"""Layouts and memory formats: names that say how elements are arranged in memory."""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["layout", "strided", "sparse_coo", "memory_format", "contiguous_format", "channels_last",
           "preserve_format", "layout_op"]


class layout:
    """How a tensor's elements are stored. A layout other than ``strided`` keeps, in ``ops``, the
    operations it implements: its package registers them (``mytorch/sparse/``), and a dense
    operation handed such a tensor runs them through :func:`layout_op`."""

    __slots__ = ("name", "ops")

    def __init__(self, name: str) -> None:
        self.name = name
        self.ops: dict[str, Callable] = {}

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class memory_format:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


strided = layout("strided")
sparse_coo = layout("sparse_coo")


def layout_op(name: str, t: Any, *args: Any, **kwargs: Any) -> Any:
    """Operation ``name`` on ``t`` as ``t``'s layout implements it, or torch's kind of error."""
    fn = t.layout.ops.get(name)
    if fn is None:
        raise NotImplementedError(f"Could not run '{name}' with arguments from the "
                                  f"'{t.layout}' layout (mytorch implements it for strided tensors "
                                  f"only: call .to_dense() first)")
    return fn(t, *args, **kwargs)
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
preserve_format = memory_format("preserve_format")
