"""JupyterLab as `make lab` starts it: chapters open as notebooks, opening and saving an unchanged
chapter leaves it byte for byte unchanged (through the Jupyter server's contents API, with what
JupyterLab adds when it runs a notebook), the zh / en reading choice, the shipped settings, and a
busy port. The servers run on a temporary copy of the book, so a failing save cannot touch it.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from lab_support import ROOT, lab, request

from bookkit import cli
from bookkit.lab import hide_language, restore_language
from bookkit.notebook import read_notebook
from bookkit.project import Project

pytestmark = pytest.mark.timeout(300)


def open_as_lab_does(base: str, token: str, name: str) -> dict:
    """GET a file as a notebook, then change it the way JupyterLab does once a kernel runs it."""
    status, body = request(f"{base}/api/contents/{name}?type=notebook&content=1", token)
    assert status == 200, f"GET {name} as notebook: HTTP {status}: {body[:500]!r}"
    model = json.loads(body)
    assert model["type"] == "notebook", "jupytext's contents manager did not open the .md"
    specs = json.loads(request(f"{base}/api/kernelspecs", token)[1])
    spec = specs["kernelspecs"][specs["default"]]["spec"]
    nb = model["content"]
    nb["metadata"]["kernelspec"] = {"name": specs["default"], "display_name": spec["display_name"],
                                    "language": spec["language"]}
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.7", "file_extension": ".py",
                                       "codemirror_mode": {"name": "ipython", "version": 3}}
    for index, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{index}"
        cell["metadata"].update(collapsed=False, scrolled=True, trusted=True)
        if cell["cell_type"] == "code":
            cell["metadata"]["execution"] = {"iopub.status.busy": "2025-01-01T00:00:00Z"}
            cell["execution_count"] = index
    return nb


def save(base: str, token: str, name: str, nb: dict) -> None:
    status, body = request(f"{base}/api/contents/{name}", token,
                           {"type": "notebook", "format": "json", "content": nb})
    assert status in (200, 201), f"PUT {name}: HTTP {status}: {body[:500]!r}"


def test_open_and_save_leaves_every_source_unchanged_and_settings_apply(tmp_path: Path) -> None:
    with lab(tmp_path) as (base, token, book):
        project = Project(book)
        files = [p.relative_to(book).as_posix()
                 for p in (*project.chapters(), *project.exercises(), *project.solutions())]
        for name in files:
            before = (book / name).read_bytes()
            save(base, token, name, open_as_lab_does(base, token, name))
            after = (book / name).read_bytes()
            assert after == before, (
                f"opening and saving {name} in JupyterLab changed it (git diff would show it): keep the "
                "front matter as jupytext writes it and its kernelspec as JupyterLab does (see "
                "jupytext.toml)")
        listing = {item["name"] for item in json.loads(request(f"{base}/api/contents/", token)[1])["content"]}
        assert {"chapters", "exercises"} <= listing
        assert not listing & {"README.md", "CONTRIBUTING.md", "GLOSSARY.md"}, \
            "plain Markdown documents would open as notebooks: lab/jupyter_server_config.json hides them"
        # lab/overrides.json becomes the schemas' defaults (what a student sees unless they change it)
        status, body = request(f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification", token)
        assert status == 200 and json.loads(body)["schema"]["properties"]["fetchNews"]["default"] == "false"
        status, body = request(f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin", token)
        viewers = json.loads(body)["schema"]["properties"]["defaultViewers"]["default"]
        assert viewers["markdown"] == "Jupytext Notebook"
        status, body = request(f"{base}/lab", token)
        assert status == 200 and b"JupyterLab" in body


def test_reading_in_one_language_keeps_the_file_bilingual(tmp_path: Path) -> None:
    """`make lab LANG=zh`: chapters show the Chinese prose only; saving writes both languages back."""
    with lab(tmp_path, lang="zh") as (base, token, book):
        name = Project(book).chapters()[1].relative_to(book).as_posix()
        before = (book / name).read_text(encoding="utf-8")
        nb = open_as_lab_does(base, token, name)
        langs = {c["metadata"].get("lang") for c in nb["cells"] if c["cell_type"] == "markdown"}
        assert langs == {"zh"}, f"LANG=zh still shows {langs}"
        save(base, token, name, nb)
        assert (book / name).read_text(encoding="utf-8") == before
        code = next(c for c in nb["cells"] if c["cell_type"] == "code")
        code["source"] += "\nprint('a student was here')"
        del nb["cells"][-1]  # a student deletes the last cell shown: its translation goes with it
        save(base, token, name, nb)
        after = read_notebook(book / name)
        assert "print('a student was here')" in after.cells[[c.cell_type for c in after.cells].index("code")].source
        original = read_notebook(ROOT / name)
        assert len(after.cells) == len(original.cells) - 2
        assert {c.metadata.get("lang") for c in after.cells if c.cell_type == "markdown"} == {"zh", "en"}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_hide_and_restore_are_inverse_on_every_source(lang: str) -> None:
    project = Project(ROOT)
    for path in (*project.chapters(), *project.solutions()):
        nb = read_notebook(path)
        shown = hide_language(nb, "en" if lang == "zh" else "zh")
        assert all(c.metadata.get("lang") in (None, lang) for c in shown.cells)
        assert restore_language(json.loads(json.dumps(shown))) == json.loads(json.dumps(nb)), path.name


def test_a_busy_port_names_the_port_to_use(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    def no_exec(*args: object) -> None:
        raise AssertionError("JupyterLab was started although the port is busy")

    monkeypatch.setattr(os, "execv", no_exec)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        status = cli.main(["--root", str(ROOT), "lab", "--port", str(port), "--no-browser"])
    err = capsys.readouterr().err
    assert status == 1 and f"port {port} is already in use" in err and "make lab PORT=" in err
    assert "端口" in err


def test_switching_language_inside_lab_needs_no_restart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m bookkit lang en` (from a Lab terminal or a cell) changes what the next opening of a
    chapter shows, on the running server."""
    with lab(tmp_path, lang="zh") as (base, token, book):
        name = Project(book).chapters()[1].relative_to(book).as_posix()

        def shown() -> set:
            nb = open_as_lab_does(base, token, name)
            return {c["metadata"].get("lang") for c in nb["cells"] if c["cell_type"] == "markdown"}

        assert shown() == {"zh"}
        for lang, expected in (("en", {"en"}), ("both", {"zh", "en"}), ("zh", {"zh"})):
            assert cli.main(["--root", str(book), "lang", lang]) == 0
            assert "no restart" in capsys.readouterr().out
            assert shown() == expected, f"after `bookkit lang {lang}`"
