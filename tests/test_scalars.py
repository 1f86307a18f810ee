"""Python numbers meeting tensors of small integer dtypes, against torch.

torch's rule: a number joins type promotion by *category* only; the result dtype comes first, and
then the number is converted. Arithmetic converts it like a C cast (``u8 + 300`` wraps to 44,
``u8 / -3`` divides by -3.0 because true division computes in float); a value that becomes an
element or a coefficient (fill values, ``alpha``, clamp bounds, ``full``, ``tensor(...)``) is
checked and raises torch's overflow RuntimeError instead of wrapping.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from oracle import assert_same

import mytorch

U8 = np.array([1, 2, 250], dtype=np.uint8)
I8 = np.array([-3, 2, 100], dtype=np.int8)
F16 = np.array([1.5, 2.0], dtype=np.float16)


def _run(fn, lib):
    """``fn(lib, u8, i8, f16)`` on fresh copies: the result, or the exception it raised."""
    args = [lib.from_numpy(a.copy()) for a in (U8, I8, F16)]
    try:
        return fn(lib, *args)
    except Exception as e:  # noqa: BLE001 - compared with torch's below
        return e


def same_as_torch(fn):
    mine, ref = _run(fn, mytorch), _run(fn, torch)
    if isinstance(ref, Exception):
        assert isinstance(mine, Exception), f"torch raises {type(ref).__name__}: {ref}; mytorch " \
                                            f"returned {mine!r}"
        assert type(mine).__name__ == type(ref).__name__, f"{mine!r} vs torch {ref!r}"
        if "without overflow" in str(ref):  # the overflow message names the C type, like torch
            assert str(mine) == str(ref)
        return
    assert not isinstance(mine, Exception), f"mytorch raised {mine!r}; torch gives {ref!r}"
    assert_same(mine, ref)


CASES = {
    # arithmetic: the number joins promotion by category, then is cast (wrapping) to the result
    "u8_div_negative": lambda t, u, i, f: u / -3,
    "i8_div_big": lambda t, u, i, f: i / 200,
    "number_div_u8": lambda t, u, i, f: t.div(-3, u),
    "rtruediv_u8": lambda t, u, i, f: -3 / u,
    "i8_true_divide_big": lambda t, u, i, f: i.true_divide(200),
    "atan2_0dim_int": lambda t, u, i, f: i.atan2(t.tensor(200)),
    "xlogy_u8_negative": lambda t, u, i, f: u.xlogy(-1),
    "u8_add_wraps": lambda t, u, i, f: u + 300,
    "u8_add_negative": lambda t, u, i, f: u + (-1),
    "u8_mul_big": lambda t, u, i, f: u * 1000,
    "u8_rsub_big": lambda t, u, i, f: 300 - u,
    "i8_add_0dim_big": lambda t, u, i, f: i + t.tensor(300),
    "u8_floordiv_negative": lambda t, u, i, f: u // -3,
    "u8_remainder_negative": lambda t, u, i, f: u % -3,
    "remainder_number_u8": lambda t, u, i, f: t.remainder(-3, u),
    "u8_lt_big": lambda t, u, i, f: u < 300,
    "u8_eq_negative": lambda t, u, i, f: u == -1,
    "i8_eq_big": lambda t, u, i, f: i == 200,
    "u8_and_big": lambda t, u, i, f: u & 300,
    "u8_add_float": lambda t, u, i, f: u + 1.5,
    "f16_mul_big": lambda t, u, i, f: f * 70000,
    "u8_add_alpha_minus_one": lambda t, u, i, f: u.add(u, alpha=-1),
    "u8_sub_alpha_minus_one": lambda t, u, i, f: t.sub(u, 1, alpha=-1),
    "u8_addcmul_value_minus_one": lambda t, u, i, f: t.addcmul(u, u, u, value=-1),
    "pow_number_u8": lambda t, u, i, f: t.pow(-3, u),
    # checked conversions: wrap only negative ints into unsigned dtypes, else raise
    "clamp_u8_wraps_minus_one": lambda t, u, i, f: t.clamp(u, -1, 3),
    "clamp_u8_min_minus_one": lambda t, u, i, f: t.clamp(u, min=-1),
    "clamp_u8_overflow": lambda t, u, i, f: t.clamp(u, -1, 300),
    "clamp_i8_overflow": lambda t, u, i, f: t.clamp(i, -200, 200),
    "clamp_f16_overflow": lambda t, u, i, f: f.clamp(-1e5),
    "clamp_float_bound_promotes": lambda t, u, i, f: t.clamp(u, -1.5, 3),
    "clamp__u8": lambda t, u, i, f: u.clamp_(-1, 3),
    "clamp_min_u8": lambda t, u, i, f: u.clamp_min(-1),
    "full_u8_minus_one": lambda t, u, i, f: t.full((2,), -1, dtype=t.uint8),
    "full_u8_overflow": lambda t, u, i, f: t.full((2,), 300, dtype=t.uint8),
    "full_int32_overflow": lambda t, u, i, f: t.full((2,), 10**10, dtype=t.int32),
    "full_int64_overflow": lambda t, u, i, f: t.full((2,), 2**63, dtype=t.int64),
    "full_float_overflow": lambda t, u, i, f: t.full((2,), 1e39),
    "full_int_truncates": lambda t, u, i, f: t.full((2,), 1.5, dtype=t.int32),
    "full_like_minus_one": lambda t, u, i, f: t.full_like(u, -1),
    "new_full_minus_one": lambda t, u, i, f: u.new_full((2,), -1),
    "scalar_tensor_overflow": lambda t, u, i, f: t.scalar_tensor(300, dtype=t.uint8),
    "scalar_tensor_minus_one": lambda t, u, i, f: t.scalar_tensor(-1, dtype=t.uint8),
    "fill_minus_one": lambda t, u, i, f: u.fill_(-1),
    "fill_overflow": lambda t, u, i, f: u.fill_(300),
    "fill_i8_underflow": lambda t, u, i, f: i.fill_(-129),
    "fill_float_overflow": lambda t, u, i, f: t.zeros(2).fill_(1e40),
    "fill_0dim_tensor_wraps": lambda t, u, i, f: u.fill_(t.tensor(300)),
    "where_scalar_overflow": lambda t, u, i, f: t.where(u > 1, u, 300),
    "where_scalar_first_overflow": lambda t, u, i, f: t.where(u > 1, 300, u),
    "where_scalar_minus_one": lambda t, u, i, f: t.where(u > 1, u, -1),
    "where_0dim_tensor_wraps": lambda t, u, i, f: t.where(u > 1, u, t.tensor(300)),
    "masked_fill_overflow": lambda t, u, i, f: i.masked_fill(i > 1, 200),
    "masked_fill_minus_one": lambda t, u, i, f: u.masked_fill(u > 1, -1),
    "masked_fill_0dim_overflow": lambda t, u, i, f: u.masked_fill(u > 1, t.tensor(300)),
    "masked_fill_float_truncates": lambda t, u, i, f: u.masked_fill(u > 1, 1.5),
    "index_fill_overflow": lambda t, u, i, f: u.index_fill(0, t.tensor([0]), 300),
    "scatter_value_overflow": lambda t, u, i, f: u.scatter(0, t.tensor([0]), 300),
    "scatter_value_minus_one": lambda t, u, i, f: u.scatter(0, t.tensor([0]), -1),
    "setitem_minus_one": lambda t, u, i, f: (u.__setitem__(0, -1), u)[1],
    "setitem_overflow": lambda t, u, i, f: u.__setitem__(0, 300),
    "setitem_float_truncates": lambda t, u, i, f: (u.__setitem__(0, 1.7), u)[1],
    "add_alpha_overflow": lambda t, u, i, f: u.add(1, alpha=300),
    "add_alpha_float_overflow": lambda t, u, i, f: t.ones(2).add(1, alpha=1e39),
    "sub_alpha_i8_overflow": lambda t, u, i, f: i.sub(1, alpha=200),
    "addcmul_value_overflow": lambda t, u, i, f: t.addcmul(u, u, u, value=300),
    "index_add_alpha_overflow": lambda t, u, i, f: u.index_add(0, t.tensor([0]), u[:1], alpha=300),
    "addmm_alpha_overflow": lambda t, u, i, f: u[None, :2].addmm(u[None, :1], u[None, :2],
                                                                 alpha=300),
    "pow_int_exponent_overflow": lambda t, u, i, f: u ** 300,
    "pow_i8_exponent_overflow": lambda t, u, i, f: i.pow(200),
    "pow_int_negative_exponent": lambda t, u, i, f: u ** -1,
    "lerp_weight_overflow": lambda t, u, i, f: t.lerp(t.zeros(2), t.ones(2), 1e300),
    # tensor(): Python numbers are checked against an integer dtype, NumPy arrays are cast
    "tensor_int32_overflow": lambda t, u, i, f: t.tensor([10**10], dtype=t.int32),
    "tensor_float_int32_overflow": lambda t, u, i, f: t.tensor([1e10], dtype=t.int32),
    "tensor_u8_overflow": lambda t, u, i, f: t.tensor([300], dtype=t.uint8),
    "tensor_u8_minus_one": lambda t, u, i, f: t.tensor([-1], dtype=t.uint8),
    "tensor_u8_negative_float": lambda t, u, i, f: t.tensor([-1.5], dtype=t.uint8),
    "tensor_u8_truncates": lambda t, u, i, f: t.tensor([1.5, 2.7], dtype=t.uint8),
    "tensor_u8_scalar_overflow": lambda t, u, i, f: t.tensor(300, dtype=t.uint8),
    "tensor_int32_nan": lambda t, u, i, f: t.tensor([float("nan")], dtype=t.int32),
    "tensor_int32_inf": lambda t, u, i, f: t.tensor([float("inf")], dtype=t.int32),
    "tensor_int16_overflow": lambda t, u, i, f: t.tensor([[1, 2], [3, 40000]], dtype=t.int16),
    "tensor_float32_overflow_is_inf": lambda t, u, i, f: t.tensor([1e40], dtype=t.float32),
    "tensor_numpy_wraps": lambda t, u, i, f: t.tensor(np.array([300]), dtype=t.uint8),
    "tensor_int64_too_big": lambda t, u, i, f: t.tensor([2**63]),
    "tensor_bool_from_ints": lambda t, u, i, f: t.tensor([2, 0], dtype=t.bool),
    "legacy_ByteTensor_overflow": lambda t, u, i, f: t.ByteTensor([1, 300]),
}


# Cases mytorch already got right before the checked conversions were added: they guard the
# other half of the rule (arithmetic keeps wrapping, in-range values keep working).
GUARDS = {
    "u8_add_wraps", "u8_add_negative", "u8_mul_big", "u8_rsub_big",
    "i8_add_0dim_big", "u8_floordiv_negative", "u8_remainder_negative", "remainder_number_u8",
    "u8_lt_big", "u8_eq_negative", "i8_eq_big", "u8_and_big",
    "u8_add_float", "f16_mul_big", "pow_number_u8", "clamp_float_bound_promotes",
    "full_int_truncates", "fill_overflow", "fill_i8_underflow", "where_scalar_minus_one",
    "where_0dim_tensor_wraps", "masked_fill_minus_one", "masked_fill_float_truncates", "scatter_value_minus_one",
    "setitem_float_truncates", "pow_int_negative_exponent", "tensor_u8_minus_one", "tensor_u8_truncates",
    "tensor_float32_overflow_is_inf", "tensor_numpy_wraps", "tensor_int64_too_big", "tensor_bool_from_ints"
}


@pytest.mark.parametrize("name", [n for n in CASES if n not in GUARDS])
def test_numbers_meet_small_dtypes(name):
    same_as_torch(CASES[name])


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_arithmetic_still_wraps_and_in_range_values_still_work(name):
    same_as_torch(CASES[name])
