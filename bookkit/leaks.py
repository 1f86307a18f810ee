"""``check-leaks``: a chapter never shows the answer to one of its exercises.

Every exercise is a *piece* of mytorch, and its reference body (what goes between ``### BEGIN
SOLUTION`` and ``### END SOLUTION`` in ``solutions/``, copied from the library by
:func:`bookkit.pieces.piece_source`) is the answer. A chapter teaches the concept with its own code and
may show where mytorch *calls* a piece, but it must not print the body: not in a code cell, not in
a stored output (``inspect.getsource`` of the piece, or of a function that holds it).

The check: no run of :data:`RUN` or more consecutive lines of any piece's body appears in
``chapters/*.md`` or in the outputs of ``notebooks/{zh,en}/*.ipynb``. Lines are compared with their
whitespace normalised, comments and docstrings dropped and blank lines skipped. (The notebooks'
code cells are the chapters' code, so only their outputs are read.)
"""
from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat

from bookkit.bilingual import LANGS
from bookkit.exercises import BEGIN_SOLUTION, END_SOLUTION
from bookkit.project import Project
from bookkit.pysource import parse_python
from bookkit.report import Problem

#: How many consecutive body lines make a leak.
RUN = 4
_OPEN = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")


def _drop_comments(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` inside a string literal is kept)."""
    text = line.strip()
    if text.startswith("#"):
        return ""
    if "#" not in text:
        return text
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return text[:tok.start[1]]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # not one line of Python (prose, an open bracket): keep it whole
    return text


def normalise(line: str) -> str:
    """One line as the check compares it: no comment, runs of whitespace made one space."""
    return re.sub(r"\s+", " ", _drop_comments(line)).strip()


def _docstring_lines(source: str) -> set[int]:
    """1-based line numbers of the docstrings in ``source`` (module, classes, functions)."""
    try:
        tree = parse_python(source)
    except SyntaxError:
        return set()
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.update(range(body[0].lineno, body[0].end_lineno + 1))
    return out


def body_lines(source: str) -> list[str]:
    """The normalised, non-empty lines of a piece's solution text (between the markers, all of
    them for a class), comments and docstrings dropped."""
    lines = source.split("\n")
    docs = _docstring_lines(textwrap.dedent(source))
    out, inside = [], False
    for number, line in enumerate(lines, 1):
        mark = line.strip()
        if mark == BEGIN_SOLUTION:
            inside = True
        elif mark == END_SOLUTION:
            inside = False
        elif inside and number not in docs:
            text = normalise(line)
            if text:
                out.append(text)
    return out


def reference_bodies() -> dict[str, tuple[str, list[str]]]:
    """piece name -> (exercise number, normalised body lines), from mytorch's piece registry."""
    from bookkit.pieces import piece_source, registry

    return {name: (p.exercise, body_lines(piece_source(name))) for name, p in registry().items()}


@dataclass(frozen=True)
class Leak:
    """``lines`` consecutive lines of piece ``piece``'s body, starting at ``at`` in a shown text."""

    piece: str
    exercise: str
    at: int        # index into the text's lines
    lines: int
    whole: bool    # the run is the piece's whole body


def find(shown: list[str], bodies: dict[str, tuple[str, list[str]]], run: int = RUN) -> list[Leak]:
    """Leaks in ``shown`` (raw lines): every maximal run of >= ``run`` consecutive body lines.

    Blank and comment-only lines of ``shown`` are skipped, so a body pasted with its comments,
    or spaced out, is still found.
    """
    kept = [(i, normalise(line)) for i, line in enumerate(shown)]
    kept = [(i, text) for i, text in kept if text]
    texts = [text for _, text in kept]
    leaks = []
    for name, (exercise, body) in bodies.items():
        if not body:
            continue
        need = min(run, len(body))  # a body shorter than a run leaks when shown whole
        grams = {tuple(body[k:k + need]) for k in range(len(body) - need + 1)}
        k = 0
        while k + need <= len(texts):
            if tuple(texts[k:k + need]) in grams:
                end = k + need
                while end < len(texts) and tuple(texts[end - need + 1:end + 1]) in grams:
                    end += 1
                leaks.append(Leak(name, exercise, kept[k][0], end - k, end - k >= len(body)))
                k = end
            else:
                k += 1
    return leaks


def _cell_numbers(lines: list[str]) -> list[int | None]:
    """For each line of a MyST chapter, the 1-based number of the code cell it is in (or None)."""
    out: list[int | None] = [None] * len(lines)
    fence, count = None, 0
    for i, line in enumerate(lines):
        if fence is None:
            m = _OPEN.match(line)
            if m:
                fence, count = m[1], count + 1
        elif line.rstrip() == fence:
            fence = None
        else:
            out[i] = count
    return out


_FIX = ("a chapter teaches the concept with its own smaller code and leaves the piece to the "
        "student: remove the body (show where mytorch calls `{piece}` instead); its reference "
        "lives in solutions/ only")
_RERUN = ("; here the cell prints it (e.g. `inspect.getsource`): change the cell, then `make colab` "
          "to regenerate the stored notebooks")


def _problem(path: Path, leak: Leak, where: str, line: int | None, output: bool = False) -> Problem:
    what = (f"the whole reference body ({leak.lines} line(s))" if leak.whole else
            f"{leak.lines} consecutive lines of the reference body")
    return Problem(path, f"{where} shows {what} of piece `{leak.piece}` (exercise {leak.exercise})",
                   _FIX.format(piece=leak.piece) + (_RERUN if output else ""), line=line)


def check_chapter(path: Path, bodies: dict[str, tuple[str, list[str]]]) -> list[Problem]:
    """Leaks in one chapter source (code cells and prose alike)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    cells = _cell_numbers(lines)
    problems = []
    for leak in find(lines, bodies):
        cell = cells[leak.at]
        where = f"code cell {cell}" if cell is not None else "the text"
        problems.append(_problem(path, leak, where, leak.at + 1))
    return problems


def output_lines(cell) -> list[str]:
    """The text a code cell's stored outputs show, as lines."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(str(output.get("text", "")))
        data = output.get("data", {})
        for kind in ("text/plain", "text/markdown", "text/html"):
            parts.append(str(data.get(kind, "")))
        if output.get("output_type") == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return "\n".join(parts).split("\n")


def _source_line(cell, lines: list[str]) -> int | None:
    """1-based line of the chapter where a notebook code cell's source starts (None: not found)."""
    first = next((line for line in cell.source.split("\n") if line.strip()), None)
    return lines.index(first) + 1 if first in lines else None


def check_notebook(path: Path, chapter: Path, bodies: dict[str, tuple[str, list[str]]],
                   root: Path) -> list[Problem]:
    """Leaks in the stored outputs of one executed notebook, named at the chapter's cell."""
    nb = nbformat.read(path, as_version=4)
    lines = chapter.read_text(encoding="utf-8").split("\n")
    problems = []
    for index, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code":
            continue
        for leak in find(output_lines(cell), bodies):
            where = f"the stored output of this code cell ({path.relative_to(root)}, cell {index})"
            problems.append(_problem(chapter, leak, where, _source_line(cell, lines), output=True))
    return problems


def check(project: Project, bodies: dict[str, tuple[str, list[str]]] | None = None
          ) -> tuple[list[Problem], int]:
    """Every leak in the chapters and their stored outputs; and how many files were read."""
    bodies = reference_bodies() if bodies is None else bodies
    problems, count = [], 0
    for chapter in project.chapters():
        problems += check_chapter(chapter, bodies)
        count += 1
        for lang in LANGS:
            stored = project.notebooks_dir / lang / f"{chapter.stem}.ipynb"
            if stored.is_file():
                problems += check_notebook(stored, chapter, bodies, project.root)
                count += 1
    return problems, count
