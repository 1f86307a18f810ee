"""Your own mytorch: run the library on the pieces you wrote in the exercises.

Every exercise of the book asks for a *piece* of mytorch (see ``_pieces.py``). This module reads
your exercise notebooks, runs the cells that define your pieces, and switches the library onto
them::

    import mytorch
    mytorch.use_mine()            # the exercises/ folder of the book you are in
    mytorch.use_mine("path/to/my/exercises")   # or a folder, or one notebook file
    mytorch.use_mine(globals())   # or the pieces defined in this notebook
    mytorch.use_reference()       # back to the library's own pieces

``MYTORCH_MINE=1`` (or ``MYTORCH_MINE=<folder>``) does the same for every ``import mytorch`` of
a script or a test run. A piece still left as a stub, or one whose cell fails to run, falls back
to the library's own and is shown as such; when one of your pieces raises inside the library,
the error says which piece and which exercise it came from.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import re
import sys
import traceback
import types
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ._pieces import _ON_REGISTER, REGISTRY, STUB_MESSAGE, Piece, activate, pieces, set_pending

__all__ = ["use_mine", "use_reference", "plugged", "chapter_pieces", "report", "Report", "CALLS"]

#: How many times each of the student's pieces has run (the test plugin reads it).
CALLS: Counter = Counter()

_EXERCISE_FILE = re.compile(r"^(\d\d)_[A-Za-z0-9_]+_exercises\.(md|ipynb)$")
_CODE_CELL = re.compile(r"^(`{3,}|~{3,})\{code-cell\}[^\n]*$")


# ----------------------------------------------------------------------------- reading notebooks
@dataclass
class Cell:
    """One code cell of an exercise notebook: its source, metadata and place in the file."""

    source: str
    piece: str | None
    tags: list
    line: int  # 1-based line of the first source line (0 when unknown, as in .ipynb)
    meta: dict = field(default_factory=dict)  # the top-level options (``piece``, ``tags``, ``grade``...)
    opened: int = -1  # 0-based line of the opening fence (MyST only)
    close: int = -1   # 0-based line of the closing fence; ``len(lines)`` when it is never closed
    fence: str = ""   # the fence that closes it (MyST only)


def read_cells(path: Path) -> list[Cell]:
    """The code cells of a MyST ``.md`` or ``.ipynb`` exercise file (standard library only)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        nb = json.loads(text)
        cells = []
        for c in nb.get("cells", []):
            if c.get("cell_type") != "code":
                continue
            src = c.get("source", "")
            src = "".join(src) if isinstance(src, list) else src
            meta = c.get("metadata", {}) or {}
            cells.append(Cell(src, meta.get("piece"), list(meta.get("tags", []) or []), 0))
        return cells
    return myst_cells(text)


def fence_of(line: str) -> str | None:
    """The fence (```` ``` ````, ``~~~``...) when ``line`` opens a MyST code cell, else None."""
    m = _CODE_CELL.match(line)
    return m[1] if m else None


def myst_cells(text: str) -> list[Cell]:
    """The code cells of a jupytext MyST text: the book's one reader of ``{code-cell}`` blocks
    (bookkit's exercise generator, notebook checks and piece tools use it too).

    Options come as a YAML block between ``---`` lines or as ``:key: value`` lines; only
    top-level ``key: value`` pairs are read (nested YAML is ignored), quotes stripped.
    """
    lines = text.split("\n")
    cells, i = [], 0
    while i < len(lines):
        fence = fence_of(lines[i])
        if fence is None:
            i += 1
            continue
        opened, i = i, i + 1
        meta: dict[str, str] = {}
        if i < len(lines) and lines[i].strip() == "---":          # a YAML block of options
            i += 1
            while i < len(lines) and lines[i].strip() != "---":
                _option(lines[i], meta)
                i += 1
            i += 1
        else:
            while i < len(lines) and lines[i].startswith(":"):    # :key: value options
                _option(lines[i][1:], meta)
                i += 1
            if meta and i < len(lines) and not lines[i].strip():    # jupytext's blank line after them
                i += 1
        start = i
        while i < len(lines) and lines[i].strip() != fence:
            i += 1
        tags = [t.strip().strip("'\"") for t in meta.get("tags", "").strip("[]").split(",")
                if t.strip()]
        cells.append(Cell("\n".join(lines[start:i]), meta.get("piece") or None, tags, start + 1,
                          meta, opened, i, fence))
        i += 1
    return cells


def _option(line: str, meta: dict) -> None:
    """``key: value`` (only top-level keys: nested YAML is ignored)."""
    if line[:1].isspace() or ":" not in line:
        return
    key, _, value = line.partition(":")
    meta[key.strip()] = value.strip().strip("'\"")


def exercise_files(folder: Path) -> list[Path]:
    """One file per exercise notebook of ``folder``: the ``.ipynb`` when it is newer than the
    ``.md`` (saved from Colab or Jupyter), else the ``.md``."""
    chosen: dict[str, Path] = {}
    for p in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not _EXERCISE_FILE.match(p.name) or not p.is_file():
            continue
        old = chosen.get(p.stem)
        if old is None or p.stat().st_mtime > old.stat().st_mtime:
            chosen[p.stem] = p
    return [chosen[k] for k in sorted(chosen)]


