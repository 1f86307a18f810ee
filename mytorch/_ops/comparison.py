"""Comparisons: ``==``/``<``/… (bool tensors), maximum/minimum/fmax/fmin, isclose/allclose/equal,
and the value tests isnan/isinf/isfinite/isposinf/isneginf/isreal.

Comparisons promote their operands like arithmetic does (``int_tensor == 1.5`` compares as floats)
and return ``torch.bool`` tensors. ``maximum`` and friends are differentiable: the gradient goes to
the operand that was chosen (split in half on ties, as in torch).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _dtype as D
from .._device import xp_for
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.graph import needs_grad, record
from ._operands import _scalar_types, binary
from ._variants import _cap, _inplace_version, _to_out
from .pointwise import _apply, _const, _grad_for, _require_tensor

__all__ = [
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
    "not_equal", "maximum", "minimum", "fmax", "fmin", "isclose", "allclose", "equal",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal",
]


# ------------------------------------------------------------------------ == != < <= > >=
def _comparison(name: str, ufunc: Any, symbol: str) -> Callable:
    def op(input: Tensor, other: Any, *, out: Tensor | None = None) -> Tensor:
        _require_tensor(name, "input", 1, input)
        a, b, dev, _ = binary(input, other)
        return _to_out(wrap(_apply(ufunc, a, b), dev), out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``input {symbol} other`` element-wise (with broadcasting), as a bool tensor."
    return op


eq = _comparison("eq", np.equal, "==")
ne = _comparison("ne", np.not_equal, "!=")
lt = _comparison("lt", np.less, "<")
le = _comparison("le", np.less_equal, "<=")
gt = _comparison("gt", np.greater, ">")
ge = _comparison("ge", np.greater_equal, ">=")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


# ------------------------------------------------------------------------ maximum and friends
def _extremum(name: str, ufunc: Any, node: str, self_weight: Callable) -> Callable:
    """``maximum``-like op; ``self_weight(a, b)`` is the share of the gradient ``input`` gets
    (``other`` gets the rest, except where both get it, see ``_other_weight``)."""
    def op(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
        _require_tensor(name, "other", 2, other)
        a, b, dev, _ = binary(input, other)
        res = wrap(_apply(ufunc, a, b), dev)
        if needs_grad(input, other):
            def backward(g: Tensor) -> tuple:
                w_self, w_other = self_weight(a, b)
                return (_grad_for(g * _const(w_self, g), input) if input._requires_grad else None,
                        _grad_for(g * _const(w_other, g), other) if other._requires_grad else None)
            record(node, res, (input, other), backward, saved=(input, other))
        return _to_out(res, out)

    op.__name__ = op.__qualname__ = name
    return op


# Gradient shares, written as torch's masks: ties split the gradient in half; when one side is
# nan, maximum/minimum return nan and both sides get the full gradient.
def _max_weights(a: Any, b: Any) -> tuple:
    eq_half = 0.5 * (a == b)
    return 1.0 - (a < b) - eq_half, 1.0 - (a > b) - eq_half


def _min_weights(a: Any, b: Any) -> tuple:
    eq_half = 0.5 * (a == b)
    return 1.0 - (a > b) - eq_half, 1.0 - (a < b) - eq_half


def _fmax_weights(a: Any, b: Any) -> tuple:  # the chosen operand (input on ties) gets it all
    pick_self = (a >= b) | np.isnan(b)
    return pick_self, ~pick_self


def _fmin_weights(a: Any, b: Any) -> tuple:
    pick_self = (a <= b) | np.isnan(b)
    return pick_self, ~pick_self


maximum = _extremum("maximum", np.maximum, "MaximumBackward0", _max_weights)
minimum = _extremum("minimum", np.minimum, "MinimumBackward0", _min_weights)
def _input_on_ties(ufunc: Any) -> Callable:
    """``ufunc(a, b)`` that returns ``a`` where ``a == b`` (0.0 vs -0.0), as torch's fmax/fmin do;
    NumPy returns ``b``."""
    def fn(a: Any, b: Any) -> Any:
        return ufunc(b, a)  # nan is ignored on either side, so only the ties change
    return fn


fmax = _extremum("fmax", _input_on_ties(np.fmax), "FmaxBackward0", _fmax_weights)
fmin = _extremum("fmin", _input_on_ties(np.fmin), "FminBackward0", _fmin_weights)
maximum.__doc__ = "Element-wise larger value; nan if either is nan."
minimum.__doc__ = "Element-wise smaller value; nan if either is nan."
fmax.__doc__ = "Element-wise larger value, ignoring nan (nan only if both are nan)."
fmin.__doc__ = "Element-wise smaller value, ignoring nan (nan only if both are nan)."


# ------------------------------------------------------------------------ closeness
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` element-wise (equal infinities are close).

    Unlike arithmetic, both tensors must have the same dtype.
    """
    _require_tensor("isclose", "other", 2, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_cap(input.dtype)} did not match {_cap(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    a, b, dev, dt = binary(input, other)
    close = _apply(np.equal, a, b)
    if dt is not D.bool:
        if dt._cat == D._INT:  # torch measures integer distances in the default float dtype
            a, b = a.astype(D.get_default_dtype().np), b.astype(D.get_default_dtype().np)
        with np.errstate(all="ignore"):
            err = np.absolute(a - b)
            close |= np.isfinite(err) & (err <= atol + rtol * np.absolute(b))
        if equal_nan:
            close |= np.isnan(a) & np.isnan(b)
    return wrap(close, dev)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every element pair is close (see :func:`isclose`); a Python bool."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and the same values (dtypes may differ)."""
    _require_tensor("equal", "other", 2, other)
    if input._data.shape != other._data.shape:
        return False
    a, b, _, _ = binary(input, other)
    return bool((a == b).all())


# ------------------------------------------------------------------------ value tests
def _value_test(name: str, test: Callable, non_float: bool, doc: str) -> Callable:
    """A bool-valued test of each element; integer and bool tensors answer ``non_float``."""
    def op(input: Tensor) -> Tensor:
        x = input._data
        if x.dtype.kind in "fc":
            return wrap(test(x), input._device)
        xp = xp_for(input._device)
        return wrap((xp.ones if non_float else xp.zeros)(x.shape, dtype=bool), input._device)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


isnan = _value_test("isnan", np.isnan, False, "True where the element is nan (x != x).")
isinf = _value_test("isinf", np.isinf, False, "True where the element is +inf or -inf.")
isfinite = _value_test("isfinite", np.isfinite, True, "True where the element is neither inf nor "
                       "nan.")


def _real_only(name: str, test: Callable) -> Callable:
    def run(x: Any) -> Any:
        if x.dtype.kind == "c":
            raise RuntimeError(f"{name} does not support complex inputs.")
        return test(x)
    return run


isposinf = _value_test("isposinf", _real_only("isposinf", lambda x: x == np.inf), False,
                       "True where the element is +inf.")
isneginf = _value_test("isneginf", _real_only("isneginf", lambda x: x == -np.inf), False,
                       "True where the element is -inf.")


def isreal(input: Tensor) -> Tensor:
    """True where the element has no imaginary part (everywhere, for real tensors)."""
    x = input._data
    if x.dtype.kind == "c":
        return wrap(x.imag == 0, input._device)
    return wrap(xp_for(input._device).ones(x.shape, dtype=bool), input._device)


# ------------------------------------------------------------------------ methods and operators
for _name, _fn in {"eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge, "greater": gt,
                   "greater_equal": ge, "less": lt, "less_equal": le, "not_equal": ne}.items():
    tensor_method(_name)(_fn)
    tensor_method(_name + "_")(_inplace_version(_fn))  # x.lt_(0): 1/0 in x's own dtype
for _fn in (maximum, minimum, fmax, fmin, isclose, allclose, equal, isnan, isinf, isfinite,
            isposinf, isneginf, isreal):
    tensor_method()(_fn)


def _operator(fn: Callable) -> Callable:
    """``Tensor.__eq__`` & co.: compare with tensors and numbers; anything else is not ours
    (so ``t == None`` is False, as in torch)."""
    def method(self: Tensor, other: Any) -> Any:
        if isinstance(other, (Tensor, *_scalar_types)):
            return fn(self, other)
        return NotImplemented

    return method


Tensor.__eq__ = _operator(eq)
Tensor.__ne__ = _operator(ne)
Tensor.__lt__ = _operator(lt)
Tensor.__le__ = _operator(le)
Tensor.__gt__ = _operator(gt)
Tensor.__ge__ = _operator(ge)
