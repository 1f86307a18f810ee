"""The backward pass: walk the graph from the outputs to the leaves, without recursion.

The pass is two pieces that students write in chapter 02, and a wrapper around them:

* :func:`backward_order` (exercise 02.4) lists every node reachable from the roots so that each
  node comes before the nodes it sends gradients to (a topological order, by counting edges);
* :func:`backpropagate` (exercise 02.5) runs the nodes in that order, each once, on the sum of
  the gradients that reached it, and adds what it returns into the nodes behind it.

Everything torch adds around that walk — tensor hooks and ``retain_grad``, node hooks, anomaly
mode, ``autograd.grad`` capturing some inputs' gradients, freeing the graph unless
``retain_graph`` — lives in the ``run_node`` function that :func:`run_backward` picks once per
pass and hands to :func:`backpropagate`. Explicit stacks and dictionaries, never recursion: a
chain of 10,000 operations back-propagates as easily as a chain of 10.
"""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .._pieces import piece, pieces
from .grad_mode import STATE
from .graph import AccumulateGrad, Node, _anomaly, edge

if TYPE_CHECKING:
    from .._tensor import Tensor


@piece("02.4")
def backward_order(roots: list) -> list:
    """Every node reachable from ``roots``, each before all the nodes in its ``next_functions``."""
    incoming = {}                          # node -> how many edges point at it
    stack, seen = list(roots), set(roots)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            incoming[nxt] = incoming.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    order = []
    ready = [n for n in dict.fromkeys(roots) if n not in incoming]
    while ready:                           # a node is ready once every edge into it is done
        node = ready.pop()
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            incoming[nxt] -= 1
            if incoming[nxt] == 0:
                ready.append(nxt)
    return order


@piece("02.5")
def backpropagate(order: list, grads: dict, run_node: "Callable") -> None:
    """Run each node of ``order`` on the gradients that reached it; pass its results on.

    ``grads`` maps a node to a list holding, for each of its outputs, the gradient summed there
    so far (None if none arrived). ``run_node(node, outs)`` takes that list and returns one
    gradient (or None) per entry of ``node.next_functions``.
    """
    for node in order:
        outs = grads.pop(node, None)
        if outs is None:
            continue                       # no gradient reached this node
        for (nxt, nr), g in zip(node.next_functions, run_node(node, outs)):
            if nxt is None or g is None:
                continue
            slots = grads.setdefault(nxt, [None] * nxt.num_outputs)
            slots[nr] = g if slots[nr] is None else slots[nr] + g


_TASKS: list[bool] = []  # one entry per backward pass running: was it asked for some inputs?

#: Tools that watch the backward pass (the profiler) put a function here: it receives the pass's
#: ``run_node`` and returns the one to use instead. Read once per pass, so an empty list costs
#: nothing per node.
RUN_NODE_WRAPPERS: list[Callable[[Callable], Callable]] = []


def is_checkpoint_valid() -> bool:
    """False inside a backward pass that returns gradients for chosen inputs only
    (``autograd.grad``, ``backward(inputs=...)``): reentrant checkpoints cannot run there."""
    return not _TASKS or not _TASKS[-1]


def run_backward(roots: Sequence["Tensor"], grads: Sequence["Tensor"], retain_graph: bool,
                 create_graph: bool, inputs: Sequence["Tensor"] | None = None,
                 allow_unused: bool = False) -> tuple | None:
    """Back-propagate ``grads`` from ``roots``.

    With ``inputs`` given (``autograd.grad``), gradients are returned for those tensors instead of
    being accumulated into ``.grad``, and only the part of the graph that leads to them runs.
    """
    capture: dict[tuple, list[int]] = {}   # (node, output_nr) -> indices into the results
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture.setdefault(edge(t), []).append(i)
    only_inputs = inputs is not None
    n_results = len(inputs or ())
    buffers: dict[Node, list] = {}
    for t, g in zip(roots, grads):
        node, nr = edge(t)
        slots = buffers.setdefault(node, [None] * node.num_outputs)
        slots[nr] = g if slots[nr] is None else slots[nr] + g
    order = pieces.backward_order(list(buffers))
    results: list = [None] * n_results
    run_node = _node_runner(retain_graph, create_graph, only_inputs)
    if only_inputs:
        run_node = _capturing(run_node, capture, results, order)
    for wrap in RUN_NODE_WRAPPERS:
        run_node = wrap(run_node)

    _TASKS.append(only_inputs)
    prev_mode = STATE.enabled
    STATE.enabled = create_graph
    try:
        pieces.backpropagate(order, buffers, run_node)
    finally:
        STATE.enabled = prev_mode
        _TASKS.pop()

    if not only_inputs:
        return None
    if not allow_unused:
        for i, r in enumerate(results):
            if r is None:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(results)


def _node_runner(retain_graph: bool, create_graph: bool, only_inputs: bool) -> Callable:
    """The ``run_node`` of a plain pass: hooks, the node's backward, freeing, leaves."""
    anomaly = _anomaly.enabled

    def run_node(node: Node, outs: list) -> Sequence:
        if node._tensor_hooks is not None or node._pre_hooks or node._retained is not None:
            outs = _before_node(node, outs, create_graph)
        if node.__class__ is AccumulateGrad:
            if not only_inputs and outs[0] is not None:
                _accumulate_leaf(node.variable, outs[0], create_graph)
            return ()
        grad = outs[0] if node.num_outputs == 1 else outs
        if node._hooks or anomaly:
            grad_inputs = _run_node(node, grad)
        else:
            node._check_saved()
            grad_inputs = node._backward(grad)  # type: ignore[misc]
        if not retain_graph:
            node._release()
        return grad_inputs

    return run_node


def _capturing(run_node: Callable, capture: dict, results: list, order: list) -> Callable:
    """For ``autograd.grad``: keep the gradients of the chosen inputs, and run only the nodes
    that lead to them."""
    needed = _needed_nodes(order, {n for n, _ in capture})

    def run(node: Node, outs: list) -> Sequence:
        for nr in range(node.num_outputs):
            for i in capture.get((node, nr), ()):
                results[i] = outs[nr]
        if node not in needed and node.__class__ is not AccumulateGrad:
            return (None,) * len(node.next_functions)  # nothing we want lies behind it
        return run_node(node, outs)

    return run


def _needed_nodes(order: list, targets: set) -> set:
    """The nodes from which some target can be reached: only these must run for autograd.grad."""
    needed: set = set()
    for node in reversed(order):  # every node comes after the nodes it feeds
        for nxt, _ in node.next_functions:
            if nxt is not None and (nxt in targets or nxt in needed):
                needed.add(node)
                break
    return needed


def _before_node(node: Node, grads: list, create_graph: bool) -> list:
    """Before ``node`` runs: the hooks of each output tensor, then ``retain_grad`` keeps the
    result in that tensor's ``.grad``, then the node's own pre-hooks (which see every output)."""
    grads = list(grads)
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
    return grads


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
