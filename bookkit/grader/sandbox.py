"""Run one job in a fresh, isolated, resource-limited child (``runner.py``) and collect its records.

Children are forked by a *zygote*: a ``python -I -S runner.py`` process (no PYTHON* variables, no
user site, no script folder on ``sys.path``; the runner sets ``sys.path`` itself, with a scrubbed
environment) that imported numpy and mytorch once and never runs student code. A fork is a fresh
process with those imports done, in milliseconds instead of a quarter of a second. Each child then
isolates itself (``jail.py``: namespaces, a read-only view of what it needs, private /tmp, no
capabilities, seccomp) and sets rlimits before any student code runs. The parent enforces the wall
clock per cell and kills the child's whole process group when a cell runs too long, when the child
is done, and when anything goes wrong. Its stdout is discarded; stderr keeps a short tail for the
instructor; records come only through a private pipe, must carry the job's nonce, and are checked
against a strict schema: anything else makes the run the student's ``error``, never the grader's.
"""

from __future__ import annotations

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

from bookkit.grader.records import RecordClock, clean, parse_record

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
    malformed: str = ""  # the child sent a record that breaks the protocol (the student's error)
    isolation: dict = field(default_factory=dict)  # which OS layers were in force (from the zygote)
    elapsed: float = 0.0  # seconds from the fork to the end (counted against run_all's cap)
    durations: dict[int, float] = field(default_factory=dict)  # cell → seconds it ran (finished cells)


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
    """The whole environment of the zygote and its children: nothing of the instructor's.

    One BLAS thread (a child may not start threads); mytorch's malloc tuning off (it needs ctypes,
    which the zygote keeps out of every module a student can reach).
    """
    return {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg", "MYTORCH_MALLOC_REUSE": "0"}


#: Children of a grader started as root run as one of these users (uid = gid), one per zygote:
#: numbers far above any real account's, so a child owns no file and may signal no process of
#: the instructor's, or of a classmate's child (which runs as another of them).
CHILD_IDS = range(0x7FFE0000, 0x7FFF0000)
_next_id = [0]


def _child_user() -> list[int] | None:
    """(uid, gid) for the children of a new zygote, when running as root."""
    if os.getuid() != 0:
        return None
    with _IDLE_LOCK:
        number = CHILD_IDS[_next_id[0] % len(CHILD_IDS)]
        _next_id[0] += 1
    return [number, number]


class IsolationMissing(Exception):
    """The kernel's isolation (user namespaces and seccomp) is not available, and grading was
    asked to refuse to run without it (``require_isolation``)."""


_REQUIRE = [False]


def require_isolation(on: bool = True) -> None:
    """Refuse to start any child without both namespaces and seccomp (``make grade`` does, unless
    the instructor passes ``UNSAFE_NO_SANDBOX=1``); ``make check`` on a student's laptop does not."""
    _REQUIRE[0] = on


def _refuse(layers: dict) -> None:
    if _REQUIRE[0] and not (layers.get("namespaces") and layers.get("seccomp")):
        raise IsolationMissing(
            f"grading refused: the students' code would run without the kernel's isolation "
            f"({layers.get('why') or 'unknown reason'}). Without user namespaces and seccomp a "
            "student's code can read every file the child's user can (the solutions and the "
            "library's reference pieces included), use the network and see other processes. Enable "
            "unprivileged user namespaces and install libseccomp (pip install pyseccomp), or pass "
            "UNSAFE_NO_SANDBOX=1 (make grade) / --unsafe-no-sandbox (bookkit grade-class) to grade "
            "without them (docs/grader.md says what is lost).")


def _jail_spec(root: Path, home: str) -> dict:
    """What the zygote's children see: the stdlib, mytorch/ and bookkit/ (site-packages: only what
    the zygote imported, added by the zygote), never real torch."""
    stdlib = [p for p in sys.path if p and "site-packages" not in p and Path(p).resolve() != root
              and p.startswith(sys.base_prefix) and os.path.isdir(p)]
    site = [p for p in sys.path if p.endswith("site-packages")]
    hide = [str(Path(s) / name) for s in site for name in ("torch", "torchgen", "functorch")]
    return {"base": os.path.join(home, "root"), "user": _child_user(),
            "binds": [*stdlib, str(root / "mytorch"), str(root / "bookkit")],
            "hide": hide, "no_namespaces": os.environ.get("BOOKKIT_GRADER_NO_NAMESPACES") == "1"}


class ZygoteDied(Exception):
    """The zygote stopped answering; the job counts as crashed and a new zygote is started."""


class _Zygote:
    """A ``python -I -S runner.py`` process that imported numpy and mytorch once and forks one
    child per job (see ``runner.serve``). Used by one job at a time."""

    def __init__(self, root: Path) -> None:
        sys_path, _, _ = _trusted_paths(root)
        self.home = tempfile.mkdtemp(prefix="grade-zygote-")
        os.chmod(self.home, 0o711)  # the children's user passes through it to their new root
        spec = _jail_spec(root, self.home)
        self.user = spec["user"]
        self.layers: dict | None = None
        self.sock, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(RUNNER), str(theirs.fileno()), json.dumps(sys_path),
                 json.dumps(spec)],
                cwd=self.home, env=_env(self.home), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(theirs.fileno(),),
                start_new_session=True, close_fds=True)
        finally:
            theirs.close()
        self.lines = self.sock.makefile("rb")

    def fork(self, job: bytes, records_w: int, stderr_w: int) -> int:
        """Hand ``job`` and the two pipes' write ends to a new child; return its pid."""
        try:
            self.sock.settimeout(ZYGOTE_START)  # the first job waits for the zygote's imports
            if self.layers is None:
                ready = self.lines.readline()
                if not ready.startswith(b"READY "):
                    raise ZygoteDied(ready.decode("utf-8", "replace").strip() or "the zygote did not start")
                self.layers = json.loads(ready[6:])
            _refuse(self.layers)
            socket.send_fds(self.sock, [b"%016d" % len(job)], [records_w, stderr_w])
            self.sock.sendall(job)
            line = self.lines.readline()
            self.sock.settimeout(None)
        except (OSError, ValueError) as exc:
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


