"""mytorch.multiprocessing: Python's ``multiprocessing``, with tensors shared instead of copied.

Everything of ``multiprocessing`` is here (``Process``, ``Queue``, ``Pool``, ``get_context`` ...);
importing this module registers how tensors are pickled between processes (``reductions.py``):
a tensor put on a ``Queue`` moves to shared memory and only its name travels. With
``model.share_memory()``, processes started with ``Process(target=train, args=(model,))`` all
update the same parameters: Hogwild training (chapter 12). ``spawn(fn, args, nprocs)`` runs
``fn(i, *args)`` in ``nprocs`` processes and raises if one fails, like torch's.
"""
from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing import *  # noqa: F401,F403
from typing import Any, Callable

from .reductions import init_reductions

__all__ = ["spawn", "ProcessRaisedException", "ProcessExitedException", "init_reductions",
           *multiprocessing.__all__]

init_reductions()


class ProcessRaisedException(Exception):
    """A process started by ``spawn`` raised; the message holds its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.error_index, self.error_pid = error_index, error_pid


class ProcessExitedException(Exception):
    """A process started by ``spawn`` exited with a non-zero code (e.g. killed)."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int) -> None:
        super().__init__(msg)
        self.error_index, self.error_pid, self.exit_code = error_index, error_pid, exit_code


def _wrap(fn: Callable, i: int, args: tuple, errors: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except BaseException:  # noqa: BLE001 - reported to the parent, then the child exits
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1) from None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> Any:
    """Run ``fn(i, *args)`` for i in 0..nprocs-1, each in a new process; wait for all (``join``).
    The first process that fails makes ``spawn`` stop the others and raise with its traceback."""
    ctx = multiprocessing.get_context(start_method)
    errors = ctx.SimpleQueue()
    procs = [ctx.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
             for i in range(nprocs)]
    for p in procs:
        p.start()
    if not join:
        return procs
    alive = list(procs)
    while alive:
        for p in list(alive):
            p.join(0.05)
            if p.exitcode is None:
                continue
            alive.remove(p)
            if p.exitcode != 0:
                for q in alive:
                    q.terminate()
                i = procs.index(p)
                if not errors.empty():
                    idx, tb = errors.get()
                    raise ProcessRaisedException(
                        f"\n\n-- Process {idx} terminated with the following error:\n{tb}", idx,
                        procs[idx].pid)
                raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}",
                                             i, p.pid, p.exitcode)
    return None
