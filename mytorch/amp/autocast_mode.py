"""``torch.autocast``: running chosen ops in a lower precision automatically.

mytorch does not rewrite ops under autocast. ``autocast(..., enabled=False)`` is a no-op, as in
torch (programs pass ``enabled=use_amp``); entering an enabled autocast raises
``NotImplementedError``, so a result never silently differs from torch's. Programs on the CPU
usually pick ``contextlib.nullcontext()`` instead, which works unchanged.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .._unsupported import unsupported_error

__all__ = ["autocast", "is_autocast_available"]


class autocast:
    """A context manager (and decorator) that refuses to run enabled; disabled, it does nothing."""

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device, self.fast_dtype, self._enabled = device_type, dtype, enabled

    def __enter__(self) -> None:
        if self._enabled:
            raise unsupported_error("torch.autocast", "mixed precision")

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return run


def is_autocast_available(device_type: str) -> bool:
    """False: mytorch has no autocast on any device."""
    return False
