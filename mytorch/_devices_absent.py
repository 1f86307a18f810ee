"""``torch.xpu`` and ``torch.mps``: the namespaces of devices mytorch has no backend for.

torch's CPU build has both and answers ``is_available()`` with False, so programs that pick a
device (``"cuda" if ... else "mps" if torch.mps.is_available() else "cpu"``) run unchanged. Any
other function of these namespaces is a placeholder that raises ``NotImplementedError`` naming it.
"""
from __future__ import annotations

import sys
import types
from typing import Any

from ._unsupported import Unsupported

__all__ = ["absent_device_module", "cpu", "mps", "xpu"]


def absent_device_module(name: str, what: str) -> types.ModuleType:
    """A module ``mytorch.<name>`` whose device is never available (``torch.<name>``)."""
    mod = types.ModuleType(f"mytorch.{name}", f"torch.{name}: {what}; mytorch has no backend for it.")

    def is_available() -> bool:
        """False: mytorch has no backend for this device."""
        return False

    def device_count() -> int:
        """0: no device of this kind is usable."""
        return 0

    def is_initialized() -> bool:
        """False: there is nothing to initialise."""
        return False

    for fn in (is_available, device_count, is_initialized):
        fn.__module__ = mod.__name__
        setattr(mod, fn.__name__, fn)
    mod.__getattr__ = lambda attr: _placeholder(name, attr)  # type: ignore[method-assign]
    mod.__all__ = ["is_available", "device_count", "is_initialized"]
    sys.modules[mod.__name__] = mod
    return mod


def _cpu_module() -> types.ModuleType:
    """``torch.cpu``: the CPU as a device module (always available, one device)."""
    mod = types.ModuleType("mytorch.cpu", "torch.cpu: the CPU, in the interface of torch.cuda.")

    def is_available() -> bool:
        """True: the CPU is always there."""
        return True

    def device_count() -> int:
        """1: torch counts the CPU as one device."""
        return 1

    def current_device() -> str:
        """``"cpu"``."""
        return "cpu"

    def synchronize(device: Any = None) -> None:
        """Nothing to wait for: CPU kernels finish before they return."""

    def is_initialized() -> bool:
        """True."""
        return True

    for fn in (is_available, device_count, current_device, synchronize, is_initialized):
        fn.__module__ = mod.__name__
        setattr(mod, fn.__name__, fn)
    mod.__getattr__ = lambda attr: _placeholder("cpu", attr)  # type: ignore[method-assign]
    mod.__all__ = [fn.__name__ for fn in (is_available, device_count, current_device, synchronize,
                                         is_initialized)]
    sys.modules[mod.__name__] = mod
    return mod


def _placeholder(name: str, attr: str) -> Unsupported:
    if attr.startswith("_"):
        raise AttributeError(f"module 'mytorch.{name}' has no attribute '{attr}'")
    return Unsupported(f"torch.{name}.{attr}", None)


cpu = _cpu_module()
xpu = absent_device_module("xpu", "Intel GPUs")
mps = absent_device_module("mps", "Apple's Metal GPUs")
