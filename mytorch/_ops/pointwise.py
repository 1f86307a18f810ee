"""Element-wise operations: arithmetic, math functions, comparisons.

The pattern every op follows (read ``add`` first):

1. ``binary``/``unary`` helpers turn arguments into backend arrays (device check, torch's
   type promotion), 2. one NumPy/CuPy call computes the result, 3. ``wrap`` makes the Tensor,
4. if ``needs_grad``, ``record`` attaches a backward closure written with mytorch ops
   (so it can itself be differentiated) that returns one gradient per input.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.graph import needs_grad, record, sum_to
from ._operands import binary

__all__ = ["add", "sub", "subtract", "mul", "multiply", "neg", "negative"]


def _check_out_dtype(res_dt: D.dtype, out_dt: D.dtype) -> None:
    if not D.can_cast(res_dt, out_dt):
        raise RuntimeError(f"result type {_cap(res_dt)} can't be cast to the desired output type "
                           f"{_cap(out_dt)}")


def _cap(d: D.dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def inplace(self: Tensor, res: Any, name: str, inputs: tuple, backward: Any) -> Tensor:
    """Write ``res`` into ``self``'s memory (views see it), bump its version, rebase its history."""
    if needs_grad(*inputs) and self.grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    _check_out_dtype(D._BY_NP[res.dtype], self.dtype)
    grad_needed = needs_grad(*inputs)
    if grad_needed:
        # The old value of self becomes an ordinary input of the new node.
        old = Tensor._wrap(self._data, self._device)
        old.grad_fn, old._requires_grad, old._acc_node = self.grad_fn, self._requires_grad, \
            self._acc_node
        inputs = tuple(old if x is self else x for x in inputs)
    self._data[...] = res
    self._bump()
    if grad_needed:
        record(name, self, inputs, backward)
    return self


# ------------------------------------------------------------------------ add / sub / mul
def add(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other`` with broadcasting and torch's type promotion."""
    a, b, dev, dt = binary(input, other)
    if alpha != 1:
        b = b * alpha
    res = wrap(np.add(a, b) if dev.type == "cpu" else a + b, dev)
    if needs_grad(input, other):
        sa, sb = _shape(input), _shape(other)
        record("AddBackward0", res, (input, other),
               lambda g: (sum_to(g, sa), sum_to(g * alpha if alpha != 1 else g, sb)))
    return _to_out(res, out)


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    if isinstance(input, Tensor) and input.dtype is D.bool and isinstance(other, Tensor) \
            and other.dtype is D.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    a, b, dev, dt = binary(input, other)
    if alpha != 1:
        b = b * alpha
    res = wrap(a - b, dev)
    if needs_grad(input, other):
        sa, sb = _shape(input), _shape(other)
        record("SubBackward0", res, (input, other),
               lambda g: (sum_to(g, sa), sum_to(-g * alpha if alpha != 1 else -g, sb)))
    return _to_out(res, out)


def mul(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Element-wise product."""
    a, b, dev, dt = binary(input, other)
    res = wrap(a * b, dev)
    if needs_grad(input, other):
        sa, sb = _shape(input), _shape(other)
        record("MulBackward0", res, (input, other),
               lambda g: (sum_to(g * other, sa) if _rg(input) else None,
                          sum_to(g * input, sb) if _rg(other) else None),
               saved=_saved(input, other))
    return _to_out(res, out)


def neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if input.dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    res = wrap(-input._data, input._device)
    if needs_grad(input):
        record("NegBackward0", res, (input,), lambda g: (-g,))
    return _to_out(res, out)


subtract, multiply, negative = sub, mul, neg


# ------------------------------------------------------------------------ helpers
def _shape(x: Any) -> tuple:
    return tuple(x._data.shape) if isinstance(x, Tensor) else ()


def _rg(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def _saved(*xs: Any) -> tuple:
    return tuple(x for x in xs if isinstance(x, Tensor))


def _to_out(res: Tensor, out: Tensor | None) -> Tensor:
    """Support ``out=``: copy into the given tensor (resizing an empty one), as torch does."""
    if out is None:
        return res
    if res._requires_grad and out._requires_grad:
        raise RuntimeError("out=... arguments don't support automatic differentiation, but one of "
                           "the arguments requires grad.")
    _check_out_dtype(res.dtype, out.dtype)
    if tuple(out.shape) != tuple(res.shape):
        out._data = np.empty(res._data.shape, out._data.dtype) if out._device.type == "cpu" \
            else res._data.astype(out._data.dtype)
    out._data[...] = res._data
    out._bump()
    return out


# ------------------------------------------------------------------------ methods and operators
tensor_method("add")(add)
tensor_method("sub", also=("subtract",))(sub)
tensor_method("mul", also=("multiply",))(mul)
tensor_method("neg", also=("negative",))(neg)


@tensor_method()
def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    a, b, dev, dt = binary(self, other)
    res = a + (b * alpha if alpha != 1 else b)
    so = _shape(other)
    return inplace(self, res, "AddBackward0", (self, other),
                   lambda g: (g, sum_to(g * alpha if alpha != 1 else g, so)))


@tensor_method()
def sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    a, b, dev, dt = binary(self, other)
    so = _shape(other)
    return inplace(self, a - (b * alpha if alpha != 1 else b), "SubBackward0", (self, other),
                   lambda g: (g, sum_to(-g * alpha if alpha != 1 else -g, so)))


@tensor_method()
def mul_(self: Tensor, other: Any) -> Tensor:
    a, b, dev, dt = binary(self, other)
    so = _shape(other)
    old = self.detach().clone() if needs_grad(self, other) else None
    return inplace(self, a * b, "MulBackward0", (self, other),
                   lambda g: (g * other, sum_to(g * old, so) if _rg(other) else None))


Tensor.__add__ = lambda self, other: add(self, other)
Tensor.__radd__ = lambda self, other: add(other, self)
Tensor.__iadd__ = lambda self, other: add_(self, other)
Tensor.__sub__ = lambda self, other: sub(self, other)
Tensor.__rsub__ = lambda self, other: sub(other, self)
Tensor.__isub__ = lambda self, other: sub_(self, other)
Tensor.__mul__ = lambda self, other: mul(self, other)
Tensor.__rmul__ = lambda self, other: mul(other, self)
Tensor.__imul__ = lambda self, other: mul_(self, other)
Tensor.__neg__ = lambda self: neg(self)
Tensor.__pos__ = lambda self: self
