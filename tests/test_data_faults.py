"""Worker faults, as torch handles them: errors come back with the worker's traceback, dead
workers and timeouts raise instead of hanging, and no worker process outlives its loader."""
from __future__ import annotations

import gc
import multiprocessing
import os
import re
import signal
import time
from typing import Any

import pytest
import torch

import mytorch.utils.data as mdata

try:
    import psutil
except ImportError:  # pragma: no cover - psutil comes with the dev tools (ipykernel)
    psutil = None


class Faulty:
    """Sample 5 misbehaves in the way ``mode`` says; the others are their index."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> Any:
        if i == 5:
            if self.mode == "raise":
                raise ValueError("sample 5 is corrupt")
            if self.mode == "keyerror":
                raise KeyError("missing")
            if self.mode == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.mode == "segfault":
                os.kill(os.getpid(), signal.SIGSEGV)
            if self.mode == "exit":
                os._exit(3)
            if self.mode == "slow":
                time.sleep(5)
            if self.mode == "unpicklable":
                return lambda: 5
        return i


def _children() -> list:
    """This process's living children (multiprocessing's view, and the OS's when psutil is there)."""
    kids = multiprocessing.active_children()
    if psutil is not None:
        known = {k.pid for k in kids}
        for p in psutil.Process().children():
            try:
                if p.pid in known or p.status() == psutil.STATUS_ZOMBIE:
                    continue
                # multiprocessing's own helpers (a forkserver, the resource tracker) are not workers
                if any("forkserver" in a or "resource_tracker" in a for a in p.cmdline()):
                    continue
            except psutil.NoSuchProcess:
                continue
            kids.append(p)
    return kids


_BEFORE: set[int] = set()   # children already alive when the running test began


def _new_children() -> list:
    """The children this test started that are still alive."""
    return [p for p in _children() if p.pid not in _BEFORE]


def _new_workers() -> list:
    return [p for p in multiprocessing.active_children() if p.pid not in _BEFORE]


@pytest.fixture(autouse=True)
def no_orphans():
    """Every test here must leave no worker process behind. Children that other tests in this
    pytest worker left running (a kernel, a launcher) are not this test's: only new ones count."""
    _BEFORE.clear()
    _BEFORE.update(p.pid for p in _children())
    new = _new_children
    yield
    gc.collect()     # an exception kept by a test holds its loader through a reference cycle
    deadline = time.monotonic() + 3
    while new() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not new(), "worker processes outlived their loader"


def _error(lib: Any, mode: str, **kw: Any) -> BaseException:
    with pytest.raises(Exception) as info:
        for _ in lib.utils.data.DataLoader(Faulty(mode), batch_size=2, num_workers=2, **kw):
            pass
    err = info.value
    del info       # (the traceback holds this frame: no cycle back to the exception)
    if lib is torch:
        # torch's loader needs seconds to stop its workers after a fault (its joins time out);
        # what is tested here is mytorch's cleanup, so end torch's workers at once.
        for p in multiprocessing.active_children():
            p.terminate()
            p.join()
    return err


def test_worker_exception_has_torch_format_and_traceback() -> None:
    # torch 2.13 raises the same class with this head (not run live here: torch's loader takes
    # ~10 s to stop its workers after this error)
    mine = _error(__import__("mytorch"), "raise")
    assert type(mine) is ValueError
    head = "Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
    assert str(mine).startswith(head)
    assert str(mine).rstrip().endswith("ValueError: sample 5 is corrupt")
    assert 'raise ValueError("sample 5 is corrupt")' in str(mine)      # the worker's own line
    assert mine.__notes__ == ["(while loading the sample(s) at index [4, 5])"]


def test_worker_keyerror_stays_readable() -> None:
    err = _error(__import__("mytorch"), "keyerror")
    assert type(err) is KeyError
    assert str(err).startswith("Caught KeyError in DataLoader worker process 0.\nOriginal Traceback")


def test_loop_can_go_on_after_a_worker_error() -> None:
    # like torch: the error is one batch's; the loader keeps the others
    it = iter(mdata.DataLoader(Faulty("raise"), batch_size=2, num_workers=2))
    got = []
    for _ in range(4):
        try:
            got.append(next(it).tolist())
        except ValueError:
            got.append("error")
    assert got == [[0, 1], [2, 3], "error", [6, 7]]


