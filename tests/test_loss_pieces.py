"""Chapter 05's pieces: each readable reference agrees with the fused kernel that runs by default
(values, gradients, second derivatives, node names), the readable cross-entropy builds torch's
very graph, and the public functions keep torch's edge cases around the pieces."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from oracle import randn

import mytorch
from mytorch._pieces import REGISTRY, activate, pieces
from mytorch.mine import plugged

F = mytorch.nn.functional
INF = float("inf")


def readable(*names: str):
    """The pieces' readable references, plugged in as a student's versions would be."""
    return plugged(**{n: REGISTRY[n].reference for n in names})


@contextlib.contextmanager
def fused(*names: str):
    """What runs by default: the pieces' fused fast paths (a student's piece may be on now)."""
    before = {n: getattr(pieces, n) for n in names}
    try:
        for n in names:
            activate(n, None)
        yield
    finally:
        for n, fn in before.items():
            setattr(pieces, n, fn)


def run(fn, floats, consts=(), create_graph=True):
    """``fn(*floats, *consts)`` on fresh float64 leaves: its output, the gradients of a loss
    quadratic in the output (so that they depend on the inputs), the gradient of the sum of the
    squared gradients (``create_graph``), and the output's node name."""
    xs = [mytorch.tensor(a, dtype=mytorch.float64, requires_grad=True) for a in floats]
    out = fn(*xs, *consts)
    w = mytorch.from_numpy(np.random.default_rng(1).standard_normal(tuple(out.shape)))
    grads = mytorch.autograd.grad((out * out * w).sum(), xs, create_graph=create_graph)
    second = None
    if create_graph:
        total = sum((g * g).sum() for g in grads)
        second = mytorch.autograd.grad(total, xs, allow_unused=True) if total.requires_grad \
            else [None] * len(xs)
    return out, grads, second, out.grad_fn.name()


def same(a, b, atol=1e-9, rtol=1e-7):
    for x, y in zip(a if isinstance(a, (tuple, list)) else [a],
                    b if isinstance(b, (tuple, list)) else [b], strict=True):
        if x is None or y is None:  # no second derivative on one side: it is zero on the other
            rest = y if x is None else x
            assert rest is None or not np.any(rest.detach().numpy())
            continue
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=rtol, atol=atol)


def fast_and_readable(name, fn, floats, consts=(), create_graph=True):
    with fused(name):
        fast = run(fn, floats, consts, create_graph)
    with readable(name):
        slow = run(fn, floats, consts, create_graph)
    for i in range(3):
        same(fast[i], slow[i])
    assert fast[3] == slow[3], (fast[3], slow[3])
    return fast[3]


def classes(shape, c, seed=0, ignore=None):
    t = np.random.default_rng(seed).integers(0, c, size=shape).astype(np.int64)
    if ignore is not None and t.size:
        t.reshape(-1)[::3] = ignore
    return mytorch.from_numpy(t)


def torch_node(fn, x, *consts):
    """The name torch gives the output's node (the oracle for node names)."""
    args = [torch.from_numpy(c.numpy()) if isinstance(c, mytorch.Tensor) else c for c in consts]
    return fn(torch, torch.from_numpy(x).requires_grad_(), *args).grad_fn.name()


# ============================================================================ nll_loss_nd
NLL_SHAPES = [(5,), (4, 5), (2, 5, 3), (2, 5, 2, 3), (2, 5, 2, 1, 2)]


