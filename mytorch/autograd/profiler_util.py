"""What a profiler run leaves behind: events, their tree, the averaged table, the Chrome trace.

A profiler (``mytorch.profiler.profile``, or the older ``mytorch.autograd.profiler.profile``)
records one :class:`FunctionEvent` per operation it saw: a name (``aten::addmm``), the thread,
a start and an end time in microseconds, and optionally the input shapes, the Python stack and the
memory the operation allocated. Everything else is computed from those intervals afterwards:

* :func:`nest_events` (exercise 11.2) links each event to the one it ran inside. Calls on one
  thread nest like parentheses — ``aten::linear`` contains ``aten::t`` and ``aten::addmm`` — so
  an event's *self* time is its own time minus its children's;
* :func:`average_events` (exercise 11.3) groups the events by key (the name, optionally with
  the input shapes or the stack) into the rows of ``key_averages()``: calls counted, times and
  memory summed;
* :func:`chrome_trace_events` (exercise 11.4) writes the events in the Trace Event Format that
  chrome://tracing and https://ui.perfetto.dev read: one complete event (``"ph": "X"``) each.

``EventList.table()`` prints the averaged rows with torch's columns (Self CPU %, Self CPU, CPU
total %, CPU total, CPU time avg, CPU Mem, Self CPU Mem, # of Calls, Input Shapes, Source
Location). Nothing here imports the rest of mytorch: it is bookkeeping over plain numbers.
"""
from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any, Callable

from .._pieces import piece, pieces

__all__ = ["DeviceType", "Interval", "FunctionEvent", "FunctionEventAvg", "EventList",
           "nest_events", "average_events", "chrome_trace_events"]


class DeviceType(Enum):
    """Where an event ran (torch's ``DeviceType``: only the two mytorch knows)."""

    CPU = 0
    CUDA = 1


class Interval:
    """A time range in microseconds."""

    def __init__(self, start: float, end: float) -> None:
        self.start, self.end = start, end

    def elapsed_us(self) -> float:
        return self.end - self.start

    def __repr__(self) -> str:
        return f"Interval(start={self.start}, end={self.end})"


# ------------------------------------------------------------------------------ formatting
def _format_time(time_us: float) -> str:
    """``1.234s``, ``12.345ms`` or ``123.456us``, as torch prints times."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN" if time_us == 0 else "inf"  # (torch asserts time_us == 0 here)
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    """``400 B``, ``1.50 KB``, ``2.00 MB``: binary units, as torch prints memory."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _TimesAsText:
    """``cpu_time_str``, ``self_cpu_time_total_str``...: the times formatted as in the table."""

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    @property
    def device_time_str(self) -> str:
        return _format_time(self.device_time)

    @property
    def device_time_total_str(self) -> str:
        return _format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self) -> str:
        return _format_time(self.self_device_time_total)


