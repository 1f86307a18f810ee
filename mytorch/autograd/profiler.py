"""Recording what a program spends its time on: ``record_function`` and the classic ``profile``.

torch's profiler is a callback in its C++ dispatcher: every operation, from ``aten::add`` to
``aten::convolution``, passes through one place where the start and end are written down.
mytorch has no dispatcher — its operations are plain Python functions, attached to ``Tensor``
and to the ``mytorch`` and ``nn.functional`` namespaces. So while a profiler records, the
:class:`_Recorder` puts a thin timing wrapper in front of every public operation wherever it is
held by name: a module attribute (mytorch's, or the user's ``from mytorch import relu``), a
``Tensor`` method, a class attribute or ``staticmethod`` (``nn.Conv2d``'s ``_fn``; a reference
kept in a closure, a dict or an instance attribute is not seen). It also puts a ``run_node``
wrapper around each node of the backward pass, hooks around ``Optimizer.step`` and ``zero_grad``
and around the DataLoader's ``__next__``; when it stops, the original functions are put back.
Outside a profiler nothing is wrapped, so there is no cost at all.

Each wrapper writes down (name, thread, start, end) and, when asked, the input shapes
(``record_shapes``), the memory the call allocated and freed (``profile_memory``), the Python
stack (``with_stack``) and the floating-point operations of matrix products and convolutions
(``with_flops``). ``mytorch.autograd.profiler_util`` turns those into the tree, the table and the
Chrome trace. The names follow torch's: ``aten::<op>`` for operations,
``autograd::engine::evaluate_function: MulBackward0`` for backward nodes,
``Optimizer.step#SGD.step``, ``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__``,
and your own ranges from ``record_function("name")``.
"""
from __future__ import annotations

import functools
import itertools
import sys
import threading
import time
import traceback
import types
import weakref
from typing import Any, Callable

import numpy as np

from .. import linalg, special
from .._tensor import Tensor
from ..nn import functional as F
from ..optim.optimizer import (Optimizer, register_optimizer_step_post_hook,
                               register_optimizer_step_pre_hook)
from ..utils.data.dataloader import _BaseDataLoaderIter
from . import engine
from .node import AccumulateGrad
from .profiler_util import EventList, FunctionEvent

__all__ = ["profile", "record_function", "EventList", "FunctionEvent"]

# The modules whose public functions are operations (what torch's dispatcher would see).
_OP_MODULES = ("mytorch._ops.", "mytorch._creation", "mytorch.nn._functional.",
               "mytorch.nn.functional", "mytorch.linalg", "mytorch.special", "mytorch.functional")
# Operator methods, by the name torch's profiler shows for them.
_DUNDER_OPS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
    "__rsub__": "rsub", "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul",
    "__imul__": "mul_", "__truediv__": "div", "__rtruediv__": "div", "__itruediv__": "div_",
    "__floordiv__": "floor_divide", "__rfloordiv__": "floor_divide", "__mod__": "remainder",
    "__pow__": "pow", "__rpow__": "pow", "__ipow__": "pow_", "__matmul__": "matmul",
    "__rmatmul__": "matmul", "__neg__": "neg", "__abs__": "abs", "__invert__": "bitwise_not",
    "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
    "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge", "__getitem__": "index", "__setitem__": "index_put_",
}
# Where torch's name of an operation differs from the Python function's name.
_ATEN_NAMES = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd",
               "log_softmax_": "log_softmax", "softmax_": "softmax"}
_HERE = __file__
_T0 = time.perf_counter_ns()


# ------------------------------------------------------------------------------ the recorder
class _Frame:
    """An event being recorded: opened when the call starts, turned into a FunctionEvent when it
    ends. ``mem`` is what the call itself allocated (minus freed), ``child_mem`` its callees'."""

    __slots__ = ("id", "name", "start", "thread", "shapes", "stack", "mem", "child_mem", "user",
                 "flops")

    def __init__(self, id: int, name: str, start: int, thread: int, user: bool) -> None:
        self.id, self.name, self.start, self.thread, self.user = id, name, start, thread, user
        self.shapes: list | None = None
        self.stack: list | None = None
        self.mem = self.child_mem = 0
        self.flops: int | None = None


