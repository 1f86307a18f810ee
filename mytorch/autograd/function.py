"""Custom differentiable operations: subclass ``autograd.Function``.

::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)     # checked for in-place changes, freed after backward
            return y

        @staticmethod
        def backward(ctx, grad):         # one gradient per output in, one per input out
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

``apply`` runs ``forward`` with recording switched off (its inside is one opaque step), then
creates a single graph node for all outputs whose backward calls your ``backward``. The ``ctx``
*is* that node, as in torch: ``y.grad_fn.saved_tensors`` works.
"""
from __future__ import annotations

import functools
import weakref
from typing import Any, Callable

from .._creation import zeros
from .._tensor import Tensor
from .grad_mode import STATE, no_grad
from .node import INFERENCE_SAVED, Node, SavedOutput, _save, edge
from .unbroadcast import sum_to
from .views import check_inplace

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]


class FunctionCtx:
    """What ``forward`` can tell ``backward``: saved tensors, dirty and non-differentiable outputs.

    Any other attribute (``ctx.k = 3``) may be set freely to pass non-tensor values along.
    """

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for backward; reading them later checks they were not changed in place."""
        self._to_save = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        """Declare inputs that ``forward`` modified in place (and returns)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Declare outputs that have no gradient (indices, masks): they won't require grad."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` may receive None for outputs that got no gradient."""
        self._materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """The graph node of one ``Function.apply`` call; also the ``ctx`` its methods receive."""

    # its backward is the user's code, which may keep the gradients it sees or return memory
    # of its own: the engine runs it in full and copies what it would otherwise adopt as .grad
    _special = True

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward`` (an error once freed or modified)."""
        self._check_saved()
        order = self.__dict__.get("_saved_order", ())
        if self._packed is not None:  # saved-tensor hooks: what the unpack hook gives back
            unpacked = iter([e.unpack(e.packed) for e in self._packed])
            return tuple(None if t is None else next(unpacked) for t in order)
        return tuple(t() if t.__class__ is SavedOutput else t for t in order)

    def _release(self) -> None:
        had_saved = bool(self._saved)
        super()._release()
        if had_saved:
            self.__dict__.pop("_saved_order", None)


def once_differentiable(fn: Callable) -> Callable:
    """Mark a ``backward`` as written with non-differentiable code: it runs without recording."""
    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            return fn(ctx, *args)

    return wrapper


class _FunctionMeta(type):
    """Gives every Function subclass its node class, named like torch's (``ExpBackward``)."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(f"{name}Backward", (BackwardCFunction,), {"_forward_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Base class of custom operations: define static ``forward`` and ``backward``; call ``apply``.

    ``forward(ctx, *args)`` computes the outputs (or, torch 2 style, ``forward(*args)`` plus
    ``setup_context(ctx, inputs, output)``); ``backward(ctx, *grad_outputs)`` returns one gradient
    (or None) per argument of forward.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. "
                           "Please use new-style autograd function with static forward method. "
                           "(Example: https://pytorch.org/docs/stable/autograd.html"
                           "#torch.autograd.Function)")

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` untracked, then record one node whose backward is ``cls.backward``."""
        ctx = cls._backward_cls.__new__(cls._backward_cls)
        Node.__init__(ctx, cls._backward_cls.__name__, (), None)
        grad_on = STATE.enabled
        ctx.needs_input_grad = tuple(grad_on and isinstance(a, Tensor) and a._requires_grad
                                     for a in args)
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if not any(ctx.needs_input_grad):
            return output
        return _connect(ctx, cls, args, output)


def _connect(ctx: BackwardCFunction, cls: type, args: tuple, output: Any) -> Any:
    """Make ``ctx`` the ``grad_fn`` of the outputs and wire its edges to the tensor inputs."""
    is_tuple = isinstance(output, tuple)
    outputs = list(output) if is_tuple else [output]
    dirty = {id(t) for t in getattr(ctx, "_dirty", ())}
    non_diff = {id(t) for t in getattr(ctx, "_non_differentiable", ())}
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    ctx.next_functions = tuple(edge(args[i]) if args[i]._requires_grad else (None, 0)
                               for i in tensor_pos)
    ctx.num_outputs = len(outputs)
    inputs_by_id = {id(a) for a in args if isinstance(a, Tensor)}
    meta = []
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            meta.append(None)
            continue
        if id(o) in dirty:
            check_inplace(o)
            o._vc.value += 1  # like torch: marking dirty counts as a modification
        elif id(o) in inputs_by_id:
            o = outputs[i] = o.detach()  # an input returned as is: a new alias gets the history
        meta.append((tuple(o._data.shape), o.dtype, o._device))
        if id(o) in non_diff:
            continue
        o.grad_fn = ctx
        o._requires_grad = True
        if o._base is not None and o._view_meta in ("no_grad", "inference"):
            o._view_meta = "custom_function"  # made by forward: torch refuses in-place changes
        if len(outputs) > 1:
            o._output_nr = i
    # A saved output is kept as a SavedOutput: the output holds ctx (its grad_fn), so holding the
    # output here would make a reference cycle.
    out_nr = {id(o): i for i, o in enumerate(outputs)
              if isinstance(o, Tensor) and o.grad_fn is ctx}
    order = tuple(SavedOutput(t, out_nr[id(t)]) if t is not None and id(t) in out_nr else t
                  for t in ctx.__dict__.pop("_to_save", ()))
    saved = [t for t in order if t is not None]
    for t in saved:
        if t._inference:
            raise RuntimeError(INFERENCE_SAVED)
    ctx._saved = _save(ctx, saved)
    ctx._saved_order = order
    in_meta = [(tuple(args[i]._data.shape), args[i].dtype) for i in tensor_pos]
    ctx._backward = _make_backward(ctx, cls, len(args), tensor_pos, meta, in_meta)
    return tuple(outputs) if is_tuple else outputs[0]


def _make_backward(ctx: BackwardCFunction, cls: type, n_args: int, tensor_pos: list,
                   out_meta: list, in_meta: list) -> Callable:
    """The node's backward: call ``cls.backward(ctx, ...)`` and check what it returns.

    It reaches ``ctx`` through a weak reference: ctx holds this closure (as its ``_backward``), so
    a strong one would make every custom node a reference cycle. ctx is alive whenever it runs.
    """
    name = ctx._name
    ctx_ref = weakref.ref(ctx)

    def backward(grad: Any) -> tuple:
        ctx = ctx_ref()
        grads = [grad] if ctx.num_outputs == 1 else list(grad)
        if getattr(ctx, "_materialize_grads", True):
            grads = [zeros(m[0], dtype=m[1], device=m[2]) if g is None and m is not None else g
                     for g, m in zip(grads, out_meta)]
        res = cls.backward(ctx, *grads)
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) > n_args and all(r is None for r in res[n_args:]):
            res = res[:n_args]
        if len(res) != n_args:
            raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                               f"(expected {n_args}, got {len(res)})")
        out = []
        for k, i in enumerate(tensor_pos):
            out.append(_validate(name, res[i], k, *in_meta[k]))
        return tuple(out)

    return backward


def _validate(name: str, g: Any, index: int, shape: tuple, dtype: Any) -> Any:
    """Like torch: un-broadcast a gradient that is expandable to the input, refuse any other."""
    if g is None:
        return None
    gshape = tuple(g._data.shape)
    if gshape != shape:
        if not _expandable(shape, gshape):
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {index} - "
                               f"got {list(gshape)} but expected shape compatible with "
                               f"{list(shape)}")
        g = sum_to(g, shape)
    return g if g.dtype is dtype else g.to(dtype)


def _expandable(shape: tuple, target: tuple) -> bool:
    """Can a tensor of ``shape`` be broadcast to ``target``?"""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))
