"""mytorch.multiprocessing: tensors in shared memory, Hogwild with fork and spawn, ``spawn``."""
from __future__ import annotations

import numpy as np
import pytest

import mytorch
import mytorch.multiprocessing as mp
from mytorch import nn


def test_share_memory_moves_the_storage_and_its_views():
    t = mytorch.arange(6.0)
    with mytorch.enable_grad():
        v = t[2:]  # a view made before sharing follows the storage
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and v.is_shared()
    t[3] = 30.0
    assert v.tolist() == [2.0, 30.0, 4.0, 5.0]
    before = t._data.__array_interface__["data"][0]
    t.share_memory_()  # already shared: nothing moves
    assert t._data.__array_interface__["data"][0] == before
    assert t[1:].is_shared() and mytorch.zeros(0).share_memory_().is_shared()


def test_module_share_memory():
    m = nn.Linear(3, 2)
    assert m.share_memory() is m
    assert all(p.is_shared() for p in m.parameters())


def test_cuda_tensors_count_as_shared(sim):
    x = mytorch.ones(2, device="cuda")
    assert x.share_memory_() is x and x.is_shared()


def _hogwild_worker(model, steps: int) -> None:
    with mytorch.no_grad():
        for _ in range(steps):
            for p in model.parameters():
                p.add_(1.0)


def _queue_worker(q) -> None:
    t = q.get()
    t += 10  # the parent's tensor: same shared memory
    p = q.get()
    q.put((type(p).__name__, p.requires_grad, p.tolist()))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_processes_update_one_model(method):
    ctx = mp.get_context(method)
    m = nn.Linear(2, 1)
    m.share_memory()
    start = [p.detach().clone() for p in m.parameters()]
    procs = [ctx.Process(target=_hogwild_worker, args=(m, 3)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    for p, s in zip(m.parameters(), start):
        np.testing.assert_allclose(p.detach().numpy(), s.numpy() + 6.0)


def test_tensors_on_a_queue_travel_through_shared_memory():
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    t = mytorch.zeros(3)
    param = nn.Parameter(mytorch.ones(2))
    proc = ctx.Process(target=_queue_worker, args=(q,))
    proc.start()
    q.put(t)
    q.put(param)
    proc.join(60)
    assert proc.exitcode == 0
    assert t.tolist() == [10.0, 10.0, 10.0] and t.is_shared()  # moved to shared memory on send
    assert q.get(timeout=10) == ("Parameter", True, [1.0, 1.0])


def _ok(i: int, out) -> None:
    out.put(i * i)


def _fails(i: int) -> None:
    if i == 1:
        raise ValueError("process one fails on purpose")


def test_spawn_runs_fn_with_the_index_and_reports_failures():
    q = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_ok, args=(q,), nprocs=2)
    assert sorted(q.get() for _ in range(2)) == [0, 1]
    with pytest.raises(mp.ProcessRaisedException, match="process one fails on purpose") as info:
        mp.spawn(_fails, nprocs=2)
    assert info.value.error_index == 1


def test_multiprocessing_names_are_there():
    import multiprocessing

    for name in ("Process", "Queue", "Pool", "get_context", "cpu_count", "SimpleQueue"):
        assert getattr(mp, name) is getattr(multiprocessing, name)