class _Recorder:
    """Collects the events of one profiler run and owns the wrappers that produce them."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False) -> None:
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops = with_stack, with_flops
        self.recording = False
        self.events: list[FunctionEvent] = []
        self.memory_events: list[dict] = []
        self._ids = itertools.count()
        self._local = threading.local()
        self._t0 = _T0  # one time base for every run of the process: traces line up
        self._finalizers: list[weakref.finalize] = []
        self._allocated = 0
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- events
    def _open(self) -> list:
        stack = getattr(self._local, "open", None)
        if stack is None:
            stack = self._local.open = []
        return stack

    def inside(self, name: str) -> bool:
        """Whether the innermost open event of this thread is an operation called ``name``."""
        stack = getattr(self._local, "open", None)
        return bool(stack) and stack[-1].name == name and not stack[-1].user

    def enter(self, name: str, inputs: tuple = (), user: bool = False) -> _Frame:
        frame = _Frame(next(self._ids), name, 0, threading.get_native_id(), user)
        if self.record_shapes or self.with_flops:
            frame.shapes = [list(a.shape) if isinstance(a, Tensor) else [] for a in inputs]
        if self.with_stack:
            frame.stack = _python_stack()
        self._open().append(frame)
        frame.start = time.perf_counter_ns()
        return frame

    def exit(self, frame: _Frame, inputs: tuple = (), out: Any = None) -> None:
        end = time.perf_counter_ns()
        open_frames = self._open()
        if open_frames and open_frames[-1] is frame:
            open_frames.pop()
        elif frame in open_frames:  # closed out of order (an exception unwound past it)
            open_frames.remove(frame)
        if self.profile_memory and out is not None:
            frame.mem += self._allocations(inputs, out)
        total_mem = frame.mem + frame.child_mem
        if open_frames:
            open_frames[-1].child_mem += total_mem
        if self.with_flops and frame.shapes is not None:
            frame.flops = _flops(frame.name, frame.shapes, out)
        if not self.recording:
            return
        # the steps of a schedule are one row of the table, one range each in the trace
        name = "ProfilerStep*" if frame.name.startswith("ProfilerStep#") else frame.name
        self.events.append(FunctionEvent(
            frame.id, name, frame.thread, (frame.start - self._t0) / 1000,
            (end - self._t0) / 1000, input_shapes=frame.shapes if self.record_shapes else None,
            stack=frame.stack, cpu_memory_usage=total_mem, is_user_annotation=frame.user,
            flops=frame.flops, trace_name=frame.name))

    def result(self, use_device: str | None = None) -> EventList:
        """The events recorded so far, in the order their calls started."""
        events = sorted(self.events, key=lambda e: e.id)
        out = EventList(events, use_device=use_device, profile_memory=self.profile_memory,
                        with_flops=self.with_flops)
        out._extra_trace_events = list(self.memory_events)
        return out

    # ---------------------------------------------------------------- memory
    def _allocations(self, inputs: tuple, out: Any) -> int:
        """Bytes of the new memory blocks among the call's outputs; each block gets a finalizer
        that records it as freed when it dies."""
        if isinstance(out, Tensor):
            outs: Any = (out,)
        elif isinstance(out, (tuple, list)):
            outs = [o for o in out if isinstance(o, Tensor)]
        else:
            return 0
        known = {id(_root(a._data)) for a in inputs if isinstance(a, Tensor)}
        total = 0
        for o in outs:
            root = _root(o._data)
            if id(root) in known or not isinstance(root, np.ndarray):
                continue
            known.add(id(root))
            nbytes = int(root.nbytes)
            total += nbytes
            self._memory_event(nbytes, root)
            self._finalizers.append(weakref.finalize(root, self._freed, nbytes, id(root)))
        return total

    def _freed(self, nbytes: int, addr: int) -> None:
        if not self.recording:
            return
        open_frames = self._open()
        if open_frames:
            open_frames[-1].mem -= nbytes
        self._memory_event(-nbytes, addr)

    def _memory_event(self, nbytes: int, block: Any) -> None:
        with self._lock:
            self._allocated += nbytes
            total = self._allocated
        if self.recording:
            self.memory_events.append({
                "ph": "i", "s": "t", "name": "[memory]", "pid": 0,
                "tid": threading.get_native_id(),
                "ts": (time.perf_counter_ns() - self._t0) / 1000, "cat": "cpu_instant_event",
                "args": {"Total Reserved": 0, "Total Allocated": total, "Bytes": nbytes,
                         "Addr": block if isinstance(block, int) else id(block),
                         "Device Type": 0, "Device Id": -1}})

    def close_finalizers(self) -> None:
        for f in self._finalizers:
            f.detach()
        self._finalizers.clear()


def _root(arr: Any) -> Any:
    """The array that owns the memory ``arr`` looks at."""
    while isinstance(getattr(arr, "base", None), np.ndarray):
        arr = arr.base
    return arr


def _python_stack() -> list[str]:
    """The Python frames of the caller, innermost first, as ``file(line): function``."""
    frames = traceback.extract_stack(sys._getframe(2))
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)
            if f.filename != _HERE]


def _flops(name: str, shapes: list, out: Any) -> int | None:
    """Multiply-adds x 2 of the matrix products and convolutions (from the shapes)."""
    if not isinstance(out, Tensor):
        return None
    n_out = int(np.prod(out.shape)) if out.dim() else 1
    if name in ("aten::mm", "aten::matmul", "aten::bmm") and shapes and shapes[0]:
        return 2 * n_out * shapes[0][-1]
    if name == "aten::addmm" and len(shapes) > 1 and shapes[1]:
        return 2 * n_out * shapes[1][-1]
    if name == "aten::linear" and len(shapes) > 1 and len(shapes[1]) == 2:
        return 2 * n_out * shapes[1][1]
    if name in ("aten::conv1d", "aten::conv2d", "aten::conv3d") and len(shapes) > 1:
        w = shapes[1]
        return 2 * n_out * int(np.prod(w[1:]))
    return None


_ACTIVE: list[_Recorder] = []   # the recorder that the wrappers write to (at most one)


def _current() -> _Recorder | None:
    return _ACTIVE[0] if _ACTIVE else None


# ------------------------------------------------------------------------------ wrappers
def _timed(fn: Callable, name: str) -> Callable:
    """``fn`` recording an event ``name`` whenever a recorder is on."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        rec = _ACTIVE[0] if _ACTIVE else None
        if rec is None or rec.inside(name):  # (F.relu calling torch.relu: one aten::relu)
            return fn(*args, **kwargs)
        inputs = args + tuple(kwargs.values()) if kwargs else args
        frame = rec.enter(name, inputs)
        out = None
        try:
            out = fn(*args, **kwargs)
            return out
        finally:
            rec.exit(frame, inputs, out)

    op.__mytorch_profiled__ = fn  # type: ignore[attr-defined]
    return op


