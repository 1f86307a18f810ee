"""Creation functions against the torch oracle: values, dtype, shape and requires_grad."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import assert_same, check_raises

import mytorch


def same(fn, *, atol: float = 0.0, rtol: float = 0.0) -> None:
    """``fn(lib)`` gives equal tensors (values, dtype, shape, requires_grad) on both libraries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mine, ref = fn(mytorch), fn(torch)
    assert_same(mine, ref, atol=atol, rtol=rtol)
    for m, r in zip(_tensors(mine), _tensors(ref), strict=False):
        assert m.requires_grad == r.requires_grad, f"requires_grad {m.requires_grad} vs torch"


def _tensors(x):
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in _tensors(v)]
    return [x] if isinstance(x, (mytorch.Tensor, torch.Tensor)) else []


NP_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
             np.float64, np.complex64, np.complex128]

# ----------------------------------------------------------------------------- tensor()
TENSOR_CASES = {
    "bools": lambda t: t.tensor([True, False]),
    "ints": lambda t: t.tensor([1, 2, -3]),
    "int_float_mix": lambda t: t.tensor([1, 2.5]),
    "bool_int_mix": lambda t: t.tensor([True, 2]),
    "complex": lambda t: t.tensor([1, 2j]),
    "int_float_complex": lambda t: t.tensor([1, 2.0, 1j]),
    "nested": lambda t: t.tensor([[1, 2], [3, 4]]),
    "nested_tuples": lambda t: t.tensor(((1, 2), (3, 4.0))),
    "scalar_int": lambda t: t.tensor(3),
    "scalar_float": lambda t: t.tensor(3.5),
    "scalar_bool": lambda t: t.tensor(True),
    "empty": lambda t: t.tensor([]),
    "empty_2d": lambda t: t.tensor([[], []]),
    "range": lambda t: t.tensor(range(4)),
    "size": lambda t: t.tensor(t.Size([2, 3])),
    "int64_limits": lambda t: t.tensor([-2**63, 2**63 - 1]),
    "np_float64_scalar": lambda t: t.tensor(np.float64(2.5)),
    "np_int32_scalar": lambda t: t.tensor(np.int32(2)),
    "list_np_float64": lambda t: t.tensor([np.float64(1.5), np.float64(2)]),
    "list_np_int32_int16": lambda t: t.tensor([np.int32(2), np.int16(1)]),
    "list_int_np_int32": lambda t: t.tensor([1, np.int32(2)]),
    "list_np_float32_float": lambda t: t.tensor([np.float32(1), 2.5]),
    "list_bool_np_int8": lambda t: t.tensor([True, np.int8(3)]),
    "list_np_arrays_int32": lambda t: t.tensor([np.array([1, 2], np.int32), np.array([3, 4], np.int32)]),
    "list_0d_float": lambda t: t.tensor([t.tensor(1.5), t.tensor(2.0)]),
    "list_0d_int": lambda t: t.tensor([t.tensor(1), t.tensor(2)]),
    "list_0d_float64": lambda t: t.tensor([t.tensor(1.0, dtype=t.float64), t.tensor(2.0, dtype=t.float64)]),
    "list_0d_int8": lambda t: t.tensor([t.tensor(1, dtype=t.int8), t.tensor(2, dtype=t.int8)]),
    "list_0d_int8_and_int": lambda t: t.tensor([t.tensor(1, dtype=t.int8), 2]),
    "list_0d_float_int8": lambda t: t.tensor([t.tensor(1.0), t.tensor(2, dtype=t.int8)]),
    "list_1elem_tensor": lambda t: t.tensor([t.tensor([1.0])]),
    "dtype_truncates": lambda t: t.tensor([1.7, -2.7, 0.5, -0.5], dtype=t.int32),
    "dtype_float16": lambda t: t.tensor([1.0, 2], dtype=t.float16),
    "dtype_python_float": lambda t: t.tensor([1, 2], dtype=float),
    "dtype_python_int": lambda t: t.tensor([1.5, 2], dtype=int),
    "dtype_python_bool": lambda t: t.tensor([0, 2], dtype=bool),
    "uint8_wraps": lambda t: t.tensor([-1], dtype=t.uint8),
    "float32_overflow_inf": lambda t: t.tensor(1e300, dtype=t.float32),
    "requires_grad": lambda t: t.tensor([1.0, 2], requires_grad=True),
    "from_tensor": lambda t: t.tensor(t.tensor([1, 2], dtype=t.int16)),
    "from_tensor_rg_drops": lambda t: t.tensor(t.ones(2, requires_grad=True)),
    "np_dtype_override": lambda t: t.tensor(np.array([1, 2]), dtype=t.float16),
    "np_strided_column": lambda t: t.tensor(np.arange(6.0).reshape(2, 3)[:, 1]),
}


