"""``mytorch.accelerator``: the device-neutral way to ask "is there a GPU, and which?".

Code written against ``torch.accelerator`` runs on whatever accelerator is present (here: CUDA
through CuPy, or the simulated CUDA device) and falls back to the CPU when there is none::

    dev = torch.accelerator.current_accelerator() or torch.device("cpu")
"""
from __future__ import annotations

from typing import Any

from . import cuda as _cuda
from ._device import device as _device

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index",
           "set_device_index", "synchronize", "device_index"]


def current_accelerator(check_available: bool = False) -> _device | None:
    """``device('cuda')`` when mytorch can use a GPU (CuPy, or the simulated one), else ``None``."""
    return _device("cuda") if _cuda.is_available() else None


def is_available() -> bool:
    """Whether an accelerator can be used."""
    return _cuda.is_available()


def device_count() -> int:
    """How many accelerator devices there are (0 without one)."""
    return _cuda.device_count()


def _need_one() -> None:
    """torch's error for asking about the accelerator's devices when there is none."""
    if not _cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _need_one()
    return _cuda.current_device()


def set_device_index(device: Any) -> None:
    """Make ``device`` (an index, a name or a device) the current accelerator device."""
    _need_one()
    _cuda.set_device(device)


def synchronize(device: Any = None) -> None:
    """Wait for every queued kernel on the accelerator (before timing GPU code). Like torch's, it
    raises when there is no accelerator: code that may run on a CPU asks ``is_available()`` first."""
    _need_one()
    _cuda.synchronize(device)


class device_index:
    """Context manager: the current accelerator device inside the block (``None``: unchanged)."""

    def __init__(self, device: Any) -> None:
        self.idx = device

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev)
