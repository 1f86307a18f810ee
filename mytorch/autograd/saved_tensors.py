"""Saved-tensor hooks: decide what a recorded op keeps between forward and backward.

``saved_tensors_hooks(pack, unpack)`` (and ``save_on_cpu``, built on it) is on a stack the nodes
look at when they save tensors (``node._SAVED_HOOKS``); while one is active, a new node hands its
saved tensors to the innermost one, which packs them, and unpacks them again just before the node
runs (:meth:`_PackedEntry.restore`, called by ``Node._check_saved``).
"""
from __future__ import annotations

import weakref
from typing import Any, Callable

from .._tensor import wrap
from .node import _DROPPED, _SAVED_HOOKS, CLOSURE, Node, SavedOutput, accumulate_node

__all__ = ["saved_tensors_hooks", "save_on_cpu"]


class saved_tensors_hooks:
    """Inside this block, every tensor a recorded op saves for backward is handed to
    ``pack_hook(tensor)``, and backward works on ``unpack_hook(what pack returned)`` instead.

    What the hooks return decides what stays in memory between forward and backward: a copy on
    the CPU (``save_on_cpu``), nothing at all until backward asks (checkpointing), or the tensor
    itself. mytorch's backward formulas are closures that capture the tensors they need; a packed
    tensor is taken out of those closures (so, if nothing else holds it, its memory is freed) and
    put back, unpacked, just before the node runs.
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        _SAVED_HOOKS.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _SAVED_HOOKS.pop()

    def _pack_all(self, node: Node, items: list) -> list:
        """What ``node`` keeps instead of ``items`` (its saved tensors): each one packed, and
        taken out of the node's backward closure (see :class:`_PackedEntry`)."""
        pack, unpack = self.pack_hook, self.unpack_hook
        entries = []
        for item in items:
            if item.__class__ is SavedOutput:
                packed = pack(item())
                item._data = None  # the array lives on only in what the pack hook returned
                cells: list = []
            else:
                packed = pack(item)
                cells = _holding(node, item) if packed is not item else []
                for c in cells:
                    c.cell_contents = _DROPPED
            entries.append(_PackedEntry(item, packed, unpack, cells))
        return entries


class save_on_cpu(saved_tensors_hooks):
    """Keep saved tensors in (CPU) host memory between forward and backward, as torch's does."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(t: Any) -> tuple:
            return t.device, t.detach().to("cpu", copy=True)

        def unpack(packed: tuple) -> Any:
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


class _PackedEntry:
    """One saved tensor of a node, as a saved-tensor hook packed it."""

    __slots__ = ("item", "packed", "unpack", "cells", "meta")

    def __init__(self, item: Any, packed: Any, unpack: Callable, cells: list) -> None:
        # a saved output is kept (its array is not); a saved tensor is not: the hook has it
        self.item = item if item.__class__ is SavedOutput else None
        self.packed, self.unpack, self.cells = packed, unpack, cells
        # what a closure may ask of the tensor besides its values: does it require grad, and
        # (for create_graph) where its gradient flows
        leaf = cells and item._requires_grad and item.grad_fn is None
        self.meta = (item._requires_grad, item.grad_fn, item._output_nr,
                     accumulate_node(item) if leaf else None) if cells else None

    def restore(self) -> None:
        """Just before the node runs: put the unpacked tensor back where backward reads it."""
        t = self.unpack(self.packed)
        if self.item is not None:
            self.item._data = t._data
        if not self.cells:
            return
        requires_grad, grad_fn, nr, acc = self.meta
        if (t._requires_grad, t.grad_fn) != (requires_grad, grad_fn) or acc is not None:
            t, vc = wrap(t._data, t._device), t._vc  # the values unpacked, the graph position saved
            t._vc, t._requires_grad, t.grad_fn, t._output_nr = vc, requires_grad, grad_fn, nr
            if acc is not None:  # a leaf: gradients of the alias reach the leaf's own .grad
                t._acc_node = weakref.ref(acc)
        for c in self.cells:
            c.cell_contents = t



class _FieldCell:
    """A field of a rule's node (``_input``, ``_other``: see rules.py), read and written as a
    closure cell (the node weakly: it holds this cell through its packed entries)."""

    __slots__ = ("node", "field")

    def __init__(self, node: Node, field: str) -> None:
        self.node, self.field = weakref.ref(node), field

    @property
    def cell_contents(self) -> Any:
        return getattr(self.node(), self.field)

    @cell_contents.setter
    def cell_contents(self, value: Any) -> None:
        node = self.node()
        if node is not None:
            setattr(node, self.field, value)


def _holding(node: Node, item: Any) -> list:
    """Where ``node``'s backward reads ``item``: fields of a rule's node, or cells of its
    backward closure."""
    if node._dtype is not CLOSURE:
        return [_FieldCell(node, f) for f in ("_input", "_other") if getattr(node, f) is item]
    return _cells_holding(node._backward, item)


def _cells_holding(fn: Any, item: Any, depth: int = 3) -> list:
    """The closure cells of ``fn`` (and of functions it closes over) that hold ``item``."""
    out: list = []
    for c in getattr(fn, "__closure__", None) or ():
        try:
            value = c.cell_contents
        except ValueError:  # an empty cell
            continue
        if value is item:
            out.append(c)
        elif depth and callable(value) and getattr(value, "__closure__", None):
            out += [x for x in _cells_holding(value, item, depth - 1) if x not in out]
    return out
