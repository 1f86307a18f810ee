"""Running a notebook with nbclient, turning failures into messages that name the cell."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from nbformat import NotebookNode

DEFAULT_TIMEOUT = 600  # seconds per cell
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class ExecutionFailed(Exception):
    """A cell of a notebook raised, timed out, or killed the kernel."""

    def __init__(self, path: Path | str, cell_number: int | None, source: str, error: str) -> None:
        self.path, self.cell_number, self.source, self.error = Path(path), cell_number, source, error
        where = f"cell {cell_number}" if cell_number else "kernel start-up"
        excerpt = "\n".join("    | " + line for line in source.splitlines()[:12])
        super().__init__(
            f"{path}: {where} failed.\n{excerpt}\n{error}\n"
            f"Fix the cell (or the mytorch code it calls), then run again."
        )


def kernel_env(root: Path | None) -> dict[str, str]:
    """Environment for the kernel: the current one, with ``root`` first on PYTHONPATH."""
    env = dict(os.environ)
    if root is not None:
        parts = [str(root), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(parts)
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # Figures must end up in the notebook as images, as in JupyterLab: the inline backend (not a
    # bare Agg, which draws them nowhere; not a GUI one, there is no screen).
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    return env


def execute(
    nb: NotebookNode,
    path: Path | str,
    cwd: Path | str,
    *,
    root: Path | None = None,
    timeout: int = DEFAULT_TIMEOUT,
    allow_errors: bool = False,
    kernel_name: str = "python3",
    record_timing: bool = True,
) -> NotebookNode:
    """Execute ``nb`` in place (kernel in ``cwd``) and return it; raise ExecutionFailed on error.

    With ``allow_errors`` every cell runs and errors are left as outputs for the caller to inspect.
    ``record_timing=False`` keeps execution timestamps out of the cells' metadata (notebooks that
    are committed must not change when nothing but the clock did).
    """
    if root is not None and Path(path).is_absolute() and Path(path).is_relative_to(root):
        path = Path(path).relative_to(root)  # shorter, clearer messages
    current: dict[str, object] = {"index": None, "source": ""}

    def remember(cell: NotebookNode, cell_index: int, **_: object) -> None:
        current["index"], current["source"] = cell_index, cell.source

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=kernel_name,
        allow_errors=allow_errors,
        record_timing=record_timing,
        coalesce_streams=True,
        resources={"metadata": {"path": str(cwd)}},
        on_cell_execute=remember,
    )
    try:
        # The kernel's own stderr (ipykernel start-up warnings, its shutdown messages) is noise in a
        # terminal; what cells print to stderr still reaches the notebook through the kernel protocol.
        return client.execute(env=kernel_env(root), stderr=subprocess.DEVNULL)
    except CellExecutionError as exc:
        error = f"{exc.ename}: {exc.evalue}" if exc.ename else _ANSI.sub("", str(exc))
        trace = _ANSI.sub("", str(exc)).strip().splitlines()
        tail = "\n".join(trace[-8:]) if trace else ""
        raise ExecutionFailed(path, _number(current["index"]), str(current["source"]),
                              f"{error}\n--- traceback (last lines) ---\n{tail}") from None
    except CellTimeoutError:
        raise ExecutionFailed(path, _number(current["index"]), str(current["source"]),
                              f"TimeoutError: the cell ran longer than {timeout} s") from None
    except DeadKernelError as exc:
        raise ExecutionFailed(path, _number(current["index"]), str(current["source"]),
                              f"the kernel died ({exc}); the cell may use too much memory") from None


def _number(index: object) -> int | None:
    return index + 1 if isinstance(index, int) else None


def error_outputs(nb: NotebookNode) -> list[tuple[int, str, str]]:
    """``(cell number, ename, evalue)`` for every error output in an executed notebook."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append((index + 1, output.get("ename", ""), output.get("evalue", "")))
    return found