@pytest.mark.parametrize("fn", TENSOR_CASES.values(), ids=TENSOR_CASES.keys())
def test_tensor(fn):
    same(fn)


@pytest.mark.parametrize("npd", NP_DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("make", ["tensor", "as_tensor", "from_numpy", "asarray"])
def test_from_numpy_every_dtype(make, npd):
    arr = (np.arange(6) % 3).astype(npd).reshape(2, 3)
    same(lambda t: getattr(t, make)(arr.copy()))


@pytest.mark.parametrize("npd", NP_DTYPES, ids=lambda d: d.__name__)
def test_tensor_of_numpy_scalars(npd):
    same(lambda t: t.tensor(npd(1)))
    same(lambda t: t.tensor([npd(1), npd(0)]))


TENSOR_ERRORS = {
    "ragged": lambda t: t.tensor([[1, 2], [3]]),
    "string": lambda t: t.tensor("abc"),
    "list_of_strings": lambda t: t.tensor(["a"]),
    "none": lambda t: t.tensor(None),
    "none_inside": lambda t: t.tensor([1, None]),
    "int_overflow": lambda t: t.tensor([2**63]),
    "huge_int": lambda t: t.tensor(2**70),
    "float_tensors_inside": lambda t: t.tensor([t.ones(2), t.ones(2)]),
    "int_tensors_inside": lambda t: t.tensor([t.tensor([1, 2]), t.tensor([3, 4])]),
    "requires_grad_int": lambda t: t.tensor([1, 2], requires_grad=True),
    "negative_strides": lambda t: t.tensor(np.arange(4.0)[::-1]),
    "object_array": lambda t: t.tensor(np.array([1, "a"], dtype=object)),
    "longdouble_array": lambda t: t.tensor(np.zeros(2, np.longdouble)),
}


@pytest.mark.parametrize("fn", TENSOR_ERRORS.values(), ids=TENSOR_ERRORS.keys())
def test_tensor_errors(fn):
    check_raises(fn)


def test_tensor_copies():
    arr = np.arange(3.0)
    t = mytorch.tensor(arr)
    arr[0] = 100
    assert t[0].item() == 0.0 if hasattr(mytorch.Tensor, "__getitem__") else t.tolist()[0] == 0.0
    src = mytorch.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match="clone"):
        cp = mytorch.tensor(src)
    src.add_(1)
    assert cp.tolist() == [1.0, 2.0]


# ----------------------------------------------------------------------------- sharing memory
@pytest.mark.parametrize("make", ["from_numpy", "as_tensor", "asarray"])
def test_shares_memory_with_numpy(make):
    arr = np.zeros((2, 3), np.float32)
    t = getattr(mytorch, make)(arr)
    arr[0, 1] = 5  # NumPy → tensor
    assert t.tolist()[0][1] == 5
    t.add_(1)  # tensor → NumPy
    assert arr[1, 2] == 1 and arr[0, 1] == 6
    back = t.numpy()
    assert np.shares_memory(back, arr)
    back[1, 0] = -7
    assert t.tolist()[1][0] == -7


