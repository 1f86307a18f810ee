"""Every solution and exercise notebook runs (exercises fail only with NotImplementedError), and the
executed chapters stored in notebooks/{zh,en}/ are in step with chapters/.

The chapters themselves run under nbval: `pytest --nbval` (set in pyproject.toml) executes the stored
notebooks/{zh,en}/NN_slug.ipynb cell by cell and compares every output with the stored one; the
staleness test below makes sure those stored notebooks are the chapters as they are now.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bookkit.colab import sync, total_size
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


def test_stored_notebooks_match_the_chapters_and_stay_small() -> None:
    """What nbval runs is what chapters/ says (checked without executing anything)."""
    report = sync(PROJECT, write=False)
    names = [str(p.relative_to(ROOT)) for p in report.stale + report.orphans]
    assert report.ok, f"notebooks/ is stale ({', '.join(names)}): run `make colab` and commit the result"
    assert total_size(PROJECT) < 30e6, "notebooks/ must stay under 30 MB: lower the figures' size or DPI"


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("path", SOLUTIONS, ids=_ids(SOLUTIONS))
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
