"""A tiny benchmark runner: best-of-N timings of NumPy, mytorch and torch for each case.

A case says how to build one zero-argument callable per library (``make(lib)``) and which target
it must meet: ``("numpy", 1.15)`` means mytorch may cost at most 1.15× the raw NumPy call,
``("torch", 3.0)`` at most 3× torch (per-op overhead on tiny tensors).
"""
from __future__ import annotations

import dataclasses
import os
import timeit
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

import mytorch

try:  # torch is optional: the table shows "-" without it
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None


@dataclasses.dataclass
class Case:
    """One benchmark row: ``make(lib)`` returns the callable to time (lib is np, mytorch or torch)."""

    op: str
    size: str
    make: Callable[[ModuleType], Callable[[], Any]]
    target: tuple[str, float] = ("numpy", 1.15)
    per: int = 1  # the callable runs this many ops: times are reported per op ("µs" targets)


@dataclasses.dataclass
class Row:
    case: Case
    numpy_us: float
    mytorch_us: float
    torch_us: float | None

    def ratio(self, against: str) -> float | None:
        base = self.numpy_us if against == "numpy" else self.torch_us
        return None if base is None else self.mytorch_us / base

    @property
    def ok(self) -> bool | None:
        kind, limit = self.case.target
        if kind == "µs":  # an absolute budget per op for mytorch
            return self.mytorch_us <= limit
        r = self.ratio(kind)
        return None if r is None else r <= limit


def calls_per_repeat(timer: timeit.Timer, min_time: float = 0.02) -> int:
    """How many calls make one repeat last about ``min_time`` seconds."""
    number, elapsed = timer.autorange()  # grows number until a loop takes ≥0.2 s
    return max(1, round(number * min_time / max(elapsed, 1e-9)))


def run(cases: Sequence[Case], repeat: int = 15) -> list[Row]:
    """Best-of-``repeat`` µs per call for each library.

    The libraries take turns inside every repeat, so a burst of machine noise slows all of them
    alike instead of one; the minimum is the run least disturbed by other processes.
    """
    if torch is not None:
        torch.set_num_threads(int(os.environ.get("MYTORCH_BENCH_THREADS", "1")))  # like NumPy (bench/__init__.py)
    rows = []
    for case in cases:
        libs = {"numpy": np, "mytorch": mytorch, **({"torch": torch} if torch is not None else {})}
        timers = {name: timeit.Timer(case.make(lib)) for name, lib in libs.items()}
        numbers = {name: calls_per_repeat(t) for name, t in timers.items()}  # also warms up
        best = dict.fromkeys(timers, float("inf"))
        for _ in range(repeat):
            for name, t in timers.items():
                best[name] = min(best[name], t.timeit(numbers[name]) / numbers[name] * 1e6)
        per = case.per
        rows.append(Row(case, best["numpy"] / per, best["mytorch"] / per,
                        None if "torch" not in best else best["torch"] / per))
    return rows


def format_table(rows: Sequence[Row]) -> str:
    """An aligned plain-text table."""
    head = ["op", "size", "numpy µs", "mytorch µs", "torch µs", "my/np", "my/torch", "target", "ok?"]
    body = []
    for r in rows:
        kind, limit = r.case.target
        body.append([r.case.op, r.case.size, f"{r.numpy_us:.2f}", f"{r.mytorch_us:.2f}",
                     "-" if r.torch_us is None else f"{r.torch_us:.2f}",
                     f"{r.ratio('numpy'):.2f}", _fmt(r.ratio("torch")),
                     f"≤{limit:g} µs/op" if kind == "µs" else f"≤{limit:g}× {kind}", {True: "ok", False: "MISS", None: "-"}[r.ok]])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=False)]
    lines = ["  ".join(str(x).rjust(w) if i >= 2 else str(x).ljust(w)
                       for i, (x, w) in enumerate(zip(line, widths, strict=False)))
             for line in [head, ["-" * w for w in widths], *body]]
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"