def _fork(root: Path, job: bytes, records_w: int, stderr_w: int, new: bool,
          cwd: str | None = None) -> tuple[_Zygote, int]:
    """A child for ``job`` from an idle zygote, or from a new one when that one has died.
    ``cwd`` (the child's own folder) is handed to the zygote's unprivileged user, if it has one."""
    for attempt in range(2):
        try:
            zygote = _take_zygote(root, new or attempt > 0)
        except OSError as exc:  # no process could be started (fork limits, a broken interpreter)
            raise ZygoteDied(f"starting Python failed: {exc}") from None
        if cwd is not None and zygote.user:
            os.chown(cwd, *zygote.user)
        try:
            return zygote, zygote.fork(job, records_w, stderr_w)
        except ZygoteDied:
            zygote.close()
            if attempt:
                raise
        except IsolationMissing:
            zygote.close()
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
            skip: frozenset[int] = frozenset(), new_zygote: bool = False, audit: bool = True,
            budget: float | None = None, references: dict | None = None,
            cell_timeouts: dict[int, float] | None = None, order: list[int] | None = None) -> ChildResult:
    """Run ``cells`` (without ``skip``) in a sandboxed child; return its records.

    Deadlines (``records.RecordClock``): each cell ``limits.cell_timeout`` from its own ``begin``,
    the child at most start-up + runnable cells × timeout, or ``budget`` seconds if that is less;
    ``cell_timeouts`` may give some cells a shorter deadline of their own; ``order`` (every cell
    index once) the order the child runs them in, ascending if not given.
    A record out of order (a repeated ``begin``, say) is malformed and ends the child at once.

    ``root`` holds the ``mytorch/`` the child imports (a stub tree for a student's run:
    ``stubtree.py``); ``references``: the sources of the stubbed pieces the child may run as
    the library's own (those its tests are not about).

    Test cells carry their own ``seed`` (the random inputs of one test never depend on another);
    ``seed`` seeds the code cells.

    ``new_zygote``: fork from a zygote started for this job, so that everything a process draws
    at start-up (address layout, string hashing) differs from the other zygotes' children.
    """
    if order is not None and sorted(order) != list(range(len(cells))):
        raise ValueError(f"order must hold each of the {len(cells)} cell indices once, not {order}")
    root = root.resolve()
    sys_path, read_ok, denied = _trusted_paths(root)
    nonce = secrets.token_hex(16)
    runnable = sum(1 for i, c in enumerate(cells) if i not in skip)
    cpu = int(limits.cell_timeout * max(runnable, 1)) + 10
    rlimits = {"RLIMIT_AS": limits.memory, "RLIMIT_CPU": cpu, "RLIMIT_FSIZE": 1 << 20,
               "RLIMIT_NOFILE": 64, "RLIMIT_CORE": 0}
    # no new processes at all (root's children run as an unprivileged user, for whom it holds)
    rlimits["RLIMIT_NPROC"] = 0
    result = ChildResult()
    with tempfile.TemporaryDirectory(prefix="grade-") as tmp:
        job = {"cells": cells, "seed": seed, "hidden": hidden, "skip": sorted(skip),
               "audit": audit, "nonce": nonce, "read_ok": read_ok, "read_denied": denied, "cwd": tmp,
               "limits": rlimits, "references": references or {},
               "order": list(range(len(cells))) if order is None else list(order)}
        read_fd, write_fd = os.pipe()
        err_r, err_w = os.pipe()
        try:
            zygote, pid = _fork(root, json.dumps(job).encode(), write_fd, err_w, new_zygote, tmp)
        except IsolationMissing:
            os.close(read_fd)
            os.close(err_r)
            raise
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
        result.isolation = dict(zygote.layers or {})
        forked = time.monotonic()
        clock = RecordClock(len(cells), frozenset(skip), limits.cell_timeout, forked,
                            None if budget is None else forked + budget, timeouts=cell_timeouts,
                            order=order)
        stderr_tail = bytearray()
        records: list[dict] = []
        state: dict = {"garbled": False, "code": None, "malformed": ""}
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
                        record = _parse(bytes(line), prefix, len(cells))
                        line.clear()
                        start = end + 1
                        if isinstance(record, dict):
                            record = clock.accept(record, time.monotonic()) or record
                        if isinstance(record, str):  # breaks the protocol: nothing more is read
                            state["malformed"] = state["malformed"] or record
                            _kill(pid)
                            got_record.set()
                            return
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
        while not exited.is_set() and not state["malformed"]:
            got_record.wait(timeout=0.05)
            got_record.clear()
            if time.monotonic() > clock.expires():
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
    if state["malformed"]:
        result.malformed = state["malformed"]
        records = [r for r in records if r.get("ev") == "done"]
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
    result.detail = f"{why}; stderr: {clean(bytes(stderr_tail).decode('utf-8', 'replace')[-800:])}"
    result.elapsed = time.monotonic() - forked
    result.durations = {cell: took for cell, took in clock.durations.items() if cell in result.ends}
    return result


