"""Solution regions: what the grader takes from a student, and the program it assembles.

Only the text between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is taken from a submission,
region by region, in order. It replaces the reference solution in the INSTRUCTOR's notebook; every
other cell, the test cells, the hidden tests and all metadata come from the instructor's source.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from nbformat import NotebookNode

from bookkit.exercises import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION
from bookkit.notebook import cell_tags


class RegionError(ValueError):
    """The markers of a submission are unbalanced, or their number differs from the exercise's."""


@dataclass(frozen=True)
class Test:
    """One graded test cell of an exercise notebook."""

    id: str
    points: int
    cell: int  # index in Program.cells


@dataclass(frozen=True)
class Program:
    """An instructor's exercise notebook, ready to receive a student's regions.

    ``cells`` are job cells for the runner: ``{"kind": "code", "source": str}`` or
    ``{"kind": "test", "parts": [["visible" | "hidden", str], ...]}``; a code cell's source holds
    one ``{REGION_k}`` slot per solution region (k counts over the whole notebook).
    """

    cells: tuple[dict, ...]
    slots: tuple[tuple[int, int, str], ...]  # (cell index, line index, indent) of each region
    tests: tuple[Test, ...]
    reference: tuple[str, ...]  # the reference solution of each region

    def assemble(self, regions: list[str] | None) -> list[dict]:
        """Job cells with ``regions`` (or the reference solutions) in place; fresh copies."""
        texts = self.reference if regions is None else regions
        if len(texts) != len(self.slots):
            raise RegionError(f"expected {len(self.slots)} solution regions, got {len(texts)}")
        cells = [dict(c, lines=list(c["lines"])) if c["kind"] == "code" else dict(c) for c in self.cells]
        for (cell, line, indent), body in zip(self.slots, texts, strict=True):
            cells[cell]["lines"][line] = _reindent(body, indent)
        return [{"kind": "code", "source": "\n".join(c.pop("lines"))} if c["kind"] == "code" else c
                for c in cells]


def _reindent(body: str, indent: str) -> str:
    """Student text re-indented like the instructor's region; IPython magics disabled."""
    lines = []
    for line in textwrap.dedent(body.expandtabs(4)).splitlines():
        if line.lstrip().startswith(("%", "!")):  # IPython magic / shell escape: not Python
            line = line[: len(line) - len(line.lstrip())] + "pass  # IPython magic removed by the grader"
        lines.append(indent + line if line.strip() else "")
    if not any(line.strip() for line in lines):
        lines = [indent + "pass"]
    return "\n".join(lines)


def find_regions(lines: list[str]) -> list[tuple[int, int]]:
    """``(begin, end)`` line indices of each solution region; RegionError when unbalanced."""
    regions, begin = [], None
    for index, line in enumerate(lines):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if begin is not None:
                raise RegionError(f"line {index + 1}: '{BEGIN_SOLUTION}' inside another region")
            begin = index
        elif marker == END_SOLUTION:
            if begin is None:
                raise RegionError(f"line {index + 1}: '{END_SOLUTION}' without a BEGIN before it")
            regions.append((begin, index))
            begin = None
    if begin is not None:
        raise RegionError(f"line {begin + 1}: '{BEGIN_SOLUTION}' is never closed")
    return regions


def regions_of_text(text: str) -> list[str]:
    """The student's text of each region, in order, from any text (MyST .md, .py, …)."""
    lines = text.splitlines()
    return ["\n".join(lines[b + 1:e]) for b, e in find_regions(lines)]


def regions_of_cells(sources: list[str]) -> list[str]:
    """The student's text of each region from the code cells of a notebook, in order."""
    found = []
    for source in sources:
        found += regions_of_text(source)
    return found


def _test_parts(source: str) -> list[list[str]]:
    """Split a test cell at its hidden-test markers into visible/hidden parts that compile alone."""
    parts: list[list[str]] = [["visible", ""]]
    for line in source.splitlines(keepends=True):
        marker = line.strip()
        if marker in (BEGIN_HIDDEN, END_HIDDEN):
            parts.append(["hidden" if marker == BEGIN_HIDDEN else "visible", ""])
        else:
            parts[-1][1] += line
    parts = [p for p in parts if p[1].strip()]
    try:
        for _, text in parts:
            compile(text, "<test>", "exec")
    except SyntaxError:  # markers inside a block: run the cell whole, as hidden
        return [["hidden", source]]
    return parts


def build_program(nb: NotebookNode) -> Program:
    """The Program of an instructor's solutions notebook (compare-torch cells are left out)."""
    cells: list[dict] = []
    slots, tests, reference = [], [], []
    for cell in nb.cells:
        if cell.cell_type != "code" or "compare-torch" in cell_tags(cell):
            continue
        spec = cell.get("metadata", {}).get("grade")
        lines = cell.source.splitlines()
        regions = find_regions(lines)
        if isinstance(spec, dict):
            if regions:
                raise RegionError(f"test cell {spec.get('id')!r} holds a solution region; "
                                  "put solutions in their own cells")
            tests.append(Test(str(spec.get("id", f"cell{len(cells) + 1}")),
                              int(spec.get("points", 0) or 0), len(cells)))
            cells.append({"kind": "test", "parts": _test_parts(cell.source)})
            continue
        kept: list[str] = []
        cursor = 0
        for begin, end in regions:
            kept += lines[cursor:begin + 1]
            indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
            slots.append((len(cells), len(kept), indent))
            reference.append("\n".join(lines[begin + 1:end]))
            kept += ["", lines[end]]
            cursor = end + 1
        kept += lines[cursor:]
        cells.append({"kind": "code", "lines": kept})
    return Program(tuple(cells), tuple(slots), tuple(tests), tuple(reference))
