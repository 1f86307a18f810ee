"""Devices: parsing like torch, no-GPU errors, and the device rules on the simulated CUDA device."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from conftest import has_cuda
from oracle import check_raises

import mytorch
from mytorch._device import _SimulatedArray

# ----------------------------------------------------------------------------- parsing
DEVICE_ARGS = {
    "cpu": ("cpu",), "cuda": ("cuda",), "cuda_1": ("cuda:1",), "cuda_tuple": ("cuda", 1),
    "cuda_0": ("cuda:0",), "cpu_0": ("cpu", 0), "meta": ("meta",),
}


@pytest.mark.parametrize("args", DEVICE_ARGS.values(), ids=DEVICE_ARGS.keys())
def test_device_parsing(args):
    m, r = mytorch.device(*args), torch.device(*args)
    assert (repr(m), str(m), m.type, m.index) == (repr(r), str(r), r.type, r.index)
    assert mytorch.device(m) == m and hash(mytorch.device(*args)) == hash(m)


def test_device_from_int_needs_an_accelerator(no_cuda):
    # the oracle is a CPU build: an int device ("accelerator number 1") is an error there
    for args in ((1,), (0,), (-1,)):
        e = check_raises(lambda t: t.device(*args))
        assert str(e) == str(pytest.raises(RuntimeError, torch.device, *args).value)
    check_raises(lambda t: t.zeros(2, device=1))


def test_device_from_int_is_cuda_when_simulated(sim):
    # torch gives cuda:1 too when built with CUDA
    assert mytorch.device(1) == mytorch.device("cuda", 1) == mytorch.device("cuda:1")
    assert repr(mytorch.device(1)) == "device(type='cuda', index=1)"


def test_meta_device_is_refused_clearly():
    assert mytorch.device("meta").type == "meta"  # the name parses, as in torch
    with pytest.raises(NotImplementedError, match="no meta device"):
        mytorch.zeros(2, device="meta")


DEVICE_ERRORS = {
    "negative_index_str": ("cuda:-1",), "unknown_type": ("gpu",), "bad_index": ("cuda:x",),
    "double_index": ("cuda:1", 0), "negative_index": ("cuda", -1), "empty": ("",),
    "leading_space": (" cuda",), "leading_zero": ("cuda:01",), "upper_case": ("CPU",),
    "two_colons": ("cuda:1:2",), "none": (None,), "bool": (True,), "float": (1.5,),
}


@pytest.mark.parametrize("args", DEVICE_ERRORS.values(), ids=DEVICE_ERRORS.keys())
def test_device_errors(args):
    check_raises(lambda t: t.device(*args))


def test_device_equality_like_torch():
    for lib in (mytorch, torch):
        assert lib.device("cuda") != lib.device("cuda:0")  # no index is not index 0
        assert lib.device("cuda:1") == lib.device("cuda", 1)
        assert lib.device("cpu") != "cpu"  # a device never equals a string
        assert lib.ones(2).device == lib.device("cpu")
        assert lib.ones(2).device.type == "cpu"


# ----------------------------------------------------------------------------- without a GPU
def test_no_cuda_available(no_cuda):
    assert mytorch.cuda.is_available() is False and mytorch.cuda.device_count() == 0


@pytest.mark.parametrize("fn", [lambda t: t.ones(2).cuda(), lambda t: t.ones(2).to("cuda"),
                                lambda t: t.zeros(2, device="cuda")],
                         ids=["cuda()", "to_cuda", "zeros_device"])
def test_cuda_without_gpu_raises_assertion(no_cuda, fn):
    err = check_raises(fn)
    assert isinstance(err, AssertionError)
    assert "MYTORCH_SIMULATE_CUDA" in str(err) and "cupy" in str(err).lower()


# ----------------------------------------------------------------------------- simulated CUDA
def assert_on_device(t: mytorch.Tensor, dev: str = "cuda:0") -> None:
    """``t`` says it is on ``dev`` and its data really is device data (not a host ndarray)."""
    assert isinstance(t, mytorch.Tensor)
    assert str(t.device) == dev, f"result on {t.device}, expected {dev}"
    assert type(t._data) is _SimulatedArray, \
        f"data of a {dev} tensor is a {type(t._data).__name__}: the op computed on the host"


def test_simulated_is_available(sim):
    assert mytorch.cuda.is_available() and mytorch.cuda.is_simulated()
    assert mytorch.cuda.device_count() == 2 and mytorch.cuda.current_device() == 0


def test_cuda_cpu_round_trip(sim):
    x = mytorch.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = x.cuda()
    assert_on_device(c)
    assert c.is_cuda and not c.is_cpu and c.cuda() is c
    assert c.type() == "torch.cuda.FloatTensor"
    back = c.cpu()
    assert back.device == mytorch.device("cpu") and type(back._data) is np.ndarray
    assert back.tolist() == x.tolist()
    c.add_(1)
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]  # .cuda() copied


@pytest.mark.parametrize("target,expect", [("cuda:1", "cuda:1"), (mytorch.device("cuda", 1), "cuda:1"),
                                           (1, "cuda:1"), ("cuda", "cuda:0"), (0, "cuda:0")],
                         ids=["str", "device", "int", "no_index", "int0"])
def test_to_device_forms(sim, target, expect):
    assert_on_device(mytorch.ones(2).to(target), expect)
    assert_on_device(mytorch.ones(2).cuda(target) if not isinstance(target, str) or ":" in target
                     else mytorch.ones(2).cuda(), expect)


def test_to_device_and_dtype(sim):
    y = mytorch.ones(2).to("cuda:1", mytorch.float64)
    assert_on_device(y, "cuda:1")
    assert y.dtype is mytorch.float64
    z = y.to("cuda:0")
    assert_on_device(z, "cuda:0")
    assert y.to(mytorch.ones(1).cuda()).device == mytorch.device("cuda:0")


def test_invalid_ordinal(sim):
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        mytorch.ones(2, device="cuda:5")


CREATION = {
    "zeros": lambda t, d: t.zeros(2, 3, device=d),
    "ones": lambda t, d: t.ones(2, device=d, dtype=t.int32),
    "full": lambda t, d: t.full((2,), 3, device=d),
    "empty": lambda t, d: t.empty(2, device=d),
    "tensor": lambda t, d: t.tensor([1, 2], device=d),
    "as_tensor": lambda t, d: t.as_tensor(np.ones(3), device=d),
    "arange": lambda t, d: t.arange(3, device=d),
    "linspace": lambda t, d: t.linspace(0, 1, 3, device=d),
    "logspace": lambda t, d: t.logspace(0, 1, 3, device=d),
    "eye": lambda t, d: t.eye(2, device=d),
    "zeros_like": lambda t, d: t.zeros_like(t.ones(2, device=d)),
    "full_like": lambda t, d: t.full_like(t.ones(2, device=d), 7),
    "new_zeros": lambda t, d: t.ones(2, device=d).new_zeros(3),
    "new_tensor": lambda t, d: t.ones(2, device=d).new_tensor([1.0]),
    "empty_strided": lambda t, d: t.empty_strided((2, 2), (1, 2), device=d),
}


@pytest.mark.parametrize("dev", ["cuda:0", "cuda:1"])
@pytest.mark.parametrize("fn", CREATION.values(), ids=CREATION.keys())
def test_creation_device_argument(sim, fn, dev):
    t = fn(mytorch, dev)
    assert_on_device(t, dev)
    ref = fn(torch, "cpu")
    assert str(t.dtype) == str(ref.dtype) and tuple(t.shape) == tuple(ref.shape)
    if not any("empty" in name for name in fn.__code__.co_names):  # uninitialised values
        assert t.cpu().tolist() == ref.tolist()


# Ops whose results must stay on the device: (name, how to call it on a cuda tensor x).
OPS = {
    "add": lambda x: x + x, "add_scalar": lambda x: x + 1, "radd": lambda x: 2 + x,
    "sub": lambda x: x - x, "mul": lambda x: x * 2.5, "neg": lambda x: -x,
    "div": lambda x: x / 2, "exp": lambda x: x.exp(), "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(0), "mean": lambda x: x.mean(), "max": lambda x: x.max(),
    "reshape": lambda x: x.reshape(3, 2), "view": lambda x: x.view(-1),
    "transpose": lambda x: x.transpose(0, 1), "t": lambda x: x.t(), "permute": lambda x: x.permute(1, 0),
    "unsqueeze": lambda x: x.unsqueeze(0), "squeeze": lambda x: x.unsqueeze(0).squeeze(0),
    "expand": lambda x: x[:1].expand(4, 3), "getitem_int": lambda x: x[1],
    "getitem_slice": lambda x: x[:, 1:], "getitem_bool": lambda x: x[x > 0],
    "getitem_list": lambda x: x[[0, 1, 0]], "matmul": lambda x: x @ x.transpose(0, 1),
    "clone": lambda x: x.clone(), "contiguous": lambda x: x.transpose(0, 1).contiguous(),
    "cat": lambda x: mytorch.cat([x, x]), "where": lambda x: mytorch.where(x > 0, x, 0.0),
    "eq": lambda x: x == x, "abs": lambda x: x.abs(), "pow": lambda x: x ** 2,
    "to_dtype": lambda x: x.to(mytorch.float64), "softmax": lambda x: x.softmax(-1),
}
_OP_ATTRS = {"div": "__truediv__", "exp": "exp", "mean": "mean", "max": "max", "view": "view",
             "transpose": "transpose", "t": "t", "permute": "permute", "unsqueeze": "unsqueeze",
             "squeeze": "squeeze", "expand": "expand", "getitem_int": "__getitem__",
             "getitem_slice": "__getitem__", "getitem_bool": "__gt__", "getitem_list": "__getitem__",
             "matmul": "__matmul__", "contiguous": "contiguous", "cat": None, "where": None,
             "eq": "__eq__", "abs": "abs", "pow": "__pow__", "softmax": "softmax"}


def _implemented(name: str) -> bool:
    attr = _OP_ATTRS.get(name, "add")
    if name in ("getitem_int", "getitem_slice", "getitem_list", "getitem_bool", "expand"):
        if not hasattr(mytorch.Tensor, "__getitem__"):
            return False
    if attr is None:
        return hasattr(mytorch, name)
    return hasattr(mytorch.Tensor, attr) and getattr(mytorch.Tensor, attr) is not object.__eq__


def test_results_stay_on_device_and_are_device_arrays(sim):
    """Every implemented op keeps its result on the operands' device, as real device data.

    An op that pulled data to the host (``np.some_function(arr)``) would hand back a plain ndarray:
    ``assert_on_device`` catches that leak.
    """
    x = mytorch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], device="cuda:1")
    tested = []
    for name, fn in OPS.items():
        if not _implemented(name):
            continue
        out = fn(x)
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            assert_on_device(o, "cuda:1")
        tested.append(name)
    assert len(tested) >= 5, f"only {tested} are implemented"


def test_leak_detector_catches_host_results(sim):
    x = mytorch.ones(3, device="cuda")
    leaked = mytorch.Tensor._wrap(np.asarray(x._data), x.device)  # what a leaking op would build
    with pytest.raises(AssertionError, match="computed on the host"):
        assert_on_device(leaked)
    with pytest.raises(TypeError, match="host"):
        x._data + np.ones(3)  # the simulated array refuses to mix with host arrays


MIXING_ERRORS = {
    "cuda_cpu": lambda t: t.ones(2, device="cuda") + t.ones(2),
    "cpu_cuda": lambda t: t.ones(2) * t.ones(2, device="cuda"),
    "cuda0_cuda1": lambda t: t.ones(2, device="cuda:0") + t.ones(2, device="cuda:1"),
    "cuda_cpu_1elem": lambda t: t.ones(1, device="cuda") + t.ones(1),
    "cuda_cpu_matmul": lambda t: t.ones(2, 2, device="cuda") @ t.ones(2, 2),
}


@pytest.mark.parametrize("fn", MIXING_ERRORS.values(), ids=MIXING_ERRORS.keys())
def test_mixing_devices_raises(sim, fn):
    if fn is MIXING_ERRORS["cuda_cpu_matmul"] and not hasattr(mytorch.Tensor, "__matmul__"):
        pytest.skip("matmul is not implemented yet")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                       "found at least two devices, (cuda:0 and (cpu|cuda:1)|cpu and cuda:0)!"):
        fn(mytorch)


def test_mixing_message_names_both_devices(sim):
    with pytest.raises(RuntimeError) as info:
        mytorch.ones(2, device="cuda") + mytorch.ones(2)
    assert str(info.value) == ("Expected all tensors to be on the same device, but found at least "
                               "two devices, cuda:0 and cpu!")


@pytest.mark.parametrize("fn", [lambda t: t.ones(2, device="cuda") + t.tensor(3.0),
                                lambda t: t.tensor(3.0) * t.ones(2, device="cuda"),
                                lambda t: t.ones(2, device="cuda:1") - t.tensor(1)],
                         ids=["cuda+cpu0d", "cpu0d*cuda", "cuda1-cpu0d_int"])
def test_zero_dim_cpu_tensor_mixes(sim, fn):
    """A 0-dim CPU tensor acts like a number next to a cuda tensor (torch allows it)."""
    out = fn(mytorch)
    assert out.device.type == "cuda"
    assert_on_device(out, str(out.device))
    ref = fn(cpu_torch())
    assert out.cpu().tolist() == ref.tolist() and str(out.dtype) == str(ref.dtype)


INDEX_MIXING = {
    "scatter_cuda_index": lambda t: t.zeros(5).scatter_(0, t.tensor([0, 1], device="cuda"),
                                                        t.ones(2)),
    "gather_cpu_index": lambda t: t.ones(2, 3, device="cuda").gather(1, t.tensor([[0], [1]])),
    "index_select_cpu_index": lambda t: t.ones(3, device="cuda").index_select(0, t.tensor([0, 2])),
    "take_cuda_index": lambda t: t.ones(3).take(t.tensor([0], device="cuda")),
}


@pytest.mark.parametrize("fn", INDEX_MIXING.values(), ids=INDEX_MIXING.keys())
def test_index_on_another_device_raises_torchs_error(sim, fn):
    """An index tensor must live with the tensor it indexes (torch's device error, not a failure
    deep inside the kernel); advanced indexing with a CPU index stays allowed, as in torch."""
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but "
                       "found at least two devices, (cuda:0 and cpu|cpu and cuda:0)!"):
        fn(mytorch)
    x = mytorch.arange(4.0, device="cuda")
    assert_on_device(x[mytorch.tensor([0, 3])])


def test_vector_norm_stays_on_the_device(sim):
    """The 2-norm of a whole tensor (a dot product) keeps its result and gradient on the device."""
    x = mytorch.tensor([3.0, -4.0, 0.0], device="cuda", requires_grad=True)
    for n in (mytorch.linalg.vector_norm(x), mytorch.norm(x), x.norm(), mytorch.linalg.norm(x)):
        assert_on_device(n)
        assert n.item() == 5.0
    mytorch.linalg.vector_norm(x).backward()
    assert_on_device(x.grad)
    assert x.grad.tolist() == pytest.approx([0.6, -0.8, 0.0])


def cpu_torch():
    """torch with ``device=`` ignored: the CPU oracle for what the values and dtype must be."""
    class CpuTorch:
        def __getattr__(self, name):
            return getattr(torch, name)

        @staticmethod
        def ones(*size, device=None, **kw):
            return torch.ones(*size, **kw)
    return CpuTorch()


def test_conversions_on_device(sim):
    x = mytorch.tensor([1.5, 2.5], device="cuda")
    with pytest.raises(TypeError, match="cpu"):
        x.numpy()
    with pytest.raises(TypeError):
        np.asarray(x)
    assert x.tolist() == [1.5, 2.5] and x.sum().item() == 4.0
    assert float(x.sum()) == 4.0 and x.numpy(force=True).tolist() == [1.5, 2.5]
    assert repr(x).startswith("tensor(") and "cuda:0" in repr(x)


def test_copy_across_devices(sim):
    if not hasattr(mytorch.Tensor, "copy_"):
        pytest.skip("copy_ is not implemented yet")
    dst = mytorch.zeros(3, device="cuda")
    dst.copy_(mytorch.tensor([1.0, 2.0, 3.0]))
    assert_on_device(dst)
    assert dst.tolist() == [1.0, 2.0, 3.0]
    host = mytorch.zeros(3)
    host.copy_(dst)
    assert type(host._data) is np.ndarray and host.tolist() == [1.0, 2.0, 3.0]


def test_autograd_through_to_device(sim):
    x = mytorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.to("cuda:1")
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.device == mytorch.device("cpu") and type(x.grad._data) is np.ndarray
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    w = mytorch.ones(3, device="cuda", requires_grad=True)
    (w * 3).sum().backward()
    assert_on_device(w.grad)


def test_pickle_keeps_device(sim):
    import pickle

    x = mytorch.tensor([1.0, 2.0], device="cuda:1")
    y = pickle.loads(pickle.dumps(x))
    assert_on_device(y, "cuda:1")
    assert y.tolist() == [1.0, 2.0]


def test_cuda_device_context(sim):
    with mytorch.cuda.device(1):
        assert mytorch.cuda.current_device() == 1
        assert_on_device(mytorch.ones(2).cuda(), "cuda:1")
    assert mytorch.cuda.current_device() == 0


def test_env_var_turns_simulation_on():
    code = textwrap.dedent("""
        import mytorch
        x = mytorch.ones(2).cuda()
        print(mytorch.cuda.is_available(), mytorch.cuda.is_simulated(), x.device, (x + 1).device)
    """)
    env = dict(os.environ, MYTORCH_SIMULATE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "cuda:0", "cuda:0"] or has_cuda()


# ----------------------------------------------------------------------------- a real GPU
@pytest.mark.gpu
def test_real_gpu_round_trip():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception:
        pytest.skip("no CUDA driver")
    mytorch._device._CUDA.probed = False  # re-probe in case an earlier test simulated CUDA
    x = mytorch.arange(6.0).reshape(2, 3).cuda()
    assert isinstance(x._data, cupy.ndarray) and x.is_cuda
    y = (x * 2 + x).sum(0)
    assert isinstance(y._data, cupy.ndarray)
    assert y.cpu().tolist() == [9.0, 15.0, 21.0]
    with pytest.raises(RuntimeError, match="same device"):
        x + mytorch.ones(2, 3)
