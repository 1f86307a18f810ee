"""torch's API surface, against torch: keyword spellings, legacy tensor types, the barebones
unsigned dtypes, a few functions, in-place view ops, deprecation warnings, error messages and the
public names of ``mytorch``."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from oracle import Case, assert_same, check, check_raises, randn

import mytorch
from bookkit.project import Project


def same(fn, *, shape_only=False, message=False):
    """``fn(lib)`` on both libraries: equal results, or the same exception class (and text)."""
    try:
        ref = fn(torch)
    except Exception as e:  # noqa: BLE001
        err = check_raises(lambda t: fn(t))
        if message:
            assert str(err) == str(e).split(" (Triggered internally")[0]
        return
    mine = fn(mytorch)
    if shape_only:
        assert tuple(mine.shape) == tuple(ref.shape) and str(mine.dtype) == str(ref.dtype)
    elif isinstance(ref, (torch.Tensor, tuple, list)):
        assert_same(mine, ref)
    else:
        assert mine == ref or repr(mine) == repr(ref), f"{mine!r} vs torch {ref!r}"


def x23(t):
    return t.arange(6.).view(2, 3)


# ----------------------------------------------------------------------------- keyword names
KEYWORDS = {
    "zeros_size": lambda t: t.zeros(size=(2, 3)),
    "ones_size": lambda t: t.ones(size=[2]),
    "empty_size": lambda t: t.empty(size=(2,)).zero_(),
    "new_zeros_size": lambda t: x23(t).new_zeros(size=(2,)),
    "new_ones_size": lambda t: x23(t).new_ones(size=(3, 1)),
    "new_empty_size": lambda t: x23(t).new_empty(size=(2,)).zero_(),
    "view_size": lambda t: x23(t).view(size=(3, 2)),
    "view_dtype": lambda t: x23(t).view(dtype=t.int32),
    "reshape_shape": lambda t: x23(t).reshape(shape=(3, 2)),
    "expand_size": lambda t: t.ones(3).expand(size=(2, 3)),
    "repeat_repeats": lambda t: x23(t).repeat(repeats=(1, 2)),
    "permute_dims": lambda t: x23(t).permute(dims=(1, 0)),
    "flip_dims": lambda t: x23(t).flip(dims=(0,)),
    "zeros_size_and_star": lambda t: t.zeros(2, size=(2,)),
    "zeros_unknown_keyword": lambda t: t.zeros(2, shape=(2,)),
}
RANDOM_KEYWORDS = {
    "rand_size": lambda t: t.rand(size=(2, 3)),
    "randn_size": lambda t: t.randn(size=(2,)),
    "randint_low_high_size": lambda t: t.randint(low=0, high=5, size=(3,)),
    "randint_high_size": lambda t: t.randint(high=5, size=(3,)),
    "random_to": lambda t: t.zeros(3).random_(to=5),
    "random_from_to": lambda t: t.zeros(3).random_(**{"from": 1, "to": 5}),
}


@pytest.mark.parametrize("case", KEYWORDS)
def test_torch_keyword_names(case):
    same(KEYWORDS[case])


@pytest.mark.parametrize("case", RANDOM_KEYWORDS)
def test_torch_keyword_names_of_random_ops(case):
    same(RANDOM_KEYWORDS[case], shape_only=True)


def test_random_to_respects_the_bound():
    assert int(mytorch.zeros(1000).random_(to=5).max()) <= 4


AXIS = {
    "sum": lambda t: x23(t).sum(axis=0),
    "torch_sum": lambda t: t.sum(x23(t), axis=1, keepdims=True),
    "mean_keepdims": lambda t: x23(t).mean(axis=0, keepdims=True),
    "max": lambda t: x23(t).max(axis=0),
    "max_keepdims": lambda t: x23(t).max(axis=1, keepdims=True),
    "min": lambda t: x23(t).min(axis=0),
    "amax": lambda t: x23(t).amax(axis=0),
    "argmax": lambda t: x23(t).argmax(axis=0),
    "std": lambda t: x23(t).std(axis=0),
    "var": lambda t: x23(t).var(axis=0),
    "prod": lambda t: x23(t).prod(axis=0),
    "cumsum": lambda t: x23(t).cumsum(axis=0),
    "cumprod": lambda t: x23(t).cumprod(axis=0),
    "cummax": lambda t: x23(t).cummax(axis=1),
    "logsumexp": lambda t: x23(t).logsumexp(axis=0),
    "any": lambda t: x23(t).any(axis=0),
    "all": lambda t: x23(t).all(axis=0),
    "count_nonzero": lambda t: x23(t).count_nonzero(axis=0),
    "median": lambda t: x23(t).median(axis=0),
    "sort": lambda t: x23(t).sort(axis=0, descending=True),
    "argsort": lambda t: x23(t).argsort(axis=1),
    "topk": lambda t: x23(t).topk(1, axis=0),
    "squeeze": lambda t: x23(t)[None].squeeze(axis=0),
    "unsqueeze": lambda t: x23(t).unsqueeze(axis=0),
    "cat": lambda t: t.cat([x23(t), x23(t)], axis=1),
    "stack": lambda t: t.stack([x23(t), x23(t)], axis=0),
    "chunk": lambda t: x23(t).chunk(2, axis=0),
    "unbind": lambda t: x23(t).unbind(axis=1),
    "narrow": lambda t: x23(t).narrow(axis=1, start=0, length=2),
    "select": lambda t: x23(t).select(axis=0, index=1),
    "index_select": lambda t: x23(t).index_select(axis=0, index=t.tensor([1])),
    "gather": lambda t: x23(t).gather(axis=0, index=t.zeros(1, 3, dtype=t.long)),
    "size": lambda t: x23(t).size(axis=1),
    "stride": lambda t: x23(t).stride(axis=0),
    "norm_refuses_axis": lambda t: x23(t).norm(axis=0),
    "split_refuses_axis": lambda t: x23(t).split(1, axis=0),
    "flip_refuses_axis": lambda t: x23(t).flip(axis=0),
    "axis_and_dim": lambda t: x23(t).sum(dim=0, axis=0),
}


@pytest.mark.parametrize("case", AXIS)
def test_numpy_style_axis_and_keepdims(case):
    same(AXIS[case])


# ----------------------------------------------------------------------------- legacy types
LEGACY = {
    "float_sizes": lambda t: t.FloatTensor(2, 3).zero_(),
    "float_data": lambda t: t.FloatTensor([1, 2]),
    "long_data": lambda t: t.LongTensor([1, 2]),
    "int_truncates": lambda t: t.IntTensor([1.5]),
    "bool_data": lambda t: t.BoolTensor([1, 0]),
    "byte_empty": lambda t: t.ByteTensor(),
    "half_sizes": lambda t: t.HalfTensor(2).dtype,
    "short_sizes": lambda t: t.ShortTensor(2).dtype,
    "char_sizes": lambda t: t.CharTensor(2).dtype,
    "double_from_size": lambda t: t.DoubleTensor(t.Size([2])).shape,
    "same_dtype_tensor_aliases": lambda t: t.FloatTensor(t.ones(2)),
    "other_dtype_tensor_refused": lambda t: t.FloatTensor(t.tensor([1, 2])),
    "dtype_keyword_refused": lambda t: t.FloatTensor([1], dtype=t.float64),
    "isinstance_float": lambda t: isinstance(t.zeros(2), t.FloatTensor),
    "isinstance_double": lambda t: isinstance(t.zeros(2), t.DoubleTensor),
    "isinstance_long": lambda t: isinstance(t.tensor([1]), t.LongTensor),
    "isinstance_parameter": lambda t: isinstance(t.nn.Parameter(t.zeros(2)), t.FloatTensor),
    "isinstance_cuda_type": lambda t: isinstance(t.zeros(2), t.cuda.FloatTensor),
    "not_a_subclass": lambda t: issubclass(t.FloatTensor, t.Tensor),
    "result_is_a_plain_tensor": lambda t: type(t.FloatTensor(2)) is t.Tensor,
    "dtype_attribute": lambda t: t.LongTensor.dtype,
    "is_cuda_attribute": lambda t: (t.FloatTensor.is_cuda, t.cuda.FloatTensor.is_cuda),
    "name": lambda t: (t.FloatTensor.__name__, t.cuda.DoubleTensor.__name__),
    "repr": lambda t: repr(t.FloatTensor).replace("mytorch", "torch"),
    "type_cast": lambda t: t.zeros(2).type(t.DoubleTensor),
    "type_cast_long": lambda t: t.ones(2).type(t.LongTensor),
    "type_name": lambda t: t.DoubleTensor([1]).type(),
}


@pytest.mark.parametrize("case", LEGACY)
def test_legacy_tensor_types(case):
    same(LEGACY[case])


TENSOR_CTOR = {
    "sizes": lambda t: t.Tensor(2, 3).shape,
    "size_object": lambda t: t.Tensor(t.Size([2])).shape,
    "tuple_is_data": lambda t: t.Tensor((2, 3)),
    "list_is_data": lambda t: t.Tensor([2, 3]),
    "empty": lambda t: t.Tensor(),
    "empty_tuple": lambda t: t.Tensor(()),
    "numpy_data": lambda t: t.Tensor(np.array([1, 2])),
    "numpy_0d": lambda t: t.Tensor(np.array(2.5)),
    "tensor_aliased_keeps_dtype": lambda t: t.Tensor(t.tensor([1, 2])),
    "tensor_0d_aliased": lambda t: t.Tensor(t.tensor(3)),
    "float_refused": lambda t: t.Tensor(2.5),
    "negative_size": lambda t: t.Tensor(-1),
    "float_size_refused": lambda t: t.Tensor(2, 3.0),
    "ragged_refused": lambda t: t.Tensor([[1, 2], [3]]),
}


@pytest.mark.parametrize("case", TENSOR_CTOR)
def test_legacy_tensor_constructor(case):
    same(TENSOR_CTOR[case])


def test_tensor_of_a_tensor_shares_memory():
    for lib in (torch, mytorch):
        a = lib.tensor([1, 2])
        b = lib.Tensor(a)
        b[0] = 5
        assert a.tolist() == [5, 2] and a._version == b._version == 1


# ----------------------------------------------------------------------------- uint16/32/64
def u(t, name, values=(1, 2)):
    return t.from_numpy(np.array(values, dtype=getattr(np, name)))


UNSIGNED = {
    "from_numpy_uint16": lambda t: u(t, "uint16"),
    "from_numpy_uint32": lambda t: u(t, "uint32"),
    "from_numpy_uint64": lambda t: u(t, "uint64"),
    "same_type_mul": lambda t: u(t, "uint16") * u(t, "uint16"),
    "with_int32_refused": lambda t: u(t, "uint16") + t.tensor([1, 2], dtype=t.int32),
    "with_uint8_refused": lambda t: u(t, "uint16") + t.tensor([1, 2], dtype=t.uint8),
    "with_bool_refused": lambda t: u(t, "uint32") + t.tensor([True, False]),
    "with_float": lambda t: u(t, "uint16") + t.tensor([1.0, 2.0]),
    "promote_with_float16": lambda t: t.promote_types(t.uint64, t.float16),
    "promote_with_complex_refused": lambda t: t.promote_types(t.uint64, t.complex64),
    "promote_with_int_refused": lambda t: t.promote_types(t.uint16, t.int32),
    "result_type_number": lambda t: t.result_type(u(t, "uint16"), 1),
    "divide": lambda t: u(t, "uint16") / 2,
    "sum_is_int64": lambda t: u(t, "uint32").sum(),
    "to_float": lambda t: u(t, "uint16").float(),
    "cast_to": lambda t: t.tensor([1, 2]).to(t.uint16),
    "zeros": lambda t: t.zeros(2, dtype=t.uint16),
    "full_wraps_minus_one": lambda t: t.full((1,), -1, dtype=t.uint64),
    "tensor_minus_one": lambda t: t.tensor([-1], dtype=t.uint16),
    "tensor_overflow": lambda t: t.tensor([70000], dtype=t.uint16),
    "tensor_uint64_top": lambda t: t.tensor([2**63], dtype=t.uint64),
    "iinfo": lambda t: repr(t.iinfo(t.uint16)),
    "is_signed": lambda t: (t.uint16.is_signed, t.uint32.itemsize),
    "type_name": lambda t: u(t, "uint16").type(),
    "repr": lambda t: repr(u(t, "uint32", (70000,))),
}


@pytest.mark.parametrize("case", UNSIGNED)
def test_barebones_unsigned_dtypes(case):
    same(UNSIGNED[case], message="promote" in case or "refused" in case)


# ----------------------------------------------------------------------------- functions
FUNCTIONS = {
    "tril_indices": lambda t: t.tril_indices(3, 3),
    "tril_indices_offset": lambda t: t.tril_indices(3, 4, 1),
    "tril_indices_dtype": lambda t: t.tril_indices(2, 2, dtype=t.int32),
    "tril_indices_empty": lambda t: t.tril_indices(0, 0),
    "tril_indices_negative": lambda t: t.tril_indices(-1, 2),
    "tril_indices_float": lambda t: t.tril_indices(2, 2, dtype=t.float32),
    "triu_indices": lambda t: t.triu_indices(3, 3),
    "triu_indices_offset": lambda t: t.triu_indices(3, 4, -1),
    "cummax_ties": lambda t: t.tensor([1.0, 3, 3, 2, 3]).cummax(0),
    "cummax_nan": lambda t: t.tensor([1.0, float("nan"), 2, float("nan")]).cummax(0),
    "cummin_ties": lambda t: t.tensor([3.0, 1, 1, 2, 1]).cummin(0),
    "cummin_2d": lambda t: t.tensor([[1.0, 3], [0, 5]]).cummin(1),
    "cummax_0d": lambda t: t.tensor(2.0).cummax(0),
    "cummax_int": lambda t: t.tensor([1, 3, 2]).cummax(0),
    "cummax_bool": lambda t: t.tensor([False, True, False]).cummax(0),
    "cummax_empty": lambda t: t.zeros(0).cummax(0),
    "cummax_torch_function": lambda t: t.cummax(t.tensor([[2.0, 1], [0, 3]]), dim=0),
    "bincount": lambda t: t.bincount(t.tensor([0, 1, 1, 3])),
    "bincount_weights": lambda t: t.bincount(t.tensor([0, 1, 1, 3]),
                                             weights=t.tensor([0.5, 1, 1, 2])),
    "bincount_weights_double": lambda t: t.bincount(t.tensor([0, 1]),
                                                    weights=t.tensor([1.0, 2], dtype=t.float64)),
    "bincount_int_weights": lambda t: t.bincount(t.tensor([0, 1]), weights=t.tensor([1, 2])),
    "bincount_minlength": lambda t: t.bincount(t.tensor([0, 1]), minlength=5),
    "bincount_empty": lambda t: t.bincount(t.tensor([], dtype=t.long)),
    "bincount_method_uint8": lambda t: t.tensor([0, 1, 1], dtype=t.uint8).bincount(),
    "bincount_negative": lambda t: t.bincount(t.tensor([-1, 1])),
    "bincount_float": lambda t: t.bincount(t.tensor([1.0, 2.0])),
    "bincount_2d": lambda t: t.bincount(t.tensor([[1]])),
    "bincount_minlength_negative": lambda t: t.bincount(t.tensor([0, 1]), minlength=-1),
    "bincount_weights_length": lambda t: t.bincount(t.tensor([0, 1]), weights=t.tensor([1.0])),
    "rsub": lambda t: t.rsub(x23(t), 1),
    "rsub_alpha": lambda t: t.rsub(x23(t), t.ones(3), alpha=2),
    "signbit": lambda t: t.signbit(t.tensor([-1.0, 0.0, -0.0, 2, float("nan"), -float("nan")])),
    "signbit_int": lambda t: t.tensor([-1, 0, 2]).signbit(),
    "signbit_uint8": lambda t: t.tensor([1], dtype=t.uint8).signbit(),
    "signbit_bool": lambda t: t.tensor([True]).signbit(),
    "norm_nuc": lambda t: x23(t).norm(p="nuc"),
    "norm_nuc_keepdim": lambda t: x23(t).norm(p="nuc", keepdim=True),
    "norm_nuc_dims": lambda t: t.ones(2, 2, 3).norm(p="nuc", dim=(1, 2)),
    "norm_nuc_3d": lambda t: t.ones(2, 2, 2).norm(p="nuc"),
    "norm_nuc_1d": lambda t: t.ones(3).norm(p="nuc"),
    "norm_unknown_order": lambda t: x23(t).norm(p="foo"),
    "norm_inf_empty": lambda t: t.zeros(0).norm(float("inf")),
    "norm_minus_inf_empty": lambda t: t.zeros(0).norm(-float("inf")),
    "norm_inf_empty_dim": lambda t: t.zeros(0, 3).norm(float("inf"), dim=0),
    "norm_inf_nonempty_dim": lambda t: t.zeros(0, 3).norm(float("inf"), dim=1),
    "norm_2_empty": lambda t: t.zeros(0).norm(),
    "unique_nan": lambda t: t.unique(t.tensor([1.0, float("nan"), float("nan")])),
    "unique_nan_counts": lambda t: t.unique(t.tensor([1.0, float("nan"), float("nan")]),
                                            return_inverse=True, return_counts=True),
    "unique_nan_unsorted": lambda t: t.unique(t.tensor([2.0, float("nan"), 1, float("nan")]),
                                              sorted=False),
    "unique_nan_rows": lambda t: t.unique(t.tensor([[1.0, float("nan")], [1, float("nan")],
                                                    [0, 2]]), dim=0, return_inverse=True,
                                          return_counts=True),
    "two_ellipses": lambda t: x23(t)[..., ..., 0],
    "two_ellipses_nothing_after": lambda t: x23(t)[..., ...],
    "masked_fill_shape_error": lambda t: x23(t).masked_fill(t.ones(3, 2, dtype=t.bool), 0.0),
    "masked_fill_shape_error_1d": lambda t: x23(t).masked_fill(t.ones(4, dtype=t.bool), 0.0),
    "lerp_shape_error": lambda t: t.lerp(t.zeros(2, 3), t.zeros(3, 2), 0.5),
    "lerp_weight_shape_error": lambda t: t.lerp(t.zeros(2, 3), t.zeros(2, 3), t.zeros(4)),
    "lerp_1d_shape_error": lambda t: t.lerp(t.zeros(4), t.zeros(3), 0.5),
}


@pytest.mark.parametrize("case", FUNCTIONS)
def test_functions_and_errors(case):
    same(FUNCTIONS[case], message=True)


GRADS = {
    "cummax": Case("cummax", lambda t, x: x.cummax(1), [randn(3, 5)]),
    "cummin": Case("cummin", lambda t, x: t.cummin(x, 0).values * 2, [randn(4, 2)]),
    "rsub": Case("rsub", lambda t, x, y: t.rsub(x, y, alpha=3), [randn(2, 3), randn(3)]),
    "one_minus": Case("one_minus", lambda t, x: 1 - x, [randn(3)]),
    "norm_nuc": Case("norm_nuc", lambda t, x: x.norm(p="nuc"), [randn(3, 2)], atol=1e-4),
    "t_": Case("t_", lambda t, x: (x * 2).t_(), [randn(2, 3)]),
    "transpose_": Case("transpose_", lambda t, x: (x * 2).transpose_(0, 2), [randn(2, 3, 4)]),
    "squeeze_": Case("squeeze_", lambda t, x: (x * 2).squeeze_(1), [randn(2, 1, 3)]),
    "unsqueeze_": Case("unsqueeze_", lambda t, x: (x * 2).unsqueeze_(0), [randn(2, 3)]),
    "as_strided_": Case("as_strided_", lambda t, x: (x * 2).as_strided_((2, 2), (1, 2)),
                        [randn(6)]),
    "cumsum_": Case("cumsum_", lambda t, x: (x * 2).cumsum_(1), [randn(2, 3)]),
    "cumprod_": Case("cumprod_", lambda t, x: (x * 2).cumprod_(0), [randn(3, 2)]),
    "addmm_": Case("addmm_", lambda t, a, b, c: (a * 1).addmm_(b, c, beta=2, alpha=3),
                   [randn(2, 2), randn(2, 3), randn(3, 2)]),
    "addmv_": Case("addmv_", lambda t, a, b, c: (a * 1).addmv_(b, c), [randn(2), randn(2, 3),
                                                                         randn(3)]),
    "addr_": Case("addr_", lambda t, a, b, c: (a * 1).addr_(b, c), [randn(2, 3), randn(2),
                                                                     randn(3)]),
    "addbmm_": Case("addbmm_", lambda t, a, b, c: (a * 1).addbmm_(b, c),
                    [randn(2, 2), randn(4, 2, 3), randn(4, 3, 2)]),
    "baddbmm_": Case("baddbmm_", lambda t, a, b, c: (a * 1).baddbmm_(b, c),
                     [randn(4, 2, 2), randn(4, 2, 3), randn(4, 3, 2)]),
}


@pytest.mark.parametrize("case", GRADS)
def test_new_ops_values_and_gradients(case):
    check(GRADS[case])


# ----------------------------------------------------------------------------- in-place views
def _inplace_view(op):
    def fn(t):
        x = t.arange(6.).view(2, 1, 3)
        y = op(x)
        return y is x, tuple(x.shape), x.stride(), x._version, x.tolist()
    return fn


INPLACE_VIEWS = {
    "t_": lambda x: x.squeeze_(1).t_(),
    "transpose_": lambda x: x.transpose_(0, 2),
    "swapaxes_": lambda x: x.swapaxes_(0, 2),
    "swapdims_": lambda x: x.swapdims_(1, 2),
    "squeeze_": lambda x: x.squeeze_(),
    "squeeze_dim": lambda x: x.squeeze_(1),
    "squeeze_dims": lambda x: x.squeeze_((0, 1)),
    "unsqueeze_": lambda x: x.unsqueeze_(0),
    "as_strided_": lambda x: x.as_strided_((2, 2), (1, 2)),
}


@pytest.mark.parametrize("op", INPLACE_VIEWS)
def test_inplace_view_ops_change_the_tensor_itself(op):
    same(_inplace_view(INPLACE_VIEWS[op]))


@pytest.mark.parametrize("op", INPLACE_VIEWS)
def test_inplace_view_ops_record_torch_node_names(op):
    names = []
    for lib in (torch, mytorch):
        x = lib.arange(6.).view(2, 1, 3).requires_grad_() * 1
        names.append(type(INPLACE_VIEWS[op](x).grad_fn).__name__ if lib is torch else
                     INPLACE_VIEWS[op](x).grad_fn.name())
    assert names[1] == names[0]


def test_inplace_view_op_on_a_leaf_that_requires_grad():
    check_raises(lambda t: t.zeros(2, 3, requires_grad=True).t_())


INPLACE_SCANS = {
    "cumsum_": lambda t: t.ones(3).cumsum_(0),
    "cumsum_int32_keeps_dtype": lambda t: t.ones(3, dtype=t.int32).cumsum_(0),
    "cumsum_dtype_mismatch": lambda t: t.ones(3, dtype=t.int32).cumsum_(0, dtype=t.int64),
    "cumprod_": lambda t: t.full((3,), 2.0).cumprod_(0),
    "addmm_": lambda t: t.ones(2, 2).addmm_(t.ones(2, 3), t.ones(3, 2), beta=2, alpha=3),
    "addbmm_": lambda t: t.ones(2, 2).addbmm_(t.ones(4, 2, 3), t.ones(4, 3, 2)),
    "baddbmm_": lambda t: t.ones(4, 2, 2).baddbmm_(t.ones(4, 2, 3), t.ones(4, 3, 2)),
    "addmv_": lambda t: t.ones(2).addmv_(t.ones(2, 3), t.ones(3)),
    "addr_": lambda t: t.ones(2, 3).addr_(t.ones(2), t.ones(3)),
}


@pytest.mark.parametrize("case", INPLACE_SCANS)
def test_inplace_scans_and_matrix_products(case):
    same(INPLACE_SCANS[case], message=True)


# ----------------------------------------------------------------------------- warnings
def _warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(m.category, str(m.message).split(" (Triggered internally")[0]) for m in w]


# torch shows these once per process (TORCH_WARN_ONCE / a flag): each case runs in a fresh torch
# process, and with mytorch's once-only state reset.
WARNINGS = {
    "T_3d": "t.zeros(2, 3, 4).T",
    "T_1d": "t.zeros(3).T",
    "T_0d": "t.tensor(1.0).T",
    "T_2d_silent": "t.zeros(2, 3).T",
    "T_3d_twice_warns_once": "(t.zeros(2, 3, 4).T, t.zeros(3).T)",
    "storage": "t.zeros(2).storage()",
    "storage_warns_once": "(t.zeros(2).storage(), t.zeros(2).storage())",
    "untyped_storage_silent": "t.zeros(2).untyped_storage()",
    "scatter_reduce_tensor_src": "t.zeros(3).scatter_(0, t.tensor([0, 0]), t.ones(2), "
                                 "reduce='add')",
    "scatter_reduce_out_of_place": "t.zeros(3).scatter(0, t.tensor([0, 0]), t.ones(2), "
                                   "reduce='multiply')",
    "scatter_reduce_number_silent": "t.zeros(3).scatter_(0, t.tensor([0, 0]), 2.0, reduce='add')",
}


@pytest.fixture(scope="module")
def torch_warnings():
    import json
    import subprocess
    import sys

    code = ("import json, sys, warnings\n"
            "import torch as t\n"
            "cases = json.loads(sys.argv[1])\n"
            "out = {}\n"
            "for name, expr in cases.items():\n"
            "    with warnings.catch_warnings(record=True) as w:\n"
            "        warnings.simplefilter('always')\n"
            "        eval(expr)\n"
            "    out[name] = [str(m.message).split(' (Triggered internally')[0] for m in w]\n"
            "print(json.dumps(out))\n")
    ref = {}
    for name, expr in WARNINGS.items():  # one fresh process per case: warn-once state is clean
        run = subprocess.run([sys.executable, "-c", code, json.dumps({name: expr})],
                             capture_output=True, text=True, check=True)
        ref.update(json.loads(run.stdout))
    return ref


@pytest.mark.parametrize("case", WARNINGS)
def test_deprecation_warnings(case, torch_warnings):
    import mytorch._ops._operands
    import mytorch._storage

    mytorch._ops._operands._WARNED.clear()
    mytorch._storage._TYPED_STORAGE_WARNED[0] = False
    mine = _warnings(lambda: eval(WARNINGS[case], {"t": mytorch}))
    assert all(c is UserWarning for c, _ in mine)
    assert [m for _, m in mine] == torch_warnings[case]


def test_grad_fn_names():
    for fn, name in [(lambda t, x: 1 - x, "RsubBackward1"), (lambda t, x: x.T, "PermuteBackward0"),
                     (lambda t, x: x.norm(), "LinalgVectorNormBackward0"),
                     (lambda t, x: x.norm(dim=1), "LinalgVectorNormBackward0"),
                     (lambda t, x: t.rsub(x, x), "RsubBackward0")]:
        ref = type(fn(torch, torch.ones(2, 3, requires_grad=True)).grad_fn).__name__
        mine = fn(mytorch, mytorch.ones(2, 3, requires_grad=True)).grad_fn.name()
        assert mine == ref == name


# ----------------------------------------------------------------------------- public names
# The names mytorch adds to torch's API: one list, [tool.bookkit.mytorch-only] in pyproject.toml,
# which check-teaches also reads (chapters mark each line that uses one with `# mytorch only`).
ALLOWED_EXTRAS = Project(Path(__file__).resolve().parent.parent).mytorch_only()


def test_the_list_of_extras_is_there():
    assert ALLOWED_EXTRAS.get("mytorch") and "use_mine" in ALLOWED_EXTRAS["mytorch"]


@pytest.mark.parametrize("module", ALLOWED_EXTRAS)
def test_public_names_are_torch_names(module):
    import importlib

    mine, ref = importlib.import_module(module), importlib.import_module(
        module.replace("mytorch", "torch"))
    import importlib.util

    def torch_has(name: str) -> bool:  # an attribute, or a submodule torch binds only once imported
        if hasattr(ref, name):
            return True
        try:
            return importlib.util.find_spec(f"{ref.__name__}.{name}") is not None
        except ModuleNotFoundError:  # ref is a plain module, not a package
            return False

    extra = {n for n in dir(mine) if not n.startswith("_") and not torch_has(n)}
    assert extra <= ALLOWED_EXTRAS[module], f"not in {ref.__name__}: {sorted(extra)}"


def test_print_options_live_where_torch_keeps_them():
    assert not hasattr(mytorch, "get_printoptions")
    assert mytorch._tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()
    assert mytorch._tensor_str.PRINT_OPTS.precision == torch._tensor_str.PRINT_OPTS.precision
