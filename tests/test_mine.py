"""Your own mytorch: students' pieces replace the library's, and the tools say what is whose.

The mechanism end to end: reading piece cells from exercise notebooks (.md and .ipynb), stubs and
broken cells falling back to the reference, a wrong piece named by the failing tests that used it,
``make mine`` on half-finished exercises, and the solutions' cells staying the library's source.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mytorch
from bookkit.pieces import piece_cells, piece_source, registry
from mytorch import mine
from mytorch._pieces import REGISTRY, STUB_MESSAGE, pieces

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*_exercises.md"))
EXERCISES = ROOT / "exercises"


@pytest.fixture(autouse=True)
def _reference_afterwards():
    yield
    mytorch.use_reference()


def _fill(text: str, name: str, code: str) -> str:
    """``text`` with the body of piece cell ``name`` replaced by ``code``."""
    m = re.search(r"(:piece: %s\n\n?)(.*?)(\n```)" % re.escape(name), text, re.S)
    assert m, f"no piece cell {name}"
    return text[:m.start(2)] + code.rstrip("\n") + text[m.end(2):]


def _exercise(tmp_path: Path, chapter: str = "02_autograd_exercises.md", **bodies: str) -> Path:
    """A copy of ``exercises/`` in which the given pieces are written (others stay stubs)."""
    folder = tmp_path / "exercises"
    folder.mkdir()
    for f in EXERCISES.glob("*_exercises.md"):
        (folder / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    path = folder / chapter
    text = path.read_text(encoding="utf-8")
    for name, code in bodies.items():
        text = _fill(text, name, code)
    path.write_text(text, encoding="utf-8")
    return folder


# ----------------------------------------------------------------------------- registry + sources
def test_at_least_25_pieces_over_chapters_01_to_05_and_5_per_chapter() -> None:
    by_chapter: dict[int, int] = {}
    for p in registry().values():
        by_chapter[p.chapter] = by_chapter.get(p.chapter, 0) + 1
    early = {c: n for c, n in by_chapter.items() if 1 <= c <= 5}
    assert all(n >= 5 for n in early.values()), by_chapter
    assert sum(early.values()) >= 25 or len(early) < 5, by_chapter


def test_every_piece_has_an_exercise_cell_and_every_cell_a_piece() -> None:
    cells = [name for path in SOLUTIONS for name in piece_cells(path.read_text(encoding="utf-8"))]
    assert len(cells) == len(set(cells)), "a piece is asked for twice"
    assert set(cells) <= set(registry()), set(cells) - set(registry())
    chapters = {int(p.name[:2]) for p in SOLUTIONS}
    missing = [n for n, p in registry().items() if p.chapter in chapters and n not in cells]
    assert not missing, f"pieces without an exercise: {missing}"


def test_solution_cells_are_the_library_source() -> None:
    for path in SOLUTIONS:
        text = path.read_text(encoding="utf-8")
        for name in piece_cells(text):
            src = piece_source(name)
            assert src.strip() in text, f"{path.name}: the cell of {name} differs from mytorch"


def test_piece_source_marks_every_method_of_a_class_piece() -> None:
    src = piece_source("CheckpointFunction")
    assert src.startswith("class CheckpointFunction(")
    assert src.count("### BEGIN SOLUTION") == 2 and src.count("### END SOLUTION") == 2
    assert "@piece" not in src


def test_library_calls_pieces_through_the_registry() -> None:
    """Swapping the registry entry changes what the library runs (the seam is real)."""
    calls = []

    def spy(grad, shape):
        calls.append(tuple(shape))
        return REGISTRY["unbroadcast"].reference(grad, shape)

    with mine.plugged(unbroadcast=spy):
        a = mytorch.ones(2, 3, requires_grad=True)
        b = mytorch.ones(3, requires_grad=True)
        (a * b).sum().backward()
    assert (3,) in calls
    assert pieces.unbroadcast is REGISTRY["unbroadcast"].default


# ----------------------------------------------------------------------------- loading notebooks
def test_stubs_fall_back_to_the_reference(tmp_path: Path) -> None:
    rep = mytorch.use_mine(_exercise(tmp_path), quiet=True)
    rows = {p.name: p.status for p in rep.rows}
    assert rows["backward_order"] == "stub"
    assert pieces.backward_order is REGISTRY["backward_order"].default
    x = mytorch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert "未完成 / stub" in rep.table()


def test_a_written_piece_runs_and_is_counted(tmp_path: Path) -> None:
    folder = _exercise(tmp_path, backward_order=piece_source("backward_order"))
    rep = mytorch.use_mine(folder, quiet=True)
    assert {p.name: p.status for p in rep.rows}["backward_order"] == "mine"
    before = mine.CALLS["backward_order"]
    x = mytorch.tensor([1.0, 2.0], requires_grad=True)
    (x.exp() * x).sum().backward()
    assert mine.CALLS["backward_order"] == before + 1
    assert "你的 / yours" in rep.table()


def test_a_cell_that_fails_is_reported_and_not_used(tmp_path: Path) -> None:
    folder = _exercise(tmp_path, unbroadcast="def unbroadcast(grad, shape):\n    return grad +\n")
    rep = mytorch.use_mine(folder, quiet=True)
    row = next(p for p in rep.rows if p.name == "unbroadcast")
    assert row.status == "error" and "SyntaxError" in row.note
    assert pieces.unbroadcast is REGISTRY["unbroadcast"].default


def test_an_error_inside_a_piece_names_the_piece_and_exercise(tmp_path: Path) -> None:
    folder = _exercise(tmp_path, unbroadcast="def unbroadcast(grad, shape):\n    return grad.nope()\n")
    mytorch.use_mine(folder, quiet=True)
    a = mytorch.ones(2, 3, requires_grad=True)
    b = mytorch.ones(3, requires_grad=True)
    with pytest.raises(AttributeError) as info:
        (a * b).sum().backward()
    assert any("unbroadcast" in n and "02.1" in n for n in info.value.__notes__)


def test_tracebacks_point_at_the_notebook_lines(tmp_path: Path) -> None:
    folder = _exercise(tmp_path, unbroadcast="def unbroadcast(grad, shape):\n    raise ValueError('x')\n")
    mytorch.use_mine(folder, quiet=True)
    a, b = mytorch.ones(2, 3, requires_grad=True), mytorch.ones(3, requires_grad=True)
    with pytest.raises(ValueError) as info:
        (a * b).sum().backward()
    frames = [f for f in info.traceback if str(f.path).endswith("02_autograd_exercises.md")]
    assert frames, "the traceback should show the exercise file"
    line = (folder / "02_autograd_exercises.md").read_text().splitlines()[frames[-1].lineno]
    assert "raise ValueError('x')" in line


def test_ipynb_saved_from_colab_is_read_and_newer_wins(tmp_path: Path) -> None:
    import jupytext

    folder = _exercise(tmp_path, backward_order=piece_source("backward_order"))
    md = folder / "02_autograd_exercises.md"
    nb = jupytext.read(md)
    ipynb = md.with_suffix(".ipynb")
    jupytext.write(nb, ipynb)
    os.utime(md, (1, 1))  # the .ipynb is newer: it is the one used
    assert mine.exercise_files(folder)[1] == ipynb or ipynb in mine.exercise_files(folder)
    rep = mytorch.use_mine(folder, quiet=True)
    row = next(p for p in rep.rows if p.name == "backward_order")
    assert row.status == "mine" and row.source.endswith(".ipynb")


def test_use_mine_with_a_namespace_takes_the_pieces_defined_there() -> None:
    calls = []

    def backward_order(roots):
        calls.append(1)
        return REGISTRY["backward_order"].reference(roots)

    rep = mytorch.use_mine({"backward_order": backward_order, "x": 3}, quiet=True)
    assert {p.name: p.status for p in rep.rows}["backward_order"] == "mine"
    x = mytorch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    assert calls == [1]


def test_a_missing_folder_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="use_mine"):
        mytorch.use_mine(tmp_path / "nowhere")


def test_stub_message_is_the_one_make_exercises_writes() -> None:
    from bookkit.exercises import PLACEHOLDER

    assert STUB_MESSAGE in PLACEHOLDER


# ----------------------------------------------------------------------------- the test plugin
def _pytest(source: Path, *args: str, report: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, MYTORCH_MINE=str(source), MYTORCH_MINE_QUIET="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    if report:
        env["MYTORCH_MINE_REPORT"] = str(report)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_wrong_piece_fails_exactly_its_tests_and_is_named(tmp_path: Path) -> None:
    wrong = ("def matmul_backward(a, b, grad, needs_input_grad=(True, True)):\n"
             "    return grad @ b.transpose(-1, -2), a.transpose(-1, -2) @ grad * 2\n")
    folder = _exercise(tmp_path, matmul_backward=wrong, backward_order=piece_source("backward_order"))
    tally = tmp_path / "tally.json"
    proc = _pytest(folder, "tests/test_gradients.py", "-k", "mm or matmul or add or exp",
                   report=tally)
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:]
    failed = re.findall(r"FAILED (\S+)", out)
    assert failed and all(re.search(r"mm|matmul", f, re.I) for f in failed), failed
    assert "your piece `matmul_backward` (exercise 02.2)" in out
    assert "`backward_order`" not in out.split("Differs from PyTorch")[1].split("\n")[0]
    counts = json.loads(tally.read_text())
    assert counts["backward_order"][0] == counts["backward_order"][1] > 0
    assert counts["matmul_backward"][0] < counts["matmul_backward"][1]


def test_reference_solutions_plugged_in_pass_a_sample_of_the_suite(tmp_path: Path) -> None:
    """(make test runs the whole library suite this way; this is the quick version.)"""
    proc = _pytest(ROOT / "solutions", "tests/test_autograd_engine.py", "-x")
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_make_mine_on_half_finished_exercises_prints_the_table(tmp_path: Path) -> None:
    folder = _exercise(tmp_path, backward_order=piece_source("backward_order"),
                       unbroadcast=piece_source("unbroadcast"))
    proc = subprocess.run([sys.executable, "-m", "bookkit", "mine", "--source", str(folder),
                           "--jobs", "1", "--no-chapters", "tests/test_gradients.py", "-k", "add"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"})
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    table = out.split("## 结果 / Result")[1]
    assert re.search(r"`backward_order` \| 02\.4 \| 你的 / yours \| (\d+)/\1", table), table
    assert re.search(r"`softmax_backward` \| 02\.3 \| 未完成 / stub \| —", table), table


def test_a_wrong_mytorch_mine_setting_warns_and_imports(tmp_path: Path) -> None:
    env = dict(os.environ, MYTORCH_MINE=str(tmp_path / "nowhere"))
    proc = subprocess.run([sys.executable, "-c", "import mytorch; print(mytorch.ones(2).sum().item())"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "2.0", proc.stderr
    assert "MYTORCH_MINE" in proc.stderr and "library's own pieces" in proc.stderr


def test_one_myst_reader_serves_mytorch_and_bookkit() -> None:
    """Issue 22: mytorch.mine.myst_cells is the one reader of ``{code-cell}`` blocks; bookkit's
    piece tools, exercise generator and fence check agree with it (options in both spellings,
    a longer fence holding a shorter one, an unclosed cell)."""
    from bookkit.exercises import strip_solutions
    from bookkit.notebook import NotebookError, parse_myst
    from bookkit.pieces import _cells, piece_cells
    from mytorch.mine import myst_cells

    text = "\n".join([
        "# title", "", "```{code-cell} ipython3", ":piece: add", "", "def add(a, b):",
        "    ### BEGIN SOLUTION", "    return a + b", "    ### END SOLUTION", "```", "",
        "````{code-cell} ipython3", "---", "grade:", "  id: t1", "  points: 2", "tags: [setup]", "---",
        "```", "add(1, 2)", "````", ""])
    cells = myst_cells(text)
    assert [(c.opened, c.line, c.close, c.piece, c.tags, c.fence) for c in cells] == [
        (2, 6, 9, "add", [], "```"), (11, 19, 20, None, ["setup"], "````")]
    assert cells[1].source == "```\nadd(1, 2)" and "grade" in cells[1].meta
    assert _cells(text.split("\n")) == [(c.opened, c.line - 1, c.close, c.meta) for c in cells]
    assert piece_cells(text) == ["add"]
    student = strip_solutions(text)
    assert "return a + b" not in student and "NotImplementedError" in student and "add(1, 2)" in student
    broken = text.replace("````\n", "\n")
    assert myst_cells(broken)[-1].close == len(broken.split("\n"))
    with pytest.raises(NotebookError, match="opened at line 12 is never closed. Add a line '````'"):
        parse_myst(broken)
