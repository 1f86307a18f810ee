"""Gradient checkpointing: trade compute for memory.

``checkpoint(f, x)`` keeps none of the intermediate tensors of ``f``: during backward, ``f`` runs a
second time, and its fresh graph is back-propagated. The block's activations then take memory only
while its backward runs; the price is one more forward pass. The random-number state is saved and
restored so that random ops (dropout) draw the same numbers both times. The inputs are kept.

Two variants, as in torch:

* ``use_reentrant=False`` (recommended): ``f`` runs with autograd on, so the output's node is
  connected to everything ``f`` used, the parameters included, even when no input requires grad;
  then the recorded graph is dropped and one node stands in for it. Its backward recomputes ``f``
  and runs a backward pass over that region only, which works inside ``autograd.grad``,
  ``backward(inputs=...)`` and ``create_graph=True``.
* ``use_reentrant=True``: an ``autograd.Function`` that runs ``f`` under ``no_grad``; its backward
  calls ``backward()`` again (re-entering the engine), which accumulates straight into the
  parameters' ``.grad``. If no input requires grad, the output does not either.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

from .._pieces import piece, pieces
from .._tensor import is_tensor
from ..autograd.engine import is_checkpoint_valid, run_backward
from ..autograd.function import Function
from ..autograd.grad_mode import STATE, enable_grad
from ..random import get_rng_state, set_rng_state
from ..autograd.graph import AccumulateGrad, Node, edge, next_sequence_nr

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not produce what the forward pass produced."""


def noop_context_fn() -> tuple:
    return contextlib.nullcontext(), contextlib.nullcontext()


_WARN_DEFAULT = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                 "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
                 "exception. use_reentrant=False is recommended, but if you need to preserve the "
                 "current default behavior, you can pass use_reentrant=True. Refer to docs for "
                 "more details on the differences between the two variants.")


# ============================================================================ use_reentrant=True
def _checked(cls: type) -> type:
    """A CheckpointFunction that refuses to run inside ``autograd.grad`` (as torch's does)."""
    def backward(ctx: Any, *grads: Any) -> tuple:
        if not is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible "
                               "with .grad() or passing an `inputs` parameter to .backward(). To "
                               "resolve this error, you can either set use_reentrant=False, or "
                               "call .backward() without passing the `inputs` argument.")
        return cls.backward(ctx, *grads)

    return type(cls)(cls.__name__, (cls,), {"backward": staticmethod(backward),
                                            "__doc__": cls.__doc__})


@piece("02.6", wrap=_checked)
class CheckpointFunction(Function):
    """Run ``run_function(*args)`` without recording a graph; in backward, run it again with
    recording and back-propagate through that fresh graph: memory traded for compute."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.save_for_backward(*[a for a in args if is_tensor(a)])
        ctx.args = [None if is_tensor(a) else a for a in args]  # the others, as they are
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        saved = iter(ctx.saved_tensors)
        inputs = [a for a in ctx.args]
        for i, a in enumerate(inputs):
            if a is None:                      # a tensor: a fresh leaf with the same values
                t = next(saved)
                inputs[i] = t.detach().requires_grad_(t.requires_grad)
        now = get_rng_state()
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)       # draw the same random numbers as forward did
        with enable_grad():
            outputs = ctx.run_function(*inputs)
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            pairs = [(o, g) for o, g in zip(outputs, grads) if is_tensor(o) and o.requires_grad]
            if not pairs:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                                   "not necessary")
            total = sum((o * g).sum() for o, g in pairs)  # its backward = backward(outputs, grads)
        set_rng_state(now)
        total.backward()
        return (None, None) + tuple(a.grad if is_tensor(a) else None for a in inputs)


# ============================================================================ use_reentrant=False
def _checkpoint_without_reentrant(function: Callable, preserve_rng_state: bool,
                                  context_fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run ``function`` recording a graph, then replace that graph by one recomputing node."""
    from ..random import get_rng_state

    if not STATE.enabled:  # nothing will be differentiated: a plain call
        return function(*args, **kwargs)
    rng_state = get_rng_state() if preserve_rng_state else None
    start = next_sequence_nr()
    forward_ctx, recompute_ctx = context_fn()
    with forward_ctx:
        outputs = function(*_aliases(args), **kwargs)
    flat, rebuild = _flatten(outputs)
    internal = [i for i, o in enumerate(flat)
                if _is_tensor(o) and o.grad_fn is not None and o.grad_fn._seq >= start]
    if not internal:
        return outputs
    edges = _region_edges([flat[i].grad_fn for i in internal], start)
    meta = [(tuple(flat[i].shape), flat[i].dtype) for i in internal]
    tensors = tuple(a for a in args if _is_tensor(a))

    def backward(grads: Any) -> tuple:
        grads = [grads] if len(internal) == 1 else list(grads)
        return _recompute_backward(function, args, kwargs, rng_state, recompute_ctx, edges, meta,
                                   grads)

    node = Node("CheckpointBackward", tuple(_outer(e) for e in edges), backward, tensors,
                num_outputs=len(internal))
    from .._tensor import wrap

    for nr, i in enumerate(internal):  # fresh tensors: the recorded graph behind flat[i] is dropped
        o = flat[i]
        t = wrap(o._data, o._device)
        t.grad_fn, t._requires_grad = node, True
        if nr:
            t._output_nr = nr
        flat[i] = t
    return rebuild(flat)