# ------------------------------------------------------------------------------ one event
class FunctionEvent(_TimesAsText):
    """One recorded call: name, thread and time range; its parent and children once nested."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float,
                 overload_name: str | None = None, fwd_thread: int | None = None,
                 input_shapes: list | None = None, stack: list | None = None, scope: int = 0,
                 use_device: str | None = None, cpu_memory_usage: int = 0,
                 device_memory_usage: int = 0, is_async: bool = False, is_remote: bool = False,
                 sequence_nr: int = -1, node_id: int = -1,
                 device_type: DeviceType = DeviceType.CPU, device_index: int = 0,
                 device_resource_id: int | None = None, is_legacy: bool = False,
                 flops: int | None = None, trace_name: str | None = None,
                 concrete_inputs: list | None = None, kwinputs: dict | None = None,
                 is_user_annotation: bool = False, input_dtypes: list | None = None,
                 **_ignored: Any) -> None:
        self.id, self.node_id, self.name = id, node_id, name
        self.overload_name = overload_name or ""
        self.trace_name = trace_name or name
        self.time_range = Interval(start_us, end_us)
        self.thread, self.fwd_thread = thread, fwd_thread
        self.kernels: list = []
        self.count = 1
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.concrete_inputs = concrete_inputs if concrete_inputs is not None else []
        self.kwinputs = kwinputs if kwinputs is not None else {}
        self.stack = stack if stack is not None else []
        self.scope, self.use_device = scope, use_device
        self.cpu_memory_usage, self.device_memory_usage = cpu_memory_usage, device_memory_usage
        self.is_async, self.is_remote, self.sequence_nr = is_async, is_remote, sequence_nr
        self.device_type, self.device_index = device_type, device_index
        self.device_resource_id = thread if device_resource_id is None else device_resource_id
        self.is_legacy, self.flops = is_legacy, flops
        self.is_user_annotation = is_user_annotation
        self.self_cpu_percent = -1
        self.total_cpu_percent = -1
        self.total_device_percent = -1

    def append_kernel(self, name: str, device: int, duration: float) -> None:
        self.kernels.append((name, device, duration))

    def append_cpu_child(self, child: "FunctionEvent") -> None:
        """Record that ``child`` ran inside this event (the tree is built by nest_events)."""
        assert child is not self, "an event cannot be its own child"
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: "FunctionEvent") -> None:
        """Record the event this one ran inside (the innermost one)."""
        self.cpu_parent = parent

    # The times and memory follow from the interval and the children.
    @property
    def cpu_time_total(self) -> float:
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    @property
    def self_cpu_memory_usage(self) -> int:
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def device_time_total(self) -> float:
        return 0.0

    @property
    def self_device_time_total(self) -> float:
        return 0.0

    @property
    def device_time(self) -> float:
        return 0.0

    @property
    def self_device_memory_usage(self) -> int:
        return self.device_memory_usage - sum(c.device_memory_usage for c in self.cpu_children)

    # torch's older names
    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = self_device_memory_usage

    @property
    def key(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} "
                f"cpu_memory_usage={self.cpu_memory_usage} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_TimesAsText):
    """One row of ``key_averages()``: the events of one key added up."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = 0
        self.is_async = self.is_remote = False
        self.use_device: str | None = None
        self.cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes: list | None = None
        self.overload_name: str | None = None
        self.stack: list | None = None
        self.scope: int | None = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children: list | None = None
        self.cpu_parent: FunctionEvent | None = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.flops = 0
        self.is_user_annotation = False

    def add(self, other: "FunctionEvent | FunctionEventAvg") -> "FunctionEventAvg":
        """Fold one event (or another row) into this row."""
        if self.key is None:  # the first event gives the row its descriptive fields
            for name in ("key", "node_id", "is_async", "is_remote", "use_device", "cpu_parent",
                         "input_shapes", "overload_name", "stack", "scope", "device_type",
                         "is_legacy", "is_user_annotation"):
                setattr(self, name, getattr(other, name))
            self.cpu_children = other.cpu_children
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {self.key} vs {other.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        self.flops = (self.flops or 0) + (other.flops or 0)
        return self

    def __iadd__(self, other: "FunctionEvent | FunctionEventAvg") -> "FunctionEventAvg":
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self) -> float:
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


# ------------------------------------------------------------------------------ the pieces
@piece("11.2")
def nest_events(events: list) -> None:
    """Link every event to the innermost event it ran inside, on the same thread.

    Calls nest like parentheses: on one thread, an event that starts inside another also ends
    inside it. Visit the events in order of start time (the longer first when two start
    together), keep the chain of events still open on each thread, and close those that ended
    before the next one starts: the last event left open is its parent
    (``child.set_cpu_parent(parent)`` and ``parent.append_cpu_child(child)``).
    """
    open_events = {}                                   # thread -> the chain of open events
    ordered = sorted(events, key=lambda e: (e.time_range.start, -e.time_range.end))
    for event in ordered:
        chain = open_events.setdefault(event.thread, [])
        while chain and chain[-1].time_range.end <= event.time_range.start:
            chain.pop()                                # that one ended before this one began
        if chain:
            parent = chain[-1]
            event.set_cpu_parent(parent)
            parent.append_cpu_child(event)
        chain.append(event)


