"""Loss functions and loss modules (mytorch/nn/_functional/loss.py, nn/modules/loss.py) vs torch.

Each case runs the same snippet on both libraries and compares the loss and the gradients of every
floating input (the prediction *and* a floating target). Class weights, ``pos_weight`` and class
indices are built inside the snippet: torch refuses gradients for them.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Case, as_numpy, check, randn

import mytorch
from mytorch.nn._functional import activation as my_activation
from mytorch.nn._functional import loss as my_loss
from mytorch.nn.modules import loss as my_loss_modules

REDUCTIONS = ["none", "mean", "sum"]


def F(lib):
    """The functional namespace of ``lib`` (mytorch's loss module until nn.functional is wired)."""
    return torch.nn.functional if lib is torch else my_loss


def nn(lib):
    return torch.nn if lib is torch else my_loss_modules


def const(lib, arr):
    """A tensor that does not require grad (weights, class indices)."""
    return lib.from_numpy(np.array(arr).copy())


def log_softmax(lib, x, dim):
    return torch.log_softmax(x, dim) if lib is torch else my_activation.log_softmax(x, dim)


def classes(shape, n_classes, seed=0, ignore=None):
    """Random class indices; a few set to ``ignore`` when given."""
    t = np.random.default_rng(seed).integers(0, n_classes, size=shape).astype(np.int64)
    if ignore is not None and t.size:
        t.reshape(-1)[::3] = ignore
    return t


def probs(*shape, seed=1, dim=1):
    e = np.exp(randn(*shape, seed=seed).astype(np.float64))
    return (e / e.sum(axis=dim if len(shape) > 1 else 0, keepdims=True)).astype(np.float32)


def unit(*shape, seed=2):
    """Values strictly inside (0, 1): probabilities for BCE."""
    return (1 / (1 + np.exp(-randn(*shape, seed=seed)))).astype(np.float32)


# ============================================================================ regression losses
REG_SHAPES = [(5,), (3, 4), (2, 3, 4)]


def _reg_cases():
    for shape in REG_SHAPES:
        x, y = randn(*shape, seed=3), randn(*shape, seed=4)
        s = "x".join(map(str, shape))
        for red in REDUCTIONS:
            yield Case(f"l1-{s}-{red}", lambda t, a, b, r=red: F(t).l1_loss(a, b, reduction=r),
                       [x, y])
            yield Case(f"mse-{s}-{red}", lambda t, a, b, r=red: F(t).mse_loss(a, b, reduction=r),
                       [x, y])
            for beta in (0.0, 0.5, 1.0, 2.0):
                yield Case(f"smooth_l1-{s}-{red}-b{beta}",
                           lambda t, a, b, r=red, be=beta: F(t).smooth_l1_loss(a, b, reduction=r,
                                                                               beta=be), [x, y])
            for delta in (0.5, 1.0, 2.0):
                yield Case(f"huber-{s}-{red}-d{delta}",
                           lambda t, a, b, r=red, d=delta: F(t).huber_loss(a, b, reduction=r,
                                                                           delta=d), [x, y])
            w = np.abs(randn(*shape, seed=5)) + 0.1
            for name in ("l1_loss", "mse_loss", "huber_loss"):
                yield Case(f"{name}-{s}-{red}-weight",
                           lambda t, a, b, r=red, n=name, w=w: getattr(F(t), n)(
                               a, b, reduction=r, weight=const(t, w)), [x, y])
        # KL: input = log-probabilities, target = probabilities (or log-probabilities)
        if len(shape) > 1:
            lp = np.log(probs(*shape, seed=6))
            p = probs(*shape, seed=7)
            for red in ["none", "sum", "batchmean"]:
                yield Case(f"kl-{s}-{red}",
                           lambda t, a, b, r=red: F(t).kl_div(a, b, reduction=r), [lp, p])
                yield Case(f"kl-{s}-{red}-logtarget",
                           lambda t, a, b, r=red: F(t).kl_div(a, b, reduction=r, log_target=True),
                           [lp, np.log(p)])


@pytest.mark.parametrize("case", list(_reg_cases()), ids=str)
def test_regression_losses(case):
    check(case)


def test_regression_float64_and_promotion():
    x, y = randn(3, 4, dtype=np.float64), randn(3, 4, seed=9)
    for name in ("l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss"):
        check(Case(name, lambda t, a, b, n=name: getattr(F(t), n)(a, b), [x, y.astype(x.dtype)]))
        # float64 input, float32 target: the result is promoted (torch's backward then fails)
        check(Case(name, lambda t, a, b, n=name: getattr(F(t), n)(a, b), [x, y], grad=False))


def test_kl_mean_warns_like_torch():
    lp, p = np.log(probs(2, 3)), probs(2, 3, seed=3)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        out = my_loss.kl_div(mytorch.from_numpy(lp), mytorch.from_numpy(p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.functional.kl_div(torch.from_numpy(lp), torch.from_numpy(p))
    np.testing.assert_allclose(as_numpy(out), as_numpy(ref), rtol=1e-6)


def test_broadcasting_target_warns_like_torch():
    a, b = mytorch.from_numpy(randn(3, 1)), mytorch.from_numpy(randn(3))
    msg = (r"Using a target size \(torch.Size\(\[3\]\)\) that is different to the input size "
           r"\(torch.Size\(\[3, 1\]\)\)")
    with pytest.warns(UserWarning, match=msg):
        out = my_loss.mse_loss(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.functional.mse_loss(torch.from_numpy(randn(3, 1)), torch.from_numpy(randn(3)))
    np.testing.assert_allclose(as_numpy(out), as_numpy(ref), rtol=1e-6)


def test_legacy_size_average_reduce():
    x, y = randn(3, 4), randn(3, 4, seed=1)
    for size_average, reduce in [(False, None), (None, False), (True, True)]:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            out = my_loss.mse_loss(mytorch.from_numpy(x), mytorch.from_numpy(y),
                                   size_average=size_average, reduce=reduce)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = torch.nn.functional.mse_loss(torch.from_numpy(x), torch.from_numpy(y),
                                               size_average=size_average, reduce=reduce)
        np.testing.assert_allclose(as_numpy(out), as_numpy(ref), rtol=1e-6)


# ============================================================================ NLL and cross-entropy
# (input shape, target shape): no batch, (N, C), and the spatial forms of 3, 4 and 5 dims.
CLASS_SHAPES = [((5,), ()), ((4, 5), (4,)), ((2, 5, 3), (2, 3)), ((2, 5, 2, 3), (2, 2, 3)),
                ((2, 5, 2, 1, 2), (2, 2, 1, 2))]
C = 5


def _class_cases():
    for shape, tshape in CLASS_SHAPES:
        s = "x".join(map(str, shape))
        x = randn(*shape, seed=11)
        for ignore in (-100, 2):
            tgt = classes(tshape, C, ignore=ignore if tshape else None)
            for red in REDUCTIONS:
                for weighted in (False, True):
                    w = (np.arange(C) + 1.0).astype(np.float32) / C if weighted else None
                    tag = f"{s}-{red}-ign{ignore}-{'w' if weighted else 'nw'}"

                    def kw(t, r=red, w=w, ig=ignore):
                        return dict(weight=None if w is None else const(t, w), ignore_index=ig,
                                    reduction=r)

                    yield Case(f"nll-{tag}",
                               lambda t, a, tg=tgt, kw=kw: F(t).nll_loss(
                                   log_softmax(t, a, 0 if a.dim() == 1 else 1), const(t, tg),
                                   **kw(t)), [x])
                    for ls in (0.0, 0.1, 1.0):
                        yield Case(f"ce-{tag}-ls{ls}",
                                   lambda t, a, tg=tgt, kw=kw, ls=ls: F(t).cross_entropy(
                                       a, const(t, tg), label_smoothing=ls, **kw(t)), [x])
        # probability targets: same shape as the input, floating (they get a gradient too)
        p = probs(*shape, seed=12, dim=0 if len(shape) == 1 else 1)
        for red in REDUCTIONS:
            for weighted in (False, True):
                w = (np.arange(C) + 1.0).astype(np.float32) / C if weighted else None
                for ls in (0.0, 0.2):
                    yield Case(f"ce-probs-{s}-{red}-{'w' if weighted else 'nw'}-ls{ls}",
                               lambda t, a, b, r=red, w=w, ls=ls: F(t).cross_entropy(
                                   a, b, weight=None if w is None else const(t, w), reduction=r,
                                   label_smoothing=ls), [x, p])


@pytest.mark.parametrize("case", list(_class_cases()), ids=str)
def test_nll_and_cross_entropy(case):
    check(case)


def test_nll_byte_target_and_float64():
    x = randn(4, 5, dtype=np.float64)
    tgt = np.array([1, 4, 0, 2], dtype=np.uint8)
    check(Case("nll-u8", lambda t, a: F(t).nll_loss(a, const(t, tgt)), [x]))
    check(Case("ce-f64-w", lambda t, a: F(t).cross_entropy(
        a, const(t, tgt.astype(np.int64)), weight=const(t, np.ones(5))), [x]))


def test_nll_all_ignored_is_nan_and_empty():
    x = mytorch.from_numpy(randn(3, 5))
    out = my_loss.nll_loss(x, mytorch.full((3,), -100))
    assert out.dim() == 0 and np.isnan(out.item())
    empty = my_loss.nll_loss(mytorch.zeros(0, 5), mytorch.zeros(0, dtype=mytorch.int64))
    assert np.isnan(empty.item())
    assert my_loss.nll_loss(mytorch.zeros(0, 5), mytorch.zeros(0, dtype=mytorch.int64),
                            reduction="sum").item() == 0


def test_cross_entropy_is_log_softmax_plus_nll_by_hand():
    """softmax → log → pick the target → mean, written out with plain tensor ops."""
    x = mytorch.from_numpy(randn(6, 4))
    tgt = mytorch.tensor([0, 3, 1, 1, 2, 0])
    logp = (x.exp() / x.exp().sum(1, keepdim=True)).log()
    by_hand = -logp[mytorch.arange(6), tgt].mean()
    assert abs(my_loss.cross_entropy(x, tgt).item() - by_hand.item()) < 1e-6


def test_untrained_model_loss_is_about_log_c():
    """Near-zero logits give a uniform prediction: cross-entropy = log(C)."""
    for n_classes in (2, 10, 1000):
        x = mytorch.from_numpy(randn(64, n_classes) * 1e-3)
        tgt = mytorch.from_numpy(classes((64,), n_classes))
        assert abs(my_loss.cross_entropy(x, tgt).item() - np.log(n_classes)) < 1e-2


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.lists(st.integers(1, 3), max_size=2),
       st.sampled_from(REDUCTIONS), st.integers(0, 2**16))
def test_property_cross_entropy_equals_nll_of_log_softmax(n, c, spatial, red, seed):
    x = mytorch.from_numpy(randn(n, c, *spatial, seed=seed))
    tgt = mytorch.from_numpy(classes((n, *spatial), c, seed=seed))
    ce = my_loss.cross_entropy(x, tgt, reduction=red)
    nll = my_loss.nll_loss(my_activation.log_softmax(x, 1), tgt, reduction=red)
    np.testing.assert_allclose(as_numpy(ce), as_numpy(nll), rtol=1e-6, atol=1e-6)
    ref = torch.nn.functional.cross_entropy(torch.from_numpy(as_numpy(x)),
                                            torch.from_numpy(as_numpy(tgt)), reduction=red)
    np.testing.assert_allclose(as_numpy(ce), ref.numpy(), rtol=1e-5, atol=1e-6)


# ============================================================================ binary cross-entropy
def _binary_cases():
    for shape in [(6,), (4, 3), (2, 3, 4)]:
        s = "x".join(map(str, shape))
        p, y, z = unit(*shape, seed=21), unit(*shape, seed=22), randn(*shape, seed=23) * 3
        hard = (y > 0.5).astype(np.float32)
        w_full = np.abs(randn(*shape, seed=24)) + 0.1
        w_last = (np.arange(shape[-1]) + 1.0).astype(np.float32)
        for red in REDUCTIONS:
            for wname, w in (("nw", None), ("wfull", w_full), ("wlast", w_last)):
                def kw(t, r=red, w=w):
                    return dict(weight=None if w is None else const(t, w), reduction=r)

                yield Case(f"bce-{s}-{red}-{wname}",
                           lambda t, a, b, kw=kw: F(t).binary_cross_entropy(a, b, **kw(t)),
                           [p, y])
                yield Case(f"bce-{s}-{red}-{wname}-hard",
                           lambda t, a, b, kw=kw: F(t).binary_cross_entropy(a, b, **kw(t)),
                           [p, hard])
                for pw in (None, w_last * 0.7):
                    yield Case(f"bcel-{s}-{red}-{wname}-{'pw' if pw is not None else 'npw'}",
                               lambda t, a, b, kw=kw, pw=pw: F(t).binary_cross_entropy_with_logits(
                                   a, b, pos_weight=None if pw is None else const(t, pw),
                                   **kw(t)), [z, y])


@pytest.mark.parametrize("case", list(_binary_cases()), ids=str)
def test_binary_cross_entropy(case):
    check(case)


def test_bce_with_logits_promotes_a_float64_target():
    check(Case("bcel-f64", lambda t, a, b: F(t).binary_cross_entropy_with_logits(a, b),
               [randn(3, 4), unit(3, 4).astype(np.float64)]))


def test_bce_saturated_probabilities_match_torch():
    """p = 0 or 1: log clamped at -100 (loss 100), input grad ±1e12, target grad ±inf."""
    p = np.array([0.0, 1.0, 0.0, 1.0, 0.5], dtype=np.float32)
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.3], dtype=np.float32)
    for red in REDUCTIONS:
        check(Case(f"bce-edge-{red}",
                   lambda t, a, b, r=red: F(t).binary_cross_entropy(a, b, reduction=r), [p, y]),
              )


# ============================================================================ numerical safety
EXTREME = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 3.0], [1e4, 1e4, -1e4]], dtype=np.float32)


