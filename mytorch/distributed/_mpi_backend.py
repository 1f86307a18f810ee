"""The ``"mpi"`` backend: collectives on MPI's non-blocking operations, each with a timeout.

Every operation starts an MPI request (``Iallreduce``, ``Ibcast``, ...) and waits by testing it in
a loop, so that while it waits mytorch can also read the control channel (a failed peer becomes a
``DistBackendError`` naming it) and watch the clock (a timeout becomes an error saying where the
other ranks are). MPI's own blocking calls poll the same way, so this costs almost nothing.

Before each collective the ranks exchange a 16-number *signature* (sequence number, operation,
root, dtype and shape): ranks that call different collectives, or pass tensors of different
shapes, get a clear error on every rank instead of corrupted memory or a hang.

Tensors on a CUDA device are staged through host memory (MPI sees host buffers only).
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable

import numpy as np

from .._tensor import Tensor
from .._device import cuda_backend
from . import _world
from ._world import DistBackendError

__all__ = ["ProcessGroupMPI", "Work", "OPS"]

#: collective names, by the code sent in the signature
OPS = ["init_process_group", "barrier", "all_reduce", "broadcast", "all_gather", "reduce_scatter",
       "reduce", "gather", "scatter", "all_gather_object", "broadcast_object_list", "new_group"]
_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
           "complex64", "complex128", "uint16", "uint32", "uint64"]
_MAX_DIMS = 10


ALL_REDUCE_PART = 16 * 2 ** 20  # bytes

#: the tag of monitored_barrier's messages (MPI guarantees tags up to 32767; send/recv default to 0)
MONITORED_BARRIER_TAG = 32767


def _parts(buf: np.ndarray) -> list[np.ndarray]:
    """``buf`` (contiguous) as pieces of at most ``ALL_REDUCE_PART`` bytes. MPICH's non-blocking
    all-reduce of one 100 MB buffer ran at half the speed of its blocking one here, while several
    16 MB ones in flight together beat both (``python -m bench distributed``)."""
    flat = buf.reshape(-1)
    step = max(1, ALL_REDUCE_PART // max(1, flat.itemsize))
    if flat.size <= step:
        return [buf]
    return [flat[i:i + step] for i in range(0, flat.size, step)]


class Work:
    """A started operation (``torch.distributed.Work``): ``wait()``, ``is_completed()``."""

    def __init__(self, group: "ProcessGroupMPI", what: str, reqs: list, finish: Callable[[], Any]
                 | None = None, result: Any = None) -> None:
        self._group, self._what, self._reqs = group, what, reqs
        self._finish, self._result, self._done = finish, result, False

    def _complete(self) -> None:
        if not self._done:
            self._done = True
            if self._finish is not None:
                value = self._finish()
                if value is not None:
                    self._result = value

    def is_completed(self) -> bool:
        if not self._done and _world.mpi().Request.Testall(self._reqs):
            self._complete()
        return self._done

    def wait(self, timeout: Any = None) -> bool:
        """Block until the operation has finished (``timeout``: a ``timedelta``, else the group's)."""
        if not self._done:
            seconds = None if timeout is None else _seconds(timeout)
            self._group.wait(self._reqs, self._what, seconds)
            self._complete()
        return True

    def result(self) -> Any:
        return self._result

    def exception(self) -> None:
        return None

    def source_rank(self) -> int:
        return self._result

    def get_future(self) -> "Future":
        return Future(self)


class Future:
    """The little of ``torch.futures.Future`` that DDP-style code uses: ``wait``, ``value``,
    ``done``, ``then``."""

    def __init__(self, work: Work, fn: Callable | None = None, parent: "Future | None" = None) -> None:
        self._work, self._fn, self._parent = work, fn, parent

    def wait(self) -> Any:
        self._work.wait()
        return self.value()

    def done(self) -> bool:
        return self._work.is_completed()

    def value(self) -> Any:
        if self._fn is None:
            return self._work.result()
        return self._fn(self._parent)

    def then(self, callback: Callable[["Future"], Any]) -> "Future":
        return Future(self._work, callback, self)


def _seconds(timeout: Any) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


def _describe(sig: np.ndarray) -> str:
    op = OPS[sig[1]] if 0 <= sig[1] < len(OPS) else "?"
    text = f"{op} #{sig[0]}"
    if sig[4] >= 0:
        shape = [int(d) for d in sig[6:6 + sig[5]]]
        text += f" of a {_DTYPES[sig[4]]} tensor of shape {shape}"
    if sig[2] >= 0:
        text += f" (root {sig[2]})"
    return text


class ProcessGroupMPI:
    """A group of ranks talking through one MPI communicator."""

    def __init__(self, comm: Any, timeout: float, name: str = "mpi") -> None:
        self.comm, self.timeout, self.name = comm, timeout, name
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.seq = 0

    @classmethod
    def world(cls, timeout: float) -> "ProcessGroupMPI":
        _world.start()
        MPI = _world.mpi()
        comm, req = MPI.COMM_WORLD.Idup()
        group = cls(comm, timeout)
        group.wait([req], "init_process_group")
        return group

    # ------------------------------------------------------------------ waiting
    def wait(self, reqs: list, what: str, timeout: float | None = None) -> None:
        """Test ``reqs`` until they complete, reading the control channel and the clock."""
        MPI = _world.mpi()
        try:
            self.spin(lambda: MPI.Request.Testall(reqs), what, timeout)
        except MPI.Exception as e:
            raise DistBackendError(f"{what} failed in MPI on rank {self.rank}: {e}") from None

    def spin(self, done: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        """Call ``done()`` until it is true, reading the control channel (another rank's failure)
        and the clock (the group's timeout) every 64 tries."""
        if done():
            return
        _world.set_waiting(what)
        limit = self.timeout if timeout is None else timeout
        start, spins = time.monotonic(), 0
        try:
            while not done():
                spins += 1
                if spins & 63:
                    continue
                _world.poll()
                elapsed = time.monotonic() - start
                if elapsed > limit:
                    self._timed_out(what, limit)
                if elapsed > 0.05:  # a long wait: let the other processes have the core
                    time.sleep(0.0002)
                else:  # more ranks than free cores: the peer we wait for may need this one
                    os.sched_yield()
        finally:
            _world.set_waiting(None)

    def _timed_out(self, what: str, limit: float) -> None:
        others = _world.status_of_others()
        lines = [f"rank {r}: " + (f"waiting in {w}" if w else
                                  "no answer (busy outside mytorch.distributed, hung, or exited)")
                 for r, w in sorted(others.items())]
        raise DistBackendError(f"{what} timed out after {limit:g} s on rank {self.rank}. Where the "
                               "other ranks are:\n  " + "\n  ".join(lines))

    # ------------------------------------------------------------------ signatures
    def agree(self, op: str, tensor: Tensor | None = None, root: int = -1) -> str:
        """Check that every rank is at the same collective with the same kind of tensor."""
        self.seq += 1
        sig = np.full(16, -1, np.int64)
        sig[0], sig[1], sig[2] = self.seq, OPS.index(op), root
        if tensor is not None:
            shape = tuple(tensor.shape)
            if len(shape) > _MAX_DIMS:
                shape = (int(np.prod(shape)),)
            sig[4], sig[5] = _DTYPES.index(tensor.dtype.name), len(shape)
            sig[6:6 + len(shape)] = shape
        what = _describe(sig)
        if self.size == 1:
            return what
        table = np.empty((self.size, 16), np.int64)
        self.wait([self.comm.Iallgather(sig, table)], what)
        if not (table == table[0]).all():
            rows = "\n  ".join(f"rank {r}: {_describe(row)}" for r, row in enumerate(table))
            raise DistBackendError(
                f"the ranks disagree about collective #{self.seq}: every rank must call the same "
                f"collectives in the same order, with tensors of the same shape and dtype (and the "
                f"same root):\n  {rows}")
        return what

    # ------------------------------------------------------------------ buffers
    @staticmethod
    def host(t: Tensor) -> np.ndarray:
        """A contiguous host array holding ``t``'s values (``t``'s own memory when possible)."""
        arr = t._data
        if t._device.type != "cpu":
            arr = cuda_backend().to_host(arr)
        if arr.dtype == np.float16:
            return arr.astype(np.float32)  # MPI has no half type: reduce in float32
        return arr if arr.flags.c_contiguous and arr.flags.writeable else np.ascontiguousarray(arr)

    @staticmethod
    def store(t: Tensor, arr: np.ndarray) -> None:
        """Write ``arr``'s values back into ``t`` (nothing to do when ``arr`` is ``t``'s memory)."""
        if arr is t._data:
            return
        if t._device.type != "cpu":
            t._data[...] = cuda_backend().to_device(arr.astype(t._data.dtype, copy=False),
                                                    t._device.index)
        else:
            t._data[...] = arr
        t._bump()

    # ------------------------------------------------------------------ collectives
    def barrier(self) -> Work:
        what = self.agree("barrier")
        return Work(self, what, [self.comm.Ibarrier()])

    def all_reduce(self, t: Tensor, mpi_op: Any, average: bool) -> Work:
        what = self.agree("all_reduce", t)
        buf = self.host(t)
        MPI = _world.mpi()
        if self.size > 1:  # started all at once, in the same order on every rank
            reqs = [self.comm.Iallreduce(MPI.IN_PLACE, part, mpi_op) for part in _parts(buf)]
        else:
            reqs = [MPI.REQUEST_NULL]

        def finish() -> None:
            if average:
                np.divide(buf, self.size, out=buf, casting="unsafe")
            self.store(t, buf)
        return Work(self, what, reqs, finish, [t])

    def broadcast(self, t: Tensor, src: int) -> Work:
        what = self.agree("broadcast", t, src)
        buf = self.host(t)
        return Work(self, what, [self.comm.Ibcast(buf, root=src)], lambda: self.store(t, buf), [t])

    def all_gather_into(self, out: Tensor, t: Tensor) -> Work:
        what = self.agree("all_gather", t)
        buf, dst = self.host(t), self.host(out)
        return Work(self, what, [self.comm.Iallgather(buf, dst)], lambda: self.store(out, dst), [out])

    def reduce_scatter_from(self, out: Tensor, t: Tensor, mpi_op: Any, average: bool) -> Work:
        what = self.agree("reduce_scatter", t)
        buf, dst = self.host(t), self.host(out)

        def finish() -> None:
            if average:
                np.divide(dst, self.size, out=dst, casting="unsafe")
            self.store(out, dst)
        return Work(self, what, [self.comm.Ireduce_scatter_block(buf, dst, mpi_op)], finish, [out])

    def reduce(self, t: Tensor, dst: int, mpi_op: Any, average: bool) -> Work:
        what = self.agree("reduce", t, dst)
        buf = self.host(t)
        MPI = _world.mpi()
        if self.rank == dst:
            req = self.comm.Ireduce(MPI.IN_PLACE, buf, mpi_op, root=dst)
        else:
            req = self.comm.Ireduce(buf, None, mpi_op, root=dst)

        def finish() -> None:
            if self.rank == dst:
                if average:
                    np.divide(buf, self.size, out=buf, casting="unsafe")
                self.store(t, buf)
        return Work(self, what, [req], finish, [t])

    def gather_into(self, t: Tensor, out: np.ndarray | None, dst: int, done: Callable) -> Work:
        what = self.agree("gather", t, dst)
        return Work(self, what, [self.comm.Igather(self.host(t), out, root=dst)], done)

    def scatter_from(self, t: Tensor, src_buf: np.ndarray | None, src: int) -> Work:
        what = self.agree("scatter", t, src)
        buf = self.host(t)
        return Work(self, what, [self.comm.Iscatter(src_buf, buf, root=src)],
                    lambda: self.store(t, buf), [t])

    # ------------------------------------------------------------------ objects (pickled)
    def all_gather_bytes(self, data: bytes) -> list[bytes]:
        what = self.agree("all_gather_object")
        sizes = np.empty(self.size, np.int64)
        self.wait([self.comm.Iallgather(np.array([len(data)], np.int64), sizes)], what)
        out = np.empty(int(sizes.sum()), np.uint8)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.wait([self.comm.Iallgatherv(np.frombuffer(data, np.uint8),
                                         [out, sizes, offsets, _world.mpi().BYTE])], what)
        return [out[o:o + s].tobytes() for o, s in zip(offsets, sizes)]

    def broadcast_bytes(self, data: bytes | None, src: int) -> bytes:
        what = self.agree("broadcast_object_list", root=src)
        size = np.array([len(data) if data is not None else 0], np.int64)
        self.wait([self.comm.Ibcast(size, root=src)], what)
        buf = np.frombuffer(data, np.uint8).copy() if self.rank == src else np.empty(int(size[0]),
                                                                                      np.uint8)
        self.wait([self.comm.Ibcast(buf, root=src)], what)
        return buf.tobytes()

    def monitored_barrier(self, timeout: float, wait_all_ranks: bool) -> None:
        """Rank 0 waits up to ``timeout`` seconds for a message from every other rank, then lets
        them all go; ranks that did not report make rank 0 raise ``RuntimeError`` naming them
        (the first in rank order, or all with ``wait_all_ranks``). No signature exchange: a rank
        that never arrives is exactly what this barrier is for."""
        if self.size == 1:
            return
        tag, what = MONITORED_BARRIER_TAG, "monitored_barrier"
        token = np.zeros(1, np.int64)
        if self.rank != 0:  # report, then wait (the group's timeout) for rank 0 to answer or fail
            self.wait([self.comm.Isend(token, dest=0, tag=tag)], what)
            self.wait([self.comm.Irecv(np.zeros(1, np.int64), source=0, tag=tag)], what)
            return
        boxes = {r: np.zeros(1, np.int64) for r in range(1, self.size)}
        reqs = {r: self.comm.Irecv(boxes[r], source=r, tag=tag) for r in boxes}
        arrived: set[int] = set()
        start = time.monotonic()

        def settled() -> bool:
            arrived.update(r for r, q in reqs.items() if r not in arrived and q.Test())
            return len(arrived) == len(reqs) or time.monotonic() - start > timeout
        self.spin(settled, what, timeout + max(1.0, timeout))  # settled() watches the clock first
        late = [r for r in reqs if r not in arrived]
        if late:
            for r in late:  # take back the receives the late ranks' messages would have matched
                reqs[r].Cancel()
                reqs[r].Wait()
            ranks = "Ranks " + ", ".join(map(str, late)) if wait_all_ranks else f"Rank {late[0]}"
            raise RuntimeError(f"[Rank 0]: {ranks} failed to pass monitoredBarrier in "
                               f"{round(timeout * 1000)} ms")
        self.wait([self.comm.Isend(token, dest=r, tag=tag) for r in reqs], what)

    # ------------------------------------------------------------------ point to point
    def send(self, t: Tensor, dst: int, tag: int) -> Work:
        buf = self.host(t)
        if buf is t._data:  # MPI reads it later: a snapshot, so a change after isend is not sent
            buf = buf.copy()
        return Work(self, f"send to rank {dst} (tag {tag})", [self.comm.Isend(buf, dest=dst, tag=tag)])

    def recv(self, t: Tensor, src: int | None, tag: int) -> Work:
        """Match the message first (``Improbe``), so that a size mismatch is a clear error."""
        MPI = _world.mpi()
        source = MPI.ANY_SOURCE if src is None else src
        what = f"recv from {'any rank' if src is None else f'rank {src}'} (tag {tag})"
        buf = self.host(t)
        state: dict[str, Any] = {}

        class _Probe:  # a request-like object: done when a matching message has arrived
            def Test(self_inner) -> bool:  # noqa: N802,N805 - MPI's naming
                if "msg" not in state:
                    status = MPI.Status()
                    msg = self.comm.improbe(source=source, tag=tag, status=status)
                    if msg is None:
                        return False
                    state["msg"], state["status"] = msg, status
                return True

        def finish() -> int:
            status = state["status"]
            nbytes, want = status.Get_count(MPI.BYTE), buf.nbytes
            if nbytes != want:
                state["msg"].recv(bytearray(nbytes))  # take it off the queue, then complain
                raise DistBackendError(
                    f"recv on rank {self.rank}: the message from rank {status.Get_source()} has "
                    f"{nbytes} bytes but the receiving tensor (shape {list(t.shape)}, {t.dtype}) "
                    f"holds {want}: send and recv need tensors of the same size and dtype")
            state["msg"].Recv(buf)
            self.store(t, buf)
            return status.Get_source()
        return _RecvWork(self, what, _Probe(), finish)


class _RecvWork(Work):
    """A receive: waits for the matching message, then copies it in."""

    def __init__(self, group: ProcessGroupMPI, what: str, probe: Any, finish: Callable) -> None:
        super().__init__(group, what, [], finish)
        self._probe = probe

    def is_completed(self) -> bool:
        if not self._done and self._probe.Test():
            self._complete()
        return self._done

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            self._group.spin(self._probe.Test, self._what,
                             None if timeout is None else _seconds(timeout))
            self._complete()
        return True
