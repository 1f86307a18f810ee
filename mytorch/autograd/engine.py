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

import operator
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .._fp import FP_IGNORE, FP_STATE
from .._pieces import piece, pieces
from .._tensor import Tensor, _VersionCounter, wrap
from .anomaly_mode import _anomaly
from .grad_mode import STATE
from .node import CLOSURE, AccumulateGrad, Node, edge
from .rules import Rule

if TYPE_CHECKING:
    from .._tensor import Tensor


def _backward_order_fast(roots: list) -> list:
    """:func:`backward_order` by creation number: every node is created after the nodes its
    edges point to, so listing the reachable nodes newest first is a topological order, and the
    very order in which torch's engine runs them (its ready queue pops the highest sequence
    number first). One walk and a sort instead of two walks; should an edge ever point at a
    newer node, the edge count of the reference decides."""
    seen = set(roots)
    stack, nodes = list(roots), list(seen)
    ordered = True
    while stack:
        node = stack.pop()
        seq = node._seq
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt._seq >= seq:
                ordered = False
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
                nodes.append(nxt)
    if not ordered:
        return backward_order(roots)
    nodes.sort(key=_SEQ, reverse=True)
    return nodes


_SEQ = operator.attrgetter("_seq")


@piece("02.4", fast=_backward_order_fast)
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


def _sum_grads(a: "Tensor", b: "Tensor", into_a: bool = False) -> "Tensor":
    """``a + b`` for two gradients that met at one node: on the bare arrays when the sum is plain
    (grad mode off, row-major host arrays of one dtype and shape: no promotion, broadcasting,
    layout or graph to handle), else the tensor sum with all its rules. ``into_a``: ``a`` is a
    sum this pass made and nothing else holds, so a plain sum may be added into its memory.

    A long chain that reuses one weight adds its gradient once per use, so this runs about as
    often as a node does."""
    x, y = a._data, b._data
    if (not STATE.enabled and x.__class__ is np.ndarray and y.__class__ is np.ndarray
            and x.dtype is y.dtype and x.shape == y.shape and a.__class__ is b.__class__ is Tensor
            and a._device is b._device
            and (x.ndim < 2 or x.flags.c_contiguous and y.flags.c_contiguous)):
        if into_a and x.flags.writeable:  # (overflow to inf silently: see run_backward)
            np.add(x, y, out=x)
            return a
        return wrap(x + y, a._device)
    return a + b


def _backpropagate_fast(order: list, grads: dict, run_node: "Callable") -> None:
    """:func:`backpropagate` with the sums done by :func:`_sum_grads` (the reference's ``+``
    dispatches through the whole tensor operator for every gradient that meets another).

    A sum made here is held by nothing but its slot until the node it waits for runs, so the
    next gradient to arrive there is added into it in place (``made``: the slots holding one;
    the slot of a node with one output is named by the node itself)."""
    pop, get = grads.pop, grads.get
    made: set = set()
    for node in order:
        outs = pop(node, None)
        if outs is None:
            continue
        if made:
            made.discard(node)
        for (nxt, nr), g in zip(node.next_functions, run_node(node, outs)):
            if nxt is None or g is None:
                continue
            slots = get(nxt)
            if slots is None:                  # the first gradient to reach ``nxt``
                if nxt.num_outputs == 1:
                    grads[nxt] = [g]
                else:
                    slots = grads[nxt] = [None] * nxt.num_outputs
                    slots[nr] = g
                continue
            old = slots[nr]
            if old is None:
                slots[nr] = g
                continue
            key = nxt if nr == 0 else (nxt, nr)
            total = _sum_grads(old, g, key in made)
            if total is not old and total is not g:
                made.add(key)
            slots[nr] = total


@piece("02.5", fast=_backpropagate_fast)
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


_VJP = Rule._vjp  # (called unbound: no method object per node)

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
    if not only_inputs and _watched_leaves(order):
        order = _leaves_early(order)
    results: list = [None] * n_results
    owned = None if create_graph or only_inputs else _GradMemory(grads)
    run_node = _node_runner(retain_graph, create_graph, only_inputs, owned)
    if only_inputs:
        run_node = _capturing(run_node, capture, results, order)
    for wrap in RUN_NODE_WRAPPERS:
        run_node = wrap(run_node)

    _TASKS.append(only_inputs)
    prev_mode = STATE.enabled
    STATE.enabled = create_graph
    # The pass computes inf and nan silently, as the forward ops did: NumPy's "ignore" error
    # state is set once here, for every node, rather than by each node (a contextvar set and
    # reset per node were about a tenth of a long chain's backward). Nodes that may run the
    # user's code get the caller's own state back (run_node).
    quiet = FP_STATE.set(FP_IGNORE)
    try:
        pieces.backpropagate(order, buffers, run_node)
    finally:
        FP_STATE.reset(quiet)
        STATE.enabled = prev_mode
        _TASKS.pop()
        del buffers, order, run_node
        if owned is not None and owned.adopted:
            owned.settle()

    if not only_inputs:
        return None
    if not allow_unused:
        for i, r in enumerate(results):
            if r is None:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.")
    return tuple(results)


