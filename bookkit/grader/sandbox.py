"""Run one job in a fresh, isolated, resource-limited child (``runner.py``) and collect its records.

The child runs ``python -I -S`` (no PYTHON* variables, no user site, no script folder on
``sys.path``; the runner sets ``sys.path`` itself), in its own session and process group, in a
fresh temporary folder with a scrubbed environment, under rlimits (address space, CPU, file size,
open files, no core dumps, no new processes where the kernel enforces it). The parent enforces
the wall clock per cell and kills the whole process group when a cell runs too long, when the
child is done, and when anything goes wrong. Its stdout is discarded; stderr keeps a short tail
for the instructor; records come only through a private pipe and must carry the job's nonce.
"""

from __future__ import annotations

import ast
import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

RUNNER = Path(__file__).with_name("runner.py")
MEMORY_LIMIT = 2 << 30  # bytes of address space
MAX_RECORDS_BYTES = 64 << 20
STDERR_TAIL = 4000


@dataclass(frozen=True)
class Limits:
    """Per-child limits: seconds per cell (wall clock) and bytes of memory."""

    cell_timeout: float = 20.0
    memory: int = MEMORY_LIMIT


@dataclass
class ChildResult:
    """What one child reported: the ``end`` record of each finished cell, and how it stopped."""

    ends: dict[int, dict] = field(default_factory=dict)
    running: int | None = None  # cell that had begun but not ended when the child stopped
    outcome: str = "done"  # done | timeout | crashed
    detail: str = ""  # exit code / signal / stderr tail, for the instructor
    stopped: dict[int, str] = field(default_factory=dict)  # cell → "timeout"|"crashed" (run_all)


def _trusted_paths(root: Path) -> tuple[list[str], list[str], list[str]]:
    """(``sys.path`` for the child, folders it may read, folders it may never read)."""
    stdlib = [p for p in sys.path if p and "site-packages" not in p and Path(p).resolve() != root
              and p.startswith(sys.base_prefix)]
    site = [p for p in sys.path if p.endswith("site-packages")]
    sys_path = [str(root), *stdlib, *site]
    read_ok = [str(root / "mytorch"), str(root / "bookkit"), *stdlib, *site,
               *{os.path.realpath(p) for p in (*stdlib, *site)}]
    denied = [str(Path(s) / name) for s in site for name in ("torch", "torchgen", "functorch")]
    return sys_path, read_ok, denied


def _limit(pid: int, memory: int, cpu_seconds: int) -> None:
    """Resource limits on the child (hard = soft: it cannot raise them again).

    Set with ``prlimit`` from the parent before the child gets its job (it waits on stdin until
    then), not in a ``preexec_fn``, which is unsafe in a multi-threaded parent.
    """
    for what, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_seconds),
                        (resource.RLIMIT_FSIZE, 1 << 20), (resource.RLIMIT_NOFILE, 64),
                        (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, 0 if os.getuid() else 4096)):
        try:
            resource.prlimit(pid, what, (value, value))
        except (ValueError, OSError):
            pass


def run_job(root: Path, cells: list[dict], *, seed: int, hidden: bool, limits: Limits,
            start: int = 0, skip: frozenset[int] = frozenset()) -> ChildResult:
    """Run ``cells`` (from ``start``, without ``skip``) in a sandboxed child; return its records."""
    sys_path, read_ok, denied = _trusted_paths(root.resolve())
    nonce = secrets.token_hex(16)
    runnable = sum(1 for i, c in enumerate(cells) if i not in skip)
    result = ChildResult()
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        read_fd, write_fd = os.pipe()
        job = {"cells": cells, "seed": seed, "hidden": hidden, "start": start, "skip": sorted(skip),
               "nonce": nonce, "fd": write_fd, "sys_path": sys_path, "read_ok": read_ok,
               "read_denied": denied, "cwd": tmp}
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8",
               "LC_ALL": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
        cpu = int(limits.cell_timeout * max(runnable, 1)) + 10
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(RUNNER)], cwd=tmp, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                pass_fds=(write_fd,), start_new_session=True, close_fds=True)
        finally:
            os.close(write_fd)
        _limit(proc.pid, limits.memory, cpu)
        stderr_tail = bytearray()
        records: list[dict] = []
        state = {"garbled": False}
        got_record = threading.Event()

        def read_records() -> None:
            buffer, total, prefix = b"", 0, (nonce + " ").encode()
            with os.fdopen(read_fd, "rb", buffering=0) as pipe:
                while chunk := pipe.read(1 << 16):
                    total += len(chunk)
                    if total > MAX_RECORDS_BYTES:
                        state["garbled"] = True
                        _kill(proc)
                        return
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        record = _parse(line, prefix)
                        if record is not None:
                            records.append(record)
                            got_record.set()

        def read_stderr() -> None:
            while chunk := proc.stderr.read(1 << 14):
                stderr_tail.extend(chunk)
                del stderr_tail[:-STDERR_TAIL]

        readers = [threading.Thread(target=read_records, daemon=True),
                   threading.Thread(target=read_stderr, daemon=True)]
        for reader in readers:
            reader.start()
        try:
            proc.stdin.write(json.dumps(job).encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        deadline = time.monotonic() + limits.cell_timeout + 30  # start-up (imports) + first cell
        seen = 0
        while proc.poll() is None:
            got_record.wait(timeout=0.05)
            got_record.clear()
            if len(records) > seen:
                seen = len(records)
                deadline = time.monotonic() + limits.cell_timeout
            if time.monotonic() > deadline:
                result.outcome = "timeout"
                break
        _kill(proc)
        proc.wait()
        for reader in readers:
            reader.join(timeout=5)
    for record in records:
        if record.get("ev") == "begin":
            result.running = record.get("cell")
        elif record.get("ev") == "end" and record.get("cell") == result.running:
            result.ends[result.running] = record
            result.running = None
        elif record.get("ev") == "done":
            result.running = None
    done = any(r.get("ev") == "done" for r in records)
    if result.outcome != "timeout" and (not done or state["garbled"]):
        result.outcome = "crashed"
    code = proc.returncode
    why = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
    result.detail = f"{why}; stderr: {bytes(stderr_tail).decode('utf-8', 'replace')[-800:]}"
    return result


def _parse(line: bytes, prefix: bytes) -> dict | None:
    """A record from one line, or None for anything not carrying the nonce or not plain data."""
    if not line.startswith(prefix):
        return None
    try:
        record = ast.literal_eval(line[len(prefix):].decode("utf-8"))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the child's whole process group (it is its own session leader)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_all(root: Path, cells: list[dict], *, seed: int, hidden: bool, limits: Limits) -> ChildResult:
    """Run every cell, restarting after a cell that timed out or crashed, without that cell.

    One hanging or process-killing cell then costs only the tests that need it. Finished test
    cells are not run again; code cells are (tests need their definitions). Each restart skips
    one more cell, so this ends.
    """
    merged = ChildResult()
    tests = {i for i, c in enumerate(cells) if c["kind"] == "test"}
    while True:
        skip = frozenset(merged.stopped) | (tests & set(merged.ends))
        result = run_job(root, cells, seed=seed, hidden=hidden, limits=limits, skip=skip)
        merged.ends.update(result.ends)
        merged.detail = result.detail
        if result.outcome == "done":
            return merged
        if result.running is None or result.running in merged.stopped:
            merged.outcome = result.outcome  # died outside any cell: nothing more to learn
            return merged
        merged.stopped[result.running] = result.outcome
