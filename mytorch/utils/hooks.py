"""Handles returned by every ``register_*_hook``: call ``remove()`` to unregister."""
from __future__ import annotations

import itertools
from typing import Any, Callable

__all__ = ["RemovableHandle"]

_ids = itertools.count()


class RemovableHandle:
    """Removes ``hook`` from the list (or dict) it was added to; usable as a context manager."""

    def __init__(self, registry: Any, hook: Callable, key: Any = None) -> None:
        self.id = next(_ids)
        self._registry = registry
        self._hook = hook
        if isinstance(registry, dict):
            self._key = self.id if key is None else key
            registry[self._key] = hook
        else:
            registry.append(hook)

    def remove(self) -> None:
        reg = self._registry
        if isinstance(reg, dict):
            reg.pop(self._key, None)
        else:
            try:
                reg.remove(self._hook)
            except ValueError:
                pass

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
