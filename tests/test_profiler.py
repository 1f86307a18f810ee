"""mytorch.profiler against torch.profiler: interface, schedule, table, tree, memory, traces.

Times differ between the libraries (and between runs), so the comparisons are about what a
profile *says*: which events, how many calls, how they nest, which columns, how much memory an
operation allocated, the FLOPs of a matrix product, and a Chrome trace that follows the Trace
Event Format (checked by a validator that accepts torch's own traces too).
"""
from __future__ import annotations

import gzip
import inspect
import json
import re
import threading
import warnings

import numpy as np
import pytest
import torch

import mytorch
from mytorch._pieces import REGISTRY, activate, pieces
from mytorch.autograd.profiler_util import (EventList, FunctionEvent, average_events,
                                            chrome_trace_events, nest_events)
from mytorch.profiler.profiler import schedule_action


# ----------------------------------------------------------------------------- helpers
def _model(lib):
    g = np.random.default_rng(0)
    net = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.ReLU(), lib.nn.Linear(16, 4))
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.from_numpy(g.standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


def _train_steps(lib, prof=None, steps=1):
    net = _model(lib)
    opt = lib.optim.SGD(net.parameters(), lr=0.1)
    x = lib.from_numpy(np.ones((5, 8), np.float32))
    y = lib.from_numpy(np.array([0, 1, 2, 3, 0]))
    data = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(x, y), batch_size=5)
    for _ in range(steps):
        for xb, yb in data:
            with lib.profiler.record_function("train_step"):
                loss = lib.nn.functional.cross_entropy(net(xb), yb)
                loss.backward()
                opt.step()
                opt.zero_grad()
        if prof is not None:
            prof.step()


def _profile(lib, **kw):
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as p:
        _train_steps(lib)
    return p


def validate_trace(trace: dict) -> None:
    """The Trace Event Format (JSON object form) as chrome://tracing and Perfetto read it.

    https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU: a
    ``traceEvents`` list; every event has a phase ``ph``, a ``name`` (except flow events), a
    ``pid`` and ``tid`` (numbers, or labels as torch writes for its own spans); ``ts`` and ``dur`` are numbers of microseconds;
    a complete event (``X``) has ``dur >= 0``; metadata (``M``) names a process or thread in
    ``args.name``; instant events (``i``) have scope ``s`` in g/p/t; ``args`` is an object. Complete
    events of one thread must nest (Perfetto rejects partial overlaps on a track).
    """
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    by_thread: dict = {}
    for e in trace["traceEvents"]:
        assert e["ph"] in {"X", "B", "E", "i", "I", "M", "s", "t", "f", "C", "b", "e", "n"}, e
        assert isinstance(e["pid"], (int, str)) and isinstance(e["tid"], (int, str)), e
        assert isinstance(e.get("args", {}), dict), e
        if e["ph"] in ("s", "t", "f"):
            assert "id" in e, e
            continue
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        elif e["ph"] == "M":
            assert e["name"] in {"process_name", "process_labels", "process_sort_index",
                                 "thread_name", "thread_sort_index"}, e
            assert e["args"], e
        elif e["ph"] in ("i", "I"):
            assert e.get("s", "t") in ("g", "p", "t"), e
    for spans in by_thread.values():  # complete events nest like parentheses on each thread
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list = []
        for start, end in spans:
            while open_ends and open_ends[-1] <= start + 1e-3:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1] + 1e-3, (start, end, open_ends[-1])
            open_ends.append(end)


# ----------------------------------------------------------------------------- interface
@pytest.mark.parametrize("path", [
    "profiler.profile.__init__", "profiler.schedule", "profiler.tensorboard_trace_handler",
    "profiler.record_function.__init__", "autograd.profiler.profile.__init__",
    "autograd.profiler_util.EventList.table", "autograd.profiler_util.EventList.key_averages",
    "profiler.profile.key_averages", "profiler.profile.export_chrome_trace",
    "profiler.profile.export_stacks"])