def _finite_loss_and_grad(fn):
    x = mytorch.from_numpy(EXTREME.copy()).requires_grad_()
    out = fn(x)
    out.sum().backward()
    assert np.isfinite(as_numpy(out)).all(), as_numpy(out)
    assert np.isfinite(as_numpy(x.grad)).all(), as_numpy(x.grad)


@pytest.mark.parametrize("red", REDUCTIONS)
def test_extreme_logits_give_finite_cross_entropy(red):
    tgt = np.array([1, 0, 2])
    for ls in (0.0, 0.1):
        _finite_loss_and_grad(lambda x, ls=ls: my_loss.cross_entropy(
            x, mytorch.from_numpy(tgt), reduction=red, label_smoothing=ls))
        check(Case(f"ce-extreme-{red}-{ls}", lambda t, a, r=red, ls=ls: F(t).cross_entropy(
            a, const(t, tgt), reduction=r, label_smoothing=ls), [EXTREME], atol=1e-3, rtol=1e-5))
    soft = probs(3, 3, seed=31)
    _finite_loss_and_grad(lambda x: my_loss.cross_entropy(x, mytorch.from_numpy(soft),
                                                          reduction=red))
    check(Case(f"ce-extreme-probs-{red}", lambda t, a, b, r=red: F(t).cross_entropy(
        a, b, reduction=r), [EXTREME, soft], atol=1e-3, rtol=1e-5))


