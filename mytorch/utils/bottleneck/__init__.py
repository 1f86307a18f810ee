"""``python -m mytorch.utils.bottleneck script.py [args]``: a first look at where a script's time goes.

Like ``torch.utils.bottleneck``, it runs the script twice: once under Python's ``cProfile`` (which
Python functions take the time, mytorch's included) and once under mytorch's autograd profiler
(which tensor operations take it), and prints both summaries after a short description of the
environment. Run the script once by itself first: a script that is not deterministic or that
reads the command line differently will not profile in a meaningful way.
"""
from __future__ import annotations

import cProfile
from importlib import metadata
import io
import platform
import pstats
import runpy
import sys
from typing import Sequence

import numpy as np

from ... import cuda
from ...autograd import profiler as autograd_profiler

__all__ = ["main", "environment_summary"]


def environment_summary() -> str:
    """Versions and the device: what to quote when reporting a performance problem."""
    try:
        version = metadata.version("mytorch")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        version = "(not installed)"
    lines = [f"mytorch {version}, NumPy {np.__version__}, "
             f"Python {platform.python_version()} on {platform.platform()}",
             f"CUDA available: {cuda.is_available()}"]
    return "\n".join(lines)


def _run(path: str, args: Sequence[str]) -> None:
    saved = sys.argv
    sys.argv = [path, *args]
    try:
        runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = saved


def main(argv: Sequence[str] | None = None, top: int = 15) -> str:
    """Profile ``argv[0]`` (with the rest as its arguments); return the report."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        raise SystemExit("usage: python -m mytorch.utils.bottleneck script.py [args...]")
    path, args = argv[0], argv[1:]
    out = io.StringIO()
    out.write("-" * 78 + "\nEnvironment Summary\n" + "-" * 78 + "\n")
    out.write(environment_summary() + "\n\n")

    profiler = cProfile.Profile()
    profiler.enable()
    _run(path, args)
    profiler.disable()
    stats = io.StringIO()
    pstats.Stats(profiler, stream=stats).sort_stats("tottime").print_stats(top)
    out.write("-" * 78 + "\ncProfile output\n" + "-" * 78 + "\n" + stats.getvalue() + "\n")

    with autograd_profiler.profile() as prof:
        _run(path, args)
    out.write("-" * 78 + "\nautograd profiler output (CPU mode)\n" + "-" * 78 + "\n")
    out.write(f"        top {top} events sorted by cpu_time_total\n\n")
    out.write(prof.key_averages().table(sort_by="cpu_time_total", row_limit=top))
    return out.getvalue()
