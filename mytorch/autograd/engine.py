"""The backward pass: walk the graph from the outputs to the leaves, without recursion.

1. Count, for every node reachable from the roots, how many edges point at it.
2. Start from the roots; a node runs once all gradients flowing into it have arrived
   (its count drops to zero), so each node runs exactly once, in topological order.
3. Unless ``retain_graph``, each node frees its closure (and the tensors it saved) after running.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .grad_mode import STATE
from .graph import AccumulateGrad, Node, _anomaly

if TYPE_CHECKING:
    from .._tensor import Tensor


def _accumulate(buffers: dict, node: Node, grad: "Tensor") -> None:
    prev = buffers.get(node)
    buffers[node] = grad if prev is None else prev + grad


def run_backward(roots: Sequence["Tensor"], grads: Sequence["Tensor"], retain_graph: bool,
                 create_graph: bool, inputs: Sequence["Tensor"] | None = None,
                 allow_unused: bool = False) -> tuple | None:
    """Back-propagate ``grads`` from ``roots``.

    With ``inputs`` given (``autograd.grad``), gradients are returned for those tensors instead of
    being accumulated into ``.grad``.
    """
    from .graph import accumulate_node

    # Targets whose gradient autograd.grad must capture, keyed by node.
    capture: dict[Node, int] = {}
    results: list = []
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors (#{i}) does not require grad")
            node = t.grad_fn if t.grad_fn is not None else accumulate_node(t)
            capture[node] = i
        results = [None] * len(inputs)

    # 1. dependency counts over the reachable graph (iterative DFS)
    deps: dict[Node, int] = {}
    stack: list[Node] = []
    buffers: dict[Node, "Tensor"] = {}
    for t, g in zip(roots, grads):
        node = t.grad_fn if t.grad_fn is not None else accumulate_node(t)
        if node not in deps:
            deps[node] = 0
            stack.append(node)
        _accumulate(buffers, node, g)
    seen = set(deps)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)

    # 2. run nodes whose inputs are complete
    ready = [n for n in deps if deps[n] == 0]
    prev_mode = STATE.enabled
    STATE.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grad = buffers.pop(node, None)
            if node._pre_hooks and grad is not None:
                for hook in list(node._pre_hooks):
                    new = hook(grad)
                    if new is not None:
                        grad = new
            if node._retained is not None and grad is not None:
                t = node._retained()
                if t is not None:
                    g = grad if create_graph else grad.detach()
                    t.grad = g if t.grad is None else t.grad + g
            if node in capture and grad is not None:
                results[capture[node]] = grad
                if isinstance(node, AccumulateGrad):
                    continue
            if isinstance(node, AccumulateGrad):
                if inputs is None and grad is not None:
                    _accumulate_leaf(node.variable, grad, create_graph)
                continue
            if grad is None:
                grad_inputs: Sequence = (None,) * len(node.next_functions)
            else:
                node._check_saved()
                grad_inputs = node._backward(grad)  # type: ignore[misc]
                if _anomaly.enabled and _anomaly.check_nan:
                    _check_nan(node, grad_inputs)
                if node._hooks:
                    for hook in list(node._hooks):
                        hook(tuple(grad_inputs), (grad,))
            if not retain_graph:
                node._release()
            for (nxt, _), g in zip(node.next_functions, grad_inputs):
                if nxt is None:
                    continue
                if g is not None:
                    _accumulate(buffers, nxt, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    finally:
        STATE.enabled = prev_mode

    if inputs is None:
        return None
    if not allow_unused:
        for i, r in enumerate(results):
            if r is None:
                raise RuntimeError(
                    f"One of the differentiated Tensors (#{i}) appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(results)


def _accumulate_leaf(t: "Tensor", grad: "Tensor", create_graph: bool) -> None:
    if t._leaf_hooks:
        for hook in list(t._leaf_hooks):
            new = hook(grad)
            if new is not None:
                grad = new
    if not create_graph:
        grad = grad.detach()
    if t.grad is None:
        # Like torch: a fresh tensor so later in-place changes of grad don't alias the graph.
        t.grad = grad if create_graph else grad.clone()
    elif create_graph:
        t.grad = t.grad + grad
    else:
        t.grad._data = t.grad._data + grad._data  # in-place accumulate keeps the same Tensor


def _check_nan(node: Node, grads: Sequence) -> None:
    for g in grads:
        if g is not None and g.dtype.is_floating_point and bool(g.isnan().any()):
            where = "".join(node._trace or ["(no forward trace recorded)\n"])
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its 0th output.\n"
                f"The forward call that created it was:\n{where}")
