"""The nodes of the autograd graph and how operations record themselves.

Every differentiable operation calls :func:`record` after computing its result. ``record``
creates a :class:`Node` (the tensor's ``grad_fn``) that remembers

* ``next_functions``: the nodes of the inputs (or an ``AccumulateGrad`` for a leaf), and
* ``backward``: a closure mapping the output's gradient to one gradient per input,
  written with mytorch tensor operations so that ``create_graph=True`` can differentiate it again.

The element-wise primitives record the same :class:`Node` from a rule instead of a closure
(``rules.py``: ``record_rule``); the node then keeps the rule's operands in its own fields.
"""
from __future__ import annotations

import itertools
import re
import weakref
from typing import Any, Callable, Sequence

from .._tensor import NoAccumulator, Tensor, wrap
from ..utils.hooks import RemovableHandle
from .anomaly_mode import _anomaly, _forward_trace
from .grad_mode import STATE

__all__ = ["Node", "SavedOutput", "AccumulateGrad", "record", "record_outputs", "needs_grad",
           "accumulate_node", "edge", "adopt_outputs", "mode_view_refusal"]

BackwardFn = Callable[["Tensor"], Sequence["Tensor | None"]]

FREED_GRAPH = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.")

INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a clone "
    "to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`.")

#: The active ``saved_tensors_hooks`` (saved_tensors.py), innermost last: a node created while
#: one is active hands it its saved tensors.
_SAVED_HOOKS: list = []


