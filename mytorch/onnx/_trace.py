"""Tracing: run the model once with every public operation wrapped, and convert as it runs.

While a :class:`Tracer` is active, each public function of mytorch (``torch.*``,
``torch.nn.functional.*``, ``Tensor`` methods and operators, found as the profiler finds them)
is replaced, wherever a mytorch module or class holds it, by a wrapper that

1. runs the real function (so the trace computes the real values, and the shapes are known);
2. if any argument is a *traced* tensor (one computed from the model's inputs), asks the
   converter registered for the operation's name (``_symbolic.py``) to add ONNX nodes, and binds
   the result tensor(s) to the new values. An operation with no converter raises
   :class:`UnsupportedOperatorError` naming it.

Only the outermost operation is converted: while one runs (``F.relu`` calling ``torch.relu``),
the wrappers pass through. Modules whose ``forward`` is not made of public operations (the
recurrent layers run fused kernels) have *module* converters, found by class: ``Module.__call__``
is wrapped too. Operations on values that do not depend on the inputs (parameters, buffers,
``x.size(0)``) are not converted: their results become constants of the graph.

An operation is known by its function object, so a function the bfloat16 support wrapped
(``mytorch/_bfloat16.py``) is known under both: the wrapper and, behind its
``__wrapped_for_bfloat16__`` marker, the original, which a reference taken before the first
bfloat16 use still holds (a model's ``activation=F.gelu``).
"""
from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from typing import Any

import mytorch
from mytorch._tensor import Tensor
from mytorch.nn import Module
from mytorch.nn import functional as F

from . import _symbolic
from ._graph import Graph
from .errors import UnsupportedOperatorError

__all__ = ["Tracer", "flatten"]

_OP_MODULES = ("mytorch._ops.", "mytorch._creation", "mytorch._tensor", "mytorch.nn._functional.",
               "mytorch.nn.functional", "mytorch.linalg", "mytorch.special", "mytorch.functional")
_DUNDERS = {
    "__add__": "add", "__radd__": "radd", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__rtruediv__": "rdiv", "__itruediv__": "div_", "__pow__": "pow",
    "__rpow__": "rpow", "__matmul__": "matmul", "__rmatmul__": "rmatmul", "__neg__": "neg",
    "__abs__": "abs", "__getitem__": "getitem", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge", "__eq__": "eq", "__ne__": "ne", "__and__": "logical_and",
    "__or__": "logical_or", "__invert__": "logical_not",
}


def flatten(x: Any) -> list:
    """The tensors in nested tuples, lists and dicts, in order."""
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in flatten(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in flatten(item)]
    return []


def _operations() -> dict[int, tuple[Callable, str]]:
    """Every public operation: ``id(function) -> (function, name)``."""
    found: dict[int, tuple[Callable, str]] = {}

    def consider(fn: Any, attr: str) -> None:
        if not isinstance(fn, types.FunctionType) or id(fn) in found:
            return
        if not (fn.__module__ or "").startswith(_OP_MODULES) or fn.__module__ == "mytorch._ops._operands":
            return
        if attr.startswith("_") and attr not in _DUNDERS:
            return
        found[id(fn)] = (fn, _DUNDERS.get(attr, attr))
        inner = getattr(fn, "__wrapped_for_bfloat16__", fn)  # a bfloat16 wrapper's function:
        if inner is not fn:                                   # the same operation, by name
            found.setdefault(id(inner), (inner, _DUNDERS.get(attr, attr)))

    for attr, value in vars(Tensor).items():
        consider(value, attr)
    for space in (mytorch, F, mytorch.linalg, mytorch.special):
        for attr, value in vars(space).items():
            consider(value, attr)
    return found


class Tracer:
    """While active (a ``with`` block), converts the operations on traced tensors into ``graph``."""

    def __init__(self, graph: Graph, model: Any = None) -> None:
        self.g = graph
        self.model = model
        self.depth = 0  # > 0 while an operation or a converted module runs
        self.undo: list[tuple[Any, str, Any]] = []

    # ------------------------------------------------------------------ recording
    def _traced_inputs(self, args: tuple, kwargs: dict) -> bool:
        return any(self.g.is_traced(t) for t in flatten(list(args) + list(kwargs.values())))

    def record(self, name: str, args: tuple, kwargs: dict, out: Any) -> None:
        if not flatten(out) or not self._traced_inputs(args, kwargs):
            return  # sizes, flags... or a constant of the graph
        converter = _symbolic.OPS.get(name)
        if converter is None and name.endswith("_") and not name.endswith("__"):
            converter = _symbolic.OPS.get(name[:-1])  # in place: the same value, rebound below
        if converter is None:
            if any(out is a for a in args) and name not in _symbolic.OPS:
                return  # returns its input unchanged (requires_grad_, retain_grad...)
            raise UnsupportedOperatorError(name, self.g.opset)
        self.depth += 1  # the converter reads values with operations of its own
        try:
            converter(self.g, out, *args, **kwargs)
        finally:
            self.depth -= 1

    def _wrap(self, fn: Callable, name: str) -> Callable:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if self.depth:
                return fn(*args, **kwargs)
            self.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                self.depth -= 1
            self.record(name, args, kwargs, out)
            return out
        return op

    def _call_module(self, call: Callable) -> Callable:
        def __call__(module: Module, *args: Any, **kwargs: Any) -> Any:
            convert = None
            if not self.depth:
                convert = next((_symbolic.MODULES[c] for c in type(module).__mro__
                                if c in _symbolic.MODULES), None)
            if convert is None or not self._traced_inputs(args, kwargs):
                return call(module, *args, **kwargs)
            self.depth += 1
            try:
                out = call(module, *args, **kwargs)
            finally:
                self.depth -= 1
            self.depth += 1
            try:
                convert(self.g, out, module, *args, **kwargs)
            finally:
                self.depth -= 1
            return out
        return __call__

    # ------------------------------------------------------------------ installing
    def __enter__(self) -> Tracer:
        ops = _operations()
        wrappers = {k: self._wrap(fn, name) for k, (fn, name) in ops.items()}
        owners = [m for n, m in list(sys.modules.items())
                  if (n == "mytorch" or n.startswith("mytorch.")) and m is not None
                  and not n.startswith("mytorch.onnx")]  # mytorch's modules: internal references too
        classes = {Tensor}
        for owner in owners:
            for value in list(vars(owner).values()):
                if isinstance(value, type) and (value.__module__ or "").startswith("mytorch."):
                    classes.add(value)
        # functions a module holds as an attribute (TransformerEncoderLayer's activation=F.gelu)
        instances = list(self.model.modules()) if isinstance(self.model, Module) else []
        for owner in owners + list(classes) + instances:
            for attr, value in list(vars(owner).items()):
                fn = value.__func__ if isinstance(value, staticmethod) else value
                w = wrappers.get(id(fn))
                if w is None or fn is not ops[id(fn)][0]:
                    continue
                self.undo.append((owner, attr, value))
                setattr(owner, attr, staticmethod(w) if isinstance(value, staticmethod) else w)
        for attr, value in list(vars(Tensor).items()):  # x.T, x.mT, x.data: properties
            if isinstance(value, property) and attr in ("T", "mT", "H", "mH", "data"):
                self.undo.append((Tensor, attr, value))
                setattr(Tensor, attr, property(self._wrap(value.fget, attr), value.fset, value.fdel,
                                               value.__doc__))
        self.undo.append((Module, "__call__", Module.__dict__["__call__"]))
        Module.__call__ = self._call_module(Module.__dict__["__call__"])  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, attr, value in reversed(self.undo):
            setattr(owner, attr, value)
        self.undo.clear()
