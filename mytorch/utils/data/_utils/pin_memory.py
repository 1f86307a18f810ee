"""``pin_memory=True``: batches are copied into page-locked host memory before you get them.

The GPU's copy engine can read page-locked ("pinned") memory directly, so ``batch.cuda()`` from
pinned memory is faster and can overlap with compute (``non_blocking=True``). The loader walks
each batch like ``default_collate`` does and calls ``.pin_memory()`` on every tensor, and on any
object that has such a method (your own batch class). With worker processes this runs on a
thread of the main process, between the workers' result queue and your loop.
"""
from __future__ import annotations

import collections.abc
import queue
import threading
from typing import Any

from ...._tensor import Tensor
from . import MP_STATUS_CHECK_INTERVAL
from .collate import _rebuild_mapping, _rebuild_sequence
from .worker import ExceptionWrapper

__all__ = ["pin_memory"]


def pin_memory(data: Any, device: str | None = None) -> Any:
    """``data`` with every tensor (and every object with a ``pin_memory()`` method) pinned."""
    if isinstance(data, Tensor) or hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: pin_memory(v, device) for k, v in data.items()})
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):   # namedtuple
            return type(data)(*(pin_memory(x, device) for x in data))
        return type(data)(pin_memory(x, device) for x in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(x, device) for x in data])
    return data


def _pin_memory_loop(in_queue: Any, out_queue: queue.Queue, done_event: threading.Event,
                     device: str | None) -> None:
    """The pinning thread: move results from the workers' queue to the loader's, pinned."""
    while not done_event.is_set():
        try:
            item = in_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
        except queue.Empty:
            continue
        task_id, data = item
        if not done_event.is_set() and not isinstance(data, ExceptionWrapper):
            try:
                data = pin_memory(data, device)
            except Exception:
                data = ExceptionWrapper(where=f"in pin memory thread for device {device}")
            item = (task_id, data)
        while not done_event.is_set():
            try:
                out_queue.put(item, timeout=MP_STATUS_CHECK_INTERVAL)
                break
            except queue.Full:
                continue
