"""``make check``: students run the visible tests of their own ``exercises/`` files.

Same sandbox, same recorders and the same comparison as ``make grade``, so a visible test gets the
same verdict in both; only the hidden tests are left out (they are not even sent to the child) and
there is no reference run (each check is judged against the expected value computed in the
student's own run). A syntax error is shown as in the feedback of ``make grade``: the error, the
cell and line of the student's notebook, the line with a caret. What the child reports is printed
with control characters escaped.
"""

from __future__ import annotations

from pathlib import Path

from bookkit.grader.protocol import Reference, TestResult, checks_of, judge
from bookkit.grader.records import printable
from bookkit.grader.regions import RegionError, build_program
from bookkit.grader.report import _LABELS
from bookkit.grader.sandbox import Limits, run_all
from bookkit.grader.submissions import read_submission
from bookkit.notebook import read_notebook
from bookkit.verdict import STUB_MESSAGE


def check_file(root: Path, path: Path, limits: Limits) -> tuple[list[TestResult], str]:
    """The visible-test verdicts of one student file, and a file-level problem ('' when none)."""
    solutions = root / "solutions" / (path.stem + ".md")
    program = build_program(read_notebook(solutions if solutions.is_file() else path))
    sub = read_submission(path)
    if sub.status != "ok":
        return [TestResult(t.id, t.points, sub.status, sub.message) for t in program.tests], sub.message
    try:
        cells = program.assemble(list(sub.regions), hidden=False)
    except RegionError as exc:
        message = f"{exc}: keep the '### BEGIN SOLUTION' / '### END SOLUTION' lines"
        return [TestResult(t.id, t.points, "invalid", message) for t in program.tests], message
    run = run_all(root, cells, seed=0, hidden=False, limits=limits)
    own = Reference(run.ends, unstable={(cell, check[1]) for cell, end in run.ends.items()
                                        for check in checks_of(end)})
    return judge(program, own, run, hidden=False, cells=cells), ""


def table(rows: list[tuple[str, TestResult]], file_problems: dict[str, str] | None = None) -> str:
    """The verdict table with a points total; each failure appears once, in its row, followed by
    what its visible checks expected and got. A file that could not be read is explained once,
    above the table, and its rows only point there."""
    file_problems = file_problems or {}
    head = ("练习 / exercise", "测试 / test", "分 / pts", "结果 / verdict")
    widths = [max(len(r[i]) for r in [head] + [(n, t.id, f"{t.points}/{t.max_points}")
                                                for n, t in rows]) for i in range(3)]

    def line(cols: tuple) -> str:
        return "  ".join(str(cols[i]).ljust(widths[i]) for i in range(3)) + "  " + cols[3]

    text = [line(head), "-" * (sum(widths) + 24)]
    for name, t in rows:
        verdict = _LABELS.get(t.status, t.status)
        if name in file_problems:
            verdict += "：见上 / see above"
        details = visible_lines(t) if t.status != "passed" and name not in file_problems else []
        if t.status != "passed" and t.message and not details and name not in file_problems:
            said = printable(t.message, one_line=True)
            verdict += f": {said if t.message == STUB_MESSAGE else said[:120]}"  # what to do, whole
        text.append(line((name, t.id, f"{t.points}/{t.max_points}", verdict)))
        if details and t.id == "integration" and t.message:  # which pieces to make your own first
            details = [printable(f"→ {t.message}")] + details
        text += ["    " + x for x in details]
    text.append(f"总分 / total: {sum(t.points for _, t in rows)}/{sum(t.max_points for _, t in rows)}")
    return "\n".join(text)


def visible_lines(t: TestResult) -> list[str]:
    """The failed visible checks of a test, expected vs got (nothing more for an exercise that is
    simply not done yet: the verdict says so)."""
    out = []
    for line in t.visible:
        if not line.ok:
            out += [f"✗ {line.what_zh} / {line.what_en}: {line.why}",
                    f"    期望 / expected: {line.expected}", f"    得到 / got:      {line.got}"]
    if t.error and not t.error.startswith("NotImplementedError"):
        first, *rest = t.error.splitlines() or [""]
        out += [f"✗ {first}", *rest[:20]]
    return [printable(line) for line in out]
