"""Reductions and ordering against the torch oracle: values, dtypes, shapes, gradients, errors."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Case, check, check_raises, randn

import mytorch

X = randn(3, 4)
X3 = randn(2, 3, 4)
INTS = np.array([[3, -1, 4], [1, 5, -9]], dtype=np.int64)
BOOLS = np.array([[True, False, True], [False, False, True]])
U8 = np.array([1, 0, 3], dtype=np.uint8)
TIES = np.array([[1., 3., 3.], [2., 2., 0.]], dtype=np.float32)
WITH_NAN = np.array([[1., np.nan, 2.], [0., -1., 5.]], dtype=np.float32)
WITH_ZERO = np.array([[1.5, 0., 2.], [0., -1., 0.], [3., 2., -0.5]], dtype=np.float32)
EMPTY = np.zeros((0, 3), dtype=np.float32)
SCALAR = np.array(2.5, dtype=np.float32)
DISTINCT = np.random.default_rng(7).permutation(24).reshape(2, 3, 4).astype(np.float32) - 11.5

DIMS = [None, 0, -1, (0, 2), [1, -1]]
AMAX_DIMS = [(), 0, -1, (0, 2), [1, -1]]


def _dim_cases(name, fn, dims=DIMS, data=X3, **kw):
    """One case per dim (and keepdim) for ``fn(lib, x, dim, keepdim)``."""
    out = []
    for dim in dims:
        for keepdim in (False, True):
            out.append(Case(f"{name}-dim{dim}-keep{keepdim}",
                            lambda t, x, dim=dim, keepdim=keepdim: fn(t, x, dim, keepdim),
                            [data], **kw))
    return out


def _none_dim(name, fn, data=X3, **kw):
    return [Case(f"{name}-all", lambda t, x: fn(t, x), [data], **kw)]


CASES = [
    # ---------------------------------------------------------------- sum / mean
    *_none_dim("sum", lambda t, x: t.sum(x)),
    *_dim_cases("sum", lambda t, x, d, k: t.sum(x, d, keepdim=k)),
    *_dim_cases("Tensor.sum", lambda t, x, d, k: x.sum(dim=d, keepdim=k)),
    Case("sum-int-to-long", lambda t, x: t.sum(x, 1), [INTS]),
    Case("sum-bool-to-long", lambda t, x: t.sum(x), [BOOLS]),
    Case("sum-uint8-to-long", lambda t, x: x.sum(), [U8]),
    Case("sum-dtype-double", lambda t, x: t.sum(x, 0, dtype=t.float64), [X]),
    Case("sum-dtype-int32", lambda t, x: t.sum(x, dtype=t.int32), [INTS]),
    Case("sum-empty-tuple-dim", lambda t, x: t.sum(x, ()), [X]),
    Case("sum-empty", lambda t, x: (t.sum(x), t.sum(x, 0), t.sum(x, 1)), [EMPTY]),
    Case("sum-scalar-dim0", lambda t, x: t.sum(x, 0), [SCALAR]),
    Case("nansum", lambda t, x: (t.nansum(x), x.nansum(1, keepdim=True)), [WITH_NAN]),
    Case("nansum-int", lambda t, x: t.nansum(x, 0), [INTS]),
    *_none_dim("mean", lambda t, x: t.mean(x)),
    *_dim_cases("mean", lambda t, x, d, k: t.mean(x, d, keepdim=k)),
    Case("mean-int-dtype", lambda t, x: t.mean(x, 1, dtype=t.float32), [INTS]),
    Case("mean-dtype-double", lambda t, x: x.mean(dtype=t.float64), [X]),
    Case("mean-empty-is-nan", lambda t, x: (t.mean(x), t.mean(x, 0)), [EMPTY]),
    Case("mean-double", lambda t, x: t.mean(x, 0), [X.astype(np.float64)]),
    Case("nanmean", lambda t, x: (t.nanmean(x), x.nanmean(1)), [WITH_NAN], grad=False),
    # ---------------------------------------------------------------- var / std
    *_none_dim("var", lambda t, x: t.var(x)),
    *_dim_cases("var", lambda t, x, d, k: t.var(x, d, keepdim=k)),
    *_dim_cases("std", lambda t, x, d, k: t.std(x, d, keepdim=k)),
    Case("var-legacy-unbiased-false", lambda t, x: t.var(x, 1, False, True), [X]),
    Case("var-legacy-bool-only", lambda t, x: (t.var(x, False), x.std(True)), [X]),
    Case("var-correction0", lambda t, x: t.var(x, dim=1, correction=0), [X]),
    Case("std-correction2", lambda t, x: x.std(0, correction=2), [X]),
    Case("std-unbiased-kw", lambda t, x: x.std(dim=(0, 1), unbiased=False), [X3]),
    Case("var-single-element-nan", lambda t, x: t.var(x, 0), [randn(1, 3)], grad=False),
    Case("var_mean", lambda t, x: t.var_mean(x, 1), [X]),
    Case("std_mean", lambda t, x: t.std_mean(x, (0, 2), keepdim=True), [X3]),
    Case("std_mean-all", lambda t, x: t.std_mean(x, correction=0), [X]),
    Case("std-constant-grad-zero", lambda t, x: t.std(x, 1), [np.ones((2, 3), np.float32)]),
    # ---------------------------------------------------------------- max / min
    Case("max-all", lambda t, x: t.max(x), [X3]),
    Case("min-all-method", lambda t, x: x.min(), [X3]),
    Case("max-all-ties-split-grad", lambda t, x: t.max(x), [TIES]),
    Case("min-all-ties", lambda t, x: t.min(x), [np.array([0., 1., 0.], np.float32)]),
    Case("max-dim", lambda t, x: t.max(x, 1), [X3]),
    Case("max-dim-keepdim", lambda t, x: t.max(x, -1, keepdim=True), [X3]),
    Case("max-dim-kw", lambda t, x: x.max(dim=0), [X3]),
    Case("min-dim", lambda t, x: t.min(x, 2), [X3]),
    Case("max-dim-ties-first-index", lambda t, x: t.max(x, 1), [TIES]),
    Case("max-dim-fields", lambda t, x: (t.max(x, 1).values, t.max(x, 1).indices), [X]),
    Case("max-nan-propagates", lambda t, x: (t.max(x), t.max(x, 1), t.min(x, 1)), [WITH_NAN],
         grad=False),
    Case("max-int", lambda t, x: (t.max(x), t.max(x, 0), t.min(x, 1)), [INTS]),
    Case("max-bool", lambda t, x: (t.max(x), t.max(x, 0)), [BOOLS]),
    Case("max-scalar-dim", lambda t, x: t.max(x, 0), [SCALAR]),
    Case("max-binary", lambda t, x, y: t.max(x, y), [randn(3, 4, seed=1), randn(4, seed=2)]),
    Case("min-binary", lambda t, x, y: t.min(x, y), [randn(3, 4, seed=1), randn(4, seed=2)]),
    *_dim_cases("amax", lambda t, x, d, k: t.amax(x, d, keepdim=k), dims=AMAX_DIMS),
    *_dim_cases("amin", lambda t, x, d, k: x.amin(d, keepdim=k), dims=AMAX_DIMS),
    Case("amax-default-all", lambda t, x: t.amax(x), [X3]),
    Case("amax-ties", lambda t, x: (t.amax(x, 1), t.amin(x, 0)), [TIES]),
    Case("amax-empty-other-dim", lambda t, x: t.amax(x, 1), [EMPTY]),
    Case("aminmax", lambda t, x: tuple(t.aminmax(x)), [X], grad=False),
    Case("aminmax-dim", lambda t, x: tuple(t.aminmax(x, dim=1, keepdim=True)), [X], grad=False),
    Case("argmax-flat", lambda t, x: (t.argmax(x), t.argmin(x)), [X3]),
    Case("argmax-flat-keepdim", lambda t, x: t.argmax(x, keepdim=True), [X3]),
    Case("argmax-dim", lambda t, x: (t.argmax(x, 1), x.argmin(-1, keepdim=True)), [X3]),
    Case("argmax-ties-first", lambda t, x: (t.argmax(x, 1), t.argmin(x, 0), t.argmax(x)), [TIES]),
    Case("argmax-nan", lambda t, x: (t.argmax(x, 1), t.argmax(x)), [WITH_NAN]),
    Case("argmax-int", lambda t, x: t.argmax(x, 0), [INTS]),
    # ---------------------------------------------------------------- prod / cumulative
    Case("prod-all", lambda t, x: t.prod(x), [X]),
    Case("prod-dim", lambda t, x: (t.prod(x, 1), x.prod(0, keepdim=True)), [X3]),
    Case("prod-one-zero", lambda t, x: t.prod(x, 1), [WITH_ZERO]),
    Case("prod-all-with-zeros", lambda t, x: t.prod(x), [WITH_ZERO]),
    Case("prod-single-zero-all", lambda t, x: t.prod(x), [np.array([2., 0., 3.], np.float32)]),
    Case("prod-int-dtype", lambda t, x: (t.prod(x), t.prod(x, 1)), [INTS]),
    Case("prod-bool", lambda t, x: t.prod(x, 0), [BOOLS]),
    Case("prod-dtype", lambda t, x: t.prod(x, 1, dtype=t.float64), [X]),
    Case("cumsum", lambda t, x: (t.cumsum(x, 0), x.cumsum(-1), t.cumsum(x, dim=1)), [X3]),
    Case("cumsum-int", lambda t, x: (t.cumsum(x, 1), t.cumsum(x, 0, dtype=t.float32)), [INTS]),
    Case("cumsum-bool", lambda t, x: t.cumsum(x, 1), [BOOLS]),
    Case("cumsum-dtype-grad", lambda t, x: t.cumsum(x, 1, dtype=t.float64), [X]),
    Case("cumsum-scalar", lambda t, x: t.cumsum(x, 0), [SCALAR]),
    Case("cumprod", lambda t, x: (t.cumprod(x, 0), x.cumprod(-1)), [X3]),
    Case("cumprod-zeros", lambda t, x: (t.cumprod(x, 1), t.cumprod(x, 0)), [WITH_ZERO]),
    Case("cumprod-int", lambda t, x: t.cumprod(x, 1), [INTS]),
    # ---------------------------------------------------------------- logsumexp / norm
    Case("logsumexp", lambda t, x: (t.logsumexp(x, 1), x.logsumexp((0, 2), keepdim=True)), [X3]),
    Case("logsumexp-large-stable", lambda t, x: t.logsumexp(x * 1000, 1), [X]),
    Case("logsumexp-inf", lambda t, x: t.logsumexp(x, 1),
         [np.array([[-np.inf, -np.inf], [np.inf, 1.]], np.float32)], grad=False),
    Case("logsumexp-int", lambda t, x: t.logsumexp(x, 0), [INTS]),
    Case("logsumexp-empty", lambda t, x: t.logsumexp(x, 0), [EMPTY], grad=False),
    Case("norm-fro", lambda t, x: (t.norm(x), x.norm()), [X3]),
    Case("norm-dim", lambda t, x: (t.norm(x, dim=1), t.norm(x, 2, (0, 2), keepdim=True)), [X3]),
    Case("norm-fro-dim", lambda t, x: t.norm(x, "fro", 1), [X]),
    Case("norm-p1", lambda t, x: (t.norm(x, 1), x.norm(p=1, dim=0)), [X]),
    Case("norm-inf", lambda t, x: (t.norm(x, float("inf")), t.norm(x, float("-inf"), 1)), [X]),
    Case("norm-inf-ties", lambda t, x: t.norm(x, float("inf"), 1),
         [np.array([[1., -3., 3.], [2., 2., 0.]], np.float32)]),
    Case("norm-p0", lambda t, x: (t.norm(x, 0), t.norm(x, 0, dim=1)), [WITH_ZERO]),
    Case("norm-p3", lambda t, x: (t.norm(x, 3), t.norm(x, 3, 1)), [X]),
    Case("norm-p0.5", lambda t, x: t.norm(x, 0.5, 0), [X], rtol=1e-5),
    Case("norm-zero-subgradient", lambda t, x: (t.norm(x), t.norm(x, 3, 1)),
         [np.zeros((2, 3), np.float32)]),
    Case("norm-dtype", lambda t, x: t.norm(x, dtype=t.float64), [X]),
    # ---------------------------------------------------------------- median / kth / topk / sort
    Case("median-all-even-lower", lambda t, x: t.median(x), [X]),
    Case("median-all-ties-split-grad", lambda t, x: t.median(x), [TIES]),
    Case("median-dim", lambda t, x: (t.median(x, 1), x.median(-1, keepdim=True)), [DISTINCT]),
    Case("median-nan", lambda t, x: (t.median(x), t.median(x, 1)), [WITH_NAN], grad=False),
    Case("median-int", lambda t, x: (t.median(x), t.median(x, 1)), [INTS]),
    Case("nanmedian", lambda t, x: (t.nanmedian(x), x.nanmedian(1), t.nanmedian(x, -1, keepdim=True)),
         [DISTINCT]),
    Case("nanmedian-ties-split-grad", lambda t, x: t.nanmedian(x), [TIES]),
    Case("nanmedian-skips-nan", lambda t, x: (t.nanmedian(x), t.nanmedian(x, 0)), [WITH_NAN], grad=False),
    Case("nanmedian-int", lambda t, x: (t.nanmedian(x), t.nanmedian(x, 1)), [INTS]),
    # quantile: torch's composition (sort, gather, lerp), so values, gradients and nodes are torch's
    *[Case(f"quantile-{mode}", lambda t, x, mode=mode: (
        t.quantile(x, 0.3, interpolation=mode), x.quantile(t.tensor([0.0, 0.5, 0.9]), dim=1,
                                                          interpolation=mode),
        t.quantile(x, 0.75, dim=0, keepdim=True, interpolation=mode)), [DISTINCT])
      for mode in ("linear", "lower", "higher", "midpoint", "nearest")],
    Case("quantile-nan-propagates", lambda t, x: (t.quantile(x, 0.5), t.quantile(x, 0.5, dim=1)),
         [WITH_NAN], grad=False),
    Case("nanquantile", lambda t, x: (t.nanquantile(x, 0.5), x.nanquantile(t.tensor([0.1, 0.9]), dim=0),
                                      t.nanquantile(x, 0.2, dim=1, keepdim=True)),
         [WITH_NAN], grad=False),
    Case("nanquantile-grad", lambda t, x: t.nanquantile(x, t.tensor([0.25, 0.6]), dim=1), [DISTINCT]),
    Case("quantile-0d", lambda t, x: (t.quantile(x, 0.5), t.quantile(x, t.tensor([0.1, 0.5]), dim=0,
                                                                      keepdim=True)),
         [np.array(3.0, np.float32)]),
    Case("kthvalue", lambda t, x: (t.kthvalue(x, 2), x.kthvalue(1, 0, keepdim=True)), [DISTINCT]),
    Case("topk", lambda t, x: (t.topk(x, 2), x.topk(1, dim=0, largest=False)), [DISTINCT]),
    Case("topk-k0", lambda t, x: t.topk(x, 0), [DISTINCT], grad=False),
    Case("topk-int", lambda t, x: t.topk(x, 2), [INTS]),
    Case("sort", lambda t, x: (t.sort(x), t.sort(x, 0, descending=True), x.sort(dim=1)),
         [DISTINCT]),
    Case("sort-stable-ties", lambda t, x: (t.sort(x, stable=True),
                                           t.sort(x, descending=True, stable=True)),
         [np.array([2., 1., 2., 1., 2., 0., 2.], np.float32)]),
    Case("sort-nan-is-largest", lambda t, x: (t.sort(x, 1), t.sort(x, 1, descending=True)),
         [np.array([[3., np.nan, 1.], [np.inf, -np.inf, 0.]], np.float32)], grad=False),
    Case("sort-bool", lambda t, x: t.sort(x, dim=1, stable=True), [BOOLS]),
    Case("sort-scalar", lambda t, x: t.sort(x), [SCALAR]),
    Case("argsort", lambda t, x: (t.argsort(x), x.argsort(0, descending=True)), [DISTINCT]),
    Case("argsort-stable", lambda t, x: t.argsort(x, stable=True),
         [np.array([2, 1, 2, 1, 2], np.int64)]),
    Case("msort", lambda t, x: t.msort(x), [DISTINCT]),
    # ---------------------------------------------------------------- unique / counting / logic
    Case("unique", lambda t, x: t.unique(x), [np.array([3, 1, 3, 2, 1], np.int64)]),
    Case("unique-inverse-counts", lambda t, x: t.unique(x, return_inverse=True,
                                                        return_counts=True), [INTS % 3]),
    Case("unique-counts-only", lambda t, x: x.unique(return_counts=True), [TIES], grad=False),
    Case("unique-dim", lambda t, x: t.unique(x, dim=0, return_inverse=True, return_counts=True),
         [np.array([[1, 2], [0, 5], [1, 2]], np.int64)]),
    Case("unique-dim1", lambda t, x: t.unique(x, dim=1), [np.array([[1, 0, 1], [2, 5, 2]])]),
    Case("unique-float-bool", lambda t, x, y: (t.unique(x), t.unique(y)), [TIES, BOOLS],
         grad=False),
    Case("unique_consecutive", lambda t, x: t.unique_consecutive(
        x, return_inverse=True, return_counts=True),
        [np.array([1, 1, 2, 2, 3, 1, 1, 2], np.int64)]),
    Case("unique_consecutive-2d", lambda t, x: (t.unique_consecutive(x), x.unique_consecutive(
        dim=0, return_counts=True)), [np.array([[1, 2], [1, 2], [3, 4], [1, 2]], np.int64)]),
    Case("count_nonzero", lambda t, x: (t.count_nonzero(x), t.count_nonzero(x, 0),
                                        x.count_nonzero((0, 1))), [WITH_ZERO]),
    Case("count_nonzero-bool", lambda t, x: t.count_nonzero(x, -1), [BOOLS]),
    Case("any-all", lambda t, x: (t.any(x), t.all(x), t.any(x, 1), x.all(0, keepdim=True),
                                  t.any(x, (0, 1))), [BOOLS]),
    Case("any-all-float", lambda t, x: (t.any(x), t.all(x, 1)), [WITH_ZERO], grad=False),
    Case("any-all-uint8", lambda t, x: (t.any(x), t.all(x)), [U8]),
    Case("all-empty-true", lambda t, x: (t.all(x), t.any(x), t.all(x, 1)), [EMPTY], grad=False),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_matches_torch(case):
    check(case)


ERRORS = [
    ("quantile-empty", lambda t, x: t.quantile(x[:0], 0.5), [X]),
    ("quantile-q-number-range", lambda t, x: t.quantile(x, 1.5), [X]),
    ("quantile-q-tensor-range", lambda t, x: t.quantile(x, t.tensor([0.5, 2.0])), [X]),
    ("quantile-q-2d", lambda t, x: t.quantile(x, t.tensor([[0.5]])), [X]),
    ("quantile-int-input", lambda t, x: t.quantile(x, 0.5), [INTS]),
    ("quantile-q-dtype", lambda t, x: t.quantile(x, t.tensor([0.5], dtype=t.float64)), [X]),
    ("quantile-interpolation", lambda t, x: t.quantile(x, 0.5, interpolation="foo"), [X]),
    ("quantile-bad-dim", lambda t, x: t.quantile(x, 0.5, dim=2), [X]),
    ("nanmedian-empty-dim", lambda t, x: t.nanmedian(x[:0], 0), [X]),
    ("sum-bad-dim", lambda t, x: t.sum(x, 2), [X]),
    ("sum-bad-neg-dim", lambda t, x: x.sum(-3), [X]),
    ("sum-repeated-dim", lambda t, x: x.sum((0, 0)), [X]),
    ("mean-int", lambda t, x: t.mean(x), [INTS]),
    ("mean-int-dtype", lambda t, x: t.mean(x, dtype=t.int32), [INTS]),
    ("nanmean-int", lambda t, x: t.nanmean(x), [INTS]),
    ("var-int", lambda t, x: t.var(x), [INTS]),
    ("std-int", lambda t, x: t.std(x, 0), [INTS]),
    ("max-empty", lambda t, x: t.max(x), [EMPTY]),
    ("max-dim-empty", lambda t, x: t.max(x, 0), [EMPTY]),
    ("amax-empty", lambda t, x: t.amax(x), [EMPTY]),
    ("argmax-empty", lambda t, x: t.argmax(x), [EMPTY]),
    ("argmax-bool", lambda t, x: t.argmax(x), [BOOLS]),
    ("max-bad-dim", lambda t, x: t.max(x, 2), [X]),
    ("prod-tuple-dim", lambda t, x: t.prod(x, (0,)), [X]),
    ("kthvalue-k", lambda t, x: t.kthvalue(x, 5), [X]),
    ("topk-k", lambda t, x: t.topk(x, 5), [X]),
    ("sort-bad-dim", lambda t, x: t.sort(x, 3), [X]),
    ("norm-int", lambda t, x: t.norm(x), [INTS]),
    ("cumsum-bad-dim", lambda t, x: t.cumsum(x, 2), [X]),
]


@pytest.mark.parametrize("name,fn,inputs", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn, inputs):
    check_raises(fn, *inputs)


def test_error_messages_name_the_problem():
    e = check_raises(lambda t, x: t.sum(x, 2), X)
    assert str(e) == "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    e = check_raises(lambda t, x: t.mean(x), INTS)
    assert str(e) == ("mean(): could not infer output dtype. Input dtype must be either a floating "
                      "point or complex dtype. Got: Long")


def test_named_tuples_print_and_unpack_like_torch():
    import torch
    x = np.array([[1., 5.], [4., 2.]], np.float32)
    mine, ref = mytorch.max(mytorch.tensor(x), 1), torch.max(torch.tensor(x), 1)
    values, indices = mine
    assert values is mine.values and indices is mine[1]
    assert type(mine).__name__ == "max" and len(mine) == 2 and mine.n_fields == 2
    assert repr(mine).startswith("torch.return_types.max(\nvalues=tensor(")
    assert repr(mine).split("\n")[2].startswith("indices=tensor(")
    assert repr(mine).endswith("))") and repr(ref).endswith("))")
    assert repr(mytorch.sort(mytorch.tensor(x))).startswith("torch.return_types.sort(\n")
    assert "min=" in repr(mytorch.aminmax(mytorch.tensor(x)))


def test_grad_fn_names():
    x = mytorch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x.sum(0).grad_fn.name() == "SumBackward1"
    assert x.max(1).values.grad_fn.name() == "MaxBackward0"
    assert x.max().grad_fn.name() == "MaxBackward1"
    assert x.max(1).indices.grad_fn is None and not x.max(1).indices.requires_grad


SECOND_ORDER = {
    "var": lambda t, x: t.var(x, 1),
    "std": lambda t, x: t.std(x, 0),
    "logsumexp": lambda t, x: t.logsumexp(x, 1),
    "norm2": lambda t, x: t.norm(x, dim=1),
    "norm3": lambda t, x: t.norm(x, 3, 1),
    "prod": lambda t, x: t.prod(x, 1),
    "cumprod": lambda t, x: t.cumprod(x, 1),
    "cumsum": lambda t, x: t.cumsum(x, 1) * x,
    "sort": lambda t, x: t.sort(x, 1).values * x,
    "max-dim": lambda t, x: t.max(x, 1).values * t.max(x, 1).values,
    "var_mean": lambda t, x: t.var_mean(x, 1)[0] * t.var_mean(x, 1)[1],
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_matches_torch(name):
    """Backward closures use mytorch ops, so create_graph=True can differentiate them again."""
    import torch
    data = randn(3, 4, dtype=np.float64) + 0.1
    outs = []
    for lib in (mytorch, torch):
        x = lib.tensor(data, requires_grad=True)
        (g,) = lib.autograd.grad(SECOND_ORDER[name](lib, x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        outs.append(np.asarray(gg.detach().numpy()))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-9)


def test_results_stay_on_the_simulated_gpu():
    """Every result (and gradient) is computed on the tensor's device, never pulled to the host."""
    from mytorch._device import simulate_cuda
    simulate_cuda(True)
    try:
        x = mytorch.tensor(WITH_ZERO, device="cuda", requires_grad=True)
        outs = [x.sum(1), x.mean(), x.var(0), x.amax(1), x.max(1).values, x.sort(1).values,
                x.prod(1), x.cumprod(1), x.logsumexp(1), x.norm(dim=0), x.median()]
        loss = outs[0].sum()
        for o in outs[1:]:
            loss = loss + o.sum()
        loss.backward()
        others = [x.argmax(1), x.unique(), x.count_nonzero(), x.any(), x.topk(2).indices,
                  x.unique_consecutive(), x.nansum()]
        for y in outs + others + [x.grad]:
            assert y.device == x.device and type(y._data) is not np.ndarray
    finally:
        simulate_cuda(False)


