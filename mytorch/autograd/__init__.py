"""mytorch.autograd: the graph recorded by operations, and the backward pass over it.

* ``grad_mode.py``    — no_grad, enable_grad, set_grad_enabled, inference_mode
* ``graph.py``        — ``torch.autograd.graph``: the graph's public names, gathered from
  ``node.py`` (nodes and how ops record themselves), ``saved_tensors.py`` (saved-tensor hooks),
  ``unbroadcast.py`` (``sum_to``), ``masks.py`` (``mask_grad``) and ``views.py`` (in-place on views)
* ``anomaly_mode.py`` — detect_anomaly: find the forward op whose backward produced NaN
* ``engine.py``       — the non-recursive backward pass
* ``piece_op.py``     — a piece written with tensor ops, run as one fused graph node
* ``api.py``          — ``backward`` and ``grad``, the entry points (and ``Tensor.backward``)
* ``function.py``     — custom operations: ``autograd.Function`` with ``ctx``
* ``gradcheck.py``    — gradcheck / gradgradcheck: autograd against finite differences
* ``variable.py``     — ``Variable``, the pre-0.4 wrapper: now it just returns a tensor
* ``functional.py``   — jacobian, hessian, vjp, jvp, vhp, hvp of a whole function

The package spans layers of mytorch's stack (docs/architecture.md). The graph machinery
(``graph`` and its modules, ``anomaly_mode``, ``engine``, ``piece_op``) sits *below* the operations, which record
their nodes with ``graph.record``; ``api``, ``function``, ``gradcheck`` and ``variable`` sit
*above* them: they are the user's entry points and compute with tensor operations. Python runs
this file before any of its modules, even for ``import mytorch.autograd.graph`` from inside an
operation, so it imports nothing but the grad-mode switches (at the very bottom of the stack):
every other public name is looked up in its module on first use (PEP 562 ``__getattr__``).
"""
from __future__ import annotations

import importlib
from typing import Any

from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "Node", "Function", "FunctionCtx",
           "once_differentiable", "gradcheck", "gradgradcheck", "GradcheckError",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "graph", "Variable"]


def __getattr__(name: str) -> Any:
    """A public name defined above the grad-mode switches: import its module now (PEP 562).

    The name is then stored in this module, so later lookups never come back here.
    """
    # (each branch imports its module's public names: they are collected from locals() below)
    if name == "Node":
        from .graph import Node  # noqa: F401
    elif name in ("detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
                  "is_anomaly_check_nan_enabled"):
        from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled,  # noqa: F401
                                   is_anomaly_enabled, set_detect_anomaly)
    elif name in ("backward", "grad"):
        from .api import backward, grad  # noqa: F401
    elif name in ("Function", "FunctionCtx", "once_differentiable"):
        from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
    elif name in ("gradcheck", "gradgradcheck", "GradcheckError"):
        # (this binds the function gradcheck over the submodule of the same name, as in torch)
        from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401
    elif name == "Variable":
        from .variable import Variable  # noqa: F401
    elif name == "functional":  # the submodule (``from . import`` would come back here)
        functional = importlib.import_module(f"{__name__}.functional")  # noqa: F841
    else:
        raise AttributeError(f"module 'mytorch.autograd' has no attribute '{name}'")
    found = {k: v for k, v in locals().items() if k != "name"}
    globals().update(found)
    return found[name]


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
