"""mytorch.distributed with real processes: 2 and 3 ranks started by the launcher on this machine.

Each test writes a small worker script, runs ``python -m mytorch.distributed.run`` on it (a
subprocess with a timeout, so a hang fails the test instead of stalling the suite) and checks what
the ranks report. The workers compare every collective with NumPy, DDP with one process training
on the whole batch, and the pieces' references with MPI's fast paths.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import mytorch
import mytorch.distributed as dist
from mytorch._pieces import REGISTRY
from mytorch.nn.parallel.distributed import assign_buckets
from mytorch.utils.data.distributed import DistributedSampler, distributed_indices

pytest.importorskip("mpi4py", reason="MPI is part of the dev extra: pip install -e '.[dev]'")
ROOT = Path(__file__).resolve().parent.parent


def launch(tmp_path: Path, code: str, nproc: int, *args: str, timeout: float = 90):
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    mine = env.get("MYTORCH_MINE", "")
    if mine not in ("", "0", "1"):  # a folder named from here (make test: solutions): the ranks
        env["MYTORCH_MINE"] = os.path.abspath(mine)  # start in tmp_path, so give it absolute
    return subprocess.run([sys.executable, "-m", "mytorch.distributed.run", "--nproc-per-node",
                           str(nproc), str(script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=tmp_path, env=env)


def assert_ok(proc: subprocess.CompletedProcess, nproc: int) -> None:
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    for r in range(nproc):
        assert f"rank {r} OK" in proc.stdout, proc.stdout + proc.stderr[-4000:]


COLLECTIVES = """
import numpy as np
import mytorch as torch
import mytorch.distributed as dist
from mytorch._pieces import REGISTRY, activate, pieces

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
R = dist.ReduceOp


def data(k, shape=(5,), dtype=np.float32):
    return np.random.default_rng(100 + k).standard_normal(shape).astype(dtype)


def close(t, ref):
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-5, atol=1e-6)


everyone = [data(k) for k in range(n)]
for op, ref in [(R.SUM, np.sum), (R.AVG, np.mean), (R.PRODUCT, np.prod), (R.MAX, np.max),
                (R.MIN, np.min)]:
    t = torch.from_numpy(data(r))
    dist.all_reduce(t, op=op)
    close(t, ref(everyone, axis=0))
# a buffer larger than one all-reduce part (here 12 bytes: 3 floats) goes in several parts,
# the last one short; an async one stays in flight while a second collective starts
import mytorch.distributed._mpi_backend as backend
backend.ALL_REDUCE_PART = 12
big = [data(k, (4, 5)) for k in range(n)]
for op, ref in [(R.SUM, np.sum), (R.AVG, np.mean), (R.MAX, np.max)]:
    t = torch.from_numpy(big[r].copy())
    work = dist.all_reduce(t, op=op, async_op=True)
    u = torch.from_numpy(data(r, (7,)))
    dist.all_reduce(u)
    work.wait()
    close(t, ref(big, axis=0))
    close(u, np.sum([data(k, (7,)) for k in range(n)], axis=0))
backend.ALL_REDUCE_PART = 16 * 2 ** 20
bits = [np.arange(6, dtype=np.int64) * (k + 3) for k in range(n)]
for op, ref in [(R.BAND, np.bitwise_and.reduce), (R.BOR, np.bitwise_or.reduce),
                (R.BXOR, np.bitwise_xor.reduce)]:
    t = torch.from_numpy(bits[r].copy())
    dist.all_reduce(t, op=op)
    assert t.tolist() == ref(bits).tolist()
t = torch.from_numpy(data(r, (4, 6))).t()             # not contiguous: staged and written back
dist.all_reduce(t)
close(t, np.sum([data(k, (4, 6)).T for k in range(n)], axis=0))
h = torch.from_numpy(data(r)).half()                   # MPI has no half: reduced in float32
dist.all_reduce(h)
np.testing.assert_allclose(h.float().numpy(), np.sum(everyone, axis=0), rtol=2e-3, atol=2e-3)
work = dist.all_reduce(torch.from_numpy(data(r)), async_op=True)
assert work.wait() and work.is_completed()
close(work.result()[0], np.sum(everyone, axis=0))

