"""JupyterLab starts and serves a MyST chapter as a notebook (jupytext contents manager)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from bookkit.lab import command, write_settings
from bookkit.project import Project

ROOT = Path(__file__).resolve().parent.parent
WAIT = 60  # seconds, for start-up and for each request


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, token: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.mark.timeout(180)
def test_lab_serves_chapters_and_exercises_as_notebooks(tmp_path: Path) -> None:
    """Start JupyterLab exactly as `make lab` does (bookkit.lab.command) and open two .md files."""
    project = Project(ROOT)
    files = [p.relative_to(ROOT).as_posix() for p in (project.chapters()[0], project.exercises()[0])]
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "lab.log", "wb")  # noqa: SIM115 - closed in finally
    server = subprocess.Popen(command(project, port, browser=False, token=token),
                              stdout=subprocess.DEVNULL, stderr=log, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert server.poll() is None, "jupyter lab exited:\n" + (tmp_path / "lab.log").read_text()
            try:
                if get(f"{base}/api/status", token)[0] == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert time.monotonic() < deadline, f"jupyter lab did not answer within {WAIT} s"
            time.sleep(0.5)
        for name in files:
            status, body = get(f"{base}/api/contents/{name}?type=notebook", token)
            assert status == 200, f"GET {name} as notebook: HTTP {status}: {body[:500]!r}"
            model = json.loads(body)
            assert model["type"] == "notebook", "jupytext's contents manager did not open the .md"
            cells = model["content"]["cells"]
            assert cells and {c["cell_type"] for c in cells} >= {"markdown", "code"}
        status, body = get(f"{base}/lab", token)
        assert status == 200 and b"JupyterLab" in body
    finally:
        stop(server)
        log.close()


def test_lab_settings_make_jupytext_the_default_viewer(tmp_path: Path) -> None:
    path = write_settings(tmp_path)
    viewers = json.loads(path.read_text())["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == "Jupytext Notebook"
    assert write_settings(tmp_path) == path  # idempotent


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
