"""Timing code correctly, on the CPU and on a GPU (``torch.utils.benchmark``).

``Timer(stmt, setup, globals).timeit(number)`` runs ``setup`` once, then times ``stmt``. On a GPU
that needs care, because a kernel call returns before the GPU has run it: the piece
``time_cuda`` warms up, then reads CUDA events around the calls after synchronizing.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import mytorch as torch

from .._pieces import piece, pieces

__all__ = ["Timer", "Measurement", "time_cuda"]


@piece("09.2")
def time_cuda(fn: "Callable", warmup: int = 3, repeat: int = 10) -> float:
    """Seconds one call of ``fn()`` takes, measured the right way for asynchronous GPU work.

    The first calls are slow (kernels are compiled, the memory pool fills), so run a few and
    throw their times away. A GPU kernel call only queues the work, so a host clock read right
    after it measures the queueing: wait for the queue (``synchronize``), then put events on the
    stream around the timed calls and wait for the last one before reading them. Without CUDA the
    work is done when the call returns, and the host clock is right.
    """
    for _ in range(warmup):
        fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1000 / repeat
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


class Measurement:
    """The result of a ``Timer`` run: per-call ``times`` (seconds), their ``mean`` and ``median``."""

    def __init__(self, number_per_run: int, times: list[float], stmt: str, label: str | None) -> None:
        self.number_per_run, self.times, self.stmt, self.label = number_per_run, times, stmt, label

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    def __repr__(self) -> str:
        t = self.median
        unit, scale = ("ms", 1e3) if t >= 1e-3 else ("us", 1e6)
        head = f"{self.label}: " if self.label else ""
        return (f"<mytorch.utils.benchmark.Measurement>\n{head}{self.stmt}\n  "
                f"Median: {t * scale:.2f} {unit}\n  {len(self.times)} measurement(s), "
                f"{self.number_per_run} run(s) each")


class Timer:
    """Time ``stmt`` after running ``setup`` once.

    ``stmt`` is a string of code run with ``globals``, as in torch. A callable is accepted too,
    which is mytorch only: torch raises ``ValueError: Currently only a `str` stmt is supported.``
    torch's Timer warms up and synchronizes before each clock reading; mytorch's measures with
    ``time_cuda``, which also reads CUDA events.
    """

    def __init__(self, stmt: Any = "pass", setup: str = "pass", globals: dict | None = None,
                 label: str | None = None, **kwargs: Any) -> None:
        self.stmt, self.label = stmt, label
        self._globals = dict(globals or {})
        exec(setup, self._globals)  # noqa: S102 - the caller's own setup code
        if callable(stmt):
            self._fn = stmt
            self._text = getattr(stmt, "__name__", "stmt")
        else:
            code = compile(stmt, "<timer stmt>", "exec")
            self._fn = lambda: exec(code, self._globals)  # noqa: S102
            self._text = stmt

    def timeit(self, number: int = 1000000) -> Measurement:
        """Mean time of ``number`` calls (after a short warm-up), measured once."""
        t = pieces.time_cuda(self._fn, warmup=min(3, number), repeat=number)
        return Measurement(number, [t], self._text, self.label)

    def repeat(self, repeat: int = 5, number: int = 100) -> list[Measurement]:
        return [self.timeit(number) for _ in range(repeat)]

    def blocked_autorange(self, min_run_time: float = 0.2) -> Measurement:
        """Blocks of calls until ``min_run_time`` seconds have been measured; one time per block."""
        number = 1
        while True:  # grow the block until it takes at least 10 ms
            t = pieces.time_cuda(self._fn, warmup=1, repeat=number)
            if t * number >= 0.01 or number >= 10 ** 6:
                break
            number *= 10
        times, total = [t], t * number
        while 0 < total < min_run_time:  # (a clock that never moves would loop forever)
            t = pieces.time_cuda(self._fn, warmup=0, repeat=number)
            times.append(t)
            total += t * number
        return Measurement(number, times, self._text, self.label)
