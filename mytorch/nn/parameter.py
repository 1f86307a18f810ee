"""``nn.Parameter``: a tensor that a Module registers as one of its learnable weights.

A Parameter is an ordinary Tensor in every respect but one: its *type*. ``Module.__setattr__``
looks at the type of what you assign, so ``self.w = nn.Parameter(t)`` registers a weight while
``self.w = t`` only stores a plain attribute (invisible to ``parameters()`` and ``state_dict()``).
"""
from __future__ import annotations

from typing import Any

from .._creation import empty
from .._tensor import Tensor, _init

__all__ = ["Parameter", "UninitializedBuffer", "UninitializedParameter"]


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and is picked up by ``Module.parameters()``.

    ``Parameter(data)`` shares ``data``'s memory (no copy) but drops its autograd history.
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        p = object.__new__(cls)
        _init(p, data._data, data._device)
        p._vc = data._vc  # same memory, same version counter (like ``detach``)
        if requires_grad and not (p.dtype.is_floating_point or p.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        p._requires_grad = bool(requires_grad)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass  # everything happened in __new__

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.clone()
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class _Uninitialized:
    """A placeholder whose shape a lazy module learns from its first input (``materialize``)."""

    __slots__ = ()  # (the layout of the class it becomes)
    cls_to_become: type

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Become a ``cls_to_become`` of ``shape``, uninitialised memory (``empty``), in place."""
        self.data = empty(tuple(shape) if isinstance(shape, (tuple, list)) else (shape,),
                          device=self.device if device is None else device,
                          dtype=self.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    __str__ = __repr__


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter of a lazy module (``nn.LazyLinear``) before its first forward."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device: Any = None,
                dtype: Any = None) -> "UninitializedParameter":
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        pass


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer of a lazy module (``nn.LazyBatchNorm2d``'s running stats) before its first forward."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device: Any = None,
                dtype: Any = None) -> "UninitializedBuffer":
        b = object.__new__(cls)
        data = empty(0, device=device, dtype=dtype)
        _init(b, data._data, data._device)
        b._requires_grad = requires_grad
        return b

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None) -> None:
        pass
