"""``check-outputs``: where the prose quotes what a cell prints, the stored output must show it.

A prose cell that names an output lists it in its metadata, in the words of the output::

    +++ {"lang": "en", "quotes": ["65504.0", "(0-2): 3 x Linear"]}

    `float16` tops out at 65504 …

Each quoted text must appear (spaces and line breaks counted loosely) in the stored output of a code
cell next to the prose cell: the code cells between it and the prose cells before and after it, in
its own language's executed notebook under ``notebooks/``. So when mytorch changes what a cell prints,
nbval fails on the cell, and this check names the sentence that has to change with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from bookkit.bilingual import LANGS
from bookkit.project import Project
from bookkit.report import Problem

KEY = "quotes"


def _loose(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _output_text(cell: NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(str(output.get("text", "")))
        data = output.get("data", {})
        parts.append(str(data.get("text/plain", "")))
        if output.get("output_type") == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return _loose(" ".join(parts))


def _line_of(cell: NotebookNode, text: str) -> int | None:
    first = next((line for line in cell.source.splitlines() if line.strip()), None)
    lines = text.splitlines()
    return lines.index(first) + 1 if first in lines else None


def check_notebook(nb: NotebookNode, source: Path, where: str, text: str = "") -> tuple[list[Problem], int]:
    """Problems with the quoted outputs of one executed single-language notebook; and the count.

    ``text`` is the source file's text, to name the line of the prose cell.
    """
    problems, count = [], 0
    cells = nb.cells
    prose = [i for i, c in enumerate(cells) if c.cell_type == "markdown"]
    for k, index in enumerate(prose):
        quotes = cells[index].get("metadata", {}).get(KEY, [])
        if not quotes:
            continue
        if not isinstance(quotes, list) or not all(isinstance(q, str) and q.strip() for q in quotes):
            problems.append(Problem(source, f"{where}: `{KEY}` must be a list of non-empty strings",
                                    'write it as "quotes": ["text the output shows", …]',
                                    line=_line_of(cells[index], text)))
            continue
        first = prose[k - 1] + 1 if k else 0
        last = prose[k + 1] if k + 1 < len(prose) else len(cells)
        nearby = [cells[i] for i in range(first, last) if cells[i].cell_type == "code"]
        shown = " ".join(_output_text(c) for c in nearby)
        for quote in quotes:
            count += 1
            if _loose(quote) not in shown:
                problems.append(Problem(
                    source, f"{where}: the text quotes {quote!r} as an output, but no stored output of the "
                    f"{len(nearby)} code cell(s) around it shows it",
                    "make the sentence say what the cell prints (or fix the code), then `make colab`; "
                    "or drop the quote from the cell's `quotes`", line=_line_of(cells[index], text)))
    return problems, count


def check(project: Project) -> tuple[list[Problem], int]:
    """All quoted outputs of every chapter, in both languages; and how many were checked."""
    problems, count = [], 0
    for chapter in project.chapters():
        text = chapter.read_text(encoding="utf-8")
        for lang in LANGS:
            stored = project.notebooks_dir / lang / f"{chapter.stem}.ipynb"
            if not stored.is_file():
                problems.append(Problem(chapter, f"notebooks/{lang}/{stored.name} is missing",
                                        "run `make colab`"))
                continue
            nb = nbformat.read(stored, as_version=4)
            found, n = check_notebook(nb, chapter, f"{lang} text", text)
            problems += found
            count += n
    return problems, count