for src in range(n):
    t = torch.from_numpy(data(r))
    dist.broadcast(t, src=src)
    close(t, data(src))

out = [torch.zeros(5) for _ in range(n)]
dist.all_gather(out, torch.from_numpy(data(r)))
for k in range(n):
    close(out[k], data(k))
big = torch.zeros(n * 2, 3)
dist.all_gather_into_tensor(big, torch.from_numpy(data(r, (2, 3))))
close(big, np.concatenate([data(k, (2, 3)) for k in range(n)]))

inputs = [data(10 * k + j, (3,)) for k in range(n) for j in range(n)]   # rank k's list: j = 0..n-1
o = torch.zeros(3)
dist.reduce_scatter(o, [torch.from_numpy(inputs[r * n + j]) for j in range(n)])
close(o, np.sum([inputs[k * n + r] for k in range(n)], axis=0))
o = torch.zeros(2)
dist.reduce_scatter_tensor(o, torch.from_numpy(data(r, (2 * n,))), op=R.MAX)
close(o, np.max([data(k, (2 * n,)) for k in range(n)], axis=0)[2 * r:2 * r + 2])

t = torch.from_numpy(data(r))
dist.reduce(t, dst=n - 1)
if r == n - 1:
    close(t, np.sum(everyone, axis=0))
gl = [torch.zeros(5) for _ in range(n)] if r == 0 else None
dist.gather(torch.from_numpy(data(r)), gl, dst=0)
if r == 0:
    for k in range(n):
        close(gl[k], data(k))
got = torch.zeros(5)
dist.scatter(got, [torch.from_numpy(data(50 + k)) for k in range(n)] if r == 1 else None, src=1)
close(got, data(50 + r))

right, left = (r + 1) % n, (r - 1) % n                # a ring of messages
req = dist.isend(torch.from_numpy(data(r)), right)
inbox = torch.zeros(5)
assert dist.recv(inbox, left) == left
req.wait()
close(inbox, data(left))
if r == 0:                                            # any-source receive
    seen = set()
    for _ in range(n - 1):
        box = torch.zeros(1)
        seen.add(dist.recv(box))
        assert box.item() == 7.0
    assert seen == set(range(1, n))
else:
    dist.send(torch.tensor([7.0]), 0)
w = dist.irecv(torch.zeros(2), left, tag=3)
dist.isend(torch.tensor([1.0, 2.0]), right, tag=3).wait()
w.wait()

objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "name": "r%d" % r})
assert objs == [{"rank": k, "name": "r%d" % k} for k in range(n)]
lst = ["mine", r] if r == 0 else [None, None]
dist.broadcast_object_list(lst, src=0)
assert lst == ["mine", 0]

# pieces: the readable ring and tree equal MPI's fast paths, even chunks of unequal sizes
for numel in (1, 7, 12):
    x = data(r, (numel,))
    a, b = torch.from_numpy(x.copy()), torch.from_numpy(x.copy())
    REGISTRY["ring_all_reduce"].reference(a, r, n)
    pieces.ring_all_reduce(b, r, n)
    close(a, np.sum([data(k, (numel,)) for k in range(n)], axis=0))
    close(b, a.numpy())
for src in range(n):
    t = torch.from_numpy(data(r))
    REGISTRY["tree_broadcast"].reference(t, src, r, n)
    close(t, data(src))
# with the references switched on (as use_mine() would), the collectives go through them
calls = []
ring, tree = REGISTRY["ring_all_reduce"].reference, REGISTRY["tree_broadcast"].reference
activate("ring_all_reduce", lambda *a: calls.append("ring") or ring(*a))
activate("tree_broadcast", lambda *a: calls.append("tree") or tree(*a))
t = torch.from_numpy(data(r))
dist.all_reduce(t, op=R.AVG)
close(t, np.mean(everyone, axis=0))
t = torch.from_numpy(data(r))
dist.broadcast(t, src=n - 1)
close(t, data(n - 1))
activate("ring_all_reduce", None)
activate("tree_broadcast", None)
assert calls == ["ring", "tree"], calls

