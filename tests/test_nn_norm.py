"""Normalisation layers (BatchNorm, InstanceNorm, LayerNorm, RMSNorm, GroupNorm) against real PyTorch.

Same weights in both libraries → same outputs, input gradients, parameter gradients and running
statistics, in train and eval mode and after several training steps.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from nn_oracle import NN, F, compare_module
from oracle import Case, check, check_raises, randn

import mytorch


def rand_affine(c: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(c).astype(np.float32), rng.standard_normal(c).astype(np.float32)]


# ----------------------------------------------------------------------------- functional
FUNCTIONAL = [
    Case("batch_norm 2d train", lambda t, x, w, b: F(t).batch_norm(
        x, t.zeros(3), t.ones(3), w, b, training=True), [randn(4, 3), *rand_affine(3, 0)]),
    Case("batch_norm 4d train", lambda t, x, w, b: F(t).batch_norm(
        x, None, None, w, b, True, 0.1, 1e-3), [randn(2, 3, 4, 5), *rand_affine(3, 1)]),
    Case("batch_norm no affine", lambda t, x: F(t).batch_norm(x, None, None, training=True),
         [randn(5, 2, 7)]),
    Case("batch_norm eval", lambda t, x, w, b: F(t).batch_norm(
        x, t.arange(3.0), t.arange(1.0, 4.0), w, b), [randn(4, 3, 2), *rand_affine(3, 2)]),
    Case("batch_norm float64", lambda t, x: F(t).batch_norm(x, None, None, training=True),
         [randn(6, 3, dtype=np.float64)]),
    Case("instance_norm", lambda t, x, w, b: F(t).instance_norm(x, weight=w, bias=b),
         [randn(2, 3, 6), *rand_affine(3, 3)]),
    Case("instance_norm 2d", lambda t, x: F(t).instance_norm(x), [randn(2, 3, 4, 4)]),
    Case("instance_norm eval stats", lambda t, x: F(t).instance_norm(
        x, t.arange(3.0), t.arange(1.0, 4.0), use_input_stats=False), [randn(2, 3, 4)]),
    Case("layer_norm last", lambda t, x, w, b: F(t).layer_norm(x, (5,), w, b),
         [randn(3, 4, 5), *rand_affine(5, 4)]),
    Case("layer_norm list shape", lambda t, x: F(t).layer_norm(x, [5]), [randn(3, 5)]),
    Case("layer_norm two dims", lambda t, x, w: F(t).layer_norm(x, (4, 5), w, eps=1e-3),
         [randn(2, 4, 5), randn(4, 5)]),
    # layer_norm's row kernel (host float32/float64): a GPT's shapes, float64, a transposed
    # (non-contiguous) input, a bias without a weight, large offsets
    Case("layer_norm gpt rows", lambda t, x, w, b: F(t).layer_norm(x, (32,), w, b),
         [randn(4, 16, 32), *rand_affine(32, 6)]),
    Case("layer_norm float64", lambda t, x, w, b: F(t).layer_norm(x, (2, 3), w, b),
         [randn(5, 2, 3, dtype=np.float64), randn(2, 3, dtype=np.float64),
          randn(2, 3, dtype=np.float64)]),
    Case("layer_norm transposed input", lambda t, x, w: F(t).layer_norm(x.transpose(0, 1), (3,), w),
         [randn(4, 5, 3), randn(3)]),
    Case("layer_norm bias only", lambda t, x, b: F(t).layer_norm(x, (6,), None, b, eps=0.1),
         [randn(7, 6), randn(6)]),
    Case("layer_norm offset", lambda t, x: F(t).layer_norm(x + 100.0, (8,)), [randn(3, 8)],
         atol=1e-4),
    Case("rms_norm", lambda t, x, w: F(t).rms_norm(x, (5,), w), [randn(2, 3, 5), randn(5)]),
    Case("rms_norm default eps", lambda t, x: F(t).rms_norm(x * 1e-4, [4, 5]), [randn(3, 4, 5)]),
    Case("rms_norm float64", lambda t, x, w: F(t).rms_norm(x, (3,), w, eps=1e-3),
         [randn(4, 3, dtype=np.float64), randn(3, dtype=np.float64)], atol=1e-12, rtol=1e-12),
    Case("group_norm", lambda t, x, w, b: F(t).group_norm(x, 2, w, b),
         [randn(3, 4, 5), *rand_affine(4, 5)]),
    Case("group_norm 4d", lambda t, x: F(t).group_norm(x, 3), [randn(2, 6, 3, 3)]),
]


@pytest.mark.parametrize("case", FUNCTIONAL, ids=str)
def test_functional_matches_torch(case: Case) -> None:
    check(case)


def test_batch_norm_updates_running_stats_in_place() -> None:
    x = randn(8, 3, 5)
    stats = {}
    for lib in (torch, mytorch):
        rm, rv = lib.zeros(3), lib.ones(3)
        F(lib).batch_norm(lib.from_numpy(x.copy()), rm, rv, training=True, momentum=0.3)
        stats[lib.__name__] = (rm.numpy(), rv.numpy())
    np.testing.assert_allclose(stats["mytorch"][0], stats["torch"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats["mytorch"][1], stats["torch"][1], rtol=1e-5, atol=1e-6)
    # the running variance is the *unbiased* one
    unbiased = x.transpose(1, 0, 2).reshape(3, -1).var(axis=1, ddof=1)
    np.testing.assert_allclose(stats["mytorch"][1], 0.7 + 0.3 * unbiased, rtol=1e-5)


@pytest.mark.parametrize("needs", [(True, False), (False, True)], ids=["input", "params"])
def test_layer_norm_gradients_of_some_operands(needs) -> None:
    """The row kernel's backward computes only the gradients asked for, each as torch's."""
    x, (w, b) = randn(6, 10), rand_affine(10, 7)
    grads = {}
    for lib in (torch, mytorch):
        xt = lib.from_numpy(x.copy()).requires_grad_(needs[0])
        wt, bt = (lib.from_numpy(a.copy()).requires_grad_(needs[1]) for a in (w, b))
        y = F(lib).layer_norm(xt, (10,), wt, bt)
        y.backward(lib.from_numpy(randn(6, 10, seed=8)))
        grads[lib.__name__] = [None if a.grad is None else a.grad.numpy() for a in (xt, wt, bt)]
    for mine, ref in zip(grads["mytorch"], grads["torch"]):
        assert (mine is None) == (ref is None)
        if ref is not None:
            np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-5)


def test_double_backward_through_layer_norm() -> None:
    x, (w, b) = randn(4, 5), rand_affine(5, 9)
    grads = {}
    for lib in (torch, mytorch):
        xt, wt, bt = (lib.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
        y = F(lib).layer_norm(xt, (5,), wt, bt)
        gs = lib.autograd.grad((y ** 3).sum(), (xt, wt), create_graph=True)
        sum(g.pow(2).sum() for g in gs).backward()
        grads[lib.__name__] = [a.grad.numpy() for a in (xt, wt, bt)]
    for mine, ref in zip(grads["mytorch"], grads["torch"]):
        np.testing.assert_allclose(mine, ref, rtol=1e-4, atol=1e-4)


def test_double_backward_through_batch_norm() -> None:
    x = randn(4, 3)
    grads = {}
    for lib in (torch, mytorch):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        y = F(lib).batch_norm(xt, None, None, training=True)
        (g,) = lib.autograd.grad((y ** 3).sum(), xt, create_graph=True)
        g.pow(2).sum().backward()
        grads[lib.__name__] = xt.grad.numpy()
    np.testing.assert_allclose(grads["mytorch"], grads["torch"], rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- modules
MODULES = [
    ("BatchNorm1d 2d", lambda t: NN(t).BatchNorm1d(3), [randn(6, 3)]),
    ("BatchNorm1d 3d", lambda t: NN(t).BatchNorm1d(3, momentum=0.5), [randn(4, 3, 5)]),
    ("BatchNorm1d momentum None", lambda t: NN(t).BatchNorm1d(3, momentum=None), [randn(4, 3)]),
    ("BatchNorm2d", lambda t: NN(t).BatchNorm2d(4), [randn(2, 4, 3, 3)]),
    ("BatchNorm2d no affine", lambda t: NN(t).BatchNorm2d(4, affine=False), [randn(2, 4, 3, 3)]),
    ("BatchNorm2d no bias", lambda t: NN(t).BatchNorm2d(4, bias=False), [randn(2, 4, 3, 3)]),
    ("BatchNorm2d untracked", lambda t: NN(t).BatchNorm2d(4, track_running_stats=False),
     [randn(2, 4, 3, 3)]),
    ("BatchNorm3d", lambda t: NN(t).BatchNorm3d(2), [randn(2, 2, 3, 2, 2)]),
    ("InstanceNorm1d", lambda t: NN(t).InstanceNorm1d(3), [randn(2, 3, 6)]),
    ("InstanceNorm1d unbatched", lambda t: NN(t).InstanceNorm1d(3, affine=True), [randn(3, 6)]),
    ("InstanceNorm2d tracked", lambda t: NN(t).InstanceNorm2d(3, affine=True,
                                                             track_running_stats=True),
     [randn(2, 3, 4, 4)]),
    ("LayerNorm", lambda t: NN(t).LayerNorm(5), [randn(2, 3, 5)]),
    ("LayerNorm 2 dims no bias", lambda t: NN(t).LayerNorm([3, 5], bias=False), [randn(2, 3, 5)]),
    ("LayerNorm no affine", lambda t: NN(t).LayerNorm(5, elementwise_affine=False),
     [randn(4, 5)]),
    ("RMSNorm", lambda t: NN(t).RMSNorm(5), [randn(2, 3, 5)]),
    ("RMSNorm 2 dims eps", lambda t: NN(t).RMSNorm([3, 5], eps=1e-5), [randn(2, 3, 5)]),
    ("RMSNorm no affine", lambda t: NN(t).RMSNorm(5, elementwise_affine=False), [randn(4, 5)]),
    ("GroupNorm", lambda t: NN(t).GroupNorm(2, 4), [randn(3, 4, 5)]),
    ("GroupNorm no affine", lambda t: NN(t).GroupNorm(4, 4, affine=False), [randn(3, 4, 2, 2)]),
]


def _perturbed(make):
    """The layer with random (not 1/0) affine weights, so the weight gradient path is exercised."""
    def build(lib):
        layer = make(lib)
        if lib is torch:
            with torch.no_grad():
                for p in layer.parameters():
                    p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(3)))
        return layer
    return build


@pytest.mark.parametrize("name,make,inputs", MODULES, ids=[m[0] for m in MODULES])
def test_module_train_steps_and_eval(name, make, inputs) -> None:
    tmod, mmod = compare_module(_perturbed(make), inputs, steps=3, train=True)
    # then evaluation mode with the accumulated running statistics
    x = randn(*inputs[0].shape, seed=7)
    tmod.eval()
    mmod.eval()
    out_t = tmod(torch.from_numpy(x.copy()))
    out_m = mmod(mytorch.from_numpy(x.copy()))
    np.testing.assert_allclose(out_m.detach().numpy(), out_t.detach().numpy(), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("name,make,inputs", MODULES, ids=[m[0] for m in MODULES])
def test_module_eval_mode(name, make, inputs) -> None:
    compare_module(_perturbed(make), inputs, steps=1, train=False)


def test_num_batches_tracked_and_cumulative_average() -> None:
    bn = NN(mytorch).BatchNorm1d(2, momentum=None)
    batches = [randn(5, 2, seed=s) for s in range(4)]
    for b in batches:
        bn(mytorch.from_numpy(b))
    assert bn.num_batches_tracked.item() == 4 and bn.num_batches_tracked.dtype is mytorch.int64
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([b.mean(0) for b in batches], 0),
                               rtol=1e-5, atol=1e-6)


def test_eval_uses_running_stats_not_the_batch() -> None:
    bn = NN(mytorch).BatchNorm1d(2)
    bn.eval()
    x = mytorch.from_numpy(randn(4, 2) * 10 + 5)
    np.testing.assert_allclose(bn(x).detach().numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 0


def test_instance_norm_defaults_are_the_pitfall() -> None:
    layer = NN(mytorch).InstanceNorm2d(3)
    assert layer.weight is None and layer.bias is None and layer.running_mean is None
    assert list(layer.state_dict()) == []
    layer.eval()  # no running stats: eval still normalises with the input's own statistics
    x = randn(2, 3, 4, 4)
    y = layer(mytorch.from_numpy(x)).numpy()
    np.testing.assert_allclose(y.mean(axis=(2, 3)), 0, atol=1e-5)


def test_instance_norm_num_features_mismatch_warns_without_affine() -> None:
    with pytest.warns(UserWarning, match="does not match num_features"):
        NN(mytorch).InstanceNorm1d(3)(mytorch.randn(2, 4, 5))


def test_default_init_and_repr() -> None:
    for make in (lambda t: NN(t).BatchNorm2d(5), lambda t: NN(t).InstanceNorm1d(4, affine=True),
                 lambda t: NN(t).LayerNorm((2, 3)), lambda t: NN(t).GroupNorm(2, 6),
                 lambda t: NN(t).RMSNorm(4), lambda t: NN(t).RMSNorm([2, 3], 1e-5, False),
                 lambda t: NN(t).BatchNorm1d(3, momentum=None, track_running_stats=False)):
        m, t = make(mytorch), make(torch)
        assert repr(m) == repr(t)
        for (n, a), (_, b) in zip(m.state_dict().items(), t.state_dict().items(), strict=False):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=n)


ERRORS = [
    ("bn1d 4d input", lambda t: NN(t).BatchNorm1d(3)(t.randn(2, 3, 4, 4))),
    ("bn2d 3d input", lambda t: NN(t).BatchNorm2d(3)(t.randn(2, 3, 4))),
    ("bn one value per channel", lambda t: NN(t).BatchNorm1d(3)(t.randn(1, 3))),
    ("bn wrong running size", lambda t: F(t).batch_norm(t.randn(2, 3), t.zeros(4), t.ones(4),
                                                        training=True)),
    ("bn eval without stats", lambda t: F(t).batch_norm(t.randn(2, 3), None, None)),
    ("in2d 2d input", lambda t: NN(t).InstanceNorm2d(3)(t.randn(4, 5))),
    ("in affine mismatch", lambda t: NN(t).InstanceNorm1d(3, affine=True)(t.randn(2, 4, 5))),
    ("in one spatial element", lambda t: F(t).instance_norm(t.randn(2, 3, 1))),
    ("ln wrong shape", lambda t: F(t).layer_norm(t.randn(2, 3, 4), (3,))),
    ("ln int shape", lambda t: F(t).layer_norm(t.randn(2, 4), 4)),
    ("ln wrong weight", lambda t: F(t).layer_norm(t.randn(2, 4), (4,), t.ones(3))),
    ("rms wrong shape", lambda t: F(t).rms_norm(t.randn(2, 3, 4), (3,))),
    ("rms too many dims", lambda t: F(t).rms_norm(t.randn(3, 4), (2, 3, 4))),
    ("rms int shape", lambda t: F(t).rms_norm(t.randn(2, 4), 4)),
    ("rms wrong weight", lambda t: F(t).rms_norm(t.randn(2, 4), (4,), t.ones(3))),
    ("rms long input", lambda t: F(t).rms_norm(t.ones(2, 4).long(), (4,))),
    ("gn indivisible", lambda t: NN(t).GroupNorm(4, 6)),
    ("gn functional indivisible", lambda t: F(t).group_norm(t.randn(2, 3, 4), 2)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err = check_raises(fn)
    with pytest.raises(Exception) as tinfo:
        fn(torch)
    assert str(err) == str(tinfo.value)


def _rms_norm_run(lib):
    F = lib.nn.functional
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((2, 3, 4)).astype(np.float32)).requires_grad_()
    w = lib.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)).requires_grad_()
    layer = lib.nn.RMSNorm(4)
    y1, y2, y3 = F.rms_norm(x, (4,)), F.rms_norm(x, (3, 4), w, eps=1e-6), layer(x)
    (y1.sum() + (y2 * y2).sum() + y3.pow(3).sum()).backward()
    errors = []
    for args in [(x, (3,)), (x, (4,), lib.ones(3))]:
        with pytest.raises(RuntimeError) as e:
            F.rms_norm(*args)
        errors.append(str(e.value))
    return {"y1": y1, "y2": y2, "x.grad": x.grad, "w.grad": w.grad, "layer.grad": layer.weight.grad,
            "float64": F.rms_norm(x.detach().double(), (4,)),
            "text": [y1.grad_fn.name(), y2.grad_fn.name(), repr(layer), errors,
                     repr(lib.nn.RMSNorm([4], eps=1e-6, elementwise_affine=False)),
                     str(F.rms_norm(x.bfloat16(), (4,), lib.ones(4)).dtype),
                     str(F.rms_norm(x.double(), (4,), lib.ones(4)).dtype)]}


def test_rms_norm_matches_torch():
    """F.rms_norm / nn.RMSNorm (LLaMA-style blocks): torch's composite, its default eps (the
    dtype's machine epsilon), node names, repr and messages."""
    mine, ref = _rms_norm_run(mytorch), _rms_norm_run(torch)
    assert mine.pop("text") == ref.pop("text")
    for k in ref:
        np.testing.assert_allclose(mine[k].detach().numpy(), ref[k].detach().numpy(), rtol=1e-6,
                                   atol=1e-6, err_msg=k)
def test_rms_norm_is_torch_s_composition() -> None:
    """No fused node: the graph ends in torch's multiplications, and the module has no bias."""
    for lib in (mytorch, torch):
        x = lib.ones(2, 4, requires_grad=True)
        y = F(lib).rms_norm(x, (4,), lib.ones(4, requires_grad=True))
        name = y.grad_fn.name() if lib is mytorch else type(y.grad_fn).__name__
        assert name == "MulBackward0"
        assert not hasattr(NN(lib).RMSNorm(4), "bias")
