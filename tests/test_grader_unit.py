"""Unit tests of the grader: reading submissions, regions, the assembled program, values, verdicts."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from bookkit.exercises import PLACEHOLDER
from bookkit.grader import protocol, regions, report, submissions
from bookkit.grader.batch import student_seed
from tests.grader_support import CORRECT, fixture_exercises, student_ipynb, student_text

# ---------------------------------------------------------------- regions


def test_find_regions_and_errors() -> None:
    lines = ["x", "  ### BEGIN SOLUTION", "  a", "  ### END SOLUTION", "### BEGIN SOLUTION", "### END SOLUTION"]  # noqa: E501
    assert regions.find_regions(lines) == [(1, 3), (4, 5)]
    with pytest.raises(regions.RegionError, match="never closed"):
        regions.find_regions(["### BEGIN SOLUTION"])
    with pytest.raises(regions.RegionError, match="without a BEGIN"):
        regions.find_regions(["### END SOLUTION"])
    with pytest.raises(regions.RegionError, match="inside another region"):
        regions.find_regions(["### BEGIN SOLUTION", "### BEGIN SOLUTION"])


def test_program_of_fixture() -> None:
    program = fixture_exercises()[0].program
    assert [(t.id, t.points) for t in program.tests] == [("ex1_add", 2), ("ex2_scale", 3), ("ex3_safe_div", 1)]  # noqa: E501
    assert [r.strip() for r in program.reference][:2] == ["return a + b", "return [x * k for x in xs]"]
    kinds = [c["kind"] for c in program.cells]
    assert kinds == ["code", "code", "test", "code", "test", "code", "test"]
    parts = program.cells[2]["parts"]
    assert [p for p, _ in parts] == ["visible", "hidden"] and "want = a + b" in parts[1][1]


def test_assemble_takes_only_region_text_and_reindents() -> None:
    program = fixture_exercises()[0].program
    cells = program.assemble(["return a*b", "%timeit 1\n!ls\n\treturn xs", ""])
    assert "    return a*b" in cells[1]["source"] and "SOLUTION" in cells[1]["source"]
    scale = cells[3]["source"]
    assert "IPython magic removed" in scale and "!ls" not in scale and "    return xs" in scale
    assert "    pass" in cells[5]["source"]  # an empty region becomes `pass`
    with pytest.raises(regions.RegionError, match="expected 3 solution regions, got 2"):
        program.assemble(["a", "b"])


def test_test_cell_with_markers_inside_a_block_runs_whole_as_hidden() -> None:
    source = "for i in range(2):\n    ### BEGIN HIDDEN TESTS\n    check_true(i < 2, 'a', 'b')\n    ### END HIDDEN TESTS\n"  # noqa: E501
    assert regions._test_parts(source) == [["hidden", source]]


# ---------------------------------------------------------------- submissions


def test_read_md_and_ipynb_give_the_same_regions(tmp_path: Path) -> None:
    md = tmp_path / "a.md"
    md.write_text(student_text(CORRECT), encoding="utf-8")
    for colab in (False, True):
        nb = tmp_path / f"a{colab}.ipynb"
        nb.write_text(student_ipynb(CORRECT, colab=colab), encoding="utf-8")
        assert submissions.read_submission(nb).regions == submissions.read_submission(md).regions
    assert [r.strip() for r in submissions.read_submission(md).regions][0] == "return a + b"


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe bad", "not UTF-8"),
    (b"{not json", "bad JSON"),
    (b'{"cells": 3}', "no list of cells"),
    (b'{"cells": [{"cell_type": "code", "source": 5}]}', "source is not text"),
])
def test_corrupt_notebooks_are_invalid(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.ipynb"
    path.write_bytes(content)
    sub = submissions.read_submission(path)
    assert sub.status == "invalid" and message in sub.message


def test_symlinks_missing_and_unbalanced(tmp_path: Path) -> None:
    target = tmp_path / "secret.md"
    target.write_text("### BEGIN SOLUTION\nx\n### END SOLUTION\n")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert submissions.read_submission(link).status == "invalid"
    assert submissions.read_submission(None).status == "missing"
    bad = tmp_path / "bad.md"
    bad.write_text("### BEGIN SOLUTION\n")
    assert "never closed" in submissions.read_submission(bad).message


def test_discovery_and_stray_names(tmp_path: Path) -> None:
    for name in ("bob", "alice", ".hidden", "__MACOSX"):
        (tmp_path / name).mkdir()
    (tmp_path / "notes.txt").write_text("x")
    assert [p.name for p in submissions.students(tmp_path)] == ["alice", "bob"]
    (tmp_path / "alice" / "01_fixture_exercises (1).ipynb").write_text("{}")
    (tmp_path / "alice" / "01_fixture_exercises.md").write_text("x")
    assert submissions.stray_files(tmp_path / "alice", ["01_fixture_exercises"]) == [
        ("01_fixture_exercises (1).ipynb", "01_fixture_exercises.ipynb")]
    assert submissions.pick_file(tmp_path / "alice", "01_fixture_exercises").name == "01_fixture_exercises.md"


# ---------------------------------------------------------------- values and comparisons


def arr(a) -> list:
    a = np.asarray(a)
    return ["v", None, None, [a.dtype.str, list(a.shape), base64.b64encode(a.tobytes()).decode()]]


@pytest.mark.parametrize("kind, got, exp, opts, ok", [
    ("equal", arr([1, 2]), arr([1, 2]), (), True),
    ("equal", arr([1, 2]), arr([1, 3]), (), False),
    ("equal", arr([[1, 2]]), arr([1, 2]), (), False),
    ("equal", arr([np.nan]), arr([np.nan]), (), True),
    ("equal", arr(["a"]), arr([1]), (), False),
    ("equal", ("v", "NoneType", "None", None), ("v", "NoneType", "None", None), (), True),
    ("equal", ("v", "dict", "{'a':1}", None), ("v", "dict", "{'a':2}", None), (), False),
    ("equal", ("opaque", "Weird"), arr([1]), (), False),
    ("close", arr([1.0]), arr([1.0 + 1e-9]), (1e-5, 1e-8), True),
    ("close", arr([1.0]), arr([1.1]), (1e-5, 1e-8), False),
    ("shape", ("shape", (2, 3)), ("shape", (2, 3)), (), True),
    ("shape", ("opaque", "x"), ("shape", (2, 3)), (), False),
    ("raises", ["raised", ["ValueError", "Exception"], "bad shape"], ["names", ["ValueError"]], ["shape"], True),  # noqa: E501
    ("raises", ["raised", ["KeyError", "LookupError"], "x"], ["names", ["LookupError"]], [None], True),
    ("raises", ["raised", ["ValueError"], "bad"], ["names", ["ValueError"]], ["shape"], False),
    ("raises", ["raised", ["TypeError"], ""], ["names", ["ValueError"]], [None], False),
    ("raises", ["returned"], ["names", ["ValueError"]], [None], False),
    ("raises", ["raised", ["ValueError"], "x"], None, [None], False),  # no expectation: never passes
    ("true", arr(True), ("none",), (), True),
    ("true", arr([True, True]), ("none",), (), False),
])
def test_compare(kind: str, got, exp, opts, ok: bool) -> None:
    assert protocol.compare(kind, got, exp, opts)[0] is ok


@pytest.mark.parametrize("data", [
    ["v", None, None, ["|O", [1], "AAAAAAAAAAA="]],       # object dtype is refused
    ["v", None, None, ["<f8", [2], "AAAAAAAAAAA="]],      # size mismatch
    ["v", None, None, ["<f8", [-1], ""]],                 # negative shape
    ["v", None, None, ["<f8", [1 << 62, 1 << 62], ""]],   # overflowing shape
    ["v", None, None, ["<f8", [1], "not base64!"]],       # the child's base64 text, garbled
    ["v", 3, "x", None],                                  # malformed builtin
    ["v", None, None, [[[[]]]]],                          # nested junk
    "junk", None, 5, {"a": 1},
])
def test_decode_refuses_malformed_values(data) -> None:
    assert protocol.decode(data).opaque


def _ref(checks: list[list]) -> protocol.Reference:
    return protocol.Reference({2: {"checks": checks, "error": None}})


def test_judge_uses_the_reference_expected_value_not_the_students() -> None:
    program = fixture_exercises()[0].program
    ref_check = ["equal", 0, "visible", "zh", "en", arr(3), arr(3), []]
    forged = ["equal", 0, "visible", "zh", "en", arr(5), arr(5), []]  # the student's run "expected" 5
    run = protocol.ChildResult(ends={2: {"checks": [forged], "error": None}})
    result = protocol.judge(program, _ref([ref_check]), run)[0]
    assert result.status == "failed" and result.visible[0].expected.strip() == "3"
    # an unstable check (expected differs between reference runs) is judged within the run
    ref = _ref([ref_check])
    ref.unstable.add((2, 0))
    assert protocol.judge(program, ref, run)[0].status == "passed"
    # a check from another site (the test took another path) fails even with the right value
    moved = ["equal", 1, "visible", "zh", "en", arr(3), None, []]
    run = protocol.ChildResult(ends={2: {"checks": [moved], "error": None}})
    assert protocol.judge(program, _ref([ref_check]), run)[0].status == "failed"


@pytest.mark.parametrize("end", [
    {"checks": [["equal", 0, "visible", "zh", "en", "junk", None, "x"]], "error": None},
    {"checks": "nope", "error": ["a"]},
    {"checks": [["equal"]], "error": ["SyntaxError", "x"], "part": "visible"},
    {"checks": [], "error": [1, 2, 3], "tamper": 5, "violation": ["x"]},
])
def test_judge_never_raises_on_forged_records(end: dict) -> None:
    program = fixture_exercises()[0].program
    ref = _ref([["equal", 0, "visible", "zh", "en", arr(3), arr(3), []]])
    run = protocol.ChildResult(ends={1: {"checks": [], "error": ["SyntaxError", "bad"]}, 2: end, 99: end})
    results = protocol.judge(program, ref, run)
    assert results[0].status in ("failed", "error") and results[0].points == 0


def test_judge_statuses() -> None:
    program = fixture_exercises()[0].program
    check = ["equal", 0, "visible", "zh", "en", arr(3), arr(3), []]
    hidden = ["equal", 1, "hidden", "zh", "en", arr(4), arr(4), []]
    ref = _ref([check, hidden])

    def status(end: dict | None, stopped: dict | None = None) -> tuple[str, str]:
        run = protocol.ChildResult(ends={2: end} if end else {}, stopped=stopped or {})
        r = protocol.judge(program, ref, run)[0]
        return r.status, r.hidden

    assert status({"checks": [check, hidden], "error": None}) == ("passed", "passed")
    assert status({"checks": [check, check], "error": None})[0] == "failed"  # another site
    assert status({"checks": [check, hidden[:5] + [arr(5), None, []]], "error": None})[0] == "failed"
    assert status({"checks": [check, hidden], "error": None, "violation": "called gather"})[0] == "failed"
    assert status({"checks": [check], "error": ("KeyError", "x"), "part": "hidden"}) == ("error", "failed")
    assert status({"checks": [check, hidden], "error": None, "tamper": "mytorch.add"})[0] == "failed"
    assert status({"checks": [check], "error": None})[0] == "failed"  # a check did not run
    assert status(None, {2: "timeout"})[0] == "timeout"
    assert status(None, {2: "crashed"})[0] == "crashed"


# ---------------------------------------------------------------- report


def test_report_files_and_atomic_write(tmp_path: Path) -> None:
    t = protocol.TestResult("ex1", 2, "passed")
    ex = report.ExerciseResult("01_x", "01_x.md", "ok", "", [t, protocol.TestResult("ex2", 3, "failed", "a\nb")])  # noqa: E501
    results = {"bob": [ex], "alice": [ex]}
    assert report.gradebook_csv(results).splitlines() == [
        "student,exercise,test,points,max_points,status,message",
        "alice,01_x,ex1,2,2,passed,", "alice,01_x,ex2,0,3,failed,a b",
        "bob,01_x,ex1,2,2,passed,", "bob,01_x,ex2,0,3,failed,a b"]
    assert report.summary_csv(results, ["01_x"]).splitlines()[1] == "alice,2,5,2"
    report.write_atomic(tmp_path / "d" / "f.txt", "x")
    assert (tmp_path / "d" / "f.txt").read_text() == "x" and len(list((tmp_path / "d").iterdir())) == 1
    assert report.safe_name("../张 三") == "_张_三" and report.safe_name("a/b") == "a_b"
    assert json.loads(report.seeds_json({"a": {"x": 1}})) == {"a": {"x": 1}}


def test_seed_is_a_stable_hash() -> None:
    assert student_seed("alice", "01_x") == student_seed("alice", "01_x") != student_seed("bob", "01_x")


def test_generated_exercises_keep_markers_around_the_stub() -> None:
    text = student_text([None, None, None])
    assert text.count("### BEGIN SOLUTION") == 3 and PLACEHOLDER in text


def test_feedback_shows_floats_as_python_prints_them() -> None:
    """Values compare by an exact canonical text (floats in hex); a student reads 0.95, not 0x1.e6…p-1."""
    from bookkit.grader.protocol import Value, show

    assert show(Value(pytype="tuple", py=f"({(0.95).hex()},0,True)")) == "(0.95,0,True)"
    assert show(Value(pytype="float", py=(-1e-300).hex())) == "-1e-300"