def test_unique_does_not_track_grad_and_sort_values_do():
    x = mytorch.tensor([3., 1., 2.], requires_grad=True)
    assert x.sort().values.requires_grad
    assert not x.sort().indices.requires_grad


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_property_sum_mean_amax_match_torch(shape, data):
    ndim = len(shape)
    dims = data.draw(st.one_of(
        st.none(), st.integers(-ndim, ndim - 1),
        st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(tuple)))
    keepdim = data.draw(st.booleans())
    arr = randn(*shape, seed=data.draw(st.integers(0, 1000)))

    def reduce(t, x):
        if dims is None:
            return t.sum(x), t.mean(x), t.amax(x)
        return (t.sum(x, dims, keepdim=keepdim), t.mean(x, dims, keepdim=keepdim),
                t.amax(x, dims, keepdim=keepdim))

    check(Case("property", reduce, [arr]))


@pytest.mark.parametrize("values, dim, keepdim", [
    ([[1, 2, 2, 3, 3], [5, 4, 4, 5, 1], [7, 7, 7, 7, 7]], 1, False),   # ties: the smallest value
    ([[1, 2, 2, 3, 3], [5, 4, 4, 5, 1], [7, 7, 7, 7, 7]], 0, True),
    ([3.0, 1, 3, 1, 2], -1, False),                                    # the last occurrence
    ([[1.0, float("nan"), float("nan")]], 1, False),                   # NaN never repeats
    (5.0, 0, False)])
def test_mode_matches_torch(values, dim, keepdim):
    import torch
    got = [lib.mode(lib.tensor(values), dim, keepdim) for lib in (mytorch, torch)]
    assert got[0].values.tolist() == got[1].values.tolist() or np.isnan(got[1].values).all()
    assert got[0].indices.tolist() == got[1].indices.tolist()
    assert type(got[0]).__name__ == type(got[1]).__name__ == "mode"
def test_quantile_graph_is_torch_s():
    """quantile ends as torch's does: an in-place squeeze after lerp (linear) or gather (lower)."""
    import torch
    for lib in (mytorch, torch):
        x = lib.tensor([3.0, 1.0, 2.0, 5.0], requires_grad=True)
        names = []
        for q, mode in ((0.3, "linear"), (0.3, "lower"), (lib.tensor([0.2, 0.9]), "linear")):
            node = lib.quantile(x, q, interpolation=mode).grad_fn
            nxt = node.next_functions[0][0]
            names.append([n.name() if lib is mytorch else type(n).__name__ for n in (node, nxt)])
        assert names == [["SqueezeBackward4", "LerpBackward1"], ["SqueezeBackward4", "GatherBackward0"],
                         ["SqueezeBackward4", "TransposeBackward1"]]