@pytest.mark.parametrize("shape", NLL_SHAPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weight"])
def test_nll_reference_matches_fused(shape, reduction, weighted):
    z = randn(*shape, dtype=np.float64, seed=3)
    x = z - np.log(np.exp(z).sum(axis=0 if len(shape) == 1 else 1, keepdims=True))  # log-probs
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    t = classes(tshape, 5, ignore=None if len(shape) == 1 else 2)
    w = mytorch.tensor([1.0, 2.0, 0.5, 3.0, 0.25], dtype=mytorch.float64) if weighted else None

    def fn(lib, a, target, weight=None):
        return lib.nn.functional.nll_loss(a, target, weight, ignore_index=2, reduction=reduction)

    name = fast_and_readable("nll_loss_nd", lambda a, tt, ww: fn(mytorch, a, tt, ww),
                             [x], [t, w])
    assert name == torch_node(fn, x, t, w)


def test_nll_ignores_a_minus_inf_at_an_ignored_target():
    """An ignored sample reads nothing: a log-probability of -inf there is no nan (torch too)."""
    x = np.array([[-INF, 0.0], [-1.0, -2.0]])
    t = mytorch.tensor([-100, 1])
    for reduction in ("none", "sum", "mean"):
        want = torch.nn.functional.nll_loss(torch.from_numpy(x), torch.tensor([-100, 1]),
                                            reduction=reduction)
        with fused("nll_loss_nd"):
            got = F.nll_loss(mytorch.from_numpy(x), t, reduction=reduction)
        with readable("nll_loss_nd"):
            slow = F.nll_loss(mytorch.from_numpy(x), t, reduction=reduction)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(slow.numpy(), want.numpy())


# ============================================================================ cross_entropy_loss
@pytest.mark.parametrize("shape", [(5,), (4, 5), (2, 5, 3), (2, 5, 2, 2)], ids=str)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weight"])
def test_cross_entropy_reference_matches_fused(shape, reduction, smoothing, weighted):
    x = randn(*shape, dtype=np.float64, seed=4) * 3
    tshape = () if len(shape) == 1 else shape[:1] + shape[2:]
    t = classes(tshape, 5, seed=5, ignore=None if len(shape) == 1 else 4)
    w = mytorch.tensor([1.0, 2.0, 0.5, 3.0, 0.25], dtype=mytorch.float64) if weighted else None

    def fn(lib, a, target, weight=None):
        return lib.nn.functional.cross_entropy(a, target, weight, ignore_index=4,
                                               reduction=reduction, label_smoothing=smoothing)

    name = fast_and_readable("cross_entropy_loss", lambda a, tt, ww: fn(mytorch, a, tt, ww),
                             [x], [t, w])
    assert name == torch_node(fn, x, t, w)


def _names(t):
    """Every node below ``t`` depth first (torch writes AccumulateGrad with its namespace)."""
    out, stack = [], [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        out.append(node.name().replace("torch::autograd::", ""))
        stack.extend(n for n, _ in reversed(node.next_functions))
    return out


@pytest.mark.parametrize("kw", [dict(label_smoothing=0.1), dict(label_smoothing=0.1, weight=True),
                                dict(label_smoothing=0.3, reduction="none"), dict(), dict(dims=3)],
                         ids=str)
def test_readable_cross_entropy_builds_torchs_graph(kw):
    """torch's cross_entropy is log_softmax + nll_loss (+ the smoothing term): the readable piece
    is that very composition, node for node (torch's C++ multiplies by a number with a node
    it calls MulBackward1; Python's ``number * tensor`` is MulBackward0 in both libraries)."""
    kw = dict(kw)
    dims = kw.pop("dims", 2)
    shape = (3, 4) if dims == 2 else (3, 4, 2)
    x = randn(*shape, dtype=np.float64, seed=6)
    t = np.array([0, 3, -100]) if dims == 2 else np.array([[0, 3], [-100, 1], [2, 2]])
    graphs = []
    for lib in (torch, mytorch):
        w = lib.tensor([1.0, 2.0, 0.5, 3.0], dtype=lib.float64) if kw.get("weight") else None
        a = lib.from_numpy(x.copy()).requires_grad_()
        with fused("cross_entropy_loss", "nll_loss_nd"):
            loss = lib.nn.functional.cross_entropy(a, lib.from_numpy(t.copy()), **{**kw, "weight": w})
        graphs.append([n.replace("MulBackward1", "MulBackward0") for n in _names(loss)])
    with readable("cross_entropy_loss"):
        a = mytorch.from_numpy(x.copy()).requires_grad_()
        w = mytorch.tensor([1.0, 2.0, 0.5, 3.0], dtype=mytorch.float64) if kw.get("weight") else None
        mine = _names(F.cross_entropy(a, mytorch.from_numpy(t.copy()), **{**kw, "weight": w}))
    assert mine == graphs[0]
    if kw or dims != 2:  # the default path is the same composition, except the fused (N, C) case
        assert graphs[1] == graphs[0]
    else:
        assert graphs[1] == ["NllLossBackward0", "AccumulateGrad"]


# ============================================================================ log_sum_exp
@pytest.mark.parametrize("shape, dim, keepdim", [((5,), 0, False), ((3, 4), 1, True),
                                                 ((3, 4), (0, 1), False), ((2, 3, 4), -2, False),
                                                 ((2, 3, 4), (0, 2), True)], ids=str)
def test_logsumexp_reference_matches_fused(shape, dim, keepdim):
    x = randn(*shape, dtype=np.float64, seed=7) * 30
    name = fast_and_readable("log_sum_exp", lambda a: mytorch.logsumexp(a, dim, keepdim), [x])
    assert name == "LogsumexpBackward0"


def test_logsumexp_infinite_rows_like_torch():
    x = np.array([[INF, 1.0], [-INF, -INF], [np.nan, 1.0], [1e4, -1e4], [-INF, 2.0]])
    want_x = torch.from_numpy(x.copy()).requires_grad_()
    want = torch.logsumexp(want_x, 1)
    want.sum().backward()
    for plug in (fused("log_sum_exp"), readable("log_sum_exp")):
        with plug:
            got_x = mytorch.from_numpy(x.copy()).requires_grad_()
            got = mytorch.logsumexp(got_x, 1)
            got.sum().backward()
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        np.testing.assert_allclose(got_x.grad.numpy(), want_x.grad.numpy(), equal_nan=True)


def test_logsumexp_of_integers_and_of_nothing():
    for make in (lambda lib: lib.logsumexp(lib.tensor([1, 2, 3]), 0),
                 lambda lib: lib.logsumexp(lib.zeros(0, 3), 0),
                 lambda lib: lib.logsumexp(lib.zeros(0, 3), 1),
                 lambda lib: lib.logsumexp(lib.tensor(2.5), 0)):
        want, got = make(torch), make(mytorch)
        assert got.dtype.__str__() == want.dtype.__str__() and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy())


# ============================================================================ bce_with_logits
@pytest.mark.parametrize("weights", ["", "weight", "pos_weight", "both"])
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_bce_with_logits_reference_matches_fused(weights, reduction):
    x = randn(3, 4, dtype=np.float64, seed=8) * 4  # (x = 0 exactly: the test below)
    y = np.random.default_rng(9).uniform(0, 1, (3, 4))
    w = mytorch.tensor([0.5, 1.0, 2.0, 3.0], dtype=mytorch.float64) \
        if weights in ("weight", "both") else None
    pw = mytorch.tensor([2.0, 1.0, 0.5, 4.0], dtype=mytorch.float64) \
        if weights in ("pos_weight", "both") else None

    def fn(a, b):
        return F.binary_cross_entropy_with_logits(a, b, w, reduction=reduction, pos_weight=pw)

    name = fast_and_readable("bce_with_logits", fn, [x, y])
    assert name == "BinaryCrossEntropyWithLogitsBackward0"


def test_bce_with_logits_reference_is_exact_at_huge_and_zero_logits():
    """Values at ±1e4, and the gradient σ(x) - y at x = 0 exactly, where min(x, 0) and |x|
    both have a kink. (The second derivative there is autograd's guess at the kinks: 0, not
    -1/4. The fused path that runs by default has the exact one.)"""
    x = mytorch.tensor([1e4, -1e4, 1e4, 0.0], requires_grad=True)
    y = mytorch.tensor([0.0, 1.0, 1.0, 1.0])
    with readable("bce_with_logits"):
        loss = F.binary_cross_entropy_with_logits(x, y, reduction="none")
        loss.sum().backward()
    np.testing.assert_allclose(loss.detach().numpy(), [1e4, 1e4, 0.0, np.log(2)], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.0, -0.5])