def test_as_tensor_of_tensor_is_identity_and_converts():
    x = mytorch.ones(3)
    assert mytorch.as_tensor(x) is x
    assert mytorch.as_tensor(x, dtype=mytorch.float32) is x
    y = mytorch.as_tensor(x, dtype=mytorch.float64)
    assert y.dtype is mytorch.float64 and y is not x


def test_as_tensor_with_other_dtype_copies():
    arr = np.zeros(3, np.float32)
    t = mytorch.as_tensor(arr, dtype=mytorch.float64)
    arr[0] = 1
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_asarray_copy_true_copies():
    arr = np.zeros(3)
    t = mytorch.asarray(arr, copy=True)
    arr[0] = 1
    assert t.tolist() == [0.0, 0.0, 0.0]


FROM_NUMPY_ERRORS = {
    "negative_strides": lambda t: t.from_numpy(np.zeros(4)[::-1]),
    "negative_strides_as_tensor": lambda t: t.as_tensor(np.arange(3.0)[::-1]),
    "object_dtype": lambda t: t.from_numpy(np.zeros(2, object)),
    "longdouble": lambda t: t.from_numpy(np.zeros(2, np.longdouble)),
    "str_dtype": lambda t: t.from_numpy(np.array(["a", "b"])),
    "not_an_array": lambda t: t.from_numpy([1, 2]),
}


@pytest.mark.parametrize("fn", FROM_NUMPY_ERRORS.values(), ids=FROM_NUMPY_ERRORS.keys())
def test_from_numpy_errors(fn):
    check_raises(fn)


def test_from_numpy_keeps_strides():
    arr = np.zeros((3, 4))[:, ::2]
    assert mytorch.from_numpy(arr).stride() == torch.from_numpy(arr).stride()


# ----------------------------------------------------------------------------- filled
FILLED_CASES = {
    "zeros_varargs": lambda t: t.zeros(2, 3),
    "zeros_tuple": lambda t: t.zeros((2, 3)),
    "zeros_list": lambda t: t.zeros([2, 3]),
    "zeros_size": lambda t: t.zeros(t.Size([2, 3])),
    "zeros_0d": lambda t: t.zeros(()),
    "zeros_empty_dim": lambda t: t.zeros(0, 3),
    "zeros_int32": lambda t: t.zeros(2, dtype=t.int32),
    "zeros_rg": lambda t: t.zeros(2, requires_grad=True),
    "ones_bool": lambda t: t.ones(2, 3, dtype=t.bool),
    "ones_complex": lambda t: t.ones(2, dtype=t.complex64),
    "ones_f64_rg": lambda t: t.ones((2,), dtype=t.float64, requires_grad=True),
    "full_int": lambda t: t.full((2,), 3),
    "full_float": lambda t: t.full((2,), 3.0),
    "full_bool": lambda t: t.full((2,), True),
    "full_complex": lambda t: t.full((2,), 1j),
    "full_list_size": lambda t: t.full([2, 3], 1.5),
    "full_tensor_value": lambda t: t.full((2,), t.tensor(2)),
    "full_dtype_truncates": lambda t: t.full((2,), 2.7, dtype=t.int64),
    "full_rg": lambda t: t.full((2, 2), 0.5, requires_grad=True),
    "scalar_tensor": lambda t: t.scalar_tensor(3),
    "eye": lambda t: t.eye(3),
    "eye_rect": lambda t: t.eye(2, 4, dtype=t.int64),
    "eye_tall": lambda t: t.eye(4, 2),
    "eye_0": lambda t: t.eye(0),
    "eye_rg": lambda t: t.eye(2, requires_grad=True),
}


@pytest.mark.parametrize("fn", FILLED_CASES.values(), ids=FILLED_CASES.keys())
def test_filled(fn):
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda t: t.empty(2, 3), lambda t: t.empty((2, 3), dtype=t.int16),
    lambda t: t.empty(t.Size([4]), requires_grad=True), lambda t: t.empty(0),
    lambda t: t.empty_like(t.ones(2, 3, dtype=t.int8)),
    lambda t: t.ones(2, dtype=t.int8).new_empty(3), lambda t: t.ones(2).new_empty((2, 2)),
    lambda t: t.Tensor(2, 3), lambda t: t.Tensor(t.Size([2, 3])), lambda t: t.ones(2).new(2, 3),
], ids=["varargs", "tuple_int16", "size_rg", "zero", "empty_like", "new_empty", "new_empty_tuple",
        "Tensor_2_3", "Tensor_Size", "new_legacy_sizes"])
