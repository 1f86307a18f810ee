"""``autograd.Variable``: the wrapper torch had before 0.4, kept so that old code still runs.

Since torch 0.4 every tensor can record history, so ``Variable(t, requires_grad=True)`` simply
returns a tensor: ``t`` detached (same memory) with the flag set. ``isinstance(x, Variable)`` is
true for every tensor. New code should use tensors directly.
"""
from __future__ import annotations

import warnings
from typing import Any

from .._tensor import Tensor

__all__ = ["Variable"]


def _is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return _is_tensor(other)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: returns a Tensor."""

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Any:
        if not _is_tensor(data):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        return data.detach().requires_grad_(requires_grad)
