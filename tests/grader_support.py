"""Shared helpers of the grader tests: the fixture exercise and generated student folders."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from bookkit.exercises import strip_solutions
from bookkit.grader.batch import Exercise
from bookkit.grader.bench import fill_regions
from bookkit.grader.regions import build_program
from bookkit.notebook import parse_myst

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "grader" / "01_fixture_exercises.md"
NAME = FIXTURE.stem
CORRECT = ["return a + b", "return [x * k for x in xs]",
           "if b == 0:\n    raise ValueError('division by zero')\nreturn a / b"]
TESTS = [("ex1_add", 2), ("ex2_scale", 3), ("ex3_safe_div", 1)]


def fixture_exercises() -> list[Exercise]:
    source = FIXTURE.read_text(encoding="utf-8")
    return [Exercise(NAME, source, build_program(parse_myst(source)))]


def student_text(bodies: list[str | None]) -> str:
    """The fixture's student .md with these region bodies (None: the NotImplementedError stub)."""
    return fill_regions(strip_solutions(FIXTURE.read_text(encoding="utf-8")), bodies)


def student_ipynb(bodies: list[str | None], colab: bool = False) -> str:
    """The same as a .ipynb, as JupyterLab saves it (or as Colab downloads it: ids, colab metadata)."""
    nb = parse_myst(student_text(bodies))
    cells = []
    for index, cell in enumerate(nb.cells):
        data = {"cell_type": cell.cell_type, "metadata": dict(cell.metadata),
                "source": cell.source.splitlines(keepends=True)}
        if cell.cell_type == "code":
            data.update(execution_count=None, outputs=[])
        if colab:
            data["metadata"]["id"] = f"cell{index}"
        cells.append(data)
    meta = {"kernelspec": {"display_name": "Python 3", "name": "python3"}}
    if colab:
        meta["colab"] = {"provenance": []}
    return json.dumps({"cells": cells, "metadata": meta, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def write_student(folder: Path, student: str, bodies: list[str | None] | None = None, *,
                  text: str | None = None, name: str | None = None) -> Path:
    path = folder / student / (name or f"{NAME}.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(student_text(bodies) if text is None else text, encoding="utf-8")
    return path


def rows(out: Path) -> dict[str, list[tuple[str, int, str]]]:
    """gradebook.csv as {student: [(test, points, status), ...]}."""
    table: dict[str, list[tuple[str, int, str]]] = {}
    with open(out / "gradebook.csv", encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f):
            table.setdefault(row["student"], []).append((row["test"], int(row["points"]), row["status"]))
    return table


def all_passed() -> list[tuple[str, int, str]]:
    return [(t, p, "passed") for t, p in TESTS]
