"""``python -m bench.distributed``: mytorch.distributed against mpi4py, and DDP on 2 ranks vs 1.

It starts itself on ``--nproc`` ranks (default 2) with ``python -m mytorch.distributed.run``.

* **all_reduce** of 1-100 MB float32 buffers: ``dist.all_reduce(t)`` against mpi4py's own
  ``comm.Allreduce(MPI.IN_PLACE, a)`` on the same memory, in the same run (median of the repeats,
  a barrier before each). mytorch adds a signature exchange (the shape check across ranks) and
  polls a non-blocking ``Iallreduce``; target: at least 0.9x mpi4py's speed.
* **DDP step**: forward + backward + SGD of an MLP on a batch of 256: one process on the whole
  batch, then DDP on each rank's share. Ideal speed-up: the number of ranks (with free cores).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

TARGET = 0.9


def _median_time(fn, repeat: int, sync) -> float:
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _all_reduce_rows(repeat: int) -> list[str]:
    import mytorch as torch
    import mytorch.distributed as dist
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rows = []
    for mb in (1, 10, 100):
        t = torch.ones(mb * 2 ** 20 // 4)
        arr = t.numpy()
        reps = max(3, repeat if mb < 100 else repeat // 3)
        ours, theirs = [], []
        for _ in range(reps):  # interleaved: both face the same background load
            ours.append(_median_time(lambda: dist.all_reduce(t), 1, dist.barrier))
            theirs.append(_median_time(lambda: comm.Allreduce(MPI.IN_PLACE, arr), 1, comm.Barrier))
        ours, theirs = statistics.median(ours), statistics.median(theirs)
        ratio = theirs / ours
        rows.append(f"| all_reduce {mb:>3} MB | {ours * 1e3:9.2f} ms | {theirs * 1e3:9.2f} ms | "
                    f"{ratio:5.2f}x | {'yes' if ratio >= TARGET else 'NO'} |")
    return rows


def _mlp():
    import mytorch as torch
    from mytorch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _step(model, x, y) -> None:
    import mytorch as torch
    import mytorch.nn.functional as F

    F.cross_entropy(model(x), y).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
            p.grad = None


def _ddp_rows(repeat: int) -> list[str]:
    import mytorch as torch
    import mytorch.distributed as dist
    from mytorch.nn.parallel import DistributedDataParallel as DDP

    r, n = dist.get_rank(), dist.get_world_size()
    x, y = torch.randn(256, 512), torch.randint(0, 10, (256,))
    single = None
    if r == 0:  # the baseline: one process, whole batch (the other ranks wait in the barrier)
        model = _mlp()
        _step(model, x, y)
        single = _median_time(lambda: _step(model, x, y), repeat, lambda: None)
    dist.barrier()
    ddp = DDP(_mlp())
    share = slice(r * 256 // n, (r + 1) * 256 // n)
    _step(ddp, x[share], y[share])
    multi = _median_time(lambda: _step(ddp, x[share], y[share]), repeat, dist.barrier)
    if r:
        return []
    return [f"| DDP MLP step, batch 256 | 1 process: {single * 1e3:.1f} ms | {n} ranks: "
            f"{multi * 1e3:.1f} ms | speed-up {single / multi:.2f}x (ideal {n}x) |"]


def worker(repeat: int) -> None:
    import mytorch.distributed as dist

    dist.init_process_group("gloo")
    rows = _all_reduce_rows(repeat)
    rows += _ddp_rows(repeat)
    if dist.get_rank() == 0:
        print(f"\nmytorch.distributed on {dist.get_world_size()} ranks, {os.cpu_count()} cores "
              f"(numpy {np.__version__})")
        print("| case | mytorch | mpi4py | mytorch speed vs mpi4py | >= 0.9x |")
        print("|---|---|---|---|---|")
        print("\n".join(r for r in rows if "all_reduce" in r))
        print()
        print("\n".join(r for r in rows if "DDP" in r))
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.distributed", description=__doc__)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.repeat)
        return 0
    return subprocess.call([sys.executable, "-m", "mytorch.distributed.run", "--nproc-per-node",
                            str(args.nproc), "-m", "bench.distributed", "--worker", "--repeat",
                            str(args.repeat)])


if __name__ == "__main__":
    sys.exit(main())
