"""The nodes of the autograd graph and how operations record themselves.

Every differentiable operation calls :func:`record` after computing its result. ``record``
creates a :class:`Node` (the tensor's ``grad_fn``) that remembers

* ``next_functions``: the nodes of the inputs (or an ``AccumulateGrad`` for a leaf), and
* ``backward``: a closure mapping the output's gradient to one gradient per input,
  written with mytorch tensor operations so that ``create_graph=True`` can differentiate it again.

In-place operations on a *view* also change the view's base; :func:`rebase_history` gives the base
a ``CopySlices`` node so that gradients flowing into the base see the change.
"""
from __future__ import annotations

import re
import traceback
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .grad_mode import STATE

if TYPE_CHECKING:
    from .._tensor import Tensor

__all__ = ["Node", "record", "needs_grad", "sum_to", "rebase_history"]

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


class Node:
    """One recorded operation: ``grad_fn`` of the tensor(s) it produced.

    ``num_outputs`` is 1 for every built-in op; a custom ``autograd.Function`` may produce several
    tensors from one node, and then its backward receives a list with one gradient per output.
    """

    __slots__ = ("_name", "next_functions", "_backward", "_saved", "_released", "_pre_hooks",
                 "_retained", "_trace", "_metadata", "__weakref__", "_hooks", "num_outputs")

    def __init__(self, name: str, next_functions: tuple, backward: BackwardFn | None,
                 saved: tuple = (), num_outputs: int = 1) -> None:
        self._name = name
        self.next_functions = next_functions
        self._backward = backward
        # (tensor, its version now): backward refuses to run if the version has moved on
        self._saved = tuple([(t, t._vc.value) for t in saved]) if saved else ()
        self._released = False
        self._pre_hooks: list | None = None   # tensor hooks of the tensor this node produced
        self._hooks: list | None = None       # Node.register_hook(fn(grad_inputs, grad_outputs))
        self._retained: Any = None            # weakref to a tensor that called retain_grad()
        self._trace = traceback.format_stack()[:-3] if _anomaly.enabled else None
        self._metadata: dict | None = None
        self.num_outputs = num_outputs

    @property
    def metadata(self) -> dict:
        """A dict for users' own notes about this node (created on first use)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {hex(id(self))}>"

    def __call__(self, *grads: "Tensor") -> Any:
        """Run this node's backward on ``grads`` by hand (as ``y.grad_fn(g)`` does in torch)."""
        self._check_saved()
        res = self._backward(grads[0] if self.num_outputs == 1 else list(grads))  # type: ignore
        res = tuple(res)
        return res[0] if len(res) == 1 else res

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
        """Refuse to run a freed node, or one whose saved tensors were modified in place."""
        if self._released:
            raise RuntimeError(FREED_GRAPH)
        for t, version in self._saved:
            if t._vc.value != version:
                raise RuntimeError(_modified_message(t, version))

    def _release(self) -> None:
        """Drop the closure and the saved tensors (what ``retain_graph=False`` frees)."""
        self._backward = None
        self._saved = ()
        self._released = True


def _modified_message(t: "Tensor", version: int) -> str:
    """torch's error for a saved tensor changed in place between forward and backward."""
    what = f"[{t.type()} {list(t.shape)}]"
    if t.grad_fn is not None:
        producer = re.sub(r"Backward\d*$", "", t.grad_fn.name())
        what += f", which is output 0 of {producer},"
    return ("one of the variables needed for gradient computation has been modified by an inplace "
            f"operation: {what} is at version {t._vc.value}; expected version {version} instead. "
            "Hint: enable anomaly detection to find the operation that failed to compute its "
            "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")


def _first(res: Any) -> Any:
    if res is None:
        return None
    return res[0] if isinstance(res, tuple) else res


