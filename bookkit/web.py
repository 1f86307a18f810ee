"""``make book``: the web edition, a Sphinx book (MyST-NB, Sphinx Book Theme) in ``build/web/``.

Each language is its own small site, ``build/web/zh/`` and ``build/web/en/`` (so every page has its
own ``<html lang>``, title and search index), and ``build/web/index.html`` lets a reader pick one.
The pages are the executed notebooks students open on Colab (``notebooks/{zh,en}/``), so the web
edition shows the same outputs and figures; nothing is executed here. For each page this module
stages a copy under ``build/web-src/<lang>/``: the install cell dropped, the Colab/Binder badges
(images from other sites) turned into a line of plain links — Colab, Binder, the exercises, the
other language — and links between chapters and exercises pointed at the pages. The Sphinx
configuration, template and style sheet live in ``web/``.
"""

from __future__ import annotations

import copy
import html
import re
import shutil
import subprocess
import sys
from importlib import util
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_markdown_cell

from bookkit.colab import INSTALL_TAG, colab_url
from bookkit.notebook import book_metadata, cell_tags
from bookkit.project import Project

LANGS = {"zh": "zh_CN", "en": "en"}
LABELS = {"zh": "中文", "en": "English"}
TITLES = {"zh": "mytorch · 动手造一个 PyTorch", "en": "mytorch · Build PyTorch to learn it"}
INTRO = {
    "zh": "一本可以运行的中英双语教材：每章讲一组 PyTorch API，然后在 `mytorch/` 里亲手实现它，"
          "并逐项与真正的 PyTorch 核对。这里的每一页都是执行过的笔记本：输出和图就是代码的运行结果。"
          "想自己运行，点每页开头的 Colab 或 Binder 链接；做练习请打开各章的练习页。",
    "en": "An executable, bilingual textbook: each chapter teaches a slice of PyTorch's API and then "
          "builds it inside `mytorch/`, checked against real PyTorch. Every page here is an executed "
          "notebook: its outputs and figures are what the code printed. To run it yourself, follow "
          "the Colab or Binder link at the top of each page; the exercises have a page per chapter.",
}
SEARCH_BAR = {"zh": "搜索本书…", "en": "Search the book…"}
CAPTIONS = {"zh": ("章节", "练习", "附录"), "en": ("Chapters", "Exercises", "Appendix")}
LINKS = {"zh": ("在 Colab 中运行", "在 Binder 中运行", "本章练习", "回到本章", "English"),
         "en": ("Run on Colab", "Run on Binder", "Exercises", "Back to the chapter", "中文")}
_BADGE = re.compile(r"^\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)\s*$", re.MULTILINE)
_EXERCISE_LINK = re.compile(r"\]\(\.\./exercises/(\d\d_\w+_exercises)\.md\)")


class WebError(Exception):
    """The web edition cannot be built; the message says what to install or run."""


def binder_url(repo: str, relative: str) -> str:
    return f"https://mybinder.org/v2/gh/{repo}/main?urlpath=lab/tree/{relative}"


def _links_cell(lang: str, repo: str, colab_path: str, binder_path: str, extra: list[tuple[str, str]]) -> NotebookNode:
    colab, binder = LINKS[lang][:2]
    items = [(colab, colab_url(repo, colab_path)), (binder, binder_url(repo, binder_path)), *extra]
    text = " · ".join(f"[{label}]({target})" for label, target in items)
    return new_markdown_cell(f"<div class=\"mytorch-page-links\">\n\n▶ {text}\n\n</div>",
                             metadata={"lang": lang})


def stage_notebook(nb: NotebookNode, lang: str, links: NotebookNode) -> NotebookNode:
    """A page's notebook: no install cell, badges replaced by ``links`` under the title, links to
    exercises pointed at their pages."""
    page = copy.deepcopy(nb)
    cells = [c for c in page.cells if INSTALL_TAG not in cell_tags(c)]
    for cell in cells:
        if cell.cell_type == "markdown":
            cell.source = _EXERCISE_LINK.sub(r"](exercises/\1.ipynb)", _BADGE.sub("", cell.source))
            cell.source = re.sub(r"\n{3,}", "\n\n", cell.source)
    first = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"), -1)
    cells.insert(first + 1, links)
    page.cells = cells
    page.metadata.pop("colab", None)
    return page


