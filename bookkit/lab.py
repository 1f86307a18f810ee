"""``make lab``: JupyterLab on the book, chapters and exercises opening as notebooks.

One function builds the command, so ``make lab`` and the tests that start JupyterLab run the same
thing. The server's root is the repository (students need ``chapters/`` *and* ``exercises/``); it
opens on the first chapter. The settings it needs are files in ``lab/`` (see ``lab/README.md``),
installed into the environment that runs JupyterLab by :func:`install_settings` — by ``make lab``
and by Binder's ``postBuild`` alike.

:class:`BookContentsManager` is jupytext's contents manager (MyST ``.md`` files are notebooks) with
one addition: the reading language. With ``lang="zh"`` (or ``"en"``) a chapter opens with the prose
of that language only; the other language's cells are not dropped but carried, invisibly, in the
metadata of their partner cell, and put back in place when the notebook is saved. The file on disk
stays bilingual and byte for byte unchanged; the choice is one setting (``make lab LANG=zh``), not
a second copy of the text.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import sys
from pathlib import Path

from jupytext import AsyncTextFileContentsManager
from traitlets import Enum

from bookkit.project import Project

LANG_CHOICES = ("both", "zh", "en")
STASH = "mytorch_hidden"  # cell metadata key that carries the hidden language's cells
SETTINGS_DIR = "lab"  # overrides.json (JupyterLab) and jupyter_server_config.json, in the repo


class BookContentsManager(AsyncTextFileContentsManager):
    """jupytext's contents manager, showing the book's prose in one language when asked to."""

    lang = Enum(list(LANG_CHOICES), default_value="both", config=True,
                help="Which prose cells of a bilingual chapter to show: both, zh or en.")

    async def get(self, path, content=True, type=None, format=None, **kwargs):  # noqa: A002
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and model.get("type") == "notebook":
            lang = chosen_language(Path(self.root_dir), self.lang)
            if lang != "both":
                model["content"] = hide_language(model["content"], other(lang))
            with_language_info(model["content"])
        return model

    async def save(self, model, path=""):
        if model.get("type") == "notebook" and model.get("content"):
            content = restore_language(model["content"])
            spec = content.get("metadata", {}).get("kernelspec")
            if isinstance(spec, dict):
                # jupytext writes the keys in the order given; the book's front matter has them in
                # the order JupyterLab sends them, so a save from any Lab (ours, Binder's, a plain
                # `jupyter lab`) writes the file back unchanged
                content = copy.deepcopy(content)
                content["metadata"]["kernelspec"] = in_lab_order(spec)
            model = dict(model, content=content)
        return await super().save(model, path)


KERNELSPEC_ORDER = ("name", "display_name", "language")  # JupyterLab's own order


def in_lab_order(spec: dict) -> dict:
    """``spec`` with its keys in the order JupyterLab writes a kernelspec (others after them)."""
    return {**{k: spec[k] for k in KERNELSPEC_ORDER if k in spec},
            **{k: v for k, v in spec.items() if k not in KERNELSPEC_ORDER}}


def with_language_info(nb) -> None:
    """Give a text notebook the ``language_info`` its kernel will report.

    The .md files do not store it (jupytext.toml keeps it out), and JupyterLab writes what the kernel
    reports into the notebook once it starts, which marks an unchanged chapter modified. The kernel
    is ipykernel on this same Python (``make lab``, Binder), so its answer is known here already.
    """
    spec = nb.get("metadata", {}).get("kernelspec", {})
    if "language_info" in nb.get("metadata", {}) or spec.get("language", "python") != "python":
        return
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:
        return
    nb["metadata"]["language_info"] = copy.deepcopy(IPythonKernel.language_info)


LANG_FILE = Path("build") / "lab-language"  # under the book's root; `bookkit lang` writes it


def chosen_language(root: Path, default: str = "both") -> str:
    """The reading language chosen with ``python -m bookkit lang zh|en|both`` (read at every opening,
    so a switch needs no server restart: reopen or reload the notebook), else ``default``."""
    try:
        lang = (root / LANG_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return default
    return lang if lang in LANG_CHOICES else default


def choose_language(root: Path, lang: str) -> Path:
    """Record ``lang`` as the reading language of the book at ``root``; returns the file written."""
    if lang not in LANG_CHOICES:
        raise ValueError(f"lang must be one of {', '.join(LANG_CHOICES)}, not {lang!r}")
    path = root / LANG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lang + "\n", encoding="utf-8")
    return path


def other(lang: str) -> str:
    return "en" if lang == "zh" else "zh"


def _lang(cell) -> str | None:
    return cell.get("metadata", {}).get("lang") if cell.get("cell_type") == "markdown" else None


def hide_language(nb, hidden: str):
    """A copy of ``nb`` without the ``hidden`` language's prose cells, each carried by a neighbour.

    A zh cell rides *before* its en partner (the cell right after it); an en cell rides *after* its
    zh partner; a cell without its partner rides after the nearest shown cell before it (or before
    the first shown cell). Deleting a shown cell in JupyterLab so deletes its translation too.
    """
    cells = [copy.deepcopy(c) for c in nb["cells"]]
    shown = [i for i, c in enumerate(cells) if _lang(c) != hidden]
    if not shown or len(shown) == len(cells):
        return nb
    for index, cell in enumerate(cells):
        if _lang(cell) != hidden:
            continue
        after = index + 1 < len(cells) and _lang(cells[index + 1]) == other(hidden)
        before = index > 0 and _lang(cells[index - 1]) == other(hidden)
        if hidden == "zh" and after:
            host, side = index + 1, "before"
        elif hidden == "en" and before:
            host, side = index - 1, "after"
        else:
            earlier = [i for i in shown if i < index]
            host, side = (earlier[-1], "after") if earlier else (shown[0], "before")
        stash = cells[host].setdefault("metadata", {}).setdefault(STASH, {"before": [], "after": []})
        stash[side].append(cell)
    result = copy.deepcopy(nb)
    result["cells"] = [cells[i] for i in shown]
    return result


def restore_language(nb):
    """The bilingual notebook again: every carried cell back beside its host, in its old order."""
    if not any(STASH in c.get("metadata", {}) for c in nb["cells"]):
        return nb
    cells = []
    for cell in nb["cells"]:
        cell = copy.deepcopy(cell)
        stash = cell.get("metadata", {}).pop(STASH, {"before": [], "after": []})
        cells += [*stash.get("before", []), cell, *stash.get("after", [])]
    result = copy.deepcopy(nb)
    result["cells"] = cells
    return result


def install_settings(root: Path, prefix: Path | None = None) -> list[Path]:
    """Merge ``lab/overrides.json`` and ``lab/jupyter_server_config.json`` into the environment.

    ``prefix`` is the environment (default: this Python's ``sys.prefix``): JupyterLab reads
    ``share/jupyter/lab/settings/overrides.json``, the server ``etc/jupyter/jupyter_server_config.json``.
    What those files already hold stays unless the book sets the same key. Settings a student
    changes in JupyterLab's settings editor live in their home folder and still win.
    """
    prefix = Path(prefix or sys.prefix)
    source = root / SETTINGS_DIR
    pairs = [(source / "overrides.json", prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"),
             (source / "jupyter_server_config.json", prefix / "etc" / "jupyter" / "jupyter_server_config.json")]
    written = []
    for src, dst in pairs:
        ours = json.loads(src.read_text(encoding="utf-8"))  # a broken settings file fails here, not in Lab
        theirs = json.loads(dst.read_text(encoding="utf-8")) if dst.is_file() else {}
        merged = _merge(theirs, ours)
        if merged != theirs or not dst.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(dst)
    return written


def _merge(base: dict, update: dict) -> dict:
    merged = dict(base)
    for key, value in update.items():
        merged[key] = _merge(merged[key], value) if isinstance(value, dict) and isinstance(
            merged.get(key), dict) else value
    return merged


def port_is_free(port: int) -> bool:
    """Whether nothing listens on ``port`` (JupyterLab binds localhost)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_after(port: int) -> int:
    """The first free port above ``port`` (what to suggest when ``port`` is taken)."""
    candidate = port + 1
    while candidate < 65535 and not port_is_free(candidate):
        candidate += 1
    return candidate


def command(project: Project, port: int, *, browser: bool = True, token: str | None = None,
            lang: str = "both", expose_app: bool = False) -> list[str]:
    """The ``jupyter lab`` command line for this book.

    ``expose_app`` makes ``window.jupyterapp`` available to a browser test (it drives JupyterLab's
    commands, as a student's clicks would).
    """
    if lang not in LANG_CHOICES:
        raise ValueError(f"lang must be one of {', '.join(LANG_CHOICES)}, not {lang!r}")
    chapters = project.chapters()
    start = chapters[0].relative_to(project.root).as_posix() if chapters else ""
    argv = [sys.executable, "-m", "jupyter", "lab", f"--port={port}", "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={project.root}", f"--LabApp.default_url=/lab/tree/{start}",
            "--ServerApp.contents_manager_class=bookkit.lab.BookContentsManager",
            f"--BookContentsManager.lang={lang}"]
    if not browser:
        argv += ["--no-browser", "--ip=127.0.0.1"]
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if expose_app:
        argv.append("--LabApp.expose_app_in_browser=True")
    if hasattr(os, "getuid") and os.getuid() == 0:
        argv.append("--allow-root")  # containers and Binder-like images run as root
    return argv
