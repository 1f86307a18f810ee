"""Issue 10's classes of attack on `make grade`, each graded in one batch next to honest students.

Every hostile student here got points, leaked, planted files or stopped the whole class on the
grader before issue 10 (see docs/grader.md, "Threat model"). The batch asserts each one gets
nothing it did not earn, that the honest students' rows are exact, and that the run always writes
its gradebook, summary and feedback.
"""

from __future__ import annotations

import csv
import os
import stat
import unicodedata
from pathlib import Path

import pytest

from bookkit.exercises import strip_solutions
from bookkit.grader import sandbox
from bookkit.grader.batch import Exercise, grade_class
from bookkit.grader.bench import fill_regions
from bookkit.grader.regions import build_program
from bookkit.grader.sandbox import Limits
from bookkit.notebook import parse_myst
from tests.grader_support import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "grader" / "02_attack_exercises.md"
NAME = FIXTURE.stem
APPLY = "return [f(x) for x in xs]"
TOTAL = "result = 0.0\nfor x in xs:\n    result += x\nreturn result"
WORD = "return text.split()[0]"
ALL = [("ex1_apply", 2, "passed"), ("ex2_total", 3, "passed"), ("ex3_first_word", 1, "passed")]
SECRETS = ("nonce", "emit", "out_fd", "flags", "verify", "swapping", "set_code", "audit", "profile",
           "collected", "trusted", "checks", "record", "where", "probes", "forbidden", "recorders")


def remove_tree(top: Path) -> None:
    """Delete a folder tree of any depth, without recursion."""
    folders, stack = [], [str(top)]
    while stack:
        folder = stack.pop()
        folders.append(folder)
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


def exercises() -> list[Exercise]:
    source = FIXTURE.read_text(encoding="utf-8")
    return [Exercise(NAME, source, build_program(parse_myst(source)))]


def text(bodies: list[str]) -> str:
    return fill_regions(strip_solutions(FIXTURE.read_text(encoding="utf-8")), bodies)


def write(folder: Path, bodies: list[str], name: str = f"{NAME}.md") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text(bodies), encoding="utf-8")
    return folder / name


