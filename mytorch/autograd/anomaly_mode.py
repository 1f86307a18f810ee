"""Anomaly detection: when a backward produces NaN, name the forward operation that caused it.

With anomaly mode on, every recorded node keeps the Python traceback of the forward call that
created it (costly, hence off by default). When a node's backward fails or returns NaN, the engine
prints that traceback in a warning and raises ``RuntimeError("Function 'XBackward0' returned nan
values in its 0th output.")``.
"""
from __future__ import annotations

import functools
import os
import traceback
import warnings
from typing import Any, Callable

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]


class _Anomaly:
    """Anomaly-detection switches (set by ``autograd.detect_anomaly``)."""

    enabled = False
    check_nan = True


_anomaly = _Anomaly()


def _forward_trace() -> list:
    """The current stack without mytorch's own frames (anomaly mode shows the user's forward)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frames = traceback.extract_stack()
    keep = [f for f in frames if not os.path.abspath(f.filename).startswith(root)]
    return traceback.format_list(keep)


def is_anomaly_enabled() -> bool:
    return _anomaly.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _anomaly.check_nan


class detect_anomaly:
    """Context manager / decorator turning anomaly detection on inside its block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._prev = (_anomaly.enabled, _anomaly.check_nan)
        _anomaly.enabled, _anomaly.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        _anomaly.enabled, _anomaly.check_nan = self._prev

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(self.check_nan):
                return func(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off: at once as a call, or for a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (_anomaly.enabled, _anomaly.check_nan)
        _anomaly.enabled, _anomaly.check_nan = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _anomaly.enabled, _anomaly.check_nan = self._prev


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """``torch.set_anomaly_enabled``: the plain switch behind ``set_detect_anomaly``."""
    _anomaly.enabled, _anomaly.check_nan = bool(enabled), bool(check_nan)
