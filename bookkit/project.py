"""Where things live in the book's repository, and the ``[tool.bookkit]`` configuration."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

CHAPTER_NAME = re.compile(r"^(?P<num>\d{2})_(?P<slug>[A-Za-z0-9_]+)\.md$")


class ConfigError(Exception):
    """The repository layout or ``pyproject.toml`` is not what bookkit expects."""


@dataclass(frozen=True)
class Project:
    """Paths of one checkout of the book."""

    root: Path

    @property
    def chapters_dir(self) -> Path:
        return self.root / "chapters"

    @property
    def solutions_dir(self) -> Path:
        return self.root / "solutions"

    @property
    def exercises_dir(self) -> Path:
        return self.root / "exercises"

    @property
    def notebooks_dir(self) -> Path:
        return self.root / "notebooks"

    @property
    def build_dir(self) -> Path:
        return self.root / "build"

    def chapters(self) -> list[Path]:
        """Chapter sources ``chapters/NN_slug.md``, sorted by number."""
        return _numbered(self.chapters_dir)

    def solutions(self) -> list[Path]:
        """Exercise sources with solutions ``solutions/NN_slug_exercises.md``."""
        return _numbered(self.solutions_dir)

    def exercises(self) -> list[Path]:
        """Generated student exercise notebooks ``exercises/NN_slug_exercises.md``."""
        return _numbered(self.exercises_dir)

    def repo_slug(self) -> str:
        """The GitHub ``owner/name`` from ``[tool.bookkit] repo`` in pyproject.toml."""
        pyproject = self.root / "pyproject.toml"
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{pyproject} not found: run bookkit from the book's repository root") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{pyproject} is not valid TOML ({exc}): fix the syntax") from None
        repo = data.get("tool", {}).get("bookkit", {}).get("repo")
        if not isinstance(repo, str) or not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
            raise ConfigError(
                f"{pyproject}: [tool.bookkit] repo must be a GitHub slug like "
                f'"owner/name" (found {repo!r}): set it there'
            )
        return repo

    def mytorch_only(self) -> dict[str, set[str]]:
        """``[tool.bookkit.mytorch-only]``: per module (``"mytorch.cuda"``), the public names that
        mytorch has and real PyTorch lacks. One list for two checks: ``tests/test_api_surface.py``
        (mytorch adds no other name) and ``check-teaches`` (a chapter line using one says so)."""
        pyproject = self.root / "pyproject.toml"
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (FileNotFoundError, tomllib.TOMLDecodeError):
            return {}
        table = data.get("tool", {}).get("bookkit", {}).get("mytorch-only", {})
        if not isinstance(table, dict) or not all(
                isinstance(v, list) and all(isinstance(n, str) for n in v) for v in table.values()):
            raise ConfigError(f"{pyproject}: [tool.bookkit.mytorch-only] maps a module name to a "
                              f'list of names, e.g. "mytorch.cuda" = ["simulate"]: fix it there')
        return {module: set(names) for module, names in table.items()}


def _numbered(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.md") if CHAPTER_NAME.match(p.name))


def chapter_number(path: Path) -> int | None:
    """The ``NN`` prefix of ``NN_slug.md`` as an int, or None when the name has none."""
    match = CHAPTER_NAME.match(path.name)
    return int(match["num"]) if match else None


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` whose pyproject.toml has ``[tool.bookkit]``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "[tool.bookkit]" in pyproject.read_text(encoding="utf-8"):
            return folder
    raise ConfigError(
        f"no pyproject.toml with [tool.bookkit] at or above {here}: "
        "run bookkit inside the book's repository, or pass --root"
    )
