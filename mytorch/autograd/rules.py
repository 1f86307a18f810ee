"""Derivative rules: a differentiable primitive's derivative, written once, as data.

A :class:`Rule` is one op's line in a table, as in torch's ``derivatives.yaml``: the name of its
node (``MulBackward0``), its forward on arrays, and one derivative per input, ``d(g, a, b, y)``
(``g`` the gradient of the result, ``a`` and ``b`` the operands, ``y`` the result; a one-input op
may keep a constant in ``b``, as ``pow`` keeps its exponent). A derivative is written with
arithmetic operators and functions that take an array or a tensor alike, so one expression
serves both kinds of backward pass:

* a plain ``backward()`` (grad mode off: nothing records the backward itself) runs it on the
  bare arrays, and only its results become tensors;
* a pass that builds a graph of its own (``create_graph=True``), saved-tensor hooks, anomaly mode,
  or a node recorded with broadcasting or type promotion run it on tensors: its arithmetic is then
  recorded, so it can be differentiated again, and each gradient is summed back to its operand's
  shape and dtype.

:func:`record_rule` makes the node: a :class:`~.node.Node` whose ``_backward`` is the rule,
which keeps what the rule reads in its own fields (``_input``, ``_other``, ``_result``) and, in
``_dtype``, the result's array dtype when the operands had one shape and that dtype, so the arrays
may be used as they are (else None). Fields rather than a closure or a tuple: a long chain of tiny
ops spends a good part of its time in the garbage collector, whose work grows with the objects
each recorded op leaves alive.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from .. import _dtype as D
from .._fp import FP_IGNORE, FP_STATE
from .._tensor import Tensor, wrap
from .anomaly_mode import _anomaly, _forward_trace
from .grad_mode import STATE
from .node import _SEQUENCE, INFERENCE_SAVED, NO_EDGE, Node, SavedOutput, _save, accumulate_node
from .unbroadcast import sum_to

__all__ = ["Rule", "GRAD", "record_rule"]


def GRAD(g: Any, a: Any, b: Any, y: Any) -> Any:
    """The derivative that is the gradient itself (``self: grad`` in torch's derivatives.yaml):
    a rule that lists it hands ``g`` on without calling anything."""
    return g


class Rule:
    """One differentiable primitive: ``name`` (torch's node name), ``forward(*arrays)``, and
    ``grads``, one derivative ``d(g, a, b, y)`` per input.

    ``reads`` says, per input, which of ``a``, ``b`` and ``y`` its derivative uses (``"b"`` for
    the first input of a product): the node keeps, and checks for in-place changes, only what the
    derivatives of the inputs that want a gradient read, as torch saves only those.
    A derivative must run on arrays and tensors alike: arithmetic operators, and for anything
    else a function that takes either (``pointwise._either``).
    """

    __slots__ = ("name", "forward", "grads", "reads", "_keeps")

    def __init__(self, name: str, forward: Callable, *grads: Callable,
                 reads: Sequence[str] = ("",)) -> None:
        self.name, self.forward, self.grads = name, forward, grads
        self.reads = tuple(reads)
        # what a node keeps, by which inputs want a gradient (index: 1 for the first, 2 for the
        # second): (a, b, y), computed once here rather than for every recorded call
        reads = tuple(reads) + ("",) * (2 - len(reads))
        self._keeps = tuple(tuple(any(c in r for r, want in zip(reads, (m & 1, m & 2)) if want)
                                  for c in "aby") for m in range(4))

    def __repr__(self) -> str:
        return f"Rule({self.name})"

    def vjp(self, node: Node, g: Tensor) -> Sequence:
        """The gradients of ``node``'s inputs (None for one that wants none), given ``g``; inf
        and nan silently, as in the forward (NumPy's floating-point warnings off)."""
        token = FP_STATE.set(FP_IGNORE)
        try:
            return self._vjp(node, g)
        finally:
            FP_STATE.reset(token)

    def _vjp(self, node: Node, g: Tensor) -> Sequence:
        """:meth:`vjp` for a caller that has switched NumPy's warnings off already: the engine's
        backward pass does it once for the whole pass, not once per node."""
        a, b, y, dtype = node._input, node._other, node._result, node._dtype
        nexts = node.next_functions
        arr = g._data
        if arr.dtype is dtype and not STATE.enabled:
            # a plain pass, and a node whose operands had the result's shape and dtype: the rule
            # on the bare arrays (run once per node: written out for one and two inputs)
            if isinstance(a, Tensor):
                a = a._data
            if isinstance(b, Tensor):
                b = b._data
            if y is not None:
                y = y._data
            if len(nexts) == 1:
                r = self.grads[0](arr, a, b, y)
                return (g if r is arr else wrap(r, g._device),)
            d_a, d_b = self.grads
            ga = gb = None
            if nexts[0][0] is not None:
                if d_a is GRAD:
                    ga = g
                else:
                    r = d_a(arr, a, b, y)
                    ga = g if r is arr else wrap(r, g._device)
            if nexts[1][0] is not None:
                if d_b is GRAD:
                    gb = g
                else:
                    r = d_b(arr, a, b, y)
                    gb = g if r is arr else wrap(r, g._device)
            return ga, gb
        yt = None if y is None else y()
        if dtype is not None:                      # one shape and dtype: nothing to sum back
            if g._data.dtype is not dtype:
                g = g.to(D._BY_NP[dtype])
            return [None if fn is None else d(g, a, b, yt)
                    for (fn, _), d in zip(nexts, self.grads)]
        return [None if fn is None else _grad_for(d(g, a, b, yt), x)
                for (fn, _), d, x in zip(nexts, self.grads, (a, b))]


def _grad_for(g: Tensor, x: Tensor | None) -> Tensor:
    """``g`` summed back to operand ``x``'s shape, in ``x``'s dtype (as it is for None: the
    input a one-input rule does not read)."""
    if x is None:
        return g
    g = sum_to(g, x._data.shape)
    return g if g._data.dtype == x._data.dtype else g.to(x.dtype)


_new = object.__new__


def record_rule(rule: Rule, out: Tensor, a: Any, b: Any = None, plain: bool = False,
                name: str | None = None) -> Tensor:
    """Record ``out = rule.forward(a, b)``: attach its node (called ``name``, by default the
    rule's) and return ``out``. ``plain``: ``a`` and ``b`` (numbers, or arrays of ``out``'s
    shape and dtype in row-major host memory) may be used as they are in a plain backward.

    The one place a rule's node is made: every op of the rule table comes through here, once per
    recorded call, so it is written out, without helpers, loops or intermediate lists.
    """
    if isinstance(a, Tensor) and a._requires_grad:
        fn = a.grad_fn
        e0 = (accumulate_node(a), 0) if fn is None else (fn, a._output_nr)
        want = 1
    else:
        e0, want = NO_EDGE, 0
    if len(rule.grads) == 1:
        nexts: tuple = (e0,)
        keep_a, keep_b, keep_y = rule._keeps[1]
        if not keep_a:  # (its gradient has its shape and dtype: nothing to sum back)
            a = None
    else:
        if isinstance(b, Tensor) and b._requires_grad:
            fn = b.grad_fn
            e1 = (accumulate_node(b), 0) if fn is None else (fn, b._output_nr)
            want += 2
        else:
            e1 = NO_EDGE
        nexts = (e0, e1)
        keep_a, keep_b, keep_y = rule._keeps[want]
        if plain:  # keep only the operands a derivative reads (the others may be freed)
            if not keep_a:
                a = None
            if not keep_b:
                b = None
    node = _new(Node)
    node._name = name or rule.name
    node.next_functions = nexts
    node._backward = rule
    node._released = False
    node._seq = next(_SEQUENCE)
    if _anomaly.enabled:
        node._trace = _forward_trace()
    y = SavedOutput(out) if keep_y else None
    node._input, node._other, node._result = a, b, y
    node._dtype = out._data.dtype if plain else None
    saved = []
    if keep_b and isinstance(b, Tensor):
        saved.append(b)
    if keep_a and isinstance(a, Tensor):
        saved.append(a)
    if keep_y:
        saved.append(y)
    if saved:
        for t in saved:
            if t._inference:
                raise RuntimeError(INFERENCE_SAVED)
        node._saved = _save(node, saved)
    else:
        node._saved = ()
    out.grad_fn = node
    out._requires_grad = True
    if out._output_nr:  # an in-place op on output 1, 2... of a node: now this node's output
        out._output_nr = 0
    return out
