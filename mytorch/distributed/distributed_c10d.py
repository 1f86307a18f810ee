"""torch.distributed's API: process groups, collectives and point-to-point messages.

Several processes (*ranks*) run the same script; a *process group* connects them. A collective is
called by every rank of the group, in the same order, with tensors of the same shape:

* ``all_reduce(t)``: every rank ends with the sum (or max, ...) of everyone's ``t``;
* ``broadcast(t, src)``: every rank ends with ``src``'s ``t``;
* ``all_gather(list, t)``, ``reduce_scatter(out, list)``, ``reduce``, ``gather``, ``scatter``, ``barrier``;
* ``send(t, dst)`` / ``recv(t, src)`` move one tensor between two ranks.

``async_op=True`` returns a :class:`Work` at once (``wait()`` it before reading the tensor).
Backends: ``"mpi"`` (and ``"gloo"``, the same engine under torch's CPU name) on MPI through
mpi4py; ``"nccl"`` on CuPy's NCCL bindings when every rank has a GPU (``_nccl_backend.py``).

Two collectives are *pieces* (chapter 12's exercises), written on send/recv only:
``ring_all_reduce`` (12.1) and ``tree_broadcast`` (12.4); MPI's own algorithms are their fast
paths.
"""
from __future__ import annotations

import enum
import os
import pickle
from datetime import timedelta
from typing import Any

import numpy as np

import mytorch as torch
import mytorch.distributed as dist

from .._creation import from_numpy
from .._pieces import piece, pieces
from .._tensor import Tensor
from . import _nccl_backend, _world
from ._mpi_backend import ProcessGroupMPI, Work

__all__ = ["Backend", "ReduceOp", "GroupMember", "Work", "ProcessGroup", "init_process_group",
           "destroy_process_group", "is_initialized", "is_available", "is_mpi_available",
           "is_gloo_available", "is_nccl_available", "get_rank", "get_world_size", "get_backend",
           "new_group", "barrier", "monitored_barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "reduce", "gather", "scatter", "send", "recv",
           "isend", "irecv", "all_gather_object", "broadcast_object_list", "ring_all_reduce",
           "tree_broadcast", "default_pg_timeout"]

#: torch's default timeout of a collective
default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """A backend name: ``Backend("GLOO") == "gloo"``."""

    GLOO, MPI, NCCL = "gloo", "mpi", "nccl"

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        value = name.lower()
        if value not in ("gloo", "mpi", "nccl"):
            raise ValueError(f"Invalid backend: '{name}'")
        return str.__new__(cls, value)


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"


class ReduceOp:
    """How ``all_reduce`` / ``reduce`` / ``reduce_scatter`` combine the ranks' values."""

    RedOpType = RedOpType
    SUM, AVG, PRODUCT, MIN, MAX = RedOpType.SUM, RedOpType.AVG, RedOpType.PRODUCT, RedOpType.MIN, \
        RedOpType.MAX
    BAND, BOR, BXOR, PREMUL_SUM = RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR, RedOpType.PREMUL_SUM


class ProcessGroup:
    """A set of ranks and the backend connecting them."""

    def __init__(self, backend: Any, backend_name: str, ranks: list[int]) -> None:
        self._backend, self._name, self._ranks = backend, backend_name, ranks

    def rank(self) -> int:
        return self._backend.rank

    def size(self) -> int:
        return self._backend.size

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<mytorch.distributed.ProcessGroup {self._name} ranks={self._ranks}>"


class GroupMember:
    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = -100


_groups: list[ProcessGroup] = []

_NOT_INIT = ("Default process group has not been initialized, please make sure to call "
             "init_process_group.")


# ---------------------------------------------------------------------------- availability
def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    try:
        _world.mpi()
    except RuntimeError:
        return False
    return True


def is_gloo_available() -> bool:
    return is_mpi_available()  # "gloo" runs on the same MPI engine here


def is_nccl_available() -> bool:
    return _nccl_backend.available()


def is_initialized() -> bool:
    return GroupMember.WORLD is not None