sub = dist.new_group([0, 1])
if r in (0, 1):
    t = torch.ones(2) * (r + 1)
    dist.all_reduce(t, group=sub)
    assert t.tolist() == [3.0, 3.0] and dist.get_world_size(sub) == 2
dist.barrier()
assert dist.get_backend() == "gloo" and dist.is_initialized()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {r} OK")
"""


@pytest.mark.parametrize("nproc", [2, 3])
def test_collectives_match_numpy(tmp_path, nproc):
    assert_ok(launch(tmp_path, COLLECTIVES, nproc), nproc)


DDP = """
import sys
import numpy as np
import mytorch as torch
import mytorch.distributed as dist
import mytorch.nn.functional as F
from mytorch import nn
from mytorch.nn.parallel import DistributedDataParallel as DDP
from mytorch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
rng = np.random.default_rng(0)
X = torch.from_numpy(rng.standard_normal((120, 6)).astype(np.float32))
Y = torch.from_numpy(rng.integers(0, 3, 120))
BATCH, STEPS, LR = 12, 20, 0.1


def make():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))


def sgd(model):
    with torch.no_grad():
        for p in model.parameters():
            p -= LR * p.grad
            p.grad = None


# one process on the whole batch
ref = make()
for step in range(STEPS):
    idx = list(range(step * BATCH % 120, step * BATCH % 120 + BATCH))
    F.cross_entropy(ref(X[idx]), Y[idx]).backward()
    sgd(ref)

# every rank on its share of each batch (rank 0 starts from different weights: broadcast fixes it)
torch.manual_seed(99)
model = make() if r else nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                                       nn.Linear(16, 3))
if r == 0:
    with torch.no_grad():
        for p, q in zip(model.parameters(), make().parameters()):
            p.copy_(q)
else:
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)  # wrong on purpose: DDP must overwrite it with rank 0's weights
ddp = DDP(model, bucket_cap_mb=0.0001)  # ~100 bytes: several buckets
assert len(ddp._buckets) > 2, len(ddp._buckets)
ddp.timeline = []
for step in range(STEPS):
    start = step * BATCH % 120
    mine = [start + i for i in DistributedSampler(range(BATCH), n, r, shuffle=False)]
    loss = F.cross_entropy(ddp(X[mine]), Y[mine])
    loss.backward()
    sgd(ddp)
for p, q in zip(ddp.module.parameters(), ref.parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=2e-5, atol=2e-6)
launches = [e for e in ddp.timeline if e["event"] == "launch"]
assert len(launches) == STEPS * len(ddp._buckets)
assert launches[0]["grads_not_ready"] > 0          # started while backward was still running
assert [e["bucket"] for e in launches[:len(ddp._buckets)]] == list(range(len(ddp._buckets)))

# no_sync: two micro-batches accumulate locally, the second backward averages the sum
acc = DDP(make())
ref2 = make()
idx = list(range(24))
F.cross_entropy(ref2(X[idx[:12]]), Y[idx[:12]]).backward()
F.cross_entropy(ref2(X[idx[12:]]), Y[idx[12:]]).backward()
with acc.no_sync():
    part = [i for i in DistributedSampler(range(12), n, r, shuffle=False)]
    F.cross_entropy(acc(X[part]), Y[part]).backward()
    local = [p.grad.clone() for p in acc.parameters()]
