"""Small nn pieces that torch code reaches for, against real PyTorch: ``init.eye_/dirac_/orthogonal_``,
``F.normalize``, ``F.logsigmoid``/``nn.LogSigmoid``, gradient clipping, parameters as one vector,
the legacy ``register_backward_hook``, ``modules(remove_duplicate=...)`` and ``set_submodule``."""
from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest
import torch
from nn_oracle import NN, F, copy_state
from oracle import Case, as_numpy, check, check_raises, randn

import mytorch

LIBS = [mytorch, torch]


# ----------------------------------------------------------------------------- init
@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2)], ids=str)
def test_eye_matches_torch(shape):
    mine, ref = mytorch.nn.init.eye_(mytorch.empty(*shape)), torch.nn.init.eye_(torch.empty(*shape))
    np.testing.assert_array_equal(as_numpy(mine), as_numpy(ref))


@pytest.mark.parametrize("shape,groups", [((4, 2, 3), 1), ((4, 6, 3, 3), 1), ((2, 3, 3, 3), 1),
                                          ((6, 2, 3, 4), 3), ((4, 4, 3, 3, 3), 2)], ids=str)
def test_dirac_matches_torch(shape, groups):
    mine = mytorch.nn.init.dirac_(mytorch.randn(*shape), groups)
    ref = torch.nn.init.dirac_(torch.randn(*shape), groups)
    np.testing.assert_array_equal(as_numpy(mine), as_numpy(ref))


def test_dirac_weight_makes_conv_the_identity():
    conv = mytorch.nn.Conv2d(3, 3, 3, padding=1, bias=False)
    mytorch.nn.init.dirac_(conv.weight)
    x = mytorch.randn(2, 3, 5, 5)
    np.testing.assert_allclose(as_numpy(conv(x)), as_numpy(x), atol=1e-6)


INIT_ERRORS = {
    "eye_1d": lambda t: t.nn.init.eye_(t.empty(3)),
    "dirac_2d": lambda t: t.nn.init.dirac_(t.empty(3, 3)),
    "dirac_groups": lambda t: t.nn.init.dirac_(t.empty(3, 3, 3), 2),
    "orthogonal_1d": lambda t: t.nn.init.orthogonal_(t.empty(3)),
}


@pytest.mark.parametrize("fn", INIT_ERRORS.values(), ids=INIT_ERRORS.keys())
def test_init_errors_match_torch(fn):
    err = check_raises(fn)
    with pytest.raises(type(err)) as ref:
        fn(torch)
    assert str(err) == str(ref.value)


@pytest.mark.parametrize("shape,gain", [((4, 4), 1.0), ((3, 7), 2.0), ((7, 3), 0.5),
                                        ((6, 2, 2, 2), 1.0)], ids=str)
def test_orthogonal_is_orthogonal(shape, gain):
    w = mytorch.empty(*shape, requires_grad=True)
    assert mytorch.nn.init.orthogonal_(w, gain) is w and w.grad_fn is None
    m = as_numpy(w).reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(len(gram)), atol=1e-5)


def _orthogonal_stats(lib, n: int = 3, draws: int = 3000) -> np.ndarray:
    lib.manual_seed(0)
    w = lib.empty(n, n)
    first, dets, traces = [], [], []
    for _ in range(draws):
        q = as_numpy(lib.nn.init.orthogonal_(w)).astype(np.float64)
        first.append(q[0, 0])
        dets.append(np.linalg.det(q))
        traces.append(np.trace(q))
    first = np.array(first)
    return np.array([first.mean(), (first ** 2).mean(), np.mean(np.array(dets) > 0),
                     np.mean(traces), np.mean(np.square(traces))])


def test_orthogonal_distribution_matches_torch():
    """Same (Haar) distribution as torch, not the same numbers: an entry has mean 0 and variance
    1/n, det is ±1 half the time each, the trace has mean 0 and second moment 1."""
    mine, ref = _orthogonal_stats(mytorch), _orthogonal_stats(torch)
    np.testing.assert_allclose(mine, ref, atol=0.06)
    np.testing.assert_allclose(mine, [0, 1 / 3, 0.5, 0, 1], atol=0.08)


def test_orthogonal_uses_the_generator():
    a = mytorch.nn.init.orthogonal_(mytorch.empty(3, 3), generator=mytorch.Generator().manual_seed(1))
    b = mytorch.nn.init.orthogonal_(mytorch.empty(3, 3), generator=mytorch.Generator().manual_seed(1))
    assert mytorch.equal(a, b)
    assert mytorch.nn.init.orthogonal_(mytorch.empty(0, 3)).shape == (0, 3)