@pytest.mark.parametrize("red", REDUCTIONS)
def test_extreme_logits_give_finite_bce_with_logits(red):
    y = unit(3, 3, seed=32)
    pw = np.array([2.0, 0.5, 1.0], dtype=np.float32)
    _finite_loss_and_grad(lambda x: my_loss.binary_cross_entropy_with_logits(
        x, mytorch.from_numpy(y), reduction=red, pos_weight=mytorch.from_numpy(pw)))
    check(Case(f"bcel-extreme-{red}", lambda t, a, b, r=red: F(t).binary_cross_entropy_with_logits(
        a, b, reduction=r, pos_weight=const(t, pw)), [EXTREME, y], atol=1e-3, rtol=1e-5))


def test_sigmoid_then_bce_saturates_where_logits_do_not():
    """The reason BCEWithLogitsLoss exists: σ(±1e4) is exactly 0 or 1 in float32."""
    x = mytorch.tensor([1e4, -1e4])
    y = mytorch.tensor([0.0, 1.0])
    naive = my_loss.binary_cross_entropy(x.sigmoid(), y, reduction="none")
    assert naive.tolist() == [100.0, 100.0]  # clamped log: the true loss is 1e4
    stable = my_loss.binary_cross_entropy_with_logits(x, y, reduction="none")
    np.testing.assert_allclose(as_numpy(stable), [1e4, 1e4])


# ============================================================================ errors
def same_error(fn):
    """Both libraries raise the same exception class with the same message; returns it."""
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(Exception) as mine:
        fn(mytorch)
    assert type(mine.value).__name__ == type(ref.value).__name__, \
        f"mytorch raised {type(mine.value).__name__}: {mine.value}; torch " \
        f"{type(ref.value).__name__}: {ref.value}"
    assert str(mine.value) == str(ref.value)
    return mine.value