def test_empty_shape_dtype(fn):
    """Uninitialised memory: compare everything but the values."""
    mine, ref = fn(mytorch), fn(torch)
    assert tuple(mine.shape) == tuple(ref.shape)
    assert str(mine.dtype) == str(ref.dtype)
    assert mine.requires_grad == ref.requires_grad


FILLED_ERRORS = {
    "zeros_no_size": lambda t: t.zeros(),
    "zeros_negative": lambda t: t.zeros(-1),
    "zeros_float_size": lambda t: t.zeros(2.5),
    "zeros_int_rg": lambda t: t.zeros(2, dtype=t.long, requires_grad=True),
    "full_int_size": lambda t: t.full(3, 2.0),
    "eye_negative": lambda t: t.eye(-1),
    "ones_negative_in_tuple": lambda t: t.ones((2, -3)),
}


@pytest.mark.parametrize("fn", FILLED_ERRORS.values(), ids=FILLED_ERRORS.keys())
def test_filled_errors(fn):
    check_raises(fn)


LIKE_CASES = {
    "zeros_like": lambda t: t.zeros_like(t.ones(2, 3, dtype=t.int32)),
    "ones_like_dtype": lambda t: t.ones_like(t.ones(2, 3), dtype=t.float64),
    "full_like_int_truncates": lambda t: t.full_like(t.ones(2, 3, dtype=t.int32), 2.7),
    "full_like_rg": lambda t: t.full_like(t.ones(2, 3), 2, requires_grad=True),
    "zeros_like_drops_rg": lambda t: t.zeros_like(t.ones(2, requires_grad=True)),
    "ones_like_0d": lambda t: t.ones_like(t.tensor(3.0)),
    "new_tensor": lambda t: t.ones(2, dtype=t.int32).new_tensor([1.5, 2.5]),
    "new_tensor_dtype": lambda t: t.ones(2, dtype=t.int32).new_tensor([1.5, 2.5], dtype=t.float64),
    "new_tensor_rg": lambda t: t.ones(2).new_tensor([1, 2], requires_grad=True),
    "new_tensor_of_tensor": lambda t: t.ones(2).new_tensor(t.ones(2, requires_grad=True)),
    "new_zeros_varargs": lambda t: t.ones(2, dtype=t.int32).new_zeros(2, 3),
    "new_zeros_tuple": lambda t: t.ones(2, dtype=t.int32).new_zeros((2, 3)),
    "new_zeros_dtype": lambda t: t.ones(2, dtype=t.int32).new_zeros(2, dtype=t.float64),
    "new_ones_list": lambda t: t.ones(2, dtype=t.float64).new_ones([2]),
    "new_full": lambda t: t.ones(2, dtype=t.float64).new_full((2,), 3),
    "new_full_int_truncates": lambda t: t.ones(2, dtype=t.int32).new_full((2,), 3.7),
    "new_legacy_data": lambda t: t.ones(2, dtype=t.float64).new([1, 2]),
    "new_legacy_empty": lambda t: t.ones(2, dtype=t.int32).new(),
    "Tensor_list": lambda t: t.Tensor([1, 2]),
    "Tensor_tuple": lambda t: t.Tensor((1, 2)),
    "Tensor_no_args": lambda t: t.Tensor(),
}


@pytest.mark.parametrize("fn", LIKE_CASES.values(), ids=LIKE_CASES.keys())
def test_like_and_new(fn):
    same(fn)


def test_legacy_constructor_rejects_a_number():
    check_raises(lambda t: t.Tensor(2.5))


