"""``check-links``: the README's and chapters' Colab / Binder links point at real files.

The repository's name is configured once (``[tool.bookkit] repo``); every "Open in Colab" and
Binder link repeats it and names a notebook or chapter. This check keeps those links honest: the
right repository, a file that exists, and in every chapter a link to its own Colab notebooks (zh
and en), to Binder, and to its exercises when it has some.
"""

from __future__ import annotations

import re
from pathlib import Path

from bookkit.project import Project
from bookkit.report import Problem

COLAB = re.compile(r"https://colab\.research\.google\.com/github/(?P<repo>[\w.-]+/[\w.-]+)/blob/main/"
                   r"(?P<path>[\w./-]+\.ipynb)")
BINDER = re.compile(r"https://mybinder\.org/v2/gh/(?P<repo>[\w.-]+/[\w.-]+)/main\?urlpath=lab/tree/"
                    r"(?P<path>[\w./-]+)")


def colab_url(repo: str, path: str) -> str:
    return f"https://colab.research.google.com/github/{repo}/blob/main/{path}"


def check_file(project: Project, path: Path) -> list[Problem]:
    """Problems with the Colab and Binder links of one Markdown file."""
    repo = project.repo_slug()
    text = path.read_text(encoding="utf-8")
    problems = []
    for pattern in (COLAB, BINDER):
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            if match["repo"] != repo:
                problems.append(Problem(path, f"link to repository {match['repo']!r}, but the book is "
                                        f"{repo!r}", f"write {repo} (from [tool.bookkit] repo)", line=line))
            if not (project.root / match["path"]).is_file():
                problems.append(Problem(path, f"link to {match['path']}, which does not exist",
                                        "fix the path (or run `make colab` to write the notebooks)",
                                        line=line))
    return problems


def colab_links(project: Project, chapter: Path) -> list[str]:
    """The Colab links of a chapter's notebooks (zh, en), and of its exercises' when it has them."""
    repo = project.repo_slug()
    links = [colab_url(repo, f"notebooks/{lang}/{chapter.stem}.ipynb") for lang in ("zh", "en")]
    exercise = f"{chapter.stem}_exercises"
    if (project.solutions_dir / f"{exercise}.md").is_file():
        links += [colab_url(repo, f"notebooks/{lang}/exercises/{exercise}.ipynb") for lang in ("zh", "en")]
    return links


def check(project: Project) -> tuple[list[Problem], int]:
    """All link problems of the README and the chapters; and how many files were read."""
    files = [p for p in (project.root / "README.md",) if p.is_file()] + project.chapters()
    problems = [problem for path in files for problem in check_file(project, path)]
    readme = project.root / "README.md"
    if readme.is_file():  # the contents table: every chapter, its notebooks and its exercises
        text = readme.read_text(encoding="utf-8")
        for chapter in project.chapters():
            for link in (f"chapters/{chapter.name}", *colab_links(project, chapter)):
                if link not in text:
                    problems.append(Problem(readme, f"the contents table has no link to {link}",
                                            f"add {chapter.stem} to the table (chapter, Colab, exercises)"))
    for chapter in project.chapters():
        text = chapter.read_text(encoding="utf-8")
        links = colab_links(project, chapter)
        exercise = f"exercises/{chapter.stem}_exercises.md"
        if (project.root / exercise).is_file():
            links.append(exercise)
        for link in links:
            if link not in text:
                problems.append(Problem(chapter, f"no link to {link}",
                                        "add it (the chapter's opening badges, or its closing "
                                        "'exercises' paragraph)"))
        if "mybinder.org" not in text:
            problems.append(Problem(chapter, "no Binder link", "add the Binder badge under the title"))
    return problems, len(files)