def X(lib, *shape):
    return lib.from_numpy(randn(*shape, seed=40))


def P(lib, *shape):
    return lib.from_numpy(unit(*shape, seed=41))


ERRORS = {
    "nll-float-target": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, np.float32([1, 0, 4]))),
    "nll-int32-target": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, np.int32([1, 0, 4]))),
    "nll-bool-target": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, [True, False, True])),
    "ce-float-target": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, np.float32([1, 0, 4]))),
    "nll-batch": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, [1, 0, 4, 2])),
    "ce-batch": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, [1, 0, 4, 2])),
    "ce-batch-0d-target": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, 2)),
    "nll-out-of-range": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, [1, 0, 5])),
    "nll-negative": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, [1, -1, 0])),
    "ce-out-of-range": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, [1, 0, 5])),
    "ce-out-of-range-ls": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, [7, 0, 1]),
                                                       label_smoothing=0.1),
    "nll-4d-out-of-range": lambda t: F(t).nll_loss(X(t, 2, 3, 2, 2), t.full((2, 2, 2), 3)),
    "nll-0d-input": lambda t: F(t).nll_loss(t.tensor(1.0), const(t, 0)),
    "nll-1d-target-size": lambda t: F(t).nll_loss(X(t, 5), const(t, [2, 1])),
    "nll-2d-target": lambda t: F(t).nll_loss(X(t, 3, 5), t.zeros(3, 1, dtype=t.int64)),
    "nll-3d-target-shape": lambda t: F(t).nll_loss(X(t, 2, 3, 2), t.zeros(2, 3, dtype=t.int64)),
    "nll-5d-target-shape": lambda t: F(t).nll_loss(X(t, 2, 3, 2, 2, 2),
                                                   t.zeros(2, 2, 2, 3, dtype=t.int64)),
    "nll-4d-target-dims": lambda t: F(t).nll_loss(X(t, 2, 3, 2, 2), t.zeros(2, 4, dtype=t.int64)),
    "nll-4d-target-shape": lambda t: F(t).nll_loss(X(t, 2, 3, 2, 2),
                                                   t.zeros(2, 2, 3, dtype=t.int64)),
    "nll-weight-size": lambda t: F(t).nll_loss(X(t, 3, 5), const(t, [1, 0, 4]),
                                               weight=t.ones(4)),
    "ce-weight-size": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, [1, 0, 4]),
                                                   weight=t.ones(4)),
    "ce-probs-weight-size": lambda t: F(t).cross_entropy(X(t, 3, 5), P(t, 3, 5), weight=t.ones(4)),
    "ce-weight-dtype": lambda t: F(t).cross_entropy(X(t, 3, 5).double(), const(t, [1, 0, 4]),
                                                    weight=t.ones(5)),
    "ce-weight-requires-grad": lambda t: F(t).cross_entropy(
        X(t, 3, 5), const(t, [1, 0, 4]), weight=t.ones(5, requires_grad=True)),
    "ce-probs-long": lambda t: F(t).cross_entropy(X(t, 3, 5), t.ones(3, 5, dtype=t.int64)),
    "ce-probs-ignore-index": lambda t: F(t).cross_entropy(X(t, 3, 5), P(t, 3, 5), ignore_index=1),
    "ce-label-smoothing": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, [1, 0, 4]),
                                                       label_smoothing=1.5),
    "ce-probs-label-smoothing": lambda t: F(t).cross_entropy(X(t, 3, 5), P(t, 3, 5),
                                                             label_smoothing=1.5),
    "ce-reduction": lambda t: F(t).cross_entropy(X(t, 3, 5), const(t, [1, 0, 4]),
                                                 reduction="foo"),
    "ce-int-input": lambda t: F(t).cross_entropy(t.ones(3, 5, dtype=t.int64), const(t, [1, 0, 4])),
    "nll-int-input": lambda t: F(t).nll_loss(t.ones(3, 5, dtype=t.int64), const(t, [1, 0, 4])),
    "bce-shape": lambda t: F(t).binary_cross_entropy(P(t, 3, 1), P(t, 3)),
    "bcel-shape": lambda t: F(t).binary_cross_entropy_with_logits(X(t, 3, 1), P(t, 3)),
    "bce-input-range": lambda t: F(t).binary_cross_entropy(t.tensor([1.5]), t.tensor([0.5])),
    "bce-target-range": lambda t: F(t).binary_cross_entropy(t.tensor([0.5]), t.tensor([2.0])),
    "bce-input-nan": lambda t: F(t).binary_cross_entropy(t.tensor([float("nan"), 0.5]),
                                                         t.tensor([1.0, 0.0])),
    "bce-target-nan": lambda t: F(t).binary_cross_entropy(t.tensor([0.5]), t.tensor([float("nan")])),
    "bce-long-target": lambda t: F(t).binary_cross_entropy(t.tensor([0.5]), t.tensor([1])),
    "bce-double-target": lambda t: F(t).binary_cross_entropy(
        t.tensor([0.5]), t.tensor([1.0], dtype=t.float64)),
    "bce-long-input": lambda t: F(t).binary_cross_entropy(t.ones(3, dtype=t.int64),
                                                          t.ones(3, dtype=t.int64)),
    "bce-weight-bigger": lambda t: F(t).binary_cross_entropy(P(t, 3, 4), P(t, 3, 4),
                                                             weight=t.ones(2, 3, 4)),
    "bce-weight-requires-grad": lambda t: F(t).binary_cross_entropy(
        P(t, 3), P(t, 3), weight=t.ones(3, requires_grad=True)),
    "bcel-long-target": lambda t: F(t).binary_cross_entropy_with_logits(t.tensor([0.5]),
                                                                        t.tensor([1])),
    "bcel-pos-weight-bigger": lambda t: F(t).binary_cross_entropy_with_logits(
        X(t, 3, 4), P(t, 3, 4), pos_weight=t.ones(2, 3, 4)),
    "bcel-pos-weight-size": lambda t: F(t).binary_cross_entropy_with_logits(
        X(t, 4, 2), P(t, 4, 2), pos_weight=t.ones(3)),
    "bcel-weight-size": lambda t: F(t).binary_cross_entropy_with_logits(
        X(t, 4, 2), P(t, 4, 2), weight=t.ones(3)),
    "bcel-both-sizes": lambda t: F(t).binary_cross_entropy_with_logits(
        X(t, 4, 2), P(t, 4, 2), weight=t.ones(3), pos_weight=t.ones(5)),
    "bcel-module-pos-weight-size": lambda t: nn(t).BCEWithLogitsLoss(pos_weight=t.ones(3))(
        X(t, 4, 2), P(t, 4, 2)),
    "bcel-pos-weight-requires-grad": lambda t: F(t).binary_cross_entropy_with_logits(
        X(t, 3), P(t, 3), pos_weight=t.ones(3, requires_grad=True)),
    "mse-long": lambda t: F(t).mse_loss(t.ones(3, dtype=t.int64), t.ones(3, dtype=t.int64)),
    "mse-reduction": lambda t: F(t).mse_loss(X(t, 3), X(t, 3), reduction="batchmean"),
    "mse-weight-size": lambda t: F(t).mse_loss(X(t, 3), X(t, 3), weight=t.ones(2)),
    "l1-weight-reduction": lambda t: F(t).l1_loss(X(t, 3), X(t, 3), weight=t.ones(3),
                                                  reduction="x"),
    "smooth-l1-negative-beta": lambda t: F(t).smooth_l1_loss(X(t, 3), X(t, 3), beta=-1.0),
    "smooth-l1-long": lambda t: F(t).smooth_l1_loss(t.ones(3, dtype=t.int64),
                                                    t.ones(3, dtype=t.int64)),
    "huber-delta": lambda t: F(t).huber_loss(X(t, 3), X(t, 3), delta=0.0),
    "huber-long": lambda t: F(t).huber_loss(t.ones(3, dtype=t.int64), t.ones(3, dtype=t.int64)),
    "kl-reduction": lambda t: F(t).kl_div(X(t, 3), X(t, 3), reduction="x"),
    "kl-long": lambda t: F(t).kl_div(t.ones(3, dtype=t.int64), t.ones(3, dtype=t.int64),
                                     reduction="sum"),
    "huber-module-delta": lambda t: nn(t).HuberLoss(delta="1"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    same_error(ERRORS[name])


def test_error_messages_name_the_expected_shape_and_dtype():
    e = same_error(ERRORS["nll-float-target"])
    assert isinstance(e, RuntimeError) and "Long" in str(e) and "Float" in str(e)
    e = same_error(ERRORS["ce-batch"])
    assert isinstance(e, ValueError)
    assert str(e) == "Expected input batch_size (3) to match target batch_size (4)."
    e = same_error(ERRORS["bce-shape"])
    assert str(e) == ("Using a target size (torch.Size([3])) that is different to the input size "
                      "(torch.Size([3, 1])) is deprecated. Please ensure they have the same size.")
    assert isinstance(same_error(ERRORS["ce-out-of-range"]), IndexError)


def test_weight_that_requires_grad_is_fine_under_no_grad():
    with mytorch.no_grad():
        my_loss.cross_entropy(mytorch.randn(3, 5), mytorch.tensor([1, 0, 4]),
                              weight=mytorch.ones(5, requires_grad=True))


# ============================================================================ modules
MODULES = [
    ("L1Loss", {}), ("MSELoss", {"reduction": "sum"}), ("SmoothL1Loss", {"beta": 0.5}),
    ("HuberLoss", {"delta": 2.0}), ("KLDivLoss", {"reduction": "batchmean", "log_target": True}),
    ("NLLLoss", {"ignore_index": 1}), ("CrossEntropyLoss", {"label_smoothing": 0.1}),
    ("BCELoss", {"reduction": "none"}), ("BCEWithLogitsLoss", {}),
]


def _module_inputs(name):
    if name in ("NLLLoss", "CrossEntropyLoss"):
        return [randn(4, 5, seed=50)], classes((4,), 5)
    if name == "BCELoss":
        return [unit(4, 5, seed=51), unit(4, 5, seed=52)], None
    return [randn(4, 5, seed=53), unit(4, 5, seed=54)], None


@pytest.mark.parametrize("name,kwargs", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(name, kwargs):
    ref = getattr(torch.nn, name)(**kwargs)
    mine = getattr(my_loss_modules, name)(**kwargs)
    assert repr(mine) == repr(ref)
    for attr in ("reduction", "ignore_index", "label_smoothing", "beta", "delta", "log_target"):
        assert getattr(mine, attr, None) == getattr(ref, attr, None), attr
    inputs, tgt = _module_inputs(name)

    def fn(t, a, b=None):
        crit = getattr(nn(t), name)(**kwargs)
        if name == "NLLLoss":
            return crit(log_softmax(t, a, 1), const(t, tgt))
        return crit(a, const(t, tgt) if tgt is not None else b)

    check(Case(name, fn, inputs))


def test_weighted_module_keeps_weight_as_buffer():
    w = mytorch.tensor([1.0, 2.0, 0.5])
    crit = my_loss_modules.CrossEntropyLoss(weight=w, ignore_index=0)
    assert crit.weight is w
    assert list(crit.state_dict()) == list(torch.nn.CrossEntropyLoss(torch.ones(3)).state_dict())
    assert list(dict(crit.named_buffers())) == ["weight"]
    bce = my_loss_modules.BCEWithLogitsLoss(pos_weight=mytorch.ones(3))
    assert bce.weight is None and list(dict(bce.named_buffers())) == ["pos_weight"]
    assert my_loss_modules.NLLLoss().weight is None


def test_module_legacy_args_set_reduction():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert my_loss_modules.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert my_loss_modules.NLLLoss(reduce=False).reduction == "none"


def test_module_weight_is_used():
    x, tgt = randn(4, 5, seed=60), classes((4,), 5, seed=61)
    w = (np.arange(5) + 1.0).astype(np.float32)
    check(Case("ce-module-weight", lambda t, a: nn(t).CrossEntropyLoss(weight=const(t, w))(
        a, const(t, tgt)), [x]))
    check(Case("bce-module-weight", lambda t, a, b: nn(t).BCEWithLogitsLoss(
        weight=const(t, w), pos_weight=const(t, w))(a, b), [x, unit(4, 5)]))


# ============================================================================ autograd extras, devices
@pytest.mark.parametrize("ls", [0.0, 0.1])
def test_double_backward_matches_torch(ls):
    """create_graph=True: the gradient of the gradient (e.g. a gradient penalty) is torch's."""
    x, tgt, soft = randn(3, 4, dtype=np.float64), classes((3,), 4), probs(3, 4).astype(np.float64)
    results = []
    for lib in (mytorch, torch):
        a = lib.from_numpy(x.copy()).requires_grad_()
        loss = F(lib).cross_entropy(a, const(lib, tgt), label_smoothing=ls) \
            + F(lib).binary_cross_entropy_with_logits(a, const(lib, soft)) \
            + F(lib).nll_loss(log_softmax(lib, a, 1), const(lib, tgt), reduction="sum")
        (g,) = lib.autograd.grad(loss, a, create_graph=True)
        (g * g).sum().backward()
        results.append(as_numpy(a.grad))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-9)


def test_losses_stay_on_the_simulated_cuda_device(sim):
    x = mytorch.randn(4, 5, device="cuda").requires_grad_()
    tgt = mytorch.tensor([1, 0, 4, -100], device="cuda")
    w = mytorch.rand(5, device="cuda")
    y = mytorch.rand(4, 5, device="cuda")
    losses = [my_loss.cross_entropy(x, tgt, weight=w, label_smoothing=0.1),
              my_loss.binary_cross_entropy_with_logits(x, y, pos_weight=w),
              my_loss.binary_cross_entropy(x.sigmoid(), y),
              my_loss.smooth_l1_loss(x, y), my_loss.kl_div(x, y, reduction="batchmean")]
    sum(losses).backward()
    for t in losses + [x.grad]:
        assert str(t.device) == "cuda:0"
        assert type(t._data).__name__ == "_SimulatedArray", "computed on the host"


def _embedding_losses(lib):
    F = lib.nn.functional
    rng = np.random.default_rng(0)

    def t(*shape):
        return lib.from_numpy(rng.standard_normal(shape).astype(np.float32)).requires_grad_()

    a, p, n = t(4, 3), t(4, 3), t(4, 3)
    y = lib.tensor([1.0, -1, 1, -1])
    outs = [F.triplet_margin_loss(a, p, n),
            F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction="none"),
            F.cosine_embedding_loss(a, p, y), F.cosine_embedding_loss(a, p, y, 0.2, reduction="sum"),
            F.cosine_embedding_loss(a[0], p[0], lib.tensor(-1.0)),
            F.margin_ranking_loss(a[:, 0], p[:, 0], y, margin=0.1),
            F.hinge_embedding_loss(a, lib.tensor([[1.0, -1, 1]] * 4)),
            lib.nn.TripletMarginLoss(margin=0.5)(a, p, n), lib.nn.CosineEmbeddingLoss(0.1)(a, p, y),
            lib.nn.MarginRankingLoss(0.2, reduction="none")(a[:, 1], p[:, 1], y),
            lib.nn.HingeEmbeddingLoss(2.0)(a.abs(), lib.ones(4, 3))]
    sum(o.sum() for o in outs).backward()
    errors = []
    for bad in [lambda: F.triplet_margin_loss(a, p, n[0]),
                lambda: F.triplet_margin_loss(a, p, n, margin=0),
                lambda: F.cosine_embedding_loss(a, p, y[None]),
                lambda: F.cosine_embedding_loss(a[0], p, y),
                lambda: F.cosine_embedding_loss(a, p, y[0]),
                lambda: F.margin_ranking_loss(a, p[:, 0], y),
                lambda: lib.nn.TripletMarginLoss(margin=-1)]:
        with pytest.raises((RuntimeError, ValueError)) as e:
            bad()
        errors.append((e.type.__name__, str(e.value)))
    return ([o.detach().numpy() for o in outs], [o.grad_fn.name() for o in outs],
            [a.grad.numpy(), p.grad.numpy(), n.grad.numpy()], errors,
            [repr(lib.nn.TripletMarginLoss()), repr(lib.nn.CosineEmbeddingLoss())])


