"""Run one job in a fresh, isolated, resource-limited child (``runner.py``) and collect its records.

Children are forked by a *zygote*: a ``python -I -S runner.py`` process (no PYTHON* variables, no
user site, no script folder on ``sys.path``; the runner sets ``sys.path`` itself, with a scrubbed
environment) that imported numpy and mytorch once and never runs student code. A fork is a fresh
process with those imports done, in milliseconds instead of a quarter of a second. Each child gets
its own session and process group, a fresh temporary folder, and rlimits (address space, CPU, file
size, open files, no core dumps, no new processes where the kernel enforces it) before any student
code runs. The parent enforces the wall clock per cell and kills the child's whole process group
when a cell runs too long, when the child is done, and when anything goes wrong. Its stdout is
discarded; stderr keeps a short tail for the instructor; records come only through a private pipe
and must carry the job's nonce.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
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
ZYGOTE_START = 120  # seconds for a new zygote's imports and its first fork


@dataclass(frozen=True)
class Limits:
    """Per-child limits: seconds per cell (wall clock) and bytes of memory."""

    cell_timeout: float = 10.0
    memory: int = MEMORY_LIMIT


@dataclass
class ChildResult:
    """What one child reported: the ``end`` record of each finished cell, and how it stopped."""

    ends: dict[int, dict] = field(default_factory=dict)
    running: int | None = None  # cell that had begun but not ended when the child stopped
    outcome: str = "done"  # done | timeout | crashed
    detail: str = ""  # exit code / signal / stderr tail, for the instructor
    stopped: dict[int, str] = field(default_factory=dict)  # cell → "timeout"|"crashed" (run_all)
    unstarted: bool = False  # no child could be started: the grader's trouble, not a verdict


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


def _env(home: str) -> dict[str, str]:
    """The whole environment of the zygote and its children: nothing of the instructor's."""
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


class ZygoteDied(Exception):
    """The zygote stopped answering; the job counts as crashed and a new zygote is started."""


class _Zygote:
    """A ``python -I -S runner.py`` process that imported numpy and mytorch once and forks one
    child per job (see ``runner.serve``). Used by one job at a time."""

    def __init__(self, root: Path) -> None:
        sys_path, _, _ = _trusted_paths(root)
        self.home = tempfile.mkdtemp(prefix="grade-zygote-")
        self.sock, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(RUNNER), str(theirs.fileno()), json.dumps(sys_path)],
                cwd=self.home, env=_env(self.home), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                start_new_session=True, close_fds=True)
        finally:
            theirs.close()
        self.lines = self.sock.makefile("rb")

    def fork(self, job: bytes, records_w: int, stderr_w: int) -> int:
        """Hand ``job`` and the two pipes' write ends to a new child; return its pid."""
        try:
            socket.send_fds(self.sock, [b"%016d" % len(job)], [records_w, stderr_w])
            self.sock.sendall(job)
            self.sock.settimeout(ZYGOTE_START)  # the first job waits for the zygote's imports
            line = self.lines.readline()
            self.sock.settimeout(None)
        except OSError as exc:
            raise ZygoteDied(str(exc)) from None
        if not line.startswith(b"PID "):
            raise ZygoteDied(line.decode("utf-8", "replace").strip() or "no answer")
        return int(line.split()[1])

    def wait(self) -> int:
        """Block until the zygote reports the child's exit; its exit code (negative: signal)."""
        line = self.lines.readline()
        if not line.startswith(b"EXIT "):
            raise ZygoteDied("no exit status")
        return int(line.split()[2])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.lines.close()
            self.sock.close()  # end of file: the zygote exits
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        shutil.rmtree(self.home, ignore_errors=True)


_IDLE: dict[Path, list[_Zygote]] = {}
_IDLE_LOCK = threading.Lock()


def _take_zygote(root: Path, new: bool = False) -> _Zygote:
    with _IDLE_LOCK:
        idle = _IDLE.get(root)
        if idle and not new:
            return idle.pop()
    return _Zygote(root)


def _give_back(root: Path, zygote: _Zygote) -> None:
    with _IDLE_LOCK:
        _IDLE.setdefault(root, []).append(zygote)


def _fork(root: Path, job: bytes, records_w: int, stderr_w: int, new: bool) -> tuple[_Zygote, int]:
    """A child for ``job`` from an idle zygote, or from a new one when that one has died."""
    for attempt in range(2):
        try:
            zygote = _take_zygote(root, new or attempt > 0)
        except OSError as exc:  # no process could be started (fork limits, a broken interpreter)
            raise ZygoteDied(f"starting Python failed: {exc}") from None
        try:
            return zygote, zygote.fork(job, records_w, stderr_w)
        except ZygoteDied:
            zygote.close()
            if attempt:
                raise
    raise AssertionError("unreachable")


def shutdown() -> None:
    """Stop every idle zygote (the end of a grading run; also run at exit)."""
    with _IDLE_LOCK:
        zygotes = [z for idle in _IDLE.values() for z in idle]
        _IDLE.clear()
    for zygote in zygotes:
        zygote.close()


atexit.register(shutdown)


