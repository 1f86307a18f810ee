"""Element-wise math (mytorch/_ops/pointwise.py) against real PyTorch.

Every case runs the same snippet on mytorch and torch and compares values, dtypes, shapes and
(for floating inputs) the gradients. Cases where torch refuses an input (``abs`` of a bool tensor,
``frac`` of an int tensor, …) must raise the same exception class in mytorch.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes
from oracle import Case, check, check_raises, randn

import mytorch


# ------------------------------------------------------------------------ input makers
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def pos(*shape: int, dtype=np.float32) -> np.ndarray:
    """Positive values away from 0 (domains of log, sqrt, division)."""
    return (np.abs(randn(*shape, dtype=np.float64)) + 0.5).astype(dtype)


def unit(*shape: int, dtype=np.float32) -> np.ndarray:
    """Values in (-0.9, 0.9) (domains of asin, acos, atanh)."""
    return (np.tanh(randn(*shape, dtype=np.float64)) * 0.9).astype(dtype)


def ints(*shape: int, lo: int = -5, hi: int = 6, dtype=np.int64, seed: int = 0) -> np.ndarray:
    return rng(seed + len(shape)).integers(lo, hi, size=shape).astype(dtype)


def bools(*shape: int, seed: int = 1) -> np.ndarray:
    return rng(seed).integers(0, 2, size=shape).astype(bool)


def check_or_raises(case: Case) -> None:
    """``check`` when torch accepts the inputs, else both libraries must raise the same class."""
    try:
        case.fn(torch, *[torch.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x
                         for x in case.inputs])
    except Exception:
        check_raises(case.fn, *case.inputs)
        return
    check(case)


# ------------------------------------------------------------------------ unary float functions
def _domain(kind: str, *shape: int, dtype=np.float32) -> np.ndarray:
    if kind == "pos":
        return np.asarray(pos(*shape, dtype=dtype))
    if kind == "unit":
        return unit(*shape, dtype=dtype)
    if kind == "gt1":
        return pos(*shape, dtype=dtype) + dtype(1)
    if kind == "prob":
        return (1 / (1 + np.exp(-randn(*shape, dtype=np.float64)))).astype(dtype)
    return np.asarray(randn(*shape, dtype=dtype))


UNARY = {  # name: (snippet, input domain)
    "exp": (lambda t, x: t.exp(x), "any"),
    "exp2": (lambda t, x: t.exp2(x), "any"),
    "expm1": (lambda t, x: t.expm1(x), "any"),
    "log": (lambda t, x: t.log(x), "pos"),
    "log2": (lambda t, x: t.log2(x), "pos"),
    "log10": (lambda t, x: t.log10(x), "pos"),
    "log1p": (lambda t, x: t.log1p(x), "pos"),
    "sqrt": (lambda t, x: t.sqrt(x), "pos"),
    "rsqrt": (lambda t, x: t.rsqrt(x), "pos"),
    "reciprocal": (lambda t, x: t.reciprocal(x), "pos"),
    "square": (lambda t, x: t.square(x), "any"),
    "abs": (lambda t, x: t.abs(x), "any"),
    "absolute": (lambda t, x: t.absolute(x), "any"),
    "sign": (lambda t, x: t.sign(x), "any"),
    "sgn": (lambda t, x: t.sgn(x), "any"),
    "neg": (lambda t, x: t.neg(x), "any"),
    "negative": (lambda t, x: t.negative(x), "any"),
    "sigmoid": (lambda t, x: t.sigmoid(x), "any"),
    "tanh": (lambda t, x: t.tanh(x), "any"),
    "sin": (lambda t, x: t.sin(x), "any"),
    "cos": (lambda t, x: t.cos(x), "any"),
    "tan": (lambda t, x: t.tan(x), "unit"),
    "asin": (lambda t, x: t.asin(x), "unit"),
    "acos": (lambda t, x: t.acos(x), "unit"),
    "atan": (lambda t, x: t.atan(x), "any"),
    "arcsin": (lambda t, x: t.arcsin(x), "unit"),
    "sinh": (lambda t, x: t.sinh(x), "any"),
    "cosh": (lambda t, x: t.cosh(x), "any"),
    "asinh": (lambda t, x: t.asinh(x), "any"),
    "acosh": (lambda t, x: t.acosh(x), "gt1"),
    "atanh": (lambda t, x: t.atanh(x), "unit"),
    "relu": (lambda t, x: t.relu(x), "any"),
    "floor": (lambda t, x: t.floor(x), "any"),
    "ceil": (lambda t, x: t.ceil(x), "any"),
    "round": (lambda t, x: t.round(x), "any"),
    "trunc": (lambda t, x: t.trunc(x), "any"),
    "fix": (lambda t, x: t.fix(x), "any"),
    "frac": (lambda t, x: t.frac(x), "any"),
    "erf": (lambda t, x: t.erf(x), "any"),
    "logit": (lambda t, x: t.logit(x), "prob"),
    "nan_to_num": (lambda t, x: t.nan_to_num(x), "any"),
    "method_exp": (lambda t, x: x.exp(), "any"),
    "method_sigmoid": (lambda t, x: x.sigmoid(), "any"),
    "method_abs": (lambda t, x: abs(x), "any"),
    "operator_neg": (lambda t, x: -x, "any"),
    "pow_2": (lambda t, x: x ** 2, "any"),
    "pow_half": (lambda t, x: x ** 0.5, "pos"),
    "pow_neg": (lambda t, x: x.pow(-1.5), "pos"),
    "pow_0": (lambda t, x: t.pow(x, 0), "any"),
    "rpow": (lambda t, x: 2 ** x, "any"),
    "rpow_float": (lambda t, x: 0.5 ** x, "any"),
    "rtruediv": (lambda t, x: 1 / x, "pos"),
    "rsub": (lambda t, x: 2 - x, "any"),
    "radd": (lambda t, x: 2.5 + x, "any"),
    "rmul": (lambda t, x: 3 * x, "any"),
    "rfloordiv": (lambda t, x: (5 // x).detach(), "pos"),
    "rmod": (lambda t, x: (5 % x).detach(), "pos"),  # torch: not differentiable
    "round_decimals": (lambda t, x: t.round(x * 100, decimals=1), "any"),
    "round_neg_decimals": (lambda t, x: t.round(x * 1000, decimals=-2), "any"),
    "clamp": (lambda t, x: t.clamp(x, -0.5, 0.5), "any"),
    "clamp_min": (lambda t, x: t.clamp(x, min=0.1), "any"),
    "clamp_max": (lambda t, x: x.clamp(max=0.1), "any"),
    "clip": (lambda t, x: t.clip(x, -1, 1), "any"),
    "clamp_min_fn": (lambda t, x: t.clamp_min(x, 0.2), "any"),
    "clamp_max_fn": (lambda t, x: t.clamp_max(x, 0.2), "any"),
    "logit_eps": (lambda t, x: t.logit(x, eps=0.2), "prob"),
    "float_power": (lambda t, x: t.float_power(x, 2), "any"),
    "float_power_rev": (lambda t, x: t.float_power(2, x), "any"),
}
UNARY_IDS = list(UNARY)


@pytest.mark.parametrize("name", UNARY_IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_unary_float_inputs(name: str, dtype) -> None:
    fn, kind = UNARY[name]
    x = _domain(kind, 3, 4, dtype=dtype)
    # torch's sgn gradient is a ZeroTensor that the oracle cannot read (test_awkward_points has it)
    check(Case(name, fn, [x], atol=1e-5, rtol=1e-5, grad=name != "sgn"))


@pytest.mark.parametrize("name", UNARY_IDS)
def test_unary_int_and_bool_inputs(name: str) -> None:
    """Output dtypes for integer and bool inputs (exp(int) is float32, abs(int) stays int, …);
    where torch has no kernel for the dtype both must raise."""
    fn, kind = UNARY[name]
    lo = 1 if kind in ("pos", "gt1") else (0 if kind in ("unit", "prob") else -4)
    hi = 2 if kind in ("unit", "prob") else 5
    check_or_raises(Case(name + "_int", fn, [ints(2, 3, lo=lo, hi=hi)], grad=False))
    check_or_raises(Case(name + "_int32", fn, [ints(4, lo=lo, hi=hi, dtype=np.int32)], grad=False))
    check_or_raises(Case(name + "_bool", fn, [bools(2, 3)], grad=False))


@pytest.mark.parametrize("name", UNARY_IDS)
def test_unary_float16(name: str) -> None:
    fn, kind = UNARY[name]
    x = _domain(kind, 5, dtype=np.float16)
    check(Case(name + "_f16", fn, [x], grad=False, atol=2e-3, rtol=2e-3))


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sigmoid", "log", "sqrt", "erf", "abs"])
def test_unary_zero_dim_and_empty(name: str) -> None:
    fn, kind = UNARY[name]
    check(Case(name + "_0d", fn, [_domain(kind, dtype=np.float32).reshape(())]))
    check(Case(name + "_empty", fn, [np.zeros((0, 3), np.float32)]))


# ------------------------------------------------------------------------ awkward points
AWKWARD = [  # torch's subgradient choices and limits, at the points where they matter
    Case("abs_at_0", lambda t, x: t.abs(x), [np.array([-1.0, 0.0, 2.0], np.float32)]),
    Case("relu_at_0", lambda t, x: t.relu(x), [np.array([-1.0, 0.0, 2.0], np.float32)]),
    Case("sign_grad", lambda t, x: t.sign(x), [np.array([-1.0, 0.0, 2.0, np.nan], np.float32)]),
    Case("sgn_grad", lambda t, x: t.sgn(x) + x * 0, [np.array([-1.0, 0.0, 2.0], np.float32)]),
    Case("round_grad", lambda t, x: t.round(x), [np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float32)]),
    Case("floor_grad", lambda t, x: t.floor(x), [np.array([-1.5, 0.0, 2.0], np.float32)]),
    Case("ceil_grad", lambda t, x: t.ceil(x), [np.array([-1.5, 0.0, 2.0], np.float32)]),
    Case("trunc_grad", lambda t, x: t.trunc(x), [np.array([-1.5, 0.0, 2.0], np.float32)]),
    Case("frac_neg", lambda t, x: t.frac(x), [np.array([-1.25, 0.0, 2.75], np.float32)]),
    Case("clamp_boundaries", lambda t, x: t.clamp(x, 0.0, 1.0),
         [np.array([-1.0, 0.0, 0.5, 1.0, 2.0], np.float32)]),
    Case("clamp_min_gt_max", lambda t, x: t.clamp(x, 2.0, 1.0), [np.array([0.0, 1.5, 3.0], np.float32)]),
    Case("clamp_nan", lambda t, x: t.clamp(x, 0.0, 1.0), [np.array([np.nan, 0.5], np.float32)]),
    Case("sqrt_at_0", lambda t, x: t.sqrt(x), [np.array([0.0, 4.0], np.float32)]),
    Case("sqrt_negative", lambda t, x: t.sqrt(x), [np.array([-1.0, 4.0], np.float32)]),
    Case("log_at_0", lambda t, x: t.log(x), [np.array([0.0, -1.0, 1.0], np.float32)]),
    Case("rsqrt_at_0", lambda t, x: t.rsqrt(x), [np.array([0.0, 4.0], np.float32)]),
    Case("reciprocal_0", lambda t, x: t.reciprocal(x), [np.array([0.0, 4.0], np.float32)]),
    Case("acos_edges", lambda t, x: t.acos(x), [np.array([1.0, 2.0, -1.0], np.float64)]),
    Case("sigmoid_extremes", lambda t, x: t.sigmoid(x),
         [np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], np.float32)]),
    Case("exp_overflow", lambda t, x: t.exp(x), [np.array([100.0, -200.0], np.float32)]),
    Case("pow_zero_base", lambda t, a, b: a ** b,
         [np.array([0.0, 0.0, 0.0, 2.0], np.float64), np.array([0.0, -1.0, 2.0, 3.0], np.float64)]),
    Case("pow_scalar_0_base", lambda t, b: 0 ** b, [np.array([0.0, -1.0, 3.0], np.float64)]),
    Case("pow_exp0_at_0", lambda t, a: a ** 0, [np.array([0.0, 2.0], np.float64)]),
    Case("pow_half_at_0", lambda t, a: a ** 0.5, [np.array([0.0, 2.0], np.float64)]),
    Case("atan2_origin", lambda t, a, b: t.atan2(a, b),
         [np.array([0.0, 3.0, -1.0], np.float64), np.array([0.0, 4.0, -1.0], np.float64)]),
    Case("hypot_origin", lambda t, a, b: t.hypot(a, b),
         [np.array([0.0, 3.0], np.float64), np.array([0.0, 4.0], np.float64)]),
    Case("logit_outside", lambda t, x: t.logit(x), [np.array([0.0, 0.1, 0.5, 1.0, 1.5], np.float64)]),
    Case("logit_eps_outside", lambda t, x: t.logit(x, eps=0.2),
         [np.array([0.0, 0.1, 0.5, 0.9, 1.5], np.float64)]),
    Case("nan_to_num_grad", lambda t, x: t.nan_to_num(x),
         [np.array([np.nan, np.inf, -np.inf, 1.5], np.float32)]),
    Case("nan_to_num_values", lambda t, x: t.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0),
         [np.array([np.nan, np.inf, -np.inf, 1.5], np.float64)]),
    Case("nan_to_num_f16", lambda t, x: t.nan_to_num(x),
         [np.array([np.nan, np.inf, -np.inf, 1.5], np.float16)], grad=False),
    Case("erf_wide", lambda t, x: t.erf(x),
         [np.array([-10.0, -5.0, -1.5, -1.0, -1e-8, 0.0, 0.3, 0.999, 1.0, 2.0, 7.9, 8.0, 30.0,
                    np.inf, -np.inf, np.nan], np.float64)], atol=1e-15, rtol=1e-14),
    Case("erf_dense", lambda t, x: t.erf(x), [np.linspace(-6, 6, 2001)], atol=1e-15, rtol=1e-14),
    Case("round_half_even", lambda t, x: t.round(x),
         [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3.49], np.float32)]),
    Case("round_decimals_f64", lambda t, x: t.round(x, decimals=2),
         [np.array([0.125, 0.375, 1.005, -2.675], np.float64)]),
    Case("div_by_zero", lambda t, a, b: a / b,
         [np.array([1.0, -1.0, 0.0], np.float32), np.zeros(3, np.float32)], grad=False),
    Case("int_div_by_zero", lambda t, a, b: a / b, [np.array([1, -1, 0]), np.zeros(3, np.int64)]),
    Case("floor_div_float_zero", lambda t, a: t.div(a, 0.0, rounding_mode="floor"),
         [np.array([5.0, -5.0, 0.0], np.float32)], grad=False),
    Case("trunc_div_float_zero", lambda t, a: t.div(a, 0.0, rounding_mode="trunc"),
         [np.array([5.0, -5.0, 0.0], np.float32)], grad=False),
    Case("fmod_float_zero", lambda t, a: t.fmod(a, 0.0), [np.array([1.0, 2.0], np.float32)],
         grad=False),
    Case("remainder_float_zero", lambda t, a: t.remainder(a, 0.0),
         [np.array([1.0, 2.0], np.float32)], grad=False),
]


@pytest.mark.parametrize("case", AWKWARD, ids=str)
def test_awkward_points(case: Case) -> None:
    check(case)


# ------------------------------------------------------------------------ binary ops
BINARY = {  # name: (snippet, kind of the second operand)
    "add": (lambda t, a, b: t.add(a, b), "any"),
    "add_alpha": (lambda t, a, b: t.add(a, b, alpha=2), "any"),
    "sub": (lambda t, a, b: t.sub(a, b), "any"),
    "sub_alpha": (lambda t, a, b: t.subtract(a, b, alpha=0.5), "any"),
    "mul": (lambda t, a, b: t.mul(a, b), "any"),
    "div": (lambda t, a, b: t.div(a, b), "pos"),
    "divide": (lambda t, a, b: t.divide(a, b), "pos"),
    "true_divide": (lambda t, a, b: t.true_divide(a, b), "pos"),
    "div_trunc": (lambda t, a, b: t.div(a, b, rounding_mode="trunc"), "pos"),
    "div_floor": (lambda t, a, b: t.div(a, b, rounding_mode="floor"), "pos"),
    "remainder": (lambda t, a, b: t.remainder(a, b), "pos"),
    "fmod": (lambda t, a, b: t.fmod(a, b), "pos"),
    "pow": (lambda t, a, b: t.pow(t.abs(a) + 0.5, b), "any"),
    "atan2": (lambda t, a, b: t.atan2(a, b), "any"),
    "hypot": (lambda t, a, b: t.hypot(a, b), "any"),
    "float_power": (lambda t, a, b: t.float_power(t.abs(a) + 0.5, b), "any"),
    "lerp_tensor_weight": (lambda t, a, b: t.lerp(a, a * 2 + 1, t.sigmoid(b)), "any"),
    "op_add": (lambda t, a, b: a + b, "any"),
    "op_sub": (lambda t, a, b: a - b, "any"),
    "op_mul": (lambda t, a, b: a * b, "any"),
    "op_truediv": (lambda t, a, b: a / b, "pos"),
    "op_mod": (lambda t, a, b: a % b, "pos"),
    "op_pow": (lambda t, a, b: (a * a + 0.5) ** b, "any"),
    "method_div": (lambda t, a, b: a.div(b, rounding_mode=None), "pos"),
    "method_pow": (lambda t, a, b: (a * a + 0.5).pow(b), "any"),
}
SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((), (3,)), ((3,), ()),
          ((1,), (2, 3))]


@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_broadcasting_and_grad(name: str, shapes) -> None:
    fn, kind = BINARY[name]
    a = randn(*shapes[0], dtype=np.float64).astype(np.float32)
    b = _domain(kind, *shapes[1])
    check(Case(name, fn, [a, b], atol=1e-5, rtol=1e-5))


DTYPE_PAIRS = [(np.int64, np.int64), (np.int32, np.float32), (np.int64, np.float64),
               (bool, np.int64), (np.uint8, np.int8), (np.float16, np.float32),
               (np.int32, np.int64), (np.float32, np.float64), (bool, bool), (np.int16, np.uint8)]
DTYPE_OPS = {
    "add": lambda t, a, b: t.add(a, b),
    "sub": lambda t, a, b: t.sub(a, b),
    "mul": lambda t, a, b: t.mul(a, b),
    "div": lambda t, a, b: t.div(a, b),
    "div_trunc": lambda t, a, b: t.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda t, a, b: t.div(a, b, rounding_mode="floor"),
    "floor_divide": lambda t, a, b: a // b,
    "remainder": lambda t, a, b: t.remainder(a, b),
    "fmod": lambda t, a, b: t.fmod(a, b),
    "pow": lambda t, a, b: t.pow(a, b),
    "atan2": lambda t, a, b: t.atan2(a, b),
    "hypot": lambda t, a, b: t.hypot(a, b),
    "bitwise_and": lambda t, a, b: a & b,
    "bitwise_or": lambda t, a, b: a | b,
    "bitwise_xor": lambda t, a, b: a ^ b,
    "lshift": lambda t, a, b: a << b,
    "rshift": lambda t, a, b: a >> b,
    "logical_and": lambda t, a, b: t.logical_and(a, b),
    "logical_or": lambda t, a, b: t.logical_or(a, b),
    "logical_xor": lambda t, a, b: t.logical_xor(a, b),
    "float_power": lambda t, a, b: t.float_power(a, b),
}


def _typed(dtype, shape: tuple, divisor: bool) -> np.ndarray:
    """Values of ``dtype`` (divisors and exponents are >= 1 so ints never divide by zero)."""
    if dtype is bool:
        return np.ones(shape, bool) if divisor else bools(*shape)
    if np.issubdtype(dtype, np.integer):
        lo = 1 if divisor else (0 if dtype == np.uint8 else -6)
        return ints(*shape, lo=lo, hi=4 if divisor else 7, dtype=dtype)
    return (pos(*shape) if divisor else randn(*shape) * 3).astype(dtype)


@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=lambda d: f"{np.dtype(d[0])}-{np.dtype(d[1])}")
@pytest.mark.parametrize("name", list(DTYPE_OPS))
def test_binary_dtype_promotion(name: str, dtypes) -> None:
    a = _typed(dtypes[0], (2, 3), divisor=False)
    b = _typed(dtypes[1], (3,), divisor=True)
    tol = 2e-3 if np.float16 in dtypes else 1e-5
    check_or_raises(Case(name, DTYPE_OPS[name], [a, b], grad=False, atol=tol, rtol=tol))


SCALAR_FORMS = [  # number first, number second, Python bool/int/float against each dtype
    Case("int_t_plus_float", lambda t, a: a + 1.5, [ints(3)]),
    Case("int_t_times_bool", lambda t, a: a * True, [ints(3)]),
    Case("bool_t_plus_int", lambda t, a: a + 1, [bools(3)]),
    Case("bool_t_plus_bool", lambda t, a: a + True, [bools(3)]),
    Case("f16_t_times_float", lambda t, a: a * 2.5, [pos(3, dtype=np.float16)], grad=False),
    Case("int_t_div_int", lambda t, a: a / 2, [ints(3)]),
    Case("int_t_floordiv_float", lambda t, a: a // 2.5, [ints(3)]),
    Case("int_t_floordiv_int", lambda t, a: a // 2, [ints(5)]),
    Case("int_t_mod_int", lambda t, a: a % 3, [ints(5)]),
    Case("int_t_mod_neg", lambda t, a: a % -3, [ints(5)]),
    Case("int_fmod_neg", lambda t, a: t.fmod(a, -3), [ints(5)]),
    Case("int_trunc_div", lambda t, a: t.div(a, 2, rounding_mode="trunc"), [ints(5)]),
    Case("scalar_minus_t", lambda t, a: 2 - a, [randn(3)]),
    Case("scalar_pow_t", lambda t, a: 2 ** a, [randn(3)]),
    Case("scalar_pow_int_t", lambda t, a: 2 ** a, [ints(4, lo=0, hi=5)]),
    Case("scalar_pow_int_t_neg", lambda t, a: 2 ** a, [np.array([-2, -1, 0, 3])]),
    Case("float_scalar_pow_int_t", lambda t, a: 1.5 ** a, [ints(4, lo=0, hi=5)]),
    Case("one_over_t", lambda t, a: 1 / a, [pos(3)]),
    Case("one_over_int_t", lambda t, a: 1 / a, [ints(3, lo=1, hi=4)]),
    Case("scalar_mod_t", lambda t, a: t.remainder(5, a), [ints(4, lo=1, hi=4) * np.array([1, -1, 1, -1])]),
    Case("scalar_floordiv_t", lambda t, a: 7 // a, [ints(4, lo=1, hi=4)]),
    Case("int_pow_int", lambda t, a: a ** 2, [ints(4)]),
    Case("int_pow_float", lambda t, a: a ** 0.5, [ints(4, lo=0, hi=9)]),
    Case("int_pow_neg_tensor", lambda t, a, b: a ** b,
         [np.array([-1, 1, 0, 2, -1, 3]), np.array([-3, -2, -1, -1, -2, 2])]),
    Case("uint8_pow_neg_tensor", lambda t, a, b: a ** b, [np.array([2, 1], np.uint8), np.array([-1, -2])]),
    Case("bool_pow_int", lambda t, a: a ** 2, [bools(4)]),
    Case("int_pow_true", lambda t, a: a ** True, [ints(4)]),
    Case("f32_t_plus_f64_0d", lambda t, a, b: a + b, [randn(3), np.array(2.5)]),
    Case("int_t_plus_f64_0d", lambda t, a, b: a + b, [ints(3), np.array(2.5)]),
    Case("f16_t_plus_f32_0d", lambda t, a, b: a + b, [pos(3, dtype=np.float16), np.array(2.5, np.float32)],
         grad=False),
    Case("int8_t_plus_int64_0d", lambda t, a, b: a + b, [ints(3, dtype=np.int8), np.array(100)]),
    Case("sub_alpha_int", lambda t, a, b: t.sub(a, b, alpha=3), [ints(3), ints(3, seed=4)]),
    Case("add_out", lambda t, a, b: t.add(a, b, out=t.empty(0)), [randn(3), randn(3)], grad=False),
    Case("mul_out_cast", lambda t, a, b: t.mul(a, b, out=t.zeros(3, dtype=t.float64)),
         [randn(3), randn(3)], grad=False),
    Case("sqrt_out", lambda t, a: t.sqrt(a, out=t.zeros(3)), [pos(3)], grad=False),
]


@pytest.mark.parametrize("case", SCALAR_FORMS, ids=str)
def test_scalar_forms(case: Case) -> None:
    check(case)


# ------------------------------------------------------------------------ clamp, lerp, addc*, round
OTHER = [
    Case("clamp_tensor_bounds", lambda t, x, lo, hi: t.clamp(x, lo, hi),
         [randn(3, 4), randn(4) - 0.5, randn(3, 1) + 0.5]),
    Case("clamp_tensor_min_only", lambda t, x, lo: t.clamp(x, min=lo), [randn(3, 4), randn(4)]),
    Case("clamp_tensor_max_only", lambda t, x, hi: t.clamp(x, max=hi), [randn(3, 4), randn(3, 1)]),
    Case("clamp_tensor_min_gt_max", lambda t, x, lo, hi: t.clamp(x, lo, hi),
         [np.array([0.0, 1.5, 3.0, 2.0], np.float32), np.full(4, 2.0, np.float32),
          np.full(4, 1.0, np.float32)]),
    Case("clamp_tensor_ties", lambda t, x, lo, hi: t.clamp(x, lo, hi),
         [np.array([0.0, 1.0, 2.0], np.float32), np.array([0.0, 0.0, 0.0], np.float32),
          np.array([2.0, 2.0, 2.0], np.float32)]),
    Case("clamp_max_tensor_fn", lambda t, x, hi: t.clamp_max(x, hi), [randn(3, 4), randn(4)]),
    Case("clamp_int_float_bound", lambda t, x: t.clamp(x, min=1.5), [ints(4)]),
    Case("clamp_int_int_bound", lambda t, x: t.clamp(x, -1, 2), [ints(6)]),
    Case("clamp_int_tensor_float_bound", lambda t, x, lo: t.clamp(x, min=lo),
         [ints(4), np.array([2.0], np.float32)], grad=False),
    Case("clamp_f16", lambda t, x: t.clamp(x, -0.5, 0.5), [randn(5).astype(np.float16)], grad=False),
    Case("clamp_method_0d_bound", lambda t, x, lo: x.clamp(min=lo), [randn(5), np.array(0.1, np.float32)]),
    Case("lerp_scalar_low", lambda t, a, b: t.lerp(a, b, 0.25), [randn(3, 4), randn(4)]),
    Case("lerp_scalar_high", lambda t, a, b: t.lerp(a, b, 0.75), [randn(3, 4), randn(3, 4)]),
    Case("lerp_weight_one", lambda t, a, b: t.lerp(a, b, 1.0), [randn(3), randn(3)]),
    Case("lerp_extrapolate", lambda t, a, b: a.lerp(b, 2), [randn(3), randn(3)]),
    Case("lerp_tensor_weight_bcast", lambda t, a, b, w: t.lerp(a, b, w),
         [randn(2, 3), randn(3), np.array([0.1, 0.5, 0.9], np.float32)]),
    Case("lerp_0d_f64_weight", lambda t, a, b, w: t.lerp(a, b, w),
         [randn(3), randn(3), np.array(0.3)]),
    Case("addcmul", lambda t, x, a, b: t.addcmul(x, a, b, value=0.5), [randn(3, 4), randn(4), randn(3, 1)]),
    Case("addcmul_default", lambda t, x, a, b: x.addcmul(a, b), [randn(3), randn(3), randn(3)]),
    Case("addcmul_int", lambda t, x, a, b: t.addcmul(x, a, b, value=2), [ints(3), ints(3), ints(3)]),
    Case("addcmul_int_float_value", lambda t, x, a, b: t.addcmul(x, a, b, value=0.5),
         [ints(3), ints(3), ints(3)]),
    Case("addcmul_mixed", lambda t, x, a, b: t.addcmul(x, a, b), [ints(3), randn(3), ints(3)]),
    Case("addcdiv", lambda t, x, a, b: t.addcdiv(x, a, b, value=-2), [randn(3, 4), randn(4), pos(3, 1)]),
    Case("addcdiv_int_input", lambda t, x, a, b: t.addcdiv(x, a, b), [ints(3), randn(3), pos(3)]),
    Case("lerp_f64", lambda t, a, b: t.lerp(a, b, 0.3),
         [randn(3, dtype=np.float64), randn(3, dtype=np.float64)]),
    Case("float_power_f32_grad", lambda t, a, b: t.float_power(a, b), [pos(3), randn(3)]),
    Case("float_power_int", lambda t, a: t.float_power(a, 2), [ints(4)]),
    Case("float_power_scalar_base", lambda t, a: t.float_power(2, a), [randn(3)]),
    Case("square_int", lambda t, a: t.square(a), [ints(3, dtype=np.int32)]),
    Case("exp_int", lambda t, a: t.exp(a), [ints(3, dtype=np.int16)]),
    Case("sigmoid_uint8", lambda t, a: t.sigmoid(a), [ints(3, lo=0, dtype=np.uint8)]),
    Case("mixed_dtype_grad", lambda t, a, b: a * b + a / b, [randn(3), pos(3, dtype=np.float64)]),
    Case("chain", lambda t, x: (x.exp() - 1).abs().clamp(0.1, 2).log().tanh() ** 2, [randn(3, 4)]),
    Case("hypot_f64", lambda t, a, b: t.hypot(a, b),
         [randn(3, dtype=np.float64), randn(3, 1, dtype=np.float64)]),
]


@pytest.mark.parametrize("case", OTHER, ids=str)
def test_other_ops(case: Case) -> None:
    check(case)


# ------------------------------------------------------------------------ bitwise and logical
BITS = [
    Case("and_int", lambda t, a, b: t.bitwise_and(a, b), [ints(3, 4), ints(4, seed=3)]),
    Case("or_scalar", lambda t, a: t.bitwise_or(a, 6), [ints(5)]),
    Case("xor_bool", lambda t, a, b: t.bitwise_xor(a, b), [bools(5), bools(5, seed=7)]),
    Case("not_int", lambda t, a: t.bitwise_not(a), [ints(5)]),
    Case("not_bool", lambda t, a: ~a, [bools(5)]),
    Case("invert_uint8", lambda t, a: ~a, [ints(5, lo=0, dtype=np.uint8)]),
    Case("rand", lambda t, a: 3 & a, [ints(5)]),
    Case("ror", lambda t, a: True | a, [bools(5)]),
    Case("rxor", lambda t, a: 5 ^ a, [ints(5)]),
    Case("int_and_true", lambda t, a: a & True, [ints(5)]),
    Case("bool_and_one", lambda t, a: a & 1, [bools(5)]),
    Case("lshift", lambda t, a: a << 2, [ints(5)]),
    Case("rshift", lambda t, a: a >> 1, [ints(5)]),
    Case("rlshift", lambda t, a: 1 << a, [ints(5, lo=0)]),
    Case("rrshift", lambda t, a: 64 >> a, [ints(5, lo=0)]),
    Case("bool_lshift", lambda t, a: a << 1, [bools(5)]),
    Case("shift_fns", lambda t, a, b: (t.bitwise_left_shift(a, b), t.bitwise_right_shift(a, b)),
         [ints(5, dtype=np.int32), ints(5, lo=0, hi=4, dtype=np.int32)]),
    Case("logical_and_mixed", lambda t, a, b: t.logical_and(a, b), [randn(3, 4), ints(4)]),
    Case("logical_or", lambda t, a, b: t.logical_or(a, b), [ints(3), bools(3)]),
    Case("logical_xor", lambda t, a, b: t.logical_xor(a, b), [randn(3), randn(3) * 0]),
    Case("logical_not", lambda t, a: t.logical_not(a), [ints(5)]),
    Case("logical_not_float_out", lambda t, a: t.logical_not(a, out=t.empty(5)), [ints(5)]),
    Case("logical_not_method", lambda t, a: a.logical_not(), [randn(3) * 0]),
]


@pytest.mark.parametrize("case", BITS, ids=str)
def test_bitwise_and_logical(case: Case) -> None:
    check(case)


# ------------------------------------------------------------------------ errors
def _leaf_inplace(t, x):
    return x.requires_grad_().exp_()


ERRORS = [
    ("bool_minus_bool", lambda t, a, b: a - b, [bools(3), bools(3)]),
    ("bool_sub_fn", lambda t, a, b: t.sub(a, b), [bools(3), bools(3)]),
    ("bool_isub", lambda t, a, b: a.sub_(b), [bools(3), bools(3)]),
    ("neg_bool", lambda t, a: -a, [bools(3)]),
    ("neg_bool_inplace", lambda t, a: a.neg_(), [bools(3)]),
    ("int_pow_neg_int", lambda t, a: a ** -1, [ints(3)]),
    ("int_pow_neg_int_inplace", lambda t, a: a.pow_(-2), [ints(3)]),
    ("shape_mismatch", lambda t, a, b: a + b, [randn(2, 3), randn(2, 4)]),
    ("shape_mismatch_mul", lambda t, a, b: t.mul(a, b), [randn(2, 3, 5), randn(4, 1)]),
    ("shape_mismatch_div", lambda t, a, b: a / b, [randn(3), randn(4)]),
    ("int_floordiv_zero", lambda t, a, b: a // b, [ints(3), np.array([1, 0, 1])]),
    ("int_div_trunc_zero", lambda t, a: t.div(a, 0, rounding_mode="trunc"), [ints(3)]),
    ("int_remainder_zero", lambda t, a, b: a % b, [ints(3), np.array([1, 0, 1])]),
    ("int_fmod_zero", lambda t, a: t.fmod(a, 0), [ints(3)]),
    ("int_alpha_float", lambda t, a, b: t.add(a, b, alpha=1.5), [ints(3), ints(3)]),
    ("bad_rounding_mode", lambda t, a: t.div(a, 2, rounding_mode="round"), [randn(3)]),
    ("bool_floor_divide", lambda t, a, b: t.floor_divide(a, b), [bools(3), bools(3)]),
    ("bool_remainder", lambda t, a, b: t.remainder(a, b), [bools(3), bools(3)]),
    ("bool_pow_bool", lambda t, a, b: a ** b, [bools(3), bools(3)]),
    ("abs_bool", lambda t, a: t.abs(a), [bools(3)]),
    ("relu_bool", lambda t, a: t.relu(a), [bools(3)]),
    ("frac_int", lambda t, a: t.frac(a), [ints(3)]),
    ("round_decimals_int", lambda t, a: t.round(a, decimals=1), [ints(3)]),
    ("floor_bool", lambda t, a: t.floor(a), [bools(3)]),
    ("hypot_int", lambda t, a, b: t.hypot(a, b), [ints(3), ints(3)]),
    ("hypot_scalar", lambda t, a: t.hypot(a, 2.0), [randn(3)]),
    ("atan2_scalar", lambda t, a: t.atan2(a, 2.0), [randn(3)]),
    ("fmod_scalar_first", lambda t, a: t.fmod(5, a), [randn(3)]),
    ("lerp_end_dtype", lambda t, a, b: t.lerp(a, b, 0.5), [randn(3), randn(3, dtype=np.float64)]),
    ("lerp_weight_dtype", lambda t, a, b, w: t.lerp(a, b, w),
     [randn(3), randn(3), randn(3, dtype=np.float64)]),
    ("lerp_int", lambda t, a, b: t.lerp(a, b, 0.5), [ints(3), ints(3)]),
    ("clamp_no_bounds", lambda t, a: t.clamp(a), [randn(3)]),
    ("clamp_mixed_bounds", lambda t, a, lo: t.clamp(a, min=lo, max=2.0), [randn(3), randn(3)]),
    ("addcdiv_ints", lambda t, x, a, b: t.addcdiv(x, a, b), [randn(3), ints(3), ints(3, lo=1)]),
    ("bitwise_float", lambda t, a, b: t.bitwise_and(a, b), [randn(3), randn(3)]),
    ("bitwise_int_float_scalar", lambda t, a: a & 1.5, [ints(3)]),
    ("bitwise_not_float", lambda t, a: t.bitwise_not(a), [randn(3)]),
    ("invert_float", lambda t, a: ~a, [randn(3)]),
    ("lshift_float", lambda t, a: a << 1, [randn(3)]),
    ("logical_and_scalar", lambda t, a: t.logical_and(a, 1), [ints(3)]),
    ("inplace_int_add_float", lambda t, a: a.add_(1.5), [ints(3)]),
    ("inplace_iadd_float", lambda t, a: a.__iadd__(1.5), [ints(3)]),
    ("inplace_int_sqrt", lambda t, a: a.sqrt_(), [ints(3)]),
    ("inplace_int_div", lambda t, a: a.div_(2), [ints(3)]),
    ("inplace_itruediv", lambda t, a, b: a.__itruediv__(b), [ints(3), ints(3, lo=1)]),
    ("inplace_bool_add_int", lambda t, a, b: a.add_(b), [bools(3), ints(3)]),
    ("inplace_int_clamp_float", lambda t, a: a.clamp_(0.5, 1), [ints(3)]),
    ("inplace_float_power_f32", lambda t, a: a.float_power_(2), [randn(3)]),
    ("inplace_broadcast_shape", lambda t, a, b: a.add_(b), [randn(3), randn(2, 3)]),
    ("inplace_broadcast_shape_exp", lambda t, a, b: a.mul_(b), [randn(3), randn(2, 3)]),
    ("inplace_broadcast_generic", lambda t, a, b: a.atan2_(b), [randn(3), randn(2, 3)]),
    ("inplace_leaf_requires_grad", _leaf_inplace, [randn(3)]),
    ("sqrt_out_int", lambda t, a: t.sqrt(a, out=t.zeros(3, dtype=t.int64)), [randn(3)]),
    ("floor_divide_backward", lambda t, a: t.floor_divide(a.requires_grad_(), 2.0).sum().backward(),
     [randn(3)]),
]


@pytest.mark.parametrize("fn,inputs", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(fn, inputs) -> None:
    check_raises(fn, *inputs)


def test_broadcast_error_message() -> None:
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\) at non-singleton dimension 1"):
        mytorch.ones(2, 3) + mytorch.ones(2, 4)
    with pytest.raises(RuntimeError, match=r"tensor a \(3\) .* tensor b \(4\) at non-singleton "
                                           r"dimension 1"):
        mytorch.ones(2, 3, 5) * mytorch.ones(4, 1)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        mytorch.tensor([1, 2]).add_(1.5)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the broadcast "
                                           r"shape \[2, 3\]"):
        mytorch.ones(3).add_(mytorch.ones(2, 3))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        mytorch.tensor([2]) ** -1


# ------------------------------------------------------------------------ in-place semantics
INPLACE = ["exp_", "sin_", "sigmoid_", "tanh_", "abs_", "sqrt_", "log_", "clamp_", "relu_",
           "floor_", "round_", "neg_", "reciprocal_", "square_", "erf_", "frac_", "sign_",
           "logit_", "nan_to_num_", "expm1_", "rsqrt_", "trunc_", "ceil_"]


def _inplace_call(x, name: str):
    return getattr(x, name)(0.0, 1.0) if name == "clamp_" else getattr(x, name)()


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_unary_matches_torch(name: str) -> None:
    """``y = x * 1; y.op_()`` updates y in place (same object, version bumped) and backprops
    through the old value, like torch."""
    def fn(t, x):
        y = x * 1  # a non-leaf, so in-place is allowed under autograd
        before = y._version
        out = _inplace_call(y, name)
        assert out is y and y._version == before + 1
        return y
    check(Case(name, fn, [pos(3, 4) * 0.7]))


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_", "pow_", "atan2_", "hypot_",
                                  "remainder_", "fmod_", "lerp_",
                                  "addcmul_", "addcdiv_", "true_divide_", "float_power_"])
def test_inplace_binary_matches_torch(name: str) -> None:
    def fn(t, x, o):
        y = x * 1
        if name == "float_power_":
            y = y.double()
        args = {"lerp_": (o, 0.3), "addcmul_": (o, o), "addcdiv_": (o, o)}.get(name, (o,))
        out = getattr(y, name)(*args)
        assert out is y
        return y
    check(Case(name, fn, [pos(3, 4), pos(4)], atol=1e-5, rtol=1e-5))


INPLACE_OTHER = [
    Case("int_floor_divide_", lambda t, a: a.floor_divide_(2), [ints(5)]),
    Case("int_div_floor_", lambda t, a: a.div_(2, rounding_mode="floor"), [ints(5)]),
    Case("int_pow_", lambda t, a: a.pow_(2), [ints(5)]),
    Case("float_add_f64", lambda t, a, b: a.add_(b), [randn(3), randn(3, dtype=np.float64)], grad=False),
    Case("float_add_alpha_", lambda t, a, b: a.add_(b, alpha=2), [randn(2, 3), randn(3)], grad=False),
    Case("iadd_keeps_object", lambda t, a: _iadd_same(a), [randn(3)], grad=False),
    Case("imul_int", lambda t, a: _imul(a), [ints(3)]),
    Case("ifloordiv", lambda t, a: _ifloordiv(a), [ints(3)]),
    Case("imod", lambda t, a: _imod(a), [ints(3)]),
    Case("ipow", lambda t, a: _ipow(a), [ints(3)]),
    Case("iand_ior_ixor", lambda t, a: _ibits(a), [ints(3)]),
    Case("ishift", lambda t, a: _ishift(a), [ints(3, lo=0)]),
    Case("lt_inplace_float", lambda t, a: a.lt_(0), [randn(4)], grad=False),
    Case("eq_inplace_int", lambda t, a: a.eq_(2), [ints(6)]),
    Case("logical_not_inplace_float", lambda t, a: a.logical_not_(), [randn(3) * 0], grad=False),
    Case("bitwise_and_inplace", lambda t, a: a.bitwise_and_(3), [ints(4)]),
    Case("clamp_inplace_int", lambda t, a: a.clamp_(0, 1), [ints(4)]),
    Case("sign_inplace_int", lambda t, a: a.sign_(), [ints(4)]),
    Case("relu_fn_inplace", lambda t, a: t.relu_(a), [randn(4)], grad=False),
    Case("view_sees_inplace", lambda t, a: _view_sees(a), [randn(2, 3)], grad=False),
]


def _iadd_same(a):
    b = a
    a += 1
    assert a is b
    return a


def _imul(a):
    a *= 3
    return a


def _ifloordiv(a):
    a //= 2
    return a


def _imod(a):
    a %= 4
    return a


def _ipow(a):
    a **= 2
    return a


def _ibits(a):
    a &= 6
    a |= 1
    a ^= 2
    return a


def _ishift(a):
    a <<= 2
    a >>= 1
    return a


def _view_sees(a):
    v = a.view(6)
    a.mul_(2).exp_()
    return v, a._version, v._version


@pytest.mark.parametrize("case", INPLACE_OTHER, ids=str)
def test_inplace_other(case: Case) -> None:
    check(case)


def test_inplace_invalidates_saved_tensor() -> None:
    """An in-place change to a tensor that backward still needs must be caught, like torch."""
    def fn(t, x):
        y = x * 1
        z = y.sin()
        y.add_(1)
        z.sum().backward()
    check_raises(fn, randn(3))


def test_inplace_under_no_grad_on_leaf() -> None:
    x = mytorch.ones(3, requires_grad=True)
    with mytorch.no_grad():
        x.mul_(2).exp_()
    assert x.grad_fn is None and x.requires_grad
    np.testing.assert_allclose(x.detach().numpy(), np.exp(2.0) * np.ones(3), rtol=1e-6)


def test_inplace_grad_flows_to_other_operand() -> None:
    for lib in (mytorch, torch):
        w = lib.tensor([0.5, 2.0], requires_grad=True)
        y = lib.zeros(2)
        y.add_(w).mul_(w).exp_()
        y.sum().backward()
        if lib is mytorch:
            mine = w.grad.numpy().copy()
        else:
            np.testing.assert_allclose(mine, w.grad.numpy(), rtol=1e-5)


# ------------------------------------------------------------------------ higher-order gradients
@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sigmoid", "log", "sqrt", "pow_2", "rpow",
                                  "atan", "erf", "reciprocal", "div"])
def test_double_backward(name: str) -> None:
    """Backward closures are built from mytorch ops, so ``create_graph=True`` gives 2nd derivatives."""
    fns = {**{k: v[0] for k, v in UNARY.items()}, "div": lambda t, x: x / (x * x + 1)}
    x = pos(5)
    results = []
    for lib in (mytorch, torch):
        t = lib.tensor(x, requires_grad=True)
        (g,) = lib.autograd.grad(fns[name](lib, t).sum(), t, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), t)
        results.append((g.detach().numpy(), gg.detach().numpy()))
    for mine, ref in zip(*results, strict=True):
        np.testing.assert_allclose(mine, ref, rtol=1e-4, atol=1e-5)


def test_grad_fn_names() -> None:
    x = mytorch.tensor([1.0], requires_grad=True)
    names = {
        "AddBackward0": x + 1, "DivBackward0": x / 2, "PowBackward0": x ** 2,
        "PowBackward1": x ** mytorch.tensor(2.0), "PowBackward2": 2 ** x, "ExpBackward0": x.exp(),
        "AbsBackward0": x.abs(), "ClampBackward1": x.clamp(0, 1), "ReluBackward0": mytorch.relu(x),
        "SigmoidBackward0": x.sigmoid(), "DivBackward2": x.div(2, rounding_mode="floor"),
        "ClampMinBackward0": mytorch.clamp_min(x, 0), "LerpBackward0": x.lerp(x * 2, 0.5),
        "SgnBackward0": x.sgn(), "RoundBackward1": x.round(decimals=1),
    }
    for name, t in names.items():
        assert t.grad_fn.name() == name


# ------------------------------------------------------------------------ operators, aliases
def test_matmul_operator_delegates_to_linalg() -> None:
    if not hasattr(mytorch, "matmul"):
        pytest.skip("linalg.matmul not written yet")
    check(Case("matmul_op", lambda t, a, b: a @ b, [randn(2, 3), randn(3, 4)]))
    check(Case("rmatmul_op", lambda t, a, b: a.__rmatmul__(b), [randn(3, 4), randn(2, 3)]))


def test_exports_and_methods() -> None:
    for name in ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
                 "pow", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                 "reciprocal", "square", "abs", "absolute", "sign", "sgn", "neg", "sigmoid",
                 "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
                 "relu", "lerp", "clamp", "clip", "clamp_min", "clamp_max", "floor", "ceil",
                 "round", "trunc", "frac", "erf", "logit", "hypot", "addcmul", "addcdiv",
                 "nan_to_num", "float_power", "bitwise_and", "bitwise_or", "bitwise_xor",
                 "bitwise_not", "logical_and", "logical_or", "logical_not", "logical_xor"]:
        assert callable(getattr(mytorch, name)), name
        assert hasattr(mytorch.Tensor, name), name
        if hasattr(torch.Tensor, name + "_"):
            assert hasattr(mytorch.Tensor, name + "_"), name + "_"


def test_tensor_stays_hashable() -> None:
    x = mytorch.ones(2)
    assert {x: 1}[x] == 1 and hash(x) == id(x)


def test_simulated_cuda_keeps_device() -> None:
    """Ops compute with ufuncs on the operands' device: no silent trip to the host."""
    from mytorch import _device

    saved = (_device._CUDA.backend, _device._CUDA.probed)
    _device.simulate_cuda(True)
    try:
        x = mytorch.tensor([0.25, -1.5, 2.0], device="cuda")
        ys = [x.exp(), x.sign(), x.clamp(0, 1), x ** 2, 2 ** x, x / 3, x // 2, x % 2, x.erf(),
              x.nan_to_num(), x.lerp(x * 2, 0.3), mytorch.atan2(x, x + 1), x.round(decimals=1),
              x.logit(eps=0.1), x.clamp(mytorch.tensor(0.0), mytorch.tensor(1.0)),
              mytorch.addcmul(x, x, x), x.abs(), x.relu(), mytorch.tensor([1, 2], device="cuda") ** 2]
        for y in ys:
            assert y.device.type == "cuda", y
            assert isinstance(y._data, _device._SimulatedArray)
        w = mytorch.tensor([0.5, 1.0, 2.0], device="cuda", requires_grad=True)
        (w.sigmoid() * w.clamp(0.6, 1.5) + w ** w).sum().backward()
        assert w.grad.device.type == "cuda"
        with pytest.raises((RuntimeError, TypeError)):
            mytorch.ones(3) + mytorch.ones(3, device="cuda")
    finally:
        _device._CUDA.backend, _device._CUDA.probed = saved