def test_embedding_losses_match_torch():
    """Triplet, cosine-embedding, margin-ranking and hinge-embedding losses: torch's composites
    op for op (values, gradients, last nodes), its checks and messages."""
    mine, ref = _embedding_losses(mytorch), _embedding_losses(torch)
    for m, r in zip(mine[0] + mine[2], ref[0] + ref[2], strict=True):
        np.testing.assert_allclose(m, r, rtol=1e-6, atol=1e-7)
    assert mine[1] == ref[1] and mine[3] == ref[3] and mine[4] == ref[4]
# ---------------------------------------------------------------- margin losses on embeddings
def _pm1(*shape, seed=0):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, 1.0, -1.0).astype(np.float32)


MARGIN = [
    Case(f"margin_ranking-{r}", lambda t, a, b, y, r=r: t.nn.functional.margin_ranking_loss(
        a, b, y, margin=0.3, reduction=r), [randn(6), randn(6, seed=1), _pm1(6)]) for r in REDUCTIONS
] + [
    Case(f"hinge_embedding-{r}", lambda t, x, y, r=r: t.nn.functional.hinge_embedding_loss(
        x, y, margin=0.5, reduction=r), [randn(3, 4), _pm1(3, 4)]) for r in REDUCTIONS
] + [
    Case(f"cosine_embedding-{r}", lambda t, a, b, y, r=r: t.nn.functional.cosine_embedding_loss(
        a, b, y, margin=0.1, reduction=r), [randn(5, 4), randn(5, 4, seed=2), _pm1(5)]) for r in REDUCTIONS
] + [
    Case("cosine_embedding-0d", lambda t, a, b: t.nn.functional.cosine_embedding_loss(
        a, b, t.tensor(-1.0)), [randn(4), randn(4, seed=3)]),
    Case("cosine_embedding-zero-vector", lambda t, a, b, y: t.nn.functional.cosine_embedding_loss(
        a * 0, b, y), [randn(2, 3), randn(2, 3, seed=4), _pm1(2)]),
    Case("hinge_embedding-long-target", lambda t, x: t.nn.functional.hinge_embedding_loss(
        x, t.tensor([1, -1, 1, -1, 0])), [randn(5)]),
] + [
    Case(f"triplet-{r}-swap{s}-p{p}", lambda t, a, pos, n, r=r, s=s, p=p: t.nn.functional.triplet_margin_loss(
        a, pos, n, margin=2.0, p=p, swap=s, reduction=r), [randn(4, 3), randn(4, 3, seed=5), randn(4, 3, seed=6)])
    for r in REDUCTIONS for s in (False, True) for p in (1, 2)
] + [
    Case("triplet_with_distance-cosine", lambda t, a, pos, n: t.nn.functional.triplet_margin_with_distance_loss(
        a, pos, n, distance_function=lambda x, y: 1 - t.nn.functional.cosine_similarity(x, y), margin=0.5,
        swap=True), [randn(4, 3), randn(4, 3, seed=5), randn(4, 3, seed=6)]),
    Case("triplet_with_distance-default", lambda t, a, pos, n: t.nn.functional.triplet_margin_with_distance_loss(
        a, pos, n, reduction="none"), [randn(4, 3), randn(4, 3, seed=5), randn(4, 3, seed=6)]),
    Case("modules", lambda t, a, b, y: (
        t.nn.MarginRankingLoss(0.2)(a[:, 0], b[:, 0], y), t.nn.HingeEmbeddingLoss(reduction="sum")(a, y[:, None]),
        t.nn.CosineEmbeddingLoss(0.1)(a, b, y), t.nn.TripletMarginLoss(p=1, swap=True)(a, b, a.flip(0)),
        t.nn.TripletMarginWithDistanceLoss(margin=0.7)(a, b, a.flip(0))),
         [randn(5, 4), randn(5, 4, seed=2), _pm1(5)]),
]


