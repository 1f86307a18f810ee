"""Student exercises from solutions: ``solutions/*.md`` → ``exercises/*.md`` (nbgrader-style regions).

Works on the text so that everything outside the marked regions stays byte for byte the same.
The ``### BEGIN SOLUTION`` / ``### END SOLUTION`` lines stay in the student version around the
placeholder: they show students where to write, and the grader (``bookkit.grader``) takes exactly
the text between them from each submission.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from bookkit.notebook import NotebookError, parse_myst
from bookkit.project import CHAPTER_NAME

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
PLACEHOLDER = 'raise NotImplementedError("请完成这个练习 / Complete this exercise")'
_OPEN = re.compile(r"^(`{3,}|~{3,})\{code-cell\}")


class ExerciseError(NotebookError):
    """The solution/hidden-test markers of a solutions file are unbalanced or misplaced."""


#: A prose cell whose metadata says ``"solution": true`` (e.g. the derivation an exercise asks for)
#: is for the solutions only: the student version leaves it out.
_SOLUTION_PROSE = re.compile(r'^\+\+\+ .*"solution":\s*true')


def strip_solutions(text: str, path: Path | str = "<text>") -> str:
    """The student version of a solutions file's ``text``."""
    parse_myst(text, path)  # fail early, with a clear message, on a corrupt file
    out: list[str] = []
    fence = ""
    region: tuple[str, int] | None = None  # (marker, line) of the open region
    hidden_prose = False  # inside a solutions-only prose cell
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        stripped = line.strip()
        if not fence:
            match = _OPEN.match(line)
            if line.startswith("+++") or match:
                hidden_prose = bool(_SOLUTION_PROSE.match(line))
            if hidden_prose:
                continue
            if match:
                fence = match[1]
            elif stripped in (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN):
                raise ExerciseError(f"{path}:{number}: '{stripped}' is outside a code-cell; "
                                    "markers only work inside ```{code-cell} blocks")
            out.append(line)
            continue
        if region is None and stripped == fence:
            fence = ""
            out.append(line)
            continue
        if region is None:
            if stripped == BEGIN_SOLUTION:
                region = (BEGIN_SOLUTION, number)
                indent = line[: len(line) - len(line.lstrip())]
                out += [line, f"{indent}{PLACEHOLDER}\n"]
            elif stripped == BEGIN_HIDDEN:
                region = (BEGIN_HIDDEN, number)
            elif stripped in (END_SOLUTION, END_HIDDEN):
                raise ExerciseError(f"{path}:{number}: '{stripped}' has no matching BEGIN marker "
                                    "before it; add the BEGIN line or remove this one")
            else:
                out.append(line)
            continue
        marker, start = region
        expected_end = END_SOLUTION if marker == BEGIN_SOLUTION else END_HIDDEN
        if stripped == expected_end:
            region = None
            if marker == BEGIN_SOLUTION:
                out.append(line)
        elif stripped == fence or stripped in (BEGIN_SOLUTION, BEGIN_HIDDEN, END_SOLUTION, END_HIDDEN):
            raise ExerciseError(f"{path}:{start}: '{marker}' is not closed by '{expected_end}' "
                                f"before line {number}; add the END line")
    if region is not None:
        raise ExerciseError(f"{path}:{region[1]}: '{region[0]}' is never closed; add the END line")
    return "".join(out)


@dataclass(frozen=True)
class SyncReport:
    """Differences between what ``exercises/`` holds and what it should hold."""

    stale: list[Path]  # missing or out of date
    orphans: list[Path]  # in exercises/ with no source in solutions/

    @property
    def ok(self) -> bool:
        return not self.stale and not self.orphans


def expected_files(solutions: list[Path], exercises_dir: Path) -> dict[Path, str]:
    """Map each solutions file (its piece cells copied from the library) and each exercise file
    to the text it should have."""
    from bookkit.pieces import check_names, fill_pieces  # imports mytorch: only when needed

    wanted: dict[Path, str] = {}
    for src in solutions:
        text = src.read_text(encoding="utf-8")
        filled = fill_pieces(text, src)
        problems = check_names(filled, src)
        if problems:
            raise ExerciseError("\n".join(problems))
        wanted[src] = filled
        wanted[exercises_dir / src.name] = strip_solutions(filled, src)
    return wanted


def sync(solutions: list[Path], exercises_dir: Path, *, write: bool) -> SyncReport:
    """Compare (and with ``write`` regenerate) the piece cells of ``solutions`` against the
    library, and ``exercises_dir`` against ``solutions``."""
    wanted = expected_files(solutions, exercises_dir)
    stale = [path for path, text in wanted.items()
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    existing = sorted(p for p in exercises_dir.glob("*.md") if CHAPTER_NAME.match(p.name)) \
        if exercises_dir.is_dir() else []
    orphans = [path for path in existing if path not in wanted]
    if write:
        exercises_dir.mkdir(parents=True, exist_ok=True)
        for path in stale + orphans:
            if path.parent == exercises_dir:
                backup_student_work(path)
        for path in stale:
            path.write_text(wanted[path], encoding="utf-8", newline="\n")
        for path in orphans:
            path.unlink()
    return SyncReport(stale, orphans)


def has_student_work(text: str) -> bool:
    """True when some solution region holds anything but the generated placeholder."""
    inside, body = False, []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == BEGIN_SOLUTION:
            inside, body = True, []
        elif stripped == END_SOLUTION and inside:
            inside = False
            if [b for b in body if b and b != PLACEHOLDER]:
                return True
        elif inside:
            body.append(stripped)
    return False


def backup_student_work(path: Path) -> Path | None:
    """Copy an exercise file holding a student's answers to ``exercises/.backup/`` first.

    Regenerating exercises must never destroy work: a file whose solution regions were
    filled in is saved as ``.backup/<name>.<timestamp>.md`` before it is replaced.
    """
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if not has_student_work(text):
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.parent / ".backup" / f"{path.stem}.{stamp}{path.suffix}"
    target.parent.mkdir(exist_ok=True)
    target.write_text(text, encoding="utf-8", newline="\n")
    print(f"! {path.name} 里有你的答案，已备份到 {target} / "
          f"{path.name} held your answers: saved a copy to {target}")
    return target