def test_signatures_match_torch(path):
    def resolve(root):
        obj = root
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def params(fn):
        return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()
                if p.kind is not p.VAR_KEYWORD]

    mine, ref = params(resolve(mytorch)), params(resolve(torch))
    # torch's newest keyword-only extras (timeouts, activity filters) are accepted by **kwargs
    ref = [p for p in ref if p[0] not in ("post_processing_timeout_s", "activity_filters",
                                          "use_python_export")]
    mine = [p for p in mine if p[0] != "use_python_export"]
    assert [(n, k) for n, k, _ in mine] == [(n, k) for n, k, _ in ref]
    assert [repr(d) for *_, d in mine] == [repr(d) for *_, d in ref]


def test_enums_and_activities_match_torch():
    assert [(a.name, a.value) for a in mytorch.profiler.ProfilerAction] == \
        [(a.name, a.value) for a in torch.profiler.ProfilerAction]
    assert {a.name for a in mytorch.profiler.ProfilerActivity} == \
        {n for n in dir(torch.profiler.ProfilerActivity) if n[0].isupper()}
    assert mytorch.profiler.ProfilerActivity.CPU in mytorch.profiler.supported_activities()
    assert str(mytorch.profiler.ProfilerActivity.CPU) == str(torch.profiler.ProfilerActivity.CPU)


# ----------------------------------------------------------------------------- schedule
@pytest.mark.parametrize("kw", [
    dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
    dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
    dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1)])
def test_schedule_matches_torch(kw):
    mine, ref = mytorch.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [mine(s).name for s in range(30)] == [ref(s).name for s in range(30)]


def test_schedule_errors_match_torch():
    for kw in (dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=1, active=0)):
        with pytest.raises(AssertionError) as a:
            mytorch.profiler.schedule(**kw)
        with pytest.raises(AssertionError) as b:
            torch.profiler.schedule(**kw)
        assert str(a.value) == str(b.value)
    with pytest.warns(UserWarning, match="won't be using warmup"):
        mytorch.profiler.schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="non-negative"):
        mytorch.profiler.schedule(wait=0, warmup=1, active=1)(-1)


def test_schedule_action_piece_is_the_rule():
    A = mytorch.profiler.ProfilerAction
    got = [schedule_action(s, 1, 1, 2, 1, 0) for s in range(6)]
    assert got == [A.NONE, A.WARMUP, A.RECORD, A.RECORD_AND_SAVE, A.NONE, A.NONE]


def _traces_per_schedule(lib):
    seen = []

    def ready(p):
        seen.append(sorted({e.trace_name for e in p.events()
                            if e.name.startswith("ProfilerStep")}))

    sched = lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], schedule=sched,
                              on_trace_ready=ready) as p:
        _train_steps(lib, p, steps=10)
    return seen


def test_schedule_drives_recording_like_torch():
    mine = _traces_per_schedule(mytorch)
    assert mine == _traces_per_schedule(torch)
    assert mine == [["ProfilerStep#2", "ProfilerStep#3"], ["ProfilerStep#6", "ProfilerStep#7"]]


def test_acc_events_keeps_every_cycle():
    sched = mytorch.profiler.schedule(wait=0, warmup=1, active=1, repeat=3)
    with mytorch.profiler.profile(schedule=sched, acc_events=True) as p:
        _train_steps(mytorch, p, steps=6)
    steps = {r.key: r.count for r in p.key_averages()}["ProfilerStep*"]
    assert steps == 3
    validate_trace(p.events()._chrome_trace())


def test_tensorboard_trace_handler_writes_traces(tmp_path):
    sched = mytorch.profiler.schedule(wait=0, warmup=1, active=1, repeat=2)
    handler = mytorch.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w0",
                                                         use_gzip=True)
    with mytorch.profiler.profile(schedule=sched, on_trace_ready=handler) as p:
        _train_steps(mytorch, p, steps=4)
    files = sorted(tmp_path.iterdir())
    assert len(files) == 2 and all(re.fullmatch(r"w0\.\d+\.pt\.trace\.json\.gz", f.name)
                                   for f in files)
    with gzip.open(files[0], "rt") as f:
        validate_trace(json.load(f))


# ----------------------------------------------------------------------------- what is recorded
COMMON = {"train_step", "aten::linear", "aten::relu", "aten::cross_entropy_loss",
          "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad",
          "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
          "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
          "torch::autograd::AccumulateGrad", "aten::t"}
