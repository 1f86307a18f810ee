"""``autograd.backward`` and ``autograd.grad`` (and ``Tensor.backward``): the entry points of the
backward pass.

They check the roots, make the first gradients (1 for a scalar output) and hand over to the engine
(``engine.run_backward``). They build tensors with the ops (``ones_like``), so unlike the graph
machinery they sit above the operations in mytorch's layer stack (docs/architecture.md).
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

from .._creation import ones_like, zeros_like
from .._tensor import NoAccumulator, Tensor, tensor_method
from .engine import _accumulate_leaf, run_backward

__all__ = ["backward", "grad"]


def _as_list(x: Any) -> list:
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _make_grads(outputs: list, grad_outputs: list) -> list:
    """One gradient per output: the given one (checked), or 1 for a scalar output."""
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


def _check_roots(outs: list) -> None:
    for i, t in enumerate(outs):
        # (a view made in no_grad mode requires grad through its base but leads nowhere)
        if not t._requires_grad or t.grad_fn is None and t._acc_node.__class__ is NoAccumulator:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               "grad_fn")


_create_graph_warned = False


def _warn_create_graph() -> None:
    """Once per process, like torch: ``.grad`` now refers to a graph that refers back to it."""
    global _create_graph_warned
    if _create_graph_warned:
        return
    _create_graph_warned = True
    warnings.warn("Using backward() with create_graph=True will create a reference cycle between "
                  "the parameter and its gradient which can cause a memory leak. We recommend "
                  "using autograd.grad when creating the graph to avoid this. If you have to use "
                  "this function, make sure to reset the .grad fields of your parameters to None "
                  "after use to break the cycle and avoid the leak.", UserWarning, stacklevel=3)


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Sequence | None = None) -> None:
    """Compute gradients of ``tensors`` and accumulate them into the leaves' ``.grad``.

    ``inputs`` restricts the accumulation to those tensors (their ``.grad`` only).
    """
    outs = _as_list(tensors)
    _check_roots(outs)
    grads = _make_grads(outs, _as_list(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        _warn_create_graph()
    if inputs is not None:
        ins = _as_list(inputs)
        if not ins:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        res = run_backward(outs, grads, retain_graph, create_graph, inputs=ins, allow_unused=True)
        for t, g in zip(ins, res or ()):
            if g is not None:
                _accumulate_leaf(t, g, create_graph)
        return
    run_backward(outs, grads, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Return d(outputs)/d(inputs) without touching any ``.grad``.

    ``create_graph=True`` records the backward pass itself, so the result can be differentiated
    again (higher-order derivatives); ``allow_unused=True`` returns None for an input the outputs
    do not depend on instead of raising.
    """
    if is_grads_batched:
        raise NotImplementedError("mytorch.autograd.grad does not support is_grads_batched=True")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True,"
                         " but got: allow_unused=False.")
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    _check_roots(outs)
    grads = _make_grads(outs, _as_list(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outs, grads, retain_graph, create_graph, inputs=ins,
                       allow_unused=bool(allow_unused) or materialize_grads)
    if materialize_grads:
        res = tuple(zeros_like(i) if r is None else r for r, i in zip(res, ins))
    return res


def _backward_method(self: Tensor, gradient: Tensor | None = None, retain_graph: bool | None = None,
                     create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


_backward_method.__name__, _backward_method.__qualname__ = "backward", "Tensor.backward"
tensor_method("backward")(_backward_method)
