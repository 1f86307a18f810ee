"""Reading the book's notebooks (jupytext MyST Markdown) with errors that say what to do."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
from nbformat import NotebookNode

MYST = "md:myst"


class NotebookError(Exception):
    """A notebook file is missing or cannot be parsed; the message names the file and the fix."""


def read_notebook(path: Path | str) -> NotebookNode:
    """Read a chapter, solution or exercise file (MyST ``.md`` or ``.ipynb``) as a notebook."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a notebook file" if path.is_dir() else "does not exist"
        raise NotebookError(f"{path}: {what}. Check the path (chapters are chapters/NN_slug.md).")
    text = read_text(path)
    if not text.strip():
        raise NotebookError(
            f"{path}: the file is empty. Restore it from git (`git diff {path}` shows what was lost) "
            "or write its front matter and cells (see CONTRIBUTING.md)."
        )
    if path.suffix == ".ipynb":
        try:
            return nbformat.reads(text, as_version=4)
        except Exception as exc:  # nbformat raises several unrelated exception types
            raise NotebookError(
                f"{path}: not a readable .ipynb notebook ({type(exc).__name__}: {exc}). "
                "Restore it from git or regenerate it (make colab / make book)."
            ) from None
    return parse_myst(text, path)


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; NotebookError (naming the file, line and fix) when it is not text."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise NotebookError(f"{path}: cannot be read ({exc.strerror}). Check the file's permissions.") \
            from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise NotebookError(
            f"{path}: not valid UTF-8 text (line {line}, byte {exc.start}: {exc.reason}); it may hold "
            "binary junk. Remove the bad bytes or restore the file from git, and save it as UTF-8."
        ) from None


def parse_myst(text: str, path: Path | str = "<text>") -> NotebookNode:
    """Parse MyST Markdown ``text``; ``path`` is only used in error messages."""
    _check_fences(text, path)
    try:
        return jupytext.reads(text, fmt=MYST)
    except Exception as exc:  # yaml, json and jupytext errors alike
        detail = " ".join(str(exc).split())
        raise NotebookError(
            f"{path}: cannot be read as a jupytext MyST notebook ({type(exc).__name__}: {detail}). "
            "Check the YAML front matter between the first two '---' lines, the JSON after each "
            "'+++', and the YAML block at the top of each code-cell (see CONTRIBUTING.md)."
        ) from None


def _check_fences(text: str, path: Path | str) -> None:
    from mytorch.mine import myst_cells  # the book's one reader of code cells

    count = len(text.split("\n"))
    for cell in myst_cells(text):
        if cell.close >= count:
            raise NotebookError(
                f"{path}: the code-cell opened at line {cell.opened + 1} is never closed. "
                f"Add a line '{cell.fence}' after its code."
            )


def cell_lines(text: str, nb: NotebookNode) -> list[int]:
    """Best-effort 1-based line in ``text`` where each cell's source starts (0 when unknown)."""
    lines = text.splitlines()
    result, cursor = [], 0
    for cell in nb.cells:
        first = next((ln for ln in cell.source.splitlines() if ln.strip()), None)
        found = 0
        if first is not None:
            for index in range(cursor, len(lines)):
                if lines[index] == first:
                    found, cursor = index + 1, index + 1
                    break
        result.append(found)
    return result


def cell_lang(cell: NotebookNode) -> str | None:
    """The ``lang`` metadata of a cell (``"zh"`` / ``"en"``), or None."""
    lang = cell.get("metadata", {}).get("lang")
    return lang if isinstance(lang, str) else None


def cell_tags(cell: NotebookNode) -> list[str]:
    """The cell's metadata tags (an empty list when it has none)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def book_metadata(nb: NotebookNode) -> dict:
    """The ``mytorch:`` front-matter mapping (chapter, title, teaches), or ``{}``."""
    meta = nb.metadata.get("mytorch", {})
    return dict(meta) if isinstance(meta, dict) else {}
