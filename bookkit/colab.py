"""The per-language ``.ipynb`` notebooks under ``notebooks/`` that students open on Colab, GitHub and Binder.

Chapters are stored **executed**: every output and figure is there to read before anything runs, and
``pytest --nbval`` compares each stored output with a fresh run. Exercise notebooks are stored
without outputs (students fill them in). Each chapter is executed once, bilingual, and split into
its zh and en notebooks afterwards: the code cells are shared, so are their outputs.

The files are deterministic: sorted JSON, no timestamps, no execution timings, cell ids hashed from
position and content, consecutive stream outputs merged. Whether a stored notebook is in step with
its source is decided without executing anything: with its outputs removed it must equal what the
source gives (``colab --check``); whether its outputs are still what the code prints is nbval's job.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from bookkit.bilingual import LANGS, split
from bookkit.execute import DEFAULT_TIMEOUT, execute
from bookkit.notebook import cell_tags, read_notebook
from bookkit.project import Project

# The kernelspec ipykernel installs: JupyterLab writes exactly this into a notebook it runs, so a
# notebook (or chapter) that already says it is not marked modified when opened.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
INSTALL_TAG = "colab-install"
SANITIZE_FILE = "tests/nbval_sanitize.cfg"  # nbval's masks, shared with `make colab`
MODULES = ("mytorch", "bookkit", "matplotlib", "mplfonts")
# The sections of SANITIZE_FILE that mask where files lie on the machine that ran a chapter: stored
# outputs are written with these masks applied, so no notebook carries an author's paths.
MACHINE_PATH_MASKS = ("paths to installed and checked-out files", "the files IPython runs cells from")


def install_cell_source(repo: str) -> str:
    """The first cell of every notebook: install what the book needs when it is missing (Colab).

    ``mytorch[book]`` brings mytorch, bookkit (feedback, figures) and the figures' dependencies
    (matplotlib, and mplfonts for the Chinese labels): see ``[project.optional-dependencies]``.
    A failed install stops the notebook with one sentence saying what failed and what to do (the
    exception prints no traceback: IPython shows ``_render_traceback_`` instead), so the next cell
    does not die later with a puzzling ``ModuleNotFoundError``.
    """
    requirement = f"mytorch[book] @ git+https://github.com/{repo}"
    return (
        "# 若缺少本书的包（例如在 Colab 上），先安装 / "
        "Install the book's packages when missing (e.g. on Colab)\n"
        "import importlib, importlib.util, subprocess, sys\n"
        f"if not all(importlib.util.find_spec(m) for m in {MODULES!r}):\n"
        f"    pip = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', {requirement!r}],\n"
        "                         capture_output=True, text=True)\n"
        "    if pip.returncode != 0:\n"
        "        print(pip.stdout[-2000:], pip.stderr[-2000:], sep='\\n', file=sys.stderr)\n"
        "        class InstallFailed(Exception):\n"
        "            def _render_traceback_(self):\n"
        "                return [str(self)]\n"
        "        raise InstallFailed(\n"
        f"            '安装失败：pip 没能从 github.com/{repo} 装上 mytorch（原因见上方 pip 的输出）。'\n"
        "            '请检查网络后重新运行本单元，或在 Colab 中选择“代码执行程序 → 重新启动”再试。 / '\n"
        f"            'Installing mytorch from github.com/{repo} failed (pip says why above): check the '\n"
        "            'network, then run this cell again (or Runtime → Restart session, then run it).')\n"
        "    importlib.invalidate_caches()"
    )


def colab_url(repo: str, relative: str, branch: str = "main") -> str:
    """The Colab address that opens ``relative`` (a path in the repo) from GitHub."""
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/{relative}"


def with_install_cell(nb: NotebookNode, repo: str) -> NotebookNode:
    """A copy of ``nb`` whose first cell is the install cell (executing it is what a student does)."""
    result = copy.deepcopy(nb)
    source = install_cell_source(repo)
    if result.cells and INSTALL_TAG in cell_tags(result.cells[0]) and result.cells[0].source == source:
        return result  # already there (and maybe executed: keep its execution count)
    cell = new_code_cell(source, metadata={"tags": [INSTALL_TAG]})
    result.cells = [cell, *[c for c in result.cells if INSTALL_TAG not in cell_tags(c)]]
    return result


def to_colab(nb: NotebookNode, lang: str, repo: str) -> NotebookNode:
    """A clean single-language notebook with the install cell first; outputs of ``nb`` are kept."""
    single = split(with_install_cell(nb, repo), lang)
    cells = []
    for cell in single.cells:
        metadata = dict(cell.get("metadata", {}))
        if cell.cell_type == "code":
            new = new_code_cell(cell.source, metadata=metadata)
            new.outputs = _clean_outputs(cell.get("outputs", []))
            new.execution_count = cell.get("execution_count")
            cells.append(new)
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


def _clean_outputs(outputs: list) -> list:
    """Outputs as stored: consecutive stream outputs of one stream merged (how the kernel's messages
    were chunked is timing, not content), transient display ids dropped."""
    cleaned: list = []
    for output in outputs:
        output = copy.deepcopy(output)
        output.pop("transient", None)
        if (output.get("output_type") == "stream" and cleaned
                and cleaned[-1].get("output_type") == "stream" and cleaned[-1]["name"] == output["name"]):
            cleaned[-1]["text"] += output["text"]
            continue
        cleaned.append(output)
    return cleaned


def strip_outputs(nb: NotebookNode) -> NotebookNode:
    """A copy of ``nb`` as it was before execution (no outputs, no execution counts)."""
    result = copy.deepcopy(nb)
    for cell in result.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
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


@dataclass(frozen=True)
class Target:
    """One notebook under ``notebooks/``: its source, language, and whether it is stored executed."""

    path: Path
    source: Path
    lang: str
    executed: bool


def targets(project: Project) -> list[Target]:
    """Every notebook ``notebooks/`` should hold: chapters (executed) and exercises (not)."""
    found = []
    for source, sub, executed in [*((p, "", True) for p in project.chapters()),
                                  *((p, "exercises", False) for p in project.exercises())]:
        for lang in LANGS:
            found.append(Target(project.notebooks_dir / lang / sub / f"{source.stem}.ipynb", source, lang,
                                executed))
    return found


def is_current(target: Target, skeleton: str) -> bool:
    """Whether the stored notebook matches its source (without running anything).

    Its text with outputs removed must be the unexecuted notebook the source gives, and a chapter
    must have been executed (every code cell has an execution count).
    """
    if not target.path.is_file():
        return False
    try:
        stored = nbformat.reads(target.path.read_text(encoding="utf-8"), as_version=4)
    except Exception:  # unreadable JSON is simply stale: `make colab` rewrites it
        return False
    if target.executed and any(c.cell_type == "code" and c.get("execution_count") is None
                               for c in stored.cells):
        return False
    return dumps(strip_outputs(stored)) == skeleton


def execute_chapter(project: Project, source: Path, timeout: int = DEFAULT_TIMEOUT) -> NotebookNode:
    """The chapter, install cell first, executed once as a student would run it top to bottom."""
    nb = with_install_cell(read_notebook(source), project.repo_slug())
    return execute(nb, source, project.chapters_dir, root=project.root, timeout=timeout, record_timing=False)


def sync(project: Project, *, write: bool, only_stale: bool = False, timeout: int = DEFAULT_TIMEOUT,
         progress: Callable[[str], None] | None = None) -> SyncReport:
    """Compare (and with ``write`` regenerate) ``notebooks/`` against the sources.

    Checking never executes. Writing executes every chapter (``only_stale``: only those whose stored
    notebooks no longer match their source), so outputs always come from today's mytorch; the
    report then lists the files whose text changed.
    """
    repo = project.repo_slug()
    wanted = targets(project)
    skeletons: dict[Path, str] = {}
    sources: dict[Path, NotebookNode] = {}
    for target in wanted:
        if target.source not in sources:
            sources[target.source] = read_notebook(target.source)
        skeletons[target.path] = dumps(strip_outputs(to_colab(sources[target.source], target.lang, repo)))
    stale = [t for t in wanted if not is_current(t, skeletons[t.path])]
    existing = []
    for lang in LANGS:
        for sub in ("", "exercises"):
            folder = project.notebooks_dir / lang / sub
            existing += sorted(folder.glob("*.ipynb")) if folder.is_dir() else []
    paths = {t.path for t in wanted}
    orphans = [path for path in existing if path not in paths]
    if not write:
        return SyncReport([t.path for t in stale], orphans)

    to_run = {t.source for t in (stale if only_stale else wanted) if t.executed}
    executed: dict[Path, NotebookNode] = {}
    for source in sorted(to_run):
        if progress:
            progress(f"executing {source.relative_to(project.root)} …")
        executed[source] = execute_chapter(project, source, timeout)
    changed = []
    patterns = sanitize_patterns(project)
    paths = sanitize_patterns(project, MACHINE_PATH_MASKS)
    for target in wanted:
        if target.executed and target.source not in executed:
            continue  # only_stale and current: leave the stored outputs as they are
        nb = to_colab(executed.get(target.source, sources[target.source]), target.lang, repo)
        without_machine_paths(nb, paths)
        keep_unchanged_outputs(nb, target.path, patterns)
        text = dumps(nb)
        old = target.path.read_text(encoding="utf-8") if target.path.is_file() else None
        if text != old:
            target.path.parent.mkdir(parents=True, exist_ok=True)
            target.path.write_text(text, encoding="utf-8", newline="\n")
            changed.append(target.path)
    for path in orphans:
        path.unlink()
    return SyncReport(changed, orphans)


def sanitize_patterns(project: Project, sections: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The ``(regex, replacement)`` pairs of the nbval sanitize file (nbval's own line format), of
    every section or only of the ``[sections]`` named."""
    path = project.root / SANITIZE_FILE
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    pairs = []
    for title, body in re.findall(r"^\[(.+)\]$\n((?:^(?!\[).*$\n?)*)", text, flags=re.MULTILINE):
        if sections is None or title in sections:
            pairs += re.findall(r"^regex: (.*)$\n^replace: (.*)$", body, flags=re.MULTILINE)
    return pairs


