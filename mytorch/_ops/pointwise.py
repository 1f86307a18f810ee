"""Element-wise operations: arithmetic, math functions, rounding, clamping, bitwise and logical ops.

The pattern every op follows (read ``mul`` first):

1. ``binary`` (or ``_floating`` for one operand) turns arguments into backend arrays (device
   check, torch's type promotion), 2. one NumPy/CuPy call computes the result, 3. ``wrap`` makes
   the Tensor, 4. if ``needs_grad``, the node is recorded. The primitives (arithmetic, ``exp``,
   ``tanh``, ``pow``, ``clamp``...) are rules of the table ``RULES`` (see "rules and their
   factory" below): their derivative is written once and runs on arrays or tensors. The other ops
   ``record`` a backward closure written with mytorch ops (so it can itself be differentiated)
   that returns one gradient per input.

In-place variants (``exp_``, ``clamp_``, …) are built from the out-of-place op by
:func:`_inplace_version` (in ``_variants.py``, with ``out=``); operators (``+``, ``**``, ``&``, …)
are attached at the end (``@`` by ``linalg.py``, with ``matmul``).
Comparisons (``eq``, ``maximum``, ``isclose``, …) live in ``comparison.py``.
"""
from __future__ import annotations

import builtins
import functools
import math
from typing import Any, Callable

import numpy as np

from .. import _dtype as D
from .._device import xp_for
from .._layout import layout_op, strided
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.grad_mode import STATE
from ..autograd.graph import SavedOutput, mask_grad, needs_grad, record, sum_to
from ..autograd.rules import GRAD, Rule, record_rule
from ..autograd.node import _SAVED_HOOKS
from ._operands import FP_IGNORE, FP_STATE, array_on, binary, binary_float, broadcast_error, \
    check_no_overlap, check_same_device, checked_scalar, contiguous_result, pointwise_layout, quiet, \
    result_type
from ._variants import _cap, _check_out_dtype, _check_shape, _inplace_version, _to_out, inplace

__all__ = [
    "add", "sub", "subtract", "mul", "multiply", "neg", "negative",
    "div", "divide", "true_divide", "floor_divide", "remainder", "fmod",
    "pow", "float_power", "square", "sqrt", "rsqrt", "reciprocal",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p",
    "sin", "cos", "tan", "asin", "acos", "atan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
    "atan2", "arctan2", "hypot", "sigmoid", "relu", "relu_", "logit", "erf",
    "abs", "absolute", "sign", "sgn", "floor", "ceil", "round", "trunc", "fix", "frac",
    "clamp", "clip", "clamp_min", "clamp_max", "lerp", "addcmul", "addcdiv", "nan_to_num",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "bitwise_left_shift", "bitwise_right_shift",
    "logical_and", "logical_or", "logical_xor", "logical_not", "rsub", "signbit",
]

def _not_implemented(op: str, d: D.dtype) -> NotImplementedError:
    """torch's error for a kernel that has no version for dtype ``d`` (e.g. ``abs`` of bool)."""
    return NotImplementedError(f'"{op}" not implemented for \'{_cap(d)}\'')


# ------------------------------------------------------------------------ small helpers
def _shape(x: Any) -> tuple:
    return tuple(x._data.shape) if isinstance(x, Tensor) else ()


