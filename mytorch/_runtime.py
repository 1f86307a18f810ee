"""Process-wide settings torch keeps in its C++ runtime, ``torch.compile``, and torch's error
classes for device failures (so ``except torch.OutOfMemoryError:`` works).

mytorch's kernels are NumPy's (or CuPy's): the thread counts and the float32 matmul precision are
recorded and read back, so that programs which set them run unchanged, but NumPy's BLAS keeps its
own threads and always multiplies float32 matrices in full float32 precision ("highest").
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads",
           "set_num_interop_threads", "get_float32_matmul_precision",
           "set_float32_matmul_precision", "compile", "OutOfMemoryError", "AcceleratorError"]


class OutOfMemoryError(RuntimeError):
    """A device ran out of memory (``torch.OutOfMemoryError``, also ``torch.cuda``'s)."""


class AcceleratorError(RuntimeError):
    """An accelerator reported an error (``torch.AcceleratorError``)."""

_STATE = {"threads": os.cpu_count() or 1, "interop": os.cpu_count() or 1, "precision": "highest"}


def get_num_threads() -> int:
    """The number of threads torch would use for intra-op parallelism (as set)."""
    return _STATE["threads"]


def set_num_threads(int: int) -> None:  # noqa: A002 - torch's parameter name
    """Record the intra-op thread count (NumPy's BLAS keeps its own setting)."""
    if int <= 0:
        raise RuntimeError("Number of threads must be positive")
    _STATE["threads"] = int


def get_num_interop_threads() -> int:
    """The number of threads torch would use for inter-op parallelism (as set)."""
    return _STATE["interop"]


def set_num_interop_threads(int: int) -> None:  # noqa: A002
    """Record the inter-op thread count."""
    if int <= 0:
        raise RuntimeError("Number of threads must be positive")
    _STATE["interop"] = int


def get_float32_matmul_precision() -> str:
    """``"highest"``, ``"high"`` or ``"medium"``, as last set (mytorch always computes "highest")."""
    return _STATE["precision"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record the float32 matmul precision; an unknown name warns and changes nothing, as in torch."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _STATE["precision"] = precision


def compile(model: Callable | None = None, *, fullgraph: bool = False,  # noqa: A001
            dynamic: bool | None = None, backend: Any = None, mode: str | None = None,
            options: dict | None = None, disable: bool = False, **kwargs: Any) -> Any:
    """torch.compile: mytorch runs eagerly, so the model (or function) is returned as it is.

    Compiling only changes speed in torch, never results; used as a decorator (with or without
    arguments) it also leaves the function unchanged."""
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError("torch.compile(): model must be callable")
    return model
