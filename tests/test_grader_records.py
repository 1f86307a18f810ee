"""Fast unit tests of issues 21 and 23 on the grader's parent side: the order and deadlines of a
child's records, text from students made harmless, feedback names, paths that are not followed,
the feedback's layout, cached results, and parsing in threads."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import threading
from pathlib import Path

import pytest

from bookkit.grader import protocol, regions, report, submissions
from bookkit.grader.records import RecordClock, clean, parse_record, printable
from tests.grader_support import CORRECT, NAME, fixture_exercises, student_text

# ---------------------------------------------------------------- order and deadlines


def begin(cell: int) -> dict:
    return {"ev": "begin", "cell": cell}


def end(cell: int) -> dict:
    return {"ev": "end", "cell": cell, "checks": [], "error": None, "part": None, "tamper": None,
            "violation": None}


def test_records_in_the_runners_order_are_accepted() -> None:
    clock = RecordClock(4, frozenset({1}), 10.0, now=0.0)
    for now, record in enumerate([begin(0), end(0), begin(2), end(2), begin(3), end(3), {"ev": "done"}]):
        assert clock.accept(record, float(now)) == "", record
    assert clock.done


@pytest.mark.parametrize("sequence, reason", [
    ([begin(0), begin(0)], "cell 0 began again"),  # the heartbeat
    ([begin(0), end(0), begin(0)], "out of order"),
    ([begin(2)], "out of order"),  # cell 1 skipped by the child, not by the parent
    ([begin(0), end(1)], "not running"),
    ([begin(0), {"ev": "done"}], "before its cells"),
    ([begin(0), end(0), begin(1), end(1), begin(2), end(2), {"ev": "done"}, begin(0)], "after the end"),
])
def test_a_record_out_of_order_is_malformed_and_moves_no_deadline(sequence: list[dict], reason: str) -> None:
    clock = RecordClock(3, frozenset(), 10.0, now=0.0)
    for record in sequence[:-1]:
        assert clock.accept(record, 1.0) == ""
    before = clock.expires()
    assert reason in clock.accept(sequence[-1], 5.0)
    assert clock.expires() == before


def test_each_cell_has_its_own_deadline_and_the_child_a_hard_cap() -> None:
    clock = RecordClock(3, frozenset(), 10.0, now=0.0, startup=30.0)
    assert clock.expires() == 40.0  # start-up and the first cell
    clock.accept(begin(0), 1.0)
    assert clock.expires() == 11.0
    clock.accept(end(0), 9.0)
    clock.accept(begin(1), 18.0)  # each window under the timeout, the cap does not move
    clock.accept(end(1), 27.0)
    clock.accept(begin(2), 36.0)
    assert clock.cap == 60.0 and clock.expires() == 46.0
    assert RecordClock(3, frozenset(), 10.0, now=0.0, cap=12.0).expires() == 12.0


def test_records_are_parsed_strictly_and_their_text_cleaned() -> None:
    record = {"ev": "end", "cell": 1, "checks": [["raises", 0, "visible", "a\x1b[2J", "b", ["raised", ["E"], "\ud800\x9b"], None, []]],  # noqa: E501
              "error": ["ValueError", "x\ud800\x1b]52;c;eA==\x07"], "part": "visible", "tamper": None, "violation": None}  # noqa: E501
    parsed = parse_record(b"n " + json.dumps(record).encode(), b"n ", 2)
    assert parsed["error"] == ["ValueError", "x\\ud800\\x1b]52;c;eA==\\x07"]
    assert parsed["checks"][0][3] == "a\\x1b[2J" and parsed["checks"][0][5][2] == "\\ud800\\x9b"
    json.dumps(parsed).encode("utf-8")  # encodable: no lone surrogate left
    assert parse_record(b'n {"ev": "begin", "cell": 1, "x": 1}', b"n ", 2) == "a record of an unknown form"


# ---------------------------------------------------------------- text a student controls


def test_printable_and_markdown_escape_what_students_control() -> None:
    assert clean("ok\n\ttab") == "ok\n\ttab" and clean("\x1b[31m\u202e\x85") == "\\x1b[31m\\u202e\\x85"
    assert printable(os.fsdecode(b"a\xffb")) == "a\\xffb"
    assert printable("\ud800x") == "\\ud800x" and printable("a\nb", one_line=True) == "a\\x0ab"
    assert report.md_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)&gt;"
    assert report.md_text("![x](http://e/t.png) | `a` *b* __init__ n-x_y") == \
        "!\\[x\\](http://e/t.png) \\| \\`a\\` \\*b\\* \\_\\_init\\_\\_ n-x_y"
    assert "\x1b" not in report.md_text("\x1b]52;c;eA==\x07")
    code = report._code("``a`` \x1b[2J\nb")
    assert code.startswith("``` ") and "\x1b" not in code and "\n" not in code


def test_feedback_names_stay_unique_when_a_folder_is_named_like_a_hashed_name() -> None:
    hashed = "a_b-" + hashlib.sha256(b"a b").hexdigest()[:10]
    names = report.feedback_names(["a b", hashed, hashed.upper(), "bob", "Bob", "carol"])
    assert len({n.casefold() for n in names.values()}) == 6, names
    assert names["carol"] == "carol.md" and names[hashed] != hashed + ".md"
    assert names == report.feedback_names(["carol", "Bob", "bob", hashed.upper(), hashed, "a b"])


# ---------------------------------------------------------------- paths


def test_no_link_is_followed_at_any_level_and_hard_links_are_refused(tmp_path: Path) -> None:
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / f"{NAME}.md").write_text(student_text(CORRECT))
    student = tmp_path / "subs" / "eve"
    student.mkdir(parents=True)
    (student / "exercises").symlink_to(solutions, target_is_directory=True)
    path = submissions.pick_file(student, NAME)
    assert path == student / "exercises" / f"{NAME}.md"
    assert submissions.read_submission(path).status == "ok"  # O_NOFOLLOW alone: the folder link is followed
    sub = submissions.read_submission(path, student)
    assert sub.status == "invalid" and "exercises/, which is a symbolic link" in sub.message
    (student / f"{NAME}.md").write_text(student_text(CORRECT))  # a file of its own wins over the link
    assert submissions.pick_file(student, NAME) == student / f"{NAME}.md"
    (student / f"{NAME}.md").unlink()
    os.link(solutions / f"{NAME}.md", student / f"{NAME}.md")
    sub = submissions.read_submission(student / f"{NAME}.md", student)
    assert sub.status == "invalid" and "hard link" in sub.message
    assert submissions.read_submission(tmp_path / "x.md", student).status == "invalid"  # outside


# ---------------------------------------------------------------- the feedback's layout


def _results(failing: bool, exercises: int = 16, tests: int = 6) -> list[report.ExerciseResult]:
    out = []
    for e in range(exercises):
        ok = [protocol.CheckLine("检查", "check", True)] * 3
        ts = [protocol.TestResult(f"ex{t}", 2, "passed", visible=ok, hidden="passed") for t in range(tests)]
        if failing and e == 3:
            ts[1] = protocol.TestResult("ex1", 2, "failed", "check 1 failed", hidden="failed",
                               visible=[protocol.CheckLine("加", "add", False, "3", "-1", "values differ")])
            ts[2] = protocol.TestResult("ex2", 2, "error", "secret hidden message", error="KeyError: 'k'")
        out.append(report.ExerciseResult(f"{e:02d}_x_exercises", f"{e:02d}_x_exercises.md", "ok", "", ts))
    return out


def test_feedback_leads_with_the_scores_and_what_to_fix_and_stays_short() -> None:
    full = report.feedback_md("alice", _results(False), [])
    assert len(full.splitlines()) <= 30, full
    assert "Everything passed" in full and "Details" not in full
    text = report.feedback_md("bob", _results(True), [("notes.md", "")])
    lines = text.splitlines()
    keys = ("| 练习 / exercise |", "## 需要修改 / What to fix", "## 详情 / Details")
    table, fix, details = (next(i for i, line in enumerate(lines) if key in line) for key in keys)
    assert table < fix < details and len(lines) <= 60, text
    todo = "\n".join(lines[fix:details])
    assert "03_x_exercises · ex1" in todo and "加 / add: values differ" in todo and "KeyError" in todo
    assert "secret hidden message" not in text  # the scoring run's messages are the instructor's
    assert "期望 / expected: ` 3 `" in text and "隐藏测试 / hidden tests: ✗ 未通过 / failed" in text


def test_feedback_of_a_broken_result_costs_only_that_student(tmp_path: Path, monkeypatch, capsys) -> None:
    """A result that breaks the report: the student gets a short feedback, the class its files, and
    the broken result's cache entries are dropped (a later run grades them again)."""
    from bookkit.grader import batch
    from bookkit.grader.sandbox import Limits
    from tests.grader_support import ROOT, all_passed, rows, write_student

    write_student(tmp_path / "subs", "alice", CORRECT)
    write_student(tmp_path / "subs", "bob", CORRECT)
    real = batch.feedback_md

    def broken(student, *args):
        if student == "bob":
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        return real(student, *args)

    monkeypatch.setattr(batch, "feedback_md", broken)
    out = tmp_path / "out"
    batch.grade_class(ROOT, tmp_path / "subs", out, 1, Limits(cell_timeout=10), progress=False,
                      exercises=fixture_exercises())
    assert rows(out) == {"alice": all_passed(), "bob": all_passed()}
    bob = (out / "feedback" / "bob.md").read_text(encoding="utf-8")
    assert "detailed feedback could not be written" in bob
    assert "What to fix" in (out / "feedback" / "alice.md").read_text(encoding="utf-8")
    assert "bob: the feedback could not be written" in capsys.readouterr().err
    assert len(list((out / ".cache").iterdir())) == 1  # alice's entry only