def _aliases(args: tuple) -> list:
    """Each tensor argument that requires grad replaced by an alias behind its own small node.

    That node is where the region ends: the walk over the recorded graph stops there, and so
    does the backward pass over the recomputation (which is then still differentiable, through
    the alias, w.r.t. the original input).
    """
    from .._tensor import wrap

    out = []
    for a in args:
        if _is_tensor(a) and a._requires_grad:
            alias = wrap(a._data, a._device)
            alias._vc = a._vc
            alias.grad_fn = _InputAlias(edge(a))
            alias._requires_grad = True
            a = alias
        out.append(a)
    return out


class _InputAlias(Node):
    """The node of an input's alias inside a checkpointed region: passes the gradient through."""

    __slots__ = ("source",)

    def __init__(self, source: tuple) -> None:
        super().__init__("AliasBackward0", (source,), lambda g: (g,))
        self.source = source  # the input's own edge


def _outer(e: tuple) -> tuple:
    """A region edge as seen from outside: an input alias stands for the input's own edge."""
    node = e[0]
    return node.source if isinstance(node, _InputAlias) else e


def _region_edges(roots: list, start: int) -> list:
    """The edges by which the graph recorded since node number ``start`` leaves it (in order)."""
    seen, edges, found = set(), [], set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for nxt, nr in node.next_functions:
            if nxt is None:
                continue
            if isinstance(nxt, (AccumulateGrad, _InputAlias)) or nxt._seq < start:
                if (nxt, nr) not in found:
                    found.add((nxt, nr))
                    edges.append((nxt, nr))
            else:
                stack.append(nxt)
    return edges


def _recompute_backward(function: Callable, args: tuple, kwargs: dict, rng_state: Any,
                        recompute_ctx: Any, edges: list, meta: list, grads: list) -> tuple:
    """The checkpoint node's backward: run ``function`` again, back-propagate over it only."""
    start = next_sequence_nr()
    with _rng_restored(rng_state), enable_grad(), recompute_ctx:
        outputs = function(*_aliases(args), **kwargs)
    flat, _ = _flatten(outputs)
    outs = [o for o in flat if _is_tensor(o) and o.grad_fn is not None and o.grad_fn._seq >= start]
    if [(tuple(o.shape), o.dtype) for o in outs] != meta:
        raise CheckpointError("torch.utils.checkpoint: Recomputed values have different metadata "
                              "than during the forward pass: the checkpointed function must do "
                              "the same thing both times.")
    pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
    if not pairs:
        return (None,) * len(edges)
    # the recomputation's own ends, matched with the forward's by what they stand for
    ends = _region_edges([o.grad_fn for o, _ in pairs], start)
    by_outer = {_outer(e): e for e in ends}
    inner = [by_outer.get(_outer(e)) for e in edges]
    targets = [e for e in inner if e is not None]
    create = STATE.enabled  # create_graph: the gradients' graph runs through the recomputation
    res = run_backward([o for o, _ in pairs], [g for _, g in pairs], create, create, edges=targets)
    got = iter(res or ())
    return tuple(None if e is None else next(got) for e in inner)


# ============================================================================ shared helpers
def _flatten(outputs: Any) -> tuple[list, Callable[[list], Any]]:
    """The outputs as a list, and how to rebuild the original structure from such a list."""
    if isinstance(outputs, (tuple, list)) and not hasattr(outputs, "_fields"):
        kind = type(outputs)
        return list(outputs), lambda items: kind(items)
    if isinstance(outputs, tuple):  # a named tuple
        kind = type(outputs)
        return list(outputs), lambda items: kind(*items)
    return [outputs], lambda items: items[0]


@contextlib.contextmanager
def _rng_restored(state: Any) -> Any:
    """Run a block with the random-number state of the forward pass, then put the current back."""
    from ..random import get_rng_state, set_rng_state

    if state is None:
        yield
        return
    now = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(now)


def _is_tensor(x: Any) -> bool:
    from .._tensor import Tensor

    return isinstance(x, Tensor)


# ============================================================================ the public API
def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in
    backward. ``use_reentrant=False`` is the variant to use (see the module's docstring)."""
    if use_reentrant is None:
        warnings.warn(_WARN_DEFAULT, UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return pieces.CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Split a sequence of functions (modules) into ``segments`` checkpointed chunks; the last
    chunk runs normally (its activations are needed right away by backward)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter "
                      "should be passed explicitly. In version 2.9 we will raise an exception if "
                      "use_reentrant is not passed. use_reentrant=False is recommended, but if "
                      "you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences "
                      "between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start:end + 1]

        def run(x: Any, chunk: list = chunk) -> Any:
            for f in chunk:
                x = f(x)
            return x

        input = checkpoint(run, input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    for f in functions[end + 1:]:
        input = f(input)
    return input
