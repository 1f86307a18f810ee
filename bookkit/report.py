"""Problems found by the checks, and how they are printed."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO


@dataclass(frozen=True)
class Problem:
    """One thing wrong in one file: where, what, and how to fix it."""

    path: Path
    message: str
    fix: str
    cell: int | None = None  # 1-based cell number
    line: int | None = None  # 1-based line in the file

    def format(self, root: Path | None = None) -> str:
        where = _relative(self.path, root)
        if self.line:
            where += f":{self.line}"
        if self.cell is not None:
            where += f" (cell {self.cell})"
        return f"{where}: {self.message}\n    fix: {self.fix}"


def print_problems(
    title: str, problems: Iterable[Problem], checked: int, root: Path | None = None, out: TextIO | None = None
) -> int:
    """Print a check's verdict; return the exit status (0 when nothing is wrong, else 1)."""
    out = out or sys.stdout
    problems = list(problems)
    if not problems:
        print(f"✓ {title}: {checked} file(s) OK", file=out)
        return 0
    for problem in problems:
        print(problem.format(root), file=out)
    print(f"✗ {title}: {len(problems)} problem(s) in {checked} file(s)", file=out)
    return 1


def _relative(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(Path(path).resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)
