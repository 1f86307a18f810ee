"""Issue 21's attacks on the class as a whole (items 2-7), graded in one batch between control
students who hand in the reference solutions.

The whole batch runs with the Python seal switched off (``audit=False``), as if every student had
defeated it: a student's process may read its own memory and frames, take the runner's ``emit``
and nonce, and send any record. Each attack must earn nothing, stop no one and leak nothing, and
the controls keep full marks:

* a visible-only (feedback) run never holds a hidden test: a student who reads every test cell
  from the runner's memory and raises them as an error message finds no hidden part there;
* a student that sends a valid ``begin`` record again and again (the heartbeat) is an error at
  once, and a cell that never ends costs its TIMEOUT; no run of the class exceeds its cap;
* a lone surrogate or terminal escape codes in an error message, a file name carrying OSC 52 and
  cursor moves, a student id of HTML: shown escaped everywhere (terminal, feedback, gradebook);
* a symlinked ``exercises/`` (to the solutions, to a classmate's folder) or a hard link to the
  solutions earns nothing and says why;
* a folder named like another student's hashed feedback name gets a file of its own.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import time
from pathlib import Path

import pytest

from bookkit.grader import legs as legs_module
from bookkit.grader import records, sandbox
from bookkit.grader.batch import grade_class
from bookkit.grader.sandbox import Limits
from tests.grader_support import (
    CORRECT,
    FIXTURE,
    NAME,
    ROOT,
    all_passed,
    fixture_exercises,
    rows,
    write_student,
)

TIMEOUT = 2.0
HTML_ID = "<img src=x onerror=alert(1)>"
CLASHING = "a_b-" + hashlib.sha256(b"a b").hexdigest()[:10]  # the hashed name of the student "a b"
ESCAPES = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[1;1H\x9b31m"  # OSC 52 clipboard write, clear, cursor, C1 CSI
FIND_MAIN = ("import sys\nf = sys._getframe()\nwhile f is not None and 'emit' not in f.f_locals:\n"
             "    f = f.f_back\n")
# every hidden part still held by the runner, raised as an error message (shown in the feedback)
READ_TESTS = (FIND_MAIN + "found = []\nfor c in f.f_locals['cells']:\n"
              "    if c and c.get('kind') == 'test':\n"
              "        found += [src for part, src in c['parts'] if part == 'hidden']\n"
              "raise ValueError('HIDDEN:' + ' || '.join(found))")
# a valid begin record of its own cell, every 0.2 s, with the runner's emit (nonce included)
HEARTBEAT = (FIND_MAIN + "import time\nemit, index = f.f_locals['emit'], f.f_locals['index']\n"
             "while True:\n    emit({'ev': 'begin', 'cell': index})\n    time.sleep(0.2)")

STUDENTS: dict[str, list[str]] = {
    "control": CORRECT,
    "zz_control": CORRECT,  # graded last: anything left behind by the others would show here
    "read_tests": [READ_TESTS, CORRECT[1], CORRECT[2]],
    "heartbeat": [HEARTBEAT, CORRECT[1], CORRECT[2]],
    "forever": ["while True:\n    pass", CORRECT[1], CORRECT[2]],
    "surrogate": ['raise ValueError("\\ud800")', CORRECT[1], CORRECT[2]],
    "escapes": [f"raise ValueError({ESCAPES!r})", CORRECT[1], CORRECT[2]],
    HTML_ID: ["return 0", CORRECT[1], CORRECT[2]],
    "a b": CORRECT,
    CLASHING: ["return 0", CORRECT[1], CORRECT[2]],
    "syntax": ["return (a + b", CORRECT[1], CORRECT[2]],
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("class_attacks")
    subs = tmp / "submissions"
    for student, bodies in STUDENTS.items():
        write_student(subs, student, bodies)
    (subs / "escapes" / f"notes{ESCAPES}.md").write_text("x")  # a stray file, named to take over a terminal
    solutions = tmp / "instructor"  # the reference solutions, as the instructor keeps them
    solutions.mkdir()
    (solutions / f"{NAME}.md").write_text(FIXTURE.read_text(encoding="utf-8"), encoding="utf-8")
    write_student(subs / "classmate", "exercises", CORRECT)  # the repository's layout
    classmate = subs / "classmate" / "exercises"
    for student, target in (("link_solutions", solutions), ("link_classmate", classmate)):
        (subs / student).mkdir()
        (subs / student / "exercises").symlink_to(target, target_is_directory=True)
    (subs / "hard_link").mkdir()
    os.link(solutions / f"{NAME}.md", subs / "hard_link" / f"{NAME}.md")
    runs: list[tuple[float, float, list[dict], bool]] = []  # (seconds, cap, cells, hidden) of each child

    def sealless_timed_run_job(root, cells, **kwargs):
        """Every child of the batch (reference runs and each leg of a student's run), the seal off."""
        kwargs["audit"] = False
        cap = records.RecordClock(len(cells), frozenset(kwargs.get("skip", ())), TIMEOUT, 0.0).cap
        start = time.monotonic()
        try:
            return real_run_job(root, cells, **kwargs)
        finally:
            runs.append((time.monotonic() - start, cap, cells, kwargs["hidden"]))

    real_run_job = sandbox.run_job
    stderr = io.StringIO()
    start = time.monotonic()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stderr(stderr):
        # run_all and run_legs call sandbox.run_job; a student's first leg calls legs.run_job
        patch.setattr(sandbox, "run_job", sealless_timed_run_job)
        patch.setattr(legs_module, "run_job", sealless_timed_run_job)
        grade_class(ROOT, subs, tmp / "grades", 2, Limits(cell_timeout=TIMEOUT), progress=False,
                    exercises=fixture_exercises())
    seconds = time.monotonic() - start
    return subs, tmp / "grades", rows(tmp / "grades"), stderr.getvalue(), runs, seconds


def feedback_of(out: Path, student: str) -> str:
    """The feedback file whose heading names ``student`` (exactly one)."""
    from bookkit.grader.report import md_text

    heading = f"# 成绩反馈 / Grading feedback: {md_text(student)}\n"
    found = [p for p in (out / "feedback").iterdir() if p.read_text(encoding="utf-8").startswith(heading)]
    assert len(found) == 1, (student, [p.name for p in found])
    return found[0].read_text(encoding="utf-8")


def test_controls_keep_full_marks_and_every_student_has_rows(graded) -> None:
    subs, out, table, _, _, _ = graded
    for student in ("control", "zz_control", "a b", "classmate"):
        assert table[student] == all_passed(), (student, table[student])
    assert set(table) == {p.name for p in subs.iterdir()}
    assert len(list((out / "feedback").iterdir())) == len(table)


def test_the_feedback_run_never_holds_a_hidden_test(graded) -> None:
    _, out, table, _, runs, _ = graded
    assert table["read_tests"][0] == ("ex1_add", 0, "error")
    feedback = feedback_of(out, "read_tests")
    assert "HIDDEN:" in feedback  # the attack ran in the feedback's run, and found nothing there
    for hidden in ("random inputs", "随机输入", "plus {b}", "want"):
        assert hidden not in feedback, hidden
    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8-sig")
    assert "random inputs" in gradebook  # the scoring run held them (the instructor's file only)
    visible_runs = [cells for _, _, cells, hidden in runs if not hidden]
    assert visible_runs and not any(part == "hidden" for cells in visible_runs
                                    for c in cells if c["kind"] == "test" for part, _ in c["parts"])


def test_a_heartbeat_is_an_error_at_once_and_no_run_exceeds_its_cap(graded) -> None:
    _, _, table, _, runs, _ = graded
    assert [status for _, _, status in table["heartbeat"]] == ["error"] * 3
    assert table["forever"] == [("ex1_add", 0, "timeout"), *all_passed()[1:]]
    for seconds, cap, _, _ in runs:
        assert seconds < cap + 10, (seconds, cap)  # 10 s: start-up of a fresh zygote on a loaded machine


def test_a_lone_surrogate_stops_no_one(graded) -> None:
    _, out, table, _, _, _ = graded
    assert table["surrogate"] == [("ex1_add", 0, "error"), *all_passed()[1:]]
    assert "ValueError: \\ud800" in feedback_of(out, "surrogate")
    assert "ValueError: \\ud800" in (out / "gradebook.csv").read_text(encoding="utf-8-sig")


def test_escape_codes_are_shown_escaped_everywhere(graded) -> None:
    _, out, table, stderr, _, _ = graded
    assert table["escapes"][0] == ("ex1_add", 0, "error")
    texts = {"stderr": stderr, "gradebook": (out / "gradebook.csv").read_text(encoding="utf-8-sig"),
             "summary": (out / "summary.csv").read_text(encoding="utf-8-sig")}
    texts.update({p.name: p.read_text(encoding="utf-8") for p in (out / "feedback").iterdir()})
    for name, text in texts.items():
        assert not any(c in text for c in "\x1b\x07\x9b"), name
    assert "notes\\x1b]52;c;ZXZpbA==\\x07" in stderr  # the stray file is listed, escaped
    assert "\\x1b[2J" in feedback_of(out, "escapes")


def test_a_student_id_of_html_is_text_in_the_feedback(graded) -> None:
    _, out, table, _, _, _ = graded
    assert table[HTML_ID][0] == ("ex1_add", 0, "failed")
    feedback = feedback_of(out, HTML_ID)
    assert "<img" not in feedback and "&lt;img src=x onerror=alert(1)&gt;" in feedback


def test_a_name_like_anothers_hashed_name_gets_its_own_feedback(graded) -> None:
    _, out, table, _, _, _ = graded
    assert table["a b"] == all_passed() and table[CLASHING][0][1] == 0
    assert "total: 6 / 6" in feedback_of(out, "a b") and "total: 4 / 6" in feedback_of(out, CLASHING)


@pytest.mark.parametrize("student, why", [
    ("link_solutions", "symbolic link"), ("link_classmate", "symbolic link"), ("hard_link", "hard link"),
])
def test_linked_files_and_folders_earn_nothing(graded, student: str, why: str) -> None:
    _, out, table, _, _, _ = graded
    assert [s for _, _, s in table[student]] == ["invalid"] * 3, table[student]
    assert why in feedback_of(out, student)


def test_a_syntax_error_is_shown_as_one_with_the_students_cell_and_line(graded) -> None:
    subs, out, table, _, _, _ = graded
    from bookkit.notebook import parse_myst

    assert table["syntax"] == [("ex1_add", 0, "error"), *all_passed()[1:]]
    with open(out / "gradebook.csv", encoding="utf-8-sig", newline="") as f:
        message = next(r["message"] for r in csv.DictReader(f) if r["student"] == "syntax")
    assert message == "SyntaxError: '(' was never closed (cell 4, line 3)", message
    cells = parse_myst((subs / "syntax" / f"{NAME}.md").read_text(encoding="utf-8")).cells
    assert cells[4 - 1].source.splitlines()[3 - 1].strip() == "return (a + b"  # where the student sees it
    feedback = feedback_of(out, "syntax")
    assert message in feedback and "NameError" not in feedback
    details = feedback[feedback.index("## 详情 / Details"):]
    block = details[details.index(message):].splitlines()
    assert block[1].strip() == "return (a + b" and block[2].strip() == "^"
    assert block[2].index("^") - block[1].index("return") == len("return ")


def test_make_check_shows_the_same_syntax_error(graded, tmp_path: Path) -> None:
    from bookkit.grader.check import check_file, table

    path = write_student(tmp_path, "me", ["return (a + b", CORRECT[1], CORRECT[2]])
    results, problem = check_file(ROOT, path, Limits(cell_timeout=10))
    assert problem == "" and results[0].status == "error"
    shown = table([(path.name, r) for r in results])
    assert "SyntaxError: '(' was never closed (cell 4, line 3)" in shown and "NameError" not in shown
    assert "return (a + b" in shown


def test_csv_files_open_in_excel_with_chinese_names_intact(graded, tmp_path: Path) -> None:
    _, out, _, _, _, _ = graded
    for name in ("gradebook.csv", "summary.csv"):
        assert (out / name).read_bytes().startswith(b"\xef\xbb\xbf"), name
        with open(out / name, encoding="utf-8-sig", newline="") as f:
            assert next(csv.reader(f))[0] == "student"
    write_student(tmp_path / "subs", "张三", CORRECT)
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, Limits(cell_timeout=10), progress=False,
                exercises=fixture_exercises())
    assert rows(tmp_path / "out")["张三"] == all_passed()
    assert "张三,6,6,6" in (tmp_path / "out" / "summary.csv").read_text(encoding="utf-8-sig")


