"""In-place changes through views: torch's refusals, and the base's new history.

After an in-place op on a view, :func:`rebase_history` gives the view's base a ``CopySlices``
node, so gradients flowing into the base see the change; the base's other views get a node that
reads their elements from the new base.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from .._tensor import NoAccumulator, Tensor, wrap
from .grad_mode import STATE
from .node import BackwardFn, Node, accumulate_node, edge, mode_view_refusal

__all__ = ["check_inplace", "rebase_history", "CopySlices"]


def check_inplace(t: "Tensor", via: str | None = None) -> None:
    """torch's refusals before an in-place change of ``t`` that autograd records (grad mode on
    and something involved requires grad). ``via``: see :func:`_view_refusal`."""
    if not STATE.enabled:
        return
    base = t._base
    if base is not None and t._view_meta:
        if via and t._acc_node.__class__ is NoAccumulator:
            accumulate_node(t)  # torch makes the view ``via`` first: refused if t's base changed
        raise RuntimeError(_view_refusal(t, via))
    if base is not None and base._requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if t._requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


_MULTI_OUTPUT = (" This view is the output of a function that returns multiple views. Such "
                 "functions do not allow the output views to be modified inplace. You should "
                 "replace the inplace operation by an out-of-place one.")
_CUSTOM_FUNCTION = (" This view was created inside a custom Function (or because an input was "
                    "returned as-is) and the autograd logic to handle view+inplace would override "
                    "the custom backward associated with the custom Function, leading to "
                    "incorrect gradients. This behavior is forbidden. You can fix this by cloning "
                    "the output of the custom Function.")


def _view_refusal(t: Tensor, via: str | None = None) -> str:
    """torch's message for an in-place change of an output of split/unbind, or of a view made in
    no_grad or inference mode (``t._view_meta``); it names the view's node without "Backward0".
    ``via``: the view op (``"Select"``) that indexing applies to ``t`` before writing
    (``t[0] = 5``), which torch's message names instead."""
    fn, meta = t.grad_fn, t._view_meta
    name = via or (re.sub(r'Backward[0-9]*$', '', fn.name()) if fn is not None else None)
    head = f"Output {0 if via else t._output_nr} of {name} is a view" if name else None
    if meta in ("no_grad", "inference"):
        return mode_view_refusal(meta, f"{head} of a view which was created in" if head
                                 else "A view was created in", "is being")
    start = f"{head} and is being modified inplace." if head else \
        "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
    return start + (_MULTI_OUTPUT if meta == "multi_output" else _CUSTOM_FUNCTION)


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
        flat = g.new_zeros(numel)
        return (flat.index_add(0, positions, g.reshape(-1)).reshape(shape),)

    view.grad_fn = Node("AsStridedBackward0", (edge(base),), backward)
    view._requires_grad = True
    if view._output_nr:  # it was output 1, 2... of split's node
        view._output_nr = 0


def _to_device(arr: Any, dev: Any) -> "Tensor":
    t = wrap(arr)
    return t if dev.type == "cpu" else t.to(dev)


def _positions_in_base(view: "Tensor", base: "Tensor") -> Any:
    """For each element of ``view``, its row-major position in ``base`` (matched by address)."""
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
