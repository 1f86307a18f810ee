"""Rprop and ASGD against torch.optim: the same gradients in, the same parameters and state out.

Uses the harness of tests/test_optim.py (25 steps, gradients that depend on the parameter, float32
and float64, state dicts compared key by key), plus torch's errors for bad hyper-parameters.
"""
from __future__ import annotations

import pytest
import torch

import mytorch
from tests.test_optim import _compare

CASES = [
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
    ("Rprop", dict(lr=0.02, maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=10, weight_decay=0.1)),   # averaging from step 11
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_same_steps_and_state_as_torch(name: str, kwargs: dict, dtype: str) -> None:
    _compare(name, kwargs, dtype)


def test_two_groups_like_torch() -> None:
    _compare("Rprop", dict(lr=0.05), "float64", groups=True)
    _compare("ASGD", dict(lr=0.05, t0=5), "float64", groups=True)


@pytest.mark.parametrize("make", [
    lambda lib, ps: lib.optim.Rprop(ps, lr=-1.0),
    lambda lib, ps: lib.optim.Rprop(ps, etas=(1.2, 0.5)),
    lambda lib, ps: lib.optim.Rprop(ps, etas=(0.5, 1.0)),
    lambda lib, ps: lib.optim.ASGD(ps, lr=-0.1),
    lambda lib, ps: lib.optim.ASGD(ps, weight_decay=-1.0),
])
def test_bad_hyper_parameters_raise_torchs_error(make) -> None:
    errors = []
    for lib in (torch, mytorch):
        with pytest.raises(ValueError) as info:
            make(lib, [lib.nn.Parameter(lib.zeros(2))])
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_asgd_average_is_the_mean_of_the_iterates_after_t0() -> None:
    w = mytorch.nn.Parameter(mytorch.tensor([4.0], dtype=mytorch.float64))
    opt = mytorch.optim.ASGD([w], lr=0.1, lambd=0.0, t0=0)
    seen = []
    for _ in range(6):
        w.grad = w.detach() * 2          # the gradient of w²
        opt.step()
        seen.append(w.item())
    # with t0=0, mu is 1 for two steps (ax is the last iterate), then 1/k: ax averages steps 2..6
    # (mu is a float32 counter, as in torch: 1e-6 relative)
    assert opt.state[w]["ax"].item() == pytest.approx(sum(seen[1:]) / 5, rel=1e-6)
    assert opt.state[w]["ax"].item() != pytest.approx(seen[-1], rel=1e-3)