# ---------------------------------------------------------------- deadlines at the run level


def _forger(windows: int, pause: float) -> str:
    """A cell that forges ``end`` of itself, then ``begin``/``end`` of the next cells in their
    proper order, each after ``pause`` seconds: every record valid, every cell's timer fresh."""
    fields = "'checks': [], 'error': None, 'part': None, 'tamper': None, 'violation': None"
    return (FIND_MAIN + "import time\nemit, index = f.f_locals['emit'], f.f_locals['index']\n"
            f"emit({{'ev': 'end', 'cell': index, {fields}}})\n"
            f"for c in range(index + 1, index + 1 + {windows}):\n"
            f"    time.sleep({pause})\n    emit({{'ev': 'begin', 'cell': c}})\n"
            f"    time.sleep({pause})\n    emit({{'ev': 'end', 'cell': c, {fields}}})\n"
            "while True:\n    time.sleep(1)")


def test_valid_records_in_order_cannot_hold_a_child_past_its_cap(monkeypatch) -> None:
    """Each window stays under the cell timeout, and there are more windows than the cap allows."""
    monkeypatch.setattr(records, "STARTUP", 1.0)
    cells = [{"kind": "code", "source": _forger(8, 0.7)}] + [
        {"kind": "test", "parts": [["visible", "check_equal(1, 1, 'a', 'a')"]], "seed": 0}] * 8
    start = time.monotonic()
    result = sandbox.run_all(ROOT, cells, seed=1, hidden=True, limits=Limits(cell_timeout=1.0), audit=False)
    seconds = time.monotonic() - start
    cap = 1.0 + 9 * 1.0
    assert seconds < cap + 5, seconds  # without the cap: 16 windows of 0.7 s, then forever
    assert result.outcome == "timeout" or result.malformed


def test_a_repeated_begin_ends_the_child_at_once() -> None:
    cells = [{"kind": "code", "source": HEARTBEAT},
             {"kind": "test", "parts": [["visible", "check_equal(1, 1, 'a', 'a')"]], "seed": 0}]
    start = time.monotonic()
    result = sandbox.run_job(ROOT, cells, seed=1, hidden=True, limits=Limits(cell_timeout=30), audit=False)
    assert result.malformed.startswith("cell 0 began again") and time.monotonic() - start < 20
