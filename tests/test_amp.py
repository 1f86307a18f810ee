"""torch.amp.GradScaler against torch: scale, unscale_, skipped steps on overflow, the scale's
growth and backoff, state_dict; torch.cuda.amp's spelling, disabled without a GPU; autocast."""
from __future__ import annotations

import warnings

import numpy as np
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


def test_autocast_disabled_is_a_no_op():
    with mytorch.autocast("cpu", enabled=False):
        assert (mytorch.ones(2) @ mytorch.ones(2)).dtype is mytorch.float32
        assert not mytorch.is_autocast_enabled("cpu")
    with pytest.raises(NotImplementedError, match="CPU only"):
        with mytorch.amp.autocast("cuda"):
            pass


def _autocast_ops(lib):
    """Each op's result under CPU autocast: (dtype name, values as float64)."""
    F = lib.nn.functional
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((4, 3)).astype(np.float32))
    w = lib.from_numpy(rng.standard_normal((2, 3)).astype(np.float32))
    y = lib.tensor([0, 1, 1, 0])
    out = {}
    layer = lib.nn.Linear(3, 2)
    with lib.no_grad():
        layer.weight.copy_(w)
        layer.bias.fill_(0.5)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        o = F.linear(x, w)
        out["flags"] = [lib.is_autocast_enabled("cpu"), lib.is_autocast_enabled(),
                        str(lib.get_autocast_dtype("cpu"))]
        out["linear"] = o
        out["linear_module"] = layer(x)
        out["matmul"] = x @ x.T
        out["mm"] = lib.mm(x, x.T)
        out["Tensor.matmul"] = x.matmul(x.T)
        out["addmm"] = lib.addmm(lib.zeros(4, 4), x, x.T)
        out["bmm"] = lib.bmm(x[None], x.T[None])
        out["baddbmm"] = lib.baddbmm(lib.zeros(1, 4, 4), x[None], x.T[None])
        out["conv1d"] = F.conv1d(x.unsqueeze(0), lib.ones(2, 4, 1))
        out["sdpa"] = F.scaled_dot_product_attention(x[None], x[None], x[None])
        out["relu_after"] = F.relu(o)                      # not listed: runs in bfloat16
        out["softmax"] = F.softmax(o, -1)
        out["sum"] = o.sum()
        out["add_float32"] = o + x[:, :2]                  # promotion as usual
        out["cross_entropy"] = F.cross_entropy(o, y)       # fp32 list
        out["mse_loss"] = F.mse_loss(o, x[:, :2])
        out["nll_loss"] = F.nll_loss(o, y)
        out["prod"] = o.prod()
        out["cdist"] = lib.cdist(o, o)
        out["double"] = x.double() @ x.double().T          # float64 is never cast
        # composites: cast when torch's decomposition reaches bmm/mm or a reflection pad
        out["einsum_contraction"] = lib.einsum("ij,kj->ik", x, x)
        out["einsum_outer"] = lib.einsum("i,j->ij", x[0], x[1])
        out["einsum_one_operand"] = lib.einsum("ij->j", x)
        out["tensordot"] = lib.tensordot(x, x.T, dims=1)
        out["tensordot_1d"] = lib.tensordot(x[0], x[1], 1)
        out["inner"] = lib.inner(x, x)
        out["inner_1d"] = lib.inner(x[0], x[1])
        out["pad_reflect"] = F.pad(o.unsqueeze(0), (1, 1), mode="reflect")
        out["pad_replicate"] = F.pad(o.unsqueeze(0), (1, 1), mode="replicate")
        out["pad_constant"] = F.pad(o, (1, 1))
        out["pad_circular"] = F.pad(o.unsqueeze(0), (1, 1), mode="circular")
        out["bilinear"] = F.bilinear(x, x, lib.ones(2, 3, 3) / 4)  # (its einsum is not cast)
        with lib.autocast("cpu", enabled=False):
            out["nested_off"] = F.linear(x, w)
            out["nested_flag"] = [lib.is_autocast_enabled("cpu")]
        with lib.autocast("cpu", dtype=lib.float16):
            out["float16"] = F.linear(x, w)
        out["restored"] = F.linear(x, w)
    out["after"] = F.linear(x, w)
    out["flags_after"] = [lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu"))]

    @lib.autocast("cpu")
    def decorated(a):
        return a @ a.T
    out["decorated"] = decorated(x)
    return {k: (str(v.dtype), v.double().detach().numpy()) if isinstance(v, lib.Tensor) else v
            for k, v in out.items()}


def test_autocast_cpu_casts_as_torch_lists_say():
    mine, ref = _autocast_ops(mytorch), _autocast_ops(torch)
    assert mine.keys() == ref.keys()
    for k in ref:
        if isinstance(ref[k], tuple):
            assert mine[k][0] == ref[k][0], k
            np.testing.assert_allclose(mine[k][1], ref[k][1], rtol=1e-2, atol=1e-2, err_msg=k)
        else:
            assert mine[k] == ref[k], k


def test_autocast_bfloat16_values_and_float32_gradients():
    """The casts are recorded: a float32 weight gets a float32 gradient through a bfloat16 linear;
    the values are torch's bit for bit (computed in float32, rounded once)."""
    got = []
    for lib in (mytorch, torch):
        rng = np.random.default_rng(1)
        x = lib.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
        w = lib.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)).requires_grad_()
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
            h = lib.tanh(lib.nn.functional.linear(x, w))
            loss = lib.nn.functional.cross_entropy(h @ w, lib.tensor([0, 1, 2, 3, 0]))
        loss.backward()
        got.append((h.float().detach().numpy(), loss.item(), str(w.grad.dtype), w.grad.numpy()))
    np.testing.assert_array_equal(got[0][0], got[1][0])
    assert got[0][1] == pytest.approx(got[1][1], rel=1e-6) and got[0][2] == got[1][2] == "torch.float32"
    np.testing.assert_allclose(got[0][3], got[1][3], rtol=1e-6, atol=1e-7)


def test_autocast_unsupported_dtype_warns_and_disables():
    for lib in (mytorch, torch):
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                          "supported. Disabling autocast.\nCPU Autocast only supports dtypes of "
                          "torch.bfloat16, torch.float16 currently."):
            ctx = lib.autocast("cpu", dtype=lib.float32)
        with ctx:
            assert not lib.is_autocast_enabled("cpu")
            assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype is lib.float32
    for lib in (mytorch, torch):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(0)

def test_autocast_survives_the_bfloat16_wrappers_being_reinstalled():
    from mytorch import _autocast, _bfloat16
    with mytorch.autocast("cpu"):
        pass
    _autocast.uninstall()
    _bfloat16.uninstall()  # (tests do this): the next region wraps again, bfloat16 first
    x = mytorch.ones(2, 3)
    with mytorch.autocast("cpu"):
        assert (x @ x.T).dtype is mytorch.bfloat16
    _bfloat16.uninstall()  # the originals back under autocast's wrappers: noticed, wrapped again
    with mytorch.autocast("cpu"):
        assert (x @ x.T).dtype is mytorch.bfloat16
        assert mytorch.nn.functional.mse_loss(x.bfloat16(), x).dtype is mytorch.float32


def test_autocast_leaves_the_placeholders_of_names_left_out_alone():
    with mytorch.autocast("cpu"):
        pass
    assert type(mytorch.polar).__name__ == "Unsupported"  # (torch.polar: not implemented)
    with pytest.raises(NotImplementedError, match="torch.polar"):
        mytorch.polar(mytorch.ones(1), mytorch.ones(1))
