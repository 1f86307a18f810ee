"""``make lab``: JupyterLab on the book, with the MyST chapters and exercises opening as notebooks.

One function builds the command, so ``make lab`` and the test that starts JupyterLab run the same
thing. The server's root is the repository (students need ``chapters/`` *and* ``exercises/``); it
opens on the first chapter; jupytext's contents manager (installed with the ``lab`` extra) serves
``.md`` files as notebooks, and a settings override makes "Jupytext Notebook" their default viewer,
so a double click opens a chapter as a notebook rather than as Markdown text.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from bookkit.project import Project

VIEWERS = {"@jupyterlab/docmanager-extension:plugin": {
    "defaultViewers": {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}}}


def write_settings(prefix: Path | None = None) -> Path:
    """Make "Jupytext Notebook" the default viewer of .md files in this environment's JupyterLab."""
    folder = Path(prefix or sys.prefix) / "share" / "jupyter" / "lab" / "settings"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "overrides.json"
    settings = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if any(settings.get(key) != value for key, value in VIEWERS.items()):
        settings.update(VIEWERS)
        path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return path


def command(project: Project, port: int, *, browser: bool = True, token: str | None = None) -> list[str]:
    """The ``jupyter lab`` command line for this book."""
    chapters = project.chapters()
    start = chapters[0].relative_to(project.root).as_posix() if chapters else ""
    argv = [sys.executable, "-m", "jupyter", "lab", f"--port={port}", "--ServerApp.port_retries=0",
            f"--ServerApp.root_dir={project.root}", f"--LabApp.default_url=/lab/tree/{start}"]
    if not browser:
        argv += ["--no-browser", "--ip=127.0.0.1"]
    if token is not None:
        argv.append(f"--IdentityProvider.token={token}")
    if hasattr(os, "getuid") and os.getuid() == 0:
        argv.append("--allow-root")  # containers and Binder-like images run as root
    return argv
