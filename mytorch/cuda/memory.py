"""GPU memory: what tensors use, what the caching allocator keeps, and the peaks (``torch.cuda.memory``).

On a GPU, CuPy's memory pool is the caching allocator: freed blocks stay reserved for the next
allocation instead of going back to the driver (``cudaMalloc`` is slow and synchronises), which is
why ``memory_reserved() >= memory_allocated()`` and why ``empty_cache()`` exists. CuPy keeps no
peaks, so mytorch counts them with a CuPy memory hook, installed the first time a function of this
module runs (call ``reset_peak_memory_stats()`` before the code you measure).

The simulated device has no memory of its own (its arrays are host arrays), so its counters are 0;
``mem_get_info`` reports the host's memory there. Without CUDA the queries answer 0 / ``{}`` like
torch's CPU build.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from ._lazy import backend, backend_or_none, device_index

__all__ = ["empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "memory_stats", "memory_summary", "mem_get_info"]

_peaks: dict[int, list[int]] = {}   # device -> [peak allocated, peak reserved]
_hook: Any = None


def _real_pool() -> Any:
    """CuPy's default memory pool when a real GPU is in use, else None."""
    b = backend_or_none()
    if b is None or b.simulated:
        return None
    _install_hook(b.xp)
    return b.xp.get_default_memory_pool()


def _install_hook(cupy: Any) -> None:
    """Count peaks from now on: CuPy calls the hook after each allocation from its pool."""
    global _hook
    if _hook is not None:
        return
    pool = cupy.get_default_memory_pool()

    class _PeakHook(cupy.cuda.memory_hook.MemoryHook):
        name = "mytorch_peaks"

        def malloc_postprocess(self, device_id: int, **_: Any) -> None:
            with cupy.cuda.Device(device_id):
                used, total = pool.used_bytes(), pool.total_bytes()
            peak = _peaks.setdefault(device_id, [0, 0])
            peak[0], peak[1] = max(peak[0], used), max(peak[1], total)

    _hook = _PeakHook()
    _hook.__enter__()  # stays on for this thread


def _pool_bytes(device: Any) -> tuple[int, int]:
    pool = _real_pool()
    if pool is None:
        return 0, 0
    b = backend()
    with b.xp.cuda.Device(device_index(device)):
        return pool.used_bytes(), pool.total_bytes()


def empty_cache() -> None:
    """Give the cached, unused GPU memory back to the driver (other processes can then use it).
    It never frees memory that tensors still use."""
    pool = _real_pool()
    if pool is not None:
        pool.free_all_blocks()


def memory_allocated(device: Any = None) -> int:
    """Bytes occupied by tensors on the device now."""
    return _pool_bytes(device)[0]


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds (in use + cached for reuse)."""
    return _pool_bytes(device)[1]


def _peak(device: Any, which: int) -> int:
    now = _pool_bytes(device)
    if backend_or_none() is None or backend().simulated:
        return 0
    peak = _peaks.setdefault(device_index(device), [0, 0])
    peak[which] = max(peak[which], now[which])
    return peak[which]


def max_memory_allocated(device: Any = None) -> int:
    """The highest ``memory_allocated`` since the start (or ``reset_peak_memory_stats``)."""
    return _peak(device, 0)


def max_memory_reserved(device: Any = None) -> int:
    return _peak(device, 1)


def reset_peak_memory_stats(device: Any = None) -> None:
    """Start the peaks again from the current values."""
    idx = device_index(device)  # AssertionError without CUDA, as torch raises
    _peaks[idx] = list(_pool_bytes(idx))


def reset_max_memory_allocated(device: Any = None) -> None:
    reset_peak_memory_stats(device)


def memory_stats(device: Any = None) -> "OrderedDict[str, int]":
    """A few of torch's counters (``allocated_bytes.all.current`` ...); empty without CUDA."""
    if backend_or_none() is None:
        return OrderedDict()
    alloc, reserved = _pool_bytes(device)
    return OrderedDict([
        ("allocated_bytes.all.current", alloc),
        ("allocated_bytes.all.peak", max_memory_allocated(device)),
        ("reserved_bytes.all.current", reserved),
        ("reserved_bytes.all.peak", max_memory_reserved(device)),
    ])


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A short table of ``memory_stats``."""
    stats = memory_stats(device)
    if not stats:
        return "No CUDA device: no GPU memory to summarise."
    lines = [f"{k:32s} {v / 2 ** 20:10.2f} MiB" for k, v in stats.items()]
    return "\n".join(["|  mytorch CUDA memory summary, device " + str(device_index(device)), *lines])


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device's memory, from the driver (the host's when simulated)."""
    b = backend()
    idx = device_index(device)
    if b.simulated:
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
    with b.xp.cuda.Device(idx):
        free, total = b.xp.cuda.runtime.memGetInfo()
    return int(free), int(total)