def _profiled_run_node(run_node: Callable) -> Callable:
    """A backward pass's ``run_node`` recording each node as torch names it."""
    rec = _current()
    if rec is None:
        return run_node

    def run(node: Any, outs: list) -> Any:
        name = "torch::autograd::AccumulateGrad" if node.__class__ is AccumulateGrad \
            else node.name()
        outer = rec.enter(f"autograd::engine::evaluate_function: {name}")
        if node.__class__ is AccumulateGrad and engine._TASKS and engine._TASKS[-1]:
            # autograd.grad keeps a leaf's gradient instead of accumulating it: torch times the
            # node's range, but no AccumulateGrad runs inside it
            try:
                return run_node(node, outs)
            finally:
                rec.exit(outer)
        inner = rec.enter(name, tuple(outs))
        result = None
        try:
            result = run_node(node, outs)
            return result
        finally:
            rec.exit(inner, tuple(outs), result)
            rec.exit(outer)

    return run


def _operations() -> dict[int, tuple[Callable, str]]:
    """Every public operation: ``id(function) -> (function, torch's name)``."""
    found: dict[int, tuple[Callable, str]] = {}

    def consider(fn: Any, attr: str) -> None:
        if not isinstance(fn, types.FunctionType) or id(fn) in found:
            return
        if not (fn.__module__ or "").startswith(_OP_MODULES) or fn.__module__ == "mytorch._ops._operands":
            return
        if attr.startswith("_") and attr not in _DUNDER_OPS:
            return
        base = _DUNDER_OPS.get(attr, attr)
        found[id(fn)] = (fn, "aten::" + _ATEN_NAMES.get(base, base))
        inner = getattr(fn, "__wrapped_for_bfloat16__", fn)  # mytorch/_bfloat16.py's wrapper:
        if inner is not fn:                                   # its function is the same op
            found.setdefault(id(inner), (inner, "aten::" + _ATEN_NAMES.get(base, base)))

    for attr, value in vars(Tensor).items():
        consider(value, attr)
    # The package's namespace is complete by the time a profiler starts (this module is loaded
    # by mytorch/__init__.py after every layer): read it, do not import it.
    for space in (sys.modules["mytorch"], F, linalg, special):
        for attr, value in vars(space).items():
            consider(value, attr)
    return found


