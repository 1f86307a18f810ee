"""The Optimizer machinery against torch: groups, defaults, errors, hooks, zero_grad, state dicts."""
from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import mytorch


def _params(lib, n: int = 3):
    return [lib.nn.Parameter(lib.ones(2, 2) * (i + 1)) for i in range(n)]


def _error(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(lib)
    except Exception as e:  # noqa: BLE001 - comparing what each library raises
        return type(e).__name__, str(e)
    return None


BAD = {
    "negative lr": lambda lib: lib.optim.SGD(_params(lib), lr=-0.1),
    "negative momentum": lambda lib: lib.optim.SGD(_params(lib), momentum=-1),
    "negative weight decay": lambda lib: lib.optim.SGD(_params(lib), weight_decay=-1),
    "nesterov without momentum": lambda lib: lib.optim.SGD(_params(lib), nesterov=True),
    "nesterov with dampening": lambda lib: lib.optim.SGD(_params(lib), momentum=0.9,
                                                         nesterov=True, dampening=0.1),
    "tensor lr of 2 elements": lambda lib: lib.optim.SGD(_params(lib), lr=lib.tensor([1., 2.])),
    "fused and foreach": lambda lib: lib.optim.SGD(_params(lib), fused=True, foreach=True),
    "param in two groups": lambda lib: (lambda p: lib.optim.SGD(
        [{"params": p[:2]}, {"params": p[1:]}]))(_params(lib)),
    "non-leaf": lambda lib: lib.optim.SGD([_params(lib)[0] * 2]),
    "empty": lambda lib: lib.optim.SGD([]),
    "a tensor, not a list": lambda lib: lib.optim.SGD(_params(lib)[0]),
    "an int": lambda lib: lib.optim.SGD([1]),
    "a set inside a group": lambda lib: lib.optim.SGD([{"params": set(_params(lib))}]),
    "group not a dict": lambda lib: lib.optim.SGD(_params(lib)).add_param_group([1]),
    "some names missing": lambda lib: lib.optim.SGD([("a", _params(lib)[0]), _params(lib)[1]]),
    "named and unnamed groups": lambda lib: lib.optim.SGD(
        [{"params": [("a", _params(lib)[0])]}, {"params": [_params(lib)[1]]}]),
    "Adam bad beta": lambda lib: lib.optim.Adam(_params(lib), betas=(1.0, 0.9)),
    "Adam bad beta2": lambda lib: lib.optim.Adam(_params(lib), betas=(0.9, -0.1)),
    "Adam int betas": lambda lib: lib.optim.Adam(_params(lib), betas=(0, 0.9)),
    "Adam bad eps": lambda lib: lib.optim.Adam(_params(lib), eps=-1),
    "AdamW bad wd": lambda lib: lib.optim.AdamW(_params(lib), weight_decay=-1),
    "RMSprop bad alpha": lambda lib: lib.optim.RMSprop(_params(lib), alpha=-1),
    "Adagrad bad lr_decay": lambda lib: lib.optim.Adagrad(_params(lib), lr_decay=-1),
    "Adagrad bad initial": lambda lib: lib.optim.Adagrad(_params(lib),
                                                         initial_accumulator_value=-1),
    "Adadelta bad rho": lambda lib: lib.optim.Adadelta(_params(lib), rho=1.5),
    "Adamax bad beta": lambda lib: lib.optim.Adamax(_params(lib), betas=(0.9, 1.0)),
    "load: group count": lambda lib: lib.optim.SGD(_params(lib)).load_state_dict(
        lib.optim.SGD([{"params": _params(lib)[:1]}, {"params": _params(lib)[1:]}]).state_dict()),
    "load: group size": lambda lib: lib.optim.SGD(_params(lib)).load_state_dict(
        lib.optim.SGD(_params(lib, 2)).state_dict()),
    "hook returns junk": lambda lib: (lambda o: (o.register_step_pre_hook(lambda *a: 5),
                                                 o.step()))(lib.optim.SGD(_params(lib))),
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_match_torch(name: str) -> None:
    mine, ref = _error(BAD[name], mytorch), _error(BAD[name], torch)
    assert ref is not None
    if name == "hook returns junk":   # the message names each library's step function
        assert mine[0] == ref[0] and "must return None or a tuple" in mine[1]
        return
    assert mine == ref


def test_required_parameter_and_defaults() -> None:
    class Plain(mytorch.optim.Optimizer):
        def __init__(self, params, lr=mytorch.optim.optimizer.required, k=3):
            super().__init__(params, {"lr": lr, "k": k})

        def step(self, closure=None):
            return None

    p = _params(mytorch)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization "
                                         "parameter lr"):
        Plain(p)
    opt = Plain([{"params": p[:1], "lr": 0.1}, {"params": p[1:], "lr": 0.2, "k": 5}])
    assert [g["k"] for g in opt.param_groups] == [3, 5]
    assert repr(mytorch.optim.optimizer.required) == "<required parameter>"


@pytest.mark.parametrize("cls", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                 "Adamax", "LBFGS"])
def test_param_group_keys_and_repr_match_torch(cls: str) -> None:
    mine = getattr(mytorch.optim, cls)(_params(mytorch))
    ref = getattr(torch.optim, cls)(_params(torch))
    assert [list(g) for g in mine.param_groups] == [list(g) for g in ref.param_groups]
    assert {k: v for k, v in mine.defaults.items()} == ref.defaults
    assert repr(mine) == repr(ref)
    assert repr(mine.state_dict()) == repr(ref.state_dict())