# (torch's SGD step shows ``aten::add_`` per parameter; mytorch's runs its fused one-pass kernel,
# no tensor op, once every ``.grad`` is laid out like its parameter, as torch lays it out)


@pytest.fixture
def library_pieces():
    """The library's own pieces (``MYTORCH_MINE`` may have plugged a student's in): event counts
    are compared with torch's, and a student's loss piece runs as a composition of more ops."""
    before = {n: getattr(pieces, n) for n in REGISTRY}
    for n in REGISTRY:
        activate(n, None)
    yield
    for n, fn in before.items():
        setattr(pieces, n, fn)


def test_events_named_like_torch(library_pieces):
    mine = {r.key: r.count for r in _profile(mytorch).key_averages()}
    ref = {r.key: r.count for r in _profile(torch).key_averages()}
    for name in COMMON:
        assert name in mine and name in ref, name
    for name in ("train_step", "aten::linear", "aten::relu", "aten::cross_entropy_loss",
                 "Optimizer.step#SGD.step", "torch::autograd::AccumulateGrad"):
        assert mine[name] == ref[name], name
    # every backward node is timed inside the engine's evaluate_function range
    nodes = [k for k in mine if k.endswith("Backward0") and "::" not in k]
    assert nodes and all(f"autograd::engine::evaluate_function: {k}" in mine for k in nodes)


def _header(table: str) -> list[str]:
    return re.split(r"\s{2,}", table.splitlines()[1].strip())


@pytest.mark.parametrize("kw,group", [({}, False), (dict(profile_memory=True), False),
                                      (dict(record_shapes=True), True)])
def test_table_columns_match_torch(kw, group):
    mine, ref = _profile(mytorch, **kw), _profile(torch, **kw)
    tm = mine.key_averages(group_by_input_shape=group).table(sort_by="self_cpu_time_total")
    tr = ref.key_averages(group_by_input_shape=group).table(sort_by="self_cpu_time_total")
    assert _header(tm) == _header(tr)
    assert tm.splitlines()[-1].startswith("Self CPU time total: ")
    assert tr.splitlines()[-1].startswith("Self CPU time total: ")
    sep = tm.splitlines()[0]
    assert tm.splitlines()[2] == sep and tm.splitlines()[-2] == sep
    assert len(sep) == len(tr.splitlines()[0]) or group  # same widths (shapes column varies)
    # sorted by self CPU time, largest first; percentages of self time add up to 100
    rows = mine.key_averages(group_by_input_shape=group)
    selfs = [r.self_cpu_time_total for r in sorted(rows, key=lambda r: -r.self_cpu_time_total)]
    assert selfs == sorted(selfs, reverse=True)
    col = _header(tm).index("Self CPU %")
    # every row (the default row_limit=100 cuts a long table, e.g. on a student's composite pieces)
    every = mine.key_averages(group_by_input_shape=group).table(sort_by="self_cpu_time_total",
                                                                 row_limit=-1)
    shares = [float(re.split(r"\s{2,}", line.strip())[col].rstrip("%"))
              for line in every.splitlines()[3:-2]]
    assert abs(sum(shares) - 100) < 0.5


def test_table_row_limit_names_and_sort_errors():
    p = _profile(mytorch)
    table = p.key_averages().table(sort_by="count", row_limit=3)
    assert len(table.splitlines()) == 3 + 3 + 2
    long = p.key_averages().table(max_name_column_width=20)
    assert "autograd::engine:..." in long
    with pytest.raises(AttributeError):
        p.key_averages().table(sort_by="nonsense")
    assert "This report only display top-level ops statistics" in \
        p.key_averages().table(top_level_events_only=True)
    assert re.search(r"\d\.\d{3}s ", p.key_averages().table(time_unit="s"))


def test_tree_and_self_times():
    events = _profile(mytorch).events()
    for e in events:
        for c in e.cpu_children:
            assert c.cpu_parent is e and c.thread == e.thread
            assert e.time_range.start <= c.time_range.start <= c.time_range.end \
                <= e.time_range.end
        assert e.self_cpu_time_total <= e.cpu_time_total + 1e-9
    top = [e for e in events if e.cpu_parent is None]
    assert sum(e.cpu_time_total for e in top) == pytest.approx(events.self_cpu_time_total)
    step = next(e for e in events if e.name == "train_step")
    below = {c.name for c in step.cpu_children}
    assert {"aten::cross_entropy_loss", "Optimizer.step#SGD.step"} <= below
    assert any(c.name == "aten::linear" for e in events if e.name == "train_step"
               for c in e.cpu_children)


