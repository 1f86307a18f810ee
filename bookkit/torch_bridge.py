"""Move weights between real PyTorch and mytorch through NumPy arrays.

The chapters use it to show that a model written once for both libraries gives the same numbers
when it holds the same weights::

    from bookkit.torch_bridge import copy_weights
    copy_weights(torch_model, mytorch_model)   # same architecture, same state_dict keys

Nothing here imports torch at import time: a state dict of either library is read through
``.detach().cpu().numpy()``, and torch is imported only when loading *into* a torch model.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping

import numpy as np

__all__ = ["state_dict_to_numpy", "load_numpy_state_dict", "copy_weights"]


def state_dict_to_numpy(state_dict: Mapping[str, Any]) -> "OrderedDict[str, np.ndarray]":
    """Each tensor of a torch or mytorch state dict as a NumPy array (a copy), keys and order kept."""
    out: OrderedDict[str, np.ndarray] = OrderedDict()
    for key, value in state_dict.items():
        if hasattr(value, "detach"):
            out[key] = np.array(value.detach().cpu().numpy(), copy=True)
        else:
            out[key] = np.asarray(value)
    return out


def _tensor_factory(model: Any) -> Any:
    """``from_numpy`` of the library ``model`` belongs to (mytorch or torch)."""
    if type(model).__module__.split(".")[0] == "mytorch" or _is_mytorch_module(model):
        import mytorch

        return mytorch.from_numpy
    import torch  # only when loading into a real torch model

    return torch.from_numpy


def _is_mytorch_module(model: Any) -> bool:
    import mytorch

    return isinstance(model, mytorch.nn.Module)


def load_numpy_state_dict(model: Any, arrays: Mapping[str, np.ndarray], strict: bool = True) -> Any:
    """``model.load_state_dict`` from NumPy arrays; works for a mytorch or a torch model.

    Returns what ``load_state_dict`` returns (the missing/unexpected keys).
    """
    from_numpy = _tensor_factory(model)
    tensors = OrderedDict((k, from_numpy(np.ascontiguousarray(v))) for k, v in arrays.items())
    return model.load_state_dict(tensors, strict=strict)


def copy_weights(src_model: Any, dst_model: Any, strict: bool = True) -> Any:
    """Copy every parameter and buffer of ``src_model`` into ``dst_model`` (either library)."""
    return load_numpy_state_dict(dst_model, state_dict_to_numpy(src_model.state_dict()), strict)