# ----------------------------------------------------------------------------- ranges
ARANGE_ARGS = [(5,), (1, 4), (10, 0, -3), (0, -10, -3), (0, 1, 0.1), (0, 1, 0.3), (1, 0, -0.1),
               (0.5, 10.2, 0.7), (-3, 3, 0.25), (0, 10, 3), (0, 0.9, 0.3), (1, 2.1, 0.1),
               (0, 5.5, 1.1), (-1.5, 1.6, 0.2), (1.0, 4), (5.0,), (0,), (1, 1), (2, 3, 5),
               (0.1, 0.7, 0.1), (0, 0.6, 0.2), (-1, -0.1, 0.3), (100, 0, -0.7), (0, 3.5)]


@pytest.mark.parametrize("args", ARANGE_ARGS, ids=str)
@pytest.mark.parametrize("dtype", [None, "float64", "float16", "int64", "int32", "int16"])
def test_arange_lengths_and_values(args, dtype):
    if dtype == "int64" and any(0 < abs(a) < 1 for a in args[2:]):
        check_raises(lambda t: t.arange(*args, dtype=getattr(t, dtype)))  # step truncates to 0
        return
    # torch's SIMD kernel computes chunk bases then adds k*step, so values may differ by an ulp
    # from start + i*step; lengths and dtypes must match exactly.
    kw = {} if dtype is None else {"dtype": dtype}
    same(lambda t: t.arange(*args, **{k: getattr(t, v) for k, v in kw.items()}),
         rtol=1e-3 if dtype == "float16" else 3e-7, atol=1e-12)


@given(start=st.floats(-50, 50), length=st.floats(0, 100),
       step=st.sampled_from([0.1, 0.2, 0.3, 0.7, 1.0, 1.5, 2.5, -0.1, -0.3, -1.0]))
@settings(max_examples=150, deadline=None)
def test_arange_property(start, length, step):
    end = start + length * (1 if step > 0 else -1)
    same(lambda t: t.arange(start, end, step, dtype=t.float64), rtol=1e-14, atol=1e-12)


ARANGE_MISC = {
    "tensor_bound": lambda t: t.arange(t.tensor(3)),
    "np_int_bound": lambda t: t.arange(np.int64(3)),
    "np_float_bound": lambda t: t.arange(np.float32(0.5), 3),
    "bool_start": lambda t: t.arange(True, 3),
    "rg": lambda t: t.arange(3.0, requires_grad=True),
    "uint8_wraps": lambda t: t.arange(0, 300, 50, dtype=t.uint8),
    "int8_wraps": lambda t: t.arange(0, 300, 50, dtype=t.int8),
    "big_ints": lambda t: t.arange(2**62, 2**62 + 3),
    "keyword_end": lambda t: t.arange(0, end=3),
}


@pytest.mark.parametrize("fn", ARANGE_MISC.values(), ids=ARANGE_MISC.keys())
def test_arange_misc(fn):
    same(fn)


RANGE_ERRORS = {
    "arange_wrong_sign": lambda t: t.arange(0, 5, -1),
    "arange_step0": lambda t: t.arange(0, 5, 0),
    "arange_int64_step_truncates_to_0": lambda t: t.arange(0, 2.5, 0.5, dtype=t.int64),
    "arange_inf": lambda t: t.arange(0, float("inf")),
    "arange_nan": lambda t: t.arange(0, float("nan")),
    "arange_complex": lambda t: t.arange(0, 3, 1j),
    "arange_int_rg": lambda t: t.arange(3, requires_grad=True),
    "linspace_negative_steps": lambda t: t.linspace(2, 3, -1),
    "linspace_float_steps": lambda t: t.linspace(0, 1, 2.5),
    "linspace_1d_bound": lambda t: t.linspace(t.tensor([0.0]), t.tensor(1.0), 3),
}


@pytest.mark.parametrize("fn", RANGE_ERRORS.values(), ids=RANGE_ERRORS.keys())
def test_range_errors(fn):
    check_raises(fn)