class _Dropped:
    """What a backward closure holds in place of a packed tensor until it is unpacked."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<saved tensor, packed by a saved_tensors_hooks pack hook>"


_DROPPED = _Dropped()


_SEQUENCE = itertools.count()


def next_sequence_nr() -> int:
    """A creation number no node has yet: every node created from now on has one as large."""
    return next(_SEQUENCE) + 1


#: ``Node._dtype`` of a node whose backward is a closure. A node made from a rule
#: (``autograd/rules.py``) keeps there the dtype of its result's array when its operands may be
#: used as bare arrays in a plain backward (else None), and the operands the rule reads in
#: ``_input``, ``_other`` and ``_result`` (a :class:`SavedOutput`): torch's generated nodes keep
#: their saved variables as fields too.
CLOSURE = object()


class Node:
    """One recorded operation: ``grad_fn`` of the tensor(s) it produced.

    ``num_outputs`` is 1 for every built-in op; a custom ``autograd.Function`` may produce several
    tensors from one node, and then its backward receives a list with one gradient per output.
    """

    # What every node has. The rest is rare (hooks, anomaly traces, several outputs...): class-level
    # defaults below, which a node overrides in its own ``__dict__`` only when it needs to, so that
    # recording a node (once per op) stores six attributes instead of fifteen.
    __slots__ = ("_name", "next_functions", "_backward", "_saved", "_released", "_seq",
                 "_input", "_other", "_result", "_dtype", "__weakref__", "__dict__")
    num_outputs = 1
    # True once the node has hooks, retains a gradient or had its saved tensors packed by
    # saved-tensor hooks: the engine's quick path (``run_node``) leaves such a node to the full one
    _special = False
    _packed: list | None = None      # what saved-tensor hooks made of the saved tensors
    _tensor_hooks: dict | None = None  # output_nr -> hooks of that output tensor
    _retained: dict | None = None    # output_nr -> weakref of a tensor that retains grad
    _pre_hooks: list | None = None   # Node.register_prehook(fn(grad_outputs))
    _hooks: list | None = None       # Node.register_hook(fn(grad_inputs, grad_outputs))
    _trace: list | None = None       # anomaly mode: where the forward call came from
    _metadata: dict | None = None

    def __init__(self, name: str, next_functions: tuple, backward: BackwardFn | None,
                 saved: tuple = (), num_outputs: int = 1) -> None:
        self._name = name
        self.next_functions = next_functions
        self._backward = backward
        self._dtype = CLOSURE
        # (tensor, its version now, ...): backward refuses to run if a version has moved on
        self._saved = _save(self, saved) if saved else ()
        self._released = False
        if _anomaly.enabled:
            self._trace = _forward_trace()
        if num_outputs != 1:
            self.num_outputs = num_outputs
        self._seq = next(_SEQUENCE)  # creation order (checkpointing tells old nodes from new)

    @property
    def metadata(self) -> dict:
        """A dict for users' own notes about this node (created on first use)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:  # (torch's C++ nodes, "torch::autograd::CopySlices", without it)
        return f"<{self._name.rpartition('::')[2]} object at {hex(id(self))}>"

    def __call__(self, *grads: "Tensor") -> Any:
        """Run this node's backward on ``grads`` by hand (as ``y.grad_fn(g)`` does in torch)."""
        self._check_saved()
        res = tuple(self._call_backward(grads[0] if self.num_outputs == 1 else list(grads)))
        return res[0] if len(res) == 1 else res

    def _call_backward(self, grad: Any) -> Sequence:
        """Run the backward: the closure :func:`record` gave, or, for a node made from a rule
        (``autograd/rules.py``), the rule applied to the operands the node keeps."""
        if self._dtype is CLOSURE:
            return self._backward(grad)  # type: ignore[misc]
        return self._backward.vjp(self, grad)  # type: ignore[union-attr]

    def register_hook(self, fn: Callable) -> Any:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node's backward runs.

        A hook that returns a tuple replaces the gradients passed on to the next nodes.
        """
        if self._hooks is None:
            self._hooks = []
            self._special = True
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn: Callable) -> Any:
        """Call ``fn(grad_outputs)`` before this node's backward runs; may return new grads."""
        if self._pre_hooks is None:
            self._pre_hooks = []
            self._special = True
        return RemovableHandle(self._pre_hooks, fn)

    def _add_tensor_hook(self, nr: int, fn: Callable) -> Any:
        """A hook of output ``nr`` of this node (``Tensor.register_hook`` on a non-leaf)."""
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
            self._special = True
        return RemovableHandle(self._tensor_hooks.setdefault(nr, []), fn)

    def _retain(self, nr: int, t: "Tensor") -> None:
        """Keep the gradient of output ``nr`` in ``t.grad`` (``Tensor.retain_grad``)."""
        if self._retained is None:
            self._retained = {}
            self._special = True
        self._retained[nr] = weakref.ref(t)

    def _check_saved(self) -> None:
        """Refuse to run a freed node, or one whose saved tensors were modified in place; with
        saved-tensor hooks, get the saved tensors back from the unpack hook instead (as torch,
        no version check then: the hook decides what backward sees)."""
        if self._released:
            raise RuntimeError(FREED_GRAPH)
        if self._packed is not None:
            for entry in self._packed:
                entry.restore()
            return
        saved = self._saved  # tensor, version, tensor, version, ...
        for i in range(0, len(saved), 2):
            t = saved[i]
            if t._vc.value != saved[i + 1]:
                raise RuntimeError(_modified_message(self, t, saved[i + 1]))

    def _release(self) -> None:
        """Drop the closure and the saved tensors (what ``retain_graph=False`` frees).

        A node that saved nothing has nothing to free: like torch, it may run again.
        """
        if self._saved:
            self._backward = None
            if self._dtype is not CLOSURE:
                self._input = self._other = self._result = None
            self._saved = ()
            if self._packed is not None:
                self._packed = None
            self._released = True


