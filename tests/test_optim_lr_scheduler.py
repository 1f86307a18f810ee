"""Learning-rate schedulers against torch's: the same rates, step by step, and the same warnings."""
from __future__ import annotations

import math
import warnings

import pytest
import torch

import mytorch


def _opt(lib, cls: str = "SGD", groups: int = 2, **kw):
    ps = [lib.nn.Parameter(lib.zeros(1)) for _ in range(groups)]
    return getattr(lib.optim, cls)([{"params": [p], "lr": 0.1 * (i + 1)}
                                    for i, p in enumerate(ps)], **kw)


def _rates(lib, make, steps: int = 30, metric=None) -> list:
    opt = make(lib, None)
    sched = make(lib, opt)
    out = [list(sched.get_last_lr())]
    for k in range(steps):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(k))
        out.append(list(sched.get_last_lr()) + [g["betas"][0] if "betas" in g else g["momentum"]
                                                for g in opt.param_groups])
    return out


def _mk(cls: str, opt_cls: str = "SGD", opt_kw: dict | None = None, **kw):
    def make(lib, opt):
        if opt is None:
            return _opt(lib, opt_cls, **(opt_kw or {}))
        return getattr(lib.optim.lr_scheduler, cls)(opt, **kw)
    return make


def _seq(lib, opt):
    if opt is None:
        return _opt(lib)
    S = lib.optim.lr_scheduler
    return S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=5),
                                S.CosineAnnealingLR(opt, T_max=20, eta_min=1e-3)], milestones=[5])


def _chain(lib, opt):
    if opt is None:
        return _opt(lib)
    S = lib.optim.lr_scheduler
    return S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=4),
                               S.ExponentialLR(opt, gamma=0.9)])


def _warm_then_step(lib, opt):
    if opt is None:
        return _opt(lib)
    S = lib.optim.lr_scheduler
    return S.SequentialLR(opt, [S.ConstantLR(opt, factor=0.2, total_iters=3),
                                S.ExponentialLR(opt, gamma=0.8), S.StepLR(opt, 4, 0.5)],
                          milestones=[3, 10])


SCHEDULES = {
    "StepLR": _mk("StepLR", step_size=4, gamma=0.5),
    "MultiStepLR": _mk("MultiStepLR", milestones=[3, 7, 7, 20], gamma=0.3),
    "ExponentialLR": _mk("ExponentialLR", gamma=0.9),
    "CosineAnnealingLR": _mk("CosineAnnealingLR", T_max=10, eta_min=0.01),
    "LambdaLR": _mk("LambdaLR", lr_lambda=lambda e: 1 / (1 + e)),
    "LambdaLR per group": _mk("LambdaLR", lr_lambda=[lambda e: 0.9 ** e, lambda e: e % 3]),
    "MultiplicativeLR": _mk("MultiplicativeLR", lr_lambda=lambda e: 0.95),
    "LinearLR": _mk("LinearLR", start_factor=0.25, end_factor=0.9, total_iters=7),
    "ConstantLR": _mk("ConstantLR", factor=0.5, total_iters=4),
    "PolynomialLR": _mk("PolynomialLR", total_iters=12, power=2.0),
    "WarmRestarts": _mk("CosineAnnealingWarmRestarts", T_0=4, T_mult=2, eta_min=0.001),
    "WarmRestarts T_mult=1": _mk("CosineAnnealingWarmRestarts", T_0=5),
    "OneCycleLR": _mk("OneCycleLR", max_lr=1.0, total_steps=31),
    "OneCycleLR linear 3-phase": _mk("OneCycleLR", max_lr=[0.5, 1.0], total_steps=40,
                                     anneal_strategy="linear", three_phase=True),
    "OneCycleLR Adam betas": _mk("OneCycleLR", "Adam", max_lr=0.3, epochs=3,
                                 steps_per_epoch=11, pct_start=0.25),
    "SequentialLR warm-up+cosine": _seq,
    "SequentialLR of three": _warm_then_step,
    "ChainedScheduler": _chain,
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_rates_match_torch(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's OneCycle/Sequential internals may warn
        mine = _rates(mytorch, SCHEDULES[name])
        ref = _rates(torch, SCHEDULES[name])
    assert len(mine) == len(ref)
    for step, (a, b) in enumerate(zip(mine, ref)):
        assert a == pytest.approx(b, rel=1e-15, abs=1e-18), f"step {step}"


def test_reduce_lr_on_plateau_matches_torch() -> None:
    def metric(k):
        return [5, 4, 4, 4, 4, 3.9999, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1][k % 20]

    for kw in (dict(patience=2, factor=0.5), dict(mode="max", patience=1, cooldown=2,
                                                  threshold_mode="abs", threshold=0.5),
               dict(patience=0, min_lr=[0.05, 0.01], factor=0.1)):
        make = _mk("ReduceLROnPlateau", **kw)
        assert _rates(mytorch, make, metric=metric) == _rates(torch, make, metric=metric)


def test_scheduler_before_optimizer_warns_like_torch() -> None:
    for lib in (mytorch, torch):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                             r"`optimizer.step\(\)`"):
            sched.step()
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sched.step()
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()


def test_state_dict_resumes_the_schedule() -> None:
    S = mytorch.optim.lr_scheduler

    def build():
        opt = _opt(mytorch)
        return opt, S.SequentialLR(opt, [S.LinearLR(opt, 0.1, total_iters=3),
                                         S.CosineAnnealingLR(opt, 8)], [3])

    opt, sched = build()
    rates = []
    for k in range(12):
        opt.step()
        sched.step()
        rates.append(sched.get_last_lr())
        if k == 5:
            saved_sched, saved_opt = sched.state_dict(), opt.state_dict()
    opt2, sched2 = build()
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved_sched)
    for k in range(6, 12):
        opt2.step()
        sched2.step()
        assert sched2.get_last_lr() == rates[k]
    assert "optimizer" not in saved_sched and len(saved_sched["_schedulers"]) == 2