def _watched_leaves(order: list) -> bool:
    """Whether a leaf of the graph has hooks, which see when its gradient arrives (DDP starts
    averaging a bucket of gradients from them while backward still runs)."""
    for node in order:
        if node.__class__ is AccumulateGrad:
            t = node.variable
            if node._special or t._leaf_hooks or "_post_acc_hooks" in t.__dict__:
                return True
    return False


def _leaves_early(order: list) -> list:
    """``order`` with each leaf's ``AccumulateGrad`` moved up to just after the last node that
    feeds it, as torch's engine runs it as soon as it is ready: a leaf's gradient (and its
    hooks) then comes as early in the pass as it can, whatever order ``backward_order`` chose
    among the nodes ready at one time (``AddmmBackward0``'s bias, for instance)."""
    feeds: dict = {}  # AccumulateGrad -> how many edges into it are still to run
    for node in order:
        for nxt, _ in node.next_functions:
            if nxt.__class__ is AccumulateGrad:
                feeds[nxt] = feeds.get(nxt, 0) + 1
    out = []
    for node in order:
        if node.__class__ is AccumulateGrad and node in feeds:
            continue  # placed after its last producer below
        out.append(node)
        for nxt, _ in node.next_functions:
            if nxt.__class__ is AccumulateGrad:
                feeds[nxt] -= 1
                if not feeds[nxt]:
                    out.append(nxt)
    return out


def _node_runner(retain_graph: bool, create_graph: bool, only_inputs: bool,
                 owned: "_GradMemory | None" = None) -> Callable:
    """The ``run_node`` of a plain pass: hooks, the node's backward, freeing, leaves.

    It is called in NumPy's "ignore" error state (see :func:`run_backward`). Every node but a
    rule's runs in the state the caller had when ``run_node`` was made, before the pass began."""
    anomaly = _anomaly.enabled
    caller_fp = FP_STATE.get()

    def run_node(node: Node, outs: list) -> Sequence:
        if node._dtype is not CLOSURE and not (node._special or anomaly):
            # A node made from a rule (rules.py), the most common kind, without hooks: what
            # ``_check_saved``, ``_call_backward`` and ``_release`` do for it, inline (three
            # calls fewer per node), in the pass's "ignore" state.
            saved = node._saved  # (tensor, version, ...): at most three tensors
            if saved:
                if saved[0]._vc.value != saved[1] or len(saved) > 2 and (
                        saved[2]._vc.value != saved[3] or len(saved) > 4
                        and saved[4]._vc.value != saved[5]):
                    node._check_saved()  # raises the error that names the tensor
            elif node._released:
                node._check_saved()
            grad_inputs = _VJP(node._backward, node, outs[0])
            if saved and not retain_graph:
                node._backward = node._input = node._other = node._result = None
                node._saved = ()
                node._released = True
            return grad_inputs
        # Any other node may run the user's code: hooks, retain_grad, saved-tensor hooks, a
        # custom Function's backward, a leaf's hooks. It runs in the caller's own NumPy error
        # state, so the user's warnings (and np.errstate) behave as they would outside backward.
        token = FP_STATE.set(caller_fp)
        try:
            if node._special or anomaly:
                return run_in_full(node, outs)
            if node.__class__ is AccumulateGrad:
                if not only_inputs and outs[0] is not None:
                    _accumulate_leaf(node.variable, outs[0], create_graph, owned)
                return ()
            node._check_saved()
            grad_inputs = node._backward(outs[0] if node.num_outputs == 1 else outs)
            if not retain_graph:
                node._release()
            return grad_inputs
        finally:
            FP_STATE.reset(token)

    def run_in_full(node: Node, outs: list) -> Sequence:
        if owned is not None:  # hooks and custom backward code may keep what they see
            owned.expose(outs)
        if node._tensor_hooks is not None or node._pre_hooks or node._retained is not None:
            outs = _before_node(node, outs, create_graph)
            if owned is not None:
                owned.expose(outs)
        if node.__class__ is AccumulateGrad:
            if not only_inputs and outs[0] is not None:
                _accumulate_leaf(node.variable, outs[0], create_graph, owned)
            return ()
        grad = outs[0] if node.num_outputs == 1 else outs
        if node._hooks or anomaly:
            grad_inputs = _run_node(node, grad)
        else:
            node._check_saved()
            grad_inputs = node._call_backward(grad)
        if not retain_graph:
            node._release()
        if owned is not None:
            owned.expose(grad_inputs)
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
        grad_inputs = node._call_backward(grad)
    else:
        try:
            grad_inputs = node._call_backward(grad)
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


