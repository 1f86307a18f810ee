"""The backward pass: walk the graph from the outputs to the leaves, without recursion.

1. Count, for every node reachable from the roots, how many edges point at it.
2. Start from the roots; a node runs once all gradients flowing into it have arrived
   (its count drops to zero), so each node runs exactly once, in topological order.
3. Unless ``retain_graph``, a node that saved tensors frees them (and its closure) after running;
   a node that saved nothing stays runnable, so backward through it again works, as in torch.

Everything uses explicit stacks and dictionaries, never recursion, so a chain of 10,000 operations
back-propagates as easily as a chain of 10.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Sequence

from .grad_mode import STATE
from .graph import AccumulateGrad, Node, _anomaly, edge

if TYPE_CHECKING:
    from .._tensor import Tensor


def _accumulate(buffers: dict, node: Node, nr: int, grad: "Tensor") -> None:
    """Add ``grad`` to what has arrived so far for output ``nr`` of ``node``."""
    if node.num_outputs == 1:
        prev = buffers.get(node)
        buffers[node] = grad if prev is None else prev + grad
        return
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = [None] * node.num_outputs
    slots[nr] = grad if slots[nr] is None else slots[nr] + grad


def _count_dependencies(roots: list[Node], stop: Any = ()) -> dict[Node, int]:
    """For every node reachable from ``roots``: how many edges lead into it (iterative DFS).

    The walk does not go past the nodes in ``stop`` (the ends of a checkpointed region).
    """
    deps: dict[Node, int] = dict.fromkeys(roots, 0)
    stack = [n for n in deps if n not in stop]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt in deps:
                deps[nxt] += 1
            else:
                deps[nxt] = 1
                if nxt not in stop:
                    stack.append(nxt)
    return deps


def _needed_nodes(deps: dict[Node, int], targets: set[Node]) -> set[Node]:
    """The nodes from which some target can be reached: only these must run for autograd.grad."""
    parents: dict[Node, list[Node]] = {}
    for node in deps:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    needed: set[Node] = set()
    stack = [t for t in targets if t in deps]
    while stack:
        node = stack.pop()
        for p in parents.get(node, ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


_TASKS: list[bool] = []  # one entry per backward pass running: was it asked for some inputs?


def is_checkpoint_valid() -> bool:
    """False inside a backward pass that returns gradients for chosen inputs only
    (``autograd.grad``, ``backward(inputs=...)``): reentrant checkpoints cannot run there."""
    return not _TASKS or not _TASKS[-1]


def run_backward(roots: Sequence["Tensor"], grads: Sequence["Tensor"], retain_graph: bool,
                 create_graph: bool, inputs: Sequence["Tensor"] | None = None,
                 allow_unused: bool = False, edges: Sequence[tuple] | None = None) -> tuple | None:
    """Back-propagate ``grads`` from ``roots``.

    With ``inputs`` given (``autograd.grad``), gradients are returned for those tensors instead of
    being accumulated into ``.grad``, and only the part of the graph that leads to them runs.
    ``edges`` (``(node, output_nr)`` pairs, for checkpointing) works like ``inputs`` but the pass
    also stops at those nodes: whatever lies behind them is left to an outer backward pass.
    """
    capture: dict[tuple, list[int]] = {}   # (node, output_nr) -> indices into ``inputs``
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault(edge(t), []).append(i)
    if edges is not None:
        for i, e in enumerate(edges):
            capture.setdefault(e, []).append(i)
    only_inputs = inputs is not None or edges is not None
    _TASKS.append(only_inputs)
    try:
        return _run(roots, grads, retain_graph, create_graph, capture, only_inputs,
                    len(edges) if edges is not None else len(inputs or ()),
                    allow_unused or edges is not None, edges is not None)
    finally:
        _TASKS.pop()


def _run(roots: Sequence["Tensor"], grads: Sequence["Tensor"], retain_graph: bool,
         create_graph: bool, capture: dict, only_inputs: bool, n_results: int,
         allow_unused: bool, stop_at_inputs: bool) -> tuple | None:
    buffers: dict[Node, Any] = {}
    root_nodes = []
    for t, g in zip(roots, grads):
        node, nr = edge(t)
        root_nodes.append(node)
        _accumulate(buffers, node, nr, g)
    targets = {n for n, _ in capture}
    deps = _count_dependencies(root_nodes, targets if stop_at_inputs else ())
    needed = _needed_nodes(deps, targets) if only_inputs else None
    results: list = [None] * n_results

    ready = [n for n in deps if deps[n] == 0]
    prev_mode = STATE.enabled
    STATE.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grad = buffers.pop(node, None)
            if grad is not None and (node._tensor_hooks is not None or node._pre_hooks
                                     or node._retained is not None):
                grad = _before_node(node, grad, create_graph)
            if capture:
                _capture(capture, node, grad, results)
                if stop_at_inputs and node in targets:
                    continue  # an end of the region: an outer backward pass runs it
            if isinstance(node, AccumulateGrad):
                if not only_inputs and grad is not None:
                    _accumulate_leaf(node.variable, grad, create_graph)
                continue
            if needed is not None and node not in needed:
                grad = None  # nothing we want lies behind this node: don't run it
            elif grad is not None and node.num_outputs > 1 and all(x is None for x in grad):
                grad = None
            if grad is None:
                grad_inputs: Sequence = (None,) * len(node.next_functions)
            else:
                if node._hooks or _anomaly.enabled:
                    grad_inputs = _run_node(node, grad)
                else:  # the common case, inlined
                    node._check_saved()
                    grad_inputs = node._backward(grad)  # type: ignore[misc]
                if not retain_graph:
                    node._release()
            for (nxt, nr), g in zip(node.next_functions, grad_inputs):
                if nxt is None:
                    continue
                if g is not None:
                    _accumulate(buffers, nxt, nr, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    finally:
        STATE.enabled = prev_mode

    if not only_inputs:
        return None
    if not allow_unused:
        for i, r in enumerate(results):
            if r is None:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(results)


def _before_node(node: Node, grad: Any, create_graph: bool) -> Any:
    """Before ``node`` runs: the hooks of each output tensor, then ``retain_grad`` keeps the
    result in that tensor's ``.grad``, then the node's own pre-hooks (which see every output)."""
    single = node.num_outputs == 1
    grads = [grad] if single else list(grad)
    if node._tensor_hooks:
        for nr, hooks in node._tensor_hooks.items():
            g = grads[nr]
            if g is None:
                continue
            for hook in list(hooks):
                new = hook(g)
                if new is not None:
                    g = new
            grads[nr] = g
    if node._retained:
        for nr, ref in node._retained.items():
            t, g = ref(), grads[nr]
            if t is not None and g is not None:
                g = g if create_graph else g.detach()
                t._grad = g if t._grad is None else t._grad + g
    if node._pre_hooks:
        for hook in list(node._pre_hooks):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    return grads[0] if single else grads


def _capture(capture: dict, node: Node, grad: Any, results: list) -> None:
    """Store the gradient of each ``autograd.grad`` input that this node produced."""
    for nr in range(node.num_outputs):
        idx = capture.get((node, nr))
        if idx is None:
            continue
        g = grad if node.num_outputs == 1 else (grad[nr] if grad is not None else None)
        for i in idx:
            results[i] = g


def _run_node(node: Node, grad: Any) -> Sequence:
    """Call ``node``'s backward, with anomaly mode's checks and forward traceback around it."""
    node._check_saved()
    if not _anomaly.enabled:
        grad_inputs = node._backward(grad)  # type: ignore[misc]
    else:
        try:
            grad_inputs = node._backward(grad)  # type: ignore[misc]
            if _anomaly.check_nan:
                _check_nan(node, grad_inputs)
        except Exception:
            _warn_forward_trace(node)
            raise
    if node._hooks:
        outs = (grad,) if node.num_outputs == 1 else tuple(grad)
        grad_inputs = tuple(grad_inputs)
        for hook in list(node._hooks):
            new = hook(grad_inputs, outs)
            if new is not None:  # like torch: the hook's gradients replace the node's
                new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
                if len(new) != len(grad_inputs):
                    raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has returned "
                                       f"an incorrect number of values (got {len(new)}, but "
                                       f"expected {len(grad_inputs)})")
                grad_inputs = new
    return grad_inputs


def _accumulate_leaf(t: "Tensor", grad: "Tensor", create_graph: bool) -> None:
    """Add ``grad`` into leaf ``t``'s ``.grad`` (after the leaf's hooks), like AccumulateGrad."""
    if t._leaf_hooks:
        for hook in list(t._leaf_hooks):
            new = hook(grad)
            if new is not None:
                grad = new
    if grad._data.dtype != t._data.dtype:
        grad = grad.to(t.dtype)
    if t._grad is None:
        # A fresh tensor, so that changing .grad later cannot alter a tensor of the graph.
        t._grad = grad if create_graph else grad.detach().clone()
    elif create_graph or t._grad._requires_grad:
        t._grad = t._grad + grad
    else:
        acc = t._grad
        try:
            acc._data += grad._data  # in place: the same .grad tensor keeps accumulating
        except ValueError:  # read-only or broadcast memory: replace the array instead
            acc._data = acc._data + grad._data
        acc._vc.value += 1
    post = t.__dict__.get("_post_acc_hooks")
    if post:
        for hook in list(post):
            hook(t)


def _check_nan(node: Node, grads: Sequence) -> None:
    for i, g in enumerate(grads):
        if g is not None and g._data.dtype.kind in "fc" and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _warn_forward_trace(node: Node) -> None:
    """Anomaly mode: say which forward call created the node whose backward failed."""
    trace = "".join(node._trace) if node._trace else \
        "No forward pass information available. Enable detect anomaly during forward pass for " \
        "more information.\n"
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{trace}", UserWarning, stacklevel=4)