class SavedOutput:
    """How a backward closure keeps its own op's *output*: the array, not the tensor.

    The output tensor holds the node (``grad_fn``), the node holds the closure; if the closure held
    the output too, every graph would be a reference cycle, freed only by the cyclic garbage
    collector. This keeps the array and the version counter instead. Calling it gives the output
    back as a tensor whose ``grad_fn`` is the node (found through a weak reference while backward
    runs), so a gradient built from it stays differentiable under ``create_graph=True``.
    """

    __slots__ = ("_data", "_device", "_vc", "_node", "_nr")
    _inference = False

    def __init__(self, t: "Tensor", nr: int = 0) -> None:
        self._data = t._data
        self._device = t._device
        self._vc = t._vc
        self._node: Any = None
        self._nr = nr

    @property
    def data(self) -> Any:
        """The output's array (for masks and other constants of the backward)."""
        return self._data

    def __call__(self) -> "Tensor":
        t = wrap(self._data, self._device)
        t._vc = self._vc
        node = self._node() if self._node is not None else None
        if node is not None:
            t.grad_fn = node
            t._requires_grad = True
            if self._nr:
                t._output_nr = self._nr
        return t

    def _adopt(self, t: "Tensor") -> None:
        """An in-place op copied the output into ``t``: keep ``t``'s memory instead."""
        self._data, self._vc = t._data, t._vc


def _save(node: Node, saved: Sequence[Any]) -> tuple:
    """A node's ``_saved``: each saved tensor followed by its version now, in one flat tuple
    (``(t0, v0, t1, v1, ...)``: one object per node, not one per tensor more). A saved output
    learns its node (weakly).

    Inside :class:`saved_tensors_hooks`, each saved tensor also goes through the pack hook.
    """
    out = []
    for t in saved:
        if t.__class__ is SavedOutput:
            t._node = weakref.ref(node)
        out += (t, t._vc.value)
    if _SAVED_HOOKS:  # the hooks keep what they want; the node keeps no saved tensor itself
        node._packed = _SAVED_HOOKS[-1]._pack_all(node, list(saved))
        node._special = True
        out[::2] = [_DROPPED] * len(saved)
    return tuple(out)


def adopt_outputs(node: Node, old: "Tensor", new: "Tensor") -> None:
    """After an in-place op copied ``old`` (an op's output) into ``new``, point the outputs
    ``node`` saved at ``new``'s memory and version, so later changes of ``new`` are caught."""
    saved = list(node._saved)
    for i in range(0, len(saved), 2):
        t = saved[i]
        if t.__class__ is SavedOutput and t._data is old._data:
            t._adopt(new)
            saved[i + 1] = new._vc.value
    node._saved = tuple(saved)


def _modified_message(node: Node, t: Any, version: int) -> str:
    """torch's error for a saved tensor changed in place between forward and backward.

    A saved output is named after the node that saved it (its producer); a saved input after its
    current ``grad_fn``, and a view whose memory changed as ``AsStrided``, as torch does.
    """
    current = t._vc.value
    if t.__class__ is SavedOutput:
        producer, nr = node.name(), t._nr
        t = wrap(t._data, t._device)
    elif t.grad_fn is not None:
        producer, nr = t.grad_fn.name(), t._output_nr
        if t._base is not None:
            producer = "AsStridedBackward0"
    else:
        producer = None
    what = f"[{t.type()} {list(t.shape)}]"
    if producer is not None:
        producer = re.sub(r"Backward\d*$", "", producer)
        what += f", which is output {nr} of {producer},"
    return ("one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: {what} is at version {current}; "
            f"expected version {version} instead. Hint: enable anomaly detection to find the "
            "operation that failed to compute its gradient, with "
            "torch.autograd.set_detect_anomaly(True, check_nan=False).")


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the incoming gradient to ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: "Tensor") -> None:
        super().__init__("torch::autograd::AccumulateGrad", (), None)  # torch's C++ name
        self.variable = variable

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


def accumulate_node(t: "Tensor") -> AccumulateGrad:
    """The AccumulateGrad node of leaf ``t``: shared by every graph alive that uses ``t``.

    The leaf keeps only a weak reference to it (the node holds the leaf), as torch does: a strong
    one both ways would make every leaf a reference cycle.
    """
    ref = t._acc_node
    node = ref() if ref is not None else None
    if node is None:
        if ref.__class__ is NoAccumulator:  # a view made in no_grad mode: its gradient is lost
            if ref.version != t._vc.value:
                raise RuntimeError(mode_view_refusal(
                    t._view_meta, "A view was created in",
                    "its base or another view of its base has been"))
            return None
        node = AccumulateGrad(t)
        t._acc_node = weakref.ref(node)
    return node


