"""Bad input everywhere: the book's commands must name the file, say what is wrong and what to do,
and exit non-zero without a Python traceback. Also: saving from JupyterLab keeps every source
byte-identical, and the Colab install cell brings what the notebooks import. Fast: nothing is executed.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import jupytext
import pytest
from jupytext.config import find_jupytext_configuration_file, load_jupytext_configuration_file

from bookkit import cli, colab
from bookkit.project import Project

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*Project(ROOT).chapters(), *Project(ROOT).solutions(), *Project(ROOT).exercises()])
FENCE = "`" * 3


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text
    return code, text


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A minimal book checkout: pyproject with [tool.bookkit] and one good chapter."""
    (tmp_path / "pyproject.toml").write_text('[tool.bookkit]\nrepo = "a/b"\n', encoding="utf-8")
    for folder in ("chapters", "solutions", "exercises"):
        (tmp_path / folder).mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "sample_chapter.md", tmp_path / "chapters" / "01_sample.md")
    return tmp_path


# ------------------------------------------------------------- saving from JupyterLab


def _config_for(path: Path):
    found = find_jupytext_configuration_file(str(path.parent))
    assert found, f"no jupytext config found above {path}: JupyterLab would drop the `mytorch:` metadata"
    return load_jupytext_configuration_file(found)


@pytest.mark.parametrize("path", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p in SOURCES])
def test_jupytext_round_trip_is_byte_identical(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="md:myst")
    again = jupytext.writes(nb, fmt="md:myst", config=_config_for(path))
    assert again == text, (
        f"{path.relative_to(ROOT)} changes when saved from JupyterLab (jupytext): write its front matter "
        "the way jupytext does: `.venv/bin/jupytext --to md:myst " f"{path.relative_to(ROOT)}`")


@pytest.mark.parametrize("path", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p in SOURCES])
def test_jupyterlab_save_keeps_metadata_and_drops_ui_noise(tmp_path: Path, path: Path) -> None:
    """What a plain JupyterLab's jupytext contents manager (Binder's, `jupyter lab` without the book's
    settings) writes back, with the UI's metadata noise and the kernelspec in the order JupyterLab's
    own code builds it: {name, display_name, language}."""
    from jupytext.sync_contentsmanager import TextFileContentsManager

    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    shutil.copy(path, tmp_path / path.name)
    manager = TextFileContentsManager(root_dir=str(tmp_path))
    nb = manager.get(path.name, content=True, type="notebook")["content"]
    assert nb.metadata["mytorch"]["chapter"] >= 0
    for cell in nb.cells:
        cell.metadata.update(collapsed=False, scrolled=True, execution={"iopub.status.busy": "t"})
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    manager.save({"type": "notebook", "format": "json", "content": nb}, path.name)
    assert (tmp_path / path.name).read_text(encoding="utf-8") == path.read_text(encoding="utf-8"), (
        f"{path.relative_to(ROOT)}: saving from JupyterLab rewrites it; write the front matter's "
        "kernelspec as name, display_name, language (JupyterLab's order)")


# ------------------------------------------------------------- corrupt files


CORRUPTIONS = {
    "empty": (b"", "empty"),
    "binary": (b"---\njupytext: {}\n---\n\n\x00\xff\xfe junk\n", "line 5"),
    "bad_yaml": (b"---\njupytext: [unclosed\nkernelspec: {}\n---\n\ntext\n", "front matter"),
    "unclosed": (f"---\njupytext: {{}}\n---\n\n{FENCE}{{code-cell}} ipython3\nx = 1\n".encode(),
                 "never closed"),
}


@pytest.mark.parametrize("kind", CORRUPTIONS)
@pytest.mark.parametrize("command", ["check-bilingual", "check-teaches", "colab", "book"])
def test_corrupt_chapter_named_with_fix_and_no_traceback(
        book: Path, capsys: pytest.CaptureFixture[str], kind: str, command: str) -> None:
    data, what = CORRUPTIONS[kind]
    (book / "chapters" / "02_broken.md").write_bytes(data)
    argv = [command, "--check"] if command == "colab" else [command]
    code, text = run_cli(capsys, "--root", book, *argv)
    assert code == 1
    assert "02_broken.md" in text and what in text
    assert not (book / "build").exists()


