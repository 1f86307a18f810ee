"""Switches that decide whether operations are recorded in the autograd graph.

All four work as context managers and as decorators, like their torch namesakes.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _State:
    __slots__ = ("enabled", "inference")

    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


STATE = _State()


def is_grad_enabled() -> bool:
    """True when new operations are being recorded for backward."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _GradMode:
    """Base: subclasses say which (enabled, inference) pair holds inside the block."""

    _target: tuple[bool, bool]

    def __enter__(self) -> None:
        self._prev = (STATE.enabled, STATE.inference)
        STATE.enabled, STATE.inference = self._target

    def __exit__(self, *exc: object) -> None:
        STATE.enabled, STATE.inference = self._prev

    def __call__(self, func: F) -> F:
        target = self._target

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = (STATE.enabled, STATE.inference)
            STATE.enabled, STATE.inference = target
            try:
                return func(*args, **kwargs)
            finally:
                STATE.enabled, STATE.inference = prev

        return wrapper  # type: ignore[return-value]


class _NoParamMode(_GradMode):
    """A mode that also works as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamMode):
    """Do not record operations: for evaluation, and for updating weights by hand."""

    def __init__(self) -> None:
        self._target = (False, STATE.inference)

    def __enter__(self) -> None:
        self._target = (False, STATE.inference)
        super().__enter__()


class enable_grad(_NoParamMode):
    """Record operations again inside a ``no_grad`` block."""

    def __init__(self) -> None:
        self._target = (True, False)


class set_grad_enabled(_GradMode):
    """Turn recording on or off; usable as a function call, a context manager or a decorator."""

    def __init__(self, mode: bool) -> None:
        self._target = (bool(mode), STATE.inference)
        self._prev = (STATE.enabled, STATE.inference)
        STATE.enabled = bool(mode)  # takes effect at once when used as a plain call

    def __enter__(self) -> None:
        STATE.enabled, STATE.inference = self._target

    def __call__(self, func: F) -> F:
        # ``@set_grad_enabled(False)`` ran __init__, which switched the mode at definition time:
        # switch it back, the decorated function switches it only while it runs
        STATE.enabled, STATE.inference = self._prev
        return super().__call__(func)


class inference_mode(_GradMode):
    """Like no_grad, and tensors made inside are *inference tensors* (the old ``volatile``): they
    skip version counting, so they cannot be saved for backward nor changed in place outside."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):  # used as a bare decorator: @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: Any = True) -> None:
        if callable(mode):
            mode = True
        # InferenceMode(False) turns grad mode on, as torch's C++ guard does, even inside no_grad
        self._target = (not mode, bool(mode))