def find_exercises(start: Path | None = None) -> Path | None:
    """The book's ``exercises/`` folder: searched upwards from the current folder, then next to
    the installed package."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "exercises").is_dir() and exercise_files(d / "exercises"):
            return d / "exercises"
        if d.name == "exercises" and exercise_files(d):
            return d
    beside = Path(__file__).resolve().parent.parent / "exercises"
    return beside if beside.is_dir() else None


# ----------------------------------------------------------------------------- running the cells
def _compile_cell(cell: Cell, path: Path) -> types.CodeType:
    """Compile a cell so that tracebacks point at its lines in the notebook file; IPython's
    ``%magic`` and ``!shell`` lines become ``pass``."""
    src = "\n".join(re.sub(r"^(\s*)[%!].*$", r"\1pass", ln) for ln in cell.source.split("\n"))
    tree = ast.parse(src, filename=str(path))
    if cell.line > 1:
        ast.increment_lineno(tree, cell.line - 1)
    return compile(tree, str(path), "exec")


def _is_stub(obj: Any, source: str) -> bool:
    return STUB_MESSAGE in source or STUB_MESSAGE in _constants(obj)


def _constants(obj: Any) -> str:
    """The string constants of a function (or of a class's methods), to recognise stubs."""
    funcs = [obj] if isinstance(obj, types.FunctionType) else \
        [v for v in vars(obj).values() if isinstance(v, types.FunctionType)] \
        if isinstance(obj, type) else []
    out = []
    for f in funcs:
        out += [c for c in f.__code__.co_consts if isinstance(c, str)]
    return "\n".join(out)


def load_file(path: Path) -> list[tuple[str, str, Any, str]]:
    """Run the setup and piece cells of one exercise file in a fresh namespace.

    Returns ``(piece name, status, function or None, note)`` for each piece cell, status being
    ``mine``, ``stub`` or ``error``.
    """
    ns = types.ModuleType(f"mine_{path.stem}")
    ns.__file__ = str(path)
    results = []
    try:
        cells = read_cells(path)
    except Exception as exc:  # a corrupt notebook: nothing from it is used
        return [("*", "error", None, f"{path.name}: cannot be read ({type(exc).__name__}: {exc})")]
    for cell in cells:
        if "setup" not in cell.tags or cell.piece:
            continue
        try:
            exec(_compile_cell(cell, path), ns.__dict__)
        except Exception as exc:
            return [("*", "error", None, f"{path.name}: the setup cell failed: {_short(exc)}")]
    for cell in cells:
        if not cell.piece:
            continue
        name = cell.piece
        if STUB_MESSAGE in cell.source:
            results.append((name, "stub", None, ""))
            continue
        try:
            exec(_compile_cell(cell, path), ns.__dict__)
        except Exception as exc:
            results.append((name, "error", None, f"{path.name}: {_short(exc)}"))
            continue
        fn = ns.__dict__.get(name)
        if fn is None:
            results.append((name, "error", None,
                            f"{path.name}: the cell of `{name}` does not define `{name}`"))
        elif _is_stub(fn, ""):
            results.append((name, "stub", None, ""))
        else:
            results.append((name, "mine", fn, str(path)))
    return results


def _short(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (line {tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


# ----------------------------------------------------------------------------- switching
def _tracked(p: Piece, fn: Callable) -> Callable:
    """``fn`` counting its calls and naming the piece and exercise in any error it raises."""
    where = f"your piece `{p.name}` (exercise {p.exercise})"
    if isinstance(fn, type):  # a class (a custom Function): used as it is
        return fn

    @functools.wraps(fn)
    def mine(*args: Any, **kwargs: Any) -> Any:
        CALLS[p.name] += 1
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            notes = getattr(exc, "__notes__", ())
            if not any(p.name in n for n in notes):
                exc.add_note(f"这个错误发生在你写的零件 `{p.name}`（练习 {p.exercise}）里 / "
                             f"raised in {where}")
            raise

    mine.__mytorch_piece__ = p.name  # type: ignore[attr-defined]
    return mine


def _switch(name: str, status: str, fn: Any, note: str) -> None:
    p = REGISTRY.get(name)
    if p is None:  # a later chapter's module is not imported yet: switch when it registers
        set_pending(name, (status, fn, note))
        return
    p.status, p.note = status, (note if status != "mine" else "")
    p.source = note if status == "mine" else ""
    if status == "mine":
        p.mine = fn
        impl = _tracked(p, fn)
        activate(name, p.wrap(impl) if p.wrap is not None else impl)
    else:
        p.mine = None
        activate(name, None)


def use_mine(source: str | os.PathLike | dict | Iterable | None = None, *,
             quiet: bool = False) -> "Report":
    """Switch mytorch onto your pieces; return the table of what runs whose code.

    ``source``: a folder of exercise notebooks (default: the book's ``exercises/``), one notebook
    file, or a namespace such as ``globals()`` (the pieces defined in the running notebook).
    """
    found: list[tuple[str, str, Any, str]] = []
    if isinstance(source, dict):
        for name, fn in source.items():
            if name in REGISTRY and callable(fn) and not name.startswith("_"):
                found.append((name, "stub" if _is_stub(fn, "") else "mine", fn,
                              "<this notebook>"))
    else:
        path = Path(source) if source not in (None, "", "1") else find_exercises()
        if path is None or not path.exists():
            raise FileNotFoundError(
                f"没有找到练习文件夹 {path or 'exercises/'} / no exercises folder found"
                f"{f' at {path}' if path else ''}: pass the folder holding your "
                "NN_*_exercises.md files, e.g. mytorch.use_mine('exercises')")
        files = exercise_files(path) if path.is_dir() else [path]
        for f in files:
            found += load_file(f)
    for name, status, fn, note in found:
        if name == "*":
            print(f"mytorch: {note}", file=sys.stderr)
            continue
        _switch(name, status, fn, note)
    rep = report()
    if not quiet:
        print(rep.summary(), file=sys.stderr)
    return rep


def use_reference(readable: bool = False) -> None:
    """Back to the library's own pieces (``readable=True``: the readable reference code even
    where the library has a faster fused version)."""
    for name, p in REGISTRY.items():
        p.status, p.mine, p.note, p.source = "reference", None, "", ""
        if readable and p.fast is not None:
            impl = p.wrap(p.reference) if p.wrap is not None else p.reference
            activate(name, impl)
        else:
            activate(name, None)
    set_pending(None, None)


# ----------------------------------------------------------------------------- the table
_STATUS = {"mine": "你的 / yours", "reference": "参考 / reference", "stub": "未完成 / stub",
           "error": "出错 / error"}


@dataclass
class Report:
    """What runs whose code: one row per piece."""

    rows: list[Piece]
    passed: dict | None = None  # name -> (passed, run) from a test run

    def summary(self) -> str:
        n = Counter(p.status for p in self.rows)
        return (f"mytorch: 你的零件 {n['mine']} 个，未完成 {n['stub']} 个，出错 {n['error']} 个"
                f"（其余用参考实现）/ running on your pieces: {n['mine']} yours, {n['stub']} stubs, "
                f"{n['error']} with errors (the reference runs for the rest)")

    def table(self) -> str:
        head = ["零件 / piece", "练习 / exercise", "状态 / status", "测试 / tests"]
        body = []
        for p in self.rows:
            tests = ""
            if self.passed is not None:
                ok, run = self.passed.get(p.name, (0, 0))
                tests = f"{ok}/{run}" if run else "—"
            status = _STATUS[p.status] + (f" ({p.note})" if p.status == "error" and p.note else "")
            body.append([f"`{p.name}`", p.exercise, status, tests])
        if self.passed is None:
            head, body = head[:3], [r[:3] for r in body]
        return _markdown(head, body)

    def __str__(self) -> str:
        return self.table() + "\n\n" + self.summary()

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        return str(self)


def _markdown(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def report() -> Report:
    """The current table (which pieces are yours, which run the reference)."""
    rows = sorted(REGISTRY.values(), key=lambda p: tuple(int(x) for x in p.exercise.split(".")))
    return Report(rows)


def _from_environment() -> None:
    """``MYTORCH_MINE=1`` or ``=<folder>``: switch on at import (scripts, tests, notebooks)."""
    value = os.environ.get("MYTORCH_MINE", "").strip()
    if value and value != "0":
        try:
            use_mine(None if value == "1" else value,
                     quiet=os.environ.get("MYTORCH_MINE_QUIET") == "1")
        except FileNotFoundError as exc:  # a wrong setting must not break `import mytorch`
            print(f"mytorch: MYTORCH_MINE={value}: {exc}; running on the library's own pieces",
                  file=sys.stderr)


def current(name: str) -> Callable:
    """The implementation of piece ``name`` that runs now."""
    return getattr(pieces, name)


@contextlib.contextmanager
def plugged(**fns: Callable) -> Iterator[None]:
    """Inside the block, the library runs these functions for the pieces they are named after:
    ``with plugged(unbroadcast=unbroadcast): (a + b).sum().backward()``."""
    unknown = [n for n in fns if n not in REGISTRY]
    if unknown:
        raise KeyError(f"no piece named {', '.join(unknown)} (known: {', '.join(sorted(REGISTRY))})")
    before = {name: getattr(pieces, name) for name in fns}
    try:
        for name, fn in fns.items():
            p = REGISTRY[name]
            impl = _tracked(p, fn)
            activate(name, p.wrap(impl) if p.wrap is not None else impl)
        yield
    finally:
        for name, impl in before.items():
            setattr(pieces, name, impl)


def chapter_pieces(namespace: dict, chapter: int) -> dict:
    """The pieces of ``chapter`` defined in ``namespace`` (e.g. a notebook's ``globals()``), by
    name: ``with plugged(**chapter_pieces(globals(), 2)):`` runs mytorch on all of them at once."""
    return {name: namespace[name] for name, p in REGISTRY.items()
            if p.chapter == chapter and name in namespace}


_ON_REGISTER.append(lambda name, args: _switch(name, *args))
