"""mytorch.cuda: GPU devices through CuPy (or a simulated device for learning without a GPU).

Three situations, one API (as ``torch.cuda``):

* **a real GPU** — CuPy sees a CUDA device (``pip install -e '.[gpu]'``, i.e. ``cupy-cuda12x``):
  ``cuda`` tensors hold CuPy arrays, kernels run on the GPU, streams/events/memory are CuPy's;
* **the simulated device** — ``MYTORCH_SIMULATE_CUDA=1`` or ``mytorch.cuda.simulate()``: two
  pretend GPUs whose arrays live in host memory but refuse to mix with CPU arrays, so every device
  rule (and every mistake) shows up on a laptop;
* **no CUDA** — the answers and errors of torch's CPU build (``is_available() -> False``,
  ``current_device()`` raises ``AssertionError: Torch not compiled with CUDA enabled``).

Layout like torch's: ``random.py`` (per-device generators), ``memory.py`` (allocator
statistics), ``streams.py`` (streams and events).
"""
from __future__ import annotations

from typing import Any

import contextlib as _contextlib
from collections.abc import Iterator as _Iterator

from .._device import cuda_state as _cuda_state
from .._device import restore_cuda_state as _restore_cuda_state
from .._device import simulate_cuda as _simulate_cuda
from . import memory, random, streams
from ._lazy import backend as _backend
from ._lazy import backend_or_none as _backend_or_none
from ._lazy import device_index as _device_index
from .memory import (empty_cache, max_memory_allocated, max_memory_reserved, mem_get_info,
                     memory_allocated, memory_reserved, memory_stats, memory_summary,
                     reset_max_memory_allocated, reset_peak_memory_stats)
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all,
                     seed, seed_all, set_rng_state, set_rng_state_all)
from .streams import (Event, Stream, StreamContext, current_stream, default_stream, set_stream,
                      stream)

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "simulate", "simulated", "is_simulated", "is_initialized", "init", "device", "device_of",
           "get_device_name", "get_device_properties", "get_device_capability",
           "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "get_rng_state_all", "set_rng_state", "set_rng_state_all", "default_generators",
           "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
           "memory_stats", "memory_summary", "mem_get_info", "Stream", "Event", "StreamContext",
           "stream", "current_stream", "default_stream", "set_stream", "memory", "random",
           "streams"]


def is_available() -> bool:
    """True when a CUDA device can be used (a real GPU via CuPy, or the simulated one)."""
    return _backend_or_none() is not None


def is_simulated() -> bool:
    """True when ``cuda`` is mytorch's simulated device rather than a GPU."""
    b = _backend_or_none()
    return b is not None and b.simulated


def simulate(enabled: bool = True, count: int = 2) -> None:
    """Pretend there are ``count`` GPUs (arrays stay in host memory but follow device rules)."""
    _simulate_cuda(enabled, count)


@_contextlib.contextmanager
def simulated(count: int = 2) -> _Iterator[None]:
    """``with mytorch.cuda.simulated():`` — the simulated GPUs inside the block only; afterwards
    CUDA is what it was before (a real GPU stays usable). mytorch only, like ``simulate``."""
    saved = _cuda_state()
    _simulate_cuda(True, count)
    try:
        yield
    finally:
        _restore_cuda_state(saved)


def is_initialized() -> bool:
    return _backend_or_none() is not None


def init() -> None:
    """Start CUDA now rather than at the first use (raises without CUDA, as torch does)."""
    _backend()


def device_count() -> int:
    b = _backend_or_none()
    return 0 if b is None else b.device_count()


def current_device() -> int:
    """The index of the device that ``'cuda'`` (no index) means now."""
    return _backend().current_device()


def set_device(device: Any) -> None:
    """Make ``device`` the current device; a negative index does nothing (as in torch)."""
    idx = _device_index(device, optional=False)
    if idx >= 0:
        _backend().set_device(idx)


def synchronize(device: Any = None) -> None:
    """Wait until every kernel queued on the device has finished (before reading a clock)."""
    b = _backend()
    if b.simulated:
        return
    with b.xp.cuda.Device(_device_index(device)):
        b.xp.cuda.Device().synchronize()


class device:
    """Context manager that changes the current CUDA device (``None`` / -1: no change)."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None else _device_index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx < 0:
            return
        if _backend_or_none() is None:
            raise RuntimeError("PyTorch was compiled without CUDA support (mytorch: no CUDA "
                               "device; set MYTORCH_SIMULATE_CUDA=1 to practise with a simulated one)")
        self.prev_idx = current_device()
        if self.prev_idx != self.idx:
            set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx >= 0 and self.prev_idx != self.idx:
            set_device(self.prev_idx)


class device_of(device):
    """``with device_of(t):`` makes ``t``'s device current (nothing for a CPU tensor)."""

    def __init__(self, obj: Any) -> None:
        super().__init__(obj.device.index if obj.is_cuda else -1)


class _Properties:
    """What ``get_device_properties`` reports (a few of torch's fields)."""

    def __init__(self, name: str, major: int, minor: int, total_memory: int,
                 multi_processor_count: int) -> None:
        self.name, self.major, self.minor = name, major, minor
        self.total_memory, self.multi_processor_count = total_memory, multi_processor_count

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2 ** 20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: Any = None) -> _Properties:
    b = _backend()
    idx = _device_index(device)
    if not 0 <= idx < b.device_count():
        raise AssertionError("Invalid device id")
    if b.simulated:
        return _Properties("mytorch simulated CUDA device", 0, 0, mem_get_info(idx)[1], 0)
    p = b.xp.cuda.runtime.getDeviceProperties(idx)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return _Properties(name, int(p["major"]), int(p["minor"]), int(p["totalGlobalMem"]),
                       int(p["multiProcessorCount"]))


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    p = get_device_properties(device)
    return p.major, p.minor


def __getattr__(name: str) -> Any:
    if name == "default_generators":  # depends on how many devices there are now
        return random.default_generators()
    raise AttributeError(f"module 'mytorch.cuda' has no attribute '{name}'")


from .._legacy import CUDA_TYPES as _CUDA_TYPES  # noqa: E402

globals().update(_CUDA_TYPES)  # torch.cuda.FloatTensor, ... (legacy type objects)
__all__ += list(_CUDA_TYPES)
del annotations  # the __future__ import binds this name: not part of the API