class AccumulateGrad(Node):
    """The node of a leaf tensor: adds the incoming gradient to ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable: "Tensor") -> None:
        super().__init__("torch::autograd::AccumulateGrad", (), None)  # torch's C++ name
        self.variable = variable

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


class _Anomaly:
    """Anomaly-detection switches (set by ``autograd.detect_anomaly``)."""

    enabled = False
    check_nan = True


_anomaly = _Anomaly()


def accumulate_node(t: "Tensor") -> AccumulateGrad:
    """The single AccumulateGrad node of leaf ``t`` (created on first use, like torch)."""
    node = t._acc_node
    if node is None:
        node = AccumulateGrad(t)
        t._acc_node = node
    return node


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


# ----------------------------------------------------------------------------- views + in-place
def check_inplace(t: "Tensor") -> None:
    """torch's refusals before an in-place change of ``t`` while grad mode is on."""
    if not STATE.enabled:
        return
    base = t._base
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def rebase_history(view: "Tensor") -> None:
    """After an in-place op on ``view``, make its base's history include the change.

    The base's new node, ``CopySlices``, splits the base's gradient in two: the part outside the
    view flows to the base's old history unchanged; the part inside the view flows into the
    in-place op's node (whose own inputs lead back to the old base through the old view).
    """
    base = view._base
    if base is None or view.grad_fn is None:
        return
    if base._requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    import numpy as np

    positions = _positions_in_base(view, base)       # flat index in base of each view element
    dev = base._device
    pos = _to_device(positions.reshape(-1), dev)
    outside = np.ones(base._data.size, dtype=base._data.dtype)
    outside[positions.reshape(-1)] = 0
    keep = _to_device(outside.reshape(base._data.shape), dev)
    vshape = tuple(view._data.shape)
    old_edge = edge(base) if base._requires_grad else (None, 0)

    def backward(g: "Tensor") -> tuple:
        return (g * keep if old_edge[0] is not None else None,
                g.reshape(-1)[pos].reshape(vshape))

    base.grad_fn = CopySlices((old_edge, (view.grad_fn, view._output_nr)), backward)
    base._requires_grad = True
    for ref in base._vc.views or ():
        other = ref()
        if other is not None and other is not view and other._base is base:
            _regenerate_view(other, base)


class CopySlices(Node):
    """The node of a base after an in-place op on one of its views (torch's C++ name)."""

    __slots__ = ()

    def __init__(self, next_functions: tuple, backward: BackwardFn) -> None:
        super().__init__("torch::autograd::CopySlices", next_functions, backward)

    def __repr__(self) -> str:
        return f"<CopySlices object at {hex(id(self))}>"


def _regenerate_view(view: "Tensor", base: "Tensor") -> None:
    """Another view of a rebased base: its history is now "those elements of the new base"."""
    positions = _to_device(_positions_in_base(view, base).reshape(-1), base._device)
    shape, numel = tuple(base._data.shape), base._data.size

    def backward(g: "Tensor") -> tuple:
        from .._creation import zeros

        flat = zeros(numel, dtype=g.dtype, device=g.device)
        return (flat.index_add(0, positions, g.reshape(-1)).reshape(shape),)

    view.grad_fn = Node("AsStridedBackward0", (edge(base),), backward)
    view._requires_grad = True


def _to_device(arr: Any, dev: Any) -> "Tensor":
    from .._tensor import wrap

    t = wrap(arr)
    return t if dev.type == "cpu" else t.to(dev)


def _positions_in_base(view: "Tensor", base: "Tensor") -> Any:
    """For each element of ``view``, its row-major position in ``base`` (matched by address)."""
    import numpy as np

    def addresses(t: "Tensor") -> Any:
        shape = t._data.shape
        addr = np.full(shape, t.data_ptr(), dtype=np.int64)
        for d, (n, s) in enumerate(zip(shape, t._data.strides)):
            idx = np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (len(shape) - d - 1))
            addr = addr + idx * s
        return addr

    base_addr = addresses(base).reshape(-1)
    order = np.argsort(base_addr, kind="stable")
    found = np.searchsorted(base_addr[order], addresses(view).reshape(-1))
    return order[found].reshape(view._data.shape)