ATTACKS: dict[str, list[str]] = {
    # the test's lambda hands over the test namespace: read the expected value from it
    "lambda_want": ["g = f.__globals__\nif len(xs) <= 2:\n    return [f(x) for x in xs]\n"
                    "return list(g['want']) if isinstance(g.get('want'), list) else [0] * len(xs)", TOTAL, WORD],  # noqa: E501
    # … or wrap the test's check so that it records the expected value as the student's
    "lambda_forge": ["g = f.__globals__\nreal = g['check_equal']\n"
                     "def forged(got, expected=None, *a, **k):\n    return real(expected, expected, *a, **k)\n"  # noqa: E501
                     "g['check_equal'] = forged\nreturn [f(x) for x in xs] if len(xs) <= 2 else [0] * len(xs)",  # noqa: E501
                     TOTAL, WORD],
    # walk every closure reachable from the test namespace, list what is there (shown as "got")
    "closure_walk": ["g = f.__globals__\nseen, names, todo = set(), set(), [v for v in list(g.values()) if callable(v)]\n"  # noqa: E501
                     "while todo:\n    fn = todo.pop()\n    if id(fn) in seen:\n        continue\n    seen.add(id(fn))\n"  # noqa: E501
                     "    code = getattr(fn, '__code__', None)\n    cells = getattr(fn, '__closure__', None) or ()\n"  # noqa: E501
                     "    for name, cell in zip(getattr(code, 'co_freevars', ()), cells):\n"
                     "        names.add(name)\n        try:\n            value = cell.cell_contents\n"
                     "        except ValueError:\n            continue\n"
                     "        if callable(value):\n            todo.append(value)\n"
                     "        if isinstance(value, list) and value in ([], [False]):\n"
                     "            cell.cell_contents = [True]\n"
                     f"return ' '.join(sorted(n for n in names if n in {SECRETS!r})) or 'nothing'", TOTAL, WORD],  # noqa: E501
    # through a recorder's __globals__ to the seal's own lists: empty them, then walk up the frames
    "runner_globals": ["g = f.__globals__\nr = g['check_equal'].__globals__\n"
                       "r.update(_DENIED_EVENTS=(), _BLOCKED_MODULES=frozenset(), _FRAME_ATTRS=frozenset())\n"
                       "import sys\ntry:\n    want = sys._getframe(1).f_locals.get('want')\nexcept Exception:\n"  # noqa: E501
                       "    want = None\nif isinstance(want, list):\n    return list(want)\n"
                       "return [f(x) for x in xs] if len(xs) <= 2 else [0] * len(xs)", TOTAL, WORD],
    # a copy of the forbidden function made before the block
    "copy_forbidden": [APPLY, "import types\nif not hasattr(total, 'copy'):\n"
                       "    total.copy = types.FunctionType(fast_total.__code__, fast_total.__globals__)\n"
                       "return total.copy(xs)", WORD],
    # memory access through numpy's reference to ctypes (no audit event for memmove)
    "numpy_ctypes": [APPLY, TOTAL, "import numpy as np\nct = getattr(np._core._internal, 'ctypes', None) or "
                     "np.ctypeslib.ctypes\nbuf = (ct.c_char * 8)()\nct.memmove(buf, id(text), 8)\n" + WORD],
    # an honest syntax error in a solution cell, then a test that fails: used to crash the judge
    "syntax_error": [APPLY, TOTAL, "return (text.split()[0]"],
    # an error message that a spreadsheet would run as a formula
    "formula": [APPLY, TOTAL, "raise ValueError('=HYPERLINK(\"http://evil.example\",\"x\")')"],
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("attacks")
    subs = tmp / "submissions"
    write(subs / "honest", [APPLY, TOTAL, WORD])
    write(subs / "layout" / "exercises", [APPLY, TOTAL, WORD])  # the repository's layout
    for student, bodies in ATTACKS.items():
        write(subs / student, bodies)
    victim = subs / "zz_victim"  # graded last: a planted file would be found
    write(victim, [APPLY, TOTAL, WORD])
    write(subs / "mkfifo", [APPLY, TOTAL, "import os\nfor path in ("
                            f"{str(victim / (NAME + '.ipynb'))!r}, {str(victim / 'x.md')!r}, "
                            "os.path.expanduser('~/planted'), '/tmp/planted-by-grader-test', "
                            "'/dev/shm/planted-by-grader-test'):\n    for make in (os.mkfifo, os.mknod):\n"
                            "        try:\n            make(path)\n        except OSError:\n            pass\n" + WORD])  # noqa: E501
    # files that used to stop the whole class, each next to a correct answer in another student
    (subs / "deep_json").mkdir()
    (subs / "deep_json" / f"{NAME}.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    (subs / "random_bytes").mkdir()
    (subs / "random_bytes" / f"{NAME}.md").write_bytes(bytes(range(256)) * 64)
    (subs / "huge").mkdir()
    (subs / "huge" / f"{NAME}.md").write_text(text([APPLY, TOTAL, WORD]) + "#" * (6 << 20))
    deep = write(subs / "deep_tree", [APPLY, TOTAL, WORD]).parent
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1100):  # deeper than PATH_MAX allows to name at once: walk down by descriptor
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("lost.md", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)
    odd = write(subs / "odd_names", [APPLY, TOTAL, WORD]).parent
    (odd / os.fsdecode(b"\xff\xfe-latin1-\xe9.md")).write_text("x")
    write(subs / "=cmd|'-C calc'!A0", [APPLY, TOTAL, WORD])
    for name in ("n-x y", "n-x_y", unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")):  # noqa: E501
        write(subs / name, [APPLY, TOTAL, WORD])
    out = tmp / "grades"
    old = os.umask(0o022)
    try:
        grade_class(ROOT, subs, out, 2, Limits(cell_timeout=5), progress=False, exercises=exercises())
    finally:
        os.umask(old)
    table: dict[str, list[tuple[str, int, str]]] = {}
    with open(out / "gradebook.csv", encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            table.setdefault(row["student"], []).append((row["test"], int(row["points"]), row["status"]))
    yield subs, out, table
    remove_tree(deep)  # shutil.rmtree (and so pytest's clean-up) recurses once per level
    for leftover in ("/tmp/planted-by-grader-test", "/dev/shm/planted-by-grader-test"):
        if os.path.lexists(leftover):
            os.unlink(leftover)


def test_honest_students_and_the_exercises_folder(batch) -> None:
    _, _, table = batch
    for student in ("honest", "layout", "zz_victim", "deep_tree", "odd_names", "n-x y", "n-x_y"):
        assert table[student] == ALL, (student, table[student])


@pytest.mark.parametrize("student", ["lambda_want", "lambda_forge", "runner_globals"])
def test_test_namespace_reached_through_a_lambda_earns_nothing(batch, student: str) -> None:
    _, _, table = batch
    assert table[student][0][:2] == ("ex1_apply", 0), table[student]


def test_nothing_worth_attacking_is_reachable_from_the_test(batch) -> None:
    _, out, table = batch
    feedback = next((out / "feedback").glob("closure_walk*.md")).read_text(encoding="utf-8")
    got = next(line for line in feedback.splitlines() if "得到 / got" in line)
    assert "nothing" in got, got  # no runner secret (nonce, seal, tamper check…) in any closure
    assert table["closure_walk"][1:] == ALL[1:]  # switching every flag it found changed nothing


def test_a_copy_of_a_forbidden_function_is_caught(batch) -> None:
    _, _, table = batch
    assert table["copy_forbidden"][1][:2] == ("ex2_total", 0), table["copy_forbidden"]


def test_numpy_ctypes_gives_no_memory_access(batch) -> None:
    _, _, table = batch
    assert table["numpy_ctypes"][2][:2] == ("ex3_first_word", 0), table["numpy_ctypes"]


def test_no_file_is_planted_anywhere(batch) -> None:
    subs, _, table = batch
    assert table["zz_victim"] == ALL
    assert sorted(p.name for p in (subs / "zz_victim").iterdir()) == [f"{NAME}.md"]
    assert not any(os.path.lexists(p) for p in ("/tmp/planted-by-grader-test", "/dev/shm/planted-by-grader-test"))  # noqa: E501


@pytest.mark.parametrize("student, status", [
    ("deep_json", "invalid"), ("random_bytes", "invalid"), ("huge", "invalid"),
])
def test_broken_files_are_that_students_rows(batch, student: str, status: str) -> None:
    _, _, table = batch
    assert {s for _, _, s in table[student]} == {status}, table[student]


def test_an_honest_syntax_error_is_one_students_error(batch) -> None:
    _, _, table = batch
    assert table["syntax_error"][:2] == ALL[:2]
    assert table["syntax_error"][2][1:] == (0, "error")


def test_csv_cells_never_start_a_formula(batch) -> None:
    _, out, _ = batch
    for name in ("gradebook.csv", "summary.csv"):
        with open(out / name, encoding="utf-8-sig", newline="") as f:
            for row in csv.reader(f):
                assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row), row
    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8")
    assert "'=cmd|'-C calc'!A0" in gradebook and "'=HYPERLINK" not in gradebook.replace("ValueError: =", "")


def test_one_feedback_file_per_student_without_collisions(batch) -> None:
    subs, out, _ = batch
    files = sorted((out / "feedback").iterdir())
    assert len(files) == len(list(subs.iterdir()))
    for name in ("n-x y", "n-x_y", unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")):  # noqa: E501
        mine = [f for f in files if f"Grading feedback: {name}\n" in f.read_text(encoding="utf-8")]
        assert len(mine) == 1, (name, [f.name for f in files])


def test_outputs_are_readable_per_the_umask(batch) -> None:
    _, out, _ = batch
    for path in (out / "gradebook.csv", out / "summary.csv", next((out / "feedback").iterdir())):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


def test_misplaced_files_are_listed_and_odd_trees_cost_nothing(batch) -> None:
    _, out, _ = batch
    odd = (out / "feedback" / "odd_names.md").read_text(encoding="utf-8")
    assert "\\xff\\xfe-latin1-\\xe9.md" in odd
    deep = (out / "feedback" / "deep_tree.md").read_text(encoding="utf-8")
    assert "not listed" in deep


def test_the_terminal_summary_lists_misplaced_files_and_isolation(tmp_path: Path, capsys) -> None:
    from bookkit.grader.batch import summary_lines

    text_ = summary_lines({"namespaces": True, "seccomp": True, "why": ""}, {"bob": [("notes.md", "")]})
    assert text_.splitlines()[0].startswith("isolation: full") and "bob/notes.md" in text_
    reduced = summary_lines({"namespaces": False, "seccomp": True, "why": "no user namespaces (EPERM)"}, {})
    assert reduced.startswith("warning: isolation reduced (no user namespaces (EPERM))")


def test_grading_without_namespaces_still_runs_and_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    write(tmp_path / "subs" / "alice", [APPLY, TOTAL, WORD])
    sandbox.shutdown()  # new zygotes read the switch
    monkeypatch.setenv("BOOKKIT_GRADER_NO_NAMESPACES", "1")
    try:
        grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, Limits(cell_timeout=5), progress=False,
                    exercises=exercises())
    finally:
        sandbox.shutdown()
    err = capsys.readouterr().err
    assert "warning: isolation reduced (namespaces switched off" in err, err
    assert (tmp_path / "out" / "gradebook.csv").read_text().count("passed") == 3
