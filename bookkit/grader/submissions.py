"""Finding and reading submissions: one folder per student, exercise files as ``.md`` or ``.ipynb``,
at the top of the folder or in an ``exercises/`` sub-folder (the layout of the book's repository).

Reading never executes anything and never fails: a file is either absent (``missing``), unreadable
or malformed (``invalid``, with a message saying why), or yields the student's region texts. Folder
walks are iterative and bounded (a 1,000-level tree or a million files costs a student nothing more
than a note), and names that are not UTF-8 are shown escaped.

No link is followed, at any level: a file is opened one path component at a time below the
student's folder, each with ``O_NOFOLLOW`` (a symlinked ``exercises/`` pointing at the solutions
or at a classmate's folder earns nothing), and a file with another hard link (``st_nlink > 1``,
the same file as one elsewhere) is refused.
"""

from __future__ import annotations

import difflib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from bookkit.grader.records import printable
from bookkit.grader.regions import RegionError, regions_of_cells, regions_of_text

MAX_FILE_BYTES = 5 << 20
SUFFIXES = (".md", ".ipynb")
PLACES = ("", "exercises")  # where exercise files are looked for, inside a student's folder
MAX_WALK_DEPTH = 6
MAX_WALK_ENTRIES = 2000


@dataclass(frozen=True)
class Submission:
    """One student's file for one exercise: its regions, or why there are none."""

    status: str  # "ok" | "missing" | "invalid"
    path: Path | None = None
    regions: tuple[str, ...] = ()
    message: str = ""
    digest_source: bytes = b""  # the bytes graded (for the result cache)


def display_name(name: str) -> str:
    """A file or folder name as one line of harmless text: bytes that are not UTF-8 shown as
    ``\\xNN``, control characters (terminal escapes, newlines) as escapes too."""
    return printable(name, one_line=True)


