"""pytest settings for the whole repository (tests/conftest.py holds the fixtures of tests/).

The stored, executed notebooks of notebooks/{zh,en}/ are tests too (`--nbval`, set in pyproject.toml):
each code cell is an item whose fresh output must match the stored one. A notebook's cells share one
kernel and must run in order on one worker: pytest-xdist's `--dist loadscope` sends each notebook
(and each test module or class) to one worker. Exercise notebooks are stored without
outputs (students fill them in): nbval does not run them.
"""

from __future__ import annotations

import pytest

collect_ignore_glob = ["notebooks/*/exercises/*"]


def _execute_like_jupyter(self, cell_input: str, allow_stdin: bool | None = None) -> str:
    """nbval runs cells with ``store_history=False``, and then IPython ignores a closing ``;`` (the
    displayhook reads the last *stored* input: nbval issue 194, IPython issue 14162), so a figure
    returned by ``show_memory(x);`` would show twice. Jupyter, Colab and nbclient store history:
    run cells the way they do."""
    return self.kc.execute(cell_input, store_history=True, allow_stdin=allow_stdin, stop_on_error=False)


def pytest_configure(config: pytest.Config) -> None:
    try:
        from nbval.kernel import RunningKernel
    except ImportError:  # nbval is not installed: no notebook is collected either
        return
    RunningKernel.execute_cell_input = _execute_like_jupyter


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)  # `-m "not notebook"` skips them with the chapters
