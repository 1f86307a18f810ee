"""mytorch.cuda without a GPU (torch's CPU-build answers), on the simulated device (the device
rules, per-device generators, streams/events, pinned memory) and, marked ``gpu``, on a real GPU.

The oracle is torch's CPU build, so "without a GPU" compares with real torch directly; where torch
raises an accidental internal error (``AttributeError: module 'torch._C' has no attribute
'_cuda_setDevice'``) mytorch raises torch's usual ``AssertionError`` instead, and the test says so.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import has_cuda
from test_device import assert_on_device

import mytorch
from mytorch._pieces import REGISTRY
from mytorch.utils import benchmark

NO_CUDA = "Torch not compiled with CUDA enabled"


# ----------------------------------------------------------------------------- without CUDA
ANSWERS = {  # calls that answer (the same value as torch's CPU build)
    "is_available": lambda c: c.is_available(),
    "device_count": lambda c: c.device_count(),
    "is_initialized": lambda c: c.is_initialized(),
    "manual_seed": lambda c: c.manual_seed(0),
    "manual_seed_all": lambda c: c.manual_seed_all(0),
    "seed": lambda c: c.seed(),
    "seed_all": lambda c: c.seed_all(),
    "get_rng_state_all": lambda c: c.get_rng_state_all(),
    "empty_cache": lambda c: c.empty_cache(),
    "memory_allocated": lambda c: c.memory_allocated(),
    "max_memory_allocated": lambda c: c.max_memory_allocated(),
    "memory_reserved": lambda c: c.memory_reserved(),
    "max_memory_reserved": lambda c: c.max_memory_reserved(),
    "memory_stats": lambda c: dict(c.memory_stats()),
    "default_generators": lambda c: tuple(c.default_generators),
    "stream_none": lambda c: c.stream(None).__enter__(),
    "set_stream_none": lambda c: c.set_stream(None),
    "device_minus_one": lambda c: c.device(-1).__enter__(),
}


@pytest.mark.parametrize("fn", ANSWERS.values(), ids=ANSWERS.keys())
def test_answers_without_cuda(no_cuda, fn):
    assert fn(mytorch.cuda) == fn(torch.cuda)


RAISES = {  # (call, exception class, torch's message)
    "current_device": (lambda c: c.current_device(), AssertionError, NO_CUDA),
    "synchronize": (lambda c: c.synchronize(), AssertionError, NO_CUDA),
    "initial_seed": (lambda c: c.initial_seed(), AssertionError, NO_CUDA),
    "get_rng_state": (lambda c: c.get_rng_state(), AssertionError, NO_CUDA),
    "mem_get_info": (lambda c: c.mem_get_info(), AssertionError, NO_CUDA),
    "current_stream": (lambda c: c.current_stream(), AssertionError, NO_CUDA),
    "default_stream": (lambda c: c.default_stream(), AssertionError, NO_CUDA),
    "get_device_name": (lambda c: c.get_device_name(0), AssertionError, NO_CUDA),
    "get_device_properties": (lambda c: c.get_device_properties(0), AssertionError, NO_CUDA),
    "get_device_capability": (lambda c: c.get_device_capability(), AssertionError, NO_CUDA),
    "init": (lambda c: c.init(), AssertionError, NO_CUDA),
    "stream": (lambda c: c.Stream(), RuntimeError, "torch.cuda.Stream requires CUDA support"),
    "event": (lambda c: c.Event(enable_timing=True), RuntimeError,
              "Tried to instantiate dummy base class Event"),
    "device_context": (lambda c: c.device(0).__enter__(), RuntimeError,
                       "PyTorch was compiled without CUDA support"),
    "set_device_cpu": (lambda c: c.set_device("cpu"), ValueError, "Expected a cuda device, but got: cpu"),
    "manual_seed_bad": (lambda c: c.manual_seed("x"), ValueError,
                        "invalid literal for int() with base 10: 'x'"),
}


@pytest.mark.parametrize("case", RAISES.values(), ids=RAISES.keys())
def test_errors_without_cuda(no_cuda, case):
    fn, cls, message = case
    with pytest.raises(cls) as ref:
        fn(torch.cuda)
    assert str(ref.value) == message
    with pytest.raises(cls) as mine:
        fn(mytorch.cuda)
    assert str(mine.value).startswith(message)


@pytest.mark.parametrize("fn", [lambda c: c.set_device(0), lambda c: c.reset_peak_memory_stats()],
                         ids=["set_device", "reset_peak_memory_stats"])
def test_torch_internal_errors_become_the_usual_assertion(no_cuda, fn):
    with pytest.raises(AttributeError, match="torch._C"):  # torch's CPU build: an internal slip
        fn(torch.cuda)
    with pytest.raises(AssertionError, match=NO_CUDA):
        fn(mytorch.cuda)


def test_pinned_memory_without_cuda(no_cuda):
    for fn in (lambda t: t.ones(2).pin_memory(),):
        with pytest.raises(RuntimeError) as ref:
            fn(torch)
        with pytest.raises(RuntimeError) as mine:
            fn(mytorch)
        assert str(mine.value) == str(ref.value)
    assert mytorch.ones(2).is_pinned() is torch.ones(2).is_pinned() is False


# ----------------------------------------------------------------------------- backends flags
def test_backends_flags_like_torch():
    for name in ("deterministic", "benchmark", "enabled", "allow_tf32"):
        assert getattr(mytorch.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert mytorch.backends.cudnn.is_available() is torch.backends.cudnn.is_available()
    assert mytorch.backends.cudnn.version() == torch.backends.cudnn.version()
    assert mytorch.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    with mytorch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=True):
        assert mytorch.backends.cudnn.benchmark and mytorch.backends.cudnn.deterministic
    assert not mytorch.backends.cudnn.benchmark


def test_deterministic_algorithms_switch():
    lib_pairs = [(mytorch, torch)]
    for m, t in lib_pairs:
        try:
            for mode, warn in ((True, False), (True, True), (False, True)):
                m.use_deterministic_algorithms(mode, warn_only=warn)
                t.use_deterministic_algorithms(mode, warn_only=warn)
                assert m.are_deterministic_algorithms_enabled() == t.are_deterministic_algorithms_enabled()
                assert (m.is_deterministic_algorithms_warn_only_enabled()
                        == t.is_deterministic_algorithms_warn_only_enabled())
            with pytest.raises(TypeError):
                t.use_deterministic_algorithms(1)
            with pytest.raises(TypeError):
                m.use_deterministic_algorithms(1)
        finally:
            m.use_deterministic_algorithms(False)
            t.use_deterministic_algorithms(False)


def test_alert_not_deterministic():
    from mytorch.backends._determinism import alert_not_deterministic

    alert_not_deterministic("index_add_cuda_")  # off: nothing happens
    try:
        mytorch.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="index_add_cuda_ does not have a deterministic"):
            alert_not_deterministic("index_add_cuda_")
        mytorch.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="deterministic"):
            alert_not_deterministic("index_add_cuda_")
    finally:
        mytorch.use_deterministic_algorithms(False)


# ----------------------------------------------------------------------------- simulated device
def test_device_management(sim):
    c = mytorch.cuda
    assert c.is_initialized() and c.current_device() == 0
    c.set_device(1)
    assert c.current_device() == 1 and mytorch.ones(1, device="cuda").device == mytorch.device("cuda:1")
    c.set_device("cuda:0")
    with c.device(mytorch.device("cuda:1")):
        assert c.current_device() == 1
        with c.device(None):
            assert c.current_device() == 1
    assert c.current_device() == 0
    x = mytorch.ones(2, device="cuda:1")
    with c.device_of(x):
        assert c.current_device() == 1
    with c.device_of(mytorch.ones(1)):
        assert c.current_device() == 0
    c.synchronize()
    c.synchronize("cuda:1")
    assert c.get_device_name(1) == "mytorch simulated CUDA device"
    assert c.get_device_capability() == (0, 0)
    with pytest.raises(AssertionError, match="Invalid device id"):
        c.get_device_properties(5)
    with pytest.raises(ValueError, match="Expected a cuda device"):
        c.set_device(mytorch.device("cpu"))


def _draw(dev: str) -> list[float]:
    return mytorch.randn(4, device=dev).cpu().tolist()


def test_per_device_generators(sim):
    c = mytorch.cuda
    gens = c.default_generators
    assert len(gens) == 2 and all(g.device.type == "cuda" for g in gens)
    assert [str(g.device) for g in gens] == ["cuda:0", "cuda:1"]
    mytorch.manual_seed(7)
    cpu, d0, d1 = _draw("cpu"), _draw("cuda:0"), _draw("cuda:1")
    assert d0 == d1 == cpu  # one seed: each device starts the same stream
    mytorch.manual_seed(7)
    mytorch.randn(100)  # drawing on the CPU does not move the devices' streams
    assert _draw("cuda:0") == d0
    c.manual_seed(3)  # only the current device (cuda:0)
    a = _draw("cuda:0")
    c.manual_seed(3)
    assert _draw("cuda:0") == a and c.initial_seed() == 3 and gens[1].initial_seed() == 7
    c.manual_seed_all(11)
    assert gens[0].initial_seed() == gens[1].initial_seed() == 11
    state = c.get_rng_state("cuda:1")
    assert state.dtype is mytorch.uint8 and state.device.type == "cpu"
    b = _draw("cuda:1")
    c.set_rng_state(state, "cuda:1")
    assert _draw("cuda:1") == b
    states = c.get_rng_state_all()
    first = [_draw("cuda:0"), _draw("cuda:1")]
    c.set_rng_state_all(states)
    assert [_draw("cuda:0"), _draw("cuda:1")] == first
    c.seed_all()
    assert gens[0].initial_seed() == gens[1].initial_seed() != 11


def test_generator_seeded_before_first_use(sim):
    mytorch.random._device_generators.clear()  # as in a fresh process: no device generator yet
    mytorch.manual_seed(5)
    a = _draw("cuda:1")
    mytorch.random._device_generators.clear()
    mytorch.manual_seed(5)
    assert _draw("cuda:1") == a


def test_explicit_cuda_generator(sim):
    g = mytorch.Generator("cuda").manual_seed(2)
    a = mytorch.rand(3, device="cuda", generator=g)
    assert_on_device(a)
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator"):
        mytorch.rand(3, generator=g)


def test_streams_and_events(sim):
    c = mytorch.cuda
    s = c.Stream()
    assert s.query() and s.device == mytorch.device("cuda:0")
    assert c.current_stream() == c.default_stream()
    with c.stream(s) as entered:
        assert entered is s and c.current_stream() == s
    assert c.current_stream() == c.default_stream()
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="must be recorded"):
        start.elapsed_time(end)
    start.record()
    mytorch.randn(50, 50, device="cuda").sum()
    end.record(s)
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        c.Event().elapsed_time(end)
    e = s.record_event()
    s.wait_event(e)
    s.wait_stream(c.default_stream())
    s.synchronize()


def test_memory_on_simulated_device(sim):
    c = mytorch.cuda
    c.reset_peak_memory_stats()
    mytorch.ones(1000, device="cuda")
    # host memory, not the device's: the simulated device has none of its own to count
    assert c.memory_allocated() == c.max_memory_allocated() == c.memory_reserved() == 0
    assert set(c.memory_stats()) >= {"allocated_bytes.all.current", "reserved_bytes.all.peak"}
    free, total = c.mem_get_info()
    assert 0 < free <= total
    assert "device 0" in c.memory_summary()
    c.empty_cache()


def test_pinned_memory_and_non_blocking(sim):
    x = mytorch.arange(6.0).reshape(2, 3)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device.type == "cpu"
    assert p.pin_memory() is p and p[1].is_pinned()
    assert p.tolist() == x.tolist()
    y = p.to("cuda:1", non_blocking=True)
    assert_on_device(y, "cuda:1")
    assert y.cpu().tolist() == x.tolist()
    assert_on_device(x.cuda(non_blocking=True))
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        y.pin_memory()
    assert not y.is_pinned()


# ----------------------------------------------------------------------------- timing (piece 09.2)
def test_time_cuda_piece_is_registered_and_timer_uses_it(monkeypatch):
    assert REGISTRY["time_cuda"].exercise == "09.2"
    calls = []

    def spy(fn, warmup=3, repeat=10):
        calls.append((warmup, repeat))
        return benchmark.time_cuda(fn, warmup, repeat)

    monkeypatch.setattr(mytorch._pieces.pieces, "time_cuda", spy)
    x = mytorch.randn(8, 8)
    m = benchmark.Timer("x @ x", globals={"x": x}).timeit(20)
    assert calls == [(3, 20)] and m.mean > 0 and m.number_per_run == 20
    assert "x @ x" in repr(m)
    auto = benchmark.Timer(lambda: x + x).blocked_autorange(min_run_time=0.01)
    assert auto.median > 0 and len(calls) >= 2


def test_blocked_autorange_ends_when_the_clock_does_not_move(monkeypatch):
    """A timer whose clock never moves (a broken student piece, a mocked clock) must not loop
    forever: the measurement is simply 0."""
    monkeypatch.setattr(mytorch._pieces.pieces, "time_cuda", lambda fn, warmup=3, repeat=10: 0.0)
    m = benchmark.Timer(lambda: None).blocked_autorange(min_run_time=1.0)
    assert m.median == 0.0 and len(m.times) == 1


def test_time_cuda_counts_calls_on_both_paths(sim):
    n = []
    t = benchmark.time_cuda(lambda: n.append(1), warmup=2, repeat=5)
    assert len(n) == 7 and t >= 0
    mytorch.cuda.simulate(False)
    n.clear()
    benchmark.time_cuda(lambda: n.append(1), warmup=1, repeat=3)
    assert len(n) == 4


# ----------------------------------------------------------------------------- a real GPU
@pytest.mark.gpu
def test_real_gpu_cuda_api():
    import cupy

    mytorch._device._CUDA.probed = False
    c = mytorch.cuda
    assert c.is_available() and not c.is_simulated() and c.device_count() >= 1
    assert isinstance(c.get_device_name(0), str) and c.get_device_properties(0).total_memory > 0
    c.reset_peak_memory_stats()
    before = c.memory_allocated()
    x = mytorch.empty(2 ** 20, device="cuda")  # 4 MiB
    assert c.memory_allocated() >= before + 4 * 2 ** 20
    assert c.max_memory_allocated() >= c.memory_allocated()
    assert c.memory_reserved() >= c.memory_allocated()
    del x
    c.empty_cache()
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    s = c.Stream()
    with c.stream(s):
        start.record()
        y = mytorch.randn(512, 512, device="cuda") @ mytorch.randn(512, 512, device="cuda")
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0 and isinstance(y._data, cupy.ndarray)
    p = mytorch.ones(1000).pin_memory()
    assert p.is_pinned()
    assert p.to("cuda", non_blocking=True).sum().item() == 1000
    assert benchmark.time_cuda(lambda: y @ y, warmup=2, repeat=3) > 0


def test_gpu_marker_skips_only_without_gpu(request):
    """The gpu-marked tests here are skipped exactly when CuPy sees no GPU (the one allowed skip)."""
    items = [i for i in request.session.items if i.get_closest_marker("gpu")
             and i.fspath == request.node.fspath]
    assert items
    for item in items:
        skipped = any(m.name == "skip" for m in item.iter_markers())
        assert skipped == (not has_cuda())


def test_numpy_unchanged_by_cuda_module():
    assert np.asarray(mytorch.ones(2)).tolist() == [1.0, 1.0]


# ----------------------------------------------------------------------------- the device rule (09.1)
def test_common_device_piece():
    from mytorch._ops._operands import common_device

    assert REGISTRY["common_device"].exercise == "09.1"
    cpu = mytorch.ones(2)
    assert common_device([cpu, mytorch.tensor(1.0)]) == mytorch.device("cpu")


def test_common_device_rule_on_the_simulated_device(sim, monkeypatch):
    from mytorch._ops._operands import common_device

    c0, c1 = mytorch.ones(2, device="cuda:0"), mytorch.ones(2, device="cuda:1")
    s_cpu, s_c1 = mytorch.tensor(2.0), mytorch.tensor(2.0, device="cuda:1")
    assert common_device([c0, s_cpu]) == common_device([s_cpu, c0]) == mytorch.device("cuda:0")
    assert common_device([s_cpu, s_c1]) == mytorch.device("cuda:1")
    assert common_device([c0, c1]) is None and common_device([c0, mytorch.ones(2)]) is None
    assert common_device([s_c1, mytorch.ones(2)]) is None  # only CPU scalars act as numbers
    asked = []
    monkeypatch.setattr(mytorch._pieces.pieces, "common_device",
                        lambda ts: asked.append(len(ts)) or common_device(ts))
    assert (c0 * s_cpu).device == mytorch.device("cuda:0") and asked
    with pytest.raises(RuntimeError, match="cuda:0 and cuda:1"):
        c0 + c1


# ----------------------------------------------------------------------------- DataParallel (09.3, 09.4)
def test_data_parallel_splits_the_batch_and_sums_the_gradients(sim, monkeypatch):
    from mytorch import nn
    from mytorch.nn.parallel.data_parallel import gather_outputs, scatter_batch

    assert REGISTRY["scatter_batch"].exercise == "09.3" and REGISTRY["gather_outputs"].exercise == "09.4"
    mytorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to("cuda:0")
    x = mytorch.randn(5, 3, device="cuda:0")
    model(x).pow(2).sum().backward()
    single = [p.grad.cpu().numpy().copy() for p in model.parameters()]
    model.zero_grad()
    seen = []
    monkeypatch.setattr(mytorch._pieces.pieces, "scatter_batch",
                        lambda b, d, dim: seen.append([str(v) for v in d]) or scatter_batch(b, d, dim))
    dp = nn.DataParallel(model)
    assert dp.device_ids == [mytorch.device("cuda:0"), mytorch.device("cuda:1")]
    out = dp(x)
    assert_on_device(out, "cuda:0")
    assert seen == [["cuda:0", "cuda:1"]]
    out.pow(2).sum().backward()
    for p, g in zip(model.parameters(), single):
        assert_on_device(p.grad, "cuda:0")
        np.testing.assert_allclose(p.grad.cpu().numpy(), g, rtol=1e-5, atol=1e-6)
    chunks = scatter_batch(x, [mytorch.device("cuda:1"), mytorch.device("cuda:0")], 0)
    assert [tuple(c.shape) for c in chunks] == [(3, 3), (2, 3)] and chunks[0].device.index == 1
    back = gather_outputs(chunks, mytorch.device("cuda:0"), 0)
    assert_on_device(back, "cuda:0")
    assert back.cpu().tolist() == x.cpu().tolist()


def test_data_parallel_without_devices_runs_the_module(no_cuda):
    from mytorch import nn

    m = nn.Linear(3, 2)
    x = mytorch.randn(4, 3)
    dp = nn.DataParallel(m)
    assert dp.device_ids == [] and mytorch.equal(dp(x), m(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]  # torch's key prefix


def test_simulated_block_puts_cuda_back(no_cuda):
    """``with cuda.simulated():`` (mytorch only) is the simulated GPUs inside the block only; after
    it CUDA is what it was (here: none), even when the block raised."""
    with mytorch.cuda.simulated(count=3):
        assert mytorch.cuda.is_simulated() and mytorch.cuda.device_count() == 3
        assert mytorch.ones(1, device="cuda:2").device == mytorch.device("cuda:2")
    assert not mytorch.cuda.is_available()
    with pytest.raises(ValueError), mytorch.cuda.simulated():
        raise ValueError
    assert not mytorch.cuda.is_available() and mytorch.cuda.device_count() == 0
