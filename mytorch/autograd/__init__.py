"""mytorch.autograd: the graph recorded by operations, and the backward pass over it.

* ``graph.py``   — nodes (``grad_fn``) and how ops record themselves
* ``engine.py``  — the non-recursive backward pass
* ``grad_mode.py`` — no_grad, enable_grad, set_grad_enabled, inference_mode
"""
from __future__ import annotations

from typing import Any, Sequence

from .engine import run_backward
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)
from .graph import Node

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "Node"]


def _as_list(x: Any) -> list:
    from .._tensor import Tensor

    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _make_grads(outputs: list, grad_outputs: list) -> list:
    from .._creation import ones_like

    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point and not out.dtype.is_complex:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but"
                                   f" got {out.dtype}")
            g = ones_like(out)
        elif tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {out.shape}.")
        grads.append(g)
    return grads


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Sequence | None = None) -> None:
    """Compute gradients of ``tensors`` and accumulate them into the leaves' ``.grad``."""
    outs = _as_list(tensors)
    for t in outs:
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    grads = _make_grads(outs, _as_list(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if inputs:
        res = run_backward(outs, grads, retain_graph, create_graph, inputs=_as_list(inputs),
                           allow_unused=True)
        from .engine import _accumulate_leaf

        for t, g in zip(_as_list(inputs), res or ()):
            if g is not None:
                _accumulate_leaf(t, g, create_graph)
        return
    run_backward(outs, grads, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None,
         materialize_grads: bool = False) -> tuple:
    """Return d(outputs)/d(inputs) without touching any ``.grad``."""
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    for t in outs:
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    grads = _make_grads(outs, _as_list(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outs, grads, retain_graph, create_graph, inputs=ins,
                       allow_unused=bool(allow_unused) or materialize_grads)
    if materialize_grads:
        from .._creation import zeros_like

        res = tuple(zeros_like(i) if r is None else r for r, i in zip(res, ins))
    return res
