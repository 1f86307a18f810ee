"""mytorch.optim against torch.optim: the same gradients in, the same parameters out, step by step.

Each case trains two parameters (a matrix and a vector) for 25 steps in both libraries. The
gradient at every step is a fixed random tensor plus a term in the current parameter, computed in
NumPy from each library's own parameter values, so the only difference between the two runs is the
optimizer's arithmetic. Every option combination of every optimizer runs in float32 and float64,
once through the fused fast path and once through the readable reference piece where they differ.
"""
from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest
import torch

import mytorch
from mytorch._pieces import REGISTRY, activate

STEPS = 25
# float32: torch's CPU kernels fuse ``p + alpha * d`` into one rounding (FMA) where NumPy rounds
# twice, so after 25 steps parameters of size ~1 may differ by a few ulps of 1 (not of the value).
TOL = {"float32": dict(rtol=2e-6, atol=1e-6), "float64": dict(rtol=1e-13, atol=1e-14)}


def _grads(seed: int, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((3, 4)), rng.standard_normal(4)) for _ in range(steps)]


def _train(lib, cls_name: str, kwargs: dict, dtype: str, grads: list, *,
           groups: bool = False) -> tuple[list, object]:
    """Run ``STEPS`` optimizer steps; return the parameters after every step and the optimizer."""
    rng = np.random.default_rng(1)
    w0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(4)
    dt = getattr(lib, dtype)
    w = lib.nn.Parameter(lib.tensor(w0, dtype=dt))
    b = lib.nn.Parameter(lib.tensor(b0, dtype=dt))
    cls = getattr(lib.optim, cls_name)
    if groups:   # two groups, the second with its own learning rate
        opt = cls([{"params": [w]}, {"params": [b], "lr": kwargs.get("lr", 1e-3) * 0.5}], **kwargs)
    else:
        opt = cls([w, b], **kwargs)
    trace = []
    for gw, gb in grads:
        opt.zero_grad()
        for p, g in ((w, gw), (b, gb)):  # the gradient depends on the parameter, as in training
            cur = p.detach().numpy().astype(np.float64)
            p.grad = lib.tensor(g + 0.5 * cur, dtype=dt)
        opt.step()
        trace.append([w.detach().numpy().copy(), b.detach().numpy().copy()])
    return trace, opt


def _compare(cls_name: str, kwargs: dict, dtype: str, groups: bool = False) -> None:
    grads = _grads(zlib.crc32(f"{cls_name}{sorted(kwargs.items())}".encode()) % 1000, STEPS)
    mine, my_opt = _train(mytorch, cls_name, kwargs, dtype, grads, groups=groups)
    ref, ref_opt = _train(torch, cls_name, kwargs, dtype, grads, groups=groups)
    for step, (m, r) in enumerate(zip(mine, ref)):
        for a, b in zip(m, r):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b, **TOL[dtype], err_msg=f"after step {step + 1}")
    _compare_state_dicts(my_opt.state_dict(), ref_opt.state_dict(), dtype)


def _compare_state_dicts(mine: dict, ref: dict, dtype: str) -> None:
    """Same layout (ids, keys, hyper-parameters) and the same state values."""
    assert mine["param_groups"] == ref["param_groups"]
    assert list(mine["state"]) == list(ref["state"])
    for pid, st in ref["state"].items():
        assert list(mine["state"][pid]) == list(st), pid
        for key, value in st.items():
            got = mine["state"][pid][key]
            if isinstance(value, torch.Tensor):
                assert isinstance(got, mytorch.Tensor), key
                assert str(got.dtype) == str(value.dtype), key
                assert tuple(got.shape) == tuple(value.shape), key
                scale = float(np.abs(value.numpy()).max()) if value.numel() else 0.0
                rtol = TOL[dtype]["rtol"]   # sums of cancelling terms: absolute to the scale
                np.testing.assert_allclose(got.numpy(), value.numpy(), rtol=rtol,
                                           atol=10 * rtol * scale, err_msg=key)
            else:
                assert got == value, key


def _combos(**options: list) -> list[dict]:
    names = list(options)
    return [dict(zip(names, values)) for values in itertools.product(*options.values())]


SGD_CASES = [c for c in _combos(lr=[0.05], momentum=[0, 0.9], dampening=[0, 0.3],
                                nesterov=[False, True], weight_decay=[0, 0.1],
                                maximize=[False, True])
             if not (c["nesterov"] and (c["momentum"] == 0 or c["dampening"] != 0))]
ADAM_CASES = _combos(lr=[0.02], amsgrad=[False, True], weight_decay=[0, 0.1],
                     maximize=[False, True])