def test_memory_of_an_allocation_matches_torch():
    def run(lib):
        with lib.profiler.profile(profile_memory=True) as p:
            lib.zeros(1000)
            lib.ones(50, 4, dtype=lib.float64).sum()
        return {r.key: r.cpu_memory_usage for r in p.key_averages()}

    mine, ref = run(mytorch), run(torch)
    assert mine["aten::zeros"] == ref["aten::zeros"] == 4000
    assert mine["aten::ones"] == ref["aten::ones"] == 1600
    assert mine["aten::sum"] == ref["aten::sum"] == 8


def test_memory_frees_are_negative_self_memory():
    with mytorch.profiler.profile(profile_memory=True) as p:
        with mytorch.profiler.record_function("make_and_drop"):
            x = mytorch.zeros(256)
            del x
    row = {r.key: r for r in p.key_averages()}["make_and_drop"]
    assert row.cpu_memory_usage == 0 and row.self_cpu_memory_usage == -1024


def test_flops_match_torch():
    def run(lib):
        a = lib.from_numpy(np.ones((4, 5), np.float32))
        b = lib.from_numpy(np.ones((5, 6), np.float32))
        w = lib.from_numpy(np.ones((3, 2, 3, 3), np.float32))
        x = lib.from_numpy(np.ones((1, 2, 6, 6), np.float32))
        with lib.profiler.profile(record_shapes=True, with_flops=True) as p:
            lib.mm(a, b)
            lib.nn.functional.conv2d(x, w)
        return {r.key: r.flops for r in p.key_averages()}

    mine, ref = run(mytorch), run(torch)
    assert mine["aten::mm"] == ref["aten::mm"] == 240
    assert mine["aten::conv2d"] == ref["aten::conv2d"]


def test_record_shapes_like_torch():
    def shapes(lib):
        p = _profile(lib, record_shapes=True)
        return {str(r.input_shapes) for r in p.key_averages(group_by_input_shape=True)
                if r.key == "aten::linear"}

    assert shapes(mytorch) == shapes(torch) == {"[[5, 8], [16, 8], [16]]", "[[5, 16], [4, 16], [4]]"}


def test_with_stack_and_export_stacks(tmp_path):
    p = _profile(mytorch, with_stack=True)
    rows = p.key_averages(group_by_stack_n=2)
    lin = [r for r in rows if r.key == "aten::linear"]
    assert lin and all(len(r.stack) == 2 for r in lin)
    assert any("linear.py" in r.stack[0] for r in lin)
    assert all(re.fullmatch(r".+\(\d+\): .+", line) for r in lin for line in r.stack)
    table = rows.table()
    assert "Source Location" in _header(table)
    p.export_stacks(str(tmp_path / "s.txt"))
    lines = (tmp_path / "s.txt").read_text().splitlines()
    assert lines and all(re.fullmatch(r"\S+ \d+", line) for line in lines)
    assert any(line.split()[0].endswith(";aten::linear") or "aten::linear;" in line
               for line in lines)


def test_nothing_is_wrapped_outside_a_profile():
    add, relu, step, nxt = (mytorch.Tensor.add, mytorch.nn.functional.relu,
                            mytorch.optim.SGD.zero_grad,
                            mytorch.utils.data.dataloader._BaseDataLoaderIter.__next__)
    from mytorch.autograd import engine
    with mytorch.profiler.profile():
        assert mytorch.Tensor.add is not add and mytorch.nn.functional.relu is not relu
    assert (mytorch.Tensor.add, mytorch.nn.functional.relu, mytorch.optim.SGD.zero_grad,
            mytorch.utils.data.dataloader._BaseDataLoaderIter.__next__) == (add, relu, step, nxt)
    assert engine.RUN_NODE_WRAPPERS == []
    with pytest.raises(ZeroDivisionError):
        with mytorch.profiler.profile():
            1 / 0
    assert mytorch.Tensor.add is add and engine.RUN_NODE_WRAPPERS == []
    with mytorch.profiler.record_function("outside"):  # no profiler: nothing happens
        mytorch.ones(2)


