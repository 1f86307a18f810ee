"""``torch.use_deterministic_algorithms``: the global 'same input, same bits' switch."""
from __future__ import annotations

import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "alert_not_deterministic"]

_state = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """With ``mode=True``, an op that has only a non-deterministic kernel on the tensor's device
    raises a RuntimeError (or warns, with ``warn_only=True``) instead of running."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    _state["enabled"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def alert_not_deterministic(caller: str) -> None:
    """What an op with a racing GPU kernel calls first (torch's ``alertNotDeterministic``)."""
    if not _state["enabled"]:
        return
    msg = (f"{caller} does not have a deterministic implementation, but you set "
           "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just for this "
           "operation, or you can use the 'warn_only=True' option, if that's acceptable for your "
           "application.")
    if _state["warn_only"]:
        warnings.warn(msg, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(msg)
