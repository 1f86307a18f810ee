"""bookkit.feedback.run_ranks: pretend ranks inside one process for chapter 12's check cells.

What the exercises rely on: messages arrive in order, a send completes only once its receive is
posted (so code that passes cannot deadlock on MPI), a deadlock is reported instead of looping,
traffic is counted, and the pretend collectives go through the ring/tree pieces when those are
plugged in, as mytorch.distributed's do."""

from __future__ import annotations

import pytest

import mytorch as torch
import mytorch.distributed as dist
from bookkit.feedback import run_ranks
from mytorch.distributed.distributed_c10d import ring_all_reduce, tree_broadcast
from mytorch.mine import plugged


def test_ring_sums_and_counts_traffic() -> None:
    def body(rank: int) -> torch.Tensor:
        flat = torch.arange(8.0) * (rank + 1)
        return ring_all_reduce(flat, rank, 4).clone()

    runs = run_ranks(4, body)
    for r in runs:
        assert torch.equal(r["result"], torch.arange(8.0) * 10)
        assert r["sent"] == 2 * 3 * 8 // 4 and r["messages"] == 2 * 3
        assert r["hops"] >= 3


def test_tree_broadcast_hops() -> None:
    """hops: the longest chain of messages that reached a rank (log2 N rounds for 8 ranks)."""
    runs = run_ranks(8, lambda rank: tree_broadcast(torch.full((2,), float(rank)), 3, rank, 8).clone())
    assert all(torch.equal(r["result"], torch.full((2,), 3.0)) for r in runs)
    assert sum(r["messages"] for r in runs) == 7 and max(r["hops"] for r in runs) == 3
    assert runs[3]["hops"] == 0


@pytest.mark.parametrize("first", ["send", "recv"])
def test_a_deadlock_is_reported(first: str) -> None:
    """Both ranks block in send first (MPI's synchronous send) or in recv first: no rank can go on."""
    def body(rank: int) -> None:
        other, t = 1 - rank, torch.zeros(3)
        if first == "send":
            dist.send(t, other)
            dist.recv(t, other)
        else:
            dist.recv(t, other)
            dist.send(t, other)

    with pytest.raises(RuntimeError, match="deadlock") as info:
        run_ranks(2, body)
    waiting = {"send": "send #1 to rank 1", "recv": "receive #1 from rank 1"}[first]
    assert f"rank 0 waits for its {waiting}" in str(info.value)


def test_point_to_point_functions_are_restored() -> None:
    before = (dist.send, dist.recv, dist.all_reduce, dist.get_rank)
    run_ranks(2, lambda rank: dist.get_rank() + dist.get_world_size(), collectives=True)
    assert (dist.send, dist.recv, dist.all_reduce, dist.get_rank) == before


def test_collectives_go_through_plugged_pieces() -> None:
    calls = {"ring": 0, "tree": 0}

    def ring(flat, rank, world_size):
        calls["ring"] += 1
        return ring_all_reduce(flat, rank, world_size)

    def tree(tensor, src, rank, world_size):
        calls["tree"] += 1
        return tree_broadcast(tensor, src, rank, world_size)

    def body(rank: int) -> list:
        s, m = torch.full((2, 3), float(rank + 1)), torch.full((2, 3), float(rank + 1))
        a, b = torch.full((5,), float(rank + 1)), torch.full((4,), float(rank))
        dist.all_reduce(s)
        dist.all_reduce(m, op=dist.ReduceOp.MAX)
        dist.all_reduce(a, op=dist.ReduceOp.AVG)
        dist.broadcast(b, src=1)
        return [s, m, a, b]

    want = run_ranks(3, body, collectives=True)
    assert calls == {"ring": 0, "tree": 0}
    with plugged(ring_all_reduce=ring, tree_broadcast=tree):
        got = run_ranks(3, body, collectives=True)
    assert calls["ring"] > 0 and calls["tree"] > 0
    for g, w in zip(got, want):
        for x, y in zip(g["result"], w["result"]):
            assert torch.allclose(x, y)
    assert torch.equal(want[0]["result"][0], torch.full((2, 3), 6.0))
    assert torch.equal(want[0]["result"][1], torch.full((2, 3), 3.0))
    assert torch.allclose(want[0]["result"][2], torch.full((5,), 2.0))
    assert torch.equal(want[2]["result"][3], torch.full((4,), 1.0))
