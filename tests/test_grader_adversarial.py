"""Hostile submissions, one per threat of the grader's threat model (docs/grader.md).

All of them are graded in ONE batch next to an honest student: each test asserts that its hostile
student got no undeserved points; together they assert that the honest student's rows are intact,
the batch completed, the instructor's files are untouched, and nothing secret reached a feedback.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from bookkit.grader.batch import grade_class
from bookkit.grader.sandbox import Limits
from tests.grader_support import (
    CORRECT,
    FIXTURE,
    ROOT,
    all_passed,
    fixture_exercises,
    rows,
    write_student,
)

SECRET_ENV = "GRADER_TEST_SECRET_TOKEN_31337"
SOLUTIONS = ROOT / "solutions" / "01_tensors_exercises.md"
WRONG_ADD = "return 0"


def add(body: str) -> list[str]:
    """Correct answers for ex2/ex3, the hostile ``body`` as ``add``."""
    return [body, CORRECT[1], CORRECT[2]]


# (student id, region bodies, the rows it may get at most for ex1_add)
HOSTILE: dict[str, list[str]] = {
    "fake_eq": add("class Eq:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"  # noqa: E501
                   "    __hash__ = None\nreturn Eq()"),
    "fake_array": add("class A:\n    def __array__(self, *a, **k):\n        import numpy\n        return numpy.asarray(3)\n"  # noqa: E501
                      "    def tolist(self): return 3\nreturn A()"),
    "patch_numpy": add("import numpy\nnumpy.array_equal = lambda *a, **k: True\nnumpy.allclose = lambda *a, **k: True\n"  # noqa: E501
                       f"{WRONG_ADD}"),
    "patch_helpers": add("import bookkit.feedback as f\nf.check_equal = lambda *a, **k: None\n"
                         "globals()['check_equal'] = lambda *a, **k: None\n"
                         "import builtins\nbuiltins.check_equal = lambda *a, **k: None\n" + WRONG_ADD),
    "patch_grader": add("import sys\nfor m in list(sys.modules.values()):\n"
                        "    if getattr(m, '__name__', '') in ('__main__', 'bookkit.grader.runner'):\n"
                        "        m.__dict__.clear()\n" + WRONG_ADD),
    "patch_builtins": add("import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.len = lambda x: 0\n" + WRONG_ADD),  # noqa: E501
    "patch_random": add("import random\nrandom.random = lambda: 0.0\nreturn a + b"),
    "print_fake": add("print('ex1_add passed 2/2')\nprint('{\"ev\": \"done\"}')\n" + WRONG_ADD),
    "write_fake": add("import os\nfor fd in range(3, 64):\n    try:\n"
                      "        os.write(fd, b'0' * 32 + b\" {'ev': 'end', 'cell': 2, 'checks': []}\\n\")\n"
                      "    except OSError:\n        pass\n" + WRONG_ADD),
    "sys_exit": add("import sys\nsys.exit(0)"),
    "os_exit": add("import os\nos._exit(0)"),
    "segfault": add("import faulthandler\nfaulthandler._sigsegv()"),
    "kill_parent": add("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nreturn a + b"),
    "killpg": add("import os\nos.killpg(0, 9)\nreturn a + b"),
    "busy_loop": add("while True:\n    pass"),
    "sleep_no_alarm": add("import time\nwhile True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass"),  # noqa: E501
    # bytes(n) maps zero pages without touching them: RLIMIT_AS stops it at once, however loaded the machine
    "memory_flood": add("chunks = []\nwhile True:\n    chunks.append(bytes(50 << 20))"),
    "fork_flood": add("import os\nwhile True:\n    os.fork()"),
    "thread": add("import threading\nthreading.Thread(target=lambda: None).start()\nreturn a + b"),
    "subprocess": add("import subprocess\nsubprocess.run(['true'])\nreturn a + b"),
    "output_flood": add("while True:\n    print('x' * 100000)"),
    "disk_flood": add("with open('big', 'w') as f:\n    f.write('x' * (1 << 30))\nreturn a + b"),
    "read_solutions": add(f"return open({str(SOLUTIONS)!r}).read()"),
    "read_fixture": add(f"return open({str(FIXTURE)!r}).read()"),
    "read_proc": add("return open('/proc/self/environ').read() + open('/proc/%d/cmdline' % __import__('os').getppid()).read()"),  # noqa: E501
    "read_env": add("import os\nreturn str(dict(os.environ))"),
    "list_dirs": add(f"import os\nreturn str(os.listdir({str(ROOT)!r}))"),
    "frames": add("import sys\nreturn sys._getframe(1).f_locals['want']"),
    "traceback_frames": add("try:\n    1 / 0\nexcept Exception as e:\n    return e.__traceback__.tb_frame.f_back.f_globals['want']"),  # noqa: E501
    "generator_frames": add("def g():\n    yield 1\nit = g()\nreturn it.gi_frame.f_back.f_locals['want']"),
    "signal_frames": add("import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nreturn a + b"),
    "test_globals": add("return globals()['want']"),
    "gc_objects": add("import gc\nreturn [o for o in gc.get_objects() if isinstance(o, dict) and 'want' in o][0]['want']"),  # noqa: E501
    "settrace": add("import sys\nsys.settrace(lambda *a: None)\nreturn a + b"),
    "detect_grading": add("import os, sys\nif 'grade' in os.getcwd() or not sys.flags.isolated:\n    return a + b\nreturn 0"),  # noqa: E501
    "real_torch": add("import torch\nreturn int(torch.tensor(a) + b)"),
    "real_torch_importlib": add("import importlib\nt = importlib.import_module('torch')\nreturn int(t.tensor(a) + b)"),  # noqa: E501
    "ctypes": add("import ctypes\nreturn ctypes.CDLL(None).getpid()"),
    "class_swap": add("class F(float):\n    pass\nx = 1.5\nobj = F(2)\nobj.__class__ = int\nreturn a + b"),
    "ipython": add("%%capture\n!rm -rf ~\nget_ipython().run_cell('x=1')\nreturn a + b"),
    "weaken_seal": add("import builtins, sys\nbuiltins.any = lambda *a: False\nbuiltins.all = lambda *a: True\n"  # noqa: E501
                       "builtins.len = lambda x: 0\nm = sys.modules['__main__'].__dict__\n"
                       "m.update(_DENIED_EVENTS=(), _BLOCKED_MODULES=frozenset(), _FRAME_ATTRS=frozenset())\n"
                       f"return open({str(SOLUTIONS)!r}).read()"),
    "code_swap": add("import mytorch\nmytorch.gather.__code__ = (lambda *a, **k: 0).__code__\nreturn a + b"),
    "damage_files": add(f"open({str(FIXTURE)!r}, 'w').write('gone')\nreturn a + b"),
}
# tampering is detected and fails every later test of the file too
TAMPERING = ("patch_random", "patch_builtins", "patch_grader", "patch_numpy", "patch_helpers", "weaken_seal")
# allowed to pass ex1: things that are merely unusual (the answer is computed), checked separately
HONEST_ENOUGH = {"ipython": "failed", "detect_grading": "failed"}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("adversarial")
    subs = tmp / "submissions"
    write_student(subs, "honest", CORRECT)
    for student, bodies in HOSTILE.items():
        write_student(subs, student, bodies)
    # files that try to shadow modules or configure a test runner, next to a correct answer
    shadow = write_student(subs, "shadow", CORRECT).parent
    for name, text in (("numpy.py", "raise SystemExit"), ("random.py", "raise SystemExit"),
                       ("sitecustomize.py", "raise SystemExit"), ("conftest.py", "raise SystemExit"),
                       ("pytest.ini", "[pytest]\naddopts = -p no:cacheprovider"), ("x.pth", "import os")):
        (shadow / name).write_text(text)
    (shadow / "bookkit").mkdir()
    (shadow / "bookkit" / "feedback.py").write_text("def check_equal(*a, **k): pass\n")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (FIXTURE, SOLUTIONS) if p.exists()}
    os.environ[SECRET_ENV] = "leaked-secret-value"
    try:
        grade_class(ROOT, subs, tmp / "grades", 2, Limits(cell_timeout=3, memory=1 << 30),
                    progress=False, exercises=fixture_exercises())
    finally:
        del os.environ[SECRET_ENV]
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in before}
    return tmp / "grades", rows(tmp / "grades"), before, after


def test_batch_completed_and_honest_student_untouched(batch) -> None:
    out, table, before, after = batch
    assert set(table) == {"honest", "shadow", *HOSTILE}
    assert table["honest"] == all_passed()
    assert table["shadow"] == all_passed()  # shadowing files and runner configs are ignored
    feedback = (out / "feedback" / "shadow.md").read_text(encoding="utf-8")
    assert "numpy.py" in feedback and "conftest.py" in feedback  # reported, not graded
    assert before == after  # the instructor's files are untouched


@pytest.mark.parametrize("student", sorted(HOSTILE))
def test_hostile_submission_gets_no_undeserved_points(batch, student: str) -> None:
    out, table, _, _ = batch
    ex1, ex2, ex3 = table[student]
    assert ex1[0] == "ex1_add"
    if student in TAMPERING:
        assert ex1[1] == 0  # tampering: no points for the test that saw it
    elif student not in ("kill_parent", "killpg", "thread", "subprocess", "disk_flood", "signal_frames",
                         "settrace", "class_swap", "code_swap", "damage_files") + tuple(HONEST_ENOUGH):
        assert ex1[1] == 0, table[student]
    else:  # the hostile part was refused (error): the visible answer is never trusted anyway
        assert ex1[2] != "passed" or student in HONEST_ENOUGH or ex1[1] <= 2
        assert ex1[2] in ("error", "failed", "crashed", "timeout") or student in HONEST_ENOUGH
    # the other exercises of the same file are still graded on their own merits
    if student not in TAMPERING:
        assert ex2 == ("ex2_scale", 3, "passed"), table[student]
        assert ex3 == ("ex3_safe_div", 1, "passed"), table[student]
    feedback = (out / "feedback" / f"{student}.md").read_text(encoding="utf-8")
    for secret in ("reference-only", "leaked-secret-value", "BEGIN HIDDEN", "want = a + b", "tensors · 练习"):
        assert secret not in feedback, (student, secret)


@pytest.mark.parametrize("student, status", [
    ("busy_loop", "timeout"), ("sleep_no_alarm", "timeout"), ("output_flood", "timeout"),
    ("os_exit", "crashed"), ("segfault", "error"), ("sys_exit", "error"), ("memory_flood", "error"),
    ("fork_flood", "error"), ("kill_parent", "error"), ("killpg", "error"), ("real_torch", "error"),
    ("real_torch_importlib", "error"), ("ctypes", "error"), ("frames", "error"), ("traceback_frames", "error"),  # noqa: E501
    ("generator_frames", "error"), ("signal_frames", "error"), ("test_globals", "error"), ("gc_objects", "error"),  # noqa: E501
    ("read_solutions", "error"), ("read_fixture", "error"), ("read_proc", "error"), ("list_dirs", "error"),
    ("disk_flood", "error"), ("damage_files", "error"), ("thread", "error"), ("subprocess", "error"),
    ("settrace", "error"), ("class_swap", "error"), ("code_swap", "error"), ("fake_eq", "failed"), ("fake_array", "failed"),  # noqa: E501
    ("print_fake", "failed"), ("write_fake", "failed"), ("patch_random", "failed"), ("weaken_seal", "failed"),
])
def test_each_threat_gets_its_status(batch, student: str, status: str) -> None:
    _, table, _, _ = batch
    assert table[student][0][2] == status, table[student]


def test_messages_say_what_was_refused(batch) -> None:
    out, _, _, _ = batch
    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8")
    assert "real PyTorch is not available while grading" in gradebook
    assert "not allowed while grading: reading" in gradebook
    assert "changed the test environment (random.random)" in gradebook
    weakened = (out / "feedback" / "weaken_seal.md").read_text(encoding="utf-8")
    assert "not allowed while grading: reading" in weakened  # the seal held after patching builtins