# ---------------------------------------------------------------------------- set up / tear down
def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store: Any = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Join this process to the default group of all ranks (every rank calls it).

    The processes must have been started together: ``python -m mytorch.distributed.run
    --nproc-per-node N script.py`` (torchrun's interface) or ``mpiexec -n N python script.py``.
    ``rank`` / ``world_size`` (or the environment's ``RANK`` / ``WORLD_SIZE``) are checked
    against MPI's. Every collective gives up after ``timeout`` (default 30 minutes).
    """
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or "gloo")
    if isinstance(backend, str) and ":" in backend:  # "cpu:gloo,cuda:nccl": the CPU engine
        name = Backend("gloo")
    seconds = (timeout or default_pg_timeout).total_seconds()
    if name == "nccl":
        engine = _nccl_backend.ProcessGroupNCCL.world(seconds)
    else:
        engine = ProcessGroupMPI.world(seconds)
    env_rank, env_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    for what, given, actual in (("world_size", world_size, engine.size), ("rank", rank, engine.rank),
                                ("WORLD_SIZE", env_size, engine.size), ("RANK", env_rank, engine.rank)):
        if given not in (None, -1, "") and int(given) != actual:
            raise ValueError(
                f"{what}={given}, but this process is rank {engine.rank} of an MPI job of "
                f"{engine.size} process(es): the ranks must be started together, e.g. "
                "python -m mytorch.distributed.run --nproc-per-node N script.py "
                "(or mpiexec -n N python script.py)")
    GroupMember.WORLD = ProcessGroup(engine, str(name), list(range(engine.size)))
    _groups.append(GroupMember.WORLD)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave ``group`` (default: every group, including the default one)."""
    targets = list(_groups) if group is None or group is GroupMember.WORLD else [group]
    for g in targets:
        comm = getattr(g._backend, "comm", None)
        if comm is not None and hasattr(comm, "Free"):
            comm.Free()
        _groups.remove(g)
    if group is None or group is GroupMember.WORLD:
        GroupMember.WORLD = None


def _pg(group: ProcessGroup | None) -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError(_NOT_INIT)
    return GroupMember.WORLD if group is None else group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (0 ... world_size - 1)."""
    g = _pg(group)
    return GroupMember.NON_GROUP_MEMBER if g is GroupMember.NON_GROUP_MEMBER else g.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """How many ranks ``group`` has."""
    return _pg(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    return _pg(group).name()


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None,
              backend: str | None = None, **kwargs: Any) -> Any:
    """A group of some ranks (every rank of the default group calls it, member or not)."""
    world = _pg(None)
    members = sorted(range(world.size())) if ranks is None else sorted(ranks)
    engine = world._backend
    engine.agree("new_group")
    me = world.rank()
    MPI = _world.mpi()
    color = 0 if me in members else MPI.UNDEFINED
    comm = engine.comm.Split(color, members.index(me) if me in members else 0)
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    seconds = (timeout.total_seconds() if timeout else engine.timeout)
    g = ProcessGroup(ProcessGroupMPI(comm, seconds), world.name(), members)
    _groups.append(g)
    return g


# ---------------------------------------------------------------------------- helpers
def _tensor(t: Any, param: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{param}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")
    return t


def _mpi_op(op: Any) -> tuple[Any, bool]:
    """MPI's reduction for a ReduceOp, and whether to divide by the group size after (AVG)."""
    MPI = _world.mpi()
    op = RedOpType(op)
    table = {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
             RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
             RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}
    if op not in table:
        raise ValueError(f"Cannot use ReduceOp.{op.name} with the MPI backend")
    return table[op], op is RedOpType.AVG


def _finish(work: Any, async_op: bool) -> Any:
    if async_op:
        return work
    work.wait()
    return None


def _group_rank(g: ProcessGroup, global_rank: int, what: str) -> int:
    if global_rank not in g._ranks:
        raise ValueError(f"{what} rank {global_rank} is not part of the group {g._ranks}")
    return g._ranks.index(global_rank)


def _is_mpi(g: ProcessGroup) -> bool:
    return type(g._backend) is ProcessGroupMPI  # (the NCCL engine subclasses it for control)


# ---------------------------------------------------------------------------- collectives
def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None,
            timeout: timedelta | None = None) -> Any:
    """Wait until every rank of the group has reached the barrier."""
    work = _pg(group)._backend.barrier()
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group: ProcessGroup | None = None, timeout: timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that do not arrive: rank 0 waits for each other rank (at
    most ``timeout``, the group's by default) and raises ``RuntimeError`` naming the first late
    rank (all of them with ``wait_all_ranks=True``); the others wait for rank 0 to let them go.
    Like torch, only for the CPU backends ("gloo", and mytorch's "mpi")."""
    g = _pg(group)
    if g.name() not in (Backend.GLOO, Backend.MPI):
        raise ValueError("monitored_barrier is only implemented for GLOO backend.")
    engine = g._backend
    seconds = engine.timeout if timeout is None else timeout.total_seconds() \
        if isinstance(timeout, timedelta) else float(timeout)
    engine.monitored_barrier(seconds, wait_all_ranks)


def all_reduce(tensor: Tensor, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Any:
    """Combine ``tensor`` over all ranks, in place: afterwards every rank holds the result."""
    _tensor(tensor)
    g = _pg(group)
    if (_is_mpi(g) and g is GroupMember.WORLD and RedOpType(op) in (RedOpType.SUM, RedOpType.AVG)
            and pieces.ring_all_reduce is not _fast_ring_all_reduce):
        return _finish(_all_reduce_by_piece(g, tensor, RedOpType(op) is RedOpType.AVG), async_op)
    if _is_mpi(g):
        mpi_op, average = _mpi_op(op)
        return _finish(g._backend.all_reduce(tensor, mpi_op, average), async_op)
    return _finish(g._backend.all_reduce(tensor, op), async_op)


def _all_reduce_by_piece(g: ProcessGroup, tensor: Tensor, average: bool) -> Work:
    """all_reduce through the ``ring_all_reduce`` piece that is switched on (a student's)."""
    engine = g._backend
    what = engine.agree("all_reduce", tensor)
    buf = engine.host(tensor)
    flat = from_numpy(buf.reshape(-1))
    pieces.ring_all_reduce(flat, engine.rank, engine.size)
    if average:
        np.divide(buf, engine.size, out=buf, casting="unsafe")
    engine.store(tensor, buf)
    return Work(engine, what, [], result=[tensor])


def broadcast(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None,
              async_op: bool = False, group_src: int | None = None) -> Any:
    """Copy ``tensor`` from rank ``src`` into ``tensor`` on every other rank."""
    _tensor(tensor)
    g = _pg(group)
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "src")
    if (_is_mpi(g) and g is GroupMember.WORLD
            and pieces.tree_broadcast is not _fast_tree_broadcast):
        engine = g._backend
        what = engine.agree("broadcast", tensor, root)
        pieces.tree_broadcast(tensor, root, engine.rank, engine.size)
        return _finish(Work(engine, what, [], result=[tensor]), async_op)
    return _finish(g._backend.broadcast(tensor, root), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor,
                           group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """Every rank's ``input_tensor``, concatenated along dim 0 (or stacked), into ``output_tensor``."""
    _tensor(output_tensor, "output_tensor")
    _tensor(input_tensor, "input_tensor")
    g = _pg(group)
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size")
    if output_tensor.dtype is not input_tensor.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    return _finish(g._backend.all_gather_into(output_tensor, input_tensor), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Any:
    """``tensor_list[r]`` receives rank ``r``'s ``tensor``."""
    _tensor(tensor)
    g = _pg(group)
    if len(tensor_list) != g.size():
        raise ValueError(f"tensor_list must hold one tensor per rank ({g.size()}), got {len(tensor_list)}")
    for t in tensor_list:
        _tensor(t, "tensor_list")
        if tuple(t.shape) != tuple(tensor.shape) or t.dtype is not tensor.dtype:
            raise ValueError("all_gather: every tensor of tensor_list must have the shape and dtype "
                             f"of tensor ({list(tensor.shape)}, {tensor.dtype}); got "
                             f"{list(t.shape)}, {t.dtype}")
    out = torch.empty((g.size(), *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    work = g._backend.all_gather_into(out, tensor)

    def unpack(work_finish: Any = work._finish) -> Any:
        if work_finish is not None:
            work_finish()
        for t, part in zip(tensor_list, out.unbind(0)):
            t.copy_(part)
        return tensor_list
    work._finish = unpack
    return _finish(work, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """Reduce ``input`` (world_size blocks along dim 0) over the ranks; rank r keeps block r."""
    _tensor(output, "output")
    _tensor(input, "input")
    g = _pg(group)
    if input.numel() != output.numel() * g.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    if _is_mpi(g):
        mpi_op, average = _mpi_op(op)
        return _finish(g._backend.reduce_scatter_from(output, input, mpi_op, average), async_op)
    return _finish(g._backend.reduce_scatter_from(output, input, op), async_op)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: Any = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Any:
    """``output`` on rank r = the reduction over ranks of their ``input_list[r]``."""
    _tensor(output, "output")
    g = _pg(group)
    if len(input_list) != g.size():
        raise ValueError(f"input_list must hold one tensor per rank ({g.size()}), got {len(input_list)}")
    return reduce_scatter_tensor(output, torch.stack([t.reshape(output.shape) for t in input_list]),
                                 op, group, async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: Any = ReduceOp.SUM,
           group: ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Any:
    """Like ``all_reduce``, but only rank ``dst`` receives the result."""
    _tensor(tensor)
    g = _pg(group)
    root = group_dst if group_dst is not None else _group_rank(g, 0 if dst is None else dst, "dst")
    mpi_op, average = _mpi_op(op)
    return _finish(g._backend.reduce(tensor, root, mpi_op, average), async_op)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: ProcessGroup | None = None, async_op: bool = False,
           group_dst: int | None = None) -> Any:
    """Rank ``dst`` receives every rank's ``tensor`` in ``gather_list``."""
    _tensor(tensor)
    g = _pg(group)
    root = group_dst if group_dst is not None else _group_rank(g, 0 if dst is None else dst, "dst")
    me = g.rank()
    if me == root:
        if gather_list is None or len(gather_list) != g.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    engine = g._backend
    out = np.empty((g.size(), *tensor.shape), engine.host(tensor).dtype) if me == root else None

    def done() -> None:
        if out is not None:
            for t, part in zip(gather_list, out):  # type: ignore[arg-type]
                t.copy_(from_numpy(np.ascontiguousarray(part)))
    return _finish(engine.gather_into(tensor, out, root, done), async_op)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: ProcessGroup | None = None, async_op: bool = False,
            group_src: int | None = None) -> Any:
    """Rank ``src`` sends ``scatter_list[r]`` to rank r, which receives it in ``tensor``."""
    _tensor(tensor)
    g = _pg(group)
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "src")
    me = g.rank()
    src_buf = None
    if me == root:
        if scatter_list is None or len(scatter_list) != g.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        src_buf = np.ascontiguousarray(np.stack([g._backend.host(t) for t in scatter_list]))
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    return _finish(g._backend.scatter_from(tensor, src_buf, root), async_op)


def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """``object_list[r]`` = rank r's (picklable) ``obj``."""
    g = _pg(group)
    for r, data in enumerate(g._backend.all_gather_bytes(pickle.dumps(obj))):
        object_list[r] = pickle.loads(data)


def broadcast_object_list(object_list: list[Any], src: int | None = None,
                          group: ProcessGroup | None = None, device: Any = None,
                          group_src: int | None = None) -> None:
    """Replace ``object_list``'s items on every rank by those of rank ``src``."""
    g = _pg(group)
    root = group_src if group_src is not None else _group_rank(g, 0 if src is None else src, "src")
    data = pickle.dumps(list(object_list)) if g.rank() == root else None
    object_list[:] = pickle.loads(g._backend.broadcast_bytes(data, root))


# ---------------------------------------------------------------------------- point to point
def _peer(g: ProcessGroup, peer: int | None, group_peer: int | None, what: str) -> int:
    if group_peer is not None:
        return group_peer
    if peer is None:
        raise ValueError(f"{what} rank must be given")
    r = _group_rank(g, peer, what)
    if r == g.rank():
        kind = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {kind} rank: {kind} rank should not be the same as the rank of "
                         "the current process.")
    return r


def isend(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Work:
    """Start sending ``tensor`` to rank ``dst``; returns a Work to ``wait()``."""
    _tensor(tensor)
    g = _pg(group)
    return g._backend.send(tensor, _peer(g, dst, group_dst, "dst"), tag)


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None) -> Work:
    """Start receiving into ``tensor`` from ``src`` (None: any rank)."""
    _tensor(tensor)
    g = _pg(group)
    source = None if src is None and group_src is None else _peer(g, src, group_src, "src")
    return g._backend.recv(tensor, source, tag)


def send(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has gone."""
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src`` (None: any); returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return work.source_rank()


# ---------------------------------------------------------------------------- pieces 12.1, 12.4
def _fast_ring_all_reduce(flat, rank, world_size):
    """MPI's own all-reduce (its algorithms pick ring, tree or recursive halving by size)."""
    engine = dist.GroupMember.WORLD._backend
    buf = engine.host(flat)
    engine.wait([engine.comm.Iallreduce(_world.mpi().IN_PLACE, buf, _world.mpi().SUM)],
                "all_reduce")
    engine.store(flat, buf)
    return flat


@piece("12.1", fast=_fast_ring_all_reduce)
def ring_all_reduce(flat: "Tensor", rank: int, world_size: int) -> "Tensor":
    """Sum the 1-D tensor ``flat`` over all ranks, in place, with messages around a ring.

    Cut ``flat`` into ``world_size`` chunks; each rank only ever sends to its right neighbour and
    receives from its left one, one chunk per step. Reduce-scatter (N - 1 steps): the chunk that
    arrives is added into this rank's copy of it, and that partial sum travels on in the next
    step, so that at the end every rank holds one chunk summed over all ranks. All-gather
    (N - 1 steps): the finished chunks travel round the ring, overwriting. Each rank sends
    2(N-1)/N of the data, whatever N is: the bandwidth-optimal all-reduce.
    """
    chunks = list(flat.tensor_split(world_size))
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    for step in range(world_size - 1):  # reduce-scatter
        send_chunk = chunks[(rank - step) % world_size]
        recv_chunk = chunks[(rank - step - 1) % world_size]
        incoming = torch.empty_like(recv_chunk)
        request = dist.isend(send_chunk, right)
        dist.recv(incoming, left)
        request.wait()
        recv_chunk += incoming
    for step in range(world_size - 1):  # all-gather
        request = dist.isend(chunks[(rank - step + 1) % world_size], right)
        dist.recv(chunks[(rank - step) % world_size], left)
        request.wait()
    return flat


def _fast_tree_broadcast(tensor, src, rank, world_size):
    engine = dist.GroupMember.WORLD._backend
    buf = engine.host(tensor)
    engine.wait([engine.comm.Ibcast(buf, root=src)], "broadcast")
    engine.store(tensor, buf)
    return tensor


@piece("12.4", fast=_fast_tree_broadcast)
def tree_broadcast(tensor: "Tensor", src: int, rank: int, world_size: int) -> "Tensor":
    """Copy ``tensor`` from rank ``src`` to every rank in ceil(log2 N) rounds of send/recv.

    In each round, every rank that already holds the data sends it to one rank that does not,
    so the number of holders doubles each round (a binomial tree): N - 1 messages in all, and
    no rank sends more than ceil(log2 N). Numbering the ranks from the source helps.
    """
    me = (rank - src) % world_size
    step = 1
    while step < world_size:
        if me < step and me + step < world_size:
            dist.send(tensor, (me + step + src) % world_size)
        elif step <= me < 2 * step:
            dist.recv(tensor, (me - step + src) % world_size)
        step *= 2
    return tensor

