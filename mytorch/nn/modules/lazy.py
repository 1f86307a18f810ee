"""Lazy modules: layers that learn their input size from the first batch (``nn.LazyLinear``).

A lazy layer is built with ``UninitializedParameter`` placeholders and a forward pre-hook. The
first call runs ``initialize_parameters(input)``, which materializes the placeholders to their
shapes and initialises them as the ordinary layer would; the hook is then removed and the module
becomes that ordinary layer (``LazyLinear`` -> ``Linear``): ``type(m) == nn.Linear`` afterwards,
as the "Dive into Deep Learning" course relies on.
"""
from __future__ import annotations

import itertools
from typing import Any

from ..parameter import UninitializedBuffer, UninitializedParameter

__all__ = ["LazyModuleMixin"]


def is_lazy(param: Any) -> bool:
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))


class LazyModuleMixin:
    """Mixed in before a layer class: infers the parameters' shapes at the first forward."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Placeholders are saved as themselves (a detached copy would look like a real, empty
        tensor), as in torch."""
        super()._save_to_state_dict(destination, prefix, keep_vars)  # type: ignore[misc]
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            if is_lazy(t) and prefix + name in destination:
                destination[prefix + name] = t

    def has_uninitialized_params(self) -> bool:
        """Does a parameter or buffer still wait for its shape?"""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialize and initialise the parameters from the first input (each layer's own)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    @staticmethod
    def _infer_parameters(module: Any, args: tuple, kwargs: dict | None = None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