def _accumulate_leaf(t: "Tensor", grad: "Tensor", create_graph: bool,
                     owned: "_GradMemory | None" = None) -> None:
    """Add ``grad`` into leaf ``t``'s ``.grad`` (after the leaf's hooks), like AccumulateGrad.

    ``.grad`` must not share memory with anything else, or changing it later would change that
    too (a tensor of the graph, the gradient a user passed to ``backward``). A leaf's first
    gradient is usually a fresh array nothing else will hold once the pass is over, so, like
    torch, mytorch keeps it instead of copying it: with ``owned`` (a plain pass), ``.grad``
    takes the array now, and :meth:`_GradMemory.settle` copies it after the pass if the engine
    saw that memory go anywhere else.
    """
    if t._leaf_hooks:
        if owned is not None:
            owned.expose((grad,))
        for hook in list(t._leaf_hooks):
            new = hook(grad)
            if new is not None:
                grad = new
        if owned is not None:
            owned.expose((grad,))
    if grad._data.dtype != t._data.dtype:
        grad = grad.to(t.dtype)
    if t._grad is None:
        if create_graph:
            t._grad = grad
        elif owned is not None and type(grad._data) is np.ndarray and \
                "_post_acc_hooks" not in t.__dict__:
            t._grad = g = wrap(grad._data, grad._device)
            owned.adopted[id(g)] = (t, g)
        else:  # a fresh tensor, so that changing .grad later cannot alter a tensor of the graph
            t._grad = grad.detach().clone()
    elif create_graph or t._grad._requires_grad:
        t._grad = t._grad + grad
    else:
        acc = t._grad
        token = FP_STATE.set(FP_IGNORE)  # overflow to inf silently, as torch's sum does
        try:
            if owned is not None and id(acc) in owned.adopted:
                acc._data = acc._data + grad._data  # its memory may still be shared: a new array
            else:
                try:
                    acc._data += grad._data  # in place: the same .grad tensor keeps accumulating
                except ValueError:  # read-only or broadcast memory: replace the array instead
                    acc._data = acc._data + grad._data
        finally:
            FP_STATE.reset(token)
        acc._vc.value += 1
    post = t.__dict__.get("_post_acc_hooks")
    if post:
        for hook in list(post):
            hook(t)


def _memory(arr: Any) -> Any:
    """The array that owns ``arr``'s memory (``arr`` itself unless it is a view)."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def _same_layout(arr: Any, like: Any) -> bool:
    """Same strides as ``like`` wherever a dimension has more than one element."""
    return all(n == 1 or s == z for n, s, z in zip(arr.shape, arr.strides, like.strides))


class _GradMemory:
    """What a plain pass knows about the memory of the gradients it hands out.

    Gradients are made by the nodes and move only through the engine, so the engine sees every
    place one can go besides ``.grad``: the gradients given to ``backward`` (the caller's), and
    whatever hooks, ``retain_grad`` and custom ``Function`` code were shown (nodes run in full,
    see ``_node_runner``). That memory is *exposed*. A leaf's first gradient becomes its
    ``.grad`` without a copy (*adopted*); after the pass, :meth:`settle` keeps the array only if
    its memory was never exposed, no other leaf adopted it, and it is all of that memory (held
    by no object but NumPy arrays).
    """

    __slots__ = ("adopted", "exposed")

    def __init__(self, roots_grads: Sequence["Tensor"]) -> None:
        self.adopted: dict = {}        # id(.grad) -> (leaf, .grad) for each adoption
        self.exposed: dict = {}        # id -> array owning exposed memory (kept: ids stay unique)
        self.expose(roots_grads)

    def expose(self, grads: Sequence[Any]) -> None:
        """``grads`` (tensors, or None) may be held outside the engine from now on."""
        for g in grads:
            if g is not None and g.__class__ is not list:
                arr = g._data
                if type(arr) is np.ndarray:
                    arr = _memory(arr)
                    self.exposed[id(arr)] = arr
            elif g is not None:
                self.expose(g)

    def settle(self) -> None:
        """Copy each adopted ``.grad`` whose memory may be held elsewhere, or is not laid out
        like its leaf (torch's layout contract: ``.grad`` has the strides of the parameter), into
        a fresh array in the leaf's layout, as if it had been copied from the start."""
        taken = set(self.exposed)
        for t, g in self.adopted.values():
            if t._grad is not g:
                continue  # replaced during the pass (a hook, an optimizer): not ours any more
            arr = g._data
            mem = _memory(arr)
            if id(mem) in taken or mem.base is not None or mem.size != arr.size or \
                    not arr.flags.writeable or not _same_layout(arr, t._data):
                new = np.empty_like(t._data)  # the leaf's own layout (row-major unless not)
                new[...] = arr
                g._data = new
                g._vc = _VersionCounter()
            else:
                taken.add(id(mem))  # the first leaf to take this memory keeps it


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