def test_one_profiler_at_a_time_and_decorator():
    @mytorch.profiler.record_function("decorated")
    def f(x):
        return x * 2

    with mytorch.profiler.profile() as p:
        f(mytorch.ones(3))
        with pytest.raises(RuntimeError, match="already enabled"):
            with mytorch.autograd.profiler.profile():
                pass
    names = [e.name for e in p.events()]
    assert names == ["aten::ones", "decorated", "aten::mul"]
    assert p.events()[2].cpu_parent is p.events()[1]


def test_threads_are_separate_tracks():
    def work():
        mytorch.ones(10).sum()

    with mytorch.profiler.profile() as p:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        work()
    threads = {e.thread for e in p.events()}
    assert len(threads) == 2
    assert all(e.cpu_parent is None for e in p.events() if e.name == "aten::ones")


def test_legacy_autograd_profiler():
    x = mytorch.ones(4, 4, requires_grad=True)
    with mytorch.autograd.profiler.profile(record_shapes=True) as prof:
        (x @ x).sum().backward()
    names = {r.key for r in prof.key_averages()}
    assert {"aten::matmul", "aten::sum", "autograd::engine::evaluate_function: SumBackward0"} \
        <= names
    assert prof.self_cpu_time_total > 0 and "Self CPU time total" in prof.table()
    assert prof.total_average().key == "Total"
    assert prof.total_average().count == len(prof.events())