class _Instrumentation:
    """The wrappers put in place while a recorder is active, and how to take them out."""

    def __init__(self, rec: _Recorder) -> None:
        self.rec = rec
        self.undo: list[tuple[Any, str, Any]] = []
        self.handles: list[Any] = []

    def install(self) -> None:
        ops = _operations()
        wrappers = {k: _timed(fn, name) for k, (fn, name) in ops.items()}
        # Every place that holds an operation by name: module attributes anywhere (mytorch's own,
        # and ``from mytorch import relu`` in the user's modules), and class attributes, plain or
        # ``staticmethod`` (``nn.Conv2d._fn = staticmethod(conv2d)``, a user's module class).
        # A reference kept elsewhere (a closure, a dict, an instance attribute) is not seen.
        for module in list(sys.modules.values()):
            if type(module) is types.ModuleType:
                self._replace(module, vars(module), ops, wrappers)
        seen, todo = {id(object)}, [object]
        while todo:  # every class of the process (a few thousand), from object down
            for cls in type.__subclasses__(todo.pop()):
                if id(cls) not in seen:
                    seen.add(id(cls))
                    todo.append(cls)
                    self._replace(cls, cls.__dict__, ops, wrappers)
        engine.RUN_NODE_WRAPPERS.append(_profiled_run_node)
        self._hook_optimizers()
        self._hook_data()

    def _replace(self, owner: Any, space: Any, ops: dict, wrappers: dict) -> None:
        """Put the timing wrapper in place of each operation among ``owner``'s attributes."""
        values = space.values()
        if wrappers.keys().isdisjoint(map(id, values)) and staticmethod not in set(map(type, values)):
            return  # (most modules and classes: decided without a Python-level loop)
        for attr, value in list(space.items()):
            held = value.__func__ if type(value) is staticmethod else value
            w = wrappers.get(id(held))
            if w is None or held is not ops[id(held)][0]:
                continue
            try:
                setattr(owner, attr, staticmethod(w) if held is not value else w)
            except (AttributeError, TypeError):  # a built-in type: it holds no operation
                continue
            self.undo.append((owner, attr, value))

    def _hook_optimizers(self) -> None:
        rec, open_steps = self.rec, {}

        def pre(opt: Any, args: Any, kwargs: Any) -> None:
            name = type(opt).__name__
            open_steps.setdefault(id(opt), []).append(rec.enter(f"Optimizer.step#{name}.step"))

        def post(opt: Any, args: Any, kwargs: Any) -> None:
            frames = open_steps.get(id(opt))
            if frames:
                rec.exit(frames.pop())

        self.handles += [register_optimizer_step_pre_hook(pre),
                         register_optimizer_step_post_hook(post)]
        classes, todo = [], [Optimizer]
        while todo:
            cls = todo.pop()
            classes.append(cls)
            todo += cls.__subclasses__()
        for cls in classes:
            fn = cls.__dict__.get("zero_grad")
            if isinstance(fn, types.FunctionType):
                self.undo.append((cls, "zero_grad", fn))
                setattr(cls, "zero_grad", _named_method(fn, "Optimizer.zero_grad#{}.zero_grad"))

    def _hook_data(self) -> None:
        fn = _BaseDataLoaderIter.__dict__["__next__"]
        self.undo.append((_BaseDataLoaderIter, "__next__", fn))
        _BaseDataLoaderIter.__next__ = _named_method(  # type: ignore[method-assign]
            fn, "enumerate(DataLoader)#{}.__next__")

    def remove(self) -> None:
        for owner, attr, value in reversed(self.undo):
            setattr(owner, attr, value)
        self.undo.clear()
        if _profiled_run_node in engine.RUN_NODE_WRAPPERS:
            engine.RUN_NODE_WRAPPERS.remove(_profiled_run_node)
        for h in self.handles:
            h.remove()
        self.handles.clear()


