"""Shape ops against the torch oracle: values, dtypes, shapes, gradients and errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from oracle import Case, check, check_raises, randn

import mytorch


def ints(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)


A = randn(2, 3, 4)
M = randn(3, 4)
V = randn(5)

CASES = [
    # ---- view / reshape family
    Case("view", lambda t, a: a.view(4, 6), [A]),
    Case("view_tuple_infer", lambda t, a: a.view((-1, 4)), [A]),
    Case("view_size", lambda t, a: a.view(t.Size([6, 4])), [A]),
    Case("view_after_transpose_ok", lambda t, a: a.transpose(0, 1).view(3, 2, 2, 2), [A]),
    Case("view_scalar", lambda t, a: a.view(1, 1), [np.array(2.0, np.float32)]),
    Case("view_as", lambda t, a, b: a.view_as(b), [randn(6), randn(2, 3)]),
    Case("reshape", lambda t, a: t.reshape(a, (4, -1)), [A]),
    Case("reshape_noncontig_copies", lambda t, a: a.transpose(0, 2).reshape(-1), [A]),
    Case("reshape_method_varargs", lambda t, a: a.reshape(3, 8), [A]),
    Case("reshape_as", lambda t, a, b: a.reshape_as(b), [M, randn(2, 6)]),
    Case("reshape_int", lambda t, a: a.t().reshape(12), [ints(3, 4)]),
    Case("flatten", lambda t, a: t.flatten(a), [A]),
    Case("flatten_range", lambda t, a: a.flatten(1, 2), [A]),
    Case("flatten_neg", lambda t, a: a.flatten(-3, -2), [A]),
    Case("flatten_same_dim", lambda t, a: a.flatten(1, 1), [A]),
    Case("flatten_0d", lambda t, a: a.flatten(), [np.array(3.0, np.float32)]),
    Case("unflatten", lambda t, a: a.unflatten(2, (2, 2)), [A]),
    Case("unflatten_infer_neg_dim", lambda t, a: t.unflatten(a, -1, (-1, 2)), [A]),
    Case("ravel_transposed", lambda t, a: a.mT.ravel(), [A]),
    # ---- contiguous / clone
    Case("contiguous", lambda t, a: a.transpose(0, 1).contiguous(), [A]),
    Case("clone", lambda t, a: t.clone(a), [A]),
    Case("clone_channels_last", lambda t, a: a.clone(memory_format=t.channels_last),
         [randn(2, 3, 2, 2)]),
    # ---- broadcasting
    Case("expand", lambda t, a: a.expand(2, 3, 4), [randn(3, 1)]),
    Case("expand_minus1", lambda t, a: a.expand(-1, 5), [randn(3, 1)]),
    Case("expand_lead_tuple", lambda t, a: a.expand((2, 2, 3, 4)), [A]),
    Case("expand_as", lambda t, a, b: a.expand_as(b), [randn(4), A]),
    Case("broadcast_to", lambda t, a: t.broadcast_to(a, (3, 2, 5)), [randn(1, 5)]),
    Case("broadcast_tensors", lambda t, a, b: t.broadcast_tensors(a, b),
         [randn(3, 1), randn(1, 4)]),
    # ---- repeats
    Case("repeat", lambda t, a: a.repeat(2, 3), [randn(2, 3)]),
    Case("repeat_more_dims", lambda t, a: a.repeat(2, 1, 3), [randn(2, 3)]),
    Case("repeat_zero", lambda t, a: a.repeat(0, 2), [randn(2, 3)]),
    Case("repeat_int", lambda t, a: a.repeat(2, 2), [ints(2, 3)]),
    Case("tile", lambda t, a: t.tile(a, (2,)), [randn(2, 3)]),
    Case("tile_more", lambda t, a: a.tile((2, 1, 2)), [randn(2, 3)]),
    Case("repeat_interleave_int", lambda t, a: a.repeat_interleave(2), [randn(2, 3)]),
    Case("repeat_interleave_dim", lambda t, a: t.repeat_interleave(a, 3, dim=-1), [A]),
    Case("repeat_interleave_tensor",
         lambda t, a: a.repeat_interleave(t.tensor([1, 0, 3]), dim=1), [A]),
    Case("repeat_interleave_1elem",
         lambda t, a: a.repeat_interleave(t.tensor([2]), dim=0), [A]),
    Case("repeat_interleave_counts_only",
         lambda t: t.repeat_interleave(t.tensor([2, 0, 1])), []),
    # ---- dim reordering
    Case("permute_varargs", lambda t, a: a.permute(2, 0, 1), [A]),
    Case("permute_tuple_neg", lambda t, a: t.permute(a, (-1, -3, -2)), [A]),
    Case("transpose", lambda t, a: t.transpose(a, 0, 2), [A]),
    Case("transpose_neg", lambda t, a: a.transpose(-1, -2), [A]),
    Case("swapaxes", lambda t, a: t.swapaxes(a, 0, 1), [A]),
    Case("swapdims", lambda t, a: a.swapdims(1, 2), [A]),
    Case("t_2d", lambda t, a: a.t(), [M]),
    Case("t_1d", lambda t, a: t.t(a), [V]),
    Case("T_2d", lambda t, a: a.T, [M]),
    Case("mT", lambda t, a: a.mT, [A]),
    Case("mH_real", lambda t, a: a.mH, [A]),
    Case("adjoint", lambda t, a: t.adjoint(a), [M]),
    Case("movedim", lambda t, a: t.movedim(a, 0, -1), [A]),
    Case("movedim_tuple", lambda t, a: a.movedim((0, 1), (2, 0)), [A]),
    Case("moveaxis", lambda t, a: t.moveaxis(a, -1, 0), [A]),
    # ---- squeeze / unsqueeze
    Case("squeeze_all", lambda t, a: a.squeeze(), [randn(1, 3, 1, 2)]),
    Case("squeeze_dim", lambda t, a: t.squeeze(a, 2), [randn(1, 3, 1, 2)]),
    Case("squeeze_dim_not1", lambda t, a: a.squeeze(1), [randn(1, 3, 1, 2)]),
    Case("squeeze_tuple", lambda t, a: a.squeeze((0, -2)), [randn(1, 3, 1, 2)]),
    Case("unsqueeze", lambda t, a: a.unsqueeze(1), [A]),
    Case("unsqueeze_end", lambda t, a: t.unsqueeze(a, -1), [A]),
    Case("unsqueeze_0d", lambda t, a: a.unsqueeze(0), [np.array(1.5, np.float32)]),
    Case("atleast_2d", lambda t, a: t.atleast_2d(a), [V]),
    Case("atleast_3d_many", lambda t, a, b: t.atleast_3d(a, b), [V, M]),
    # ---- slicing views
    Case("narrow", lambda t, a: a.narrow(1, 1, 2), [A]),
    Case("narrow_neg", lambda t, a: t.narrow(a, -1, -3, 2), [A]),
    Case("narrow_copy", lambda t, a: t.narrow_copy(a, 0, 1, 1), [A]),
    Case("select", lambda t, a: a.select(1, 2), [A]),
    Case("select_neg", lambda t, a: t.select(a, -1, -1), [A]),
    Case("select_1d", lambda t, a: a.select(0, 3), [V]),
    Case("unbind", lambda t, a: a.unbind(1), [A]),
    Case("unbind_fn", lambda t, a: t.unbind(a), [A]),
    Case("split_int", lambda t, a: a.split(3, dim=2), [A]),
    Case("split_sizes", lambda t, a: t.split(a, [1, 0, 3], -1), [A]),
    Case("chunk", lambda t, a: a.chunk(2, 2), [A]),
    Case("chunk_uneven", lambda t, a: t.chunk(a, 4), [randn(5)]),
    Case("chunk_fewer", lambda t, a: t.chunk(a, 4), [randn(6)]),
    Case("tensor_split_sections", lambda t, a: t.tensor_split(a, 3), [randn(7)]),
    Case("tensor_split_indices", lambda t, a: a.tensor_split([1, 3], dim=1), [A]),
    Case("diagonal", lambda t, a: a.diagonal(), [M]),
    Case("diagonal_offset", lambda t, a: t.diagonal(a, 1), [M]),
    Case("diagonal_neg_offset_dims", lambda t, a: a.diagonal(-1, 2, 0), [A]),
    Case("diagonal_offset_out_of_matrix", lambda t, a: a.diagonal(7), [M]),
    Case("as_strided", lambda t, a: t.as_strided(a, (2, 2), (1, 2), 1), [M]),
    Case("as_strided_overlap", lambda t, a: a.as_strided((3, 3), (1, 1)), [V]),
    Case("as_strided_of_view", lambda t, a: a[1].as_strided((2, 3), (4, 1)), [M]),
    Case("unfold", lambda t, a: a.unfold(0, 2, 1), [V]),
    Case("unfold_step", lambda t, a: a.unfold(-1, 2, 2), [A]),
    Case("unfold_dim1", lambda t, a: a.unfold(1, 3, 1), [M]),
    # ---- joining
    Case("cat", lambda t, a, b: t.cat([a, b]), [randn(2, 3), randn(4, 3)]),
    Case("cat_dim1_neg", lambda t, a, b: t.cat((a, b), dim=-1), [randn(2, 3), randn(2, 1)]),
    Case("cat_promote", lambda t, a, b: t.cat([a, b], 1), [randn(2, 3), ints(2, 2)]),
    Case("cat_promote_double", lambda t, a, b: t.cat([a, b]),
         [randn(2, 3), randn(1, 3, dtype=np.float64)]),
    Case("cat_int_bool", lambda t, a, b: t.cat([a, b]),
         [ints(2), np.array([True, False])]),
    Case("cat_skip_legacy_empty", lambda t, a, b: t.cat([a, b]),
         [randn(0), randn(2, 3)]),
    Case("concat", lambda t, a, b: t.concat([a, b], 1), [randn(2, 3), randn(2, 1)]),
    Case("concatenate", lambda t, a, b: t.concatenate([a, b], axis=0), [randn(1, 3), randn(2, 3)]),
    Case("stack", lambda t, a, b: t.stack([a, b]), [M, randn(3, 4)]),
    Case("stack_last_neg", lambda t, a, b: t.stack((a, b), -1), [M, randn(3, 4)]),
    Case("stack_middle", lambda t, a, b, c: t.stack([a, b, c], 1), [V, randn(5), randn(5)]),
    Case("hstack_1d", lambda t, a, b: t.hstack([a, b]), [randn(3), randn(2)]),
    Case("hstack_2d", lambda t, a, b: t.hstack([a, b]), [randn(2, 3), randn(2, 2)]),
    Case("vstack", lambda t, a, b: t.vstack([a, b]), [randn(3), randn(2, 3)]),
    Case("row_stack", lambda t, a, b: t.row_stack([a, b]), [randn(3), randn(3)]),
    Case("dstack", lambda t, a, b: t.dstack([a, b]), [randn(2, 3), randn(2, 3)]),
    Case("column_stack", lambda t, a, b: t.column_stack([a, b]), [randn(3), randn(3, 2)]),
    # ---- reordering copies
    Case("flip", lambda t, a: t.flip(a, (0, 2)), [A]),
    Case("flip_varargs_neg", lambda t, a: a.flip(-1), [A]),
    Case("flip_int", lambda t, a: a.flip(0), [ints(3, 2)]),
    Case("fliplr", lambda t, a: t.fliplr(a), [M]),
    Case("flipud", lambda t, a: a.flipud(), [M]),
    Case("roll_flat", lambda t, a: t.roll(a, 3), [A]),
    Case("roll_dim", lambda t, a: a.roll(-1, 1), [A]),
    Case("roll_dims", lambda t, a: t.roll(a, (1, 5), (0, -1)), [A]),
    Case("rot90", lambda t, a: t.rot90(a), [M]),
    Case("rot90_k2", lambda t, a: a.rot90(2, [1, 2]), [A]),
    Case("rot90_k3_neg", lambda t, a: t.rot90(a, -1, (0, 1)), [M]),
    Case("rot90_k0", lambda t, a: t.rot90(a, 4), [M]),
    # ---- triangles and diagonals
    Case("tril", lambda t, a: t.tril(a), [M]),
    Case("tril_diag", lambda t, a: a.tril(-1), [A]),
    Case("triu", lambda t, a: t.triu(a, 1), [A]),
    Case("triu_int", lambda t, a: a.triu(), [ints(3, 3)]),
    Case("diag_1d", lambda t, a: t.diag(a), [V]),
    Case("diag_1d_offset", lambda t, a: a.diag(-2), [randn(3)]),
    Case("diag_2d", lambda t, a: t.diag(a), [M]),
    Case("diag_2d_offset", lambda t, a: a.diag(2), [M]),
    Case("diag_embed", lambda t, a: t.diag_embed(a), [randn(2, 3)]),
    Case("diag_embed_offset_dims", lambda t, a: a.diag_embed(1, 0, 2), [randn(2, 3)]),
    Case("diagflat", lambda t, a: t.diagflat(a, -1), [randn(2, 2)]),
    Case("meshgrid_ij", lambda t, a, b: t.meshgrid(a, b, indexing="ij"), [randn(3), randn(2)]),
    Case("meshgrid_xy_list", lambda t, a, b, c: t.meshgrid([a, b, c], indexing="xy"),
         [randn(3), randn(2), randn(4)]),
    # ---- in-place memory ops
    Case("fill_", lambda t, a: (a * 1).fill_(2.5), [A]),
    Case("fill_int_truncates", lambda t, a: a.clone().fill_(2.7), [ints(2, 2)]),
    Case("fill_tensor_value", lambda t, a, v: (a * 1).fill_(v * 2), [A, np.array(1.5, np.float32)]),
    Case("zero_", lambda t, a: (a * 1).zero_(), [A]),
    Case("fill_diagonal_", lambda t, a: (a * 1).fill_diagonal_(-float("inf")).softmax(1), [randn(4, 4)]),
    Case("fill_diagonal_wrap", lambda t, a: (a * 1).fill_diagonal_(2.5, wrap=True), [randn(7, 2)]),
    Case("fill_diagonal_no_wrap", lambda t, a: (a * 1).fill_diagonal_(2.5), [randn(7, 2)]),
    Case("fill_diagonal_wide_wrap", lambda t, a: (a * 1).fill_diagonal_(1, True), [randn(2, 5)]),
    Case("fill_diagonal_cube", lambda t, a: (a * 1).fill_diagonal_(0), [randn(3, 3, 3)]),
    Case("fill_diagonal_of_view", lambda t, a: (lambda c: (c[:, ::2].fill_diagonal_(3), c)[1])(a * 1),
         [randn(4, 4)]),
    Case("fill_diagonal_transposed", lambda t, a: (a * 1).t().fill_diagonal_(1, wrap=True), [randn(2, 6)]),
    Case("fill_diagonal_int", lambda t, a: a.clone().fill_diagonal_(2.7), [ints(3, 3)]),
    Case("copy_broadcast", lambda t, a, b: (a * 1).copy_(b), [A, randn(3, 1)]),
    Case("copy_dtype", lambda t, a, b: (a * 1).copy_(b), [randn(2, 3), randn(3, dtype=np.float64)]),
    Case("copy_float_into_int", lambda t, a, b: a.clone().copy_(b), [ints(2, 3), randn(2, 3)]),
    Case("copy_into_view", lambda t, a, b: (lambda c: (c.narrow(1, 0, 2).copy_(b), c)[1])(a * 1),
         [M, randn(3, 2)], grad=False),
    Case("tril_", lambda t, a: (a * 1).tril_(), [M]),
    Case("triu_", lambda t, a: (a * 1).triu_(-1), [M]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_torch(case: Case) -> None:
    check(case)


# Gradients flow through chains of views (each step's backward feeds the next).
CHAINS = [
    Case("view_chain", lambda t, a: a.transpose(0, 1).narrow(0, 1, 2).unsqueeze(0).expand(2, 2, 2, 4)
         .flatten(0, 1).select(2, 3), [A]),
    Case("split_cat_roundtrip", lambda t, a: t.cat(a.split([1, 3], 2)[::-1], 2), [A]),
    Case("stack_unbind", lambda t, a: t.stack(a.unbind(1)[::-1], 0), [A]),
    Case("diag_of_view", lambda t, a: a.t().diagonal(1) * 2, [M]),
    Case("unfold_overlap_sum", lambda t, a: a.unfold(0, 3, 1).sum(-1), [V]),
]


@pytest.mark.parametrize("case", CHAINS, ids=str)
def test_view_chains_backprop(case: Case) -> None:
    check(case)


def test_double_backward_through_narrow_and_as_strided() -> None:
    """``create_graph=True``: the zero-padding backward is itself differentiable."""
    x = mytorch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = (x.narrow(0, 1, 2) * x.narrow(0, 1, 2)).sum()
    (g,) = mytorch.autograd.grad(y, x, create_graph=True)
    assert g.tolist() == [0.0, 4.0, 6.0, 0.0]
    (gg,) = mytorch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [0.0, 2.0, 2.0, 0.0]
    z = x.as_strided((2, 2), (1, 1)).sum()
    (g2,) = mytorch.autograd.grad(z, x)
    assert g2.tolist() == [1.0, 2.0, 1.0, 0.0]


# ---------------------------------------------------------------------------- errors
ERRORS = [
    ("view_bad_size", lambda t, a: a.view(5, -1), [A]),
    ("view_two_infer", lambda t, a: a.view(-1, -1), [A]),
    ("view_zero_numel_ambiguous", lambda t, a: a.view(-1, 0), [randn(0, 3)]),
    ("view_noncontiguous", lambda t, a: a.t().view(12), [M]),
    ("view_dtype_0d", lambda t, a: a.view(t.int16), [np.array(1.0, np.float32)]),
    ("view_dtype_stride", lambda t, a: a.t().view(t.int16), [M]),
    ("view_dtype_size", lambda t, a: a.view(t.float64), [randn(3)]),
    ("reshape_bad", lambda t, a: a.reshape(7), [A]),
    ("flatten_order", lambda t, a: a.flatten(2, 0), [A]),
    ("unflatten_bad", lambda t, a: a.unflatten(1, (2, 2)), [A]),
    ("unflatten_two_infer", lambda t, a: a.unflatten(1, (-1, -1)), [A]),
    ("expand_fewer", lambda t, a: a.expand(3, 4), [A]),
    ("expand_mismatch", lambda t, a: a.expand(2, 4, 4), [A]),
    ("expand_leading_minus1", lambda t, a: a.expand(-1, 3), [randn(1)]),
    ("broadcast_tensors_bad", lambda t, a, b: t.broadcast_tensors(a, b), [randn(2, 3), randn(3, 2)]),
    ("broadcast_shapes_bad", lambda t: t.broadcast_shapes((2, 3), (3, 2)), []),
    ("repeat_fewer", lambda t, a: a.repeat(2), [M]),
    ("repeat_interleave_neg", lambda t, a: a.repeat_interleave(-1), [M]),
    ("repeat_interleave_len", lambda t, a: a.repeat_interleave(t.tensor([1, 2]), 1), [A]),
    ("permute_len", lambda t, a: a.permute(0, 1), [A]),
    ("permute_dup", lambda t, a: a.permute(0, 1, 1), [A]),
    ("permute_range", lambda t, a: a.permute(0, 1, 3), [A]),
    ("transpose_range", lambda t, a: a.transpose(0, 3), [A]),
    ("t_3d", lambda t, a: a.t(), [A]),
    ("mT_1d", lambda t, a: a.mT, [V]),
    ("movedim_len", lambda t, a: a.movedim((0, 1), (0,)), [A]),
    ("movedim_repeat", lambda t, a: a.movedim((0, 0), (1, 2)), [A]),
    ("squeeze_range", lambda t, a: a.squeeze(3), [A]),
    ("unsqueeze_range", lambda t, a: a.unsqueeze(4), [A]),
    ("narrow_too_long", lambda t, a: a.narrow(1, 2, 3), [A]),
    ("narrow_start_range", lambda t, a: a.narrow(1, 4, 0), [A]),
    ("narrow_0d", lambda t, a: a.narrow(0, 0, 1), [np.array(1.0, np.float32)]),
    ("select_range", lambda t, a: a.select(1, 3), [A]),
    ("unbind_0d", lambda t, a: a.unbind(), [np.array(1.0, np.float32)]),
    ("split_zero", lambda t, a: a.split(0), [A]),
    ("split_sizes_sum", lambda t, a: a.split([1, 1], 1), [A]),
    ("chunk_zero", lambda t, a: a.chunk(0), [A]),
    ("diagonal_same_dims", lambda t, a: a.diagonal(0, 1, 1), [A]),
    ("as_strided_out_of_bounds", lambda t, a: a.as_strided((2, 2), (1, 2), 100), [A]),
    ("as_strided_negative_stride", lambda t, a: a.as_strided((2, 2), (1, -2)), [A]),
    ("unfold_too_big", lambda t, a: a.unfold(0, 6, 1), [V]),
    ("unfold_step0", lambda t, a: a.unfold(0, 2, 0), [V]),
    ("cat_sizes", lambda t, a, b: t.cat([a, b], 1), [randn(2, 2), randn(3, 3)]),
    ("cat_ndim", lambda t, a, b: t.cat([a, b], 1), [randn(2, 2), randn(3, 3, 3)]),
    ("cat_empty_list", lambda t: t.cat([]), []),
    ("cat_0d", lambda t, a: t.cat([a, a]), [np.array(1.0, np.float32)]),
    ("cat_dim_range", lambda t, a: t.cat([a, a], 2), [M]),
    ("cat_not_list", lambda t, a: t.cat(a), [M]),
    ("stack_sizes", lambda t, a, b: t.stack([a, b]), [randn(2, 2), randn(3, 3)]),
    ("stack_empty", lambda t: t.stack([]), []),
    ("stack_dim_range", lambda t, a: t.stack([a, a], 4), [A]),
    ("flip_dup", lambda t, a: a.flip(0, 0), [A]),
    ("fliplr_1d", lambda t, a: t.fliplr(a), [V]),
    ("roll_misaligned", lambda t, a: t.roll(a, (1, 2), (0,)), [A]),
    ("roll_no_dims_two_shifts", lambda t, a: t.roll(a, (1, 2)), [A]),
    ("rot90_same_dims", lambda t, a: t.rot90(a, 1, (0, 0)), [A]),
    ("rot90_one_dim", lambda t, a: t.rot90(a, 1, (0,)), [A]),
    ("tril_1d", lambda t, a: t.tril(a), [V]),
    ("diag_3d", lambda t, a: t.diag(a), [A]),
    ("meshgrid_dtypes", lambda t, a, b: t.meshgrid(a, b, indexing="ij"), [ints(3), randn(2)]),
    ("meshgrid_2d", lambda t, a: t.meshgrid(a, indexing="ij"), [M]),
    ("meshgrid_bad_indexing", lambda t, a: t.meshgrid(a, indexing="ji"), [V]),
    ("fill_1d_value", lambda t, a, v: a.fill_(v), [A, randn(2)]),
    ("fill_diagonal_1d", lambda t, a: a.fill_diagonal_(1), [V]),
    ("fill_diagonal_unequal", lambda t, a: a.fill_diagonal_(1), [A]),
    ("fill_diagonal_overflow", lambda t, a: a.fill_diagonal_(300), [np.zeros((2, 2), np.uint8)]),
    ("fill_diagonal_leaf", lambda t, a: a.requires_grad_().fill_diagonal_(0), [M]),
    ("copy_not_broadcastable", lambda t, a, b: a.copy_(b), [M, randn(2, 4)]),
    ("copy_leaf_requires_grad",
     lambda t, a, b: a.requires_grad_().copy_(b), [M, randn(3, 4)]),
    ("resize_requires_grad", lambda t, a: a.requires_grad_().resize_(2), [M]),
    ("contiguous_channels_last_rank", lambda t, a: a.contiguous(memory_format=t.channels_last), [M]),
]


@pytest.mark.parametrize("name,fn,inputs", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(name: str, fn, inputs) -> None:
    check_raises(fn, *inputs)


def test_error_messages_name_the_sizes() -> None:
    err = check_raises(lambda t, a, b: t.cat([a, b], 1), randn(2, 2), randn(3, 3))
    assert str(err) == ("Sizes of tensors must match except in dimension 1. Expected size 2 but "
                        "got size 3 for tensor number 1 in the list.")
    err = check_raises(lambda t, a: a.repeat(2), M)
    assert "Number of dimensions of repeat dims can not be smaller than number of dimensions " \
           "of tensor" in str(err)
    err = check_raises(lambda t, a: a.view(t.float64), randn(3))
    assert str(err) == ("self.size(-1) must be divisible by 2 to view Float as Double (different "
                        "element sizes), but got 3")
    err = check_raises(lambda t, a: a.expand(2, 4, 4), A)
    assert "(4) must match the existing size (3) at non-singleton dimension 1" in str(err)


def test_meshgrid_warns_without_indexing() -> None:
    with pytest.warns(UserWarning, match="indexing argument"):
        mytorch.meshgrid(mytorch.arange(3), mytorch.arange(2))


def test_broadcast_shapes_matches_torch() -> None:
    import torch

    for shapes in [((2, 1), (3,)), (2, (1, 2)), ((), (4, 1), (1, 5)), ((0, 1), (3,))]:
        assert tuple(mytorch.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    assert repr(mytorch.broadcast_shapes((2, 1), (3,))) == "torch.Size([2, 3])"


def test_output_dtypes_follow_the_input() -> None:
    for dt in (np.int32, np.uint8, np.bool_, np.float64, np.float16):
        x = mytorch.from_numpy(np.zeros((2, 3), dt))
        for y in (x.t(), x.reshape(6), x.repeat(2, 1), x.flip(0), mytorch.cat([x, x]),
                  x.roll(1), x.tril(), x.unsqueeze(0).expand(2, 2, 3), x.repeat_interleave(2)):
            assert y.dtype is x.dtype


@pytest.mark.parametrize("pieces", ["x.split(2, 1)", "x.split([1, 3, 2], 1)", "x.chunk(3, 1)",
                                    "x.unbind(0)", "x.tensor_split(3, 1)", "x.hsplit(2)",
                                    "x.split(6, 1)"])
def test_split_and_unbind_outputs_share_one_node_as_in_torch(pieces):
    """split, chunk and unbind: one node, an output per piece (tensor_split: a slice each);
    gradients of some pieces only, and of pieces' gradients again (create_graph), as torch."""
    got = []
    for lib in (mytorch, torch):
        x0 = lib.tensor(np.arange(24.0).reshape(4, 6) / 7, requires_grad=True)
        x = x0 * 1
        out = eval(pieces, {"x": x})
        got.append(([o.grad_fn.name() for o in out], [o.output_nr for o in out],
                    len({id(o.grad_fn) for o in out})))
        loss = (out[-1] ** 3).sum() + (out[0] * 2).sum()
        g, = lib.autograd.grad(loss, x0, create_graph=True)
        gg, = lib.autograd.grad((g ** 2).sum(), x0)
        got[-1] += (np.round(g.detach().numpy(), 10).tolist(), np.round(gg.numpy(), 8).tolist())
    assert got[0] == got[1]
