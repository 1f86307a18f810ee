"""Quiet floating point: torch computes inf and nan without a word, NumPy warns.

``np.errstate(all="ignore")`` silences one call but costs ~0.7 µs, more than a tiny add itself.
NumPy 2 keeps its error state in a context variable: setting it to a prebuilt "ignore" state
(``FP_STATE.set(FP_IGNORE)``) and resetting it afterwards costs ~0.1 µs and, like errstate,
leaves the user's own NumPy code alone. The hottest paths (element-wise ops) do exactly that
inline; :class:`quiet` and :func:`quietly` wrap it for the rest.

A base module (no mytorch imports): the autograd graph's array shortcuts need it as much as the
operations do.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

__all__ = ["FP_STATE", "FP_IGNORE", "quiet", "quietly"]

try:
    from numpy._core._ufunc_config import _extobj_contextvar as FP_STATE
    from numpy._core._ufunc_config import _make_extobj

    FP_IGNORE: Any = _make_extobj(all="ignore")
except ImportError:  # a NumPy without that layout: the public, slower way
    class _Errstate:
        """``get``/``set``/``reset`` like a context variable, through ``np.errstate``."""

        def get(self) -> Any:
            return np.geterr()

        def set(self, value: Any) -> Any:  # FP_IGNORE (None), or what ``get`` returned
            state = np.errstate(**value) if value else np.errstate(all="ignore")
            state.__enter__()
            return state

        def reset(self, state: Any) -> None:
            state.__exit__(None, None, None)

    FP_STATE, FP_IGNORE = _Errstate(), None


class quiet:
    """``with quiet():`` runs the block without NumPy's divide/overflow/invalid warnings."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = FP_STATE.set(FP_IGNORE)

    def __exit__(self, *exc: Any) -> None:
        FP_STATE.reset(self._token)


def quietly(fn: Callable) -> Callable:
    """Decorator: the whole op runs without NumPy's floating-point warnings (see :class:`quiet`)."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        token = FP_STATE.set(FP_IGNORE)
        try:
            return fn(*args, **kwargs)
        finally:
            FP_STATE.reset(token)
    return op
