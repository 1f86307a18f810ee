"""The executed notebooks under notebooks/{zh,en}/ read the same on every machine.

What `make colab` stores is what a student reads on Colab or GitHub and what nbval compares with a
fresh run on another machine: it must not name the author's machine (a checkout or virtual
environment path, the kernel's temporary cell files) nor carry a warning that depends on what the
author had installed (a font, a library version). Progress bars are the only thing a chapter sends
to stderr on purpose.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import nbformat
import pytest

from bookkit.colab import MACHINE_PATH_MASKS, sanitize_patterns, without_machine_paths
from bookkit.project import Project

ROOT = Path(__file__).resolve().parent.parent
STORED = sorted((ROOT / "notebooks").glob("*/*.ipynb"))
MACHINE_PATH = re.compile(r"(?:/work/|/home/|/root/|/tmp/|/usr/|/opt/|/var/|/check/|site-packages/"
                          r"|dist-packages/|[A-Za-z]:\\)")
PROGRESS_BAR = re.compile(r"^[^\n]*\d+%\|[^\n]*\|\s*\d+/\d+")


def _texts(output: dict) -> list[str]:
    texts = ["".join(output["text"])] if "text" in output else []
    texts += ["".join(v) if isinstance(v, list) else str(v)
              for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return texts + list(output.get("traceback", []))


def test_notebooks_were_found() -> None:
    assert len(STORED) >= 20, f"expected the executed chapters under notebooks/, found {len(STORED)}"


@pytest.mark.parametrize("path", STORED, ids=[str(p.relative_to(ROOT)) for p in STORED])
def test_stored_outputs_name_no_machine_and_hold_no_stray_warning(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = []
    for index, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            for text in _texts(output):
                if m := MACHINE_PATH.search(text):
                    problems.append(f"cell {index}: a machine path: …{text[max(0, m.start() - 40):m.end() + 40]!r}…")
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                for line in "".join(output["text"]).replace("\r", "\n").splitlines():
                    if line.strip() and not PROGRESS_BAR.match(line):
                        problems.append(f"cell {index}: stderr that is not a progress bar: {line[:120]!r}")
    assert not problems, (f"{path.relative_to(ROOT)}: stored outputs must read the same on every machine "
                          "(catch a warning in the cell and print what matters; `make colab` masks paths):\n"
                          + "\n".join(problems))


def test_colab_masks_machine_paths_in_what_it_stores() -> None:
    patterns = sanitize_patterns(Project(ROOT), MACHINE_PATH_MASKS)
    assert patterns, "tests/nbval_sanitize.cfg lost the sections that mask machine paths"
    cell = nbformat.v4.new_code_cell("1/0")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout",
                               text="/home/ann/book/.venv/lib/python3.11/site-packages/x.py:3: note\n"),
        nbformat.v4.new_output("error", ename="E", evalue="v",
                               traceback=['  File "/tmp/ipykernel_4242/123456.py", line 5, in <module>']),
        nbformat.v4.new_output("execute_result", data={"text/plain": "/srv/x/mytorch/nn/a.py"},
                               execution_count=1),
    ]
    nb = nbformat.v4.new_notebook(cells=[cell])
    without_machine_paths(nb, patterns)
    texts = [t for o in nb.cells[0].outputs for t in _texts(o)]
    assert texts == ["<path>/site-packages/x.py:3: note\n",
                     '  File "<cell>.py", line 5, in <module>', "<path>/mytorch/nn/a.py"]


def test_the_books_cjk_font_is_the_same_file_everywhere_and_never_warns(
        caplog: pytest.LogCaptureFixture) -> None:
    """A system copy of Noto Sans CJK (Debian's fonts-noto-cjk has bold) must not change which file
    draws the labels, nor whether matplotlib logs `findfont: Failed to find font weight bold`."""
    pytest.importorskip("mplfonts")
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import font_manager

    from bookkit import figures

    system_copy = font_manager.FontEntry(fname="/usr/share/fonts/NotoSansCJK-Bold.ttc",
                                         name=figures.CJK_FONT, weight=700)
    font_manager.fontManager.ttflist.append(system_copy)
    figures._registered = False
    try:
        figures.use_cjk_font()
        entries = [f for f in font_manager.fontManager.ttflist if f.name == figures.CJK_FONT]
        assert entries and all("mplfonts" in f.fname for f in entries), [f.fname for f in entries]
        with caplog.at_level(logging.INFO, logger="matplotlib.font_manager"):
            figures.show_hook_order().canvas.draw()
        assert not [r for r in caplog.records if "findfont" in r.getMessage()]
    finally:
        if system_copy in font_manager.fontManager.ttflist:
            font_manager.fontManager.ttflist.remove(system_copy)
