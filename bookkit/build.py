"""``make book``: execute every chapter and write bilingual, zh and en notebooks plus HTML."""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbformat import NotebookNode
from tqdm import tqdm

from bookkit.bilingual import LANGS, split
from bookkit.execute import DEFAULT_TIMEOUT, execute
from bookkit.notebook import book_metadata, read_notebook
from bookkit.project import Project, chapter_number

VARIANTS = ("bilingual", *LANGS)


def write_outputs(nb: NotebookNode, number: str, out_dir: Path, exporter: HTMLExporter) -> list[Path]:
    """Write ``<variant>/<number>.ipynb`` and ``.html`` for the executed bilingual ``nb``."""
    written = []
    for variant in VARIANTS:
        version = nb if variant == "bilingual" else split(nb, variant)
        folder = out_dir / variant
        folder.mkdir(parents=True, exist_ok=True)
        ipynb, page = folder / f"{number}.ipynb", folder / f"{number}.html"
        ipynb.write_text(nbformat.writes(version) + "\n", encoding="utf-8")
        body, _ = exporter.from_notebook_node(version)
        page.write_text(body, encoding="utf-8")
        written += [ipynb, page]
    return written


def _title(nb: NotebookNode, lang: str, fallback: str) -> str:
    title = book_metadata(nb).get("title", {})
    if isinstance(title, dict):
        if lang == "bilingual":
            parts = [str(title[k]) for k in LANGS if k in title]
            return " / ".join(parts) or fallback
        return str(title.get(lang, fallback))
    return fallback


def write_index(entries: list[tuple[str, NotebookNode, str]], out_dir: Path) -> Path:
    """``build/index.html``: links to every chapter in every variant."""
    rows = []
    for number, nb, stem in entries:
        links = " · ".join(
            f'<a href="{v}/{number}.html">{html.escape(_title(nb, v, stem))}</a>' for v in VARIANTS)
        rows.append(f"<li>{number}: {links}</li>")
    page = out_dir / "index.html"
    page.write_text(
        "<!doctype html><meta charset='utf-8'><title>mytorch</title>\n"
        "<h1>mytorch · 动手写 PyTorch / build PyTorch yourself</h1>\n<ul>\n"
        + "\n".join(rows) + "\n</ul>\n", encoding="utf-8")
    return page


def build(project: Project, chapters: list[Path] | None = None, timeout: int = DEFAULT_TIMEOUT) -> Path:
    """Execute ``chapters`` (default: all) in ``chapters/``; raise ExecutionFailed on the first error."""
    chapters = project.chapters() if chapters is None else chapters
    out_dir = project.build_dir
    exporter = HTMLExporter()
    entries = []
    for path in tqdm(chapters, desc="book", unit="chapter"):
        number = f"{chapter_number(path):02d}" if chapter_number(path) is not None else path.stem
        nb = read_notebook(path)
        execute(nb, path, project.chapters_dir, root=project.root, timeout=timeout)
        write_outputs(nb, number, out_dir, exporter)
        entries.append((number, nb, path.stem))
    return write_index(entries, out_dir)
