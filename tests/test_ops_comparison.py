"""Comparisons (mytorch/_ops/comparison.py) against real PyTorch: bool results, promotion,
broadcasting, maximum/minimum gradients (ties, nan), closeness and value tests."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from oracle import Case, check, check_raises, randn

import mytorch


def ints(*shape: int, lo: int = -3, hi: int = 4, dtype=np.int64, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + len(shape)).integers(lo, hi, size=shape).astype(dtype)


def bools(*shape: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, size=shape).astype(bool)


SPECIAL = np.array([0.0, -0.0, 1.0, -1.5, np.nan, np.inf, -np.inf, 1e-9], np.float32)

CMP = {
    "eq": lambda t, a, b: t.eq(a, b), "ne": lambda t, a, b: t.ne(a, b),
    "lt": lambda t, a, b: t.lt(a, b), "le": lambda t, a, b: t.le(a, b),
    "gt": lambda t, a, b: t.gt(a, b), "ge": lambda t, a, b: t.ge(a, b),
    "greater": lambda t, a, b: t.greater(a, b), "greater_equal": lambda t, a, b: t.greater_equal(a, b),
    "less": lambda t, a, b: t.less(a, b), "less_equal": lambda t, a, b: t.less_equal(a, b),
    "not_equal": lambda t, a, b: t.not_equal(a, b),
    "op_eq": lambda t, a, b: a == b, "op_ne": lambda t, a, b: a != b,
    "op_lt": lambda t, a, b: a < b, "op_le": lambda t, a, b: a <= b,
    "op_gt": lambda t, a, b: a > b, "op_ge": lambda t, a, b: a >= b,
    "method_lt": lambda t, a, b: a.lt(b), "method_eq": lambda t, a, b: a.eq(b),
}
INPUTS = {
    "float_bcast": [randn(3, 4), randn(4)],
    "int_vs_float": [ints(3, 4), ints(4).astype(np.float32)],
    "bool_vs_int": [bools(3), ints(3, lo=0, hi=2)],
    "uint8_int8": [ints(5, lo=0, dtype=np.uint8), ints(5, dtype=np.int8, seed=3)],
    "f16_f64": [randn(4).astype(np.float16), randn(4).astype(np.float64)],
    "special_values": [SPECIAL, SPECIAL[::-1].copy()],
    "zero_dim": [randn(3), np.array(0.5, np.float32)],
    "3d_bcast": [randn(2, 1, 3), randn(4, 1)],
}


@pytest.mark.parametrize("inputs", list(INPUTS))
@pytest.mark.parametrize("name", list(CMP))
def test_comparisons(name: str, inputs: str) -> None:
    check(Case(name, CMP[name], INPUTS[inputs], grad=False))


SCALARS = [
    Case("int_eq_float_scalar", lambda t, a: t.eq(a, 1.5), [ints(5)]),
    Case("int_lt_float_scalar", lambda t, a: a < 0.5, [ints(5)]),
    Case("float_ge_int_scalar", lambda t, a: a >= 0, [randn(5)]),
    Case("reflected_lt", lambda t, a: 0 < a, [randn(5)]),
    Case("reflected_eq", lambda t, a: 1 == a, [ints(5)]),
    Case("bool_eq_true", lambda t, a: a == True, [bools(5)]),  # noqa: E712
    Case("bool_ge_int", lambda t, a, b: t.ge(a, b), [bools(3), ints(3)]),
    Case("nan_ne_nan", lambda t, a: a != a, [SPECIAL]),
    Case("eq_out", lambda t, a, b: t.eq(a, b, out=t.empty(0, dtype=t.bool)), [ints(4), ints(4, seed=5)]),
    Case("lt_out_float", lambda t, a, b: t.lt(a, b, out=t.empty(4)), [randn(4), randn(4)]),
    Case("grad_input_gives_bool", lambda t, a: (a > 0).requires_grad, [randn(3)]),
    Case("lt_inplace", lambda t, a: a.mul(1).lt_(0), [randn(5)], grad=False),
    Case("ge_inplace_int", lambda t, a: a.ge_(1), [ints(5)]),
]


@pytest.mark.parametrize("case", SCALARS, ids=str)
def test_scalar_comparisons(case: Case) -> None:
    check(case)


def test_eq_with_non_numbers() -> None:
    x = mytorch.tensor([1, 2])
    assert (x == None) is False and (x != None) is True  # noqa: E711
    assert (x == "a") is False
    assert isinstance(x == 1, mytorch.Tensor)
    assert {x: 1}[x] == 1  # still hashable, by identity


# ------------------------------------------------------------------------ maximum and friends
EXTREMA = {
    "maximum": lambda t, a, b: t.maximum(a, b), "minimum": lambda t, a, b: t.minimum(a, b),
    "fmax": lambda t, a, b: t.fmax(a, b), "fmin": lambda t, a, b: t.fmin(a, b),
    "method_max": lambda t, a, b: a.maximum(b), "method_fmin": lambda t, a, b: a.fmin(b),
}
TIES = [np.array([1.0, 2.0, np.nan, 3.0, np.nan, 0.0], np.float64),
        np.array([1.0, 1.0, 2.0, np.nan, np.nan, -0.0], np.float64)]
EXTREMA_INPUTS = {
    "bcast": [randn(3, 4), randn(4)],
    "bcast3d": [randn(2, 1, 3), randn(4, 1)],
    "ties_and_nan": TIES,
    "zero_dim": [randn(3), np.array(0.1, np.float32)],
    "mixed_dtypes": [randn(3), randn(3, dtype=np.float64)],
}


@pytest.mark.parametrize("inputs", list(EXTREMA_INPUTS))
@pytest.mark.parametrize("name", list(EXTREMA))
def test_extrema_values_and_grads(name: str, inputs: str) -> None:
    check(Case(name, EXTREMA[name], EXTREMA_INPUTS[inputs]))


EXTREMA_DTYPES = [
    Case("max_int", lambda t, a, b: t.maximum(a, b), [ints(4), ints(4, seed=9)]),
    Case("min_int8_uint8", lambda t, a, b: t.minimum(a, b),
         [ints(4, dtype=np.int8), ints(4, lo=0, dtype=np.uint8)]),
    Case("max_bool", lambda t, a, b: t.maximum(a, b), [bools(4), bools(4, seed=4)]),
    Case("fmax_int", lambda t, a, b: t.fmax(a, b), [ints(4), ints(4, seed=9)]),
    Case("max_int_float", lambda t, a, b: t.maximum(a, b), [ints(4), randn(4)]),
    Case("max_f16", lambda t, a, b: t.maximum(a, b),
         [randn(4).astype(np.float16), randn(4).astype(np.float16)],
         grad=False),
]


@pytest.mark.parametrize("case", EXTREMA_DTYPES, ids=str)
def test_extrema_dtypes(case: Case) -> None:
    check(case)


# ------------------------------------------------------------------------ closeness
CLOSE = [
    Case("isclose_default", lambda t, a, b: t.isclose(a, b),
         [np.array([1.0, 1.0, 1.0, 0.0], np.float32), np.array([1.0, 1 + 1e-6, 1.1, 1e-9], np.float32)]),
    Case("isclose_special", lambda t, a, b: t.isclose(a, b), [SPECIAL, SPECIAL.copy()]),
    Case("isclose_equal_nan", lambda t, a, b: t.isclose(a, b, equal_nan=True), [SPECIAL, SPECIAL.copy()]),
    Case("isclose_tols", lambda t, a, b: t.isclose(a, b, rtol=0.1, atol=0.5), [randn(5), randn(5)]),
    Case("isclose_zero_tol", lambda t, a, b: t.isclose(a, b, rtol=0, atol=0), [randn(5), randn(5)]),
    Case("isclose_inf_mismatch", lambda t, a, b: t.isclose(a, b),
         [np.array([np.inf, np.inf, 1.0]), np.array([-np.inf, 1e308, np.inf])]),
    Case("isclose_bcast", lambda t, a, b: t.isclose(a, b), [randn(3, 4), randn(4)]),
    Case("isclose_int", lambda t, a, b: t.isclose(a, b, atol=1), [ints(6), ints(6, seed=3)]),
    Case("isclose_int_exact", lambda t, a, b: t.isclose(a, b, rtol=0, atol=0), [ints(6), ints(6, seed=3)]),
    Case("isclose_bool", lambda t, a, b: t.isclose(a, b), [bools(5), bools(5, seed=2)]),
    Case("isclose_method", lambda t, a, b: a.isclose(b, rtol=1e-3), [randn(5), randn(5)]),
    Case("allclose_true", lambda t, a: t.allclose(a, a + 1e-9), [randn(5, dtype=np.float64)]),
    Case("allclose_false", lambda t, a, b: t.allclose(a, b), [randn(5), randn(5) + 1]),
    Case("allclose_nan", lambda t, a: (t.allclose(a, a), t.allclose(a, a, equal_nan=True)), [SPECIAL]),
    Case("allclose_bcast", lambda t, a, b: t.allclose(a, b),
         [np.ones(1, np.float32), np.ones(3, np.float32)]),
    Case("allclose_method", lambda t, a: a.allclose(a * (1 + 1e-7)), [randn(5)]),
    Case("equal_same", lambda t, a: t.equal(a, a.clone()), [randn(3, 2)]),
    Case("equal_dtypes", lambda t, a: t.equal(a, a.double()), [ints(4)]),
    Case("equal_shape", lambda t, a, b: t.equal(a, b), [np.ones(1, np.float32), np.ones(2, np.float32)]),
    Case("equal_nan", lambda t, a: t.equal(a, a), [SPECIAL]),
    Case("equal_differs", lambda t, a, b: a.equal(b), [ints(4), ints(4, seed=8)]),
    Case("equal_empty", lambda t, a: t.equal(a, a), [np.zeros((0, 2), np.float32)]),
]


@pytest.mark.parametrize("case", CLOSE, ids=str)
def test_closeness(case: Case) -> None:
    check(case)


# ------------------------------------------------------------------------ value tests
VALUE_TESTS = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal"]
VALUE_INPUTS = {"special_f32": SPECIAL, "special_f64": SPECIAL.astype(np.float64),
                "special_f16": SPECIAL.astype(np.float16), "int": ints(2, 3), "bool": bools(4),
                "uint8": ints(3, lo=0, dtype=np.uint8), "zero_dim": np.array(np.inf),
                "complex": np.array([1 + 0j, 1j, np.nan + 0j], np.complex64)}


@pytest.mark.parametrize("inputs", list(VALUE_INPUTS))
@pytest.mark.parametrize("name", VALUE_TESTS)
def test_value_tests(name: str, inputs: str) -> None:
    if inputs == "complex" and name in ("isposinf", "isneginf"):
        check_raises(lambda t, a: getattr(t, name)(a), VALUE_INPUTS[inputs])
        return
    check(Case(name, lambda t, a: getattr(t, name)(a), [VALUE_INPUTS[inputs]], grad=False))
    check(Case(name + "_method", lambda t, a: getattr(a, name)(), [VALUE_INPUTS[inputs]], grad=False))


# ------------------------------------------------------------------------ errors
ERRORS = [
    ("shape_mismatch_eq", lambda t, a, b: a == b, [randn(2, 3), randn(2, 4)]),
    ("shape_mismatch_lt", lambda t, a, b: t.lt(a, b), [randn(2), randn(3)]),
    ("scalar_first", lambda t, a: t.lt(1, a), [randn(3)]),
    ("maximum_scalar", lambda t, a: t.maximum(a, 2), [randn(3)]),
    ("fmin_scalar", lambda t, a: t.fmin(a, 2.0), [randn(3)]),
    ("maximum_shapes", lambda t, a, b: t.maximum(a, b), [randn(3), randn(4)]),
    ("isclose_dtype", lambda t, a, b: t.isclose(a, b), [randn(3), randn(3, dtype=np.float64)]),
    ("isclose_int_float", lambda t, a, b: t.isclose(a, b), [ints(3), randn(3)]),
    ("allclose_dtype", lambda t, a, b: t.allclose(a, b), [ints(3), ints(3, dtype=np.int32)]),
    ("isclose_scalar", lambda t, a: t.isclose(a, 1.0), [randn(3)]),
    ("isclose_neg_rtol", lambda t, a: t.isclose(a, a, rtol=-1), [randn(3)]),
    ("isclose_neg_atol", lambda t, a: t.isclose(a, a, atol=-1), [randn(3)]),
    ("isclose_shapes", lambda t, a, b: t.isclose(a, b), [randn(2), randn(3)]),
    ("lt_inplace_shape", lambda t, a, b: a.lt_(b), [randn(3), randn(2, 3)]),
]


@pytest.mark.parametrize("fn,inputs", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors(fn, inputs) -> None:
    check_raises(fn, *inputs)


def test_isclose_dtype_message() -> None:
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        mytorch.isclose(mytorch.ones(2), mytorch.ones(2, dtype=mytorch.float64))


def test_exports_and_methods() -> None:
    for name in ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                 "less_equal", "not_equal", "maximum", "minimum", "fmax", "fmin", "allclose",
                 "isclose", "equal", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal"]:
        assert callable(getattr(mytorch, name)), name
        assert hasattr(mytorch.Tensor, name), name
        if hasattr(torch.Tensor, name + "_"):
            assert hasattr(mytorch.Tensor, name + "_"), name + "_"