def without_machine_paths(nb: NotebookNode, patterns: list[tuple[str, str]]) -> None:
    """Mask, in every stored output of ``nb``, the paths that name the machine it ran on (the checkout,
    the virtual environment, the kernel's temporary cell files): a reader sees ``<cell>.py`` or
    ``<path>/site-packages/``, and nbval masks a fresh run's paths the same way before comparing."""
    def clean(value: object) -> object:
        if isinstance(value, str):
            for regex, replacement in patterns:
                value = re.sub(regex, replacement, value)
            return value
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            for key in ("text", "traceback"):
                if key in output:
                    output[key] = clean(output[key])
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/"):
                    output["data"][mime] = clean(value)


def keep_unchanged_outputs(new: NotebookNode, old_path: Path, patterns: list[tuple[str, str]]) -> None:
    """Give each code cell of ``new`` its stored outputs back when they differ only by what the
    sanitize file masks (an object's address): regenerating then rewrites no unchanged file."""
    if not old_path.is_file():
        return
    try:
        old = nbformat.reads(old_path.read_text(encoding="utf-8"), as_version=4)
    except Exception:
        return
    if [c.source for c in old.cells] != [c.source for c in new.cells]:
        return

    def masked(outputs: list) -> str:
        text = json.dumps(outputs, sort_keys=True)
        for regex, replacement in patterns:
            text = re.sub(regex, replacement, text)
        return text

    for cell, before in zip(new.cells, old.cells):
        if cell.cell_type == "code" and cell.outputs != before.get("outputs") \
                and masked(cell.outputs) == masked(before.get("outputs", [])):
            cell.outputs = before.outputs


def total_size(project: Project) -> int:
    """Bytes of every notebook under ``notebooks/`` (CONTRIBUTING reports it; it must stay < 30 MB)."""
    return sum(p.stat().st_size for p in project.notebooks_dir.rglob("*.ipynb"))
