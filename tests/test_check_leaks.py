"""``check-leaks``: no chapter, and no stored output of one, shows an exercise's reference body.

Fast: a tiny book in a temporary folder; nothing is executed. The last test reads mytorch's real
piece registry (about two seconds) so the check is tied to what ``make exercises`` puts in solutions/.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from bookkit import cli, leaks
from bookkit.project import Project

ROOT = Path(__file__).resolve().parents[1]
FENCE = "`" * 3

SOURCE = '''def walk(roots):
    """Every node, parents first."""
    ### BEGIN SOLUTION
    order, seen = [], set()   # what is done
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
    return order
    ### END SOLUTION
'''
SHORT = '''def two(x):
    """A body shorter than a run."""
    ### BEGIN SOLUTION
    return x.as_strided((2,), (1,))
    ### END SOLUTION
'''
BODIES = {"walk": ("02.4", leaks.body_lines(SOURCE)), "two": ("08.2", leaks.body_lines(SHORT))}


def test_body_lines_drop_markers_docstrings_comments_and_indentation() -> None:
    body = leaks.body_lines(SOURCE)
    assert body[0] == "order, seen = [], set()"
    assert body[-1] == "return order"
    assert not any("BEGIN" in line or '"""' in line or "#" in line for line in body)
    assert leaks.normalise("    x  =  '#'   # note") == "x = '#'"


def _chapter(code: str) -> str:
    return (ROOT / "tests" / "fixtures" / "sample_chapter.md").read_text(encoding="utf-8").replace(
        "x.sum()\n", f"x.sum()\n{FENCE}\n\n{FENCE}{{code-cell}} ipython3\n{code}\n")


def _notebook(path: Path, output: str) -> None:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("import inspect\nprint(inspect.getsource(walk))")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=output)]
    nb.cells = [nbformat.v4.new_markdown_cell("# Sample chapter"), cell]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A clean book: one chapter that teaches the idea with its own loop, stored notebooks."""
    (tmp_path / "pyproject.toml").write_text('[tool.bookkit]\nrepo = "a/b"\n', encoding="utf-8")
    (tmp_path / "chapters").mkdir()
    own = "seen = set()\nfor node in [1, 2, 1]:\n    seen.add(node)\nprint(sorted(seen))"
    (tmp_path / "chapters" / "01_sample.md").write_text(_chapter(own), encoding="utf-8")
    for lang in ("zh", "en"):
        _notebook(tmp_path / "notebooks" / lang / "01_sample.ipynb", "[1, 2]\n")
    return tmp_path


def test_a_clean_book_passes(book: Path) -> None:
    problems, count = leaks.check(Project(book), BODIES)
    assert problems == []
    assert count == 3  # the chapter and its two notebooks


def test_a_body_pasted_into_a_chapter_fails_with_piece_cell_and_line(book: Path) -> None:
    chapter = book / "chapters" / "01_sample.md"
    pasted = "\n".join(["# the library's own:", "stack = list(roots)", "while stack:",
                        "  node = stack.pop()  # next", "", "  if node in seen:", "      continue"])
    chapter.write_text(_chapter(pasted), encoding="utf-8")
    problems, _ = leaks.check(Project(book), BODIES)
    assert len(problems) == 1
    text = problems[0].format(book)
    assert "chapters/01_sample.md:" in text and "code cell 2" in text
    assert "`walk` (exercise 02.4)" in text and "5 consecutive lines" in text
    assert problems[0].line == chapter.read_text(encoding="utf-8").split("\n").index("stack = list(roots)") + 1
    assert "solutions/" in problems[0].fix


def test_three_lines_are_not_a_leak_but_a_short_body_shown_whole_is(book: Path) -> None:
    chapter = book / "chapters" / "01_sample.md"
    chapter.write_text(_chapter("stack = list(roots)\nwhile stack:\n    node = stack.pop()"), encoding="utf-8")
    assert leaks.check(Project(book), BODIES)[0] == []
    chapter.write_text(_chapter("y = x\nreturn  x.as_strided((2,), (1,))"), encoding="utf-8")
    problems, _ = leaks.check(Project(book), BODIES)
    assert len(problems) == 1 and "whole reference body" in problems[0].message
    assert "`two`" in problems[0].message


def test_a_body_in_a_stored_output_fails(book: Path) -> None:
    _notebook(book / "notebooks" / "en" / "01_sample.ipynb", SOURCE.replace("    ###", "    #"))
    problems, _ = leaks.check(Project(book), BODIES)
    assert len(problems) == 1
    text = problems[0].format(book)
    assert "notebooks/en/01_sample.ipynb, cell 2" in text and "whole reference body" in text
    assert "make colab" in problems[0].fix


def test_cli_with_the_real_registry(book: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--root", str(book), "check-leaks"]) == 0
    assert "✓ check-leaks" in capsys.readouterr().out
    from bookkit.pieces import piece_source

    body = piece_source("backward_order").split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
    _notebook(book / "notebooks" / "zh" / "01_sample.ipynb", body)
    assert cli.main(["--root", str(book), "check-leaks"]) == 1
    out = capsys.readouterr().out
    assert "`backward_order` (exercise 02.4)" in out and "✗ check-leaks: 1 problem" in out


def test_the_makefile_lint_runs_it() -> None:
    lint = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nlint:")[1].split("\n\n")[0]
    assert "check-leaks" in lint


def test_solution_only_prose_is_left_out_of_the_student_version() -> None:
    """The derivation an exercise asks for is written after it in solutions/ only (issue 20)."""
    from bookkit.exercises import strip_solutions

    text = (ROOT / "tests" / "fixtures" / "sample_chapter.md").read_text(encoding="utf-8")
    secret = ('+++ {"lang": "zh", "solution": true}\n\n推导：c(t) = 1 - β^t。\n\n'
              '+++ {"lang": "en", "solution": true}\n\nDerivation: c(t) = 1 - β^t.\n\n')
    source = text.replace('+++ {"lang": "zh"}\n\n## 小结', secret + '+++ {"lang": "zh"}\n\n## 小结')
    assert "1 - β^t" in source
    student = strip_solutions(source)
    assert "1 - β^t" not in student and '"solution"' not in student
    assert student == text  # everything else byte for byte


def test_every_real_piece_pasted_back_is_found() -> None:
    """Each of mytorch's pieces (08.2's four-line body included), pasted into a chapter as its
    solution shows it, is a leak of that piece, shown whole; and the chapters as they are show none."""
    from bookkit.pieces import piece_source

    bodies = leaks.reference_bodies()
    assert "rebuild_tensor" in bodies and len(bodies["rebuild_tensor"][1]) >= 4
    for name in bodies:
        parts = piece_source(name).split("### BEGIN SOLUTION")[1:]  # a class: one per method
        pasted = "\n".join(part.split("### END SOLUTION")[0] for part in parts).split("\n")
        found = leaks.find(["print('before')", *pasted, "print('after')"], bodies)
        assert any(leak.piece == name and leak.whole for leak in found), name
    problems = [p for chapter in Project(ROOT).chapters() for p in leaks.check_chapter(chapter, bodies)]
    assert problems == []
