"""``DataLoader``: batches from a dataset, optionally loaded by worker processes.

With ``num_workers=0`` everything happens in your process, one batch when you ask for it::

    for indices in batch_sampler:                      # e.g. [3, 0, 4], [1, 2]
        yield collate_fn([dataset[i] for i in indices])

With ``num_workers=n > 0`` the loader starts ``n`` processes (``multiprocessing``, forked on
Linux like torch). Batches are handed out round-robin — worker 0 gets batches 0, n, 2n, ...,
worker 1 gets 1, n+1, ... — and ``prefetch_factor`` of them per worker are kept in flight, so
the next batches are being loaded while you train on this one. Results may arrive out of order;
the loader gives them to you in order. The workers are stopped at the end of the epoch (kept
with ``persistent_workers=True``), when the iterator is dropped (``break``, an exception), and
when a worker fails: an exception in a worker is raised in your process with the worker's
traceback; a worker that dies (killed, segfault) or a ``timeout`` raises ``RuntimeError``
instead of hanging.
"""
from __future__ import annotations

import itertools
import math
import multiprocessing
import multiprocessing.queues
import os
import queue
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from ... import accelerator
from ..._creation import empty
from ..._dtype import int64
from . import _utils
from ._utils.collate import default_collate, default_convert
from ._utils.fetch import _DatasetKind
from ._utils.pin_memory import _pin_memory_loop, pin_memory
from ._utils.worker import (ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration,
                            _worker_loop, get_worker_info)
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

T_co = TypeVar("T_co", covariant=True)


class _InfiniteConstantSampler(Sampler):
    """The "sampler" of an IterableDataset: ``None`` forever (the dataset decides what comes)."""

    def __iter__(self) -> Any:
        while True:
            yield None


# The processes, queues and event of every running multi-process iterator, by id(iterator). An
# iterator that ends up in a reference cycle (an exception's traceback holds its frames) is freed
# by the garbage collector, which closes the queues it finds in the cycle *before* calling the
# iterator's __del__: the "stop" message would never leave. Listed here, they stay reachable.
_RUNNING: dict[int, tuple] = {}


