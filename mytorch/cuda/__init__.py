"""mytorch.cuda: GPU devices through CuPy (or a simulated device for learning without a GPU)."""
from __future__ import annotations

from typing import Any

from .. import random as _random
from .._device import cuda_backend as _backend
from .._device import cuda_backend_or_none as _backend_or_none
from .._device import device as _dev
from .._device import simulate_cuda as _simulate_cuda
from .._legacy import CUDA_TYPES as _CUDA_TYPES

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "simulate", "is_simulated", "manual_seed", "manual_seed_all", "empty_cache", "device"]


def is_available() -> bool:
    """True when a CUDA device can be used (a real GPU via CuPy, or the simulated one)."""
    return _backend_or_none() is not None


def is_simulated() -> bool:
    b = _backend_or_none()
    return b is not None and b.simulated


def simulate(enabled: bool = True, count: int = 2) -> None:
    """Pretend there are ``count`` GPUs (arrays stay in host memory but follow device rules)."""
    _simulate_cuda(enabled, count)


def device_count() -> int:
    b = _backend_or_none()
    return 0 if b is None else b.device_count()


def current_device() -> int:
    return _backend().current_device()


def set_device(device: Any) -> None:
    d = _dev(device) if not isinstance(device, int) else _dev("cuda", device)
    _backend().set_device(d.index or 0)


def synchronize(device: Any = None) -> None:
    """Wait until every queued GPU kernel has finished (needed before timing GPU code)."""
    b = _backend_or_none()
    if b is not None:
        b.synchronize()


def manual_seed(seed: int) -> None:
    _random.manual_seed(seed)


manual_seed_all = manual_seed


def empty_cache() -> None:
    """Give cached, unused GPU memory back to the driver (CuPy's memory pool)."""
    b = _backend_or_none()
    if b is not None and not b.simulated:
        b.xp.get_default_memory_pool().free_all_blocks()


class device:
    """Context manager that changes the current CUDA device."""

    def __init__(self, device: Any) -> None:
        d = _dev(device) if not isinstance(device, int) else _dev("cuda", device)
        self.idx = d.index or 0

    def __enter__(self) -> None:
        self.prev = current_device()
        set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        set_device(self.prev)


globals().update(_CUDA_TYPES)  # torch.cuda.FloatTensor, ... (legacy type objects)
__all__ += list(_CUDA_TYPES)
del annotations  # the __future__ import binds this name: not part of the API
