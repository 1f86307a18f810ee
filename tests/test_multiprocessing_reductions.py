"""mytorch.multiprocessing: how long a shared block lives when a tensor travels on a queue.

A sender that drops a tensor right after ``q.put(t)`` must not take the memory away from the
receiver (torch's file-descriptor strategy: the descriptor travels, the block has no name to unlink),
and a receiver that drops what it got releases its mapping.
"""
from __future__ import annotations

import gc

import pytest

import mytorch
import mytorch.multiprocessing as mp
from mytorch.multiprocessing import reductions


def _send_and_drop(q, dropped, received) -> None:
    q.put(mytorch.arange(5.0))   # nobody in this process holds the tensor after this line
    q.close()
    q.join_thread()              # the message has left: the sender's tensor is garbage now
    gc.collect()
    dropped.put(len(reductions._blocks))
    received.wait(60)            # the sender stays alive until the receiver has the tensor


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_tensor_outlives_its_sender_dropping_it(method: str) -> None:
    ctx = mp.get_context(method)
    q, dropped, received = ctx.Queue(), ctx.SimpleQueue(), ctx.Event()
    before = len(reductions._blocks)
    proc = ctx.Process(target=_send_and_drop, args=(q, dropped, received))
    proc.start()
    try:
        assert dropped.get() == 0            # the sender closed its block before we read it
        t = q.get(timeout=60)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and t.is_shared()
    finally:
        received.set()
        proc.join(60)
    assert proc.exitcode == 0
    t[0] = 7.0                               # still ours after the sender exited
    assert t[0].item() == 7.0
    assert len(reductions._blocks) == before + 1
    del t
    gc.collect()
    assert len(reductions._blocks) == before  # the receiver's mapping went with the tensor


def test_a_block_received_twice_is_mapped_once() -> None:
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    t = mytorch.zeros(3).share_memory_()
    before = len(reductions._blocks)
    q.put(t)
    q.put(t[1:])
    a, b = q.get(timeout=60), q.get(timeout=60)
    assert len(reductions._blocks) == before  # the same block: no second mapping
    a[1] = 5.0
    assert b[0].item() == 5.0 and t[1].item() == 5.0