def test_lambda_state_dict_keeps_callable_objects_only() -> None:
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, e):
            return self.rate ** e

    opt = _opt(mytorch)
    sched = mytorch.optim.lr_scheduler.LambdaLR(opt, [Decay(), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"rate": 0.5}, None]
    sd["lr_lambdas"][0]["rate"] = 0.25
    sched.load_state_dict(sd)
    assert sched.lr_lambdas[0].rate == 0.25


def test_cosine_annealing_piece_closed_form() -> None:
    from mytorch._pieces import pieces

    assert pieces.cosine_annealing(1.0, 0.0, 0, 10) == 1.0
    assert pieces.cosine_annealing(1.0, 0.1, 10, 10) == pytest.approx(0.1)
    assert pieces.cosine_annealing(2.0, 0.0, 5, 10) == pytest.approx(1.0)
    opt = _opt(mytorch)
    sched = mytorch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    opt.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        sched.step(5)   # the closed form
    assert sched.get_last_lr() == pytest.approx([0.05, 0.1])
    assert math.isclose(sched.get_last_lr()[0], 0.05, rel_tol=1e-15)


SCHED_ERRORS = {
    "not an optimizer": lambda lib: lib.optim.lr_scheduler.StepLR(object(), 2),
    "resume without initial_lr": lambda lib: lib.optim.lr_scheduler.StepLR(_opt(lib), 2,
                                                                           last_epoch=3),
    "ConstantLR factor": lambda lib: lib.optim.lr_scheduler.ConstantLR(_opt(lib), factor=2),
    "LinearLR start": lambda lib: lib.optim.lr_scheduler.LinearLR(_opt(lib), start_factor=0),
    "LinearLR end": lambda lib: lib.optim.lr_scheduler.LinearLR(_opt(lib), end_factor=2),
    "lambdas count": lambda lib: lib.optim.lr_scheduler.LambdaLR(_opt(lib), [lambda e: 1]),
    "multiplicative not callable": lambda lib: lib.optim.lr_scheduler.MultiplicativeLR(
        _opt(lib), [1, 2]),
    "T_0": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(lib), T_0=0),
    "T_mult": lambda lib: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(_opt(lib), 2, 0),
    "OneCycle no total": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), 1.0),
    "OneCycle pct": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), 1.0, 10,
                                                                  pct_start=1.5),
    "OneCycle strategy": lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib), 1.0, 10, anneal_strategy="exp"),
    "OneCycle max_lr list": lambda lib: lib.optim.lr_scheduler.OneCycleLR(_opt(lib), [1.0], 10),
    "OneCycle too many steps": lambda lib: [s.step() for s in [
        lib.optim.lr_scheduler.OneCycleLR(_opt(lib), 1.0, 2)] for _ in range(3)],
    "OneCycle no momentum": lambda lib: lib.optim.lr_scheduler.OneCycleLR(
        _opt(lib, "Adagrad"), 1.0, 10),
    "plateau factor": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), factor=1),
    "plateau mode": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib), mode="up"),
    "plateau min_lrs": lambda lib: lib.optim.lr_scheduler.ReduceLROnPlateau(_opt(lib),
                                                                             min_lr=[0.1]),
    "sequential milestones": lambda lib: (lambda o: lib.optim.lr_scheduler.SequentialLR(
        o, [lib.optim.lr_scheduler.StepLR(o, 2)], [3]))(_opt(lib)),
    "sequential empty": lambda lib: lib.optim.lr_scheduler.SequentialLR(_opt(lib), [], []),
    "chained empty": lambda lib: lib.optim.lr_scheduler.ChainedScheduler([], _opt(lib)),
    "chained plateau": lambda lib: (lambda o: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.ReduceLROnPlateau(o)]))(_opt(lib)),
}


@pytest.mark.parametrize("name", list(SCHED_ERRORS))
def test_scheduler_errors_match_torch(name: str) -> None:
    def err(lib):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                SCHED_ERRORS[name](lib)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None

    ref = err(torch)
    assert ref is not None and err(mytorch) == ref