_parse = parse_record  # (the records a child may send: records.py)


def _kill(pid: int) -> None:
    """SIGKILL the child's whole process group (it is its own session leader)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_all(root: Path, cells: list[dict], *, seed: int, hidden: bool, limits: Limits,
            new_zygote: bool = False, skip: frozenset[int] = frozenset(), audit: bool = True,
            references: dict | None = None) -> ChildResult:
    """Run every cell (but ``skip``), restarting after a cell that timed out or crashed, without it.

    One hanging or process-killing cell then costs only the tests that need it. Finished test
    cells are not run again; code cells are (tests need their definitions). Each restart skips
    one more cell, so this ends.
    """
    merged = ChildResult()
    tests = {i for i, c in enumerate(cells) if c["kind"] == "test"}
    # the hard cap of the whole run, restarts included: no student holds the class longer
    budget = RecordClock(len(cells), frozenset(skip), limits.cell_timeout, 0.0).cap
    while True:
        skipped = frozenset(skip) | frozenset(merged.stopped) | (tests & set(merged.ends))
        result = run_job(root, cells, seed=seed, hidden=hidden, limits=limits, skip=skipped,
                         new_zygote=new_zygote, budget=budget, audit=audit, references=references)
        budget -= result.elapsed
        merged.ends.update(result.ends)
        merged.durations.update(result.durations)
        merged.detail = result.detail
        merged.unstarted |= result.unstarted
        merged.isolation = merged.isolation or result.isolation
        if result.malformed:  # a broken protocol: nothing this child said can be used
            merged.malformed, merged.ends = result.malformed, {}
            return merged
        if result.outcome == "done":
            return merged
        if result.running is None or result.running in merged.stopped:
            merged.outcome = result.outcome  # died outside any cell: nothing more to learn
            return merged
        merged.stopped[result.running] = result.outcome
        if budget <= 0:  # the cap ran out: the cells not reached are timed out too
            merged.outcome = "timeout"
            merged.detail = f"the run reached its time limit; {merged.detail}"
            return merged


@dataclass(frozen=True)
class Leg:
    """The test cells one child runs, the tree it imports mytorch from, and the references it gets."""

    root: Path
    cells: frozenset[int]
    references: dict = field(default_factory=dict, hash=False, compare=False)


def run_legs(legs: list[Leg], cells: list[dict], *, seed: int, hidden: bool, limits: Limits,
             skip: frozenset[int] = frozenset(), audit: bool = True) -> ChildResult:
    """Run each leg's test cells in children of its own (every code cell in each), merged into one
    result. A code cell that timed out or crashed in one leg is skipped in the next ones: a
    student's endless loop costs one ``TIMEOUT``, not one per leg."""
    merged = ChildResult()
    tests = {i for i, c in enumerate(cells) if c["kind"] == "test"}
    stopped_code: set[int] = set()
    for leg in legs:
        own = leg.cells & tests
        if not own or own <= set(skip):
            continue
        result = run_all(leg.root, cells, seed=seed, hidden=hidden, limits=limits, audit=audit,
                         skip=frozenset(skip) | frozenset(tests - own) | frozenset(stopped_code),
                         references=leg.references)
        merged.unstarted |= result.unstarted
        merged.isolation = merged.isolation or result.isolation
        merged.detail = result.detail or merged.detail
        if result.malformed:  # a broken protocol: nothing this student's children said is used
            merged.malformed, merged.ends = result.malformed, {}
            return merged
        merged.ends.update(result.ends)
        merged.durations.update(result.durations)
        merged.stopped.update(result.stopped)
        stopped_code |= {i for i in result.stopped if cells[i]["kind"] == "code"}
        if result.outcome != "done" and merged.outcome == "done":
            merged.outcome = result.outcome
    return merged