def _named_method(fn: Callable, pattern: str) -> Callable:
    """A method recording an event named after the object's class (``pattern.format(cls)``)."""
    @functools.wraps(fn)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec = _current()
        if rec is None:
            return fn(self, *args, **kwargs)
        frame = rec.enter(pattern.format(type(self).__name__))
        try:
            return fn(self, *args, **kwargs)
        finally:
            rec.exit(frame)

    return method


def _start(rec: _Recorder) -> _Instrumentation:
    if _ACTIVE:
        raise RuntimeError("Profiler is already enabled on this thread: stop the running "
                           "profiler before starting another one")
    inst = _Instrumentation(rec)
    inst.install()
    _ACTIVE.append(rec)
    return inst


def _stop(inst: _Instrumentation) -> None:
    inst.remove()
    if inst.rec in _ACTIVE:
        _ACTIVE.remove(inst.rec)
    inst.rec.recording = False
    inst.rec.close_finalizers()


# ------------------------------------------------------------------------------ public API
class record_function:
    """Mark a range of your code: it appears in the profiler's table and trace under ``name``.

    A context manager (``with record_function("forward"): ...``) or a decorator. Outside a
    profiler it does nothing.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._frames: list[tuple[_Recorder, _Frame]] = []

    def __enter__(self) -> "record_function":
        rec = _current()
        if rec is not None:
            self._frames.append((rec, rec.enter(self.name, user=True)))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._frames:
            rec, frame = self._frames.pop()
            rec.exit(frame)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper


class profile:
    """The classic profiler, ``torch.autograd.profiler.profile``: a context manager recording
    every operation inside its block.

    ``prof.key_averages().table(sort_by="self_cpu_time_total")`` prints where the time went,
    ``prof.export_chrome_trace(path)`` writes a timeline for chrome://tracing or Perfetto.
    ``use_cuda`` / ``use_device`` are accepted; mytorch times operations on the CPU side only.
    """

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Any = None,
                 **_ignored: Any) -> None:
        self.enabled = enabled
        self.use_device = "cuda" if use_cuda else use_device
        self.record_shapes, self.with_flops = record_shapes, with_flops
        self.profile_memory, self.with_stack = profile_memory, with_stack
        self.with_modules, self.use_cpu, self.acc_events = with_modules, use_cpu, acc_events
        self.entered = False
        self.function_events: EventList | None = None
        self._recorder: _Recorder | None = None
        self._inst: _Instrumentation | None = None

    # the phases, as torch.profiler.profile drives them
    def _prepare_trace(self) -> None:
        """Put the wrappers in place without keeping events (the schedule's warm-up)."""
        if self._inst is None:
            self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                                       self.with_flops)
            self._inst = _start(self._recorder)

    def _start_trace(self) -> None:
        self._prepare_trace()
        assert self._recorder is not None
        self._recorder.recording = True
        self.entered = True

    def _stop_trace(self) -> None:
        if self._inst is None:
            return
        rec = self._recorder
        assert rec is not None
        self.function_events = rec.result(self.use_device)
        _stop(self._inst)
        self._inst = None
        self.function_events._build_tree()

    def __enter__(self) -> "profile":
        if self.enabled:
            if self.entered:
                raise RuntimeError("Profiler context manager is not reentrant")
            self._start_trace()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._stop_trace()

    def __repr__(self) -> str:
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self) -> str:
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _check_finish(self) -> None:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False) -> str:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path: str) -> None:
        self._check_finish()
        assert self.function_events is not None
        self.function_events.export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        self._check_finish()
        assert self.function_events is not None
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name)

    def total_average(self) -> Any:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.total_average()

    def events(self) -> EventList:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events

    @property
    def self_cpu_time_total(self) -> float:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.self_cpu_time_total
