"""The two-language rule: every markdown cell is tagged zh or en, and comes in zh→en pairs."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from nbformat import NotebookNode

from bookkit.notebook import cell_lang, cell_lines, read_notebook
from bookkit.report import Problem

LANGS = ("zh", "en")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")
_HEADING = re.compile(r"^(#{1,6})\s")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def headings(markdown: str) -> list[int]:
    """Levels of the ATX headings (``#`` = 1, ``##`` = 2, ...) outside fenced code."""
    levels, fence = [], ""
    for line in markdown.splitlines():
        match = _FENCE.match(line)
        if match:
            if not fence:
                fence = match[1]
            elif line.strip().startswith(fence):
                fence = ""
            continue
        heading = _HEADING.match(line)
        if heading and not fence:
            levels.append(len(heading[1]))
    return levels


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among ideographs plus Latin letters (0.0 for neither)."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def check_notebook(nb: NotebookNode, path: Path, text: str | None = None) -> list[Problem]:
    """All violations of the two-language rule in one notebook."""
    lines = cell_lines(text, nb) if text is not None else [0] * len(nb.cells)
    problems: list[Problem] = []

    def add(index: int, message: str, fix: str) -> None:
        problems.append(Problem(path, message, fix, cell=index + 1, line=lines[index] or None))

    cells = nb.cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        lang = cell_lang(cell)
        if lang not in LANGS:
            found = "no lang tag" if lang is None else f"lang {lang!r}"
            add(index, f"markdown cell has {found}",
                'put a line `+++ {"lang": "zh"}` or `+++ {"lang": "en"}` right before it')
            continue
        if lang == "zh":
            _check_text(add, index, cell.source, "zh")
            partner = cells[index + 1] if index + 1 < len(cells) else None
            if partner is None or partner.cell_type != "markdown" or cell_lang(partner) != "en":
                add(index, "zh cell has no en cell right after it",
                    'add its English translation as the next cell, after a line `+++ {"lang": "en"}`')
                continue
            zh_levels, en_levels = headings(cell.source), headings(partner.source)
            if zh_levels != en_levels:
                add(index, f"headings differ between this zh cell {_show(zh_levels)} and its "
                    f"en partner {_show(en_levels)}",
                    "give both languages the same headings, at the same levels, in the same order")
        else:
            _check_text(add, index, cell.source, "en")
            previous = cells[index - 1] if index > 0 else None
            if previous is None or previous.cell_type != "markdown" or cell_lang(previous) != "zh":
                add(index, "en cell has no zh cell right before it",
                    'add its Chinese version just before it, after a line `+++ {"lang": "zh"}` '
                    "(order: zh first, then en)")
    return problems


def _check_text(add, index: int, source: str, lang: str) -> None:
    share = cjk_share(source)
    if lang == "zh" and not _CJK.search(source):
        add(index, "zh cell contains no Chinese characters",
            "write this cell in Chinese, or tag it en if it is the English text")
    if lang == "en" and share > 0.5:
        add(index, f"en cell is mostly Chinese ({share:.0%} CJK characters)",
            "write this cell in English, or tag it zh if it is the Chinese text")


def _show(levels: list[int]) -> str:
    return "[" + ", ".join("#" * level for level in levels) + "]" if levels else "[no headings]"


def check_file(path: Path) -> list[Problem]:
    """Read ``path`` and check it (a NotebookError propagates for unreadable files)."""
    nb = read_notebook(path)
    return check_notebook(nb, path, Path(path).read_text(encoding="utf-8"))


def split(nb: NotebookNode, lang: str) -> NotebookNode:
    """A copy of ``nb`` with only the ``lang`` prose (and every code and raw cell)."""
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, not {lang!r}")
    result = copy.deepcopy(nb)
    result.cells = [
        cell for cell in result.cells if cell.cell_type != "markdown" or cell_lang(cell) == lang
    ]
    result.metadata.setdefault("mytorch", {})["lang"] = lang
    return result
