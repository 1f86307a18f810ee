"""Indexing, gather/scatter, index_*, masked_*, where, nonzero, searchsorted: torch as the oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Case, check, check_raises, randn

import mytorch


def I(*values, shape=None):  # noqa: E743 - an int64 index array, as torch wants
    a = np.array(values, dtype=np.int64)
    return a.reshape(shape) if shape is not None else a


def B(*values, shape=None):
    a = np.array(values, dtype=bool)
    return a.reshape(shape) if shape is not None else a


X = randn(3, 4)
X3 = randn(2, 3, 4)

# ------------------------------------------------------------------------------- x[key]
GETITEM = [
    Case("int", lambda t, x: x[1], [X]),
    Case("neg_int", lambda t, x: x[-1, -2], [X]),
    Case("slice_step", lambda t, x: x[::2, 1::2], [X]),
    Case("none_ellipsis", lambda t, x: x[None, ..., 1, None], [X3]),
    Case("ellipsis_only", lambda t, x: x[...], [X]),
    Case("empty_slice", lambda t, x: x[2:1], [X]),
    Case("index_tensor", lambda t, x, i: x[i], [X, I(2, 0, 2)]),
    Case("index_int32", lambda t, x, i: x[i.int()], [X, I(1, 0)]),
    Case("index_neg_repeat", lambda t, x, i: x[:, i], [X, I(-1, 0, -1, -1)]),
    Case("index_list", lambda t, x: x[[0, 2]], [X]),
    Case("list_as_tuple", lambda t, x: x[[0, slice(None)]], [X]),
    Case("two_index_tensors", lambda t, x, i, j: x[i, j], [X, I(0, 2, 2), I(3, 1, 3)]),
    Case("index_broadcast", lambda t, x, i, j: x[i, j], [X, I(0, 2, shape=(2, 1)), I(1, 2, 3)]),
    Case("adv_separated_front", lambda t, x, i: x[i, :, i], [X3, I(0, 1, 1)]),
    Case("int_then_adv_stays", lambda t, x, i: x[1, :, i], [X3, I(0, 3)]),
    Case("adv_with_none", lambda t, x, i: x[:, i, None, i], [X3, I(0, 1)]),
    Case("adv_2d_index", lambda t, x, i: x[:, i], [X, I(0, 1, 3, 3, shape=(2, 2))]),
    Case("bool_mask_full", lambda t, x, m: x[m], [X, B(*(np.arange(12) % 3 == 0), shape=(3, 4))]),
    Case("bool_mask_rows", lambda t, x, m: x[m], [X, B(True, False, True)]),
    Case("bool_mask_last", lambda t, x, m: x[1:, m], [X, B(True, False, True, True)]),
    Case("bool_list", lambda t, x: x[[True, False, True]], [X]),
    Case("bool_scalar", lambda t, x: x[True], [X]),
    Case("bool_false", lambda t, x: x[False], [X]),
    Case("zero_dim_int_tensor", lambda t, x, i: x[i], [X, np.array(2, dtype=np.int64)]),
    Case("zero_dim_in_tuple", lambda t, x, i: x[1:, i], [X, np.array(-1, dtype=np.int64)]),
    Case("int_index_of_int_tensor", lambda t, x, i: x[i], [np.arange(6), I(5, 0)]),
    Case("empty_list", lambda t, x: x[[]], [X]),
]


@pytest.mark.parametrize("case", GETITEM, ids=str)
def test_getitem(case):
    check(case)


GETITEM_ERRORS = [
    ("int_out_of_range", lambda t, x: x[5], [X]),
    ("neg_out_of_range", lambda t, x: x[0, -5], [X]),
    ("neg_step", lambda t, x: x[::-1], [X]),
    ("zero_step", lambda t, x: x[::0], [X]),
    ("float_index", lambda t, x: x[1.5], [X]),
    ("float_tensor_index", lambda t, x, i: x[i], [X, np.array([1.0])]),
    ("int16_index", lambda t, x, i: x[i.short()], [X, I(1)]),
    ("adv_out_of_range", lambda t, x, i: x[i], [X, I(0, 3)]),
    ("too_many", lambda t, x: x[0, 0, 0], [X]),
    ("mask_shape", lambda t, x, m: x[m], [X, B(True, False)]),
    ("broadcast_mismatch", lambda t, x, i, j: x[i, j], [X, I(0, 1), I(0, 1, 2)]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in GETITEM_ERRORS], ids=[c[0] for c in GETITEM_ERRORS])
def test_getitem_errors(fn, inputs):
    check_raises(fn, *inputs)


def test_getitem_error_messages():
    x = mytorch.zeros(3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[mytorch.tensor([0.0])]


def _setitem(key_fn):
    def fn(t, x, *rest):
        y = x.clone()
        key, value = key_fn(t, *rest)
        y[key] = value
        return y

    return fn


SETITEM = [
    Case("scalar_int", _setitem(lambda t: (1, 7.5)), [X]),
    Case("slice_tensor_broadcast", _setitem(lambda t, v: ((slice(None), slice(1, 3)), v)), [X, randn(2)]),
    Case("value_leading_ones", _setitem(lambda t, v: (0, v)), [X, randn(1, 4)]),
    Case("none_ellipsis", _setitem(lambda t, v: ((None, ..., 2), v)), [X, randn(3)]),
    Case("index_tensor", _setitem(lambda t, i, v: (i, v)), [X, I(2, 0), randn(2, 4)]),
    Case("mask", _setitem(lambda t, m: (m, -1.0)), [X, B(*(np.arange(12) % 2 == 0), shape=(3, 4))]),
    Case("mask_tensor_value", _setitem(lambda t, m, v: (m, v)), [X, B(True, False, True), randn(4)]),
    Case("zero_dim_value", _setitem(lambda t, v: (2, v)), [X, np.array(3.0, dtype=np.float32)]),
    Case("int_tensor_float_value", _setitem(lambda t: (0, 2.7)), [np.arange(5)]),
    Case(
        "int_tensor_float_tensor",
        _setitem(lambda t, v: (slice(0, 2), v)),
        [np.arange(5), np.array([1.9, -2.9])],
    ),
    Case("float_from_double", _setitem(lambda t, v: (1, v)), [X, randn(4, dtype=np.float64)]),
    Case("adv_and_int", _setitem(lambda t, i, v: ((1, slice(None), i), v)), [X3, I(0, 3), randn(3, 2)]),
]


@pytest.mark.parametrize("case", SETITEM, ids=str)
def test_setitem(case):
    check(case)


SETITEM_ERRORS = [
    ("shape_mismatch", lambda t, x: x.__setitem__(0, t.ones(2)), [X]),
    ("too_many_value_dims", lambda t, x: x.__setitem__(0, t.ones(2, 4)), [X]),
    ("string_value", lambda t, x: x.__setitem__(0, "a"), [X]),
    ("leaf_requires_grad", lambda t, x: x.requires_grad_().__setitem__(0, 1.0), [X]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in SETITEM_ERRORS], ids=[c[0] for c in SETITEM_ERRORS])
def test_setitem_errors(fn, inputs):
    check_raises(fn, *inputs)


# ------------------------------------------------------------------------------- views and copies
def test_basic_index_is_a_view_sharing_memory_and_version():
    x = mytorch.arange(12.0).reshape(3, 4)
    v = x[1, ::2]
    assert v._base is not None and v.data_ptr() == x.data_ptr() + 4 * x.element_size()
    v[0] = 100.0
    assert x[1, 0].item() == 100.0
    assert x._version == v._version == 1
    x[1, 2] = -1.0
    assert v[1].item() == -1.0


def test_full_integer_index_is_a_zero_dim_view():
    x = mytorch.arange(6.0)
    e = x[4]
    assert e.shape == () and e._base is not None
    x[4] = 9.0
    assert e.item() == 9.0


def test_advanced_index_copies():
    x = mytorch.arange(6.0)
    c = x[mytorch.tensor([1, 2])]
    c[0] = 50.0
    assert x[1].item() == 1.0
    m = x[x > 2]
    m[0] = 50.0
    assert x[3].item() == 3.0


def test_setitem_through_view_modifies_base():
    x = mytorch.zeros(3, 4)
    row = x[1]
    row[mytorch.tensor([0, 3])] = 5.0
    assert x.tolist()[1] == [5.0, 0.0, 0.0, 5.0]
    x[:, 1:3][0] = 2.0
    assert x.tolist()[0] == [0.0, 2.0, 2.0, 0.0]


def test_setitem_bumps_version_and_grad_flows_to_value():
    v = mytorch.tensor([1.0, 2.0], requires_grad=True)
    y = mytorch.zeros(2, 3)
    y[:, 1] = v * 3
    assert y.grad_fn is not None
    y.sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]


# ------------------------------------------------------------------------------- gather / scatter
G = I(0, 0, 1, 0, 2, 3, shape=(3, 2))
OPS = [
    Case("gather_dim1", lambda t, x, i: t.gather(x, 1, i), [X, G]),
    Case("gather_dim0", lambda t, x, i: x.gather(0, i), [X, I(0, 1, 2, 0, 2, 2, 1, 1, shape=(2, 4))]),
    Case("gather_neg_dim", lambda t, x, i: x.gather(-1, i), [X, G]),
    Case("gather_smaller_index", lambda t, x, i: x.gather(0, i), [X, I(2, 1, shape=(1, 2))]),
    Case(
        "gather_3d", lambda t, x, i: x.gather(1, i), [X3, np.random.default_rng(0).integers(0, 3, (2, 5, 4))]
    ),
    Case("gather_int_input", lambda t, x, i: x.gather(1, i), [np.arange(12).reshape(3, 4), G]),
    # the syllabus walk-through: one-hot by scatter_
    Case(
        "one_hot_scatter_", lambda t, lab: t.zeros(4, 5).scatter_(1, lab.unsqueeze(1), 1.0), [I(0, 3, 1, 4)]
    ),
    Case(
        "scatter_dim0", lambda t, x, i, s: x.scatter(0, i, s), [X, I(1, 2, 0, 1, shape=(1, 4)), randn(1, 4)]
    ),
    Case(
        "scatter_dim1",
        lambda t, x, i, s: t.scatter(x, 1, i, s),
        [X, I(3, 0, 1, 2, 0, 3, shape=(3, 2)), randn(3, 2)],
    ),
    # src larger than index: only its leading block is used (torch cannot backprop this case)
    Case(
        "scatter_src_larger",
        lambda t, x, i, s: t.scatter(x, 1, i, s),
        [X, I(3, 0, 1, 2, 0, 3, shape=(3, 2)), randn(3, 3)],
        grad=False,
    ),
    Case("scatter_value", lambda t, x, i: x.scatter(1, i, value=-2.0), [X, G]),
    Case("scatter_value_positional", lambda t, x, i: x.scatter(1, i, 5), [X, G]),
    Case(
        "scatter__inplace",
        lambda t, x, i, s: x.clone().scatter_(1, i, s),
        [X, I(3, 0, 1, 2, 0, 3, shape=(3, 2)), randn(3, 2)],
    ),
    Case(
        "scatter__add",
        lambda t, x, i, s: x.clone().scatter_(1, i, s, reduce="add"),
        [X, G, randn(3, 2)],
        grad=False,
    ),
    Case(
        "scatter__multiply",
        lambda t, x, i, s: x.clone().scatter_(1, i, s, reduce="multiply"),
        [X, G, randn(3, 2)],
        grad=False,
    ),
    Case(
        "scatter__add_value",
        lambda t, x, i: x.clone().scatter_(0, i, 2.0, reduce="add"),
        [X, I(1, 1, 1, 1, shape=(1, 4))],
        grad=False,
    ),
    Case("scatter_int_value_float", lambda t, x, i: x.scatter(0, i, 3.7), [np.arange(4), I(1)]),
    Case("scatter_add", lambda t, x, i, s: x.scatter_add(1, i, s), [X, G, randn(3, 2)]),
    Case(
        "scatter_add_",
        lambda t, x, i, s: x.clone().scatter_add_(0, i, s),
        [X, I(0, 0, 0, 0, 2, 2, 2, 2, shape=(2, 4)), randn(2, 4)],
    ),
    Case(
        "scatter_add_fn",
        lambda t, x, i, s: t.scatter_add(x, 0, i, s),
        [X, I(0, 0, shape=(2, 1)), randn(2, 1)],
    ),
    Case(
        "scatter_add_src_larger",
        lambda t, x, i, s: t.scatter_add(x, 0, i, s),
        [X, I(0, 0, shape=(2, 1)), randn(3, 3)],
        grad=False,
    ),
]
for _r in ("sum", "prod", "mean", "amax", "amin"):
    for _inc in (True, False):
        OPS.append(
            Case(
                f"scatter_reduce_{_r}_{_inc}",
                lambda t, x, i, s, r=_r, inc=_inc: x.scatter_reduce(1, i, s, r, include_self=inc),
                [X, I(0, 0, 2, 1, 1, 1, 3, 3, 3, shape=(3, 3)), randn(3, 3, seed=1)],
            )
        )
OPS += [
    Case(
        "scatter_reduce_mean_int",
        lambda t, x, i, s: x.scatter_reduce(0, i, s, "mean"),
        [np.arange(6).reshape(2, 3), I(0, 0, 0, 0, 0, 0, shape=(2, 3)), np.array([[-3, -4, -6], [0, 0, 0]])],
    ),
    Case(
        "scatter_reduce_prod_zeros",
        lambda t, x, i, s: x.scatter_reduce(0, i, s, "prod"),
        [
            np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]], np.float32),
            I(0, 0, 0, 0, 1, 1, shape=(2, 3)),
            np.array([[0.0, 2.0, 0.0], [5.0, 0.0, 0.0]], np.float32),
        ],
    ),
    Case(
        "scatter_reduce_amax_ties",
        lambda t, x, i, s: x.scatter_reduce(1, i, s, "amax"),
        [
            np.array([[1.0, 2.0]], np.float32),
            I(0, 0, 0, shape=(1, 3)),
            np.array([[1.0, 0.5, 1.0]], np.float32),
        ],
    ),
    Case(
        "scatter_reduce_",
        lambda t, x, i, s: x.clone().scatter_reduce_(0, i, s, "sum"),
        [X, I(2, 0, 1, 1, 1, 0, shape=(2, 3)), randn(2, 3)],
    ),
    Case("take_along_dim", lambda t, x, i: t.take_along_dim(x, i, 1), [X, I(0, 3, 1, shape=(3, 1))]),
    Case("take_along_dim_broadcast", lambda t, x, i: x.take_along_dim(i, 0), [X, I(2, 0, shape=(2, 1))]),
    Case("take_along_dim_flat", lambda t, x, i: t.take_along_dim(x, i), [X, I(11, 0, 5)]),
    Case(
        "take_along_dim_argsort",
        lambda t, x, i: t.take_along_dim(x, i, dim=-1),
        [X, np.argsort(X, axis=-1).astype(np.int64)],
    ),
    # index_* along a dim
    Case("index_select_dim0", lambda t, x, i: t.index_select(x, 0, i), [X, I(2, 0, 2)]),
    Case("index_select_dim1", lambda t, x, i: x.index_select(-1, i), [X, I(3, 3, 1)]),
    Case("index_select_0d", lambda t, x, i: x.index_select(0, i), [X, np.array(1, dtype=np.int64)]),
    Case("index_select_int32", lambda t, x, i: x.index_select(0, i.int()), [X, I(1, 0)]),
    Case(
        "index_add_repeat", lambda t, x, i, s: x.clone().index_add_(0, i, s), [X, I(1, 1, 0, 1), randn(4, 4)]
    ),
    Case("index_add_alpha", lambda t, x, i, s: x.index_add(1, i, s, alpha=-2.5), [X, I(3, 0), randn(3, 2)]),
    Case(
        "index_add_fn",
        lambda t, x, i, s: t.index_add(x, 0, i, s),
        [
            X,
            I(
                2,
            ),
            randn(1, 4),
        ],
    ),
    Case("index_copy", lambda t, x, i, s: x.index_copy(1, i, s), [X, I(3, 0), randn(3, 2)]),
    Case("index_copy_", lambda t, x, i, s: x.clone().index_copy_(0, i, s), [X, I(2, 0), randn(2, 4)]),
    Case("index_fill", lambda t, x, i: x.index_fill(1, i, -1.5), [X, I(0, 2)]),
    Case("index_fill_neg", lambda t, x, i: x.clone().index_fill_(0, i, 3), [X, I(-1)]),
    Case("index_fill_int_float", lambda t, x, i: x.index_fill(0, i, 2.5), [np.arange(4), I(1)]),
    Case(
        "index_fill_tensor_value",
        lambda t, x, i, v: x.index_fill(0, i, v),
        [X, I(0, 2), np.array(4.0, np.float32)],
    ),
    Case("index_put", lambda t, x, i, v: x.index_put((i,), v), [X, I(2, 0), randn(4)]),
    Case("index_put_two", lambda t, x, i, j, v: t.index_put(x, (i, j), v), [X, I(2, 0), I(1, 1), randn(2)]),
    Case(
        "index_put_accumulate",
        lambda t, x, i, v: x.clone().index_put_((i,), v, accumulate=True),
        [X, I(0, 0, 2, 0), randn(4, 4)],
    ),
    Case(
        "index_put_acc_2d",
        lambda t, x, i, j, v: x.index_put((i, j), v, accumulate=True),
        [X, I(1, 1, 1), I(2, 2, -1), randn(3)],
    ),
    Case("index_put_mask", lambda t, x, m, v: x.index_put((m,), v), [X, B(True, False, True), randn(4)]),
    Case(
        "index_put__fn",
        lambda t, x, i, v: t.index_put_(x.clone(), (i,), v),
        [
            X,
            I(
                1,
            ),
            randn(1, 4),
        ],
    ),
    Case("take", lambda t, x, i: t.take(x, i), [X, I(0, 11, -1, 5, 5, shape=(5, 1))]),
    Case("take_noncontig", lambda t, x, i: x.t().take(i), [X, I(1, 2)]),
    Case("put", lambda t, x, i, s: x.put(i, s), [X, I(0, -1, 5), randn(3)]),
    Case(
        "put_accumulate",
        lambda t, x, i, s: x.clone().put_(i, s, accumulate=True),
        [X, I(1, 1, 4, shape=(3, 1)), randn(3)],
    ),
    Case("put_noncontig", lambda t, x, i, s: x.t().clone().t().put_(i, s) * 1, [X, I(1, 4), randn(2)]),
    Case("put_fn", lambda t, x, i, s: t.put(x, i, s, accumulate=True), [X, I(1, 1), randn(2)]),
    # masks
    Case("masked_fill", lambda t, x, m: x.masked_fill(m, 0.5), [X, B(True, False, False, True)]),
    Case(
        "masked_fill_broadcast_up",
        lambda t, x, m: t.masked_fill(x, m, -1.0),
        [randn(4), B(*([True, False] * 6), shape=(3, 4))],
    ),
    Case(
        "masked_fill_", lambda t, x, m: x.clone().masked_fill_(m, 2), [X, B(True, False, True, shape=(3, 1))]
    ),
    Case(
        "masked_fill_tensor_value",
        lambda t, x, m, v: x.masked_fill(m, v),
        [X, B(True, False, False, True), np.array(2.0, np.float32)],
    ),
    Case(
        "masked_fill_int", lambda t, x, m: x.masked_fill(m, 1.5), [np.arange(4), B(True, False, True, False)]
    ),
    Case("masked_fill_0d_mask", lambda t, x, m: x.masked_fill(m, 1.5), [X, np.array(True)]),
    Case(
        "masked_select", lambda t, x, m: t.masked_select(x, m), [X, B(*(np.arange(12) % 5 < 2), shape=(3, 4))]
    ),
    Case("masked_select_broadcast", lambda t, x, m: x.masked_select(m), [X, B(False, True, True, False)]),
    Case(
        "masked_select_broadcast_up",
        lambda t, x, m: x.masked_select(m),
        [randn(4), B(True, False, shape=(2, 1))],
    ),
    Case(
        "masked_scatter",
        lambda t, x, m, s: x.masked_scatter(m, s),
        [X, B(True, False, True, False), randn(8)],
    ),
    Case(
        "masked_scatter_",
        lambda t, x, m, s: x.clone().masked_scatter_(m, s),
        [X, B(False, True, True, shape=(3, 1)), randn(3, 4)],
    ),
    # where
    Case("where", lambda t, c, x, y: t.where(c, x, y), [B(True, False, True, shape=(3, 1)), X, randn(4)]),
    Case("where_scalar_other", lambda t, c, x: t.where(c, x, 0.0), [B(True, False, True, False), X]),
    Case("where_scalars", lambda t, c: t.where(c, 1, 2.5), [B(True, False)]),
    Case("where_int_scalars", lambda t, c: t.where(c, 1, 2), [B(True, False)]),
    Case(
        "where_int_tensor_float_scalar",
        lambda t, c, x: t.where(c, x, 2.5),
        [B(True, False), np.array([1, 2])],
    ),
    Case(
        "where_0d_double_vs_long",
        lambda t, c, x, y: t.where(c, x, y),
        [B(True, False), np.array(1.0), np.array([1, 2])],
    ),
    Case("where_method", lambda t, c, x, y: x.where(c, y), [B(True, False, True, False), X, randn(3, 1)]),
    Case(
        "where_uint8_cond",
        lambda t, c, x, y: t.where(c.to(t.uint8), x, y),
        [B(True, False), randn(2), randn(2, seed=3)],
    ),
    Case("where_one_arg", lambda t, c: t.where(c), [B(True, False, True, True, shape=(2, 2))]),
    Case("nonzero", lambda t, x: t.nonzero(x), [np.array([[0, 1, 0], [2, 0, 3]])]),
    Case("nonzero_as_tuple", lambda t, x: x.nonzero(as_tuple=True), [np.array([[0.0, 1.0], [2.0, 0.0]])]),
    Case("nonzero_bool_1d", lambda t, x: x.nonzero(), [B(True, False, True)]),
    Case("nonzero_0d", lambda t, x: (t.nonzero(x), t.nonzero(x, as_tuple=True)), [np.array(3)]),
    Case("nonzero_empty", lambda t, x: t.nonzero(x), [np.zeros((2, 2))]),
    Case("argwhere", lambda t, x: t.argwhere(x), [np.array([[0, 1, 0], [2, 0, 3]])]),
    # searchsorted / bucketize
    Case(
        "searchsorted",
        lambda t, s, v: t.searchsorted(s, v),
        [np.array([1, 3, 5, 7, 9]), np.array([3, 6, 9, 0, 10])],
    ),
    Case(
        "searchsorted_right",
        lambda t, s, v: t.searchsorted(s, v, right=True),
        [np.array([1, 3, 5, 7, 9]), np.array([[3, 6], [9, 1]])],
    ),
    Case(
        "searchsorted_side",
        lambda t, s, v: t.searchsorted(s, v, side="right", out_int32=True),
        [np.array([1.0, 3.0, 5.0]), np.array([3.0, 4.0])],
    ),
    Case(
        "searchsorted_nd",
        lambda t, s, v: t.searchsorted(s, v, right=True),
        [np.array([[1, 3, 5], [2, 4, 6]]), np.array([[3, 4], [3, 5]])],
    ),
    Case(
        "searchsorted_sorter",
        lambda t, s, v, o: t.searchsorted(s, v, sorter=o),
        [np.array([5, 1, 3]), np.array([3, 4]), I(1, 2, 0)],
    ),
    Case("searchsorted_scalar", lambda t, s: t.searchsorted(s, 3), [np.array([1, 3, 5])]),
    Case(
        "searchsorted_mixed_dtypes",
        lambda t, s, v: t.searchsorted(s, v),
        [np.array([1, 3, 5]), np.array([3.5, 0.5], np.float32)],
    ),
    Case(
        "bucketize", lambda t, x, b: t.bucketize(x, b), [np.array([[1, 5], [9, 3]]), np.array([1, 3, 5, 7])]
    ),
    Case(
        "bucketize_right_int32",
        lambda t, x, b: t.bucketize(x, b, right=True, out_int32=True),
        [np.array([1, 5, 9, 3]), np.array([1, 3, 5, 7])],
    ),
    Case("bucketize_scalar", lambda t, b: t.bucketize(3, b), [np.array([1, 3, 5])]),
]


@pytest.mark.parametrize("case", OPS, ids=str)
def test_ops(case):
    check(case)


ERRORS = [
    ("gather_ndim", lambda t, x, i: x.gather(0, i), [X, I(1)]),
    ("gather_float_index", lambda t, x, i: x.gather(0, i), [X, np.array([[1.0]])]),
    ("gather_out_of_range", lambda t, x, i: x.gather(0, i), [X, I(3, shape=(1, 1))]),
    ("gather_negative", lambda t, x, i: x.gather(0, i), [X, I(-1, shape=(1, 1))]),
    ("gather_index_too_big", lambda t, x, i: x.gather(0, i), [X, I(1, 1, 1, 1, 1, shape=(1, 5))]),
    ("gather_bad_dim", lambda t, x, i: x.gather(2, i), [X, G]),
    ("scatter_dtype", lambda t, x, i, s: x.scatter(0, i, s.double()), [X, I(1, shape=(1, 1)), randn(1, 1)]),
    ("scatter_ndim", lambda t, x, i, s: x.scatter(0, i, s), [X, I(1), randn(1, 4)]),
    (
        "scatter_src_too_small",
        lambda t, x, i, s: x.scatter(0, i, s),
        [X, I(1, 1, 1, shape=(1, 3)), randn(1, 2)],
    ),
    ("scatter_out_of_range", lambda t, x, i, s: x.scatter(0, i, s), [X, I(5, shape=(1, 1)), randn(1, 1)]),
    (
        "scatter_bad_reduce",
        lambda t, x, i, s: x.clone().scatter_(0, i, s, reduce="mean"),
        [X, I(1, shape=(1, 1)), randn(1, 1)],
    ),
    (
        "scatter_reduce_bad",
        lambda t, x, i, s: x.scatter_reduce(0, i, s, "foo"),
        [X, I(1, shape=(1, 1)), randn(1, 1)],
    ),
    ("scatter_add_dtype", lambda t, x, i, s: x.scatter_add(0, i, s), [np.arange(4), I(1), randn(1)]),
    (
        "scatter_reduce_grad",
        lambda t, x, i, s: t.scatter(x.requires_grad_(), 0, i, s, reduce="add").sum().backward(),
        [X, I(1, shape=(1, 1)), randn(1, 1)],
    ),
    ("index_select_2d_index", lambda t, x, i: x.index_select(0, i), [X, I(1, shape=(1, 1))]),
    ("index_select_float", lambda t, x, i: x.index_select(0, i), [X, np.array([1.0])]),
    ("index_select_neg", lambda t, x, i: x.index_select(0, i), [X, I(-1)]),
    ("index_select_oob", lambda t, x, i: x.index_select(0, i), [X, I(3)]),
    ("index_select_oob_dim1", lambda t, x, i: x.index_select(1, i), [X, I(4)]),
    ("index_add_dtype", lambda t, x, i, s: x.index_add(0, i, s.double()), [X, I(1), randn(1, 4)]),
    ("index_add_count", lambda t, x, i, s: x.index_add(0, i, s), [X, I(1), randn(2, 4)]),
    ("index_add_shape", lambda t, x, i, s: x.index_add(0, i, s), [X, I(1), randn(1, 3)]),
    ("index_add_oob", lambda t, x, i, s: x.index_add(0, i, s), [X, I(-1), randn(1, 4)]),
    ("index_add_2d_index", lambda t, x, i, s: x.index_add(0, i, s), [X, I(1, shape=(1, 1)), randn(1, 4)]),
    ("index_copy_int32", lambda t, x, i, s: x.index_copy(0, i.int(), s), [X, I(1), randn(1, 4)]),
    ("index_copy_neg", lambda t, x, i, s: x.index_copy(0, i, s), [X, I(-1), randn(1, 4)]),
    ("index_copy_count", lambda t, x, i, s: x.index_copy(0, i, s), [X, I(1), randn(2, 4)]),
    ("index_fill_int32", lambda t, x, i: x.index_fill(0, i.int(), 1.0), [X, I(1)]),
    ("index_fill_oob", lambda t, x, i: x.index_fill(0, i, 1.0), [X, I(3)]),
    ("index_fill_1d_value", lambda t, x, i, v: x.index_fill(0, i, v), [X, I(1), randn(1)]),
    ("index_put_dtype", lambda t, x, i, v: x.index_put((i,), v.double()), [X, I(1), randn(4)]),
    ("index_put_not_tensor", lambda t, x, i: x.index_put_((i,), 2.0), [X, I(1)]),
    ("take_oob", lambda t, x, i: x.take(i), [X, I(12)]),
    ("take_oob_neg", lambda t, x, i: x.take(i), [X, I(-13)]),
    ("take_int32", lambda t, x, i: x.take(i.int()), [X, I(1)]),
    ("put_count", lambda t, x, i, s: x.clone().put_(i, s), [X, I(1), randn(2)]),
    ("put_dtype", lambda t, x, i, s: x.clone().put_(i, s.double()), [X, I(1), randn(1)]),
    ("put_oob", lambda t, x, i, s: x.clone().put_(i, s), [X, I(12), randn(1)]),
    ("masked_fill_long_mask", lambda t, x, m: x.masked_fill(m, 1.0), [X, I(1, 0, 1, 0)]),
    ("masked_fill_mask_shape", lambda t, x, m: x.masked_fill(m, 1.0), [X, B(True, False, True)]),
    (
        "masked_fill_1d_value",
        lambda t, x, m, v: x.masked_fill(m, v),
        [X, B(True, False, True, False), randn(1)],
    ),
    ("masked_fill__grows", lambda t, x, m: x.clone().masked_fill_(m, 1.0), [X, np.ones((2, 3, 4), bool)]),
    ("masked_select_long", lambda t, x, m: x.masked_select(m), [X, I(1, 0, 1, 0)]),
    (
        "masked_scatter_short_source",
        lambda t, x, m, s: x.masked_scatter(m, s),
        [X, B(True, False, True, False), randn(2)],
    ),
    (
        "masked_scatter_dtype",
        lambda t, x, m, s: x.masked_scatter(m, s.double()),
        [X, B(True, False, True, False), randn(8)],
    ),
    ("where_long_cond", lambda t, c, x: t.where(c, x, 0.0), [I(1, 0), randn(2)]),
    ("where_shapes", lambda t, c, x, y: t.where(c, x, y), [B(True, False), randn(3), randn(2)]),
    ("take_along_dim_ndim", lambda t, x, i: t.take_along_dim(x, i, 1), [X, I(0)]),
    ("take_along_dim_float", lambda t, x, i: t.take_along_dim(x, i, 1), [X, np.array([[1.0]])]),
    ("searchsorted_0d", lambda t, s, v: t.searchsorted(s, v), [np.array(3), np.array([3])]),
    (
        "searchsorted_nd_mismatch",
        lambda t, s, v: t.searchsorted(s, v),
        [np.array([[1, 3, 5]]), np.array([3, 4])],
    ),
    (
        "searchsorted_side_conflict",
        lambda t, s, v: t.searchsorted(s, v, side="left", right=True),
        [np.array([1, 3]), np.array([3])],
    ),
    ("bucketize_2d", lambda t, x, b: t.bucketize(x, b), [np.array([3]), np.array([[1, 3, 5]])]),
]


@pytest.mark.parametrize("fn,inputs", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_errors(fn, inputs):
    check_raises(fn, *inputs)


def test_error_messages_name_the_problem():
    x = mytorch.zeros(3, 4)
    with pytest.raises(
        RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"
    ):
        x.gather(0, mytorch.tensor([1]))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.gather(0, mytorch.tensor([[5]]))
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 5\] to be no larger than self \[3, 4\]"):
        x.scatter(0, mytorch.tensor([[1] * 5]), mytorch.ones(1, 5))


# ------------------------------------------------------------------------------- double backward
def test_gather_double_backward_through_scatter_add():
    for lib in (mytorch, pytest.importorskip("torch")):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        i = lib.tensor([[1, 1], [0, 1]])
        y = (x.gather(1, i) ** 2).sum() if hasattr(lib.Tensor, "__pow__") else None
        if y is None:
            pytest.skip("pow not available yet")
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
        if lib is mytorch:
            mine = (g.detach().tolist(), x.grad.tolist())
        else:
            assert mine == (g.detach().tolist(), x.grad.tolist())


# ------------------------------------------------------------------------------- property tests
@st.composite
def basic_indexing(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    entries = []
    dims = list(shape)
    used_ellipsis = False
    while True:
        options = (
            ["stop", "none"] + (["int", "slice"] if dims else []) + ([] if used_ellipsis else ["ellipsis"])
        )
        kind = draw(st.sampled_from(options))
        if kind == "stop" or len(entries) > 6:
            break
        if kind == "none":
            entries.append(None)
        elif kind == "ellipsis":
            used_ellipsis = True
            entries.append(Ellipsis)
        elif kind == "int":
            n = dims.pop(0)
            if n == 0:
                entries.append(slice(None))
                continue
            entries.append(draw(st.integers(-n, n - 1)))
        else:
            dims.pop(0)
            entries.append(
                slice(
                    draw(st.none() | st.integers(-6, 6)),
                    draw(st.none() | st.integers(-6, 6)),
                    draw(st.none() | st.integers(1, 3)),
                )
            )
    return shape, tuple(entries)


@settings(max_examples=150, deadline=None)
@given(basic_indexing())
def test_basic_indexing_matches_torch_values_shapes_strides(case):
    import torch

    shape, key = case
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    try:
        t = torch.from_numpy(base.copy())[key]
    except IndexError:
        with pytest.raises(IndexError):
            mytorch.from_numpy(base.copy())[key]
        return
    m = mytorch.from_numpy(base.copy())[key]
    assert tuple(m.shape) == tuple(t.shape)
    assert m.stride() == t.stride(), (key, m.stride(), t.stride())
    np.testing.assert_array_equal(m.numpy(), t.numpy())
    if m.numel():
        assert m._base is not None  # a view, always


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_gather_scatter_round_trip(data):
    """scatter the gathered values back to where they came from: the touched entries reappear."""
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd)))
    dim = data.draw(st.integers(-nd, nd - 1))
    ishape = tuple(
        data.draw(st.integers(1, n)) if d != dim % nd else data.draw(st.integers(1, 5))
        for d, n in enumerate(shape)
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(0, shape[dim], ishape)
    check(Case("gather", lambda t, a, i: a.gather(dim, i), [x, idx]))
    check(
        Case(
            "scatter_add",
            lambda t, a, i, s: a.scatter_add(dim, i, s),
            [x, idx, rng.standard_normal(ishape).astype(np.float32)],
        )
    )
    mx, mi = mytorch.from_numpy(x), mytorch.from_numpy(idx)
    back = mytorch.zeros(*shape).scatter_(dim, mi, mx.gather(dim, mi))
    touched = mytorch.zeros(*shape).scatter_(dim, mi, 1.0).numpy().astype(bool)
    np.testing.assert_array_equal(back.numpy()[touched], x[touched])


@st.composite
def mixed_indexing(draw):
    """A random key mixing ints, slices, None, index arrays and 1-D masks (arrays as inputs)."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    template, arrays = [], []
    for n in shape[: draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            template.append(None)
        kind = draw(st.sampled_from(["int", "slice", "index", "mask"]))
        if kind == "int":
            template.append(int(rng.integers(-n, n)))
        elif kind == "slice":
            template.append(slice(int(rng.integers(0, n)), None, int(rng.integers(1, 3))))
        else:
            arrays.append(
                rng.integers(-n, n, draw(st.sampled_from([(2,), (1,), (3,)])))
                if kind == "index"
                else rng.random(n) < 0.5
            )
            template.append("array")
    return shape, template, arrays


@settings(max_examples=80, deadline=None)
@given(mixed_indexing())
def test_mixed_indexing_matches_torch_with_grad(case):
    import torch

    shape, template, arrays = case

    def fn(t, x, *arrs):
        it = iter(arrs)
        return x[tuple(next(it) if k == "array" else k for k in template)]

    x = randn(*shape)
    try:
        fn(torch, torch.from_numpy(x), *[torch.from_numpy(a) for a in arrays])
    except IndexError:  # e.g. index arrays that do not broadcast: mytorch must refuse too
        check_raises(fn, x, *arrays)
        return
    check(Case("mixed", fn, [x, *arrays]))


@pytest.mark.parametrize("key", [(Ellipsis, slice(None, None, 2)), (slice(None, 1), Ellipsis, slice(1, None, 2)),
                                 (Ellipsis, None, slice(None, None, 3))], ids=str)
def test_stepped_slice_of_an_overlapping_view_backward(key):
    """A stepped slice of an ``unfold`` view (overlapping windows, as max-pool's windows with a
    dilation are): its backward writes into a fresh array whose strides are not the view's."""
    check(Case("unfold-slice", lambda t, x: x.unfold(0, 3, 1)[key], [randn(6, 7)]))
    check(Case("unfold2-slice", lambda t, x: x.unfold(0, 3, 1).unfold(1, 3, 2)[key], [randn(6, 7)]))