def test_named_parameters_and_add_param_group() -> None:
    for lib in (mytorch, torch):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Linear(2, 1))
        opt = lib.optim.SGD(model[0].named_parameters(), lr=0.1)
        opt.add_param_group({"params": list(model[1].named_parameters()), "lr": 0.01})
        sd = opt.state_dict()
        assert sd["param_groups"][0]["param_names"] == ["weight", "bias"]
        assert sd["param_groups"][1]["params"] == [2, 3]
        assert sd["param_groups"][1]["lr"] == 0.01
        assert opt.param_groups[1]["momentum"] == 0


def test_duplicate_parameter_warns() -> None:
    p = _params(mytorch, 1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        mytorch.optim.SGD(p + p)


def test_zero_grad() -> None:
    w = mytorch.nn.Parameter(mytorch.ones(3))
    opt = mytorch.optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g and w.grad.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None
    opt.step()  # no gradient: nothing happens, no state
    assert w.tolist() == [1.0, 1.0, 1.0] and len(opt.state) == 0


def test_frozen_parameters_are_skipped() -> None:
    a, b = mytorch.nn.Parameter(mytorch.ones(2)), mytorch.nn.Parameter(mytorch.ones(2))
    b.requires_grad_(False)
    opt = mytorch.optim.Adam([a, b], lr=0.5)
    (a * b).sum().backward()
    opt.step()
    assert b.tolist() == [1.0, 1.0] and a.tolist() != [1.0, 1.0]
    assert list(opt.state_dict()["state"]) == [0]


def test_step_hooks_and_closure() -> None:
    calls = []
    w = mytorch.nn.Parameter(mytorch.tensor([1.0, -2.0]))
    opt = mytorch.optim.SGD([w], lr=0.5)
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", a, k)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", a, k)))
    g = mytorch.optim.optimizer.register_optimizer_step_pre_hook(
        lambda o, a, k: calls.append(("global", type(o).__name__)))

    def closure():
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 5.0
    assert calls == [("global", "SGD"), ("pre", (closure,), {}), ("post", (closure,), {})]
    assert w.tolist() == [0.0, 0.0]
    for h in (h1, h2, g):
        h.remove()
    opt.step(closure)
    assert len(calls) == 3


def test_pre_hook_can_replace_arguments() -> None:
    w = mytorch.nn.Parameter(mytorch.tensor([3.0]))
    opt = mytorch.optim.SGD([w], lr=1.0)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: ((), {"closure": lambda: seen.append(1) or 0.0}))
    opt.step()
    assert seen == [1]


