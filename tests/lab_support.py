"""Starting JupyterLab as `make lab` does, on a temporary copy of the book (tests/test_lab.py and
tests/test_browser.py)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from bookkit.lab import command, install_settings
from bookkit.project import Project

ROOT = Path(__file__).resolve().parent.parent
WAIT = 60  # seconds, for start-up and for each request
COPIED = ["chapters", "exercises", "solutions", "lab", "jupytext.toml", "pyproject.toml", "README.md",
          "CONTRIBUTING.md", "GLOSSARY.md"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def request(url: str, token: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="PUT" if body is not None else "GET",
                                 headers={"Authorization": f"token {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def copy_book(target: Path) -> Path:
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, target / name, ignore=shutil.ignore_patterns(".backup"))
        elif src.is_file():
            shutil.copy(src, target / name)
    return target


@contextlib.contextmanager
def lab(tmp: Path, lang: str = "both", expose_app: bool = False) -> Iterator[tuple[str, str, Path]]:
    """JupyterLab exactly as `make lab` starts it (bookkit.lab.command + the settings it installs),
    on a copy of the book; yields (base URL, token, the copy's root)."""
    book = copy_book(tmp / "book")
    prefix = tmp / "env"
    install_settings(book, prefix)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTER_CONFIG_PATH=str(prefix / "etc" / "jupyter"), JUPYTER_DATA_DIR=str(tmp / "data"))
    argv = command(Project(book), port, browser=False, token=token, lang=lang, expose_app=expose_app)
    argv.append(f"--LabApp.app_settings_dir={prefix / 'share' / 'jupyter' / 'lab' / 'settings'}")
    log = open(tmp / "lab.log", "wb")  # noqa: SIM115 - closed in finally
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while True:
            if server.poll() is not None:
                raise RuntimeError("jupyter lab exited:\n" + (tmp / "lab.log").read_text())
            try:
                if request(f"{base}/api/status", token)[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"jupyter lab did not answer within {WAIT} s")
            time.sleep(0.3)
        yield base, token, book
    finally:
        stop(server)
        log.close()


def stop(server: subprocess.Popen[bytes]) -> None:
    """Terminate the server's process group, then kill it if it lingers."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    server.wait(timeout=10)