part = [12 + i for i in DistributedSampler(range(12), n, r, shuffle=False)]
F.cross_entropy(acc(X[part]), Y[part]).backward()
for p, q in zip(acc.module.parameters(), ref2.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=2e-5, atol=2e-6)
gathered = [torch.zeros_like(local[0]) for _ in range(n)]
dist.all_gather(gathered, local[0])
assert n == 1 or not all(torch.equal(g, gathered[0]) for g in gathered)  # no_sync did not sync


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(2)
        self.body, self.a, self.b, self.never = nn.Linear(4, 4), nn.Linear(4, 1), nn.Linear(4, 1), nn.Linear(4, 1)

    def forward(self, x, use_b):
        h = self.body(x)
        return self.a(h) + (self.b(h) if use_b else 0)


heads = DDP(TwoHeads(), find_unused_parameters=True)
x = torch.ones(2, 4) * (r + 1)
heads(x, use_b=(r == 0)).sum().backward()
assert heads.module.never.weight.grad is None        # unused on every rank: no gradient
assert heads.module.b.weight.grad is not None        # used on rank 0: averaged everywhere
vals = [torch.zeros(1, 4) for _ in range(n)]
dist.all_gather(vals, heads.module.b.weight.grad)
assert all(torch.equal(v, vals[0]) for v in vals)

# two forwards, then one backward (as torch allows): one averaged gradient, BatchNorm buffers too
twice_net = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
twice = DDP(twice_net)
xa, xb = torch.ones(4, 4) * (r + 1), torch.arange(16.0).reshape(4, 4) * (r + 1)
(twice(xa).pow(2).sum() + twice(xb).pow(2).sum()).backward()
grads = [torch.zeros_like(twice_net[0].weight) for _ in range(n)]
dist.all_gather(grads, twice_net[0].weight.grad)
assert all(torch.equal(g, grads[0]) for g in grads)
twice(xa).sum().backward()                           # the next iteration starts cleanly

strict = DDP(TwoHeads())
strict(x, use_b=False).sum().backward()
try:
    strict(x, use_b=False)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e)
else:
    raise AssertionError("an unused parameter went unnoticed")
print(f"rank {r} OK")
"""


@pytest.mark.parametrize("nproc", [2, 3])
def test_ddp_equals_one_process_on_the_whole_batch(tmp_path, nproc):
    assert_ok(launch(tmp_path, DDP, nproc), nproc)


FAILURES = """
import sys, time
from datetime import timedelta
import mytorch as torch
import mytorch.distributed as dist

mode = sys.argv[1]
dist.init_process_group("gloo", timeout=timedelta(seconds=float(sys.argv[2])))
r = dist.get_rank()
dist.all_reduce(torch.ones(3))
if mode == "raise" and r == 1:
    raise ValueError("rank one is broken on purpose")
if mode == "shape":
    dist.all_reduce(torch.ones(2, 2 + r))
if mode == "hang" and r == 1:
    time.sleep(4)
if mode == "collective" and r == 2:
    dist.broadcast(torch.ones(3), src=0)
for _ in range(3):
    dist.all_reduce(torch.ones(3))
print(f"rank {r} OK")
"""


def test_a_failing_rank_stops_every_rank_and_is_named(tmp_path):
    proc = launch(tmp_path, FAILURES, 3, "raise", "60")  # no timeout needed: the notice arrives
    assert proc.returncode != 0
    assert "rank 1 failed: ValueError: rank one is broken on purpose" in proc.stderr
    assert "ranks [0, 2] stopped because of it" in proc.stderr
    for r in (0, 2):  # each survivor raised an error naming rank 1
        assert f"[rank {r}] mytorch.distributed.DistBackendError: rank 1 failed" in proc.stderr
    assert "OK" not in proc.stdout


def test_mismatched_shapes_get_a_clear_error(tmp_path):
    proc = launch(tmp_path, FAILURES, 2, "shape", "60")
    assert proc.returncode != 0
    assert "the ranks disagree about collective #2" in proc.stderr
    assert "rank 0: all_reduce #2 of a float32 tensor of shape [2, 2]" in proc.stderr
    assert "rank 1: all_reduce #2 of a float32 tensor of shape [2, 3]" in proc.stderr


def test_different_collectives_get_a_clear_error(tmp_path):
    proc = launch(tmp_path, FAILURES, 3, "collective", "60")
    assert proc.returncode != 0
    assert "rank 2: broadcast #2 of a float32 tensor of shape [3] (root 0)" in proc.stderr
    assert "rank 0: all_reduce #2" in proc.stderr


def test_a_hung_rank_is_reported_by_the_timeout(tmp_path):
    proc = launch(tmp_path, FAILURES, 2, "hang", "1")
    assert proc.returncode != 0
    assert "timed out after 1 s on rank 0" in proc.stderr
    assert "rank 1: no answer (busy outside mytorch.distributed, hung, or exited)" in proc.stderr


SYNC_BN = """
import numpy as np
import mytorch as torch
import mytorch.distributed as dist
import mytorch.nn as nn

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
sizes = [3, 5, 4, 2][:n]                              # shares of different sizes: the counts matter
start = sum(sizes[:r])
rng = np.random.default_rng(0)
X = rng.standard_normal((sum(sizes), 3, 4)).astype(np.float32) * [[[1.0], [3.0], [0.5]]] + 2
W = rng.standard_normal(X.shape).astype(np.float32)
gamma, beta = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)