@pytest.mark.parametrize("case", MARGIN, ids=str)
def test_margin_losses(case):
    check(case)


def test_margin_loss_graphs_are_torch_s():
    """The losses are torch's compositions: the same last nodes."""
    for lib in (mytorch, torch):
        F_ = lib.nn.functional
        a = lib.ones(2, 3, requires_grad=True)
        names = [type(x.grad_fn).__name__ if lib is torch else x.grad_fn.name() for x in (
            F_.hinge_embedding_loss(a, lib.ones(2, 3), reduction="none"),
            F_.margin_ranking_loss(a[:, 0], a[:, 1], lib.ones(2), reduction="none"),
            F_.cosine_embedding_loss(a, a * 2, lib.ones(2), reduction="none"),
            F_.triplet_margin_loss(a, a * 2, a * 3, reduction="none"),
            F_.triplet_margin_loss(a, a * 2, a * 3))]
        assert names == ["AddBackward0", "ClampMinBackward0", "AddBackward0", "ClampMinBackward0",
                         "MeanBackward0"]
    assert repr(mytorch.nn.TripletMarginWithDistanceLoss()) == repr(torch.nn.TripletMarginWithDistanceLoss())
    assert mytorch.nn.TripletMarginLoss.__constants__ == torch.nn.TripletMarginLoss.__constants__


