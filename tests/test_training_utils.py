"""Chapter 10's library parts against torch: gradient norms and clipping, the plateau rule,
weight averaging (``optim.swa_utils``)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import mytorch
from mytorch.nn.utils.clip_grad import scale_grads_, total_norm
from mytorch.optim.lr_scheduler import is_improvement
from mytorch.optim.swa_utils import average_into_


def _arrays(seed=0):
    g = np.random.default_rng(seed)
    return [g.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,), (2, 2, 2))]


def _params(lib, arrays, scale=1.0):
    ps = []
    for a in arrays:
        p = lib.from_numpy(a.copy()).requires_grad_()
        p.grad = lib.from_numpy((a * scale).copy())
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf, 0.0, -math.inf, 0.5])
def test_get_total_norm_matches_torch(norm_type):
    a = _arrays()
    got = mytorch.nn.utils.get_total_norm([mytorch.from_numpy(x) for x in a], norm_type)
    want = torch.nn.utils.get_total_norm([torch.from_numpy(x) for x in a], norm_type)
    assert got.shape == want.shape and got.dtype == mytorch.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6)


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, math.inf),
                                                 (2.0, 1.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    a = _arrays(1)
    mine, ref = _params(mytorch, a, 3.0), _params(torch, a, 3.0)
    grads = [p.grad for p in mine]
    t_mine = mytorch.nn.utils.clip_grad_norm_(mine, max_norm, norm_type)
    t_ref = torch.nn.utils.clip_grad_norm_(ref, max_norm, norm_type)
    np.testing.assert_allclose(t_mine.numpy(), t_ref.numpy(), rtol=2e-6)
    for p, q, g in zip(mine, ref, grads):
        assert p.grad is g  # in place: the optimizer holds these very tensors
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-6, atol=1e-7)


def test_split_clipping_matches_torch():
    a = _arrays(2)
    mine, ref = _params(mytorch, a, 5.0), _params(torch, a, 5.0)
    n_mine = mytorch.nn.utils.get_total_norm([p.grad for p in mine])
    n_ref = torch.nn.utils.get_total_norm([p.grad for p in ref])
    mytorch.nn.utils.clip_grads_with_norm_(mine, 1.0, n_mine)
    torch.nn.utils.clip_grads_with_norm_(ref, 1.0, n_ref)
    for p, q in zip(mine, ref):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-6, atol=1e-7)
    # no gradients at all: nothing to do, and a zero norm
    assert mytorch.nn.utils.get_total_norm([]).item() == torch.nn.utils.get_total_norm([]).item()
    mytorch.nn.utils.clip_grads_with_norm_([mytorch.zeros(2, requires_grad=True)], 1.0,
                                           mytorch.tensor(3.0))


def test_nonfinite_norm_error_matches_torch():
    a = [np.array([1.0, np.nan], np.float32)]
    with pytest.raises(RuntimeError) as e1:
        mytorch.nn.utils.clip_grad_norm_(_params(mytorch, a), 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as e2:
        torch.nn.utils.clip_grad_norm_(_params(torch, a), 1.0, error_if_nonfinite=True)
    assert str(e1.value) == str(e2.value)


def test_norm_helpers_directly():
    xs = [mytorch.tensor([3.0, -4.0]), mytorch.tensor([[12.0]])]
    assert total_norm(xs, 2.0).item() == pytest.approx(13.0)
    assert total_norm(xs, 1.0).item() == pytest.approx(19.0)
    assert total_norm(xs, math.inf).item() == 12.0
    assert total_norm(xs, 2.0).dim() == 0
    g = [mytorch.tensor([3.0, 4.0])]
    scale_grads_(g, 1.0, mytorch.tensor(5.0))
    np.testing.assert_allclose(g[0].numpy(), [0.6, 0.8], rtol=1e-5)
    g = [mytorch.tensor([0.3, 0.4])]
    scale_grads_(g, 1.0, mytorch.tensor(0.5))  # below max_norm: never scaled up
    np.testing.assert_allclose(g[0].numpy(), [0.3, 0.4])


# ----------------------------------------------------------------------------- plateau rule
@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("threshold_mode", ["rel", "abs"])
def test_is_improvement_matches_torch(mode, threshold_mode):
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    ref = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, threshold=0.1,
                                                     threshold_mode=threshold_mode)
    for best in (10.0, -10.0, 0.0, math.inf, -math.inf):
        for a in (8.9, 9.0, 9.05, 10.0, 11.0, 11.05, -9.0, -11.5, 0.0, 0.2, -0.2):
            assert is_improvement(a, best, mode, 0.1, threshold_mode) == ref._is_better(a, best)


def test_reduce_lr_on_plateau_runs_on_the_rule():
    def lrs(lib):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=1,
                                                          factor=0.5, threshold=0.01)
        out = []
        for acc in (0.5, 0.6, 0.605, 0.606, 0.7, 0.7, 0.69, 0.71, 0.71, 0.71):
            opt.step()
            sched.step(acc)
            out.append((opt.param_groups[0]["lr"], sched.num_bad_epochs, sched.best))
        return out

    assert lrs(mytorch) == lrs(torch)


# ----------------------------------------------------------------------------- weight averaging
def _net(lib, bn=False):
    g = np.random.default_rng(3)
    layers = [lib.nn.Linear(3, 4)] + ([lib.nn.BatchNorm1d(4)] if bn else []) + \
        [lib.nn.ReLU(), lib.nn.Linear(4, 2)]
    net = lib.nn.Sequential(*layers)
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.from_numpy(g.standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


def _train_and_average(lib, make_avg, use_buffers=False, steps=5):
    net = _net(lib, bn=True)
    avg = make_avg(lib, net)
    opt = lib.optim.SGD(net.parameters(), lr=0.1)
    x = lib.from_numpy(np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3))
    for _ in range(steps):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
        avg.update_parameters(net)
    sd = {k: v.detach().numpy().copy() for k, v in avg.state_dict().items()}
    return sd, avg(x).detach().numpy()


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_single", "swa_single", "buffers"])
def test_averaged_model_matches_torch(kind):
    def make(lib, net):
        S = lib.optim.swa_utils
        kw = {"swa": {}, "ema_multi": {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)},
              "ema_single": {"avg_fn": S.get_ema_avg_fn(0.8)},
              "swa_single": {"avg_fn": S.get_swa_avg_fn()},
              "buffers": {"use_buffers": True, "multi_avg_fn": S.get_ema_multi_avg_fn(0.5)}}[kind]
        return S.AveragedModel(net, **kw)

    (sd_m, out_m), (sd_t, out_t) = _train_and_average(mytorch, make), \
        _train_and_average(torch, make)
    assert list(sd_m) == list(sd_t)
    for k in sd_m:
        np.testing.assert_allclose(sd_m[k], sd_t[k], rtol=1e-5, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(out_m, out_t, rtol=1e-5, atol=1e-6)


def test_update_bn_and_swalr_match_torch():
    def run(lib):
        net = _net(lib, bn=True)
        avg = lib.optim.swa_utils.AveragedModel(net)
        avg.update_parameters(net)
        x = lib.from_numpy(np.linspace(-2, 3, 30, dtype=np.float32).reshape(10, 3))
        loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(x), batch_size=4)
        lib.optim.swa_utils.update_bn(loader, avg)
        bn = avg.module[1]
        opt = lib.optim.SGD(net.parameters(), lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3)
        lrs = []
        for _ in range(6):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        lin = lib.optim.swa_utils.SWALR(lib.optim.SGD(net.parameters(), lr=1.0), swa_lr=0.1,
                                        anneal_epochs=2, anneal_strategy="linear")
        return (bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                int(bn.num_batches_tracked), lrs, lin.get_last_lr())

    m, t = run(mytorch), run(torch)
    np.testing.assert_allclose(m[0], t[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m[1], t[1], rtol=1e-5, atol=1e-6)
    assert m[2] == t[2]
    np.testing.assert_allclose(m[3], t[3], rtol=1e-12)
    np.testing.assert_allclose(m[4], t[4], rtol=1e-12)


def test_swa_errors_match_torch():
    for lib in (mytorch, torch):
        with pytest.raises(ValueError, match="Invalid decay value"):
            lib.optim.swa_utils.get_ema_multi_avg_fn(1.5)
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        with pytest.raises(ValueError, match="anneal_strategy must be one of"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="exp")


def test_average_helper_directly():
    avg, cur = [mytorch.tensor([1.0, 2.0])], [mytorch.tensor([4.0, 8.0])]
    average_into_(avg, cur, 2, None)          # the mean of (x, x, 4) where x is the old mean
    np.testing.assert_allclose(avg[0].numpy(), [2.0, 4.0])
    average_into_(avg, cur, 0, 0.75)
    np.testing.assert_allclose(avg[0].numpy(), [2.5, 5.0])