def layer(cls):
    m = cls(3, momentum=0.3)
    with torch.no_grad():
        m.weight.copy_(torch.from_numpy(gamma))
        m.bias.copy_(torch.from_numpy(beta))
    return m

sync = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(layer(nn.BatchNorm1d)))[0]
assert type(sync) is nn.SyncBatchNorm
x = torch.from_numpy(X[start:start + sizes[r]].copy()).requires_grad_()
y = sync(x)
(y * torch.from_numpy(W[start:start + sizes[r]])).sum().backward()
grads = torch.cat([sync.weight.grad, sync.bias.grad])
dist.all_reduce(grads)                                # every rank's loss counts, as DDP would sum

ref = layer(nn.BatchNorm1d)                           # one process, the whole batch
xr = torch.from_numpy(X).requires_grad_()
yr = ref(xr)
(yr * torch.from_numpy(W)).sum().backward()
share = slice(start, start + sizes[r])
close = lambda a, b: np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-4)
close(y, yr[share])
close(x.grad, xr.grad[share])
close(grads, torch.cat([ref.weight.grad, ref.bias.grad]))
close(sync.running_mean, ref.running_mean)
close(sync.running_var, ref.running_var)
sync.eval(), ref.eval()
close(sync(x), ref(xr)[share])                        # eval: the running statistics, no collective
print("rank", r, "OK", flush=True)
"""


@pytest.mark.parametrize("nproc", [3])
def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch(tmp_path, nproc):
    assert_ok(launch(tmp_path, SYNC_BN, nproc), nproc)


def test_sync_batch_norm_alone_is_torchs_batch_norm():
    # without a process group torch's SyncBatchNorm is a plain BatchNorm (on the CPU too)
    x = np.random.default_rng(1).standard_normal((6, 3, 4)).astype(np.float32)
    mine, theirs = mytorch.nn.SyncBatchNorm(3), torch.nn.SyncBatchNorm(3)
    xm, xt = mytorch.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mine(xm).pow(3).sum().backward()
    theirs(xt).pow(3).sum().backward()
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mine.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)
    assert repr(mine) == repr(theirs)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        mine(mytorch.zeros(3))
    with pytest.raises(ValueError, match="expected at least 2D input"):
        theirs(torch.zeros(3))
    net = mytorch.nn.Sequential(mytorch.nn.Linear(3, 3), mytorch.nn.Sequential(mytorch.nn.BatchNorm2d(3)))
    converted = mytorch.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    ref = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sequential(torch.nn.BatchNorm2d(3))))
    assert repr(converted) == repr(ref)
    assert converted[1][0].weight is net[1][0].weight        # the same parameters, not copies


MONITORED = """
import time
from datetime import timedelta
import mytorch.distributed as dist

