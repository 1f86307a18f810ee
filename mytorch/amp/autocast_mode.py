"""``torch.autocast``: running chosen ops in a lower precision automatically.

On the CPU (``torch.autocast("cpu", dtype=torch.bfloat16)``, or ``torch.float16``), the ops of
torch's CPU lists cast their floating inputs as torch's autocast kernels do: matmuls, linear and
convolutions to the autocast dtype, losses and a few reductions to float32, every other op as it
is. The state lives here, per thread as in torch; the ops are wrapped by ``mytorch/_autocast.py``
(the hooks in ``ON_ENABLE``) when an autocast region is first entered, so programs that never
use autocast pay nothing. ``autocast(..., enabled=False)`` is a no-op, as in torch;
an enabled autocast on another device raises ``NotImplementedError``, so a result never silently
differs from torch's.
"""
from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import _dtype as D

__all__ = ["autocast", "is_autocast_available"]

# run as an enabled autocast region is entered (mytorch/__init__.py registers the wrapping, which
# does its work once)
ON_ENABLE: list[Callable[[], None]] = []
_DEVICES = ("cpu", "cuda")


class _State(threading.local):
    """torch's thread-local autocast state: per device, on or off and the dtype; ``inside`` counts
    the autocast ops running (their own inner ops are not cast again, as in torch); ``cache``
    holds the casts of float32 leaves that require grad (the weights) until the outermost region
    ends, so that a weight used twice is cast once and its two gradients meet in the lower
    precision, as in torch."""

    def __init__(self) -> None:
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": D.bfloat16, "cuda": D.float16}
        self.inside = 0
        self.nesting = 0
        self.cache_enabled = True
        self.cache: dict[int, tuple[Any, Any]] = {}  # id(weight) -> (weakref to it, its cast)


STATE = _State()


def _check_device(device_type: str) -> str:
    if device_type not in _DEVICES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """``torch.is_autocast_enabled``: is autocast on for ``device_type`` (no argument: "cuda")?"""
    return STATE.enabled[_check_device("cuda" if device_type is None else device_type)]


def get_autocast_dtype(device_type: str) -> D.dtype:
    """``torch.get_autocast_dtype``: the lower precision autocast uses on ``device_type``."""
    return STATE.dtype[_check_device(device_type)]


class autocast:
    """A context manager (and decorator): ops inside run in mixed precision (CPU only)."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        if enabled and device_type == "cpu" and self.fast_dtype not in (D.bfloat16, D.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling "
                          "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                          "torch.float16 currently.", stacklevel=2)
            enabled = False
        self._enabled = enabled
        self._cache_enabled = STATE.cache_enabled if cache_enabled is None else cache_enabled

    def __enter__(self) -> None:
        if self._enabled and self.device != "cpu":
            raise NotImplementedError(f"mytorch implements torch.autocast on the CPU only, not on "
                                      f"'{self.device}'")
        if self._enabled:
            for hook in ON_ENABLE:
                hook()
        self.prev = STATE.enabled[self.device], STATE.dtype[self.device], STATE.cache_enabled
        STATE.enabled[self.device] = self._enabled
        STATE.dtype[self.device] = self.fast_dtype
        STATE.cache_enabled = self._cache_enabled
        STATE.nesting += 1

    def __exit__(self, *exc: Any) -> None:
        STATE.nesting -= 1
        if STATE.nesting == 0:
            STATE.cache.clear()
        STATE.enabled[self.device], STATE.dtype[self.device], STATE.cache_enabled = self.prev

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return run


def is_autocast_available(device_type: str) -> bool:
    """``torch.amp.is_autocast_available``: can ``device_type`` autocast? (cpu and cuda)"""
    return device_type in _DEVICES