# torch's words for a view made in no_grad or inference mode: where it was made, the mode of
# the in-place change it refuses, and the block to move both into.
_MODE_WORDS = {"no_grad": ("no_grad mode", "with grad mode enabled", "no_grad block"),
               "inference": ("inference mode", "in normal mode", "inference_mode block")}


def mode_view_refusal(meta: str, head: str, what: str) -> str:
    """torch's message refusing an in-place change that involves a view made in no_grad mode
    (``meta`` "no_grad") or inference mode ("inference"): ``head`` says which view, ``what`` whose
    change ("is being" for the view's own, or its base's)."""
    made, now, block = _MODE_WORDS[meta]
    return (f"{head} {made} and {what} modified inplace {now}. Given that this use case is "
            "ambiguous and error-prone, it is forbidden. You can clarify your code by moving both "
            f"the view and the inplace either both inside the {block} (if you don't want the "
            "inplace to be tracked) or both outside (if you want the inplace to be tracked).")


def edge(x: "Tensor") -> tuple:
    """The ``(node, output_nr)`` pair through which a gradient reaches tensor ``x``."""
    node = x.grad_fn
    if node is None:
        return (accumulate_node(x), 0)
    return (node, x._output_nr)


def needs_grad(*inputs: Any) -> bool:
    """True when an op over ``inputs`` must be recorded (grad mode on, some input requires grad)."""
    if not STATE.enabled:
        return False
    for x in inputs:  # numbers and None among them: only tensors require grad
        if isinstance(x, Tensor) and x._requires_grad:
            return True
    return False


def record(name: str, out: "Tensor", inputs: Sequence[Any], backward: BackwardFn,
           saved: Sequence["Tensor"] = ()) -> "Tensor":
    """Attach a new ``grad_fn`` called ``name`` to ``out``; return ``out``.

    ``backward(grad)`` must return one gradient (or None) per entry of ``inputs``; it receives
    the gradient of ``out`` as a Tensor and must use differentiable mytorch ops.
    ``saved`` lists every tensor the closure reads: an in-place change of one of them between
    forward and backward is an error, and backward frees them. A closure that needs the op's own
    output saves and reads it through a :class:`SavedOutput` (never the output tensor itself).
    """
    nexts = []
    for x in inputs:
        if getattr(x, "_requires_grad", False):
            node = x.grad_fn
            nexts.append((accumulate_node(x), 0) if node is None else (node, x._output_nr))
        else:
            nexts.append((None, 0))
    if saved:
        for t in saved:
            if t._inference:
                raise RuntimeError(INFERENCE_SAVED)
    out.grad_fn = Node(name, tuple(nexts), backward, saved)
    out._requires_grad = True
    if out._output_nr:  # an in-place op on output 1, 2... of a node: now this node's output
        out._output_nr = 0
    return out


NO_EDGE = _NO_EDGE = (None, 0)  # the edge of an input that takes no gradient (a number, a constant)


def record_outputs(name: str, outs: Sequence["Tensor"], inputs: Sequence[Any],
                   backward: Callable[[list], Sequence[Any]], saved: Sequence[Any] = ()) -> Node:
    """:func:`record` for an op with several outputs: one node, ``outs[i]`` is its output ``i``.

    ``backward`` receives a list with one gradient (or None) per output.
    """
    nexts = tuple(edge(x) if getattr(x, "_requires_grad", False) else (None, 0) for x in inputs)
    for t in saved:
        if t._inference:
            raise RuntimeError(INFERENCE_SAVED)
    node = Node(name, nexts, backward, tuple(saved), num_outputs=len(outs))
    for nr, t in enumerate(outs):
        t.grad_fn, t._requires_grad = node, True
        if nr:
            t._output_nr = nr
    return node
