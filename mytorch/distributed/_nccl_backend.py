"""The ``"nccl"`` backend: collectives between GPUs through CuPy's NCCL bindings.

NVIDIA's NCCL moves data GPU to GPU (NVLink, PCIe, InfiniBand) without a trip through host memory,
on a CUDA stream. The ranks still form an MPI world: MPI hands rank 0's NCCL id to the others,
carries the signature check and the control channel (failures, timeouts); NCCL carries the data.
A collective is queued on the current stream and a CUDA event is recorded after it; waiting polls
that event, the control channel and the clock, and a timed-out communicator is aborted.

Needs a GPU per rank, CuPy, and NCCL's library (``pip install nvidia-nccl-cu12``). This module is
not exercised by the test suite without GPUs; ``tests/test_distributed.py`` has its gpu leg.
"""
from __future__ import annotations

import os
import time
from typing import Any

from .._device import cuda_backend_or_none
from .._tensor import Tensor
from . import _world
from ._mpi_backend import ProcessGroupMPI, Work
from ._world import DistBackendError

__all__ = ["available", "ProcessGroupNCCL"]


def _nccl() -> Any:
    b = cuda_backend_or_none()
    if b is None or b.simulated:
        return None
    from cupy.cuda import nccl  # optional: only with a real GPU

    return nccl if getattr(nccl, "available", False) else None


def available() -> bool:
    try:
        return _nccl() is not None
    except ImportError:
        return False


class _EventRequest:
    """A request-like object over a CUDA event (what ``ProcessGroupMPI.wait`` tests)."""

    def __init__(self, event: Any) -> None:
        self.event = event

    def Test(self) -> bool:  # noqa: N802 - MPI's naming
        return bool(self.event.done)


class ProcessGroupNCCL(ProcessGroupMPI):
    """Data through NCCL on the current CUDA stream, control through MPI."""

    @classmethod
    def world(cls, timeout: float) -> "ProcessGroupNCCL":
        nccl = _nccl()
        if nccl is None:
            raise RuntimeError("Distributed package doesn't have NCCL built in")
        base = ProcessGroupMPI.world(timeout)
        group = cls(base.comm, timeout, "nccl")
        xp = cuda_backend_or_none().xp  # type: ignore[union-attr]
        local = int(os.environ.get("LOCAL_RANK", group.rank))
        xp.cuda.runtime.setDevice(local % xp.cuda.runtime.getDeviceCount())
        uid = nccl.get_unique_id() if group.rank == 0 else None
        uid = group.comm.bcast(uid, root=0)
        group.nccl = nccl
        group.xp = xp
        group.ncomm = nccl.NcclCommunicator(group.size, uid, group.rank)
        return group

    # ------------------------------------------------------------------ helpers
    def _dtype(self, t: Tensor) -> int:
        names = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16",
                 "int32": "NCCL_INT32", "int64": "NCCL_INT64", "uint8": "NCCL_UINT8",
                 "int8": "NCCL_INT8", "bool": "NCCL_UINT8"}
        if t.dtype.name not in names:
            raise TypeError(f"NCCL cannot reduce {t.dtype}")
        return getattr(self.nccl, names[t.dtype.name])

    def _op(self, op: Any) -> tuple[int, bool]:
        name = getattr(op, "name", str(op))
        table = {"SUM": "NCCL_SUM", "AVG": "NCCL_SUM", "PRODUCT": "NCCL_PROD", "MIN": "NCCL_MIN",
                 "MAX": "NCCL_MAX"}
        if name not in table:
            raise ValueError(f"Cannot use ReduceOp.{name} with NCCL")
        return getattr(self.nccl, table[name]), name == "AVG"

    def _cuda(self, t: Tensor) -> Any:
        if t._device.type != "cuda":
            raise RuntimeError("No backend type associated with device type cpu")
        if not t._data.flags.c_contiguous:
            raise ValueError("Tensors must be contiguous")
        return t._data

    def _queued(self, what: str, t: Tensor | None, finish: Any = None) -> Work:
        stream = self.xp.cuda.get_current_stream()
        event = self.xp.cuda.Event(disable_timing=True)
        event.record(stream)
        return Work(self, what, [_EventRequest(event)], finish, [t] if t is not None else None)

    def wait(self, reqs: list, what: str, timeout: float | None = None) -> None:
        if reqs and isinstance(reqs[0], _EventRequest):
            limit = self.timeout if timeout is None else timeout
            start = time.monotonic()
            _world.set_waiting(what)
            try:
                while not all(r.Test() for r in reqs):
                    _world.poll()
                    if time.monotonic() - start > limit:
                        self.ncomm.abort()
                        self._timed_out(what, limit)
                    time.sleep(0.0001)
            finally:
                _world.set_waiting(None)
            return
        super().wait(reqs, what, timeout)

    # ------------------------------------------------------------------ collectives
    def all_reduce(self, t: Tensor, op: Any, average: bool = False) -> Work:  # type: ignore[override]
        what = self.agree("all_reduce", t)
        arr = self._cuda(t)
        nop, avg = self._op(op)
        stream = self.xp.cuda.get_current_stream().ptr
        self.ncomm.allReduce(arr.data.ptr, arr.data.ptr, arr.size, self._dtype(t), nop, stream)
        if avg:
            arr /= self.size
        return self._queued(what, t)

    def broadcast(self, t: Tensor, src: int) -> Work:
        what = self.agree("broadcast", t, src)
        arr = self._cuda(t)
        self.ncomm.bcast(arr.data.ptr, arr.size, self._dtype(t), src,
                         self.xp.cuda.get_current_stream().ptr)
        return self._queued(what, t)

    def all_gather_into(self, out: Tensor, t: Tensor) -> Work:
        what = self.agree("all_gather", t)
        a, o = self._cuda(t), self._cuda(out)
        self.ncomm.allGather(a.data.ptr, o.data.ptr, a.size, self._dtype(t),
                             self.xp.cuda.get_current_stream().ptr)
        return self._queued(what, out)

    def reduce_scatter_from(self, out: Tensor, t: Tensor, op: Any,  # type: ignore[override]
                            average: bool = False) -> Work:
        what = self.agree("reduce_scatter", t)
        a, o = self._cuda(t), self._cuda(out)
        nop, avg = self._op(op)
        self.ncomm.reduceScatter(a.data.ptr, o.data.ptr, o.size, self._dtype(t), nop,
                                 self.xp.cuda.get_current_stream().ptr)
        if avg:
            o /= self.size
        return self._queued(what, out)

    def send(self, t: Tensor, dst: int, tag: int) -> Work:
        a = self._cuda(t)
        self.ncomm.send(a.data.ptr, a.size, self._dtype(t), dst, self.xp.cuda.get_current_stream().ptr)
        return self._queued(f"send to rank {dst}", t)

    def recv(self, t: Tensor, src: int | None, tag: int) -> Work:
        if src is None:
            raise DistBackendError("NCCL receives need the source rank (recv from any rank is MPI's)")
        a = self._cuda(t)
        self.ncomm.recv(a.data.ptr, a.size, self._dtype(t), src, self.xp.cuda.get_current_stream().ptr)
        return self._queued(f"recv from rank {src}", t, lambda: src)