# ------------------------------------------------------------------------ property tests
DTYPES = [np.bool_, np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64]


def _values(shape: tuple, dtype, seed: int) -> np.ndarray:
    r = rng(seed)
    if dtype is np.bool_:
        return np.asarray(r.integers(0, 2, size=shape).astype(bool))
    if np.issubdtype(dtype, np.integer):
        return np.asarray(r.integers(0 if dtype is np.uint8 else -20, 20, size=shape).astype(dtype))
    return np.asarray((r.standard_normal(shape) * 4).astype(dtype))


@settings(max_examples=50, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4),
       dta=st.sampled_from(DTYPES), dtb=st.sampled_from(DTYPES),
       op=st.sampled_from(["add", "mul", "maximum"]), seed=st.integers(0, 2**16))
def test_property_broadcast_add_mul_maximum(shapes, dta, dtb, op, seed) -> None:
    a = _values(shapes.input_shapes[0], dta, seed)
    b = _values(shapes.input_shapes[1], dtb, seed + 1)
    fn = {"add": lambda t, x, y: t.add(x, y), "mul": lambda t, x, y: x * y,
          "maximum": lambda t, x, y: t.maximum(x, y)}[op]
    tol = 1e-2 if np.float16 in (dta, dtb) else 1e-5
    check(Case(op, fn, [a, b], grad=False, atol=tol, rtol=tol))


@settings(max_examples=25, deadline=None)
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       seed=st.integers(0, 2**16))
def test_property_broadcast_grads(shapes, seed) -> None:
    a = _values(shapes.input_shapes[0], np.float64, seed)
    b = np.asarray(np.abs(_values(shapes.input_shapes[1], np.float64, seed + 1)) + 0.5)
    check(Case("mixed", lambda t, x, y: (x * y - x / y + t.maximum(x, y)) ** 2, [a, b]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("weight", ["tensor", 0.3, 0.7, -0.8, 1.0])
def test_lerp_is_bit_exact_like_torch_s_fused_kernel(dtype, weight):
    """torch's CPU kernel computes ``fma(w, end - start, start)`` (``|w| < 0.5``) or
    ``fma(w - 1, end - start, end)``, in float32 for half types: the same bits here."""
    import torch
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(4096).astype(dtype) for _ in range(2))
    w = (rng.random(4096) * 3 - 1).astype(dtype)
    res = [lib.lerp(lib.from_numpy(a), lib.from_numpy(b),
                    lib.from_numpy(w) if weight == "tensor" else weight).numpy()
           for lib in (mytorch, torch)]
    np.testing.assert_array_equal(res[0], res[1])