@pytest.mark.parametrize("where", ["solutions", "exercises"])
def test_exercises_check_on_binary_source_or_exercise(
        book: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    (book / where / "01_sample_exercises.md").write_bytes(b"---\n\xff\xfe\n")
    code, text = run_cli(capsys, "--root", book, "exercises", "--check")
    assert code == 1 and f"{where}/01_sample_exercises.md" in text and "UTF-8" in text
    if where == "exercises":
        assert "make exercises" in text


def test_grade_on_a_file_without_tests_fails(book: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run_cli(capsys, "--root", book, "grade", book / "chapters" / "01_sample.md")
    assert code == 1 and "no graded test cells" in text and "01_sample.md" in text


def test_missing_file_is_named(book: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run_cli(capsys, "--root", book, "check-bilingual", book / "chapters" / "nope.md")
    assert code == 1 and "nope.md" in text and "does not exist" in text


# ------------------------------------------------------------- instructors: make grade


def _grade_class(capsys, book: Path, submissions: Path, out: Path) -> tuple[int, str]:
    from bookkit.grader import sandbox

    result = run_cli(capsys, "--root", book, "grade-class", submissions, "--out", out, "--quiet")
    # the command's refusal without isolation is its own: a later grader in this process (a test
    # of run_job without namespaces, in the same pytest worker) is not refused because of it
    assert sandbox._REQUIRE == [False]
    return result


@pytest.mark.parametrize("out", ["solutions", "solutions/grades", "exercises", ".", "chapters/x"])
def test_grade_refuses_out_inside_the_book(book: Path, tmp_path_factory, capsys, out: str) -> None:
    subs = tmp_path_factory.mktemp("subs")
    (subs / "alice").mkdir()
    before = sorted(p.name for p in (book / "solutions").iterdir())
    code, text = _grade_class(capsys, book, subs, book / out)
    assert code == 2 and "inside the book's own files" in text and "OUT=grades" in text
    assert sorted(p.name for p in (book / "solutions").iterdir()) == before


def test_grade_refuses_out_inside_submissions_or_a_file_or_unwritable(
        book: Path, tmp_path_factory, capsys) -> None:
    subs = tmp_path_factory.mktemp("subs")
    (subs / "alice").mkdir()
    code, text = _grade_class(capsys, book, subs, subs / "grades")
    assert code == 2 and "inside SUBMISSIONS" in text
    (book / "afile").write_text("x", encoding="utf-8")
    code, text = _grade_class(capsys, book, subs, book / "afile")
    assert code == 2 and "is a file" in text
    blocker = book / "blocker"
    blocker.write_text("x", encoding="utf-8")  # a path under a file can never be created, even by root
    code, text = _grade_class(capsys, book, subs, blocker / "grades")
    assert code == 2 and "cannot be written" in text


def test_grade_empty_stray_and_single_student_folders(book: Path, tmp_path_factory, capsys) -> None:
    out = tmp_path_factory.mktemp("out")
    subs = tmp_path_factory.mktemp("subs")
    code, text = _grade_class(capsys, book, subs, out)
    assert code == 2 and "no student folders" in text
    (subs / "notes.txt").write_text("x", encoding="utf-8")
    code, text = _grade_class(capsys, book, subs, out)
    assert code == 2 and "no student folders" in text
    (subs / "01_sample_exercises.md").write_text("x", encoding="utf-8")
    code, text = _grade_class(capsys, book, subs, out)
    assert code == 2 and "one student's folder" in text and "SUBMISSIONS/<student id>/" in text
    code, text = _grade_class(capsys, book, tmp_path_factory.getbasetemp() / "nope", out)
    assert code == 2 and "no such folder" in text


def test_grade_lists_non_utf8_names_and_grades_everyone(book: Path, tmp_path_factory, capsys) -> None:
    """A name made on another system's encoding is that student's note, never the class's stop."""
    subs = tmp_path_factory.mktemp("subs")
    try:
        (subs / "alice" / "sub").mkdir(parents=True)
        (subs / "alice" / "sub" / b"ex\xfe.md".decode("utf-8", "surrogateescape")).write_text("x")
    except (UnicodeEncodeError, OSError):
        pytest.skip("this file system does not store non-UTF-8 names")
    (subs / "stray.txt").write_text("x", encoding="utf-8")
    code, text = _grade_class(capsys, book, subs, tmp_path_factory.mktemp("out"))
    assert "UTF-8" not in text  # not refused for it (this book has no exercises to grade, though)
    assert "ignoring 1 file(s)" in text and "stray.txt" in text  # (grading itself: test_grader_attacks)


# ------------------------------------------------------------- arguments


@pytest.mark.parametrize("argv, message", [
    (["grade-class", "x", "--jobs", "abc"], "must be a whole number, not 'abc'"),
    (["bench-grade", "--n", "0"], "must be positive"),
    (["grade", "--timeout", "soon"], "whole number of seconds"),
])
def test_bad_numbers_are_usage_errors(capsys, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


make = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@make
@pytest.mark.parametrize("argv, message", [
    (["test", "JOBS=abc"], "JOBS must be a positive number or 'auto'"),
    (["lab", "PORT=x"], "PORT must be a number"),
    (["lab", "LANG=fr"], "LANG must be both, zh or en"),
    (["no-such-target"], "unknown target 'no-such-target'"),
])
def test_make_rejects_bad_targets_and_values(argv: list[str], message: str) -> None:
    done = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), *argv],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and message in done.stdout + done.stderr


@make
def test_make_help_is_bilingual_and_check_is_not_confused_with_lint() -> None:
    done = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "help"],
                          capture_output=True, text=True, timeout=60)
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.startswith("  ")}
    assert {"lab", "check", "lint", "test", "book", "colab"} <= set(lines) and "checks" not in lines
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in line) and "/" in line for line in lines.values()), \
        "every target is described in Chinese and English"
    assert "students" in lines["check"] and "contributors" in lines["lint"]