def test_state_dict_hooks() -> None:
    w = mytorch.nn.Parameter(mytorch.ones(1))
    opt = mytorch.optim.SGD([w], lr=0.1)
    order = []
    opt.register_state_dict_pre_hook(lambda o: order.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: order.append("lpre"))
    opt.register_load_state_dict_post_hook(lambda o: order.append("lpost"), prepend=True)
    sd = opt.state_dict()
    assert sd["extra"] == 1 and order == ["pre"]
    opt.load_state_dict(sd)
    assert order == ["pre", "lpre", "lpost"]


@pytest.mark.parametrize("cls,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                    ("Adam", dict(lr=0.1, amsgrad=True)),
                                    ("RMSprop", dict(centered=True, momentum=0.1)),
                                    ("Adagrad", dict()), ("Adamax", dict())])
def test_state_dict_round_trip_resumes_exactly(cls: str, kw: dict) -> None:
    """Train 3 steps, copy the state into a fresh optimizer, train on: the same as never stopping."""
    def grads(k):
        return mytorch.tensor(np.random.default_rng(k).standard_normal(4))

    def run(stop: bool):
        w = mytorch.nn.Parameter(mytorch.zeros(4, dtype=mytorch.float64))
        opt = getattr(mytorch.optim, cls)([w], **kw)
        for k in range(6):
            if stop and k == 3:
                sd = copy.deepcopy(opt.state_dict())
                opt = getattr(mytorch.optim, cls)([w], **kw)
                opt.load_state_dict(sd)
            w.grad = grads(k)
            opt.step()
        return w.detach().numpy()

    np.testing.assert_array_equal(run(False), run(True))


def test_load_state_dict_casts_state_to_the_parameter() -> None:
    w = mytorch.nn.Parameter(mytorch.zeros(2, dtype=mytorch.float64))
    opt = mytorch.optim.Adam([w])
    sd = {"state": {0: {"step": mytorch.tensor(3.0), "exp_avg": mytorch.ones(2),
                        "exp_avg_sq": mytorch.ones(2)}},
          "param_groups": [dict(opt.state_dict()["param_groups"][0], lr=0.5)]}
    opt.load_state_dict(sd)
    st = opt.state[w]
    assert st["exp_avg"].dtype is mytorch.float64 and st["step"].dtype is mytorch.float32
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"][0] is w


def test_torch_state_dict_loads_into_mytorch() -> None:
    """The layouts agree: a torch optimizer's state dict (as NumPy) drives a mytorch one."""
    tw = torch.nn.Parameter(torch.zeros(3))
    topt = torch.optim.Adam([tw], lr=0.1)
    for k in range(3):
        tw.grad = torch.full((3,), float(k + 1))
        topt.step()
    tsd = topt.state_dict()
    sd = {"state": {i: {k: mytorch.tensor(v.numpy()) for k, v in s.items()}
                    for i, s in tsd["state"].items()},
          "param_groups": copy.deepcopy(tsd["param_groups"])}
    mw = mytorch.nn.Parameter(mytorch.tensor(tw.detach().numpy()))
    mopt = mytorch.optim.Adam([mw], lr=0.1)
    mopt.load_state_dict(sd)
    tw.grad = torch.ones(3)
    topt.step()
    mw.grad = mytorch.ones(3)
    mopt.step()
    np.testing.assert_allclose(mw.detach().numpy(), tw.detach().numpy(), rtol=1e-6)


def test_pickle_and_deepcopy() -> None:
    w = mytorch.nn.Parameter(mytorch.ones(2))
    opt = mytorch.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = mytorch.ones(2)
    opt.step()
    clone = pickle.loads(pickle.dumps(opt))
    assert clone.param_groups[0]["lr"] == 0.1
    assert clone._optimizer_step_pre_hooks == {}
    other = copy.deepcopy(opt)
    assert other.state_dict()["state"][0]["momentum_buffer"].tolist() == [1.0, 1.0]


def test_step_runs_without_grad_and_bumps_versions() -> None:
    w = mytorch.nn.Parameter(mytorch.ones(2))
    y = (w * w).sum()
    w.grad = mytorch.ones(2)
    mytorch.optim.SGD([w], lr=0.1).step()
    assert w.grad_fn is None and w.requires_grad
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