def test_unpicklable_exception_and_batch() -> None:
    class LocalError(Exception):
        pass

    class Raises(mdata.Dataset):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> int:
            raise LocalError("defined inside a function")

    with pytest.raises(RuntimeError, match="Caught LocalError in DataLoader worker process 0"):
        list(mdata.DataLoader(Raises(), num_workers=1))
    with pytest.raises(RuntimeError, match="the batch could not be sent to the main process"):
        list(mdata.DataLoader(Faulty("unpicklable"), batch_size=None, num_workers=2, timeout=20))


def test_worker_init_fn_error() -> None:
    def init(worker_id: int) -> None:
        raise OSError(f"no GPU for worker {worker_id}")

    with pytest.raises(OSError, match="Caught OSError in DataLoader worker process 0"):
        list(mdata.DataLoader(Faulty("none"), num_workers=2, worker_init_fn=init))


@pytest.mark.parametrize("mode,cause", [("kill", r"is killed by signal: Killed\. "),
                                        ("segfault", r"is killed by signal: Segmentation fault\. "),
                                        ("exit", r"exited unexpectedly with exit code 3\. Details are lost")])
def test_dead_worker_raises_like_torch(mode: str, cause: str) -> None:
    import mytorch

    detail = r"DataLoader worker \(pid \d+\) " + cause
    err = _error(mytorch, mode)
    assert type(err) is RuntimeError, f"mytorch raised {err!r}"
    assert re.fullmatch(r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly", str(err)), str(err)
    assert re.match(detail, str(err.__cause__)), str(err.__cause__)
    # torch raises the same pair, or (when its SIGCHLD handler fires elsewhere) the detail alone
    try:
        theirs = _error(torch, mode)
    except RuntimeError as exc:  # torch's SIGCHLD handler raised outside the loop (a loaded machine)
        theirs = exc
    if isinstance(theirs, (ConnectionResetError, ConnectionRefusedError, EOFError)):
        # torch sends a batch as a file descriptor that the main process must fetch from the
        # worker; when the worker died first (a loaded machine), torch fails on that instead
        # (the connection refused, reset, or closed mid-message: EOFError).
        # mytorch's batches travel pickled in the message (worker.py's _Pickled): no such race.
        return
    assert type(theirs) is RuntimeError, f"torch raised {theirs!r}"
    assert re.match(detail, str(theirs)) or re.match(detail, str(theirs.__cause__)), str(theirs)


def test_timeout_fires_like_torch() -> None:
    import mytorch

    for lib in (mytorch, torch):
        t0 = time.monotonic()
        err = _error(lib, "slow", timeout=0.3)
        assert type(err) is RuntimeError and str(err) == "DataLoader timed out after 0.3 seconds"
        assert time.monotonic() - t0 < 4            # it did not wait for the slow sample


def test_break_leaves_no_workers() -> None:
    loader = mdata.DataLoader(Faulty("none"), batch_size=1, num_workers=2)
    for _ in loader:
        assert len(_new_workers()) == 2
        break
    assert not _new_children()


def test_deleting_the_iterator_or_loader_stops_workers() -> None:
    it = iter(mdata.DataLoader(Faulty("none"), batch_size=1, num_workers=2))
    next(it)
    del it
    assert not _new_children()
    loader = mdata.DataLoader(Faulty("none"), batch_size=1, num_workers=2, persistent_workers=True)
    list(loader)
    assert len(_new_workers()) == 2          # kept between epochs
    del loader
    assert not _new_children()


def test_exhausted_epoch_stops_workers() -> None:
    assert len(list(mdata.DataLoader(Faulty("none"), batch_size=3, num_workers=2))) == 3
    assert not _new_children()


def test_orphaned_worker_exits_when_main_process_dies(tmp_path: Any) -> None:
    # A main process killed with SIGKILL runs no cleanup: its workers notice and exit by themselves.
    script = tmp_path / "main.py"
    script.write_text(
        "import os, sys, time\n"
        "import mytorch.utils.data as d\n"
        "from mytorch.utils.data._utils import worker\n"
        "worker.MP_STATUS_CHECK_INTERVAL = 0.1\n"
        "class Slow(d.Dataset):\n"
        "    def __len__(self): return 100\n"
        "    def __getitem__(self, i): time.sleep(0.05); return i\n"
        "it = iter(d.DataLoader(Slow(), num_workers=2))\n"
        "next(it)\n"
        "print(' '.join(str(w.pid) for w in it._workers), flush=True)\n"
        "time.sleep(60)\n")
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            cwd=os.getcwd())
    pids = [int(p) for p in proc.stdout.readline().split()]   # type: ignore[union-attr]
    assert len(pids) == 2
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in pids if _alive(p)]
    assert not alive


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    if psutil is not None:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    return True