CASES = (
    [("SGD", c) for c in SGD_CASES]
    + [("Adam", c) for c in ADAM_CASES] + [("Adam", dict(lr=0.02, betas=(0.5, 0.6), eps=1e-3))]
    + [("AdamW", c) for c in ADAM_CASES]
    + [("RMSprop", c) for c in _combos(lr=[0.01], centered=[False, True], momentum=[0, 0.5],
                                      weight_decay=[0, 0.1], maximize=[False, True])]
    + [("Adagrad", c) for c in _combos(lr=[0.1], lr_decay=[0, 0.05], weight_decay=[0, 0.1],
                                      initial_accumulator_value=[0, 0.5],
                                      maximize=[False, True])]
    + [("Adadelta", c) for c in _combos(lr=[1.0, 0.5], weight_decay=[0, 0.1], rho=[0.9],
                                       maximize=[False, True])]
    + [("Adamax", c) for c in _combos(lr=[0.02], weight_decay=[0, 0.1], maximize=[False, True])]
)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls_name,kwargs", CASES,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in c.items())}"
                              for n, c in CASES])
def test_matches_torch(cls_name: str, kwargs: dict, dtype: str) -> None:
    _compare(cls_name, kwargs, dtype)


@pytest.fixture
def reference_pieces():
    """Run the readable reference pieces instead of their fused fast paths."""
    for name in ("sgd_step", "adam_step"):
        activate(name, REGISTRY[name].reference)
    yield
    for name in ("sgd_step", "adam_step"):
        activate(name, None)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls_name,kwargs", [
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.02, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.02, amsgrad=True))])
def test_reference_pieces_match_torch(reference_pieces, cls_name: str, kwargs: dict,
                                      dtype: str) -> None:
    assert REGISTRY["sgd_step"].fast is not None
    _compare(cls_name, kwargs, dtype)


@pytest.mark.parametrize("cls_name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                             ("Adam", dict(lr=0.01)),
                                             ("RMSprop", dict(lr=0.01, momentum=0.3))])
def test_param_groups_with_their_own_lr(cls_name: str, kwargs: dict) -> None:
    _compare(cls_name, kwargs, "float64", groups=True)


def test_fast_path_equals_reference_on_large_tensors() -> None:
    """Several 64K blocks, an odd tail: the fused kernels agree with the pieces exactly enough."""
    rng = np.random.default_rng(0)
    n = (1 << 16) * 2 + 123
    for name, kw, nstate in (
            ("sgd_step", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01,
                              nesterov=False, maximize=True), 1),
            ("adam_step", dict(lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1,
                               amsgrad=True, maximize=False, decoupled_weight_decay=False), 3)):
        p = REGISTRY[name]
        outs = []
        for fn in (p.reference, p.fast):
            param = mytorch.tensor(rng.standard_normal(n, dtype=np.float32) if not outs
                                   else start)
            start = param.numpy().copy() if not outs else start
            states = [mytorch.zeros(n) for _ in range(nstate)]
            for k in range(3):
                g = mytorch.tensor(np.random.default_rng(k).standard_normal(n, dtype=np.float32))
                with mytorch.no_grad():
                    if name == "sgd_step":
                        states[0] = fn(param, g, None if k == 0 else states[0], **kw)
                    else:
                        fn(param, g, *states, k + 1, **kw)
            outs.append(param.numpy().copy())
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6, atol=1e-7, err_msg=name)


def test_fast_path_falls_back_for_strided_params() -> None:
    w = mytorch.zeros(4, 6)[:, ::2]            # not contiguous: the reference runs
    w.requires_grad_()
    opt = mytorch.optim.SGD([w], lr=1.0, momentum=0.5)
    w.grad = mytorch.ones(4, 3)
    opt.step()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), -2.5 * np.ones((4, 3)))


# ---------------------------------------------------------------------------------- L-BFGS
def _rosenbrock_run(lib, dtype: str, line_search: str | None, steps: int = 4) -> list:
    dt = getattr(lib, dtype)
    x = lib.tensor([-1.5, 2.0, 0.5], dtype=dt, requires_grad=True)
    opt = lib.optim.LBFGS([x], lr=1 if line_search else 0.05, max_iter=10, history_size=4,
                          line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = ((1 - x[:-1]) ** 2).sum() + 10 * ((x[1:] - x[:-1] ** 2) ** 2).sum()
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        out.append((float(loss.detach()), x.detach().numpy().copy(), opt.state[x]["func_evals"],
                    opt.state[x]["n_iter"]))
    return out


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search: str | None) -> None:
    mine = _rosenbrock_run(mytorch, "float64", line_search)
    ref = _rosenbrock_run(torch, "float64", line_search)
    for (lm, xm, em, nm), (lr, xr, er, nr) in zip(mine, ref):
        assert (em, nm) == (er, nr)
        assert math.isclose(lm, lr, rel_tol=1e-10)
        np.testing.assert_allclose(xm, xr, rtol=1e-9, atol=1e-12)


def test_lbfgs_float32_and_groups() -> None:
    mine = _rosenbrock_run(mytorch, "float32", "strong_wolfe", steps=2)
    ref = _rosenbrock_run(torch, "float32", "strong_wolfe", steps=2)
    np.testing.assert_allclose(mine[-1][1], ref[-1][1], rtol=1e-4, atol=1e-5)
    a, b = mytorch.zeros(2, requires_grad=True), mytorch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        mytorch.optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt = mytorch.optim.LBFGS([a], line_search_fn="armijo")
        opt.step(lambda: (a - 1).pow(2).sum().backward() or (a - 1).pow(2).sum())