# ----------------------------------------------------------------------------- functions
FUNCTIONS = [
    Case("normalize", lambda t, x: F(t).normalize(x), [randn(4, 5)]),
    Case("normalize p=1 dim=0", lambda t, x: F(t).normalize(x, p=1, dim=0), [randn(4, 5)]),
    Case("normalize p=inf dim=-1", lambda t, x: F(t).normalize(x, p=math.inf, dim=-1), [randn(3, 4)]),
    Case("normalize zero rows", lambda t, x: F(t).normalize(x * t.tensor([[0.0], [1.0]])),
         [randn(2, 3)]),
    Case("normalize 3d float64", lambda t, x: F(t).normalize(x, dim=2), [randn(2, 3, 4, dtype=np.float64)]),
    Case("logsigmoid", lambda t, x: F(t).logsigmoid(x), [randn(4, 5) * 5]),
    Case("logsigmoid extreme", lambda t, x: F(t).logsigmoid(x),
         [np.array([-1e4, -200.0, -30.0, 0.0, 30.0, 200.0, 1e4], np.float32)]),
    Case("logsigmoid float64", lambda t, x: F(t).logsigmoid(x), [randn(6, dtype=np.float64)]),
    Case("LogSigmoid module", lambda t, x: NN(t).LogSigmoid()(x), [randn(2, 3)]),
]


@pytest.mark.parametrize("case", FUNCTIONS, ids=str)
def test_functions_match_torch(case):
    check(case)


def test_normalize_out_and_errors():
    x = randn(3, 4)
    outs = []
    for lib in LIBS:
        out = lib.empty(3, 4)
        res = F(lib).normalize(lib.from_numpy(x.copy()), out=out)
        assert res is out
        outs.append(as_numpy(out))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)
    check_raises(lambda t: F(t).normalize(t.ones(3), dim=1))
    check_raises(lambda t: F(t).logsigmoid(t.ones(3, dtype=t.int64)))


def test_logsigmoid_gradient_at_zero_is_one_half():
    x = mytorch.zeros(1, requires_grad=True)
    mytorch.nn.functional.logsigmoid(x).sum().backward()
    assert x.grad.tolist() == [0.5]
    assert repr(mytorch.nn.LogSigmoid()) == repr(torch.nn.LogSigmoid())


# ----------------------------------------------------------------------------- clipping
def _model_with_grads(lib):
    return lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Linear(3, 2))


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"], ids=str)
@pytest.mark.parametrize("max_norm", [0.1, 1e6])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    tm, mm = _model_with_grads(torch), _model_with_grads(mytorch)
    copy_state(mm, tm)
    x = randn(5, 4) * 3
    for lib, m in ((torch, tm), (mytorch, mm)):
        m(lib.from_numpy(x.copy())).square().sum().backward()
    t_total = torch.nn.utils.clip_grad_norm_(tm.parameters(), max_norm, norm_type)
    m_total = mytorch.nn.utils.clip_grad_norm_(mm.parameters(), max_norm, norm_type,
                                               foreach=True)
    np.testing.assert_allclose(as_numpy(m_total), as_numpy(t_total), rtol=1e-4)
    assert m_total.shape == t_total.shape and str(m_total.dtype) == str(t_total.dtype)
    for a, b in zip(mm.parameters(), tm.parameters()):
        np.testing.assert_allclose(as_numpy(a.grad), as_numpy(b.grad), rtol=1e-4, atol=1e-6)


def test_clip_grad_norm_edge_cases():
    for lib in LIBS:
        p = lib.nn.Parameter(lib.ones(3))
        assert float(lib.nn.utils.clip_grad_norm_(p, 1.0)) == 0.0  # no gradient yet
        p.grad = lib.tensor([3.0, 4.0, 0.0])
        total = lib.nn.utils.clip_grad_norm_(p, 1.0)  # a single tensor
        assert abs(float(total) - 5.0) < 1e-6 and abs(float(p.grad.norm()) - 1.0) < 1e-5
        p.grad = lib.tensor([float("inf"), 1.0, 0.0])
        with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
            lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        with pytest.warns(UserWarning, match="empty generator"):
            lib.nn.utils.clip_grad_norm_((q for q in []), 1.0)
    err = check_raises(lambda t: t.nn.utils.clip_grad_norm_(
        [_with_grad(t, [float("nan")])], 1.0, error_if_nonfinite=True))
    assert str(err).startswith("The total norm of order 2.0 for gradients")