dist.init_process_group("gloo")
r = dist.get_rank()
dist.monitored_barrier(timeout=timedelta(seconds=30))          # everybody arrives: no error
for wait_all in (False, True):                                   # ranks 1 and 2 never come
    if r == 0:
        start = time.monotonic()
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=0.3), wait_all_ranks=wait_all)
            raise AssertionError("monitored_barrier let rank 0 through without ranks 1 and 2")
        except RuntimeError as e:
            print(f"wait_all_ranks={wait_all}: {e} after {time.monotonic() - start:.1f} s", flush=True)
    dist.barrier()
print("rank", r, "OK", flush=True)
"""


def test_monitored_barrier_names_the_late_ranks_like_torch(tmp_path):
    proc = launch(tmp_path, MONITORED, 3)
    assert_ok(proc, 3)
    # torch/gloo's messages, word for word
    assert "wait_all_ranks=False: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 300 ms" in proc.stdout
    assert "wait_all_ranks=True: [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 300 ms" in proc.stdout
    waited = [float(line.rsplit(" after ", 1)[1].split()[0]) for line in proc.stdout.splitlines()
              if line.startswith("wait_all_ranks=")]
    assert len(waited) == 2 and all(0.25 <= t < 10 for t in waited), proc.stdout  # the timeout, not 30 s


ENV = """
import os, mytorch.distributed as dist
keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
        "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS"]
dist.init_process_group("gloo", init_method="env://")
assert int(os.environ["RANK"]) == dist.get_rank()
line = "rank " + os.environ["RANK"] + " OK " + " ".join(f"{k}={os.environ[k]}" for k in keys)
with open(f"env_{dist.get_rank()}.txt", "w") as f:   # one file per rank: what is tested here is
    f.write(line)                                    # the environment, not how outputs interleave
print("rank", os.environ["RANK"], "OK")
"""


def test_launcher_sets_torchruns_environment(tmp_path):
    proc = launch(tmp_path, ENV, 2)
    assert_ok(proc, 2)
    lines = [(tmp_path / f"env_{r}.txt").read_text() for r in range(2)]
    for r, line in enumerate(lines):
        env = dict(kv.split("=") for kv in line.split()[3:])
        assert env["RANK"] == env["LOCAL_RANK"] == env["ROLE_RANK"] == str(r)
        assert env["WORLD_SIZE"] == env["LOCAL_WORLD_SIZE"] == "2" and env["GROUP_RANK"] == "0"
        assert env["MASTER_ADDR"] == "127.0.0.1" and env["MASTER_PORT"] == "29500"
    assert len({line.split("TORCHELASTIC_RUN_ID=")[1].split()[0] for line in lines}) == 1


def test_printed_lines_of_the_ranks_never_mix(tmp_path, monkeypatch):
    """Unbuffered stdout (PYTHONUNBUFFERED) makes print write the text and the newline apart; the
    launcher's ranks still write whole lines, so lines of ranks printing at once never merge."""
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")
    proc = launch(tmp_path, """
        import mytorch.distributed as dist
        dist.init_process_group("gloo")
        r = dist.get_rank()
        for i in range(60):
            dist.barrier()                     # all ranks print at the same moment
            print(f"rank {r} line {i} " + "x" * 40)
        dist.barrier()
        print(f"rank {r} OK")
        """, 3)
    assert_ok(proc, 3)
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 * 61
    assert all(line.count("rank ") == 1 and (line.endswith("x" * 40) or line.endswith("OK"))
               for line in lines), [line for line in lines if line.count("rank ") != 1][:3]


