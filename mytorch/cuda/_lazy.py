"""What every ``mytorch.cuda`` module needs: the backend, the no-GPU error, device indices.

Without any CUDA device (no GPU, no simulation), torch's CPU build answers in three ways and
``mytorch.cuda`` does the same: queries that have a natural empty answer give it
(``is_available() -> False``, ``device_count() -> 0``, ``memory_allocated() -> 0``); calls that
torch defers until CUDA starts are accepted and do nothing (``manual_seed``); everything that needs
a device raises torch's ``AssertionError: Torch not compiled with CUDA enabled``, followed by what
to do about it in mytorch.
"""
from __future__ import annotations

from typing import Any

from .._device import CudaBackend, cuda_backend, cuda_backend_or_none
from .._device import device as _device

__all__ = ["backend", "backend_or_none", "device_index", "NO_CUDA"]

#: how ``mytorch._device.cuda_backend`` words the missing device (torch's text, then ours)
NO_CUDA = "Torch not compiled with CUDA enabled"


def backend() -> CudaBackend:
    """The CUDA backend (CuPy or the simulated device), or torch's AssertionError."""
    return cuda_backend()


def backend_or_none() -> CudaBackend | None:
    return cuda_backend_or_none()


def device_index(device: Any, optional: bool = True) -> int:
    """torch's ``_get_device_index``: a cuda device, ``'cuda:1'``, an int or None -> an index
    (None and a bare ``'cuda'`` mean the current device)."""
    if device is None:
        return cuda_backend().current_device() if optional else 0
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        return cuda_backend().current_device() if device.index is None else device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