def students(folder: Path) -> list[Path]:
    """Student folders (hidden folders, ``__MACOSX`` and plain files are ignored), sorted."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if not entry.name.startswith((".", "__")) and entry.is_dir(follow_symlinks=False):
                    found.append(Path(entry.path))
            except OSError:
                continue
    return sorted(found, key=lambda p: p.name.encode("utf-8", "surrogateescape"))


def _lexists(path: Path) -> bool:
    try:
        path.lstat()
        return True
    except (OSError, ValueError):
        return False


def _linked_folder(student: Path, path: Path) -> str:
    """The first folder between ``student`` and ``path`` that is a link (or no folder), or ''."""
    current = student
    for name in path.relative_to(student).parts[:-1]:
        current = current / name
        try:
            mode = current.lstat().st_mode
        except OSError:
            return name
        if not stat.S_ISDIR(mode):
            return name
    return ""


def pick_file(student: Path, stem: str) -> Path | None:
    """``<stem>.md`` or ``<stem>.ipynb``, at the top or in ``exercises/``; with several, the newest
    (a ``.md`` on a tie, the top folder's before ``exercises/``'s). A file reached through a linked
    folder is found (so that reading it can say why it is refused) but never preferred."""
    found = [student / place / (stem + s) for place in PLACES for s in SUFFIXES
             if _lexists(student / place / (stem + s))]
    if len(found) > 1:
        def when(path: Path) -> float:
            if _linked_folder(student, path):
                return float("-inf")
            try:
                return path.lstat().st_mtime
            except OSError:
                return float("-inf")

        newest = max(when(p) for p in found)
        return next(p for p in found if when(p) == newest)
    return found[0] if found else None


def walk(folder: Path, depth: int = MAX_WALK_DEPTH, limit: int = MAX_WALK_ENTRIES) -> tuple[list[Path], bool]:
    """Files below ``folder`` (not following links, skipping hidden names), breadth first, at most
    ``depth`` levels and ``limit`` entries: (files, whether the walk was cut short)."""
    files, queue, seen, cut = [], [(folder, 0)], 0, False
    while queue:
        current, level = queue.pop(0)
        try:
            with os.scandir(current) as entries:
                listed = sorted(entries, key=lambda e: e.name.encode("utf-8", "surrogateescape"))
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > limit:
                return files, True
            if entry.name.startswith("."):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if level + 1 < depth:
                    queue.append((Path(entry.path), level + 1))
                else:
                    cut = True
            else:
                files.append(Path(entry.path))
    return files, cut


def stray_files(student: Path, stems: list[str]) -> list[tuple[str, str]]:
    """Files that are not ``[exercises/]<stem>.md|.ipynb``, each with the closest expected name
    (or ''); a tree too deep or too large to list ends with a note."""
    wanted = [stem + s for stem in stems for s in SUFFIXES]
    graded = {str(Path(place) / name) for place in PLACES for name in wanted}
    files, cut = walk(student)
    strays = []
    for path in files:
        rel = str(path.relative_to(student))
        if rel in graded:
            continue
        close = difflib.get_close_matches(display_name(path.name), wanted, n=1, cutoff=0.5)
        strays.append((display_name(rel), close[0] if close else ""))
    if cut:
        strays.append((f"… (more files, or folders deeper than {MAX_WALK_DEPTH} levels, not listed)", ""))
    return strays


_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


class _Refused(Exception):
    """A path component that may not be followed; the message says which and why."""


def _open_below(path: Path, within: Path) -> int:
    """Open ``path`` for reading one component at a time from ``within``, following no link at
    any level (``O_NOFOLLOW`` alone guards only the last component)."""
    try:
        parts = path.relative_to(within).parts
    except ValueError:
        raise _Refused(f"is outside the student's folder {within.name}") from None
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise _Refused("is not a file in the student's folder")
    fd = os.open(within, _DIR_FLAGS)
    try:
        for name in parts[:-1]:
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise _Refused(f"is inside {name}/, which is a symbolic link; links are not "
                               "followed: submit the files themselves")
            if not stat.S_ISDIR(mode):
                raise _Refused(f"is inside {name}, which is not a folder")
            inner = os.open(name, _DIR_FLAGS, dir_fd=fd)  # fails if it became a link meanwhile
            os.close(fd)
            fd = inner
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def read_submission(path: Path | None, within: Path | None = None) -> Submission:
    """The regions of one submitted file, or ``missing`` / ``invalid`` with the reason.

    ``within``: the student's folder (``make grade``): ``path`` is opened below it without
    following any link, and a file with other hard links is refused. Without it (``make check``,
    a student's own file) only the last component must not be a link.
    """
    if path is None:
        return Submission("missing", message="no file submitted")
    try:  # no link followed, no FIFO waited for: the checks hold for what is actually read
        fd = os.open(path, _FILE_FLAGS) if within is None else _open_below(path, within)
    except _Refused as exc:
        return Submission("invalid", path, message=str(exc))
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the name is a symbolic link
            return Submission("invalid", path, message="is a symbolic link, not a file; links are not "
                                                       "followed: submit the file itself")
        return Submission("invalid", path, message=f"cannot be read ({exc.strerror})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Submission("invalid", path, message="is not a regular file")
        if within is not None and info.st_nlink > 1:
            return Submission("invalid", path, message=(
                f"is a hard link (the same file as {info.st_nlink - 1} other name(s) on this disk, "
                "such as another student's or the instructor's copy); submit a copy of your own file"))
        if info.st_size > MAX_FILE_BYTES:
            return Submission("invalid", path, message=f"is larger than {MAX_FILE_BYTES >> 20} MB")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return Submission("invalid", path, message=f"cannot be read ({exc.strerror})")
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        return Submission("invalid", path, message=f"is larger than {MAX_FILE_BYTES >> 20} MB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Submission("invalid", path, message="is not UTF-8 text")
    try:
        if path.suffix == ".ipynb":
            regions = regions_of_cells(_code_sources(text))
        else:
            regions = regions_of_text(text)
    except (RegionError, ValueError, RecursionError, MemoryError) as exc:
        return Submission("invalid", path, message=str(exc) or type(exc).__name__)
    return Submission("ok", path, tuple(regions), digest_source=data)


def _code_sources(text: str) -> list[str]:
    """The code cells' sources of a .ipynb text (nbformat 4, as JupyterLab or Colab saves it)."""
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not a readable .ipynb notebook (bad JSON at line {exc.lineno})") from None
    except (RecursionError, MemoryError):
        raise ValueError("is not a readable .ipynb notebook (nested too deeply)") from None
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
