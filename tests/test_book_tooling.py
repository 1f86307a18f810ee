"""Unit tests of bookkit: bilingual check, split, exercises, Colab output, teaches, errors, CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bookkit import cli, colab, exercises, feedback
from bookkit.bilingual import check_file, cjk_share, headings, split
from bookkit.notebook import NotebookError, parse_myst, read_notebook
from bookkit.project import ConfigError, Project
from bookkit.teaches import Scope, check, is_taught, mytorch_only, tensor_methods, uses_in_cell

# ---------------------------------------------------------------- project scaffolding


def make_project(tmp_path: Path, fixtures_dir: Path, repo: str = "someone/mybook") -> Project:
    """A throwaway book repository with one chapter and one solutions file."""
    (tmp_path / "pyproject.toml").write_text(f'[tool.bookkit]\nrepo = "{repo}"\n')
    (tmp_path / "chapters").mkdir()
    (tmp_path / "solutions").mkdir()
    shutil.copy(fixtures_dir / "sample_chapter.md", tmp_path / "chapters" / "00_sample.md")
    shutil.copy(fixtures_dir / "01_sample_exercises.md", tmp_path / "solutions")
    return Project(tmp_path)


# ---------------------------------------------------------------- reading notebooks


def test_missing_file_error_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "chapters" / "99_nope.md"
    with pytest.raises(NotebookError, match=r"99_nope\.md: does not exist.*Check the path"):
        read_notebook(missing)


@pytest.mark.parametrize("name, hint", [
    ("corrupt_front_matter.md", "front matter"),
    ("corrupt_cell_metadata.md", "JSON after each"),
])
def test_corrupt_notebook_error_says_file_and_fix(fixtures_dir: Path, name: str, hint: str) -> None:
    with pytest.raises(NotebookError) as info:
        read_notebook(fixtures_dir / name)
    assert name in str(info.value) and hint in str(info.value)


def test_unclosed_code_cell_and_bad_encoding(tmp_path: Path) -> None:
    with pytest.raises(NotebookError, match="line 3 is never closed"):
        parse_myst("+++ {\"lang\": \"en\"}\n\n```{code-cell} ipython3\nx = 1\n", "x.md")
    bad = tmp_path / "latin1.md"
    bad.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(NotebookError, match="not valid UTF-8"):
        read_notebook(bad)


def test_front_matter_reaches_metadata(fixtures_dir: Path) -> None:
    nb = read_notebook(fixtures_dir / "sample_chapter.md")
    assert nb.metadata["mytorch"]["title"] == {"zh": "示例", "en": "Sample"}


# ---------------------------------------------------------------- bilingual


def test_good_chapter_passes_bilingual_check(fixtures_dir: Path) -> None:
    assert check_file(fixtures_dir / "sample_chapter.md") == []


def test_bad_chapter_reports_every_kind_of_problem(fixtures_dir: Path) -> None:
    problems = check_file(fixtures_dir / "bad_bilingual.md")
    messages = [(p.cell, p.message) for p in problems]
    assert (1, "headings differ between this zh cell [#] and its en partner [#, ##]") in messages
    assert (3, "markdown cell has no lang tag") in messages
    assert (4, "zh cell has no en cell right after it") in messages
    assert (6, "en cell has no zh cell right before it") in messages
    assert (7, "zh cell contains no Chinese characters") in messages
    assert any(cell == 8 and "mostly Chinese" in msg for cell, msg in messages)
    assert all(p.fix and p.line for p in problems)
    assert "bad_bilingual.md:" in problems[0].format()


def test_headings_ignore_code_fences_and_cjk_share() -> None:
    assert headings("# a\n```\n# not a heading\n```\n### b\n#no-space") == [1, 3]
    assert cjk_share("张量 tensor") < 0.5 < cjk_share("张量是多维数组 x")
    assert cjk_share("123") == 0.0


def test_split_keeps_code_and_one_language(fixtures_dir: Path) -> None:
    nb = read_notebook(fixtures_dir / "sample_chapter.md")
    zh, en = split(nb, "zh"), split(nb, "en")
    assert [c.cell_type for c in zh.cells] == ["markdown", "code", "markdown"]
    assert all(c.metadata.get("lang") in (None, "zh") for c in zh.cells)
    assert "Sample chapter" in en.cells[0].source and "示例章节" in zh.cells[0].source
    assert len(nb.cells) == 5, "split must not modify its input"
    with pytest.raises(ValueError):
        split(nb, "fr")


# ---------------------------------------------------------------- exercises


def test_exercise_generation(fixtures_dir: Path) -> None:
    source = (fixtures_dir / "01_sample_exercises.md").read_text(encoding="utf-8")
    student = exercises.strip_solutions(source)
    assert "return 2 * x" not in student
    # the markers stay around the placeholder (indented like the solution): the grader needs them
    assert ("    ### BEGIN SOLUTION\n    " + exercises.PLACEHOLDER + "\n    ### END SOLUTION\n") in student
    assert "请完成" in student and "Complete this exercise" in student
    assert "double(-1)" not in student and "HIDDEN" not in student  # hidden tests removed
    assert 'check_equal(double(3), 6, "double(3)", "double(3)")' in student  # visible test kept
    assert "id: ex1_double" in student
    assert exercises.strip_solutions(student) == student  # idempotent
    nb = parse_myst(student)
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code", "code"]


@pytest.mark.parametrize("body, message", [
    ("### BEGIN SOLUTION\nx = 1\n", "not closed by .### END SOLUTION. before line 4"),
    ("x = 1\n### END SOLUTION\n", "no matching BEGIN"),
    ("### BEGIN SOLUTION\n### BEGIN HIDDEN TESTS\n", "not closed"),
])
def test_unbalanced_markers_are_reported(body: str, message: str) -> None:
    with pytest.raises(exercises.ExerciseError, match=message):
        exercises.strip_solutions(f"```{{code-cell}} ipython3\n{body}```\n", "s.md")


def test_exercise_sync_check_and_orphans(tmp_path: Path, fixtures_dir: Path) -> None:
    project = make_project(tmp_path, fixtures_dir)
    report = exercises.sync(project.solutions(), project.exercises_dir, write=False)
    assert [p.name for p in report.stale] == ["01_sample_exercises.md"] and not report.ok
    exercises.sync(project.solutions(), project.exercises_dir, write=True)
    assert exercises.sync(project.solutions(), project.exercises_dir, write=False).ok
    orphan = project.exercises_dir / "02_gone_exercises.md"
    orphan.write_text("x")
    assert exercises.sync(project.solutions(), project.exercises_dir, write=False).orphans == [orphan]


# ---------------------------------------------------------------- colab


def test_colab_notebook_is_deterministic_with_install_cell(fixtures_dir: Path) -> None:
    first = colab.dumps(colab.to_colab(read_notebook(fixtures_dir / "sample_chapter.md"), "en", "a/b"))
    again = colab.dumps(colab.to_colab(read_notebook(fixtures_dir / "sample_chapter.md"), "en", "a/b"))
    assert first == again  # jupytext gives random ids on each read: ours must not depend on them
    data = json.loads(first)
    install = data["cells"][0]
    assert install["cell_type"] == "code"
    source = "".join(install["source"])
    assert "find_spec" in source and "'mytorch[book] @ git+https://github.com/a/b'" in source
    assert all(c.get("outputs", []) == [] for c in data["cells"])
    assert all(c.get("metadata", {}).get("lang") in (None, "en") for c in data["cells"])
    assert "jupytext" not in data["metadata"]
    assert len({c["id"] for c in data["cells"]}) == len(data["cells"])


def test_colab_sync_writes_and_checks(tmp_path: Path, fixtures_dir: Path) -> None:
    project = make_project(tmp_path, fixtures_dir, repo="owner/name")
    exercises.sync(project.solutions(), project.exercises_dir, write=True)
    assert not colab.sync(project, write=False).ok
    colab.sync(project, write=True)
    expected = {
        "notebooks/zh/00_sample.ipynb", "notebooks/en/00_sample.ipynb",
        "notebooks/zh/exercises/01_sample_exercises.ipynb",
        "notebooks/en/exercises/01_sample_exercises.ipynb",
    }
    written = {str(p.relative_to(tmp_path)) for p in tmp_path.glob("notebooks/**/*.ipynb")}
    assert written == expected
    chapter = json.loads((tmp_path / "notebooks/zh/00_sample.ipynb").read_text())
    assert "owner/name" in "".join(chapter["cells"][0]["source"])
    code = [c for c in chapter["cells"] if c["cell_type"] == "code"]
    assert all(c["execution_count"] for c in code), "chapters are stored executed"
    assert any(c["outputs"] for c in code) and "execution" not in json.dumps(
        [c["metadata"] for c in code]), "no timings in the stored cells"
    exercise = json.loads((tmp_path / "notebooks/zh/exercises/01_sample_exercises.ipynb").read_text())
    assert all(not c.get("outputs") for c in exercise["cells"]), "exercises are stored unexecuted"
    assert colab.sync(project, write=False).ok
    assert colab.sync(project, write=True).stale == [], "regenerating changes no file"
    stripped = json.loads((tmp_path / "notebooks/zh/00_sample.ipynb").read_text())
    for cell in stripped["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    (tmp_path / "notebooks/zh/00_sample.ipynb").write_text(json.dumps(stripped))
    report = colab.sync(project, write=False)
    assert [p.name for p in report.stale] == ["00_sample.ipynb"], "an unexecuted chapter is stale"
    (tmp_path / "chapters" / "00_sample.md").write_text(
        (fixtures_dir / "sample_chapter.md").read_text().replace("arange(6)", "arange(8)"))
    report = colab.sync(project, write=False)
    assert {p.name for p in report.stale} == {"00_sample.ipynb"}


def test_repo_slug_comes_from_pyproject(tmp_path: Path, repo_root: Path) -> None:
    assert Project(repo_root).repo_slug() == "mytorch-book/mytorch"
    (tmp_path / "pyproject.toml").write_text('[tool.bookkit]\nrepo = "not a slug"\n')
    with pytest.raises(ConfigError, match="owner/name"):
        Project(tmp_path).repo_slug()


# ---------------------------------------------------------------- teaches


def test_teaches_checker_on_fixtures(fixtures_dir: Path) -> None:
    methods = {"view", "reshape", "split", "sum"}
    chapters = [fixtures_dir / "teaches_ch01.md", fixtures_dir / "teaches_ch02.md"]
    problems = check(chapters, [], methods)
    found = sorted((p.path.name, p.message.split("'")[1] if "'" in p.message else p.message)
                   for p in problems)
    assert found == [
        ("teaches_ch02.md", "Tensor.reshape"),  # method on a mytorch tensor, never taught
        ("teaches_ch02.md", "arange"),  # torch.arange, never taught
        ("teaches_ch02.md", "imports real PyTorch outside the rules"),
    ]
    assert all(p.line and p.cell for p in problems)


def test_teaches_uses_and_rules() -> None:
    scope = Scope()
    uses, bad = uses_in_cell("import mytorch as T\nfrom mytorch.nn import functional as F\n"
                             "T.nn.init.zeros_(w)\nF.relu(x)\n!ls\nx.view(1)\n", 1, {"view"}, scope)
    names = {u.name for u in uses}
    assert names == {"nn.functional", "nn.init.zeros_", "nn.functional.relu", "Tensor.view"}
    assert bad == []
    later, _ = uses_in_cell("T.ones(2)", 2, None, scope)  # aliases carry over to later cells
    assert [u.name for u in later] == ["ones"]
    tracked, _ = uses_in_cell("import numpy as np\na = np.arange(4)\na.reshape(2, 2)\nlst = [3, 1]\n"
                              "lst.sort()\nt = T.zeros(3)\nt.sort()\n", 3, {"reshape", "sort"}, scope)
    assert [(u.name, u.line) for u in tracked] == [("zeros", 6), ("Tensor.sort", 7)]
    assert is_taught("nn.Linear.weight", {"nn.Linear"}) and is_taught("Tensor.view", {"view"})
    assert not is_taught("nn.Conv2d", {"nn.Linear"})


def test_mytorch_only_names_need_their_mark_in_chapters(tmp_path: Path, fixtures_dir: Path,
                                                        repo_root: Path) -> None:
    extras = {"mytorch": {"use_mine", "mine"}, "mytorch.cuda": {"simulate"}}
    assert mytorch_only("cuda.simulate", extras) == "cuda.simulate"
    assert mytorch_only("mine.plugged", extras) == "mine"
    assert mytorch_only("cuda.is_available", extras) is None and mytorch_only("zeros", extras) is None
    head = (fixtures_dir / "teaches_ch01.md").read_text().split("```{code-cell}")[0]
    chapter = tmp_path / "01_x.md"
    chapter.write_text(head + "```{code-cell} ipython3\nimport mytorch as torch\nimport mytorch\n"
                       "torch.cuda.simulate()\ntorch.cuda.simulate(False)  # mytorch only\n"
                       "mytorch.use_mine()  # teaches: ignore\nx = torch.zeros(2)\n```\n")
    problems = check([chapter], [], None, extras)
    assert [(p.message.split("'")[1], p.line) for p in problems
            if "real PyTorch" in p.message] == [("cuda.simulate", 21), ("use_mine", 23)]
    exercise = tmp_path / "02_y_exercises.md"  # exercises build mytorch: no mark needed there
    exercise.write_text(chapter.read_text().replace("chapter: 1", "chapter: 2"))
    assert not [p for p in check([], [exercise], None, extras) if "real PyTorch" in p.message]
    # the list is one: pyproject.toml's, which tests/test_api_surface.py checks against torch
    assert "simulate" in Project(repo_root).mytorch_only()["mytorch.cuda"]


def test_tensor_methods_lists_public_names_or_says_why(repo_root: Path) -> None:
    methods, why = tensor_methods(repo_root)
    assert (methods is None and why) or (methods and not why and not any(m.startswith("_") for m in methods))


# ---------------------------------------------------------------- feedback


def test_feedback_success_prints_both_languages(capsys: pytest.CaptureFixture[str]) -> None:
    feedback.check_equal(np.array([1, 2]), [1, 2], "数组", "array")
    feedback.check_close([0.1 + 0.2], np.array([0.3]), "和", "sum")
    feedback.check_shape(np.zeros((2, 3)), (2, 3))
    feedback.check_raises(lambda: 1 / 0, ZeroDivisionError, match="division")
    feedback.check_equal({"a": 1}, {"a": 1})
    out = capsys.readouterr().out
    assert out.count("✓") == 5 and "数组：正确 / array: correct" in out


class FakeTensor:
    """Duck-typed tensor whose == is useless, like an odd tensor class."""

    def __init__(self, data: list) -> None:
        self.data = data
        self.shape = np.shape(data)

    def tolist(self) -> list:
        return self.data

    def __eq__(self, other: object) -> bool:  # pragma: no cover - must never be trusted
        return True


def test_feedback_failures_are_bilingual_and_show_values() -> None:
    with pytest.raises(AssertionError) as info:
        feedback.check_equal(FakeTensor([1, 2, 4]), [1, 2, 3], "加法结果", "sum")
    text = str(info.value)
    assert "检查未通过" in text and "Check failed" in text and "[1 2 3]" in text and "[1 2 4]" in text
    with pytest.raises(AssertionError, match="shapes differ"):
        feedback.check_equal(FakeTensor([[1, 2]]), [1, 2])
    with pytest.raises(AssertionError, match="max abs diff"):
        feedback.check_close([1.0], [1.1])
    with pytest.raises(AssertionError, match=r"expected: \(3,\)"):
        feedback.check_shape(FakeTensor([1, 2]), (3,))
    with pytest.raises(AssertionError, match="nothing was raised"):
        feedback.check_raises(lambda: None, ValueError)
    with pytest.raises(AssertionError, match="raised another exception"):
        feedback.check_raises(lambda: int("x"), KeyError)


def test_feedback_with_real_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    feedback.check_close(torch.tensor([1.0, 2.0], requires_grad=True) * 2, [2.0, 4.0])
    feedback.check_shape(torch.zeros(2, 5), (2, 5))
    with pytest.raises(AssertionError):
        feedback.check_equal(torch.tensor([True, False]), [True, True])


# ---------------------------------------------------------------- CLI


def run_cli(*args: str, cwd: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in-process from ``cwd``; return (exit status, stdout, stderr)."""
    monkeypatch.chdir(cwd)
    try:
        status = cli.main(list(args))
    except SystemExit as exit_:  # argparse usage errors
        status = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def test_python_m_bookkit_without_command(repo_root: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bookkit"], cwd=repo_root, text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode == 2 and "no command given" in proc.stderr and "check-bilingual" in proc.stderr


def test_python_m_bookkit_outside_the_venv_says_to_use_make(repo_root: Path) -> None:
    """`python3 -m bookkit …` with a Python that lacks bookkit's dependencies (-S: no site-packages)."""
    proc = subprocess.run([sys.executable, "-S", "-m", "bookkit", "check-bilingual"], cwd=repo_root,
                          text=True, capture_output=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "lacks" in proc.stderr and "make help" in proc.stderr and ".venv/bin/python -m bookkit" in proc.stderr


def test_cli_usage_errors(repo_root: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli("frobnicate", cwd=repo_root, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2 and "invalid choice" in err
    status, _, err = run_cli("book", "--timeout", "soon", cwd=repo_root, monkeypatch=monkeypatch,
                             capsys=capsys)
    assert status == 2 and "whole number of seconds" in err
    status, out, _ = run_cli("colab", "--help", cwd=repo_root, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 0 and "--check" in out


def test_cli_outside_a_book_and_on_a_bad_file(tmp_path: Path, fixtures_dir: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    kw = {"monkeypatch": monkeypatch, "capsys": capsys}
    status, _, err = run_cli("check-bilingual", cwd=tmp_path, **kw)
    assert status == 1 and "[tool.bookkit]" in err
    project = make_project(tmp_path, fixtures_dir)
    status, out, _ = run_cli("check-bilingual", str(fixtures_dir / "bad_bilingual.md"),
                             cwd=project.root, **kw)
    assert status == 1 and "no lang tag" in out and "fix:" in out
    status, _, err = run_cli("check-bilingual", str(fixtures_dir / "corrupt_front_matter.md"),
                             cwd=project.root, **kw)
    assert status == 1 and "corrupt_front_matter.md" in err


def test_cli_sync_commands_end_to_end(tmp_path: Path, fixtures_dir: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    kw = {"cwd": make_project(tmp_path, fixtures_dir).root, "monkeypatch": monkeypatch, "capsys": capsys}
    status, out, _ = run_cli("exercises", "--check", **kw)
    assert status == 1 and "run `make exercises`" in out
    assert run_cli("exercises", **kw)[0] == 0
    assert run_cli("exercises", "--check", **kw)[0] == 0
    status, out, _ = run_cli("colab", "--check", **kw)
    assert status == 1 and "run `make colab`" in out
    assert run_cli("colab", **kw)[0] == 0
    assert run_cli("colab", "--check", **kw)[0] == 0
    status, out, _ = run_cli("check-bilingual", **kw)
    assert status == 0 and "3 file(s) OK" in out
    status, out, _ = run_cli("check-teaches", **kw)
    assert status == 0, out


# ---------------------------------------------------------------- execute and build


def test_quoted_outputs_must_appear_in_the_stored_outputs(tmp_path: Path) -> None:
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from bookkit.quotes import check_notebook

    def notebook(quotes: list) -> object:
        code = new_code_cell("print(x)", outputs=[new_output("stream", name="stdout", text="tensor([1.5000,\n  2.])\n")])
        later = new_code_cell("y", outputs=[new_output("execute_result", data={"text/plain": "65504.0"},
                                                       execution_count=2)])
        return new_notebook(cells=[new_markdown_cell("# t", metadata={"lang": "en"}), code,
                                   new_markdown_cell("It prints `tensor([1.5000, 2.])`.",
                                                     metadata={"lang": "en", "quotes": quotes}),
                                   new_markdown_cell("next", metadata={"lang": "en"}), later])

    assert check_notebook(notebook(["tensor([1.5000, 2.])"]), tmp_path / "c.md", "en")[0] == []
    problems, count = check_notebook(notebook(["tensor([1.5000, 2.])", "65504.0", "3.5"]), tmp_path / "c.md", "en")
    assert count == 3 and len(problems) == 2, "65504.0 is printed by a cell beyond the next prose cell"
    assert "'3.5' as an output" in problems[1].message and "make colab" in problems[1].fix
    assert "must be a list" in check_notebook(notebook("3.5"), tmp_path / "c.md", "en")[0][0].message


def test_web_edition_pages_have_lang_title_switch_links_and_no_cdn(tmp_path: Path, fixtures_dir: Path) -> None:
    """`make book` on a one-chapter book: a Sphinx site per language, nothing loaded from the network."""
    import re

    from bookkit.web import build

    project = make_project(tmp_path, fixtures_dir)
    shutil.copytree(Path(__file__).resolve().parents[1] / "web", tmp_path / "web")
    exercises.sync(project.solutions(), project.exercises_dir, write=True)
    colab.sync(project, write=True)
    index = build(project)
    assert 'href="zh/index.html"' in index.read_text(encoding="utf-8")
    for lang, other, html_lang, title in (("zh", "en", "zh-CN", "示例章节"), ("en", "zh", "en", "Sample chapter")):
        page = (tmp_path / "build" / "web" / lang / "00_sample.html").read_text(encoding="utf-8")
        assert f'<html lang="{html_lang}"' in page
        assert re.search(rf"<title>{title}", page), f"{lang}: the page title is not the chapter's"
        assert f'href="../{other}/00_sample.html"' in page, "no switch to the other language"
        assert f"colab.research.google.com/github/someone/mybook/blob/main/notebooks/{lang}/00_sample.ipynb" in page
        assert "mybinder.org/v2/gh/someone/mybook/main?urlpath=lab/tree/chapters/00_sample.md" in page
        assert "tensor([" in page or "15" in page, "the executed outputs are not on the page"
        remote = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?:[^"]+)"', page)
        assert not remote, f"{lang}: the page loads {remote} from the network"
        assert (tmp_path / "build" / "web" / lang / "_static" / "mathjax" / "tex-chtml.js").is_file()
        assert (tmp_path / "build" / "web" / lang / "searchindex.js").is_file()
        assert (tmp_path / "build" / "web" / lang / "exercises" / "01_sample_exercises.html").is_file()


def test_figures_become_images_in_the_executed_notebook(tmp_path: Path) -> None:
    """The book's pictures must reach the built notebooks and HTML, Chinese labels included."""
    from bookkit.execute import execute

    cells = ("```{code-cell} ipython3\nimport mytorch as torch\nfrom bookkit.figures import show_memory\n"
             "show_memory(torch.arange(6).reshape(2, 3).t());\n```\n")
    nb = execute(parse_myst(cells), "chapters/01_x.md", tmp_path, root=Path(__file__).resolve().parents[1],
                 timeout=120)
    images = [o for c in nb.cells for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, [o.get("output_type") for c in nb.cells for o in c.outputs]


def test_failing_cell_names_chapter_cell_and_error(tmp_path: Path) -> None:
    from bookkit.execute import ExecutionFailed, execute

    cells = "```{code-cell} ipython3\nx = 1\n```\n\n```{code-cell} ipython3\nundefined_name + x\n```\n"
    nb = parse_myst(cells)
    with pytest.raises(ExecutionFailed) as info:
        execute(nb, "chapters/07_broken.md", tmp_path, timeout=60)
    text = str(info.value)
    assert "chapters/07_broken.md: cell 2 failed" in text and "NameError" in text
    assert "undefined_name + x" in text and info.value.cell_number == 2


def test_regenerating_exercises_backs_up_student_answers(tmp_path):
    """`make exercises` must never destroy a student's answers."""
    from bookkit.exercises import PLACEHOLDER, has_student_work, sync

    sol = tmp_path / "solutions" / "01_demo_exercises.md"
    sol.parent.mkdir()
    sol.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n"
        "```{code-cell} ipython3\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n"
        "    ### END SOLUTION\n```\n", encoding="utf-8")
    ex_dir = tmp_path / "exercises"
    sync([sol], ex_dir, write=True)
    generated = (ex_dir / sol.name).read_text(encoding="utf-8")
    assert PLACEHOLDER in generated and not has_student_work(generated)
    answered = generated.replace(PLACEHOLDER, "return 42  # my answer")
    (ex_dir / sol.name).write_text(answered, encoding="utf-8")
    sol.write_text(sol.read_text(encoding="utf-8").replace("return 1", "return 2"), encoding="utf-8")
    sync([sol], ex_dir, write=True)
    backups = list((ex_dir / ".backup").glob("01_demo_exercises.*.md"))
    assert len(backups) == 1 and "my answer" in backups[0].read_text(encoding="utf-8")


def test_chinese_labels_render_with_a_cjk_font() -> None:
    """No 'Glyph … missing from font' warning: the labels are drawn, not boxes."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    from bookkit.figures import CJK_FONT, use_cjk_font

    assert use_cjk_font() == CJK_FONT
    assert "NotoSansCJK" in font_manager.findfont(CJK_FONT, fallback_to_default=False)
    fig, ax = plt.subplots()
    ax.set_title("张量的步长 / strides")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a UserWarning
        fig.canvas.draw()
    plt.close(fig)


def test_links_check_catches_wrong_repo_missing_files_and_missing_links(tmp_path: Path) -> None:
    from bookkit.links import check, colab_url

    (tmp_path / "pyproject.toml").write_text('[tool.bookkit]\nrepo = "me/book"\n')
    for folder in ("chapters", "solutions", "exercises", "notebooks/zh", "notebooks/en"):
        (tmp_path / folder).mkdir(parents=True)
    project = Project(tmp_path)
    good = [colab_url("me/book", f"notebooks/{lang}/01_x.ipynb") for lang in ("zh", "en")]
    for lang in ("zh", "en"):
        (tmp_path / "notebooks" / lang / "01_x.ipynb").write_text("{}")
    binder = "https://mybinder.org/v2/gh/me/book/main?urlpath=lab/tree/chapters/01_x.md"
    (tmp_path / "chapters" / "01_x.md").write_text("\n".join([*good, binder]) + "\n")
    (tmp_path / "README.md").write_text("\n".join(["chapters/01_x.md", *good]) + "\n")
    assert check(project) == ([], 2)

    stale = colab_url("someone-else/book", "notebooks/zh/02_gone.ipynb")
    (tmp_path / "README.md").write_text(f"chapters/01_x.md\n{good[0]}\n{stale}\n")
    messages = [p.message for p in check(project)[0]]
    assert any("repository 'someone-else/book'" in m for m in messages)
    assert any("02_gone.ipynb, which does not exist" in m for m in messages)
    assert any("contents table has no link to" in m and "/en/01_x" in m for m in messages)

    (tmp_path / "solutions" / "01_x_exercises.md").write_text("")  # the chapter now has exercises
    (tmp_path / "exercises" / "01_x_exercises.md").write_text("")
    messages = [p.message for p in check(project)[0]]
    assert any(m == "no link to exercises/01_x_exercises.md" for m in messages)


def test_web_edition_names_a_missing_executed_notebook(tmp_path: Path) -> None:
    """A chapter whose executed notebook is missing stops the web build with what to run, not a traceback."""
    from bookkit.project import Project
    from bookkit.web import WebError, stage

    shutil.copy(Path(__file__).parents[1] / "pyproject.toml", tmp_path)
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "01_x.md").write_text("# x\n", encoding="utf-8")
    with pytest.raises(WebError, match="make colab"):
        stage(Project(tmp_path), "en", tmp_path / "src")


def test_make_mine_names_the_failing_cell_and_its_error(tmp_path: Path) -> None:
    """A chapter that fails on a student's pieces says which cell and what it raised, on one line."""
    from bookkit.mine import _run_chapters
    from bookkit.project import Project

    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "07_x.md").write_text(
        "```{code-cell} ipython3\nx = 1\n```\n\n```{code-cell} ipython3\n"
        "raise ValueError('batch of 3, expected 4')\n```\n", encoding="utf-8")
    (line,) = _run_chapters(Project(tmp_path), tmp_path / "mine")
    assert line.startswith("✗ chapters/07_x.md: cell 2 ") and "ValueError: batch of 3, expected 4" in line