MARGIN_ERRORS = [
    ("triplet_dims", lambda t: t.nn.functional.triplet_margin_loss(t.ones(2, 3), t.ones(2, 3), t.ones(3))),
    ("triplet_margin", lambda t: t.nn.functional.triplet_margin_loss(t.ones(2, 3), t.ones(2, 3), t.ones(2, 3), margin=-1)),
    ("triplet_module_margin", lambda t: t.nn.TripletMarginLoss(margin=0)),
    ("triplet_distance_module_margin", lambda t: t.nn.TripletMarginWithDistanceLoss(margin=-0.5)),
    ("triplet_reduction", lambda t: t.nn.functional.triplet_margin_loss(t.ones(2, 3), t.ones(2, 3), t.ones(2, 3), reduction="bad")),
    ("triplet_with_distance_dims", lambda t: t.nn.functional.triplet_margin_with_distance_loss(t.ones(2, 3), t.ones(2, 3), t.ones(3))),
    ("triplet_with_distance_margin", lambda t: t.nn.functional.triplet_margin_with_distance_loss(t.ones(2, 3), t.ones(2, 3), t.ones(2, 3), margin=0)),
    ("margin_ranking_dims", lambda t: t.nn.functional.margin_ranking_loss(t.ones(2), t.ones(2), t.ones(2, 1))),
    ("cosine_target_2d", lambda t: t.nn.functional.cosine_embedding_loss(t.ones(2, 3), t.ones(2, 3), t.ones(2, 2))),
    ("cosine_inputs_1d_target", lambda t: t.nn.functional.cosine_embedding_loss(t.ones(3), t.ones(2, 3), t.ones(2))),
    ("cosine_inputs_0d_target", lambda t: t.nn.functional.cosine_embedding_loss(t.ones(2, 3), t.ones(2, 3), t.tensor(1.0))),
    ("hinge_shapes", lambda t: t.nn.functional.hinge_embedding_loss(t.ones(2), t.ones(3))),
]