@pytest.mark.parametrize("damage", [
    lambda d: d["tests"][0].update(status="bogus"),
    lambda d: d["tests"][0].update(message=["not", "text"]),
    lambda d: d["tests"][0]["visible"].append({"what_zh": 1}),
    lambda d: d.update(tests="x"),
])
def test_a_damaged_cached_result_is_never_reused(damage) -> None:
    line = protocol.CheckLine("a", "b", True)
    result = report.ExerciseResult("01_x", "01_x.md", "ok", "",
                                   [protocol.TestResult("ex1", 2, "passed", visible=[line])])
    data = json.loads(json.dumps(result.to_json()))
    assert report.ExerciseResult.from_json(data).tests[0].status == "passed"
    damage(data)
    with pytest.raises((ValueError, KeyError, TypeError)):
        report.ExerciseResult.from_json(data)


def test_a_cached_result_with_a_lone_surrogate_reads_back_clean() -> None:
    broken = protocol.TestResult("ex1", 2, "error", "ValueError: \ud800", error="ValueError: \ud800")
    result = report.ExerciseResult("01_x", "01_x.md", "ok", "", [broken])
    back = report.ExerciseResult.from_json(json.loads(json.dumps(result.to_json())))
    assert back.tests[0].error == "ValueError: \\ud800"
    report.feedback_md("x", [back], []).encode("utf-8")