class _ResultQueue(multiprocessing.queues.Queue):
    """The workers' result queue. A batch that cannot be pickled (say, it holds a lambda) would
    be dropped by the queue's sending thread, leaving the loader waiting for it forever; here it
    is replaced by the error, raised in the main process like any other worker error."""

    def _on_queue_feeder_error(self, e: Exception, obj: Any) -> None:
        if not (isinstance(obj, tuple) and len(obj) == 2):
            return super()._on_queue_feeder_error(e, obj)  # type: ignore[misc]
        info = get_worker_info()
        where = "in DataLoader worker process " + ("?" if info is None else str(info.id))
        try:
            raise RuntimeError(f"the batch could not be sent to the main process: {e!r}") from e
        except RuntimeError:
            self.put((obj[0], ExceptionWrapper(where=where)))


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches (see the module docstring for what happens where).

    Arguments as torch's: ``batch_size`` (``None``: no batching, samples one by one through
    ``default_convert``), ``shuffle`` (a ``RandomSampler`` every epoch), ``sampler`` /
    ``batch_sampler`` (your own order), ``drop_last``, ``collate_fn``, ``num_workers``,
    ``worker_init_fn(worker_id)``, ``multiprocessing_context`` ('fork', 'spawn', 'forkserver' or a
    context), ``generator`` (drives shuffling and the workers' seeds), ``prefetch_factor``
    (batches in flight per worker, default 2), ``persistent_workers``, ``timeout`` (seconds to
    wait for a worker's batch, 0 = forever), ``pin_memory``, ``in_order``.
    """

    __initialized = False

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler[list] | Iterable[list] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None, multiprocessing_context: Any = None,
                 generator: Any = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(dataset)  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True
        self._IterableDataset_len_called: int | None = None
        self._iterator: _BaseDataLoaderIter | None = None
        self.check_worker_number_rationality()

    # ------------------------------------------------------------------ configuration
    @property
    def multiprocessing_context(self) -> Any:
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context: Any) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid start "
                                     f"method in {methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or "
                                "a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr: str, val: Any) -> None:
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def check_worker_number_rationality(self) -> None:
        """Warn (as torch does) when asking for more workers than this process may use CPUs."""
        if not self.num_workers:
            return
        has_affinity = hasattr(os, "sched_getaffinity")
        cpus = len(os.sched_getaffinity(0)) if has_affinity else os.cpu_count()
        if cpus is not None and self.num_workers <= cpus:
            return
        if cpus is None:
            suggest = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            suggest = (f"Our suggested max number of worker in current system is {cpus}"
                       f"{'' if has_affinity else ' (`cpuset` is not taken into account)'}, which is "
                       "smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. "
                      f"{suggest} Please be aware that excessive worker creation might get DataLoader "
                      "running slow or even freeze, lower the worker number to avoid potential "
                      "slowness/freeze if necessary.", stacklevel=3)

    # ------------------------------------------------------------------ iteration
    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self) -> _BaseDataLoaderIter:
        """A new pass over the data (an epoch). With persistent workers, the same workers again."""
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        """The number of batches (of samples without batching). For an IterableDataset it is
        computed from ``len(dataset)``, which the dataset must get right for every worker split."""
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """One pass over a DataLoader: what ``iter(loader)`` returns."""

    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as "
                          f"the device,ignore pin_memory_device='{loader.pin_memory_device}'.",
                          stacklevel=3)
        # Asked only when pinning (as torch): probing for a GPU is not free, and changes state.
        has_accelerator = loader.pin_memory and accelerator.is_available()
        if loader.pin_memory and not has_accelerator:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then "
                          "device pinned memory won't be used.", stacklevel=3)
        self._pin_memory = loader.pin_memory and has_accelerator
        current = accelerator.current_accelerator() if self._pin_memory else None
        self._pin_memory_device = None if current is None else current.type
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # One draw per epoch: the workers' seeds are base_seed + worker_id.
        self._base_seed = int(empty((), dtype=int64).random_(generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self) -> _BaseDataLoaderIter:
        return self

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self) -> Any:
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __next__(self) -> Any:
        data = self._next_data()
        if isinstance(data, ExceptionWrapper):   # a worker's error, raised here
            del self   # the traceback keeps this frame: it must not keep the loader (and workers) alive
            data.reraise()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                   f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly "
                        "configuring the IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset "
                        "for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self) -> Any:
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """``num_workers=0``: fetch each batch in this process when it is asked for."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:   # torch's check: a timeout only means something with workers
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = _DatasetKind.create_fetcher(self._dataset_kind, self._dataset,
                                                    self._auto_collation, self._collate_fn,
                                                    self._drop_last)

    def _next_data(self) -> Any:
        index = self._next_index()
        data = self._fetcher.fetch(index)
        if self._pin_memory:
            data = pin_memory(data, self._pin_memory_device)
        return data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """``num_workers > 0``: worker processes fetch; this process hands out tasks and reorders.

    Book-keeping: task ``k`` (the k-th batch of the epoch) goes to the next active worker in
    turn; ``_task_info[k]`` holds ``(worker,)`` while it is out and ``(worker, data)`` once it came
    back early; ``_rcvd_idx`` is the next task to give to the user.
    """

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._shutdown = False
        self._workers_done_event = ctx.Event()
        self._worker_result_queue = _ResultQueue(ctx=ctx)
        self._index_queues: list[Any] = []
        self._workers: list[Any] = []
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()   # never block exit on tasks nobody will do
                w = ctx.Process(target=_worker_loop, daemon=True,
                                args=(self._dataset_kind, self._dataset, index_queue,
                                      self._worker_result_queue, self._workers_done_event,
                                      self._auto_collation, self._collate_fn, self._drop_last,
                                      self._base_seed, loader.worker_init_fn, i, self._num_workers))
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        _RUNNING[id(self)] = (self._workers, self._index_queues, self._worker_result_queue,
                              self._workers_done_event)
        if self._pin_memory:
            self._pin_memory_thread_done_event = threading.Event()
            self._data_queue: Any = queue.Queue()
            self._pin_memory_thread = threading.Thread(
                target=_pin_memory_loop, daemon=True,
                args=(self._worker_result_queue, self._data_queue, self._pin_memory_thread_done_event,
                      accelerator.current_device_index()))
            self._pin_memory_thread.start()
        else:
            self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0          # the next task to hand out
        self._rcvd_idx = 0          # the next task to give to the user
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:   # persistent workers: restart every worker's fetcher, drop stale results
            for q in self._index_queues:
                q.put(_ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                task_id, _ = self._get_data()
                if isinstance(task_id, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    # ------------------------------------------------------------------ receiving
    def _check_workers(self) -> None:
        """Raise (after stopping the others) if a worker that should be running has died."""
        dead = [(i, w) for i, w in enumerate(self._workers)
                if self._workers_status[i] and not w.is_alive()]
        if not dead:
            return
        details = []
        for i, w in dead:
            self._workers_status[i] = False
            code = w.exitcode
            if code is not None and code < 0:
                details.append(f"DataLoader worker (pid {w.pid}) is killed by signal: "
                               f"{signal.strsignal(-code)}. ")
            else:
                details.append(f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code "
                               f"{code}. Details are lost due to multiprocessing. Rerunning with "
                               "num_workers=0 may give better error trace.")
        self._shutdown_workers()
        pids = ", ".join(str(w.pid) for _, w in dead)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") \
            from RuntimeError(" ".join(details))

    def _try_get_data(self, timeout: float) -> tuple[bool, Any]:
        """One result within ``timeout`` seconds, checking often that the workers are alive."""
        deadline = time.monotonic() + timeout
        while True:
            wait = min(_utils.WORKER_CHECK_INTERVAL, max(deadline - time.monotonic(), 0.0))
            try:
                return True, self._data_queue.get(timeout=wait)
            except queue.Empty:
                pass
            self._check_workers()
            if time.monotonic() >= deadline:
                return False, None

    def _get_data(self) -> Any:
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            if self._pin_memory and not self._pin_memory_thread.is_alive():
                raise RuntimeError("Pin memory thread exited unexpectedly")
            ok, data = self._try_get_data(_utils.MP_STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def _next_data(self) -> Any:
        while True:
            # Skip tasks whose worker ended (an exhausted IterableDataset copy) without a result.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:     # it came back earlier
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            task_id, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task_id != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(task_id)[0]
                    return self._process_data(data, worker_id)
                self._task_info[task_id] += (data,)      # keep it until its turn
                continue
            worker_id = self._task_info.pop(task_id)[0]
            self._rcvd_idx += 1
            return self._process_data(data, worker_id)

    def _process_data(self, data: Any, worker_id: int) -> Any:
        """Refill the pipeline; the data, or the worker's ExceptionWrapper for __next__ to raise."""
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        return data

    # ------------------------------------------------------------------ sending
    def _try_put_index(self) -> None:
        """Hand the next batch of indices to the next active worker (round-robin)."""
        try:
            index = self._next_index()
        except StopIteration:
            return
        max_tasks = self._prefetch_factor * self._num_workers
        for _ in range(self._num_workers):
            worker = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker] and (
                    self._in_order
                    or self._workers_num_tasks[worker] < max_tasks // sum(self._workers_status)):
                break
        else:
            return   # no active worker left
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._workers_num_tasks[worker] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    # ------------------------------------------------------------------ stopping
    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        self._index_queues[worker_id].put(None)   # the worker's loop ends on None
        self._workers_status[worker_id] = False

    def _shutdown_workers(self) -> None:
        """Stop the pinning thread and every worker; whatever happens, no process is left."""
        if self._shutdown or _utils is None or _utils.python_exit_status:
            return
        self._shutdown = True
        try:
            if hasattr(self, "_pin_memory_thread"):
                self._pin_memory_thread_done_event.set()
                self._worker_result_queue.put((None, None))   # wake the thread up
                self._pin_memory_thread.join()
                self._worker_result_queue.cancel_join_thread()
                self._worker_result_queue.close()
            self._workers_done_event.set()
            for i in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[i]:
                    self._mark_worker_as_unavailable(i, shutdown=True)
            for w in self._workers:
                w.join(timeout=_utils.SHUTDOWN_JOIN_TIMEOUT)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_utils.SHUTDOWN_JOIN_TIMEOUT)
            _RUNNING.pop(id(self), None)

    def __del__(self) -> None:
        if hasattr(self, "_workers"):
            self._shutdown_workers()