def test_launcher_refuses_several_nodes():
    proc = subprocess.run([sys.executable, "-m", "mytorch.distributed.run", "--nnodes", "2",
                           "--nproc-per-node", "2", "x.py"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode != 0 and "mpiexec -f hostfile" in proc.stderr


# ----------------------------------------------------------------------------- one process
def test_api_before_init_like_torch():
    import torch.distributed as tdist

    for name in ("get_rank", "get_world_size"):
        with pytest.raises(ValueError) as ref:
            getattr(tdist, name)()
        with pytest.raises(ValueError) as mine:
            getattr(dist, name)()
        assert str(mine.value) == str(ref.value)
    assert dist.is_initialized() is tdist.is_initialized() is False
    assert dist.is_available() and dist.is_mpi_available() and not dist.is_nccl_available()
    assert repr(dist.ReduceOp.SUM) == repr(tdist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"
    assert dist.Backend("GLOO") == tdist.Backend("GLOO") == "gloo"
    with pytest.raises(ValueError):
        dist.Backend("carrier-pigeon")
    assert issubclass(dist.DistBackendError, dist.DistError) and issubclass(dist.DistError, RuntimeError)
    with pytest.raises(TypeError, match="Expected parameter `tensor` of type torch.Tensor"):
        dist.all_reduce([1, 2])


SAMPLER_CASES = [(n, reps, drop) for n in (0, 1, 5, 10, 11, 12) for reps in (1, 2, 3, 4)
                 for drop in (False, True)]


@pytest.mark.parametrize("n,reps,drop", SAMPLER_CASES)
def test_distributed_sampler_matches_torch(n, reps, drop):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    for rank in range(reps):
        mine = DistributedSampler(range(n), reps, rank, shuffle=False, drop_last=drop)
        ref = TorchSampler(range(n), reps, rank, shuffle=False, drop_last=drop)
        assert list(mine) == list(ref) and len(mine) == len(ref)


@pytest.mark.parametrize("drop", [False, True])
def test_distributed_sampler_shuffles_like_torch_given_the_same_permutation(monkeypatch, drop):
    """torch's generator differs from mytorch's, so give both the same permutation: the split
    into shares (padding, drop_last, strides) must then be the same, and every epoch differs."""
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    perms = {}

    def perm(seed: int, n: int) -> list[int]:
        return perms.setdefault((seed, n), np.random.default_rng(seed).permutation(n).tolist())

    def fake_randperm(n, generator=None, **kw):
        return lib.tensor(perm(generator.initial_seed(), n), dtype=lib.int64)

    for lib in (torch, mytorch):
        monkeypatch.setattr(lib, "randperm", fake_randperm)
        lib = lib  # noqa: PLW0127 - read by fake_randperm
    for epoch in (0, 3):
        for rank in range(3):
            lib = torch
            ref = TorchSampler(range(10), 3, rank, shuffle=True, seed=5, drop_last=drop)
            ref.set_epoch(epoch)
            expected = list(ref)
            lib = mytorch
            mine = DistributedSampler(range(10), 3, rank, shuffle=True, seed=5, drop_last=drop)
            mine.set_epoch(epoch)
            assert list(mine) == expected


def test_distributed_sampler_shares_are_disjoint_and_cover():
    shares = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    flat = sum(shares, [])
    assert len(flat) == 12 and set(flat) == set(range(10))  # 2 repeated to pad
    again = [list(DistributedSampler(range(10), 3, r, seed=1)) for r in range(3)]
    assert again == shares
    s = DistributedSampler(range(10), 3, 0, seed=1)
    s.set_epoch(1)
    assert list(s) != shares[0]
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(10), 3, 3)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        DistributedSampler(range(10))


def test_pieces_registered_for_chapter_12():
    assert {REGISTRY[k].exercise for k in ("ring_all_reduce", "distributed_indices",
                                           "assign_buckets", "tree_broadcast")} == \
        {"12.1", "12.2", "12.3", "12.4"}
    assert distributed_indices(5, 2, 1, False, 0, 0, False) == [1, 3, 0]


def test_assign_buckets_like_torch():
    # torch closes a bucket as soon as it reaches its cap; the first one has its own, smaller cap
    assert assign_buckets([4, 4, 4, 4, 4], 8, 4) == [[0], [1, 2], [3, 4]]
    assert assign_buckets([10, 1, 1, 1], 3, 5) == [[0], [1, 2, 3]]
    assert assign_buckets([], 8, 4) == []
    assert assign_buckets([1, 1], 100, 100) == [[0, 1]]