@piece("11.3")
def average_events(events: list, group_key: "Callable") -> list:
    """The rows of ``key_averages()``: one ``FunctionEventAvg`` per value of ``group_key(event)``.

    A row takes its descriptive fields (``key``, ``input_shapes``, ``stack``, ...) from the first
    event of its group, counts the calls (``count``) and adds up the times and memory: total and
    self CPU time, total and self CPU memory. Rows come in the order their first event comes.
    """
    rows = {}
    for event in events:
        k = group_key(event)
        row = rows.get(k)
        if row is None:
            row = rows[k] = FunctionEventAvg()
            row.key, row.input_shapes, row.stack = event.key, event.input_shapes, event.stack
            row.is_user_annotation = event.is_user_annotation
            row.cpu_parent, row.cpu_children = event.cpu_parent, event.cpu_children
        row.count += event.count
        row.cpu_time_total += event.cpu_time_total
        row.self_cpu_time_total += event.self_cpu_time_total
        row.cpu_memory_usage += event.cpu_memory_usage
        row.self_cpu_memory_usage += event.self_cpu_memory_usage
        row.flops += event.flops or 0
    return list(rows.values())


@piece("11.4")
def chrome_trace_events(events: list, pid: int) -> list:
    """The events in Chrome's Trace Event Format: one complete event each.

    A complete event is a dict with ``"ph": "X"``, the ``name`` (the event's ``trace_name``:
    ``ProfilerStep#3`` where the table groups the steps as ``ProfilerStep*``), a category ``cat``
    (``"user_annotation"`` for a ``record_function`` range, else ``"cpu_op"``), the process
    ``pid`` and thread ``tid``, the start ``ts`` and duration ``dur`` in microseconds, and
    ``args``: the input shapes as ``"Input Dims"`` when they were recorded.
    """
    out = []
    for event in events:
        args = {}
        if event.input_shapes:
            args["Input Dims"] = event.input_shapes
        out.append({"ph": "X", "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                    "name": event.trace_name, "pid": pid, "tid": event.thread,
                    "ts": event.time_range.start, "dur": event.time_range.elapsed_us(),
                    "args": args})
    return out


# ------------------------------------------------------------------------------ the list
_SORT_KEYS = ("cpu_time", "cuda_time", "device_time", "cpu_time_total", "cuda_time_total",
              "device_time_total", "self_cpu_time_total", "self_cuda_time_total",
              "self_device_time_total", "cpu_memory_usage", "cuda_memory_usage",
              "device_memory_usage", "self_cpu_memory_usage", "self_cuda_memory_usage",
              "self_device_memory_usage", "count", "flops")


class EventList(list):
    """The events of a profiler run (a ``list`` of :class:`FunctionEvent`), with the table,
    ``key_averages`` and the exports."""

    def __init__(self, *args: Any, use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._tree_built = False
        self._metadata: dict[str, str] = {}
        self._extra_trace_events: list[dict] = []

    def _build_tree(self) -> None:
        """Link parents and children (once), and sort the events by start time."""
        if not self._tree_built:
            if not any(e.cpu_parent is not None or e.cpu_children for e in self):  # not yet
                pieces.nest_events(list(self))
            self.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
            self._tree_built = True

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time: the time covered by the recorded events."""
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events (or averaged rows) as torch prints them, sorted by ``sort_by``
        (``"cpu_time_total"``, ``"self_cpu_time_total"``, ``"count"``, ``"cpu_memory_usage"``...)
        and cut after ``row_limit`` rows (-1: all)."""
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width,
                            with_flops=self._with_flops, profile_memory=self._profile_memory,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self) -> str:
        return self.table()

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> "EventList":
        """One row per operation name (and, optionally, per input shapes, per the top
        ``group_by_stack_n`` frames of the Python stack, per overload name)."""
        self._build_tree()

        def group_key(event: Any) -> tuple:
            key = [str(event.key), str(event.node_id), str(event.device_type),
                   str(event.is_legacy), str(event.is_user_annotation)]
            if group_by_overload_name:
                key.append(str(event.overload_name))
            if group_by_input_shapes:
                key.append(str(event.input_shapes))
            if group_by_stack_n > 0:
                key += event.stack[:group_by_stack_n]
            return tuple(key)

        rows = pieces.average_events(list(self), group_key)
        for row in rows:
            if group_by_stack_n <= 0:
                row.stack = []  # a row of several stacks shows none
            else:
                row.stack = row.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                row.input_shapes = ""
            if not group_by_overload_name:
                row.overload_name = ""
            row.use_device = self._use_device
        return EventList(rows, use_device=self._use_device, profile_memory=self._profile_memory,
                         with_flops=self._with_flops)

    def total_average(self) -> FunctionEventAvg:
        """All events added into one row (key ``"Total"``)."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
            total.key = None  # so that the next event, of any key, is accepted
        total.key = "Total"
        return total

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON object format): open it in
        https://ui.perfetto.dev or chrome://tracing."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self._chrome_trace(), f)

    def _chrome_trace(self, pid: int = 0) -> dict:
        self._build_tree()
        events = pieces.chrome_trace_events(list(self), pid)
        threads = sorted({e.thread for e in self})
        meta = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
                 "args": {"name": "python"}}]
        for tid in threads:
            meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
                         "args": {"name": f"thread {tid} (python)"}})
        trace = {"schemaVersion": 1, "displayTimeUnit": "ms",
                 "traceEvents": meta + events + self._extra_trace_events}
        trace.update(self._metadata)
        return trace

    def supported_export_stacks_metrics(self) -> list[str]:
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total",
                "self_privateuse1_time_total"]

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """One line per event with a stack, ``frame;frame;... <microseconds>``, outermost
        frame first: the input of flamegraph.pl."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: "
                             + str(self.supported_export_stacks_metrics()))
        metric = metric.replace("cuda", "device").replace("xpu", "device")
        self._build_tree()
        with open(path, "w", encoding="utf-8") as f:
            for event in self:
                if event.stack:
                    value = int(getattr(event, metric))
                    if value > 0:
                        frames = ";".join(reversed(event.stack + [event.name]))
                        f.write(f"{frames.replace(' ', '_')} {value}\n")


