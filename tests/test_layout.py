"""Memory layout of results, against torch: strides, not just values.

* Reductions (sum, mean, max(dim), cumsum, ...) return contiguous tensors, so ``.view`` works on
  them whatever the input's layout.
* Element-wise ops follow their inputs' layout (torch's TensorIterator): an op on a transposed or
  channels_last tensor gives a transposed or channels_last result; with mixed layouts the first
  input that tells two dims apart decides.
* ``*_like``, ``clone``, ``sort`` and ``flip`` keep the input's layout (``preserve_format``).
* Empty tensors have the strides of a non-empty tensor with their empty dims counted as 1.
* Writing in place into an expanded (stride-0) tensor is refused; ``resize_`` grows the storage
  that views share.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from oracle import assert_same

import mytorch

# ----------------------------------------------------------------------------- inputs
# Each builds the same values with a given layout, in either library.
LAYOUTS = {
    "contiguous": lambda t: t.arange(24.).view(2, 3, 4),
    "transposed": lambda t: t.arange(24.).view(2, 4, 3).transpose(1, 2),
    "permuted": lambda t: t.arange(24.).view(4, 2, 3).permute(1, 2, 0),
    "sliced": lambda t: t.arange(48.).view(2, 3, 8)[:, :, ::2],
    "transposed_sliced": lambda t: t.arange(48.).view(2, 8, 3).transpose(1, 2)[:, :, ::2],
    "expanded": lambda t: t.arange(4.).view(1, 1, 4).expand(2, 3, 4),
    "size_one_dim": lambda t: t.arange(12.).view(3, 4, 1).permute(2, 0, 1).expand(2, 3, 4) + 0,
}
CL = {
    "channels_last": lambda t: t.arange(120.).view(2, 3, 4, 5).contiguous(
        memory_format=t.channels_last),
    "channels_last_sliced": lambda t: t.arange(240.).view(2, 3, 4, 10).contiguous(
        memory_format=t.channels_last)[:, :, :, ::2],
    "contiguous_4d": lambda t: t.arange(120.).view(2, 3, 4, 5),
}

UNARY = {
    "exp": lambda t, x: x.exp(),
    "neg": lambda t, x: -x,
    "abs": lambda t, x: x.abs(),
    "sigmoid": lambda t, x: x.sigmoid(),
    "clamp": lambda t, x: x.clamp(1, 5),
    "to_int": lambda t, x: x.to(t.int32),
    "add_number": lambda t, x: x + 1,
    "number_pow": lambda t, x: 2 ** (x / 10),
    "pow_number": lambda t, x: x ** 2,
    "eq_number": lambda t, x: x == 3,
    "where_number": lambda t, x: t.where(x > 3, x, 0.0),
    "masked_fill": lambda t, x: x.masked_fill(x > 3, 0.0),
    "sign": lambda t, x: x.sign(),
    "signbit": lambda t, x: x.signbit(),
    "zeros_like": lambda t, x: t.zeros_like(x),
    "ones_like": lambda t, x: t.ones_like(x),
    "full_like": lambda t, x: t.full_like(x, 7.0),
    "empty_like_shape": lambda t, x: t.empty_like(x).zero_(),
    "rand_like": lambda t, x: t.rand_like(x) * 0,
    "clone": lambda t, x: x.clone(),
    "flip": lambda t, x: x.flip(0),
    "sort": lambda t, x: x.sort(1),
    "sum_dim0": lambda t, x: x.sum(0),
    "sum_dim1_keepdim": lambda t, x: x.sum(1, keepdim=True),
    "sum_dims": lambda t, x: x.sum((0, 1), keepdim=True),
    "mean": lambda t, x: x.mean(0),
    "amax_keepdim": lambda t, x: x.amax(0, keepdim=True),
    "max_dim": lambda t, x: x.max(1),
    "min_dim_keepdim": lambda t, x: x.min(2, keepdim=True),
    "argmax": lambda t, x: x.argmax(1),
    "std": lambda t, x: x.std(0),
    "var_mean": lambda t, x: t.var_mean(x, 1),
    "norm_dim": lambda t, x: x.norm(dim=0),
    "prod_keepdim": lambda t, x: (x / 20).prod(1, keepdim=True),
    "logsumexp": lambda t, x: x.logsumexp(0),
    "any": lambda t, x: (x > 3).any(0),
    "cumsum": lambda t, x: x.cumsum(0),
    "cumprod": lambda t, x: (x / 20).cumprod(1),
    "cummax": lambda t, x: x.cummax(1),
}
BINARY = {
    "add": lambda t, a, b: a + b,
    "mul": lambda t, a, b: a * b,
    "div": lambda t, a, b: a / (b + 1),
    "maximum": lambda t, a, b: t.maximum(a, b),
    "lt": lambda t, a, b: a < b,
    "pow": lambda t, a, b: (a / 10) ** (b / 10),
    "atan2": lambda t, a, b: t.atan2(a, b),
    "addcmul": lambda t, a, b: t.addcmul(a, b, a),
    "lerp": lambda t, a, b: t.lerp(a, b, 0.3),
    "where": lambda t, a, b: t.where(a > 4, a, b),
}


def strides(x):
    if isinstance(x, (tuple, list)):
        return [strides(v) for v in x]
    return x.stride()


def check_layout(fn, make, *more):
    mine = fn(mytorch, make(mytorch), *(m(mytorch) for m in more))
    ref = fn(torch, make(torch), *(m(torch) for m in more))
    assert_same(mine, ref)
    assert strides(mine) == strides(ref), f"strides {strides(mine)} vs torch {strides(ref)}"


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", UNARY)
def test_result_layout_follows_torch(op, layout):
    check_layout(UNARY[op], LAYOUTS[layout])


@pytest.mark.parametrize("layout", CL)
@pytest.mark.parametrize("op", ["exp", "add_number", "zeros_like", "clone", "sum_dim0",
                                "sum_dim1_keepdim", "cumsum", "masked_fill", "where_number"])
def test_channels_last_results(op, layout):
    check_layout(UNARY[op], CL[layout])


PAIRS = [("contiguous", "transposed"), ("transposed", "contiguous"), ("transposed", "permuted"),
         ("sliced", "transposed"), ("expanded", "transposed"), ("transposed", "expanded")]


@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
@pytest.mark.parametrize("op", BINARY)
def test_mixed_layouts_first_input_decides(op, pair):
    check_layout(BINARY[op], LAYOUTS[pair[0]], LAYOUTS[pair[1]])


@pytest.mark.parametrize("pair", [("channels_last", "contiguous_4d"),
                                  ("contiguous_4d", "channels_last"),
                                  ("channels_last", "channels_last_sliced")],
                         ids=["cl-contiguous", "contiguous-cl", "cl-cl_sliced"])
@pytest.mark.parametrize("op", ["add", "mul", "where", "lerp"])
def test_channels_last_propagates(op, pair):
    check_layout(BINARY[op], CL[pair[0]], CL[pair[1]])


VIEW_AFTER = {
    "sum": lambda t, x: x.sum(0).view(-1),
    "mean": lambda t, x: x.mean(0).view(-1),
    "amax": lambda t, x: x.amax(0).view(-1),
    "max_dim": lambda t, x: x.max(0).values.view(-1),
    "std": lambda t, x: x.std(0).view(-1),
    "norm": lambda t, x: x.norm(dim=0).view(-1),
    "prod": lambda t, x: x.prod(0).view(-1),
    "logsumexp": lambda t, x: x.logsumexp(0).view(-1),
    "any": lambda t, x: (x > 3).any(0).view(-1),
    "cumsum": lambda t, x: x.cumsum(0).view(-1),
}


@pytest.mark.parametrize("op", VIEW_AFTER)
def test_view_after_reducing_a_transposed_tensor(op):
    check_layout(VIEW_AFTER[op], lambda t: t.arange(24.).view(2, 3, 4).transpose(1, 2))


# ----------------------------------------------------------------------------- empty tensors
EMPTY = {
    "zeros_0_3": lambda t: t.zeros(0, 3),
    "zeros_2_0_3": lambda t: t.zeros(2, 0, 3),
    "zeros_0": lambda t: t.zeros(0),
    "empty_0_3": lambda t: t.empty(0, 3),
    "ones_3_0": lambda t: t.ones(3, 0),
    "tensor_empty": lambda t: t.tensor([]),
    "tensor_empty_rows": lambda t: t.tensor([[]]),
    "arange_0": lambda t: t.arange(0),
    "full_0_2": lambda t: t.full((0, 2), 1.0),
    "zeros_like": lambda t: t.zeros_like(t.zeros(2, 0, 3)),
    "new_zeros": lambda t: t.ones(1).new_zeros(0, 4),
    "view": lambda t: t.zeros(0, 3).view(3, 0),
    "reshape": lambda t: t.zeros(0, 3).reshape(0, 1, 3),
    "reshape_infer": lambda t: t.zeros(0, 3).reshape(-1, 3),
    "transpose": lambda t: t.zeros(0, 3).t(),
    "permute": lambda t: t.zeros(0, 3, 2).permute(2, 0, 1),
    "unsqueeze": lambda t: t.zeros(0, 3).unsqueeze(1),
    "expand": lambda t: t.zeros(0, 3).expand(2, 0, 3),
    "slice_to_empty": lambda t: t.ones(2, 3)[:0],
    "slice_of_empty": lambda t: t.zeros(3, 0)[1:],
    "add_number": lambda t: t.zeros(0, 3).t() + 1,
    "clone_transposed": lambda t: t.zeros(0, 3).t().clone(),
    "contiguous": lambda t: t.zeros(0, 3).t().contiguous(),
    "sum_dim": lambda t: t.zeros(2, 0, 3).sum(0),
    "cat": lambda t: t.cat([t.zeros(0, 3), t.zeros(0, 3)]),
    "flatten": lambda t: t.zeros(0, 3).flatten(),
    "from_numpy": lambda t: t.from_numpy(np.zeros((0, 3))),
}


@pytest.mark.parametrize("case", EMPTY)
def test_empty_tensor_strides(case):
    check_layout(lambda t, x: x, EMPTY[case])


# ----------------------------------------------------------------------------- in place
def expanded(t):
    return t.zeros(3).expand(2, 3)


OVERLAP_ERRORS = {
    "add_": lambda t, x: x.add_(1),
    "sub_": lambda t, x: x.sub_(t.ones(3)),
    "mul_": lambda t, x: x.mul_(2),
    "div_": lambda t, x: x.div_(2),
    "exp_": lambda t, x: x.exp_(),
    "clamp_": lambda t, x: x.clamp_(0, 1),
    "neg_": lambda t, x: x.neg_(),
    "iadd": lambda t, x: x.__iadd__(1),
    "copy_": lambda t, x: x.copy_(t.ones(2, 3)),
    "copy__broadcast": lambda t, x: x.copy_(t.ones(3)),
    "uniform_": lambda t, x: x.uniform_(),
    "normal_": lambda t, x: x.normal_(),
    "random_": lambda t, x: x.random_(5),
    "bernoulli_": lambda t, x: x.bernoulli_(0.5),
    "exponential_": lambda t, x: x.exponential_(),
    "scatter_": lambda t, x: x.scatter_(1, t.zeros(2, 1, dtype=t.long), 1.0),
    "scatter_add_": lambda t, x: x.scatter_add_(1, t.zeros(2, 1, dtype=t.long), t.ones(2, 1)),
    "index_add_": lambda t, x: x.index_add_(1, t.tensor([0]), t.ones(2, 1)),
    "index_copy_": lambda t, x: x.index_copy_(1, t.tensor([0]), t.ones(2, 1)),
    "masked_scatter_": lambda t, x: x.masked_scatter_(t.ones(2, 3, dtype=t.bool), t.ones(6)),
    "put_": lambda t, x: x.put_(t.tensor([0]), t.ones(1)),
    "addcmul_": lambda t, x: x.addcmul_(t.ones(3), t.ones(3)),
    "lerp_": lambda t, x: x.lerp_(t.ones(3), 0.5),
    "addmm_": lambda t, x: x.addmm_(t.ones(2, 2), t.ones(2, 3)),
    "cumsum_": lambda t, x: x.cumsum_(1),
    "out": lambda t, x: t.add(t.ones(2, 3), 1, out=x),
    "setitem_all": lambda t, x: x.__setitem__(..., 1.0),
    "setitem_column": lambda t, x: x.__setitem__((slice(None), 0), 1.0),
    "transposed_add_": lambda t, x: x.t().add_(1),
}
NO_OVERLAP_ERROR = {
    "fill_": lambda t, x: x.fill_(1),
    "zero_": lambda t, x: x.zero_(),
    "tril_": lambda t, x: x.tril_(),
    "row_add_": lambda t, x: x[0].add_(1),
    "setitem_row": lambda t, x: x.__setitem__(0, t.ones(3)),
    "size_one_expand_add_": lambda t, x: t.zeros(3, 1).expand(3, 1).add_(1),
}
DEPRECATED = {
    "masked_fill_": lambda t, x: x.masked_fill_(t.ones(2, 3, dtype=t.bool), 1.0),
    "index_fill_": lambda t, x: x.index_fill_(1, t.tensor([0]), 1.0),
    "index_put_": lambda t, x: x.index_put_((t.tensor([0]),), t.tensor(1.0)),
    "setitem_index": lambda t, x: x.__setitem__(t.tensor([0]), 1.0),
}


@pytest.mark.parametrize("op", OVERLAP_ERRORS)
def test_writing_into_an_expanded_tensor_is_refused(op):
    for lib in (torch, mytorch):
        with pytest.raises(RuntimeError) as info:
            OVERLAP_ERRORS[op](lib, expanded(lib))
        assert "more than one element of the written-to tensor refers to a single memory " \
               "location. Please clone() the tensor before performing the operation." in \
               str(info.value), f"{lib.__name__}: {info.value}"


@pytest.mark.parametrize("op", NO_OVERLAP_ERROR)
def test_writes_torch_still_allows(op):
    check_layout(lambda t, x: (NO_OVERLAP_ERROR[op](t, x), x)[1], expanded)


@pytest.mark.parametrize("op", DEPRECATED)
def test_deprecated_writes_into_expanded_tensors_warn(op):
    messages, results = [], []
    for lib in (torch, mytorch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            x = expanded(lib)
            DEPRECATED[op](lib, x)
        found = [str(m.message).split(" (Triggered internally")[0] for m in w
                 if "on expanded tensors is deprecated" in str(m.message)]
        assert found and all(m.category is UserWarning for m in w), f"{lib.__name__}: {w}"
        messages.append(found[0])
        results.append(x)
    assert messages[0] == messages[1]
    assert_same(results[1], results[0])


# ----------------------------------------------------------------------------- resize_
def _grow_then_write(t):
    x = t.arange(4.)
    y = x.view(2, 2)
    x.resize_(6)
    x[0] = 100.0
    return y


def _grow_a_view(t):
    base = t.arange(4.)
    base[1:].resize_(6).fill_(7.0)
    return base


RESIZE = {
    "views_follow_growth": _grow_then_write,
    "base_sees_grown_view": _grow_a_view,
    "grown_view_keeps_values": lambda t: t.arange(4.)[1:].resize_(5)[:3],
    "storage_size_after_growth": lambda t: t.tensor(
        (lambda x: (x.resize_(6), x.untyped_storage().nbytes())[1])(t.arange(4.))),
    "shrink_from_numpy": lambda t: t.from_numpy(np.arange(3.0)).resize_(2),
}


@pytest.mark.parametrize("case", RESIZE)
def test_resize_grows_the_shared_storage(case):
    assert_same(RESIZE[case](mytorch), RESIZE[case](torch))


def test_resize_cannot_grow_numpy_memory():
    for lib in (torch, mytorch):
        with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
            lib.from_numpy(np.zeros(3)).resize_(5)
