"""torch.amp.GradScaler against torch: scale, unscale_, skipped steps on overflow, the scale's
growth and backoff, state_dict; torch.cuda.amp's spelling, disabled without a GPU; autocast."""
from __future__ import annotations

import warnings

import pytest
import torch

import mytorch


def scaler_run(lib):
    out = []
    w = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0]))
    opt = lib.optim.SGD([w], lr=0.1)
    s = lib.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    for i, x in enumerate([1.0, 2.0, float("inf"), 0.5, 0.25, 3.0]):
        loss = (w * x).sum() if x != float("inf") else (w * 1e38 * 1e38).sum()
        opt.zero_grad()
        s.scale(loss).backward()
        if i == 3:
            s.unscale_(opt)
            with pytest.raises(RuntimeError) as e:
                s.unscale_(opt)
            out.append(str(e.value))
        out.append(s.step(opt))
        s.update()
        out.append((s.get_scale(), [round(v, 5) for v in w.tolist()], s.state_dict()))
    with pytest.raises(RuntimeError) as e:
        s.step(opt, closure=lambda: 0)
    out.append(str(e.value))
    s2 = lib.amp.GradScaler("cpu")
    s2.load_state_dict(s.state_dict())
    out.append(s2.state_dict())
    out.append([t.tolist() for t in s.scale([lib.ones(1), lib.ones(2)])])
    return out


def test_grad_scaler_as_torch():
    assert scaler_run(mytorch) == scaler_run(torch)


def test_cuda_spelling_warns_and_disables_without_a_gpu():
    got = []
    for lib in (mytorch, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = lib.cuda.amp.GradScaler()
        loss = lib.ones(1)
        got.append(([(m.category, str(m.message)) for m in w], s.is_enabled(), s.get_scale(),
                    s.state_dict(), s.scale(loss) is loss))
    assert got[0] == got[1]


def test_autocast_disabled_is_a_no_op_and_enabled_says_not_implemented():
    with mytorch.autocast("cpu", enabled=False):
        assert (mytorch.ones(2) @ mytorch.ones(2)).dtype is mytorch.float32
    with pytest.raises(NotImplementedError, match="torch.autocast"):
        with mytorch.amp.autocast("cpu", dtype=mytorch.bfloat16):
            pass