# ------------------------------------------------------------------------------ the table
def _build_table(events: Any, sort_by: str | None = None, header: str | None = None,
                 row_limit: int = 100, max_src_column_width: int = 75,
                 max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                 with_flops: bool = False, profile_memory: bool = False,
                 top_level_events_only: bool = False, time_unit: str | None = None) -> str:
    """torch's profiler table: a header line, one row per event, the total self time below."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        if sort_by.replace("xpu", "cuda").replace("privateuse1", "cuda") not in _SORT_KEYS:
            raise AttributeError(f"'FunctionEventAvg' object has no attribute '{sort_by}'")
        attr = sort_by.replace("cuda", "device").replace("xpu", "device") \
            .replace("privateuse1", "device")
        events = sorted(events, key=lambda e: getattr(e, attr) or 0, reverse=True)

    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    src_width = None
    if stacks:
        src_width = max(len(line) for s in stacks for line in s) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths, aligns = [name_width] + [12] * (len(headers) - 1), [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    flops_scale, flops_header = 1.0, ""
    if with_flops:
        raw = [e.flops for e in events if e.flops]
        if raw:
            power = int(max(0, min(math.log10(min(raw)) / 3, 5)))
            flops_scale = 10.0 ** (-3 * power)
            flops_header = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"][power]
            headers.append(f"Total {flops_header}")
            widths.append(12)
            aligns.append(">")
        else:
            with_flops = False

    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    separator = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt(time_us: float) -> str:
        if time_unit == "s":
            return f"{time_us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{time_us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{time_us:.3f}us"
        return _format_time(time_us)

    def trim(path: str) -> str:
        if len(path) > src_width:
            path = path[len(path) - src_width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total_self = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [separator, row_format.format(*headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        e.self_cpu_percent = _format_time_share(e.self_cpu_time_total, total_self)
        e.total_cpu_percent = _format_time_share(e.cpu_time_total, total_self)
        row = [name, e.self_cpu_percent, fmt(e.self_cpu_time_total), e.total_cpu_percent,
               fmt(e.cpu_time_total), fmt(e.cpu_time)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(trim(e.stack[0]) if e.stack else "")
        if with_flops:
            row.append(f"{e.flops * flops_scale:8.3f}" if e.flops else "--")
        lines.append(row_format.format(*row))
        if stacks:  # the other frames of the stack, one per line under the row
            where = headers.index("Source Location")
            for frame in e.stack[1:]:
                blank = [""] * len(headers)
                blank[where] = trim(frame)
                lines.append(row_format.format(*blank))
    lines.append(separator)
    lines.append(f"Self CPU time total: {fmt(total_self)}")
    return "".join(line + "\n" for line in lines)