def run_job(root: Path, cells: list[dict], *, seed: int, hidden: bool, limits: Limits,
            start: int = 0, skip: frozenset[int] = frozenset(), new_zygote: bool = False) -> ChildResult:
    """Run ``cells`` (from ``start``, without ``skip``) in a sandboxed child; return its records.

    ``new_zygote``: fork from a zygote started for this job, so that everything a process draws
    at start-up (address layout, string hashing) differs from the other zygotes' children.
    """
    root = root.resolve()
    sys_path, read_ok, denied = _trusted_paths(root)
    nonce = secrets.token_hex(16)
    runnable = sum(1 for i, c in enumerate(cells) if i not in skip)
    cpu = int(limits.cell_timeout * max(runnable, 1)) + 10
    rlimits = {"RLIMIT_AS": limits.memory, "RLIMIT_CPU": cpu, "RLIMIT_FSIZE": 1 << 20,
               "RLIMIT_NOFILE": 64, "RLIMIT_CORE": 0}
    if os.getuid():  # root ignores RLIMIT_NPROC; for everyone else: no new processes at all
        rlimits["RLIMIT_NPROC"] = 0
    result = ChildResult()
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        job = {"cells": cells, "seed": seed, "hidden": hidden, "start": start, "skip": sorted(skip),
               "nonce": nonce, "read_ok": read_ok, "read_denied": denied, "cwd": tmp,
               "limits": rlimits}
        read_fd, write_fd = os.pipe()
        err_r, err_w = os.pipe()
        try:
            zygote, pid = _fork(root, json.dumps(job).encode(), write_fd, err_w, new_zygote)
        except ZygoteDied as exc:
            os.close(read_fd)
            os.close(err_r)
            result.unstarted = True
            result.outcome, result.detail = "crashed", (
                f"the grader could not start a child process ({exc}); not the student's fault: check "
                "the machine's memory and process limits, then run `make grade` again (finished "
                "results are cached, only this one is redone)")
            return result
        finally:  # the child holds the write ends now: end of file once it is gone
            os.close(write_fd)
            os.close(err_w)
        stderr_tail = bytearray()
        records: list[dict] = []
        state: dict = {"garbled": False, "code": None}
        got_record, exited = threading.Event(), threading.Event()

        def read_records() -> None:
            # A record holding a large array is megabytes long: collect a line in a bytearray and
            # look for the newline in each new chunk only (re-scanning and re-copying the whole
            # buffer per chunk made such a record cost seconds)
            line, total, prefix = bytearray(), 0, (nonce + " ").encode()
            with os.fdopen(read_fd, "rb", buffering=0) as pipe:
                while chunk := pipe.read(1 << 20):
                    total += len(chunk)
                    if total > MAX_RECORDS_BYTES:
                        state["garbled"] = True
                        _kill(pid)
                        return
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        line += chunk[start:end]
                        record = _parse(bytes(line), prefix)
                        line.clear()
                        start = end + 1
                        if record is not None:
                            records.append(record)
                            got_record.set()
                    line += chunk[start:]

        def read_stderr() -> None:
            with os.fdopen(err_r, "rb", buffering=0) as pipe:
                while chunk := pipe.read(1 << 14):
                    stderr_tail.extend(chunk)
                    del stderr_tail[:-STDERR_TAIL]

        def wait_exit() -> None:
            try:
                state["code"] = zygote.wait()
            except (ZygoteDied, OSError, ValueError):
                state["zygote_died"] = True
            exited.set()
            got_record.set()

        readers = [threading.Thread(target=read_records, daemon=True),
                   threading.Thread(target=read_stderr, daemon=True)]
        waiter = threading.Thread(target=wait_exit, daemon=True)
        for thread in (*readers, waiter):
            thread.start()
        deadline = time.monotonic() + limits.cell_timeout + 30  # start-up + first cell
        seen = 0
        while not exited.is_set():
            got_record.wait(timeout=0.05)
            got_record.clear()
            if len(records) > seen:
                seen = len(records)
                deadline = time.monotonic() + limits.cell_timeout
            if time.monotonic() > deadline:
                result.outcome = "timeout"
                break
        _kill(pid)
        if not exited.wait(timeout=30):
            state["zygote_died"] = True
        for reader in readers:
            reader.join(timeout=5)
        if state.get("zygote_died"):
            zygote.close()
        else:
            _give_back(root, zygote)
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
    code = state["code"]
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


def _kill(pid: int) -> None:
    """SIGKILL the child's whole process group (it is its own session leader)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_all(root: Path, cells: list[dict], *, seed: int, hidden: bool, limits: Limits,
            new_zygote: bool = False) -> ChildResult:
    """Run every cell, restarting after a cell that timed out or crashed, without that cell.

    One hanging or process-killing cell then costs only the tests that need it. Finished test
    cells are not run again; code cells are (tests need their definitions). Each restart skips
    one more cell, so this ends.
    """
    merged = ChildResult()
    tests = {i for i, c in enumerate(cells) if c["kind"] == "test"}
    while True:
        skip = frozenset(merged.stopped) | (tests & set(merged.ends))
        result = run_job(root, cells, seed=seed, hidden=hidden, limits=limits, skip=skip,
                         new_zygote=new_zygote)
        merged.ends.update(result.ends)
        merged.detail = result.detail
        merged.unstarted |= result.unstarted
        if result.outcome == "done":
            return merged
        if result.running is None or result.running in merged.stopped:
            merged.outcome = result.outcome  # died outside any cell: nothing more to learn
            return merged
        merged.stopped[result.running] = result.outcome