def stage(project: Project, lang: str, src: Path) -> list[str]:
    """Write ``lang``'s Sphinx sources into ``src``; return the chapter page names."""
    repo = project.repo_slug()
    if src.exists():
        shutil.rmtree(src)
    (src / "exercises").mkdir(parents=True)
    chapters, exercises = [], []
    for chapter in project.chapters():
        stored = project.notebooks_dir / lang / f"{chapter.stem}.ipynb"
        if not stored.is_file():
            raise WebError(f"{stored} is missing (找不到执行过的笔记本): run `make colab` first, "
                           "which executes the chapters into notebooks/")
        nb = nbformat.read(stored, as_version=4)
        exercise = f"{chapter.stem}_exercises"
        extra = [(LINKS[lang][2], f"exercises/{exercise}.ipynb")] \
            if (project.notebooks_dir / lang / "exercises" / f"{exercise}.ipynb").is_file() else []
        links = _links_cell(lang, repo, f"notebooks/{lang}/{chapter.stem}.ipynb",
                            f"chapters/{chapter.name}", extra)
        nbformat.write(stage_notebook(nb, lang, links), src / f"{chapter.stem}.ipynb")
        chapters.append(chapter.stem)
    for source in project.exercises():
        stored = project.notebooks_dir / lang / "exercises" / f"{source.stem}.ipynb"
        nb = nbformat.read(stored, as_version=4)
        chapter = source.stem.removesuffix("_exercises")
        extra = [(LINKS[lang][3], f"../{chapter}.ipynb")] if chapter in chapters else []
        links = _links_cell(lang, repo, f"notebooks/{lang}/exercises/{source.stem}.ipynb",
                            f"exercises/{source.name}", extra)
        nbformat.write(stage_notebook(nb, lang, links), src / "exercises" / f"{source.stem}.ipynb")
        exercises.append(f"exercises/{source.stem}")
    pages = []
    glossary = project.root / "GLOSSARY.md"
    if glossary.is_file():
        shutil.copy(glossary, src / "glossary.md")
        pages.append("glossary")
    chapter_caption, exercise_caption, appendix_caption = CAPTIONS[lang]

    def toctree(caption: str, entries: list[str]) -> str:
        return f"```{{toctree}}\n:caption: {caption}\n:maxdepth: 1\n\n" + "\n".join(entries) + "\n```\n"

    index = f"# {TITLES[lang]}\n\n{INTRO[lang]}\n\n" + toctree(chapter_caption, chapters)
    if exercises:
        index += "\n" + toctree(exercise_caption, exercises)
    if pages:
        index += "\n" + toctree(appendix_caption, pages)
    (src / "index.md").write_text(index, encoding="utf-8")
    return chapters


def _mathjax_files() -> Path:
    spec = util.find_spec("sphinx-mathjax-offline")  # the package's folder name has dashes
    if spec is None or not spec.submodule_search_locations:
        raise WebError("the web edition needs its Python packages (the `web` extra): run `make venv`, "
                       "or pip install -e '.[web]'")
    return Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"


def copy_mathjax(site: Path) -> None:
    """MathJax's TeX → HTML component and its fonts, so formulas render with no network."""
    source, target = _mathjax_files(), site / "_static" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "tex-chtml.js", target / "tex-chtml.js")
    fonts = Path("output") / "chtml" / "fonts" / "woff-v2"
    shutil.copytree(source / fonts, target / fonts, dirs_exist_ok=True)


def build(project: Project, quiet: bool = True) -> Path:
    """Build ``build/web/{zh,en}/`` and ``build/web/index.html``; return the latter."""
    if util.find_spec("sphinx") is None:
        raise WebError("the web edition needs Sphinx (the `web` extra): run `make venv`, or "
                       "pip install -e '.[web]'")
    conf = project.root / "web"
    if not (conf / "conf.py").is_file():
        raise WebError(f"{conf / 'conf.py'} is missing: restore web/ from git")
    out = project.build_dir / "web"
    for lang, sphinx_lang in LANGS.items():
        src = project.build_dir / "web-src" / lang
        stage(project, lang, src)
        other = "en" if lang == "zh" else "zh"
        site = out / lang
        argv = ["-b", "html", "-c", str(conf), "-D", f"language={sphinx_lang}", "-D", f"html_title={TITLES[lang]}",
                "-D", f"html_theme_options.repository_url=https://github.com/{project.repo_slug()}",
                "-D", f"html_theme_options.search_bar_text={SEARCH_BAR[lang]}",
                "-A", f"other_lang={other}", "-A", f"other_lang_label={LINKS[lang][4]}", "-W", "--keep-going",
                "-E", "-d", str(project.build_dir / "web-src" / f".doctrees-{lang}"), str(src), str(site)]
        if quiet:
            argv.insert(0, "-q")
        # One process per language: Sphinx keeps the translations it loaded for the whole process, so
        # a second build in the same process would label the English pages 搜索, 目录, 上一页.
        if subprocess.run([sys.executable, "-c", "import sys; from sphinx.cmd.build import build_main; "
                           "sys.exit(build_main(sys.argv[1:]))", *argv]).returncode != 0:
            raise WebError(f"Sphinx could not build the {lang} web edition (its messages are above): fix "
                           "what they name, then run `make book` again")
        copy_mathjax(site)
    shutil.rmtree(out / "jupyter_execute", ignore_errors=True)  # MyST-NB's scratch copies, not pages
    return write_chooser(project, out)


def write_chooser(project: Project, out: Path) -> Path:
    """``build/web/index.html``: pick a language (both titles, each in its own ``lang``)."""
    rows = "\n".join(
        f'  <li lang="{lang}"><a href="{lang}/index.html" hreflang="{lang}">{html.escape(TITLES[lang])}</a> '
        f"— {LABELS[lang]}</li>" for lang in LANGS)
    page = out / "index.html"
    page.write_text(
        "<!doctype html>\n<html lang=\"zh-CN\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>mytorch · 选择语言 / choose a language</title>\n"
        "<style>body{font-family:system-ui,\"Noto Sans\",\"Noto Sans CJK SC\",\"PingFang SC\","
        "\"Microsoft YaHei\",sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;line-height:1.7}"
        "li{margin:.6rem 0;font-size:1.2rem}</style>\n</head>\n<body>\n"
        "<h1>mytorch</h1>\n<p>选择语言 / <span lang=\"en\">choose a language</span>:</p>\n<ul>\n"
        f"{rows}\n</ul>\n</body>\n</html>\n", encoding="utf-8")
    return page


def chapter_title(nb: NotebookNode, lang: str) -> str:
    """The chapter's title in ``lang`` from its front matter (used by tests and the index)."""
    title = book_metadata(nb).get("title", {})
    return str(title.get(lang, "")) if isinstance(title, dict) else str(title)