def _with_grad(lib, values):
    p = lib.nn.Parameter(lib.zeros(len(values)))
    p.grad = lib.tensor(values)
    return p


def test_clip_grad_value_matches_torch():
    values = [-3.0, -0.5, 0.25, 2.5]
    res = []
    for lib in LIBS:
        ps = [_with_grad(lib, values), lib.nn.Parameter(lib.ones(2))]  # the second has no grad
        assert lib.nn.utils.clip_grad_value_(ps, 1.0) is None
        assert ps[1].grad is None
        res.append(ps[0].grad.tolist())
    assert res[0] == res[1] == [-1.0, -0.5, 0.25, 1.0]


# ----------------------------------------------------------------------------- vectors
def test_parameters_to_vector_and_back_match_torch():
    tm, mm = _model_with_grads(torch), _model_with_grads(mytorch)
    copy_state(mm, tm)
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    mv = mytorch.nn.utils.parameters_to_vector(mm.parameters())
    np.testing.assert_array_equal(as_numpy(mv), as_numpy(tv))
    assert mv.grad_fn is not None  # still part of the graph, like torch's
    new = np.arange(tv.numel(), dtype=np.float32)
    torch.nn.utils.vector_to_parameters(torch.from_numpy(new.copy()), tm.parameters())
    vec = mytorch.from_numpy(new.copy())
    weight = mm[0].weight
    mytorch.nn.utils.vector_to_parameters(vec, mm.parameters())
    assert mm[0].weight is weight  # same Parameter object, new data
    for a, b in zip(mm.parameters(), tm.parameters()):
        np.testing.assert_array_equal(as_numpy(a), as_numpy(b))
    err = check_raises(lambda t: t.nn.utils.vector_to_parameters([1.0], []))
    assert str(err) == "expected torch.Tensor, but got: list"


def test_parameters_on_two_devices_are_refused():
    mytorch.cuda.simulate(True)
    try:
        ps = [mytorch.nn.Parameter(mytorch.ones(2)), mytorch.nn.Parameter(mytorch.ones(2).cuda())]
        with pytest.raises(TypeError, match="Found two parameters on different devices"):
            mytorch.nn.utils.parameters_to_vector(ps)
    finally:
        mytorch.cuda.simulate(False)


