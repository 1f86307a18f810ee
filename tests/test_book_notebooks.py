"""Every chapter, solution and exercise notebook runs (exercises fail only with NotImplementedError)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bookkit.execute import error_outputs, execute
from bookkit.notebook import read_notebook
from bookkit.project import Project

ROOT = Path(__file__).resolve().parent.parent
PROJECT = Project(ROOT)
CHAPTERS, SOLUTIONS, EXERCISES = PROJECT.chapters(), PROJECT.solutions(), PROJECT.exercises()
TIMEOUT = 600  # seconds per cell

pytestmark = pytest.mark.notebook


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths]


def test_glob_found_chapters() -> None:
    assert CHAPTERS, f"no chapters/NN_slug.md found under {PROJECT.chapters_dir}: the book has no chapters"


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("path", CHAPTERS + SOLUTIONS, ids=_ids(CHAPTERS + SOLUTIONS))
def test_notebook_executes(path: Path) -> None:
    execute(read_notebook(path), path, PROJECT.chapters_dir, root=ROOT, timeout=TIMEOUT)


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("path", EXERCISES, ids=_ids(EXERCISES))
def test_exercise_fails_only_with_not_implemented(path: Path) -> None:
    nb = execute(read_notebook(path), path, PROJECT.chapters_dir, root=ROOT, timeout=TIMEOUT,
                 allow_errors=True)
    errors = error_outputs(nb)
    assert errors, f"{path.name}: no cell raised NotImplementedError; does it have a SOLUTION region?"
    wrong = [f"cell {cell}: {ename}: {evalue}" for cell, ename, evalue in errors
             if ename != "NotImplementedError"]
    assert not wrong, (f"{path.name}: errors other than the exercise placeholder "
                       f"(the student version must only fail with NotImplementedError):\n" + "\n".join(wrong))
