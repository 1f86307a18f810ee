"""bfloat16 and the float8 dtypes (through ml_dtypes), torch as the oracle: creation, casts,
promotion, float32 compute rounded back, gradients, printing, finfo, and torch's file format
both ways."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import mytorch

pytest.importorskip("ml_dtypes")


@pytest.fixture(autouse=True, scope="module")
def _float32_compute_only_here():
    """bfloat16's first use wraps mytorch's ops (mytorch/_bfloat16.py): put the originals back
    after this module, so the tests that follow in the process see the library as imported."""
    yield
    mytorch._bfloat16.uninstall()


def test_uninstall_restores_the_original_functions():
    mytorch.ones(1, dtype=mytorch.bfloat16)
    assert hasattr(mytorch.Tensor.sum, "__wrapped_for_bfloat16__")
    mytorch._bfloat16.uninstall()
    assert not hasattr(mytorch.Tensor.sum, "__wrapped_for_bfloat16__")
    assert not hasattr(mytorch.nn.functional.softmax, "__wrapped_for_bfloat16__")
    mytorch.ones(1, dtype=mytorch.bfloat16)  # installs again
    assert hasattr(mytorch.Tensor.sum, "__wrapped_for_bfloat16__")

FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"]
A = np.linspace(-3, 3, 240, dtype=np.float32).reshape(12, 20)


def both(fn):
    """``fn(lib, x)`` with x = A as a bfloat16 tensor of each library."""
    return fn(mytorch, mytorch.tensor(A).bfloat16()), fn(torch, torch.tensor(A).bfloat16())


def same(mine, ref, ulps=0):
    """Equal dtypes and shapes; values equal (or within ``ulps`` bfloat16 steps: 2**-7 relative)."""
    if isinstance(ref, (tuple, list)):
        for m, r in zip(mine, ref, strict=True):
            same(m, r, ulps)
        return
    assert str(mine.dtype) == str(ref.dtype) and tuple(mine.shape) == tuple(ref.shape)
    m, r = mine.detach().float().numpy(), ref.detach().float().numpy()
    if ulps:
        np.testing.assert_allclose(m, r, rtol=ulps * 2.0 ** -7, atol=1e-6)
    else:
        np.testing.assert_array_equal(m, r)


def test_the_dtypes_exist_with_torch_attributes():
    for name in ["bfloat16", *FLOAT8]:
        mine, ref = getattr(mytorch, name), getattr(torch, name)
        assert repr(mine) == repr(ref)
        assert (mine.itemsize, mine.is_floating_point, mine.is_complex, mine.is_signed) == \
            (ref.itemsize, ref.is_floating_point, ref.is_complex, ref.is_signed)


@pytest.mark.parametrize("name", ["bfloat16", *FLOAT8])
def test_finfo(name):
    assert repr(mytorch.finfo(getattr(mytorch, name))) == repr(torch.finfo(getattr(torch, name)))


@pytest.mark.parametrize("name", ["bfloat16", *FLOAT8])
def test_casts_round_as_torch(name):
    vals = np.array([0.0, 1.0, -1.5, 0.1, 3.14159, 100.7, 1e-3, 250.0], dtype=np.float32)
    if name == "float8_e8m0fnu":  # powers of two only: torch's rounding of 0 and negatives differs
        vals = np.abs(vals[1:])
    mine = mytorch.tensor(vals).to(getattr(mytorch, name))
    ref = torch.tensor(vals).to(getattr(torch, name))
    assert str(mine.dtype) == str(ref.dtype)
    np.testing.assert_array_equal(mine.float().numpy(), ref.float().numpy())
    assert repr(mine) == repr(ref)


PROMOTION = [("bfloat16", "float16"), ("bfloat16", "float32"), ("bfloat16", "float64"),
             ("bfloat16", "int64"), ("bfloat16", "bool"), ("bfloat16", "complex64"),
             ("bfloat16", "uint16"), ("float8_e4m3fn", "bfloat16"), ("float8_e4m3fn", "float32"),
             ("float8_e5m2", "float8_e4m3fn"), ("float8_e4m3fn", "int32")]


@pytest.mark.parametrize("a,b", PROMOTION)
def test_promote_types(a, b):
    try:
        ref = torch.promote_types(getattr(torch, a), getattr(torch, b))
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            mytorch.promote_types(getattr(mytorch, a), getattr(mytorch, b))
        assert str(got.value) == str(e)
        return
    assert repr(mytorch.promote_types(getattr(mytorch, a), getattr(mytorch, b))) == repr(ref)


OPS = {
    "add": lambda t, x: x + 1, "mul_scalar": lambda t, x: x * 3.3, "div": lambda t, x: x / 7,
    "mul_self": lambda t, x: x * x, "sub_int": lambda t, x: x - t.ones(20, dtype=t.int64),
    "with_float32": lambda t, x: x * t.ones(20), "with_half": lambda t, x: x + t.ones(20).half(),
    "sum": lambda t, x: x.sum(), "sum_dim": lambda t, x: x.sum(1), "mean": lambda t, x: x.mean(0),
    "var": lambda t, x: x.var(), "cumsum": lambda t, x: x.cumsum(1),
    "matmul": lambda t, x: x @ x.T, "linear": lambda t, x: t.nn.functional.linear(x, x[:3]),
    "exp": lambda t, x: x.exp(), "tanh": lambda t, x: t.tanh(x), "sigmoid": lambda t, x: x.sigmoid(),
    "softmax": lambda t, x: x.softmax(-1), "gelu": lambda t, x: t.nn.functional.gelu(x),
    "layer_norm": lambda t, x: t.nn.functional.layer_norm(x, (20,)),
    "clamp": lambda t, x: x.clamp(-1, 1), "relu": lambda t, x: t.relu(x),
    "max": lambda t, x: x.max(1), "argmax": lambda t, x: x.argmax(),
    "cross_entropy": lambda t, x: t.nn.functional.cross_entropy(x, t.arange(12)),
    "index": lambda t, x: x[range(3), [1, 2, 3]], "cat": lambda t, x: t.cat([x, x]),
    "to_long": lambda t, x: x.long(), "to_float": lambda t, x: x.float(),
}
ROUNDING = {"log_softmax": lambda t, x: t.log_softmax(x, -1)}  # 1-ulp rounding differences


@pytest.mark.parametrize("op", OPS)
def test_ops_compute_as_torch(op):
    same(*both(OPS[op]))


@pytest.mark.parametrize("op", ROUNDING)
def test_ops_within_a_rounding_step(op):
    same(*both(ROUNDING[op]), ulps=2)


def test_gradients_are_bfloat16_as_torch():
    def fn(t, x):
        w = x[:4, :5].clone().requires_grad_()
        lin = (w @ w.T).softmax(-1).sum() + (w * w).mean()
        lin.backward()
        return w.grad
    same(*both(fn), ulps=4)  # torch's softmax backward reads its bfloat16-rounded output


@pytest.mark.slow  # (torch's first bfloat16 AdamW step in a process takes seconds)
def test_a_bfloat16_model_trains_like_torch():
    def fn(t, x):
        t.manual_seed(0)
        model = t.nn.Sequential(t.nn.Linear(20, 8), t.nn.GELU(), t.nn.LayerNorm(8),
                                t.nn.Linear(8, 3))
        with t.no_grad():  # the same weights in both libraries
            for i, p in enumerate(model.parameters()):
                p.copy_(t.tensor(np.cos(np.arange(p.numel()) + i).reshape(p.shape) / 4))
        model = model.to(t.bfloat16)
        opt = t.optim.AdamW(model.parameters(), lr=0.01)
        for _ in range(3):
            loss = t.nn.functional.cross_entropy(model(x), t.arange(12) % 3)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss, model[0].weight
    mine, ref = both(fn)
    same(mine[0], ref[0], ulps=4)
    same(mine[1], ref[1], ulps=4)


def test_creation_with_bfloat16():
    for fn in [lambda t: t.zeros(2, 3, dtype=t.bfloat16), lambda t: t.ones(3, dtype=t.bfloat16),
               lambda t: t.full((2,), 1 / 3, dtype=t.bfloat16),
               lambda t: t.arange(5, dtype=t.bfloat16), lambda t: t.tensor([0.1, 2.7], dtype=t.bfloat16),
               lambda t: t.zeros(2).new_ones(3, dtype=t.bfloat16)]:
        same(fn(mytorch), fn(torch))
    for fn in [lambda t: t.randn(4, dtype=t.bfloat16), lambda t: t.rand(2, 2, dtype=t.bfloat16),
               lambda t: t.randn(3, dtype=t.bfloat16, requires_grad=True)]:
        m, r = fn(mytorch), fn(torch)
        assert str(m.dtype) == str(r.dtype) and m.requires_grad == r.requires_grad and m.is_leaf


def test_init_fills_bfloat16_parameters():
    w = mytorch.empty(3, 4, dtype=mytorch.bfloat16)
    mytorch.nn.init.uniform_(w, -1, 1)
    assert w.dtype is mytorch.bfloat16 and float(w.abs().max()) <= 1


PRINTS = {
    "vector": lambda t: t.tensor([1.5, 2.3333, -7.0], dtype=t.bfloat16),
    "scalar": lambda t: t.tensor(1.5, dtype=t.bfloat16),
    "sci": lambda t: t.tensor([1e-3, 123.456, 1e5], dtype=t.bfloat16),
    "int_valued": lambda t: t.ones(2, 2, dtype=t.bfloat16),
    "grad_fn": lambda t: t.ones(2, dtype=t.bfloat16, requires_grad=True) * 2,
    "float8": lambda t: t.tensor([1.5, 2.25]).to(t.float8_e4m3fn),
    "type": lambda t: t.zeros(1, dtype=t.bfloat16).type(),
}


@pytest.mark.parametrize("case", PRINTS)
def test_printing_like_torch(case):
    assert str(PRINTS[case](mytorch)) == str(PRINTS[case](torch))


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_torch_files_both_ways(name, tmp_path):
    vals = np.array([1.5, 2.3333, -7.0, 0.1], dtype=np.float32)
    torch.save({"x": torch.tensor(vals).to(getattr(torch, name)), "n": 3}, tmp_path / "t.pt")
    got = mytorch.load(tmp_path / "t.pt")
    assert got["x"].dtype is getattr(mytorch, name)
    np.testing.assert_array_equal(got["x"].float().numpy(),
                                  torch.tensor(vals).to(getattr(torch, name)).float().numpy())
    mytorch.save({"x": mytorch.tensor(vals).to(getattr(mytorch, name))}, tmp_path / "m.pt")
    back = torch.load(tmp_path / "m.pt")
    assert back["x"].dtype == getattr(torch, name)
    np.testing.assert_array_equal(back["x"].float().numpy(), got["x"].float().numpy())


def test_a_bfloat16_state_dict_from_torch_loads_into_a_module(tmp_path):
    torch.save(torch.nn.Linear(3, 2).to(torch.bfloat16).state_dict(), tmp_path / "s.pt")
    m = mytorch.nn.Linear(3, 2).to(mytorch.bfloat16)
    m.load_state_dict(mytorch.load(tmp_path / "s.pt"))
    assert m.weight.dtype is mytorch.bfloat16


def test_without_ml_dtypes_the_dtype_exists_and_using_it_says_what_to_install():
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import mytorch as torch\n"
            "table = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}\n"
            "print(repr(table['bfloat16']), torch.bfloat16.itemsize)\n"
            "try:\n"
            "    torch.zeros(2, dtype=torch.bfloat16)\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[0] == "torch.bfloat16 2"
    assert "pip install ml_dtypes" in out.stdout.splitlines()[1]


def test_nanogpt_dtype_table_and_context():
    """nanoGPT's train.py: its dtype table names bfloat16 even on the CPU, where it uses
    nullcontext instead of autocast."""
    from contextlib import nullcontext

    dtype = "bfloat16" if mytorch.cuda.is_available() else "float32"
    ptdtype = {"float32": mytorch.float32, "bfloat16": mytorch.bfloat16, "float16": mytorch.float16}[dtype]
    ctx = nullcontext() if "cpu" == "cpu" else mytorch.amp.autocast(device_type="cpu", dtype=ptdtype)
    with ctx:
        assert (mytorch.ones(2, dtype=ptdtype) * 2).sum().item() == 4.0


EDGES = {
    "numpy_refused": lambda t: t.ones(2, dtype=t.bfloat16).numpy(),
    "tolist": lambda t: t.tensor([1.5, -2.25], dtype=t.bfloat16).tolist(),
    "item": lambda t: t.tensor([0.1], dtype=t.bfloat16).item(),
    "view_as_int16": lambda t: t.tensor([1.5, -2.25], dtype=t.bfloat16).view(t.int16).tolist(),
    "default_dtype": lambda t: (t.set_default_dtype(t.bfloat16), str(t.tensor([1.1])),
                                t.set_default_dtype(t.float32))[1],
    "float8_arithmetic_refused": lambda t: t.ones(2).to(t.float8_e4m3fn) * 2,
    "float8_to_bfloat16": lambda t: str(t.ones(2).to(t.float8_e5m2).to(t.bfloat16)),
    "sum_to_bfloat16": lambda t: str(t.full((300,), 0.1).sum(dtype=t.bfloat16)),
    "with_float64": lambda t: str((t.ones(2, dtype=t.bfloat16) / t.full((2,), 3.0, dtype=t.float64)).dtype),
}


@pytest.mark.parametrize("case", EDGES)
def test_edges_as_torch(case):
    fn = EDGES[case]
    try:
        ref = fn(torch)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(mytorch)
        return
    assert fn(mytorch) == ref


@pytest.mark.parametrize("op", ["tanh", "sigmoid", "exp", "sqrt", "softmax"])
def test_backward_reads_the_rounded_output(op):
    """A backward that reads the op's output reads the bfloat16 values torch's kernel saved."""
    grads = []
    for lib in (mytorch, torch):
        rng = np.random.default_rng(1)
        x = lib.from_numpy(rng.random((5, 4)).astype(np.float32)).bfloat16().requires_grad_()
        g = lib.from_numpy(rng.standard_normal((5, 4)).astype(np.float32)).bfloat16()
        y = lib.softmax(x, -1) if op == "softmax" else getattr(lib, op)(x)
        (y * g).sum().backward()
        grads.append(x.grad.float().numpy())
    np.testing.assert_array_equal(grads[0], grads[1])


def _mixed_norms(lib):
    F = lib.nn.functional
    x = lib.from_numpy(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))
    xb, w, b = x.bfloat16(), lib.ones(3) * 1.5, lib.zeros(3) + 0.25
    out = {}
    cases = {"layer_norm": lambda: F.layer_norm(xb, (3,), w, b),
             "batch_norm_train": lambda: F.batch_norm(xb, lib.zeros(3), lib.ones(3), w, b, True),
             "batch_norm_eval": lambda: F.batch_norm(xb, lib.zeros(3), lib.ones(3), w, b),
             "group_norm": lambda: F.group_norm(xb.view(4, 3, 1), 1, w, b),
             "instance_norm": lambda: F.instance_norm(xb.view(1, 4, 3), weight=lib.ones(4)),
             "module": lambda: lib.nn.LayerNorm(3)(xb),
             "rms_norm": lambda: F.rms_norm(xb, (3,), w),
             "rms_norm_float32_input": lambda: F.rms_norm(x, (3,), w.bfloat16()),
             "prelu": lambda: F.prelu(xb, lib.ones(1).bfloat16() * 0.5),
             "float32_input": lambda: F.layer_norm(x, (3,), w.bfloat16(), b.bfloat16()),
             "bfloat16_running_mean": lambda: F.batch_norm(xb, lib.zeros(3).bfloat16(),
                                                           lib.ones(3), w, b, True)}
    for k, f in cases.items():
        try:
            v = f()
            out[k] = (str(v.dtype), v.float().detach().numpy())
        except RuntimeError as e:
            out[k] = str(e)
    return out


def test_norms_take_a_bfloat16_input_with_float32_parameters():
    """torch's CPU "mixed dtype" norms: bfloat16 in, float32 weight/bias/stats, bfloat16 out;
    the other mixes are refused with torch's message. (prelu on bfloat16, too.)"""
    mine, ref = _mixed_norms(mytorch), _mixed_norms(torch)
    assert mine.keys() == ref.keys()
    for k in ref:
        if isinstance(ref[k], str):
            assert mine[k] == ref[k], k
        else:
            assert mine[k][0] == ref[k][0], k
            np.testing.assert_array_equal(mine[k][1], ref[k][1], err_msg=k)