LINSPACE_CASES = {
    "basic": lambda t: t.linspace(0, 1, 5),
    "int64": lambda t: t.linspace(0, 10, 4, dtype=t.int64),
    "int32_negative": lambda t: t.linspace(-5, 10, 7, dtype=t.int32),
    "int64_fractional": lambda t: t.linspace(-5.5, 10, 7, dtype=t.int64),
    "one_step": lambda t: t.linspace(2, 3, 1),
    "zero_steps": lambda t: t.linspace(2, 3, 0),
    "float64": lambda t: t.linspace(-3.3, 7.1, 11, dtype=t.float64),
    "float64_many": lambda t: t.linspace(-1, 1, 1001, dtype=t.float64),
    "float32_many": lambda t: t.linspace(0, 7, 999),
    "descending": lambda t: t.linspace(5, -5, 8),
    "rg": lambda t: t.linspace(0, 1, 3, requires_grad=True),
    "tensor_bounds": lambda t: t.linspace(t.tensor(0.0), t.tensor(1.0), 3),
    "complex": lambda t: t.linspace(0, 1 + 1j, 3),
    "steps_kw": lambda t: t.linspace(0, 1, steps=4),
    "logspace": lambda t: t.logspace(0, 2, 3),
    "logspace_base2": lambda t: t.logspace(0, 3, 4, base=2),
    "logspace_int": lambda t: t.logspace(0, 3, 4, base=2, dtype=t.int64),
    "logspace_f64": lambda t: t.logspace(-1, 1, 5, dtype=t.float64),
    "logspace_complex": lambda t: t.logspace(0, 1j, 3),
    "logspace_rg": lambda t: t.logspace(0, 1, 3, requires_grad=True),
}


@pytest.mark.parametrize("fn", LINSPACE_CASES.values(), ids=LINSPACE_CASES.keys())
def test_linspace_logspace(fn):
    same(fn, atol=1e-6, rtol=1e-6)


# ----------------------------------------------------------------------------- misc + defaults
def test_is_tensor_and_numel():
    assert mytorch.is_tensor(mytorch.ones(2)) and not mytorch.is_tensor([1])
    assert not mytorch.is_tensor(np.ones(2))
    assert mytorch.numel(mytorch.ones(2, 3)) == torch.numel(torch.ones(2, 3)) == 6
    assert mytorch.numel(mytorch.ones(0, 3)) == 0


@pytest.fixture
def float64_default():
    mytorch.set_default_dtype(mytorch.float64)
    torch.set_default_dtype(torch.float64)
    yield
    mytorch.set_default_dtype(mytorch.float32)
    torch.set_default_dtype(torch.float32)


DEFAULT_DTYPE_CASES = {
    "tensor_float": lambda t: t.tensor([1.5]),
    "tensor_complex": lambda t: t.tensor([1j]),
    "tensor_int_unchanged": lambda t: t.tensor([1]),
    "ones": lambda t: t.ones(2),
    "arange_float": lambda t: t.arange(0.0, 1, 0.25),
    "full_float": lambda t: t.full((1,), 2.0),
    "linspace": lambda t: t.linspace(0, 1, 3),
    "eye": lambda t: t.eye(2),
    "result_type": lambda t: t.ones(2, dtype=t.int32) + 2.5,
    "get_default": lambda t: t.get_default_dtype(),
}


@pytest.mark.parametrize("fn", DEFAULT_DTYPE_CASES.values(), ids=DEFAULT_DTYPE_CASES.keys())
def test_set_default_dtype(float64_default, fn):
    same(fn)


def test_set_default_dtype_rejects_ints():
    check_raises(lambda t: t.set_default_dtype(t.int64))
    assert mytorch.get_default_dtype() is mytorch.float32


def test_is_nonzero():
    same(lambda t: t.is_nonzero(t.tensor([1.5])))
    check_raises(lambda t: t.is_nonzero(t.tensor([1, 2])))
    check_raises(lambda t: t.is_nonzero(t.tensor([])))
