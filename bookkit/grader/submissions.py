"""Finding and reading submissions: one folder per student, exercise files as ``.md`` or ``.ipynb``.

Reading never executes anything and never fails: a file is either absent (``missing``), unreadable
or malformed (``invalid``, with a message saying why), or yields the student's region texts.
"""

from __future__ import annotations

import difflib
import json
import stat
from dataclasses import dataclass
from pathlib import Path

from bookkit.grader.regions import RegionError, regions_of_cells, regions_of_text

MAX_FILE_BYTES = 5 << 20
SUFFIXES = (".md", ".ipynb")


@dataclass(frozen=True)
class Submission:
    """One student's file for one exercise: its regions, or why there are none."""

    status: str  # "ok" | "missing" | "invalid"
    path: Path | None = None
    regions: tuple[str, ...] = ()
    message: str = ""
    digest_source: bytes = b""  # the bytes graded (for the result cache)


def students(folder: Path) -> list[Path]:
    """Student folders (hidden folders, ``__MACOSX`` and plain files are ignored), sorted."""
    return sorted(p for p in folder.iterdir()
                  if not p.name.startswith((".", "__")) and p.is_dir() and not p.is_symlink())


def pick_file(student: Path, stem: str) -> Path | None:
    """``<stem>.md`` or ``<stem>.ipynb``; with both, the newer one (the .md on a tie)."""
    found = [student / (stem + s) for s in SUFFIXES if (student / (stem + s)).exists()
             or (student / (stem + s)).is_symlink()]
    if len(found) == 2:
        md, nb = found
        try:
            return nb if nb.lstat().st_mtime > md.lstat().st_mtime else md
        except OSError:
            return md
    return found[0] if found else None


def stray_files(student: Path, stems: list[str]) -> list[tuple[str, str]]:
    """Files that are not ``<stem>.md|.ipynb``, each with the closest expected name (or '')."""
    wanted = [stem + s for stem in stems for s in SUFFIXES]
    strays = []
    for path in sorted(student.rglob("*")):
        rel = path.relative_to(student)
        if path.is_dir() or any(part.startswith(".") for part in rel.parts) or str(rel) in wanted:
            continue
        close = difflib.get_close_matches(path.name, wanted, n=1, cutoff=0.5)
        strays.append((str(rel), close[0] if close else ""))
    return strays


def read_submission(path: Path | None) -> Submission:
    """The regions of one submitted file, or ``missing`` / ``invalid`` with the reason."""
    if path is None:
        return Submission("missing", message="no file submitted")
    try:
        info = path.lstat()
    except OSError as exc:
        return Submission("invalid", path, message=f"cannot be read ({exc.strerror})")
    if stat.S_ISLNK(info.st_mode):
        return Submission("invalid", path, message="is a symbolic link, not a file")
    if not stat.S_ISREG(info.st_mode):
        return Submission("invalid", path, message="is not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        return Submission("invalid", path, message=f"is larger than {MAX_FILE_BYTES >> 20} MB")
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        return Submission("invalid", path, message=f"cannot be read ({exc.strerror})")
    except UnicodeDecodeError:
        return Submission("invalid", path, message="is not UTF-8 text")
    try:
        if path.suffix == ".ipynb":
            regions = regions_of_cells(_code_sources(text))
        else:
            regions = regions_of_text(text)
    except (RegionError, ValueError) as exc:
        return Submission("invalid", path, message=str(exc))
    return Submission("ok", path, tuple(regions), digest_source=data)


def _code_sources(text: str) -> list[str]:
    """The code cells' sources of a .ipynb text (nbformat 4, as JupyterLab or Colab saves it)."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not a readable .ipynb notebook (bad JSON at line {exc.lineno})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("is not a notebook: it has no list of cells (nbformat 4)")
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise ValueError("is not a notebook: a code cell's source is not text")
        sources.append(source)
    return sources