@pytest.mark.parametrize("name,fn", MARGIN_ERRORS, ids=[e[0] for e in MARGIN_ERRORS])
def test_margin_loss_errors_match_torch(name, fn):
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(type(ref.value)) as mine:
        fn(mytorch)
    assert str(mine.value) == str(ref.value)


# ---------------------------------------------------------------- likelihood and logistic-margin losses
def _counts(*shape, seed=0):
    return np.random.default_rng(seed).poisson(2.0, shape).astype(np.float32)


MORE = [
    Case(f"gaussian_nll-{r}", lambda t, x, y, v, r=r: t.nn.functional.gaussian_nll_loss(
        x, y, v.abs() + 0.1, reduction=r), [randn(4, 3), randn(4, 3, seed=1), randn(4, 3, seed=2)])
    for r in REDUCTIONS
] + [
    Case("gaussian_nll-per-sample-var-full", lambda t, x, y, v: t.nn.functional.gaussian_nll_loss(
        x, y, v.abs(), full=True), [randn(4, 3), randn(4, 3, seed=1), randn(4, seed=2)]),
    Case("gaussian_nll-broadcast-var-eps", lambda t, x, y, v: t.nn.GaussianNLLLoss(eps=0.5)(
        x, y, v.abs()), [randn(2, 3, 4), randn(2, 3, 4, seed=1), randn(2, 1, 4, seed=2)]),
    Case("gaussian_nll-float-var", lambda t, x, y: t.nn.functional.gaussian_nll_loss(x, y, 0.5),
         [randn(5), randn(5, seed=1)]),
] + [
    Case(f"poisson_nll-{r}-log{li}-full{fu}", lambda t, x, y, r=r, li=li, fu=fu:
         t.nn.functional.poisson_nll_loss(x if li else x.abs() + 0.1, y, log_input=li, full=fu, reduction=r),
         [randn(3, 4), _counts(3, 4)]) for r in REDUCTIONS for li in (True, False) for fu in (False, True)
] + [
    Case(f"soft_margin-{r}", lambda t, x, y, r=r: t.nn.functional.soft_margin_loss(x, y.detach(), reduction=r),
         [randn(4, 3), np.sign(randn(4, 3, seed=1))]) for r in REDUCTIONS
] + [
    Case("soft_margin-broadcast", lambda t, x, y: t.nn.SoftMarginLoss()(x, y.detach()), [randn(4, 3), np.sign(randn(3, seed=1))]),
] + [
    Case(f"multilabel_soft_margin-{r}", lambda t, x, y, r=r: t.nn.functional.multilabel_soft_margin_loss(
        x, y, reduction=r), [randn(4, 5), (randn(4, 5, seed=1) > 0).astype(np.float32)]) for r in REDUCTIONS
] + [
    Case("multilabel_soft_margin-weight", lambda t, x, y: t.nn.MultiLabelSoftMarginLoss(
        weight=t.arange(1.0, 6.0))(x, y), [randn(4, 5), (randn(4, 5, seed=1) > 0).astype(np.float32)]),
]


@pytest.mark.parametrize("case", MORE, ids=str)
def test_likelihood_and_soft_margin_losses(case):
    check(case)


def test_soft_margin_is_one_node_and_its_double_backward():
    grads = []
    for lib in (mytorch, torch):
        x = lib.tensor(randn(3, 4), requires_grad=True)
        loss = lib.nn.functional.soft_margin_loss(x, lib.tensor(np.sign(randn(3, 4, seed=1))))
        assert (loss.grad_fn.name() if lib is mytorch else type(loss.grad_fn).__name__) == \
            "SoftMarginLossBackward0"
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        g.pow(2).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-7)


MORE_ERRORS = [
    ("gaussian_var_size", lambda t: t.nn.functional.gaussian_nll_loss(t.ones(4, 6), t.ones(4, 6), t.ones(3))),
    ("gaussian_var_negative", lambda t: t.nn.functional.gaussian_nll_loss(t.ones(4, 6), t.ones(4, 6), -t.ones(4, 6))),
    ("gaussian_float_var_negative", lambda t: t.nn.functional.gaussian_nll_loss(t.ones(2), t.ones(2), -1.0)),
    ("gaussian_reduction", lambda t: t.nn.functional.gaussian_nll_loss(t.ones(2), t.ones(2), t.ones(2), reduction="x")),
    ("poisson_reduction", lambda t: t.nn.functional.poisson_nll_loss(t.ones(2), t.ones(2), reduction="x")),
    ("multilabel_reduction", lambda t: t.nn.functional.multilabel_soft_margin_loss(t.ones(2, 2), t.ones(2, 2), reduction="x")),
    ("soft_margin_shapes", lambda t: t.nn.functional.soft_margin_loss(t.ones(4, 6), t.ones(3))),
    ("soft_margin_target_grad", lambda t: t.nn.functional.soft_margin_loss(t.ones(2), t.ones(2, requires_grad=True))),
]


@pytest.mark.parametrize("name,fn", MORE_ERRORS, ids=[e[0] for e in MORE_ERRORS])
def test_likelihood_and_soft_margin_errors_match_torch(name, fn):
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(type(ref.value)) as mine:
        fn(mytorch)
    assert str(mine.value) == str(ref.value)
