"""The MPI world that every rank joins, and its control channel.

``mpiexec`` (or ``python -m mytorch.distributed.run``) starts the processes; ``MPI_Init`` joins them
into ``COMM_WORLD``. Next to the data, mytorch keeps a *control channel* (a duplicate of the world
communicator) for two kinds of small messages, so that no rank waits forever:

* **failure notices** — a rank that stops with an exception tells every other rank which rank it
  is and what went wrong; a rank waiting in a collective reads the notice and raises
  ``DistBackendError("rank 1 failed: ...")`` instead of hanging;
* **status queries** — a rank whose collective timed out asks the others where they are; ranks
  that wait in mytorch answer with the operation they are in, so the error can say which rank
  never arrived.

MPI is imported here, lazily: mpi4py is an optional dependency (``pip install -e '.[dist]'``).
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

__all__ = ["DistError", "DistBackendError", "peer_failure", "mpi", "start", "rank", "size",
           "notify_failure", "poll", "status_of_others", "record_failure", "set_waiting",
           "user_traceback"]

TAG_FAIL, TAG_QUERY, TAG_REPLY = 1, 2, 3


class DistError(RuntimeError):
    """An error of the distributed package (``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """The communication backend failed: a peer died, a collective timed out, or the ranks
    disagreed about a collective (``torch.distributed.DistBackendError``)."""


DistError.__module__ = DistBackendError.__module__ = "mytorch.distributed"


def peer_failure(message: str, origin: int) -> DistBackendError:
    """The error a rank raises when rank ``origin`` failed (``.origin`` tells which)."""
    err = DistBackendError(message)
    err.origin = origin  # type: ignore[attr-defined]
    return err


_state: dict[str, Any] = {"MPI": None, "ctrl": None, "failed": None, "waiting": None,
                          "notified": False}


def mpi() -> Any:
    """The ``mpi4py.MPI`` module (initialising MPI on first use)."""
    if _state["MPI"] is None:
        try:
            import mpi4py
        except ImportError as e:  # optional dependency
            raise RuntimeError("mytorch.distributed needs MPI: pip install mpich mpi4py "
                               "(or pip install -e '.[dist]')") from e
        if "mpi4py.MPI" not in sys.modules:
            mpi4py.rc.thread_level = "serialized"  # one thread talks to MPI: no locking cost
        from mpi4py import MPI

        _state["MPI"] = MPI
    return _state["MPI"]


def start() -> None:
    """Join the world and open the control channel (every rank must call it: it is collective)."""
    if _state["ctrl"] is None:
        MPI = mpi()
        _state["ctrl"] = MPI.COMM_WORLD.Dup()
        _install_excepthook()


def rank() -> int:
    return mpi().COMM_WORLD.Get_rank()


def size() -> int:
    return mpi().COMM_WORLD.Get_size()


def set_waiting(what: str | None) -> None:
    """What this rank waits in now (its answer to status queries)."""
    _state["waiting"] = what


def notify_failure(summary: str) -> None:
    """Tell every other rank that this one failed (once; never for a failure relayed from a peer)."""
    ctrl = _state["ctrl"]
    if ctrl is None or _state["notified"]:
        return
    _state["notified"] = True
    me = ctrl.Get_rank()
    reqs = [ctrl.isend({"rank": me, "error": summary}, dest=r, tag=TAG_FAIL)
            for r in range(ctrl.Get_size()) if r != me]
    deadline = time.monotonic() + 2.0
    MPI = mpi()
    while reqs and time.monotonic() < deadline:  # small messages: delivered almost at once
        if MPI.Request.Testall(reqs):
            break
        time.sleep(0.001)


def poll() -> None:
    """Read the control channel: raise ``DistBackendError`` for a failure notice, answer queries."""
    ctrl = _state["ctrl"]
    if ctrl is None:
        return
    if _state["failed"] is not None:
        raise _state["failed"]
    MPI = mpi()
    status = MPI.Status()
    while ctrl.iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
        msg = ctrl.recv(source=status.Get_source(), tag=status.Get_tag())
        if status.Get_tag() == TAG_FAIL:
            where = _state["waiting"] or "its work"
            err = peer_failure(f"rank {msg['rank']} failed: {msg['error']} (rank {ctrl.Get_rank()} "
                              f"stopped while in {where})", msg["rank"])
            _state["failed"] = err
            raise err
        if status.Get_tag() == TAG_QUERY:
            ctrl.isend({"rank": ctrl.Get_rank(), "waiting": _state["waiting"]},
                       dest=msg["rank"], tag=TAG_REPLY)
        # TAG_REPLY arriving late (after the asker gave up): nothing to do


def status_of_others(wait: float = 0.5) -> dict[int, str | None]:
    """Ask every other rank what it is waiting in; ranks that do not answer within ``wait``
    seconds are busy outside mytorch.distributed (computing, or hung) or gone: ``None``."""
    ctrl = _state["ctrl"]
    MPI = mpi()
    me, n = ctrl.Get_rank(), ctrl.Get_size()
    for r in range(n):
        if r != me:
            ctrl.isend({"rank": me}, dest=r, tag=TAG_QUERY)
    answers: dict[int, str | None] = {r: None for r in range(n) if r != me}
    deadline = time.monotonic() + wait
    status = MPI.Status()
    while time.monotonic() < deadline and any(v is None for v in answers.values()):
        if ctrl.iprobe(source=MPI.ANY_SOURCE, tag=TAG_REPLY, status=status):
            msg = ctrl.recv(source=status.Get_source(), tag=TAG_REPLY)
            answers[msg["rank"]] = msg["waiting"] or "(between collectives)"
        else:
            time.sleep(0.001)
    return answers


def record_failure(exc: BaseException) -> None:
    """What a rank does when it stops with an exception: notify the others (unless it only
    relays a peer's failure) and write the error file the launcher reports from."""
    origin = getattr(exc, "origin", None)
    summary = f"{type(exc).__name__}: {exc}"
    if origin is None:
        notify_failure(summary)
    path = os.environ.get("MYTORCH_ERROR_FILE")
    if path:
        me = rank() if _state["MPI"] is not None else int(os.environ.get("RANK", "0"))
        with open(path, "w") as f:
            json.dump({"rank": me, "origin": me if origin is None else origin, "error": summary,
                       "time": time.time(),
                       "traceback": user_traceback(exc)}, f)


def user_traceback(exc: BaseException) -> str:
    """``exc``'s traceback from the script's own frames on (the launcher's bootstrap and runpy
    are left out)."""
    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_code.co_filename.endswith("distributed/run.py")
                              or tb.tb_frame.f_code.co_filename == "<frozen runpy>"):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def _install_excepthook() -> None:
    """An uncaught exception in a rank notifies the others (for ranks started without the
    launcher's bootstrap, e.g. by ``mpiexec -n 2 python train.py``)."""
    previous = sys.excepthook

    def hook(tp: type, value: BaseException, tb: Any) -> None:
        try:
            record_failure(value)
        finally:
            previous(tp, value, tb)
    sys.excepthook = hook