# ============================================================================ huber, kl_div_loss
@pytest.mark.parametrize("loss, kw", [("smooth_l1_loss", dict(beta=0.5)), ("huber_loss", dict(delta=0.7)),
                                      ("huber_loss", dict(delta=2.0, reduction="none"))], ids=str)
def test_huber_losses_are_one_node_named_as_torch(loss, kw):
    x, y = randn(3, 4, dtype=np.float64, seed=10), randn(3, 4, dtype=np.float64, seed=11)
    names = [getattr(lib.nn.functional, loss)(lib.from_numpy(x.copy()).requires_grad_(),
                                              lib.from_numpy(y.copy()), **kw).grad_fn.name()
             for lib in (torch, mytorch)]
    assert names[0] == names[1]
    # a student's huber runs inside the node, forward and backward
    calls = []

    def spy(d, delta):
        calls.append(delta)
        return REGISTRY["huber"].reference(d, delta)

    with plugged(huber=spy):
        a = mytorch.from_numpy(x.copy()).requires_grad_()
        getattr(F, loss)(a, mytorch.from_numpy(y.copy()), **kw).sum().backward()
    assert len(calls) == 2 and a.grad is not None


@pytest.mark.parametrize("loss, kw", [("smooth_l1_loss", dict(beta=0.5)),
                                      ("smooth_l1_loss", dict(beta=2.0, reduction="sum")),
                                      ("huber_loss", dict(delta=0.7)),
                                      ("huber_loss", dict(delta=1.5, reduction="none"))], ids=str)
def test_huber_fused_kernel_matches_the_piece_run_as_a_node(loss, kw):
    """The library's own huber runs as a fused kernel; any other version (here the same code,
    plugged in) runs inside as_op: same values, gradients, second derivatives, node name."""
    x, y = randn(3, 4, dtype=np.float64, seed=14) * 2, randn(3, 4, dtype=np.float64, seed=15)
    fn = lambda a, b: getattr(F, loss)(a, b, **kw)  # noqa: E731
    with fused("huber"):
        fast = run(fn, [x, y])
    with readable("huber"):
        slow = run(fn, [x, y])
    for i in range(3):
        same(fast[i], slow[i])
    assert fast[3] == slow[3]


def test_kl_div_batchmean_graph_is_torchs():
    lp = np.log(np.random.default_rng(12).dirichlet(np.ones(4), size=3))
    p = np.random.default_rng(13).dirichlet(np.ones(4), size=3)
    graphs = [_names(lib.nn.functional.kl_div(lib.from_numpy(lp.copy()).requires_grad_(),
                                              lib.from_numpy(p.copy()), reduction="batchmean"))
              for lib in (torch, mytorch)]
    assert graphs[0] == graphs[1]