def _rg(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def _saved(*xs: Any) -> tuple:
    out = []
    for x in xs:
        if isinstance(x, Tensor):
            out.append(x)
    return tuple(out)


def _crossed(a: Any, b: Any) -> tuple:
    """What a product ``a * b`` saves: ``b`` if ``a`` needs its gradient, ``a`` if ``b`` does.

    Like torch: an operand nobody's gradient reads is not saved, so changing it in place later
    is no error.
    """
    keep_b = isinstance(b, Tensor) and isinstance(a, Tensor) and a._requires_grad
    keep_a = isinstance(a, Tensor) and isinstance(b, Tensor) and b._requires_grad
    if keep_a:
        return (b, a) if keep_b else (a,)
    return (b,) if keep_b else ()


# ------------------------------------------------------------------------ rules and their factory
# Each differentiable primitive below is one ``Rule`` (autograd/rules.py), found by its op's name
# in ``RULES``: torch's node name, the forward on arrays, and one derivative per input written once
# with operators, so that the same line runs on bare arrays in a plain backward and on tensors
# when a graph must be built. The factory the ops go through checks the operands, computes, and
# records the node under its final name (``record_rule``): ``_plain_binary`` or
# ``_general_binary`` for two operands, ``_unary_op`` for one.
#
# Most element-wise calls of a training loop are the plain case: float tensors of one shape and
# dtype in host memory (or a tensor and a Python number), no ``out=``, no saved-tensor hooks. The
# factory then skips the general argument handling (``binary``: devices, promotion, broadcasting,
# layout) and marks the node plain: in a plain ``backward()`` its rule runs on the bare arrays.
# Anything else (another device, dtype promotion, broadcasting, a strided layout, saved-tensor
# hooks) takes the general path, which stays the reference.
_PLAIN_INT = 1 << 53  # a Python int up to this converts to a float dtype exactly as torch's does
_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
_FLOAT_MAX = {_F16: float(np.finfo(_F16).max), _F32: float(np.finfo(_F32).max),
              _F64: float("inf")}  # (nan compares false: it takes the general path)


def _plain_scalar(dt: np.dtype, v: float | int) -> bool:
    """Whether the Python number ``v`` may become a NumPy scalar of float dtype ``dt`` on the plain
    path: exactly (an int below 2**53) and without overflow (whose warning the general path
    silences, as torch does not warn)."""
    m = _FLOAT_MAX[dt]
    return -m <= v <= m and (type(v) is float or -_PLAIN_INT < v < _PLAIN_INT)


def _plain_array(x: Tensor) -> Any:
    """``x``'s array if it may take the plain path (a float array in host memory laid out in
    row-major order), else None."""
    arr = x._data
    dt = arr.dtype
    if type(arr) is np.ndarray and (dt is _F32 or dt is _F64 or dt is _F16) and (
            arr.ndim < 2 or arr.flags.c_contiguous and arr.size):  # (NumPy calls any empty
        return arr                                                 # array contiguous)
    return None


def _general_binary(rule: Rule, input: Any, other: Any, name: str | None = None,
                    operands: Callable = binary) -> Tensor:
    """A binary rule's op for any operands: ``operands`` turns them into arrays (``binary``:
    devices, type promotion; ``binary_float`` for a result that is always floating) and raises
    the op's own errors; broadcasting is undone in backward."""
    a, b, dev, _ = operands(input, other)
    res = wrap(_apply(rule.forward, a, b), dev)
    if needs_grad(input, other):
        record_rule(rule, res, input, other, False, name)
    return res


def _plain_binary(rule: Rule, input: Any, other: Any, name: str | None = None) -> Tensor | None:
    """A binary rule's op on the plain path, or None when the operands do not allow it: both
    arrays of one float dtype and shape, row-major, in host memory, or one such array and a
    number (which becomes a scalar of its dtype, cast like a C cast, as ``binary`` does).

    Runs for every element-wise call of a training loop, so the checks are written out inline."""
    if _SAVED_HOOKS:
        return None
    if isinstance(input, Tensor):
        a = input._data
        dt = a.dtype
        if type(a) is not np.ndarray or not (dt is _F32 or dt is _F64 or dt is _F16) or (
                a.ndim > 1 and not (a.flags.c_contiguous and a.size)):
            return None
        if isinstance(other, Tensor):
            b = other._data
            if type(b) is not np.ndarray or b.dtype is not dt or b.shape != a.shape or (
                    b.ndim > 1 and not b.flags.c_contiguous):
                return None
        elif (type(other) is float or type(other) is int) and _plain_scalar(dt, other):
            b = dt.type(other)
        else:
            return None
        dev = input._device
    elif isinstance(other, Tensor):
        b = _plain_array(other)
        if b is None:
            return None
        if (type(input) is float or type(input) is int) and _plain_scalar(b.dtype, input):
            a = b.dtype.type(input)
        else:
            return None
        dev = other._device
    else:
        return None
    token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch (``quiet``)
    try:
        res = wrap(rule.forward(a, b), dev)
    finally:
        FP_STATE.reset(token)
    if STATE.enabled and (isinstance(input, Tensor) and input._requires_grad
                          or isinstance(other, Tensor) and other._requires_grad):
        record_rule(rule, res, input, other, True, name)
    return res


def _either(ufunc: Any, method: str) -> Callable:
    """A function of an array or a tensor alike, for derivatives: ``ufunc`` on arrays (and NumPy
    scalars), the tensor method ``method`` on tensors (recorded when a graph is built)."""
    def f(x: Any) -> Any:
        return getattr(x, method)() if isinstance(x, Tensor) else ufunc(x)
    f.__name__ = method
    return f


_cos, _sin = _either(np.cos, "cos"), _either(np.sin, "sin")
_cosh, _sinh = _either(np.cosh, "cosh"), _either(np.sinh, "sinh")
_exp = _either(np.exp, "exp")
_rsqrt = _either(lambda x: np.reciprocal(np.sqrt(x)), "rsqrt")


def _zeros_like(x: Any) -> Any:
    """Zeros of ``x``'s shape and dtype: an array, or a constant tensor."""
    return _zeros(x, tuple(x._data.shape)) if isinstance(x, Tensor) else np.zeros_like(x)


def _grad_for(g: Tensor, x: Any) -> Tensor | None:
    """The share of ``g`` that belongs to operand ``x``: un-broadcast, in ``x``'s dtype.

    ``None`` when ``x`` is a number or does not require grad.
    """
    if not _rg(x):
        return None
    g = sum_to(g, x._data.shape)
    return g if g._data.dtype == x._data.dtype else g.to(x.dtype)


def _apply(fn: Callable, a: Any, b: Any) -> Any:
    """``fn(a, b)`` on two arrays, with NumPy's broadcasting ValueError turned into torch's error
    and without NumPy's warnings (``inf * 0`` is nan, ``1e30 * 1e30`` inf, silently as in torch)."""
    token = FP_STATE.set(FP_IGNORE)  # np.errstate(all="ignore"), minus its cost (_operands.py)
    try:
        res = fn(a, b)
    except ValueError:
        broadcast_error(np.shape(a), np.shape(b))
    finally:
        FP_STATE.reset(token)
    return res if res.ndim < 2 else pointwise_layout(res, a, b)  # torch's layout for the result


def _floating(x: Tensor) -> Any:
    """``x``'s array, integers and bools converted to the default float dtype (like torch.sqrt)."""
    arr = x._data
    return arr if arr.dtype.kind in "fc" else arr.astype(D.get_default_dtype().np)


def _floating_pair(input: Any, other: Any) -> tuple:
    """``binary`` for ops whose result is always floating (true division, atan2); a Python
    number keeps its value (``uint8_tensor / -3`` divides by -3.0, see ``binary_float``)."""
    return binary_float(input, other)


def _const(arr: Any, like: Tensor) -> Tensor:
    """A constant (no-grad) tensor of ``like``'s dtype from a mask or array: used in backward."""
    return wrap(arr.astype(like._data.dtype), like._device)


def _zeros(g: Tensor, shape: tuple) -> Tensor:
    """The zero gradient of piecewise-constant ops (round, floor, sign, …)."""
    return wrap(xp_for(g._device).zeros(shape, dtype=g._data.dtype), g._device)


def _require_tensor(fn: str, name: str, pos: int, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _quiet() -> Any:
    """Silence NumPy's divide/overflow/invalid warnings: torch returns inf/nan without a word."""
    return quiet()


# ------------------------------------------------------------------------ add / sub / mul / neg
def _check_alpha(alpha: Any, dt: D.dtype) -> Any:
    """``alpha`` converted to the result dtype (an overflow is an error, as in torch)."""
    if isinstance(alpha, float) and dt._cat < D._FLOAT:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return checked_scalar(alpha, dt)


# The rules of the arithmetic: ``d(g, a, b, y)`` per operand (``a``, ``b`` the operands, ``y``
# the result), and what each reads. d(a/b)/db = -a/b² is written with the operands, so backward
# keeps no reference to the result, and as torch computes it, (a/b)/b: b*b overflows sooner.
_ADD = Rule("AddBackward0", np.add, GRAD, GRAD, reads=("", ""))
_SUB = Rule("SubBackward0", np.subtract, GRAD, lambda g, a, b, y: -g, reads=("", ""))
_MUL = Rule("MulBackward0", np.multiply, lambda g, a, b, y: g * b, lambda g, a, b, y: g * a,
            reads=("b", "a"))
_DIV = Rule("DivBackward0", np.true_divide, lambda g, a, b, y: g / b,
            lambda g, a, b, y: -g * (a / b / b), reads=("b", "ab"))
_NEG = Rule("NegBackward0", np.negative, lambda g, a, b, y: -g)


def add(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other`` with broadcasting and torch's type promotion."""
    return _add(input, other, alpha, out, None)


def _add(input: Any, other: Any, alpha: Any, out: Tensor | None, name: str | None) -> Tensor:
    """``add``, its node called ``name`` (``addcmul`` and ``addcdiv`` are adds in torch's graph)."""
    if out is None and alpha == 1 and alpha.__class__ is int:
        res = _plain_binary(_ADD, input, other, name)
        if res is not None:
            return res
    if isinstance(other, Tensor) and other.layout is not strided:  # dense + sparse (mytorch/sparse/)
        return layout_op("radd", other, input, alpha=alpha, out=out)
    if alpha == 1:
        return _to_out(_general_binary(_ADD, input, other, name), out)
    return _to_out(_scaled(_ADD, input, other, alpha, name), out)


def _scaled(rule: Rule, input: Any, other: Any, alpha: Any, name: str | None) -> Tensor:
    """``rule`` (add or sub) with ``other`` scaled by ``alpha`` first: torch's one node, whose
    second gradient is the rule's times ``alpha``."""
    a, b, dev, dt = binary(input, other)
    alpha = _check_alpha(alpha, dt)
    res = wrap(_apply(rule.forward, a, _apply(np.multiply, b, alpha)), dev)  # overflow: inf
    if needs_grad(input, other):
        d_in, d_other = rule.grads
        record(name or rule.name, res, (input, other),
               lambda g: (_grad_for(d_in(g, input, other, None), input),
                          _grad_for(d_other(g, input, other, None) * alpha, other)))
    return res


def _is_bool(x: Any) -> bool:
    return x.dtype is D.bool if isinstance(x, Tensor) else isinstance(x, (bool, np.bool_))


def _check_bool_sub(input: Any, other: Any) -> None:
    """torch refuses ``-`` on bools: for masks, ``^`` / ``logical_xor`` or ``~`` is meant."""
    a, b = _is_bool(input), _is_bool(other)
    if a and b:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if a or b:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    return _sub(input, other, alpha, out, None)


def _sub(input: Any, other: Any, alpha: Any, out: Tensor | None, name: str | None) -> Tensor:
    if out is None and alpha == 1 and alpha.__class__ is int:  # (bools never take the plain path)
        res = _plain_binary(_SUB, input, other, name)
        if res is not None:
            return res
    _check_bool_sub(input, other)
    if alpha == 1:
        return _to_out(_general_binary(_SUB, input, other, name), out)
    return _to_out(_scaled(_SUB, input, other, alpha, name), out)


def mul(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Element-wise product."""
    res = _plain_binary(_MUL, input, other) if out is None else None
    return res if res is not None else _to_out(_general_binary(_MUL, input, other), out)


def neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``-input``; an error for bool tensors (use ``~`` / ``logical_not`` to flip a mask)."""
    if input.dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    res = wrap(-input._data, input._device)
    if needs_grad(input):
        record_rule(_NEG, res, input, None, not _SAVED_HOOKS and _plain_array(input) is not None)
    return _to_out(res, out)


subtract, multiply, negative = sub, mul, neg


# ------------------------------------------------------------------------ division family
def div(input: Any, other: Any, *, rounding_mode: str | None = None,
        out: Tensor | None = None) -> Tensor:
    """``input / other``. ``rounding_mode=None`` is true division (int / int gives a float);
    ``'trunc'`` rounds toward zero and ``'floor'`` toward -inf, keeping the promoted dtype."""
    if rounding_mode is not None:
        res = _div_rounded(input, other, rounding_mode)
        if needs_grad(input, other):  # piecewise constant: the gradient is zero (as in torch)
            record("DivBackward2", res, (input, other),
                   lambda g: (_zeros(g, _shape(input)) if _rg(input) else None,
                              _zeros(g, _shape(other)) if _rg(other) else None))
        return _to_out(res, out)
    if not isinstance(input, Tensor) and isinstance(other, Tensor) and needs_grad(other):
        # number / t is computed as torch does it, reciprocal(t) * number: what is saved for
        # backward is then the reciprocal, not t (so changing t in place later is no error).
        return _to_out(mul(reciprocal(other), input), out)
    res = _plain_binary(_DIV, input, other) if out is None else None
    return res if res is not None else \
        _to_out(_general_binary(_DIV, input, other, None, _floating_pair), out)


def _div_rounded(input: Any, other: Any, mode: str) -> Tensor:
    """The forward of ``div(..., rounding_mode=mode)`` (no autograd)."""
    if mode not in ("trunc", "floor"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                           f"found '{mode}'")
    a, b, dev, dt = binary(input, other)
    if dt is D.bool:
        raise _not_implemented(f"div_{mode}_cpu", dt)
    if dt._cat == D._INT:
        _check_int_divisor(b)
        # C's integer division truncates; a - fmod(a, b) is an exact multiple of b.
        q = _apply(np.floor_divide, a, b) if mode == "floor" else (a - _apply(np.fmod, a, b)) // b
    else:
        with _quiet():
            q = _apply(np.floor_divide, a, b) if mode == "floor" else np.trunc(_apply(np.divide, a, b))
    return wrap(q, dev)


def _check_int_divisor(b: Any) -> None:
    if (b == 0).any():
        raise RuntimeError("ZeroDivisionError")


def floor_divide(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``input // other``: division rounded toward -inf. Not differentiable in torch."""
    res = _div_rounded(input, other, "floor")
    if needs_grad(input, other):
        def backward(g: Tensor) -> tuple:
            raise RuntimeError("derivative for aten::floor_divide is not implemented")
        record("FloorDivideBackward0", res, (input, other), backward)
    return _to_out(res, out)


def _modulo(name: str, ufunc: Any, quotient_mode: str, input: Any, other: Any,
            out: Tensor | None) -> Tensor:
    a, b, dev, dt = binary(input, other)
    if dt is D.bool:
        raise _not_implemented(f"{name}_cpu", dt)
    if dt._cat == D._INT:
        _check_int_divisor(b)
    with _quiet():
        res = wrap(_apply(ufunc, a, b), dev)
    if needs_grad(input, other) and not isinstance(input, Tensor):
        def backward(g: Tensor) -> tuple:
            raise RuntimeError(f"derivative for aten::{name} is not implemented")
        record(f"{name.capitalize()}Backward", res, (input, other), backward)
    elif needs_grad(input, other):
        # a = q * b + r with q piecewise constant: dr/da = 1, dr/db = -q.
        record(f"{name.capitalize()}Backward{0 if not isinstance(other, Tensor) else 1}", res,
               (input, other),
               lambda g: (_grad_for(g, input),
                          _grad_for(-g * div(input, other, rounding_mode=quotient_mode), other)
                          if _rg(other) else None),
               saved=_saved(input, other) if _rg(other) else ())
    return _to_out(res, out)


def _remainder_array(a: Any, b: Any) -> Any:
    """``np.remainder``, but a zero result keeps the dividend's sign, as torch's (fmod's) does."""
    r = np.remainder(a, b)
    return np.where(r == 0, np.copysign(r, a), r) if r.dtype.kind == "f" else r


def remainder(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Python's ``%``: the result has the sign of the divisor (``-5 % 3 == 1``)."""
    return _modulo("remainder", _remainder_array, "floor", input, other, out)


def fmod(input: Tensor, other: Any, *, out: Tensor | None = None) -> Tensor:
    """C's ``fmod``: the result has the sign of the dividend (``fmod(-5, 3) == -2``)."""
    _require_tensor("fmod", "input", 1, input)
    return _modulo("fmod", np.fmod, "trunc", input, other, out)


divide, true_divide = div, div


# ------------------------------------------------------------------------ powers and roots
# ``x ** n`` is the idea: a value and its derivative ``n * x ** (n - 1)`` (``_pow_grad``, written
# once for tensors and for bare arrays). ``pow`` around them owns torch's fidelity: dtype rules
# and errors, integer powers, a tensor exponent, ``out=``.
def _pow_value(a: Any, n: float) -> Any:
    """``a ** n`` for a float array and a Python number, computed as torch's CPU kernel does:
    ``x*x``, ``x*x*x`` and ``1/(x*x)`` for 2, 3 and -2; ``sqrt``, ``1/sqrt`` and ``1/x`` for 0.5,
    -0.5 and -1; 1 for 0 (even for nan) and a copy for 1. Other small integers are products too,
    in double precision for float16/32 (so one rounding, like the C ``pow``); the rest is ``pow``.
    """
    if a.dtype == _F16:  # torch computes half in float: so do we, rounding once at the end
        wide = a.astype(_F32)
        if n not in (0.5, -0.5):
            return _pow_value(wide, n).astype(_F16)
        root = np.sqrt(wide) + 0  # as the C pow, not sqrt: pow(-0, .5) is +0, pow(-inf, .5) inf
        root[np.isneginf(wide)] = np.inf
        return (root if n > 0 else 1 / root).astype(_F16)
    if n == 2:
        return a * a
    if n == 3:
        return a * a * a
    if n == 0.5:
        return np.sqrt(a)
    if n == -1:
        return np.reciprocal(a)
    if n == -0.5:
        return 1 / np.sqrt(a)
    if n == -2:
        return 1 / (a * a)
    if n == 0:
        return np.ones_like(a)
    if n == 1:
        return a.copy()
    m = builtins.abs(n)
    if 3 <= m <= 8 and m == int(m):
        wide = a if a.dtype == _F64 else a.astype(_F64)
        sq = wide * wide
        m = int(m)
        r = sq * wide if m == 3 else sq * sq      # x**3 (for -3), x**4, then x**5 ... x**8
        r = r if m <= 4 else r * (wide if m == 5 else sq if m == 6 else sq * wide if m == 7 else r)
        return (r if n > 0 else 1 / r).astype(a.dtype, copy=False)
    return a ** n


def _power(x: Any, n: float) -> Any:
    """``x ** n`` for an array (``_pow_value``) or a tensor (``pow``), for derivatives."""
    return pow(x, n) if isinstance(x, Tensor) else _pow_value(x, n)


# d(x ** n)/dx = n * x ** (n - 1), times g (as torch groups it); 0 for n == 0, even where x ** -1
# is not finite, and then x is not saved.
_POW = Rule("PowBackward0", _pow_value, lambda g, x, n, y: g * (n * _power(x, n - 1)),
            reads=("a",))
_POW_ZERO = Rule("PowBackward0", _pow_value, lambda g, x, n, y: _zeros_like(g))


def pow(input: Any, exponent: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """``input ** exponent``; either may be a number (``2 ** t`` works through ``__rpow__``).

    The idea is ``_POW``; around it, torch's fidelity: a float tensor and a Python number go
    straight to the rule (small integer powers as products, ``_pow_value``); otherwise dtype rules
    and errors, integer powers, a tensor exponent and ``out=``.
    """
    if out is None and isinstance(input, Tensor) and type(exponent) in (int, float):
        a = input._data
        dt = a.dtype
        if type(a) is np.ndarray and (dt is _F32 or dt is _F64 or dt is _F16) \
                and -_PLAIN_INT < exponent < _PLAIN_INT:
            token = FP_STATE.set(FP_IGNORE)
            try:
                res = wrap(_pow_value(a, exponent), input._device)
            finally:
                FP_STATE.reset(token)
            if STATE.enabled and input._requires_grad:
                record_rule(_POW if exponent else _POW_ZERO, res, input, exponent,
                            not _SAVED_HOOKS)
            return res
    a, b, dev, dt = binary(input, exponent)
    if dt is D.bool:
        raise _not_implemented("pow", dt)
    if dt._cat == D._INT:
        if not isinstance(exponent, Tensor):
            if exponent < 0:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            b = checked_scalar(exponent, dt)  # torch: u8 ** 300 is an overflow error, no wrap
        arr = _int_pow(a, b, dev)
    else:
        with _quiet():
            if isinstance(exponent, Tensor) or not isinstance(exponent, (int, float)):
                arr = _apply(np.power, a, b)
            elif a.dtype.kind == "f" and type(a) is np.ndarray:
                arr = _pow_value(a, exponent)      # (a strided view keeps its layout)
            else:
                arr = a ** exponent                # complex, or CuPy
    if not isinstance(input, Tensor):  # number ** tensor: torch's result is contiguous
        arr = contiguous_result(arr)
    res = wrap(arr, dev)
    if needs_grad(input, exponent):
        if isinstance(exponent, Tensor):
            _record_pow_tensor(res, input, exponent)
        else:
            record_rule(_POW if exponent != 0 else _POW_ZERO, res, input, exponent)
    return _to_out(res, out)


def _int_pow(a: Any, b: Any, dev: Any) -> Any:
    """Integer power where a negative exponent follows torch: 1 for 1, ±1 for -1, else 0."""
    res = _apply(np.power, a, np.maximum(b, 0))
    neg = b < 0
    if not neg.any():
        return res
    odd = (b & 1).astype(bool)
    special = (a == 1) | ((a == -1) & ~odd)   # results that are +1
    minus_one = (a == -1) & odd
    xp = xp_for(dev)
    return xp.where(neg, special.astype(res.dtype) - minus_one.astype(res.dtype), res)


def _record_pow_tensor(res: Tensor, base: Any, exponent: Tensor) -> None:
    """The node of ``t ** u`` or ``2 ** u``: a tensor exponent."""
    def d_base(g: Tensor) -> Tensor:
        # b * a**(b-1), defined as 0 where b == 0 (even at a == 0): shift those exponents to 0.
        zero_b = _const(exponent._data == 0, exponent)
        return g * exponent * base.pow(exponent - 1 + zero_b)

    out = SavedOutput(res)  # the result, without a reference from this closure to ``res``

    def d_exponent(g: Tensor) -> Tensor:
        # a**b * log(a), defined as 0 where a == 0 and b >= 0: use log(1) there instead of log(0).
        base_arr = base._data if isinstance(base, Tensor) else base
        r = out()
        flat = _const((base_arr == 0) & (exponent._data >= 0), r)
        return g * r * (base + flat).log()

    if isinstance(base, Tensor):                               # t ** u
        record("PowBackward1", res, (base, exponent),
               lambda g: (_grad_for(d_base(g), base) if _rg(base) else None,
                          _grad_for(d_exponent(g), exponent) if _rg(exponent) else None),
               saved=(base, exponent, out) if _rg(exponent) else (base, exponent))
    else:                                                      # 2 ** t
        record("PowBackward2", res, (base, exponent),
               lambda g: (None, _grad_for(d_exponent(g), exponent)), saved=(exponent, out))


def float_power(input: Any, exponent: Any, *, out: Tensor | None = None) -> Tensor:
    """``pow`` computed in double precision: the result is always float64."""
    def as_double(x: Any) -> Any:
        return x.to(D.float64) if isinstance(x, Tensor) else x
    return _to_out(pow(as_double(input), as_double(exponent)), out)


def square(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``input ** 2`` (bool squares to int64, like ``pow``)."""
    return _to_out(pow(input, 2), out)


# ------------------------------------------------------------------------ unary float functions
def _unary_op(name: str, rule: Rule, doc: str) -> Callable:
    """``torch.<name>``: ``rule`` on one tensor, integers and bools as the default float dtype
    (like torch.exp); its node is recorded if the input requires grad (plain: a float array in
    host memory, laid out in row-major order)."""
    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        arr = input._data
        if arr.dtype.kind not in "fc":
            arr = arr.astype(D.get_default_dtype().np)
        token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch (``quiet``)
        try:
            res = wrap(rule.forward(arr), input._device)
        finally:
            FP_STATE.reset(token)
        if STATE.enabled and input._requires_grad:  # (``needs_grad``, inline: a hot path)
            record_rule(rule, res, input, None,
                        not _SAVED_HOOKS and _plain_array(input) is not None)
        return res if out is None else _to_out(res, out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def _sigmoid_array(x: Any) -> Any:
    return np.reciprocal(np.exp(np.negative(x)) + x.dtype.type(1))


_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)

# The float functions of one tensor: ``d(g, x, _, y)``, ``x`` the input and ``y`` the result;
# ``reads`` says which of them the node keeps (and checks for in-place changes).
_X, _Y = ("a",), ("y",)
_UNARY = {
    "exp": Rule("ExpBackward0", np.exp, lambda g, x, _, y: g * y, reads=_Y),
    "exp2": Rule("Exp2Backward0", np.exp2, lambda g, x, _, y: g * y * _LN2, reads=_Y),
    "expm1": Rule("Expm1Backward0", np.expm1, lambda g, x, _, y: g * (y + 1), reads=_Y),
    "log": Rule("LogBackward0", np.log, lambda g, x, _, y: g / x, reads=_X),
    "log2": Rule("Log2Backward0", np.log2, lambda g, x, _, y: g / (x * _LN2), reads=_X),
    "log10": Rule("Log10Backward0", np.log10, lambda g, x, _, y: g / (x * _LN10), reads=_X),
    "log1p": Rule("Log1PBackward0", np.log1p, lambda g, x, _, y: g / (x + 1), reads=_X),
    "sqrt": Rule("SqrtBackward0", np.sqrt, lambda g, x, _, y: g / (2 * y), reads=_Y),
    "rsqrt": Rule("RsqrtBackward0", lambda a: np.reciprocal(np.sqrt(a)),
                  lambda g, x, _, y: -0.5 * g * _power(y, 3), reads=_Y),
    "reciprocal": Rule("ReciprocalBackward0", np.reciprocal, lambda g, x, _, y: -g * (y * y),
                       reads=_Y),
    "sin": Rule("SinBackward0", np.sin, lambda g, x, _, y: g * _cos(x), reads=_X),
    "cos": Rule("CosBackward0", np.cos, lambda g, x, _, y: -g * _sin(x), reads=_X),
    "tan": Rule("TanBackward0", np.tan, lambda g, x, _, y: g * (1 + y * y), reads=_Y),
    "asin": Rule("AsinBackward0", np.arcsin, lambda g, x, _, y: g * _rsqrt(1 - x * x), reads=_X),
    "acos": Rule("AcosBackward0", np.arccos, lambda g, x, _, y: -g * _rsqrt(1 - x * x),
                 reads=_X),
    "atan": Rule("AtanBackward0", np.arctan, lambda g, x, _, y: g / (1 + x * x), reads=_X),
    "sinh": Rule("SinhBackward0", np.sinh, lambda g, x, _, y: g * _cosh(x), reads=_X),
    "cosh": Rule("CoshBackward0", np.cosh, lambda g, x, _, y: g * _sinh(x), reads=_X),
    "tanh": Rule("TanhBackward0", np.tanh, lambda g, x, _, y: g * (1 - y * y), reads=_Y),
    "asinh": Rule("AsinhBackward0", np.arcsinh, lambda g, x, _, y: g * _rsqrt(x * x + 1),
                  reads=_X),
    "acosh": Rule("AcoshBackward0", np.arccosh, lambda g, x, _, y: g * _rsqrt(x * x - 1),
                  reads=_X),
    "atanh": Rule("AtanhBackward0", np.arctanh, lambda g, x, _, y: g / (1 - x * x), reads=_X),
    "sigmoid": Rule("SigmoidBackward0", _sigmoid_array, lambda g, x, _, y: g * y * (1 - y),
                    reads=_Y),
}
_DOCS = {
    "exp": "e ** x", "exp2": "2 ** x", "expm1": "e ** x - 1, accurate for small x",
    "log": "Natural log", "log2": "Base-2 logarithm", "log10": "Base-10 logarithm",
    "log1p": "log(1 + x), accurate for small x", "sqrt": "Square root (nan for negative inputs)",
    "rsqrt": "1 / sqrt(x)", "reciprocal": "1 / x (a float even for ints)", "sin": "Sine",
    "cos": "Cosine", "tan": "Tangent", "asin": "Inverse sine", "acos": "Inverse cosine",
    "atan": "Inverse tangent", "sinh": "Hyperbolic sine", "cosh": "Hyperbolic cosine",
    "tanh": "Hyperbolic tangent", "asinh": "Inverse hyperbolic sine",
    "acosh": "Inverse hyperbolic cosine", "atanh": "Inverse hyperbolic tangent",
    "sigmoid": "1 / (1 + e ** -x)",
}
exp, exp2, expm1, log, log2, log10, log1p, sqrt, rsqrt, reciprocal, sin, cos, tan, asin, acos, \
    atan, sinh, cosh, tanh, asinh, acosh, atanh, sigmoid = \
    (_unary_op(n, rule, _DOCS[n]) for n, rule in _UNARY.items())
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


# erf: NumPy has no error function, so here is Cephes' (ndtr.c), written with ufuncs so it runs on
# any backend. |x| <= 1: x * T(x²)/U(x²); otherwise erf = 1 - erfc with erfc = e^(-x²) P(|x|)/Q(|x|)
# (R/S beyond |x| = 8). Computed in float64, accurate to a few ulp.
_ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
          7.00332514112805075473E3, 5.55923013010394962768E4)
_ERF_U = (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
          2.26290000613890934246E4, 4.92673942608635921086E4)
_ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
           4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
           9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
_ERFC_Q = (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
           9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
           1.65666309194161350182E3, 5.57535340817727675546E2)
_ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
           6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
_ERFC_S = (1.0, 2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
           1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)


def _polyval(coeffs: tuple, x: Any) -> Any:
    """Horner's rule, highest power first (in place on one accumulator: erf runs it on every
    element of a GELU's input)."""
    acc = x * coeffs[0] + coeffs[1]
    for c in coeffs[2:]:
        acc *= x
        acc += c
    return acc


def _erf_array(x: Any) -> Any:
    if x.ndim == 0:  # (arithmetic on 0-d arrays gives NumPy scalars, which take no assignment)
        return _erf_array(x.reshape(1)).reshape(())
    xd = x.astype(np.float64)
    z = xd * xd
    out = _polyval(_ERF_T, z)                 # x * T/U, first for every element (cheap) ...
    out *= xd
    out /= _polyval(_ERF_U, z)
    outer = ~(np.abs(xd) <= 1.0)              # ... then 1 - erfc where |x| > 1 (or nan)
    if type(out) is np.ndarray and out.flags.c_contiguous:  # (few: gather them by index)
        flat = out.reshape(-1)
        where_outer = np.flatnonzero(outer)
        xo = xd.reshape(-1)[where_outer]
    else:
        flat, where_outer, xo = out, outer, xd[outer]
    # erfc(6) ~ 2e-17 rounds 1 - erfc to exactly 1 in float64, so beyond 6 (and at ±inf) erf is
    # ±1 and R/S, erfc's own tail beyond 8, is never needed
    ao = np.minimum(np.abs(xo), 6.0)
    tail = _polyval(_ERFC_P, ao)
    tail /= _polyval(_ERFC_Q, ao)
    flat[where_outer] = np.copysign(1.0 - np.exp(-ao * ao) * tail, xo)
    return out.astype(x.dtype)


_UNARY["erf"] = Rule("ErfBackward0", _erf_array,
                     lambda g, x, _, y: g * _TWO_OVER_SQRT_PI * _exp(-x * x), reads=_X)
erf = _unary_op("erf", _UNARY["erf"],
                "The error function 2/sqrt(pi) * integral of e^(-t²) from 0 to x")


def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """``log(p / (1 - p))``, the inverse of sigmoid; with ``eps``, p is clamped to [eps, 1-eps]."""
    x = _floating(input)
    if eps is not None:
        x = x.clip(eps, 1 - eps)
    with _quiet():
        res = wrap(np.log(x / (1 - x)), input._device)
    if needs_grad(input):
        def backward(g: Tensor) -> tuple:
            if eps is None:  # nan outside [0, 1], like torch
                outside = (input._data < 0) | (input._data > 1)
                nans = xp_for(g._device).where(outside, np.nan, 0.0)
                return (g / (input * (1 - input)) + _const(nans, g),)
            inside = _const((input._data >= eps) & (input._data <= 1 - eps), g)
            p = input.clamp(eps, 1 - eps)   # finite denominators; the mask zeroes the outside
            return (g * inside / (p * (1 - p)),)
        record("LogitBackward0" if eps is None else "LogitBackward1", res, (input,), backward,
               saved=(input,))
    return _to_out(res, out)


# ------------------------------------------------------------------------ two-operand float math
def atan2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The angle of the point (other, input), in (-pi, pi]."""
    _require_tensor("atan2", "other", 2, other)
    a, b, dev, dt = _floating_pair(input, other)
    res = wrap(_apply(np.arctan2, a, b), dev)
    if needs_grad(input, other):
        def backward(g: Tensor) -> tuple:
            r2 = input * input + other * other
            r2 = r2 + _const(r2._data == 0, r2)  # torch defines the gradient at (0, 0) as 0
            return (_grad_for(g * other / r2, input), _grad_for(-g * input / r2, other))
        record("Atan2Backward0", res, (input, other), backward, saved=(input, other))
    return _to_out(res, out)


def hypot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``sqrt(input² + other²)`` without overflow; floating tensors only."""
    _require_tensor("hypot", "other", 2, other)
    a, b, dev, dt = binary(input, other)
    if dt._cat < D._FLOAT:
        raise _not_implemented("hypot_cpu", dt)
    res = wrap(_apply(np.hypot, a, b), dev)
    if needs_grad(input, other):
        r = SavedOutput(res)
        record("HypotBackward0", res, (input, other),
               lambda g: (_grad_for(g * input / r(), input) if _rg(input) else None,
                          _grad_for(g * other / r(), other) if _rg(other) else None),
               saved=(input, other, r))
    return _to_out(res, out)


arctan2 = atan2


# ------------------------------------------------------------------------ sign, abs, relu
def _sign_array(x: Any) -> Any:
    """-1, 0 or 1 with ``x``'s dtype, 0 for nan (like torch); a bool array is its own sign."""
    if x.dtype.kind == "f":
        arr = np.sign(x)
        nan = np.isnan(arr)
        if nan.any():
            arr[nan] = 0
        return arr
    return x.copy() if x.dtype.kind == "b" else np.sign(x)


_sign = _either(_sign_array, "sign")
_ABS = Rule("AbsBackward0", np.absolute, lambda g, x, _, y: g * _sign(x), reads=_X)
_SIGN = Rule("SignBackward0", _sign_array, lambda g, x, _, y: _zeros_like(g))


def _record_unary(rule: Rule, res: Tensor, input: Tensor, name: str | None = None) -> Tensor:
    """Record ``res = rule(input)`` for an op that computes its own result (keeping its dtype)."""
    if needs_grad(input):
        record_rule(rule, res, input, None, not _SAVED_HOOKS and _plain_array(input) is not None,
                    name)
    return res


def abs(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """``|x|``; its gradient at 0 is 0 (torch's choice of subgradient)."""
    if input.dtype is D.bool:
        raise _not_implemented("abs_cpu", D.bool)
    res = wrap(np.absolute(input._data), input._device)
    return _to_out(_record_unary(_ABS, res, input), out)


absolute = abs


def sign(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """-1, 0 or 1 with the input's dtype (0 for nan, like torch); its gradient is 0."""
    return _to_out(_signed(input, "SignBackward0"), out)


def _signed(input: Tensor, name: str) -> Tensor:
    """``sign(input)``, its node called ``name`` (``sgn`` of a real tensor is a sign)."""
    return _record_unary(_SIGN, wrap(_sign_array(input._data), input._device), input, name)


def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``x / |x|`` (0 at 0): the sign for real tensors, the unit phase for complex ones."""
    x = input._data
    if x.dtype.kind != "c":
        return _to_out(_signed(input, "SgnBackward0"), out)
    with _quiet():
        mag = np.absolute(x)
        arr = np.where(mag == 0, 0, x / mag)
    return _to_out(wrap(arr.astype(x.dtype), input._device), out)


def relu(input: Tensor) -> Tensor:
    """``max(x, 0)``, keeping the dtype; the gradient at 0 is 0."""
    if input.dtype is D.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    x = input._data
    # 0 first: NumPy returns the second operand on a tie, so -0.0 stays -0.0 (torch's clamp_min)
    res = wrap(np.maximum(x.dtype.type(0), x), input._device)
    if needs_grad(input):
        r = SavedOutput(res)
        record("ReluBackward0", res, (input,),  # torch zeroes where y <= 0: nan passes g through
               lambda g: (mask_grad("ThresholdBackwardBackward0", g, ~(r.data <= 0), r),),
               saved=(r,))
    return res


# ------------------------------------------------------------------------ rounding
def _rounding(name: str, ufunc: Any, kernel: str) -> Callable:
    """floor/ceil/trunc: integer tensors come back unchanged (a copy); the gradient is 0."""
    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        x = input._data
        if x.dtype.kind == "b":
            raise _not_implemented(kernel, D.bool)
        res = wrap(ufunc(x) if x.dtype.kind in "fc" else x.copy(), input._device)
        if needs_grad(input):
            record(f"{name.capitalize()}Backward0", res, (input,),
                   lambda g: (_zeros(g, _shape(input)),))
        return _to_out(res, out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"{name.capitalize()} of each element (the gradient is zero)."
    return op


floor = _rounding("floor", np.floor, "floor_vml_cpu")
ceil = _rounding("ceil", np.ceil, "ceil_vml_cpu")
trunc = _rounding("trunc", np.trunc, "trunc_vml_cpu")
fix = trunc


def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """Round half to even (``round(2.5) == 2``), optionally to ``decimals`` decimal places."""
    x = input._data
    if x.dtype.kind == "b" or (decimals != 0 and x.dtype.kind in "iu"):
        raise _not_implemented("round_cpu", input.dtype)
    if x.dtype.kind in "iu":
        arr = x.copy()
    elif decimals == 0:
        arr = np.rint(x)
    else:
        # Same steps as torch: scale by 10**|decimals| in the tensor's dtype, round, unscale.
        scale = x.dtype.type(10.0 ** builtins.abs(decimals))
        with _quiet():
            arr = np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale
    res = wrap(arr, input._device)
    if needs_grad(input):
        record("RoundBackward0" if decimals == 0 else "RoundBackward1", res, (input,),
               lambda g: (_zeros(g, _shape(input)),))
    return _to_out(res, out)


def frac(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``x - trunc(x)``: the fractional part, with the sign of x."""
    x = input._data
    if x.dtype.kind not in "f":
        raise _not_implemented("frac_cpu", input.dtype)
    with _quiet():  # inf - inf is nan, silently as in torch
        y = x - np.trunc(x)
    return _to_out(_record_unary(_FRAC, wrap(y, input._device), input), out)


_FRAC = Rule("FracBackward0", lambda x: x - np.trunc(x), GRAD)


# ------------------------------------------------------------------------ clamp
def clamp(input: Tensor, min: Any = None, max: Any = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """``min(max(x, min), max)``: bounds are numbers or tensors; when ``min > max`` all become max.

    The result dtype follows type promotion (an int tensor clamped at 1.5 becomes float).
    """
    return _clamp(input, min, max, out, "ClampBackward1")


def _clamp(input: Tensor, min: Any, max: Any, out: Tensor | None,  # noqa: A002
           name: str) -> Tensor:
    """``clamp``; with number bounds, its node is called ``name`` (torch's clamp_min is one)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if not all(b is None or isinstance(b, Tensor) for b in (min, max)):
            raise TypeError("clamp() received an invalid combination of arguments: min and max "
                            "must both be Tensors or both be numbers")
        return _to_out(_clamp_tensors(input, min, max), out)
    operands = [input] + [b for b in (min, max) if b is not None]
    dt = result_type(*operands)
    x = input._data if input._data.dtype == dt.np else input._data.astype(dt.np)
    bounds = (None if min is None else checked_scalar(min, dt),  # out of range: an error, as
              None if max is None else checked_scalar(max, dt))  # in torch
    res = wrap(_clip(x, bounds), input._device)
    if needs_grad(input):
        record_rule(_CLAMP, res, input, bounds,
                    not _SAVED_HOOKS and x is input._data and _plain_array(input) is not None,
                    name)
    return _to_out(res, out)


def _clip(x: Any, bounds: tuple) -> Any:
    """``x`` clamped to ``bounds = (lo, hi)``; either may be None (no bound on that side). On a
    tie the result is ``x`` (-0.0 clamped at 0.0 stays -0.0), as in torch: NumPy's
    maximum/minimum return their second operand then, and ``clip`` returns ``x``."""
    lo, hi = bounds
    return np.minimum(hi, x) if lo is None else np.maximum(lo, x) if hi is None else \
        x.clip(lo, hi)


def _inside(x: Any, bounds: tuple) -> Any:
    """1 where ``x`` lies within ``bounds`` (boundaries included), else 0: clamp's derivative,
    an array for an array, a constant tensor for a tensor."""
    lo, hi = bounds
    xs = x._data if isinstance(x, Tensor) else x
    keep = xs <= hi if lo is None else xs >= lo if hi is None else (xs >= lo) & (xs <= hi)
    return _const(keep, x) if isinstance(x, Tensor) else keep.astype(xs.dtype)


# clamp with number bounds: the rule keeps the bounds as its constant (clamp_min and clamp_max
# record it under their own names)
_CLAMP = Rule("ClampBackward1", _clip, lambda g, x, bounds, y: g * _inside(x, bounds), reads=_X)


def _clamp_tensors(input: Tensor, min: Tensor | None, max: Tensor | None) -> Tensor:  # noqa: A002
    """clamp with tensor bounds (broadcast against input); each bound gets the gradient where it
    is the answer."""
    bounds = [b for b in (min, max) if b is not None]
    dev = check_same_device(input, *bounds)
    dt = result_type(input, *bounds)
    x = input._data.astype(dt.np, copy=False)
    lo = None if min is None else array_on(min, dev).astype(dt.np, copy=False)
    hi = None if max is None else array_on(max, dev).astype(dt.np, copy=False)
    arr = x
    if lo is not None:
        arr = _apply(np.maximum, arr, lo)
    if hi is not None:
        arr = _apply(np.minimum, arr, hi)
    res = wrap(arr, dev)
    if needs_grad(input, *bounds):
        def backward(g: Tensor) -> tuple:
            xs = input._data
            if lo is None:
                keep = xs <= hi
            elif hi is None:
                keep = xs >= lo
            else:
                keep = _apply(np.logical_and, xs >= lo, xs <= hi)
            g_in = g * _const(keep, g)
            g_lo = g_hi = None
            if _rg(min):  # min wins where x < min (and min < max when both are given)
                m = (xs < lo) if hi is None else (xs < lo) & (lo < hi)
                g_lo = _grad_for(g * _const(m, g), min)
            if _rg(max):  # max wins where x > max, and everywhere max < min
                m = (xs > hi) if lo is None else (xs > hi) | (hi < lo)
                g_hi = _grad_for(g * _const(m, g), max)
            return (_grad_for(g_in, input), g_lo, g_hi)
        record("ClampBackward0", res, (input, min, max), backward, saved=(input, *bounds))
    return res


def clamp_min(input: Tensor, min: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)``."""
    return _clamp(input, min, None, out, "ClampMinBackward0")


def clamp_max(input: Tensor, max: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``."""
    return _clamp(input, None, max, out, "ClampMaxBackward0")


clip = clamp


# ------------------------------------------------------------------------ lerp, addcmul, addcdiv
def _lerp_arrays(xp: Any, a: Any, b: Any, w: Any) -> Any:
    """torch's vectorised CPU kernel: ``fma(w, b - a, a)`` where ``|w| < 0.5``, else
    ``fma(w - 1, b - a, b)``, in float32 for the half types. A fused multiply-add rounds once;
    the float64 product of float32 numbers is exact, so computing in float64 and rounding once
    gives the same numbers (float64 itself rounds the product and the sum separately)."""
    op = a.dtype if a.dtype.itemsize >= 4 else np.dtype(np.float32)  # torch's opmath type
    wide = np.dtype(np.float64) if op.itemsize == 4 else op
    a, b, w = a.astype(op, copy=False), b.astype(op, copy=False), xp.asarray(w, dtype=op)
    small = xp.abs(w) < 0.5
    coeff = xp.where(small, w, w - op.type(1)).astype(wide, copy=False)
    base = xp.where(small, a, b).astype(wide, copy=False)
    return (coeff * (b - a).astype(wide, copy=False) + base).astype(op, copy=False)


def lerp(input: Tensor, end: Tensor, weight: Any, *, out: Tensor | None = None) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)`` (weight a number or a tensor).

    Like torch, the formula switches to ``end - (end - input) * (1 - weight)`` for |weight| >= 0.5,
    so ``weight == 1`` returns ``end`` exactly (each as one fused multiply-add, see below).
    """
    _require_tensor("lerp", "end", 2, end)
    if input.dtype._cat < D._FLOAT:
        raise _not_implemented("lerp_kernel_scalar", input.dtype)
    if end.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {_np_name(input.dtype)} for `end` but got dtype "
                           f"{_np_name(end.dtype)}")
    w_is_tensor = isinstance(weight, Tensor)
    if w_is_tensor and weight.ndim and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected dtype {_np_name(input.dtype)} for `weight` but got dtype "
                           f"{_np_name(weight.dtype)}")
    dev = check_same_device(input, end, *([weight] if w_is_tensor else []))
    a, b = input._data, array_on(end, dev)
    w = array_on(weight, dev).astype(a.dtype, copy=False) if w_is_tensor else \
        checked_scalar(weight, input.dtype)
    shape = a.shape
    for other in (b.shape, w.shape) if w_is_tensor else (b.shape,):  # torch's error: input first
        if other != shape:
            try:
                shape = np.broadcast_shapes(shape, other)
            except ValueError:
                broadcast_error(shape, other)
    with quiet():  # a number weight enters the kernel in its compute type, not rounded to a's
        arr = _lerp_arrays(xp_for(dev), a, b, w if w_is_tensor else weight).astype(a.dtype,
                                                                                    copy=False)
    res = wrap(pointwise_layout(arr, a, b, w), dev)
    if needs_grad(input, end, weight):
        # saved like torch: the weight for input's and end's gradients, both ends for weight's
        record("LerpBackward1" if w_is_tensor else "LerpBackward0", res, (input, end, weight),
               lambda g: (_grad_for(g * (1 - weight), input) if _rg(input) else None,
                          _grad_for(g * weight, end) if _rg(end) else None,
                          _grad_for(g * (end - input), weight) if _rg(weight) else None),
               saved=_saved(weight if _rg(input) or _rg(end) else None,
                            *((input, end) if _rg(weight) else ())))
    return _to_out(res, out)


def _np_name(d: D.dtype) -> str:
    """The C type name torch uses in lerp's dtype errors (float, double, …)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half"}.get(d.name, d.name)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1,
            out: Tensor | None = None) -> Tensor:
    """``input + value * tensor1 * tensor2`` (the value is cast to the result dtype)."""
    prod = mul(tensor1, tensor2)
    res = _add(input, prod, _cast_value(value, result_type(input, prod)), None, "AddcmulBackward0")
    return _to_out(res, out)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1,
            out: Tensor | None = None) -> Tensor:
    """``input + value * tensor1 / tensor2``; integer division is refused, as in torch."""
    if tensor1.dtype._cat < D._FLOAT and tensor2.dtype._cat < D._FLOAT:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future "
                           "release addcdiv will perform a true division of tensor1 and tensor2. "
                           "The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float "
                           "inputs. The future addcdiv behavior is just the latter implementation: "
                           "(input + value * tensor1 / tensor2), for all dtypes.")
    quot = div(tensor1, tensor2)
    res = _add(input, quot, _cast_value(value, result_type(input, quot)), None, "AddcdivBackward0")
    return _to_out(res, out)


def _cast_value(value: Any, dt: D.dtype) -> Any:
    if isinstance(value, Tensor):
        value = value.item()
    return checked_scalar(value, dt)


# ------------------------------------------------------------------------ nan_to_num
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """Replace nan, +inf and -inf (by default with 0 and the dtype's largest/smallest finite)."""
    x = input._data
    if x.dtype.kind not in "fc":
        return _to_out(wrap(x.copy(), input._device), out)
    arr = xp_for(input._device).nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
    res = wrap(arr, input._device)
    if needs_grad(input):
        record("NanToNumBackward0", res, (input,),
               lambda g: (g * _const(np.isfinite(input._data), g),), saved=(input,))
    return _to_out(res, out)


# ------------------------------------------------------------------------ bitwise and logical
def _integral_pair(name: str, input: Any, other: Any) -> tuple:
    a, b, dev, dt = binary(input, other)
    if dt._cat > D._INT or (dt is D.bool and "shift" in name):
        raise _not_implemented(f"{name}_cpu", dt)
    return a, b, dev


def _bitwise(name: str, ufunc: Any, doc: str) -> Callable:
    def op(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
        a, b, dev = _integral_pair(name, input, other)
        return _to_out(wrap(_apply(ufunc, a, b), dev), out)

    op.__name__ = op.__qualname__ = f"bitwise_{name}" if "shift" not in name else name
    op.__doc__ = doc
    return op


bitwise_and = _bitwise("and", np.bitwise_and, "Bitwise AND of integer or bool tensors (``&``).")
bitwise_or = _bitwise("or", np.bitwise_or, "Bitwise OR of integer or bool tensors (``|``).")
bitwise_xor = _bitwise("xor", np.bitwise_xor, "Bitwise XOR of integer or bool tensors (``^``).")
bitwise_left_shift = _bitwise("bitwise_left_shift", np.left_shift, "``input << other``.")
bitwise_right_shift = _bitwise("bitwise_right_shift", np.right_shift, "``input >> other``.")


def bitwise_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Bitwise NOT (``~``): flips bools, ``~x == -x - 1`` for integers."""
    if input.dtype._cat > D._INT:
        raise _not_implemented("bitwise_not_cpu", input.dtype)
    return _to_out(wrap(np.invert(input._data), input._device), out)


def _logical(name: str, ufunc: Any) -> Callable:
    def op(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
        _require_tensor(f"logical_{name}", "other", 2, other)
        dev = check_same_device(input, other)
        return _to_out(wrap(_apply(ufunc, array_on(input, dev), array_on(other, dev)), dev), out)

    op.__name__ = op.__qualname__ = f"logical_{name}"
    op.__doc__ = f"Element-wise logical {name.upper()} (nonzero is True); returns a bool tensor."
    return op


logical_and = _logical("and", np.logical_and)
logical_or = _logical("or", np.logical_or)
logical_xor = _logical("xor", np.logical_xor)


def logical_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``x == 0`` as a bool tensor (``out=`` may have another dtype)."""
    return _to_out(wrap(np.logical_not(input._data), input._device), out)


def _ufunc_into(self: Tensor, ufunc: Any, a: Any, b: Any, dt: D.dtype) -> Tensor:
    """The fast path of an in-place op without autograd: the ufunc writes straight into self."""
    _check_out_dtype(dt, self.dtype)
    token = FP_STATE.set(FP_IGNORE)
    try:
        ufunc(a, b, out=self._data)
    except ValueError:  # the broadcast shape is not self's shape (or there is none)
        sa, sb = np.shape(a), np.shape(b)
        try:
            shape = np.broadcast_shapes(sa, sb)
        except ValueError:
            broadcast_error(sa, sb)
        _check_shape(self, shape)
        raise
    finally:
        FP_STATE.reset(token)
    self._bump()
    return self


def _inplace_backward(rule: Rule, other: Any, alpha: Any = 1) -> Callable:
    """The backward of ``self = rule(self, alpha * other)`` done in place, from the rule's own
    derivatives (which may read ``other``, never ``self``'s old value: it is gone)."""
    d_self, d_other = rule.grads

    def backward(g: Tensor) -> tuple:
        g_other = None
        if _rg(other):
            g_other = d_other(g, None, other, None)
            g_other = _grad_for(g_other * alpha if alpha != 1 else g_other, other)
        return d_self(g, None, other, None), g_other

    return backward


@tensor_method()
def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    check_no_overlap(self)
    a, b, dev, dt = binary(self, other)
    if alpha != 1:
        alpha = _check_alpha(alpha, dt)
        b = _apply(np.multiply, b, alpha)  # overflow: inf, silently
    if not needs_grad(self, other):
        return _ufunc_into(self, np.add, a, b, dt)
    return inplace(self, _apply(np.add, a, b), _ADD.name, (self, other),
                   _inplace_backward(_ADD, other, alpha))


@tensor_method()
def sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    check_no_overlap(self)
    _check_bool_sub(self, other)
    a, b, dev, dt = binary(self, other)
    if alpha != 1:
        alpha = _check_alpha(alpha, dt)
        b = _apply(np.multiply, b, alpha)  # overflow: inf, silently
    if not needs_grad(self, other):
        return _ufunc_into(self, np.subtract, a, b, dt)
    return inplace(self, _apply(np.subtract, a, b), _SUB.name, (self, other),
                   _inplace_backward(_SUB, other, alpha))


@tensor_method()
def mul_(self: Tensor, other: Any) -> Tensor:
    check_no_overlap(self)
    a, b, dev, dt = binary(self, other)
    if not needs_grad(self, other):
        return _ufunc_into(self, np.multiply, a, b, dt)
    if not _rg(other):  # self's old value is not needed: no copy
        return inplace(self, _apply(np.multiply, a, b), _MUL.name, (self, other),
                       _inplace_backward(_MUL, other), saved=_saved(other))
    # other's gradient is self's old value: mul on a snapshot of self that carries its history
    # (so that gradient stays differentiable), then self takes the result and the node.
    return _mul_inplace(self, other)


_float_power_inplace = _inplace_version(float_power)
_mul_inplace = _inplace_version(mul)


def _float_power_(self: Tensor, exponent: Any) -> Tensor:
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_cap(self.dtype)} but the "
                           "operation's result requires dtype Double")
    return _float_power_inplace(self, exponent)


relu_ = _inplace_version(relu)


# ------------------------------------------------------------------------ the rule table
#: Every element-wise primitive whose derivative is a ``Rule``, by torch's op name: its node's
#: name, forward and derivatives are ``RULES[op].name``, ``.forward`` and ``.grads``.
RULES: dict[str, Rule] = {"add": _ADD, "sub": _SUB, "mul": _MUL, "div": _DIV, "neg": _NEG,
                          "pow": _POW, "abs": _ABS, "sign": _SIGN, "frac": _FRAC,
                          "clamp": _CLAMP, **_UNARY}


# ------------------------------------------------------------------------ methods
_METHODS: dict[str, Callable] = {
    "add": add, "sub": sub, "subtract": sub, "mul": mul, "multiply": mul, "neg": neg,
    "negative": neg, "div": div, "divide": div, "true_divide": div, "floor_divide": floor_divide,
    "remainder": remainder, "fmod": fmod, "pow": pow, "float_power": float_power,
    "square": square, "sqrt": sqrt, "rsqrt": rsqrt, "reciprocal": reciprocal, "exp": exp,
    "exp2": exp2, "expm1": expm1, "log": log, "log2": log2, "log10": log10, "log1p": log1p,
    "sin": sin, "cos": cos, "tan": tan, "asin": asin, "acos": acos, "atan": atan,
    "arcsin": asin, "arccos": acos, "arctan": atan, "sinh": sinh, "cosh": cosh, "tanh": tanh,
    "asinh": asinh, "acosh": acosh, "atanh": atanh, "arcsinh": asinh, "arccosh": acosh,
    "arctanh": atanh, "atan2": atan2, "arctan2": atan2, "hypot": hypot, "sigmoid": sigmoid,
    "relu": relu, "logit": logit, "erf": erf, "abs": abs, "absolute": abs, "sign": sign,
    "sgn": sgn, "floor": floor, "ceil": ceil, "round": round, "trunc": trunc, "fix": trunc,
    "frac": frac, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv, "nan_to_num": nan_to_num,
    "bitwise_and": bitwise_and, "bitwise_or": bitwise_or, "bitwise_xor": bitwise_xor,
    "bitwise_not": bitwise_not, "bitwise_left_shift": bitwise_left_shift,
    "bitwise_right_shift": bitwise_right_shift, "logical_and": logical_and,
    "logical_or": logical_or, "logical_xor": logical_xor, "logical_not": logical_not,
}
# add_, sub_ and mul_ are written out above; every other op gets a generated in-place version.
_NO_INPLACE = {"add", "sub", "subtract", "mul", "multiply", "float_power"}

for _name, _fn in _METHODS.items():
    tensor_method(_name)(_fn)
    if _name not in _NO_INPLACE:
        tensor_method(_name + "_")(_inplace_version(_fn))
tensor_method("subtract_")(sub_)
tensor_method("multiply_")(mul_)
tensor_method("float_power_")(_float_power_)


# ------------------------------------------------------------------------ operators
def _invert(self: Tensor) -> Tensor:
    if self.dtype._cat > D._INT:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(self)


def _binary_operators(name: str, fn: Callable, inplace: str | None) -> None:
    """``a <op> b``, ``b <op> a`` (reflected) and ``a <op>= b`` (in place) for one operator."""
    setattr(Tensor, f"__{name}__", fn)  # fn(self, other): no extra frame on the hot path
    setattr(Tensor, f"__r{name}__", lambda self, other: fn(other, self))
    if inplace is not None:
        setattr(Tensor, f"__i{name}__", lambda self, other: getattr(self, inplace)(other))


for _name, _fn, _inplace in [
        ("add", add, "add_"), ("sub", sub, "sub_"), ("mul", mul, "mul_"),
        ("truediv", div, "div_"), ("floordiv", floor_divide, "floor_divide_"),
        ("mod", remainder, "remainder_"), ("pow", pow, "pow_"),
        ("and", bitwise_and, "bitwise_and_"), ("or", bitwise_or, "bitwise_or_"),
        ("xor", bitwise_xor, "bitwise_xor_"), ("lshift", bitwise_left_shift, "bitwise_left_shift_"),
        ("rshift", bitwise_right_shift, "bitwise_right_shift_")]:
    _binary_operators(_name, _fn, _inplace)
Tensor.__neg__ = lambda self: neg(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: abs(self)
Tensor.__invert__ = _invert


# ------------------------------------------------------------------------ rsub, signbit
def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``: subtraction with the operands swapped (``1 - x`` runs this)."""
    return _sub(other, input, alpha, None,
                "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1")


Tensor.__rsub__ = lambda self, other: rsub(self, other)


def signbit(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """True where the sign bit is set: negative numbers, and also -0.0 and negative NaNs."""
    x = input._data
    if x.dtype.kind == "c":
        raise _not_implemented("signbit_cpu", input.dtype)
    if x.dtype.kind in "bu":
        arr = xp_for(input._device).zeros(x.shape, dtype=np.bool_)
    else:
        arr = np.signbit(x) if x.dtype.kind == "f" else x < 0
    return _to_out(wrap(arr, input._device), out)


tensor_method("signbit")(signbit)