# ---------------------------------------------------------------- parsing in threads (gh-106905)


def test_test_cells_are_rewritten_safely_from_many_threads() -> None:
    program = fixture_exercises()[0].program
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(30):
                regions.rewrite_tests(program.cells, frozenset({2, 4, 6}) if (i + k) % 2 else frozenset(),
                                      frozenset())
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:1]


def test_a_system_error_of_the_ast_module_is_retried(monkeypatch) -> None:
    real, calls = ast.parse, []

    def flaky(source, *args, **kwargs):
        calls.append(source)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=1, after=2)")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", flaky)
    assert isinstance(regions.parse_python("x = 1"), ast.Module) and len(calls) == 2


def test_every_parse_in_bookkit_goes_through_the_one_lock() -> None:
    """A stub tree built in one grading thread while another parsed a student's file failed the
    whole file with gh-106905's SystemError (seen in a loaded CI run): every ``ast.parse`` of the
    book's tooling is bookkit.pysource's, under its lock."""
    root = Path(__file__).resolve().parents[1] / "bookkit"
    direct = [str(p.relative_to(root)) for p in root.rglob("*.py")
              if p.name != "pysource.py" and "ast.parse(" in p.read_text(encoding="utf-8")]
    assert direct == [], f"parse with bookkit.pysource.parse_python instead: {direct}"


def test_the_visible_only_program_holds_no_hidden_part() -> None:
    program = fixture_exercises()[0].program
    cells = program.assemble(None, hidden=False)
    text = json.dumps(cells)
    assert "random inputs" not in text and "plus {b}" not in text
    assert "random inputs" in json.dumps(program.assemble(None))


def test_a_cell_may_have_a_shorter_deadline_never_a_longer_one_and_its_time_is_kept() -> None:
    clock = RecordClock(3, frozenset(), 10.0, now=0.0, startup=30.0, timeouts={1: 2.0, 2: 50.0})
    clock.accept(begin(0), 1.0)
    assert clock.expires() == 11.0
    clock.accept(end(0), 4.0)
    clock.accept(begin(1), 5.0)
    assert clock.expires() == 7.0  # its own, shorter deadline
    clock.accept(end(1), 6.5)
    clock.accept(begin(2), 7.0)
    assert clock.expires() == 17.0  # a longer one is not taken
    assert clock.durations == {0: 3.0, 1: 1.5}


def test_records_follow_the_order_the_parent_gave() -> None:
    clock = RecordClock(3, frozenset(), 10.0, now=0.0, order=[0, 2, 1])
    assert clock.accept(begin(0), 0.0) == "" and clock.accept(end(0), 0.0) == ""
    assert "out of order" in RecordClock(3, frozenset(), 10.0, now=0.0, order=[0, 2, 1]).accept(begin(1), 0.0)
    for record in (begin(2), end(2), begin(1), end(1), {"ev": "done"}):
        assert clock.accept(record, 1.0) == "", record
    assert clock.done
