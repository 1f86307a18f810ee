"""The sandbox's zygote: children forked from it are fresh, separate, and hold nothing of it; it
dies with the parent, takes its running child with it, and is replaced when it dies."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from bookkit.grader import sandbox
from bookkit.grader.sandbox import Limits, run_job

ROOT = Path(__file__).resolve().parent.parent
LIMITS = Limits(cell_timeout=20)


def probe(source: str) -> list:
    """Run ``source`` (which sets ``value``) in a child; return the recorded ``value``."""
    cells = [{"kind": "code", "source": source},
             {"kind": "test", "parts": [["visible", "check_equal(value, value, 'v', 'v')"]]}]
    result = run_job(ROOT, cells, seed=1, hidden=True, limits=LIMITS)
    assert result.outcome == "done", result.detail
    end = result.ends[1]
    assert end["error"] is None, end
    _, _, text, _ = end["checks"][0][5]
    return eval(text)  # canonical text of a builtin value, made by the runner


def test_child_holds_only_its_own_descriptors() -> None:
    opened = probe("import os\n"
                   "def is_open(fd):\n"
                   "    try:\n        os.fstat(fd)\n        return True\n"
                   "    except OSError:\n        return False\n"
                   "value = [fd for fd in range(64) if is_open(fd)]")
    assert opened[:3] == [0, 1, 2] and len(opened) == 4, opened  # stdio and the records pipe


def test_blocked_modules_of_the_zygote_are_forgotten() -> None:
    assert probe("import sys\nvalue = sorted(m for m in ('socket', '_socket', 'resource') "
                 "if m in sys.modules)") == []


def test_each_job_is_a_new_process_in_its_own_pid_namespace() -> None:
    # PID 1 of a namespace of its own; its session leader (the jail's middle process) is outside it
    assert probe("import os\nvalue = [os.getpid(), os.getppid(), os.getsid(0)]") == [1, 0, 0]


def test_state_does_not_leak_between_children() -> None:
    assert probe("import mytorch\nmytorch.leak = 1\nvalue = 1") == 1
    assert probe("import mytorch\nvalue = hasattr(mytorch, 'leak')") is False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_zygote_kills_its_child_and_exits_when_the_parent_goes() -> None:
    zygote = sandbox._Zygote(ROOT)
    _, read_ok, denied = sandbox._trusted_paths(ROOT)
    home = zygote.home
    job = {"cells": [{"kind": "code", "source": "import time\ntime.sleep(600)"}], "seed": 1,
           "hidden": True, "skip": [], "nonce": "n" * 32, "read_ok": read_ok,
           "read_denied": denied, "cwd": home, "limits": {}}
    records_r, records_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        child = zygote.fork(json.dumps(job).encode(), records_w, err_w)
        os.close(records_w)
        os.close(err_w)
        assert _alive(child)
        zygote.sock.close()  # as if the grader had died
        zygote.lines.close()
        deadline = time.monotonic() + 20
        while (_alive(child) or zygote.proc.poll() is None) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the sleeping child outlived its zygote's parent"
        assert zygote.proc.poll() is not None, "the zygote outlived its parent"
    finally:
        for fd in (records_r, err_r):
            os.close(fd)
        zygote.close()


def test_a_dead_zygote_is_replaced() -> None:
    assert probe("value = 1") == 1
    with sandbox._IDLE_LOCK:
        idle = [z for zs in sandbox._IDLE.values() for z in zs]
    for zygote in idle:
        os.killpg(zygote.proc.pid, signal.SIGKILL)
        zygote.proc.wait()
    assert probe("value = 2") == 2  # no crash for the student: a new zygote took over


def test_forbid_in_a_graded_test_catches_every_route_and_restores() -> None:
    student = ("import mytorch\nfrom mytorch import gather as g\n"
               "def via_module(x, i): return mytorch.gather(x, 0, i)\n"
               "def via_import(x, i): return g(x, 0, i)\n"
               "def via_method(x, i): return x.gather(0, i)\n")
    test = ("from bookkit.feedback import forbid\nimport mytorch\n"
            "x, i = mytorch.arange(4.0), mytorch.tensor([1, 0])\nmessages = []\n"
            "for f in (via_module, via_import, via_method):\n"
            "    with forbid(mytorch.gather):\n"
            "        try:\n            f(x, i)\n            messages.append('called')\n"
            "        except RuntimeError as e:\n            messages.append(str(e).split(' / ')[1])\n"
            "check_equal(messages, ['this exercise does not allow calling gather: build it from simpler "
            "operations'] * 3, 'a', 'a')\n"
            "check_equal(via_method(x, i).tolist(), [1.0, 0.0], 'b', 'b')\n")
    cells = [{"kind": "code", "source": student}, {"kind": "test", "parts": [["visible", test]]}]
    result = run_job(ROOT, cells, seed=1, hidden=True, limits=LIMITS)
    end = result.ends[1]
    assert end["error"] is None and end["tamper"] is None, end
    from bookkit.grader.protocol import compare
    assert all(compare(kind, got, exp, opts)[0] for kind, _, _, _, _, got, exp, opts in end["checks"]), end


def test_student_code_cannot_swap_function_code() -> None:
    cells = [{"kind": "code", "source": "import mytorch\nmytorch.gather.__code__ = (lambda: 0).__code__"}]
    result = run_job(ROOT, cells, seed=1, hidden=True, limits=LIMITS)
    assert tuple(result.ends[0]["error"]) == ("PermissionError", "not allowed while grading: setting __code__")


def test_a_child_that_cannot_start_is_not_cached(tmp_path, monkeypatch) -> None:
    """When no process can be started, the row says so and the next run grades it for real."""
    from bookkit.grader.batch import grade_class
    from tests.grader_support import CORRECT, all_passed, fixture_exercises, rows, write_student

    write_student(tmp_path / "subs", "alice", CORRECT)

    def broken(*args, **kwargs):
        raise sandbox.ZygoteDied("fork: Resource temporarily unavailable")

    with monkeypatch.context() as patch:
        patch.setattr(sandbox, "_fork", broken)
        grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, LIMITS, progress=False,
                    exercises=fixture_exercises())
    gradebook = (tmp_path / "out" / "gradebook.csv").read_text(encoding="utf-8")
    assert "not the student's fault" in gradebook and "make grade` again" in gradebook
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, LIMITS, progress=False,
                exercises=fixture_exercises())
    assert rows(tmp_path / "out")["alice"] == all_passed()