# ----------------------------------------------------------------------------- Chrome trace
def test_chrome_trace_is_valid_like_torchs(tmp_path):
    ref = _profile(torch, record_shapes=True, profile_memory=True)
    ref.export_chrome_trace(str(tmp_path / "torch.json"))
    validate_trace(json.loads((tmp_path / "torch.json").read_text()))  # the validator's oracle
    p = _profile(mytorch, record_shapes=True, profile_memory=True)
    p.export_chrome_trace(str(tmp_path / "mine.json"))
    trace = json.loads((tmp_path / "mine.json").read_text())
    validate_trace(trace)
    xs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(p.events())
    assert {e["cat"] for e in xs} == {"cpu_op", "user_annotation"}
    assert any(e["name"] == "train_step" and e["cat"] == "user_annotation" for e in xs)
    assert any(e["name"] == "[memory]" and e["args"]["Bytes"] > 0 for e in trace["traceEvents"])
    lin = next(e for e in xs if e["name"] == "aten::linear")
    assert lin["args"]["Input Dims"] == [[5, 8], [16, 8], [16]]
    threads = [e for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert {e["tid"] for e in threads} == {e["tid"] for e in xs}
    assert trace["record_shapes"] == 1 and trace["profile_memory"] == 1


def test_validator_rejects_overlap():
    bad = {"traceEvents": [{"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
                           {"ph": "X", "name": "b", "pid": 0, "tid": 0, "ts": 5, "dur": 10}]}
    with pytest.raises(AssertionError):
        validate_trace(bad)


# ----------------------------------------------------------------------------- the pieces
def _events(spec):
    """FunctionEvents from (name, thread, start, end, memory) tuples."""
    return [FunctionEvent(i, n, t, s, e, cpu_memory_usage=m) for i, (n, t, s, e, m)
            in enumerate(spec)]


SPEC = [("step", 1, 0, 100, 64), ("linear", 1, 10, 40, 48), ("addmm", 1, 15, 35, 48),
        ("relu", 1, 45, 50, 16), ("linear", 1, 55, 90, 0), ("addmm", 1, 60, 70, 8),
        ("other", 2, 20, 30, 4), ("linear", 2, 30, 31, 0)]


def test_nest_events_piece():
    ev = _events(SPEC)
    nest_events(list(reversed(ev)))
    parents = [None if e.cpu_parent is None else e.cpu_parent.id for e in ev]
    assert parents == [None, 0, 1, 0, 0, 4, None, None]
    assert [c.id for c in ev[0].cpu_children] == [1, 3, 4]
    assert ev[0].self_cpu_time_total == 100 - 30 - 5 - 35
    assert ev[0].self_cpu_memory_usage == 0 and ev[1].self_cpu_memory_usage == 0


def test_average_events_piece():
    ev = _events(SPEC)
    nest_events(ev)
    rows = average_events(ev, lambda e: e.key)
    assert [r.key for r in rows] == ["step", "linear", "addmm", "relu", "other"]
    lin = rows[1]
    assert (lin.count, lin.cpu_time_total, lin.self_cpu_time_total) == (3, 66, 66 - 20 - 10)
    assert lin.cpu_time == 22 and lin.cpu_memory_usage == 48
    via_list = EventList(_events(SPEC)).key_averages()
    assert sorted((r.key, r.count, r.self_cpu_time_total) for r in via_list) == \
        sorted((r.key, r.count, r.self_cpu_time_total) for r in rows)


def test_chrome_trace_events_piece():
    ev = _events(SPEC)
    ev[1].input_shapes = [[2, 3]]
    ev[0].is_user_annotation = True
    out = chrome_trace_events(ev, pid=7)
    assert out[0] == {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 7, "tid": 1,
                      "ts": 0, "dur": 100, "args": {}}
    assert out[1]["args"] == {"Input Dims": [[2, 3]]} and out[1]["cat"] == "cpu_op"
    validate_trace({"traceEvents": out})


def test_event_and_row_properties_like_torch():
    from torch.autograd.profiler_util import FunctionEvent as TE
    from torch.autograd.profiler_util import FunctionEventAvg as TA

    from mytorch.autograd.profiler_util import FunctionEventAvg as MA
    for E, A in ((FunctionEvent, MA), (TE, TA)):
        parent, child = E(0, "p", 1, 0, 10), E(1, "c", 1, 2, 5)
        parent.append_cpu_child(child)
        child.set_cpu_parent(parent)
        row = A()
        row.add(parent)
        row.add(E(2, "p", 1, 20, 24))
        got = (parent.self_cpu_time_total, parent.cpu_time_total, row.count, row.cpu_time,
               row.cpu_time_total_str, row.self_cpu_time_total, parent.key)
        if E is FunctionEvent:
            mine = got
        else:
            assert mine == got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError):
            MA().add(FunctionEvent(0, "a", 0, 0, 1)).add(FunctionEvent(1, "b", 0, 0, 1))


def test_autograd_grad_runs_no_accumulate_grad_like_torch():
    # autograd.grad keeps a leaf's gradient: torch times the node's range and runs nothing inside
    names = []
    for lib in (mytorch, torch):
        x = lib.ones(3, requires_grad=True)
        with lib.profiler.profile() as p:
            lib.autograd.grad((x * 2).sum(), x)
        names.append(sorted(e.name for e in p.events() if "AccumulateGrad" in e.name))
    assert names[0] == names[1] == ["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"]


# ----------------------------------------------------------------------------- however reached
def _held_elsewhere(lib):
    """Operations reached other than through their module: a layer's ``staticmethod``
    (``nn.Conv2d``, ``nn.Softmax``), a user's class attribute, a name imported into a module."""
    global _ALIASED_GELU  # a module attribute of this test module, as after ``from ... import``
    _ALIASED_GELU = __import__(f"{lib.__name__}.nn.functional", fromlist=["gelu"]).gelu

    class Act(lib.nn.Module):
        act = staticmethod(lib.nn.functional.silu)
        plain = lib.nn.functional.hardtanh  # (a plain function: looked up through the class)

        def forward(self, x):
            return type(self).plain(self.act(x))

    net = lib.nn.Sequential(lib.nn.Conv2d(1, 2, 3), lib.nn.Softmax(dim=1), Act())
    x = lib.ones(1, 1, 5, 5)
    with lib.profiler.profile() as prof:
        _ALIASED_GELU(net(x))
    return {e.name for e in prof.events()}


def test_operations_are_recorded_however_they_are_reached():
    want = {"aten::conv2d", "aten::softmax", "aten::silu", "aten::hardtanh", "aten::gelu"}
    assert want <= _held_elsewhere(torch)
    assert want <= _held_elsewhere(mytorch)
    # and everything is put back afterwards
    assert mytorch.nn.Conv2d.__dict__["_fn"].__func__ is mytorch.nn.functional.conv2d
    assert not hasattr(_ALIASED_GELU, "__mytorch_profiled__")