# ----------------------------------------------------------------------------- Module API
def _hooked_runs(lib):
    """Legacy hooks on a one-op module (ReLU) and a module with more nodes (x * w)."""
    out = []
    relu = lib.nn.ReLU()
    relu.register_backward_hook(lambda m, gi, go: out.append(
        ("relu", [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go])))
    a = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)

    class Scale(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.tensor([2.0, 3.0]))

        def forward(self, x):
            return x * self.w

    scale = Scale()
    scale.register_backward_hook(lambda m, gi, go: out.append(
        ("scale", [g.tolist() for g in gi], [g.tolist() for g in go])))
    scale.register_backward_hook(lambda m, gi, go: (gi[0] * 10, gi[1]))  # replaces grad_input
    x = lib.tensor([1.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (relu(a * 2) * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        out.append([str(w.message) for w in caught])
        scale(x).sum().backward()
    out.append([(w.category.__name__, str(w.message)) for w in caught])
    out.append(x.grad.tolist())
    return out, scale


def test_register_backward_hook_matches_torch():
    (mine, scale), (ref, _) = _hooked_runs(mytorch), _hooked_runs(torch)
    assert mine == ref
    assert mine[-2][0][0] == "FutureWarning"  # more than one node: torch warns
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
        scale.register_full_backward_hook(lambda *args: None)
    lin = mytorch.nn.Linear(2, 2)
    lin.register_full_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
        lin.register_backward_hook(lambda *args: None)


def test_modules_remove_duplicate_matches_torch():
    res = []
    for lib in LIBS:
        shared = lib.nn.Linear(2, 2)
        net = lib.nn.Sequential(shared, lib.nn.ReLU(), shared)
        res.append((len(list(net.modules())), len(list(net.modules(remove_duplicate=False))),
                    [n for n, _ in net.named_modules(remove_duplicate=False)],
                    [n for n, _ in net.named_modules()]))
        assert isinstance(net.modules(), types.GeneratorType)
    assert res[0] == res[1]
    assert res[0][:2] == (3, 4)


SET_SUBMODULE = {
    "replace": lambda t, net: net.set_submodule("0", t.nn.Tanh()),
    "nested": lambda t, net: net.set_submodule("2.0", t.nn.Sigmoid()),
    "add_new": lambda t, net: net.set_submodule("5", t.nn.Tanh()),
    "strict_existing": lambda t, net: net.set_submodule("1", t.nn.Tanh(), strict=True),
}


def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.Sequential(lib.nn.ReLU()))


@pytest.mark.parametrize("fn", SET_SUBMODULE.values(), ids=SET_SUBMODULE.keys())
def test_set_submodule_matches_torch(fn):
    reprs = []
    for lib in LIBS:
        net = _net(lib)
        assert fn(lib, net) is None
        reprs.append(repr(net))
    assert reprs[0] == reprs[1]


SET_SUBMODULE_ERRORS = {
    "empty_target": lambda t: _net(t).set_submodule("", t.nn.ReLU()),
    "not_a_module": lambda t: _net(t).set_submodule("0", 3),
    "strict_missing": lambda t: _net(t).set_submodule("7", t.nn.ReLU(), strict=True),
    "parameter": lambda t: _net(t).set_submodule("0.weight", t.nn.ReLU()),
    "missing_parent": lambda t: _net(t).set_submodule("x.y", t.nn.ReLU()),
}


@pytest.mark.parametrize("fn", SET_SUBMODULE_ERRORS.values(), ids=SET_SUBMODULE_ERRORS.keys())
def test_set_submodule_errors_match_torch(fn):
    err = check_raises(fn)
    with pytest.raises(Exception) as ref:
        fn(torch)
    assert str(err) == str(ref.value)


@pytest.mark.parametrize("case", [
    Case("torch.softmax", lambda t, x: t.softmax(x, 1), [randn(3, 4)]),
    Case("torch.log_softmax-dtype", lambda t, x: t.log_softmax(x, 0, dtype=t.float64), [randn(3, 4)]),
    Case("Tensor.softmax", lambda t, x: x.softmax(-1), [randn(2, 3, 4)]),
    Case("Tensor.log_softmax-kw", lambda t, x: x.log_softmax(dim=1), [randn(2, 5)]),
], ids=lambda c: c.name)
def test_softmax_as_torch_function_and_tensor_method(case):
    check(case)


def _spatial_transform(lib, mode, padding_mode, align_corners):
    F = lib.nn.functional
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((2, 3, 5, 6)).astype(np.float32)).requires_grad_()
    theta = lib.from_numpy((np.array([[1.1, 0.2, 0.1], [-0.1, 0.9, 0.3]])
                            + rng.standard_normal((2, 2, 3)) * 0.3).astype(np.float32))
    theta.requires_grad_()
    grid = F.affine_grid(theta, [2, 3, 4, 7], align_corners=align_corners)
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    g = lib.from_numpy(rng.standard_normal(tuple(out.shape)).astype(np.float32))
    (out * g).sum().backward()
    return ([grid.detach().numpy(), out.detach().numpy(), x.grad.numpy(), theta.grad.numpy()],
            [grid.grad_fn.name(), out.grad_fn.name()])


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_grid_sample_match_torch(mode, padding_mode, align_corners):
    """The spatial transformer tutorial's two functions: values and gradients (input and theta)."""
    mine, ref = (_spatial_transform(lib, mode, padding_mode, align_corners)
                 for lib in (mytorch, torch))
    for m, r in zip(mine[0], ref[0], strict=True):
        np.testing.assert_allclose(m, r, rtol=1e-5, atol=2e-5)
    assert mine[1] == ref[1]


def test_grid_sample_checks_and_warnings_match_torch():
    got = []
    for lib in (mytorch, torch):
        F = lib.nn.functional
        x, theta = lib.ones(2, 1, 3, 3), lib.eye(2, 3).expand(2, 2, 3)
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            grid = F.affine_grid(theta, [2, 1, 3, 3])
        with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
            F.grid_sample(x, grid)
        errors = []
        for bad in [lambda: F.grid_sample(x, grid, mode="area", align_corners=False),
                    lambda: F.grid_sample(x, grid, padding_mode="wrap", align_corners=False),
                    lambda: F.grid_sample(x[:1], grid, align_corners=False),
                    lambda: F.grid_sample(x, grid[..., :1], align_corners=False),
                    lambda: F.affine_grid(theta[:, :1], [2, 1, 3, 3], align_corners=False),
                    lambda: F.affine_grid(theta.long(), [2, 1, 3, 3], align_corners=False)]:
            with pytest.raises((ValueError, RuntimeError)) as e:
                bad()
            errors.append((e.type.__name__, str(e.value)))
        got.append(errors)
    assert got[0] == got[1]