# ------------------------------------------------------------- Colab


def test_colab_install_cell_brings_the_figure_dependencies() -> None:
    source = colab.install_cell_source("owner/name")
    assert "'mytorch[book] @ git+https://github.com/owner/name'" in source
    assert "('mytorch', 'bookkit', 'matplotlib', 'mplfonts')" in source
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    assert {"matplotlib", "mplfonts"} <= set(extras["book"])
    assert {"jupytext", "pytest", "nbval"} <= set(extras["dev"]) and "jupyterlab" in extras["lab"]


@pytest.mark.timeout(120)
def test_a_failed_colab_install_stops_the_notebook_with_one_sentence(tmp_path: Path) -> None:
    """Run the install cell in a kernel where a module is missing and pip cannot install: the cell
    raises, its error is one bilingual sentence (no traceback), and the next cell never runs."""
    from nbformat.v4 import new_code_cell, new_notebook

    from bookkit.execute import ExecutionFailed, execute

    source = colab.install_cell_source("owner/name")
    source = source.replace("'mytorch', 'bookkit',", "'no_such_module_for_the_test', 'bookkit',")
    source = source.replace("git+https://github.com/owner/name", f"file://{tmp_path}/not-a-project")
    nb = new_notebook(cells=[new_code_cell(source), new_code_cell("print('the next cell ran')")])
    with pytest.raises(ExecutionFailed) as info:
        execute(nb, "notebooks/en/01_x.ipynb", tmp_path, timeout=100)
    assert info.value.cell_number == 1
    error = [o for o in nb.cells[0].outputs if o.output_type == "error"][0]
    assert error.ename == "InstallFailed"
    assert error.traceback == [error.evalue], "the failure must read as one sentence, not a traceback"
    assert "github.com/owner/name failed" in error.evalue and "安装失败" in error.evalue
    assert not nb.cells[1].get("outputs")
