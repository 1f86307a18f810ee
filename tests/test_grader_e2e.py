"""End-to-end runs of the class grader over generated submission folders, asserting exact rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bookkit.grader.batch import grade_class
from bookkit.grader.check import check_file
from bookkit.grader.sandbox import Limits
from tests.grader_support import (
    CORRECT,
    NAME,
    ROOT,
    all_passed,
    fixture_exercises,
    rows,
    student_ipynb,
    student_text,
    write_student,
)

LIMITS = Limits(cell_timeout=5)
STUB = [None, None, None]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("e2e")
    subs = tmp / "submissions"
    write_student(subs, "correct", CORRECT)
    write_student(subs, "empty", STUB)
    write_student(subs, "partly", ["return a - b", CORRECT[1], None])
    write_student(subs, "lab", text=student_ipynb(CORRECT), name=f"{NAME}.ipynb")
    write_student(subs, "colab", text=student_ipynb(["return b + a", None, CORRECT[2]], colab=True),
                  name=f"{NAME}.ipynb")
    write_student(subs, "corrupt", text='{"cells": [', name=f"{NAME}.ipynb")
    write_student(subs, "wrongname", CORRECT, name=f"{NAME} (1).md")
    write_student(subs, "regions", text=student_text(CORRECT).replace("### END SOLUTION", "", 1))
    (subs / "absent").mkdir()
    # a notebook whose test cells and grade metadata were edited: only its regions count
    edited = json.loads(student_ipynb(["return 0", CORRECT[1], CORRECT[2]]))
    for cell in edited["cells"]:
        if "grade" in cell["metadata"]:
            cell["metadata"]["grade"]["points"] = 100
            cell["source"] = ["pass\n"]
    write_student(subs, "edited", text=json.dumps(edited), name=f"{NAME}.ipynb")
    out = tmp / "grades"
    grade_class(ROOT, subs, out, 2, LIMITS, progress=False, exercises=fixture_exercises())
    return subs, out


def test_exact_gradebook_rows(graded: tuple[Path, Path]) -> None:
    _, out = graded
    table = rows(out)
    invalid = [(t, 0, "invalid") for t, _, _ in all_passed()]
    missing = [(t, 0, "missing") for t, _, _ in all_passed()]
    assert table == {
        "correct": all_passed(),
        "empty": [("ex1_add", 0, "failed"), ("ex2_scale", 0, "failed"), ("ex3_safe_div", 0, "failed")],
        "partly": [("ex1_add", 0, "failed"), ("ex2_scale", 3, "passed"), ("ex3_safe_div", 0, "failed")],
        "lab": all_passed(),
        "colab": [("ex1_add", 2, "passed"), ("ex2_scale", 0, "failed"), ("ex3_safe_div", 1, "passed")],
        "corrupt": invalid,
        "wrongname": missing,
        "regions": invalid,
        "absent": missing,
        "edited": [("ex1_add", 0, "failed"), ("ex2_scale", 3, "passed"), ("ex3_safe_div", 1, "passed")],
    }
    summary = (out / "summary.csv").read_text(encoding="utf-8-sig").splitlines()
    assert summary[0] == f"student,total,max,{NAME}"
    assert "correct,6,6,6" in summary and "edited,4,6,4" in summary
    gradebook = (out / "gradebook.csv").read_text(encoding="utf-8")
    assert "not done yet (NotImplementedError)" in gradebook
    assert "'### BEGIN SOLUTION' inside another region" in gradebook


def test_feedback_is_bilingual_and_hides_hidden_tests(graded: tuple[Path, Path]) -> None:
    _, out = graded
    partly = (out / "feedback" / "partly.md").read_text(encoding="utf-8")
    assert "总分 / total: 3 / 6" in partly
    assert "- ✗ 1 加 2 / 1 plus 2" in partly and "期望 / expected: ` 3 `" in partly
    assert "得到 / got: ` -1 `" in partly
    assert "隐藏测试 / hidden tests: ✗ 未通过 / failed" in partly
    assert "10 plus 32" not in partly and "want" not in partly  # hidden checks: verdict only
    wrong = (out / "feedback" / "wrongname.md").read_text(encoding="utf-8")
    assert f"` {NAME} (1).md ` → 应为 / should be `{NAME}.md`?" in wrong
    corrupt = (out / "feedback" / "corrupt.md").read_text(encoding="utf-8")
    assert "bad JSON" in corrupt
    empty = (out / "feedback" / "empty.md").read_text(encoding="utf-8")  # stubs: what to do about them
    assert empty.count("not done yet (NotImplementedError): replace the exercise's `raise NotImplementedError(...)`") == 3, empty


def test_rerun_is_identical_and_resumes(graded: tuple[Path, Path], tmp_path: Path) -> None:
    subs, out = graded
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and ".cache" not in p.parts}
    # an interrupted run: outputs missing, one cache entry lost, a stray temp file left behind
    (out / "gradebook.csv").unlink()
    sorted((out / ".cache").iterdir())[0].unlink()
    grade_class(ROOT, subs, out, 2, LIMITS, progress=False, exercises=fixture_exercises())
    assert {p: p.read_bytes() for p in files} == files
    assert json.loads((out / "seeds.json").read_text())["correct"][NAME] > 0


def test_make_check_gives_the_same_visible_verdicts(tmp_path: Path) -> None:
    path = write_student(tmp_path, "me", ["return a - b", CORRECT[1], None])
    results, problem = check_file(ROOT, path, LIMITS)
    # no solutions/ file for the fixture: the student's own file is the template
    assert problem == "" and [(r.id, r.status) for r in results] == [
        ("ex1_add", "failed"), ("ex2_scale", "passed"), ("ex3_safe_div", "failed")]
    assert not results[1].hidden  # hidden tests do not run in make check
    assert results[0].visible[0].got.strip() == "-1"


def test_instructor_errors_exit_non_zero(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "bookkit", "grade-class", str(tmp_path / "nope"),
                          "--out", str(tmp_path / "o"), "--quiet"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and "no such folder" in run.stderr
    run = subprocess.run(["make", "--no-print-directory", "grade"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 2 and "usage: make grade SUBMISSIONS=<dir>" in run.stderr


def test_chapter_01_exercises(tmp_path: Path) -> None:
    """The real chapter-01 exercises: the reference gets full marks, the stub gets none."""
    from bookkit.exercises import strip_solutions
    from bookkit.grader.batch import load_exercises
    from bookkit.grader.bench import fill_regions

    exercises = [e for e in load_exercises(ROOT) if e.name == "01_tensors_exercises"]
    if not exercises:
        pytest.skip("no chapter-01 exercises")
    ex = exercises[0]
    subs = tmp_path / "subs"
    template = strip_solutions(ex.source)
    import textwrap
    for name, bodies in (("ref", [textwrap.dedent(r) for r in ex.program.reference]),
                         ("stub", [None] * len(ex.program.reference))):
        (subs / name).mkdir(parents=True)
        (subs / name / f"{ex.name}.md").write_text(fill_regions(template, bodies), encoding="utf-8")
    grade_class(ROOT, subs, tmp_path / "out", 2, Limits(cell_timeout=30), progress=False, exercises=exercises)
    table = rows(tmp_path / "out")
    assert all(status == "passed" for _, _, status in table["ref"]), table["ref"]
    assert all(points == 0 for _, points, _ in table["stub"])


def test_every_chapters_reference_solution_gets_full_marks(tmp_path: Path) -> None:
    """Every chapter's reference solutions, handed in as a student's, pass every graded cell in
    the sandbox: a check the grader cannot read (an array over its size limit) or library state
    that merely saving a model changes (copyreg's ``__slotnames__``) would cost a correct student
    points."""
    import textwrap

    from bookkit.exercises import strip_solutions
    from bookkit.grader.batch import load_exercises
    from bookkit.grader.bench import fill_regions

    exercises = load_exercises(ROOT)
    assert len(exercises) >= 12, [e.name for e in exercises]
    subs = tmp_path / "subs" / "ref"
    subs.mkdir(parents=True)
    for ex in exercises:
        bodies = [textwrap.dedent(r) for r in ex.program.reference]
        (subs / f"{ex.name}.md").write_text(fill_regions(strip_solutions(ex.source), bodies),
                                           encoding="utf-8")
    grade_class(ROOT, subs.parent, tmp_path / "out", 2, Limits(cell_timeout=60), progress=False,
                exercises=exercises)
    table = rows(tmp_path / "out")
    failed = [row for row in table["ref"] if row[2] != "passed"]
    assert not failed and len(table["ref"]) >= 60, failed


def test_an_unfinished_exercise_does_not_change_the_others_inputs(tmp_path: Path) -> None:
    """Chapter 05: each test draws from its own seed, so leaving exercise 1 undone costs only it
    (and the integration row, which runs all of the chapter's pieces together)."""
    import textwrap

    from bookkit.exercises import strip_solutions
    from bookkit.grader.batch import load_exercises
    from bookkit.grader.bench import fill_regions

    exercises = [e for e in load_exercises(ROOT) if e.name == "05_losses_exercises"]
    if not exercises:
        pytest.skip("no chapter-05 exercises")
    ex = exercises[0]
    bodies = [textwrap.dedent(r) for r in ex.program.reference]
    bodies[0] = None
    (tmp_path / "subs" / "late").mkdir(parents=True)
    (tmp_path / "subs" / "late" / f"{ex.name}.md").write_text(
        fill_regions(strip_solutions(ex.source), bodies), encoding="utf-8")
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 2, Limits(cell_timeout=30), progress=False,
                exercises=exercises)
    table = rows(tmp_path / "out")["late"]
    others = [status for name, _, status in table[1:] if name != "integration"]
    assert table[0][2] == "failed" and others and all(s == "passed" for s in others), table


def test_make_check_reports_each_failure_once_and_unfinished_work_is_not_an_error(tmp_path):
    """Issue 9: one table, each failure once under its row (bilingual expected/got), a returned
    tuple shown as a tuple, stubs only as "not done yet", and exit status 0 for unfinished work."""
    import re
    import subprocess
    import sys

    text = (ROOT / "exercises" / "02_autograd_exercises.md").read_text(encoding="utf-8")
    m = re.search(r"(:piece: unbroadcast\n\n.*?### BEGIN SOLUTION\n)(.*?)(\n\s*### END SOLUTION)",
                  text, re.S)
    text = text[:m.start(2)] + "    return (1, 2)" + text[m.end(2):]
    path = tmp_path / "02_autograd_exercises.md"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "bookkit", "grade", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert out.count("(3,4) back to (3,1): shapes differ") == 1, out
    assert "得到 / got:      (1,2)" in out
    assert "NotImplementedError: 请完成" not in out and "not done yet" in out
    assert out.count("ex1_unbroadcast") == 1
