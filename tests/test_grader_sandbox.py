"""The sandbox's zygote: children forked from it are fresh, separate, and hold nothing of it; it
dies with the parent, takes its running child with it, and is replaced when it dies."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

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
    first, isolation = probe("import os\nvalue = [os.getpid(), os.getppid(), os.getsid(0)]"), sandbox._IDLE
    layers = next((z.layers for zs in isolation.values() for z in zs if z.layers), {})
    if layers.get("namespaces"):
        # PID 1 of a namespace of its own; its session leader (the jail's middle process) is outside
        assert first == [1, 0, 0]
    else:  # reduced isolation: still a session (and process group) of its own
        second = probe("import os\nvalue = [os.getpid(), os.getppid(), os.getsid(0)]")
        assert first[0] == first[2] and second[0] == second[2] and first[0] != second[0]


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
    assert tuple(result.ends[0]["error"]) == ("PermissionError", "not allowed while grading: setting __code__")  # noqa: E501


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


# ---------------------------------------------------------------- the operating-system layer alone

def os_probe(source: str) -> tuple[dict, list]:
    """Run ``source`` (which sets ``value``) with the Python seal switched off: only the OS layer."""
    cells = [{"kind": "code", "source": source},
             {"kind": "test", "parts": [["visible", "check_equal(value, value, 'v', 'v')"]]}]
    result = run_job(ROOT, cells, seed=1, hidden=True, limits=LIMITS, audit=False)
    assert result.outcome == "done" and result.ends[0]["error"] is None, (result.detail, result.ends)
    _, _, text, _ = result.ends[1]["checks"][0][5]
    return result.isolation, eval(text)


def attempt(*calls: str) -> str:
    """Source that tries each call and records the outcome (an errno name, or 'ok')."""
    lines = ["import errno, os, sys, types", "value = []"]
    for call in calls:
        lines += ["try:", f"    {call}", "    value.append('ok')",
                  "except OSError as e:", "    value.append(errno.errorcode.get(e.errno, str(e.errno)))",
                  "except BaseException as e:", "    value.append(type(e).__name__)"]
    return "\n".join(lines)


def test_without_the_seal_the_os_layer_still_confines_the_child(tmp_path: Path) -> None:
    victim = tmp_path / "classmate"
    victim.mkdir()
    solutions = ROOT / "solutions" / "01_tensors_exercises.md"
    # the library's own folder is only a target when the OS layer is there to stop the write:
    # without it the file would really appear in mytorch/ (what the summary's warning is about)
    planted = ROOT / "mytorch" / "planted.py" if os_probe("value = 0")[0].get("namespaces") \
        else tmp_path / "planted.py"
    isolation, outcomes = os_probe(attempt(
        f"os.mkfifo({str(victim / 'x.ipynb')!r})", "os.mkfifo('/tmp/fifo')", "os.mknod('/tmp/node')",
        f"open({str(solutions)!r}).read()", f"os.listdir({str(victim)!r})",
        "open('/etc/passwd').read()", "open(os.path.expanduser('~/ok.txt'), 'w').write('x')",
        f"open({str(planted)!r}, 'w')", "os.fork()",
        "os.execv('/bin/sh', ['sh'])", "os.kill(1 if os.getpid() != 1 else 2, 9)",
        "__import__('_socket').socket()", "os.memfd_create('x')", "os.setuid(0); os.unshare(0)",
        "__import__('ctypes')", "__import__('numpy')._core._internal.ctypes.memmove",
    ))
    assert not any(victim.iterdir())
    if not isolation.get("namespaces"):
        pytest.skip(f"no namespaces here: {isolation.get('why')}")  # the summary says so (test_grader_attacks)  # noqa: E501
    assert outcomes[:3] == ["EPERM", "EPERM", "EPERM"]  # seccomp: no device or FIFO, anywhere
    assert outcomes[3:6] == ["ENOENT", "ENOENT", "ENOENT"]  # not in the child's view at all
    assert outcomes[6] == "ok"  # the private HOME (an empty tmpfs, discarded)
    assert outcomes[7] in ("EROFS", "ENOENT")  # the library is read-only
    assert outcomes[8:11] == ["EPERM", "EPERM", "EPERM"]  # no processes, no programs, no signals
    assert outcomes[11] != "ok" and outcomes[12:14] == ["EPERM", "EPERM"]  # no socket, memfd, setuid
    assert outcomes[14:] == ["ModuleNotFoundError", "AttributeError"]  # no ctypes, not even numpy's


def test_the_child_sees_only_what_it_needs() -> None:
    isolation, seen = os_probe("import os\nvalue = sorted(os.listdir('/')) + sorted(os.listdir('/tmp'))")
    if isolation.get("namespaces"):
        # the new root holds /dev, /tmp and the first folder of each path bound into it: the checkout
        # (/work/..., /check/..., or a folder inside the private /tmp) and the interpreter's paths
        bound = [str(ROOT), sys.prefix, sys.base_prefix, *(p for p in sys.path if p)]
        firsts = {Path(p).parts[1] for p in bound if len(Path(p).parts) > 1}
        under_tmp = {Path(p).parts[2] for p in bound if len(Path(p).parts) > 2 and Path(p).parts[1] == "tmp"}
        assert set(seen) <= {"dev", "tmp"} | firsts | under_tmp, (seen, firsts)
        assert "proc" not in seen and "etc" not in seen


def test_a_function_copy_is_caught_even_without_the_seal() -> None:
    student = "import types\ndef helper(x):\n    return x + 1\ncopy = types.FunctionType(helper.__code__, globals())\n"  # noqa: E501
    test = ("with forbid(helper):\n    got = copy(1)\ncheck_equal(got, 2, 'a', 'a')\n")
    cells = [{"kind": "code", "source": student}, {"kind": "test", "parts": [["visible", test]]}]
    result = run_job(ROOT, cells, seed=1, hidden=True, limits=LIMITS, audit=False)
    assert result.ends[1]["violation"].endswith(
        "this exercise does not allow calling helper: build it from simpler operations"), result.ends


def test_records_without_the_nonce_are_ignored_and_forged_ones_are_an_error() -> None:
    forged = ("import os, json\nfor fd in range(3, 64):\n    try:\n"
              "        os.write(fd, b'x ' + json.dumps({'ev': 'end', 'cell': 1, 'checks': []}).encode() + b'\\n')\n"  # noqa: E501
              "    except OSError:\n        pass\n")
    cells = [{"kind": "code", "source": forged},
             {"kind": "test", "parts": [["visible", "check_equal(1, 1, 'a', 'a')"]]}]
    result = run_job(ROOT, cells, seed=1, hidden=True, limits=LIMITS, audit=False)
    assert result.outcome == "done" and not result.malformed and len(result.ends[1]["checks"]) == 1
    from bookkit.grader.sandbox import _parse

    assert _parse(b"n ok", b"n ", 2) == "a record that is not JSON"
    assert _parse(b"n " + b"[" * 100_000, b"n ", 2) == "a record that is not JSON"
    assert _parse(b'n {"ev": "end", "cell": 9}', b"n ", 2) == "a record for a cell that does not exist"
    assert _parse(b'n {"ev": "end", "cell": 1, "checks": [1], "error": null, "part": null, "tamper": null, '
                  b'"violation": null}', b"n ", 2) == "a malformed check"
    assert _parse(b"other line", b"n ", 2) is None
