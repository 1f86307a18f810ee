"""The nodes of the autograd graph and how operations record themselves.

Every differentiable operation calls :func:`record` after computing its result. ``record``
creates a :class:`Node` (the tensor's ``grad_fn``) that remembers

* ``next_functions``: the nodes of the inputs (or an ``AccumulateGrad`` for a leaf), and
* ``backward``: a closure mapping the output's gradient to one gradient per input,
  written with mytorch tensor operations so that ``create_graph=True`` can differentiate it again.
"""
from __future__ import annotations

import traceback
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .grad_mode import STATE

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["Node", "record", "needs_grad", "sum_to"]

BackwardFn = Callable[["Tensor"], Sequence["Tensor | None"]]


class Node:
    """One recorded operation: ``grad_fn`` of the tensor it produced."""

    __slots__ = ("_name", "next_functions", "_backward", "_saved", "_released", "_pre_hooks",
                 "_retained", "_trace", "metadata", "__weakref__", "_hooks")

    def __init__(self, name: str, next_functions: tuple, backward: BackwardFn | None,
                 saved: tuple = ()) -> None:
        self._name = name
        self.next_functions = next_functions
        self._backward = backward
        self._saved = tuple((t, t._version) for t in saved)
        self._released = False
        self._pre_hooks: list | None = None   # tensor hooks of the tensor this node produced
        self._hooks: list | None = None       # Node.register_hook(fn(grad_inputs, grad_outputs))
        self._retained: Any = None            # weakref to a tensor that called retain_grad()
        self._trace = traceback.format_stack()[:-2] if _anomaly.enabled else None
        self.metadata: dict = {}

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {hex(id(self))}>"

    def register_hook(self, fn: Callable) -> Any:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node's backward runs."""
        from ..utils.hooks import RemovableHandle

        if self._hooks is None:
            self._hooks = []
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn: Callable) -> Any:
        """Call ``fn(grad_outputs)`` before this node's backward runs; may return new grads."""
        from ..utils.hooks import RemovableHandle

        if self._pre_hooks is None:
            self._pre_hooks = []
        return RemovableHandle(self._pre_hooks, lambda g, fn=fn: _first(fn((g,))))

    def _check_saved(self) -> None:
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        for t, version in self._saved:
            if t._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: [{t.type()} {list(t.shape)}], which is an input of "
                    f"{self._name}, is at version {t._version}; expected version {version} instead."
                    " Hint: the operation that failed was modified in place after it was used; "
                    "use an out-of-place version (e.g. x = x + 1 instead of x += 1) or .clone().")

    def _release(self) -> None:
        self._backward = None
        self._saved = ()
        self._released = True


def _first(res: Any) -> Any:
    if res is None:
        return None
    return res[0] if isinstance(res, tuple) else res


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the incoming gradient to ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: "Tensor") -> None:
        super().__init__("AccumulateGrad", (), None)
        self.variable = variable


class _Anomaly:
    enabled = False
    check_nan = True


_anomaly = _Anomaly()

_leaf_nodes: "weakref.WeakKeyDictionary[Any, AccumulateGrad]" = weakref.WeakKeyDictionary()


def accumulate_node(t: "Tensor") -> AccumulateGrad:
    """The single AccumulateGrad node of leaf ``t`` (created on first use, like torch)."""
    node = t._acc_node
    if node is None:
        node = AccumulateGrad(t)
        t._acc_node = node
    return node


def needs_grad(*inputs: Any) -> bool:
    """True when an op over ``inputs`` must be recorded (grad mode on, some input requires grad)."""
    if not STATE.enabled:
        return False
    for x in inputs:  # duck-typed: only tensors have _requires_grad (no import on the hot path)
        if getattr(x, "_requires_grad", False):
            return True
    return False


def record(name: str, out: "Tensor", inputs: Sequence[Any], backward: BackwardFn,
           saved: Sequence["Tensor"] = ()) -> "Tensor":
    """Attach a new ``grad_fn`` called ``name`` to ``out``; return ``out``.

    ``backward(grad)`` must return one gradient (or None) per entry of ``inputs``; it receives
    the gradient of ``out`` as a Tensor and must use differentiable mytorch ops.
    ``saved`` lists tensors whose in-place modification would make the gradient wrong.
    """
    from .._tensor import Tensor

    nexts = []
    for x in inputs:
        if isinstance(x, Tensor) and x._requires_grad:
            nexts.append((x.grad_fn if x.grad_fn is not None else accumulate_node(x), 0))
        else:
            nexts.append((None, 0))
    out.grad_fn = Node(name, tuple(nexts), backward, tuple(saved))
    out._requires_grad = True
    return out


def sum_to(grad: "Tensor", shape: tuple) -> "Tensor":
    """Undo broadcasting: sum ``grad`` over the dimensions that were expanded to reach its shape."""
    gshape = tuple(grad.shape)
    shape = tuple(shape)
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = list(range(lead))
    for i, n in enumerate(shape):
        if n == 1 and gshape[lead + i] != 1:
            dims.append(lead + i)
    if dims:
        grad = grad.sum(dim=tuple(dims), keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    elif tuple(grad.shape) != shape:
        grad = grad.reshape(shape)
    return grad
