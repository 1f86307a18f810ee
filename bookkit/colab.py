"""Per-language ``.ipynb`` files without outputs under ``notebooks/``, for Colab to open from GitHub.

The output is deterministic: sorted JSON, no timestamps, cell ids hashed from position and content.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from bookkit.bilingual import LANGS, split
from bookkit.notebook import read_notebook
from bookkit.project import Project

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def install_cell_source(repo: str) -> str:
    """The first cell of every Colab notebook: install what the book needs when it is missing.

    ``mytorch[book]`` brings mytorch, bookkit (feedback, figures) and the figures' dependencies
    (matplotlib, and mplfonts for the Chinese labels): see ``[project.optional-dependencies]``.
    """
    return (
        "# 若缺少本书的包（例如在 Colab 上），先安装 / "
        "Install the book's packages when missing (e.g. on Colab)\n"
        "try:\n"
        "    import mytorch, bookkit, matplotlib, mplfonts\n"
        "except ImportError:\n"
        f'    %pip install -q "mytorch[book] @ git+https://github.com/{repo}"'
    )


def colab_url(repo: str, relative: str, branch: str = "main") -> str:
    """The Colab address that opens ``relative`` (a path in the repo) from GitHub."""
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/{relative}"


def to_colab(nb: NotebookNode, lang: str, repo: str) -> NotebookNode:
    """A clean, output-free, single-language notebook with the install cell first."""
    single = split(nb, lang)
    cells = [new_code_cell(install_cell_source(repo), metadata={"tags": ["colab-install"]})]
    for cell in single.cells:
        metadata = dict(cell.get("metadata", {}))
        if cell.cell_type == "code":
            cells.append(new_code_cell(cell.source, metadata=metadata))
        elif cell.cell_type == "markdown":
            cells.append(new_markdown_cell(cell.source, metadata=metadata))
        else:
            cells.append(new_raw_cell(cell.source, metadata=metadata))
    for index, cell in enumerate(cells):
        digest = hashlib.sha256(f"{index}\0{cell.cell_type}\0{cell.source}".encode()).hexdigest()
        cell["id"] = digest[:16]
    metadata = {
        "kernelspec": KERNELSPEC,
        "language_info": {"name": "python"},
        "mytorch": dict(single.metadata.get("mytorch", {})),
        "colab": {"provenance": []},
    }
    result = new_notebook(cells=cells, metadata=metadata)
    result.nbformat, result.nbformat_minor = 4, 5
    return result


def dumps(nb: NotebookNode) -> str:
    """Stable JSON text of ``nb`` (sorted keys, one-space indent, trailing newline)."""
    nbformat.validate(nb)
    return nbformat.writes(nb, version=4) + "\n"


@dataclass(frozen=True)
class SyncReport:
    """Differences between ``notebooks/`` and what the sources say it should hold."""

    stale: list[Path]
    orphans: list[Path]

    @property
    def ok(self) -> bool:
        return not self.stale and not self.orphans


def expected_files(project: Project) -> dict[Path, str]:
    """Every Colab notebook path mapped to its text."""
    repo = project.repo_slug()
    wanted: dict[Path, str] = {}
    sources = [(path, "") for path in project.chapters()]
    sources += [(path, "exercises") for path in project.exercises()]
    for path, sub in sources:
        nb = read_notebook(path)
        for lang in LANGS:
            target = project.notebooks_dir / lang / sub / f"{path.stem}.ipynb"
            wanted[target] = dumps(to_colab(nb, lang, repo))
    return wanted


def sync(project: Project, *, write: bool) -> SyncReport:
    """Compare (and with ``write`` regenerate) ``notebooks/`` against the sources."""
    wanted = expected_files(project)
    stale = [path for path, text in sorted(wanted.items())
             if not path.is_file() or path.read_text(encoding="utf-8") != text]
    existing = []
    for lang in LANGS:
        for sub in ("", "exercises"):
            folder = project.notebooks_dir / lang / sub
            existing += sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
    orphans = [path for path in existing if path not in wanted]
    if write:
        for path in stale:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wanted[path], encoding="utf-8", newline="\n")
        for path in orphans:
            path.unlink()
    return SyncReport(stale, orphans)
