"""Element-wise operations: arithmetic, math functions, rounding, clamping, bitwise and logical ops.

The pattern every op follows (read ``add`` first):

1. ``binary`` (or ``_floating`` for one operand) turns arguments into backend arrays (device
   check, torch's type promotion), 2. one NumPy/CuPy call computes the result, 3. ``wrap`` makes
   the Tensor, 4. if ``needs_grad``, ``record`` attaches a backward closure written with mytorch
   ops (so it can itself be differentiated) that returns one gradient per input.

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
from ..autograd.graph import SavedOutput, mask_grad, needs_grad, record, record_lean, sum_to
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


# ------------------------------------------------------------------------ the lean path
# Most element-wise calls of a training loop are the plain case: float tensors of one shape and
# dtype in host memory (or a tensor and a Python number), no ``out=``, no saved-tensor hooks. For
# them an op skips the general argument handling (``binary``: devices, promotion, broadcasting,
# layout), and its backward, in a plain ``backward()`` (grad mode off while it runs), applies its
# formula to the bare arrays: the same NumPy calls, without making a tensor op of every term.
# Anything else (another device, dtype promotion, broadcasting, a strided layout, ``out=``,
# saved-tensor hooks, ``create_graph=True``) takes the general path, which stays the reference.
_LEAN_INT = 1 << 53  # a Python int up to this converts to a float dtype exactly as torch's does
_F16, _F32, _F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def _lean_array(x: Tensor) -> Any:
    """``x``'s array if ``x`` may take the lean path (a float array in host memory laid out in
    row-major order), else None."""
    arr = x._data
    dt = arr.dtype
    if type(arr) is np.ndarray and (dt is _F32 or dt is _F64 or dt is _F16) and (
            arr.ndim < 2 or arr.flags.c_contiguous and arr.size):  # (NumPy calls any empty
        return arr                                                 # array contiguous)
    return None


def _lean(ufunc: Any, input: Any, other: Any, name: str, run: Callable,
          saves: int = 0) -> Tensor | None:
    """``ufunc(input, other)`` as a new tensor, its node recorded, when both operands allow the
    lean path (see above); None otherwise, and the op takes its general path.

    ``run(node, grad)`` is the node's backward (``_mul_run``...). ``saves``: which operands it reads,
    for the in-place checks: 0 none, ``_CROSSED`` (a product: each one's gradient needs the other)
    or ``_QUOTIENT`` (the divisor, and the dividend if the divisor needs a gradient).
    """
    if _SAVED_HOOKS:
        return None
    if isinstance(input, Tensor):
        a = input._data  # (``_lean_array``, inline: this runs for every element-wise op)
        dt = a.dtype
        if type(a) is not np.ndarray or not (dt is _F32 or dt is _F64 or dt is _F16) or (
                a.ndim > 1 and not (a.flags.c_contiguous and a.size)):
            return None
        if isinstance(other, Tensor):
            b = other._data
            if type(b) is not np.ndarray or b.dtype is not a.dtype or b.shape != a.shape or (
                    b.ndim > 1 and not b.flags.c_contiguous):
                return None
        elif type(other) is float or (type(other) is int and -_LEAN_INT < other < _LEAN_INT):
            b = other  # becomes a scalar of a's dtype below
        else:
            return None
        dev = input._device
    elif isinstance(other, Tensor):
        b = _lean_array(other)
        if b is None:
            return None
        if type(input) is float or (type(input) is int and -_LEAN_INT < input < _LEAN_INT):
            a = input
        else:
            return None
        dev = other._device
    else:
        return None
    token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch (``quiet``)
    try:  # a number is cast like a C cast (1e39 in float32 is inf), as ``binary`` does
        if a.__class__ is not np.ndarray:
            a = b.dtype.type(a)
        elif b.__class__ is not np.ndarray:
            b = a.dtype.type(b)
        res = wrap(ufunc(a, b), dev)
    finally:
        FP_STATE.reset(token)
    if STATE.enabled:
        rg_a = isinstance(input, Tensor) and input._requires_grad
        rg_b = isinstance(other, Tensor) and other._requires_grad
        if rg_a or rg_b:
            if saves == _CROSSED:   # what torch saves: only what a wanted gradient reads
                saved = ((other, input) if rg_b else (other,)) if rg_a and isinstance(other, Tensor) \
                    else ((input,) if rg_b and isinstance(input, Tensor) else ())
            elif saves == _QUOTIENT:
                saved = (other, input) if rg_b and isinstance(input, Tensor) else \
                    ((other,) if isinstance(other, Tensor) else ())
            else:
                saved = ()
            record_lean(name, res, (input, other), run, input if saves else None,
                        other if saves else None, rg_a, rg_b, saved)
    return res


_CROSSED, _QUOTIENT = 1, 2


def _value(x: Any) -> Any:
    """What a bare-array backward multiplies by: a tensor's array, or the number itself."""
    return x._data if isinstance(x, Tensor) else x


# A lean node's backward works on bare arrays when the pass is *plain*: grad mode off (nothing to
# record) and a gradient of the op's dtype (nothing to cast). Each ``_*_run`` tests that inline,
# ``STATE.enabled or g._data.dtype is not node.dtype`` meaning "not plain": it runs once per node.


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


def _add_run(node: Any, g: Tensor) -> tuple:
    """The backward of a lean add (a ``LeanNode``'s ``run``): ``g`` itself for each operand, as
    the general path's ``_grad_for`` gives when nothing was broadcast or cast."""
    if g._data.dtype is not node.dtype:
        g = g.to(D._BY_NP[node.dtype])
    return (g if node.rg_input else None), (g if node.rg_other else None)


def add(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other`` with broadcasting and torch's type promotion."""
    if out is None and alpha == 1 and alpha.__class__ is int:
        res = _lean(np.add, input, other, "AddBackward0", _add_run)
        if res is not None:
            return res
    if isinstance(other, Tensor) and other.layout is not strided:  # dense + sparse (mytorch/sparse/)
        return layout_op("radd", other, input, alpha=alpha, out=out)
    a, b, dev, dt = binary(input, other)
    if alpha != 1:
        alpha = _check_alpha(alpha, dt)
        b = _apply(np.multiply, b, alpha)  # overflow: inf, silently
    res = wrap(_apply(np.add, a, b), dev)
    if needs_grad(input, other):
        record("AddBackward0", res, (input, other),
               lambda g: (_grad_for(g, input), _grad_for(g * alpha if alpha != 1 else g, other)))
    return _to_out(res, out)


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


def _sub_run(node: Any, g: Tensor) -> tuple:
    """The backward of a lean sub: ``g`` and ``-g``."""
    if g._data.dtype is not node.dtype:
        g = g.to(D._BY_NP[node.dtype])
    return (g if node.rg_input else None), (-g if node.rg_other else None)


def sub(input: Any, other: Any, *, alpha: Any = 1, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    if out is None and alpha == 1 and alpha.__class__ is int:  # (bools never take the lean path)
        res = _lean(np.subtract, input, other, "SubBackward0", _sub_run)
        if res is not None:
            return res
    _check_bool_sub(input, other)
    a, b, dev, dt = binary(input, other)
    if alpha != 1:
        alpha = _check_alpha(alpha, dt)
        b = _apply(np.multiply, b, alpha)  # overflow: inf, silently
    res = wrap(_apply(np.subtract, a, b), dev)
    if needs_grad(input, other):
        record("SubBackward0", res, (input, other),
               lambda g: (_grad_for(g, input), _grad_for(-g * alpha if alpha != 1 else -g, other)))
    return _to_out(res, out)


def _mul_grads(g: Tensor, input: Any, other: Any) -> tuple:
    return (_grad_for(g * other, input) if _rg(input) else None,
            _grad_for(g * input, other) if _rg(other) else None)


def _mul_run(node: Any, g: Tensor) -> tuple:
    """The backward of a lean product: ``g * other`` and ``g * input``, on the bare arrays in a
    plain pass (see the note above), else with mytorch ops as the general path."""
    a, b = node.input, node.other
    if STATE.enabled or g._data.dtype is not node.dtype:  # not a plain pass (see above)
        return _mul_grads(g, a, b)
    arr, dev = g._data, g._device
    token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in the forward
    try:
        ga = wrap(arr * (b._data if isinstance(b, Tensor) else b), dev) if node.rg_input else None
        gb = wrap(arr * (a._data if isinstance(a, Tensor) else a), dev) if node.rg_other else None
    finally:
        FP_STATE.reset(token)
    return ga, gb


def mul(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Element-wise product."""
    if out is None:
        res = _lean(np.multiply, input, other, "MulBackward0", _mul_run, _CROSSED)
        if res is not None:
            return res
    a, b, dev, dt = binary(input, other)
    res = wrap(_apply(np.multiply, a, b), dev)
    if needs_grad(input, other):
        record("MulBackward0", res, (input, other), lambda g: _mul_grads(g, input, other),
               saved=_crossed(input, other))
    return _to_out(res, out)


def neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``-input``; an error for bool tensors (use ``~`` / ``logical_not`` to flip a mask)."""
    if input.dtype is D.bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    res = wrap(-input._data, input._device)
    if needs_grad(input):
        record("NegBackward0", res, (input,), lambda g: (-g,))
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
    if out is None:
        res = _lean(np.true_divide, input, other, "DivBackward0", _div_run, _QUOTIENT)
        if res is not None:
            return res
    a, b, dev, dt = _floating_pair(input, other)
    with _quiet():
        res = wrap(_apply(np.true_divide, a, b), dev)
    if needs_grad(input, other):
        record("DivBackward0", res, (input, other), lambda g: _div_grads(g, input, other),
               saved=_saved(other, input if _rg(other) else None))
    return _to_out(res, out)


# d(a/b)/db = -a/b²: written with the inputs, so backward keeps no reference to the result
def _div_grads(g: Tensor, input: Any, other: Any) -> tuple:
    return (_grad_for(g / other, input) if _rg(input) else None,
            _grad_for(-g * input / (other * other), other) if _rg(other) else None)


def _div_run(node: Any, g: Tensor) -> tuple:
    """The backward of a lean quotient (the general formula on bare arrays, see ``_mul_run``)."""
    if STATE.enabled or g._data.dtype is not node.dtype:  # not a plain pass (see above)
        return _div_grads(g, node.input, node.other)
    arr, dev, b = g._data, g._device, _value(node.other)
    token = FP_STATE.set(FP_IGNORE)
    try:
        ga = wrap(arr / b, dev) if node.rg_input else None
        gb = wrap(-arr * _value(node.input) / (b * b), dev) if node.rg_other else None
    finally:
        FP_STATE.reset(token)
    return ga, gb


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


def remainder(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """Python's ``%``: the result has the sign of the divisor (``-5 % 3 == 1``)."""
    return _modulo("remainder", np.remainder, "floor", input, other, out)


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


def _pow_grad(g: Any, x: Any, n: float, power: Callable) -> Any:
    """d(x ** n)/dx = n * x ** (n - 1), times ``g`` (as torch groups it); ``power`` evaluates the
    inner power: ``pow`` on tensors, ``_pow_value`` on bare arrays."""
    return g * (n * power(x, n - 1))


def _pow_run(node: Any, g: Tensor) -> tuple:
    """The backward of a lean ``t ** n``: the rule on bare arrays in a plain pass (see
    ``_mul_run``), else with mytorch ops (differentiable again)."""
    x, n = node.input, node.other
    if n == 0:
        return (_zeros(g, x._data.shape),)
    if STATE.enabled or g._data.dtype is not node.dtype:
        return (_pow_grad(g, x, n, pow),)
    token = FP_STATE.set(FP_IGNORE)
    try:
        return (wrap(_pow_grad(g._data, x._data, n, _pow_value), g._device),)
    finally:
        FP_STATE.reset(token)


def _pow_lean(input: Tensor, n: float) -> Tensor | None:
    """``input ** n`` for a float tensor in host memory and a Python number: no argument handling,
    the result's dtype is the input's. None when the general path must take it."""
    a = input._data
    dt = a.dtype
    if _SAVED_HOOKS or type(a) is not np.ndarray or not (dt is _F32 or dt is _F64 or dt is _F16) \
            or not -_LEAN_INT < n < _LEAN_INT:
        return None
    token = FP_STATE.set(FP_IGNORE)
    try:
        res = wrap(_pow_value(a, n), input._device)
    finally:
        FP_STATE.reset(token)
    if STATE.enabled and input._requires_grad:
        record_lean("PowBackward0", res, (input,), _pow_run, input, n, True, False,
                    (input,) if n != 0 else ())
    return res


def pow(input: Any, exponent: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """``input ** exponent``; either may be a number (``2 ** t`` works through ``__rpow__``)."""
    if out is None and isinstance(input, Tensor) and type(exponent) in (int, float):
        res = _pow_lean(input, exponent)
        if res is not None:
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
        _record_pow(res, input, exponent)
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


def _record_pow(res: Tensor, base: Any, exponent: Any) -> None:
    if not isinstance(exponent, Tensor):                       # t ** 2
        def backward(g: Tensor) -> tuple:
            if exponent == 0:
                return (_zeros(g, _shape(base)),)
            return (_pow_grad(g, base, exponent, pow),)
        record("PowBackward0", res, (base,), backward, saved=(base,))
        return

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
def _unary_float(name: str, compute: Callable, node: str, derivative: Callable,
                 uses_result: bool, doc: str, on_arrays: bool = False) -> Callable:
    """Build ``torch.<name>``: a float function of one tensor (ints and bools give a float).

    ``derivative(g, x, y)`` maps the output gradient ``g`` to the input's, given the input ``x``
    and the result ``y``; ``uses_result`` says which of them backward keeps (and checks for
    in-place changes). ``on_arrays``: the formula uses arithmetic operators only, so it works on
    bare arrays too, and a lean op's plain backward runs it on them (see "the lean path").
    """
    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch (``quiet``)
        try:
            res = wrap(compute(_floating(input)), input._device)
        finally:
            FP_STATE.reset(token)
        if STATE.enabled and input._requires_grad:  # (``needs_grad``, inline: a hot path)
            # the backward keeps the result's array (``SavedOutput``), never ``res`` itself
            kept = SavedOutput(res) if uses_result else input
            if on_arrays and not _SAVED_HOOKS and _lean_array(input) is not None:
                record_lean(node, res, (input,), _unary_run, kept, derivative, uses_result,
                            False, (kept,))
            elif uses_result:
                record(node, res, (input,), lambda g: (derivative(g, None, kept()),), saved=(kept,))
            else:
                record(node, res, (input,), lambda g: (derivative(g, input, None),), saved=(kept,))
        return res if out is None else _to_out(res, out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


def _unary_run(node: Any, g: Tensor) -> tuple:
    """The backward of a lean unary op (a ``LeanNode``: ``input`` holds what it kept, the result
    or the input, ``other`` the derivative, ``rg_input`` whether it kept the result): the
    derivative on bare arrays in a plain backward whose gradient has the op's dtype, else on
    tensors, as the general path's closure does."""
    arr, derivative, kept = g._data, node.other, node.input
    if STATE.enabled or g._data.dtype is not node.dtype:  # not a plain pass (see above)
        return (derivative(g, None, kept()) if node.rg_input else derivative(g, kept, None),)
    token = FP_STATE.set(FP_IGNORE)
    try:
        d = derivative(arr, None, kept._data) if node.rg_input else \
            derivative(arr, kept._data, None)
    finally:
        FP_STATE.reset(token)
    return (wrap(d, g._device),)


def _sigmoid_array(x: Any) -> Any:
    return np.reciprocal(np.exp(np.negative(x)) + x.dtype.type(1))


_LN2, _LN10, _TWO_OVER_SQRT_PI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)

exp = _unary_float("exp", np.exp, "ExpBackward0", lambda g, x, y: g * y, True, "e ** x", on_arrays=True)
exp2 = _unary_float("exp2", np.exp2, "Exp2Backward0", lambda g, x, y: g * y * _LN2, True, "2 ** x",
                    on_arrays=True)
expm1 = _unary_float("expm1", np.expm1, "Expm1Backward0", lambda g, x, y: g * (y + 1), True,
                     "e ** x - 1, accurate for small x", on_arrays=True)
log = _unary_float("log", np.log, "LogBackward0", lambda g, x, y: g / x, False, "Natural log", on_arrays=True)
log2 = _unary_float("log2", np.log2, "Log2Backward0", lambda g, x, y: g / (x * _LN2), False,
                    "Base-2 logarithm", on_arrays=True)
log10 = _unary_float("log10", np.log10, "Log10Backward0", lambda g, x, y: g / (x * _LN10), False,
                     "Base-10 logarithm", on_arrays=True)
log1p = _unary_float("log1p", np.log1p, "Log1PBackward0", lambda g, x, y: g / (x + 1), False,
                     "log(1 + x), accurate for small x", on_arrays=True)
sqrt = _unary_float("sqrt", np.sqrt, "SqrtBackward0", lambda g, x, y: g / (2 * y), True,
                    "Square root (nan for negative inputs)", on_arrays=True)
rsqrt = _unary_float("rsqrt", lambda a: np.reciprocal(np.sqrt(a)), "RsqrtBackward0",
                     lambda g, x, y: -0.5 * g * y.pow(3), True, "1 / sqrt(x)")
reciprocal = _unary_float("reciprocal", np.reciprocal, "ReciprocalBackward0",
                          lambda g, x, y: -g * y * y, True, "1 / x (a float even for ints)", on_arrays=True)
sin = _unary_float("sin", np.sin, "SinBackward0", lambda g, x, y: g * x.cos(), False, "Sine")
cos = _unary_float("cos", np.cos, "CosBackward0", lambda g, x, y: -g * x.sin(), False, "Cosine")
tan = _unary_float("tan", np.tan, "TanBackward0", lambda g, x, y: g * (1 + y * y), True, "Tangent",
                   on_arrays=True)
asin = _unary_float("asin", np.arcsin, "AsinBackward0",
                    lambda g, x, y: g * (1 - x * x).rsqrt(), False, "Inverse sine")
acos = _unary_float("acos", np.arccos, "AcosBackward0",
                    lambda g, x, y: -g * (1 - x * x).rsqrt(), False, "Inverse cosine")
atan = _unary_float("atan", np.arctan, "AtanBackward0", lambda g, x, y: g / (1 + x * x), False,
                    "Inverse tangent", on_arrays=True)
sinh = _unary_float("sinh", np.sinh, "SinhBackward0", lambda g, x, y: g * x.cosh(), False,
                    "Hyperbolic sine")
cosh = _unary_float("cosh", np.cosh, "CoshBackward0", lambda g, x, y: g * x.sinh(), False,
                    "Hyperbolic cosine")
tanh = _unary_float("tanh", np.tanh, "TanhBackward0", lambda g, x, y: g * (1 - y * y), True,
                    "Hyperbolic tangent", on_arrays=True)
asinh = _unary_float("asinh", np.arcsinh, "AsinhBackward0",
                     lambda g, x, y: g * (x * x + 1).rsqrt(), False, "Inverse hyperbolic sine")
acosh = _unary_float("acosh", np.arccosh, "AcoshBackward0",
                     lambda g, x, y: g * (x * x - 1).rsqrt(), False, "Inverse hyperbolic cosine")
atanh = _unary_float("atanh", np.arctanh, "AtanhBackward0", lambda g, x, y: g / (1 - x * x), False,
                     "Inverse hyperbolic tangent", on_arrays=True)
sigmoid = _unary_float("sigmoid", _sigmoid_array, "SigmoidBackward0",
                       lambda g, x, y: g * y * (1 - y), True, "1 / (1 + e ** -x)", on_arrays=True)
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


erf = _unary_float("erf", _erf_array, "ErfBackward0",
                   lambda g, x, y: g * _TWO_OVER_SQRT_PI * (-x * x).exp(), False,
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
def abs(input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A001
    """``|x|``; its gradient at 0 is 0 (torch's choice of subgradient)."""
    if input.dtype is D.bool:
        raise _not_implemented("abs_cpu", D.bool)
    res = wrap(np.absolute(input._data), input._device)
    if needs_grad(input):
        record("AbsBackward0", res, (input,), lambda g: (g * input.sign(),), saved=(input,))
    return _to_out(res, out)


absolute = abs


def sign(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """-1, 0 or 1 with the input's dtype (0 for nan, like torch); its gradient is 0."""
    x = input._data
    if x.dtype.kind == "f":
        arr = np.sign(x)
        nan = np.isnan(arr)
        if nan.any():
            arr[nan] = 0
    elif x.dtype.kind == "b":
        arr = x.copy()
    else:
        arr = np.sign(x)
    res = wrap(arr, input._device)
    if needs_grad(input):
        record("SignBackward0", res, (input,), lambda g: (_zeros(g, _shape(input)),))
    return _to_out(res, out)


def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``x / |x|`` (0 at 0): the sign for real tensors, the unit phase for complex ones."""
    x = input._data
    if x.dtype.kind != "c":
        res = sign(input)
        if res.grad_fn is not None:
            res.grad_fn._name = "SgnBackward0"
        return _to_out(res, out)
    with _quiet():
        mag = np.absolute(x)
        arr = np.where(mag == 0, 0, x / mag)
    return _to_out(wrap(arr.astype(x.dtype), input._device), out)


def relu(input: Tensor) -> Tensor:
    """``max(x, 0)``, keeping the dtype; the gradient at 0 is 0."""
    if input.dtype is D.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    x = input._data
    res = wrap(np.maximum(x, x.dtype.type(0)), input._device)
    if needs_grad(input):
        r = SavedOutput(res)
        record("ReluBackward0", res, (input,),
               lambda g: (mask_grad("ThresholdBackwardBackward0", g, r.data > 0, r),),
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
    res = wrap(x - np.trunc(x), input._device)
    if needs_grad(input):
        record("FracBackward0", res, (input,), lambda g: (g,))
    return _to_out(res, out)


# ------------------------------------------------------------------------ clamp
def clamp(input: Tensor, min: Any = None, max: Any = None, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """``min(max(x, min), max)``: bounds are numbers or tensors; when ``min > max`` all become max.

    The result dtype follows type promotion (an int tensor clamped at 1.5 becomes float).
    """
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
    lo = None if min is None else checked_scalar(min, dt)  # out of range: error, as in torch
    hi = None if max is None else checked_scalar(max, dt)
    if lo is None:
        arr = np.minimum(x, hi)
    elif hi is None:
        arr = np.maximum(x, lo)
    else:
        arr = x.clip(lo, hi)
    res = wrap(arr, input._device)
    if needs_grad(input):
        def backward(g: Tensor) -> tuple:  # 1 inside [min, max] (boundaries included), else 0
            xs = input._data
            if lo is None:
                keep = xs <= hi
            elif hi is None:
                keep = xs >= lo
            else:
                keep = (xs >= lo) & (xs <= hi)
            return (g * _const(keep, g),)
        record("ClampBackward1", res, (input,), backward, saved=(input,))
    return _to_out(res, out)


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
    res = clamp(input, min=min, out=out)
    if res.grad_fn is not None and not isinstance(min, Tensor):
        res.grad_fn._name = "ClampMinBackward0"
    return res


def clamp_max(input: Tensor, max: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)``."""
    res = clamp(input, max=max, out=out)
    if res.grad_fn is not None and not isinstance(max, Tensor):
        res.grad_fn._name = "ClampMaxBackward0"
    return res


clip = clamp


# ------------------------------------------------------------------------ lerp, addcmul, addcdiv
def lerp(input: Tensor, end: Tensor, weight: Any, *, out: Tensor | None = None) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)`` (weight a number or a tensor).

    Like torch, the formula switches to ``end - (end - input) * (1 - weight)`` for weight >= 0.5,
    so ``weight == 1`` returns ``end`` exactly.
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
    diff = _apply(np.subtract, b, a)
    if w_is_tensor:
        low = _apply(np.add, a, w * diff)
        arr = xp_for(dev).where(w < 0.5, low, b - diff * (1 - w))
    else:
        arr = a + w * diff if weight < 0.5 else b - diff * (1 - w)
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
    res = add(input, prod, alpha=_cast_value(value, result_type(input, prod)))
    if res.grad_fn is not None:
        res.grad_fn._name = "AddcmulBackward0"
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
    res = add(input, quot, alpha=_cast_value(value, result_type(input, quot)))
    if res.grad_fn is not None:
        res.grad_fn._name = "AddcdivBackward0"
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


@tensor_method()
def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    check_no_overlap(self)
    a, b, dev, dt = binary(self, other)
    if alpha != 1:
        alpha = _check_alpha(alpha, dt)
        b = _apply(np.multiply, b, alpha)  # overflow: inf, silently
    if not needs_grad(self, other):
        return _ufunc_into(self, np.add, a, b, dt)
    res = _apply(np.add, a, b)
    return inplace(self, res, "AddBackward0", (self, other),
                   lambda g: (g, _grad_for(g * alpha if alpha != 1 else g, other)))


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
    res = _apply(np.subtract, a, b)
    return inplace(self, res, "SubBackward0", (self, other),
                   lambda g: (g, _grad_for(-g * alpha if alpha != 1 else -g, other)))


@tensor_method()
def mul_(self: Tensor, other: Any) -> Tensor:
    check_no_overlap(self)
    a, b, dev, dt = binary(self, other)
    if not needs_grad(self, other):
        return _ufunc_into(self, np.multiply, a, b, dt)
    if not _rg(other):  # self's old value is not needed: no copy
        return inplace(self, _apply(np.multiply, a, b), "MulBackward0", (self, other),
                       lambda g: (g * other, None), saved=_saved(other))
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
    res = sub(other, input, alpha=alpha)
    if res.grad_fn is not None:
        res.grad_fn._name = "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1"
    return res


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
