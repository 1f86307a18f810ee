"""The exercises' piece cells, generated from the library (one source for both).

A code cell of ``solutions/NN_*_exercises.md`` whose metadata says ``piece: <name>`` holds the
reference implementation of that piece *as the library defines it*: ``make exercises`` copies
the function's source from ``mytorch/`` into the cell (decorator removed), with the
``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers around its body, and the student version
keeps the signature and the docstring around a stub. ``exercises --check`` fails when a cell has
drifted from the library. :func:`free_names` checks that a piece only uses what the notebook has.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
import symtable
import textwrap
from pathlib import Path

from bookkit.exercises import BEGIN_SOLUTION, END_SOLUTION, ExerciseError
from bookkit.pysource import parse_python

#: Packages whose import registers pieces (import errors for packages not written yet are fine).
PIECE_PACKAGES = ("mytorch", "mytorch.nn", "mytorch.optim", "mytorch.utils.data",
                  "mytorch.serialization", "mytorch.vision", "mytorch.distributed", "mytorch.cuda",
                  "mytorch.profiler", "mytorch.utils.data.distributed")


def registry() -> dict:
    """mytorch's piece registry, every package that defines pieces imported."""
    for name in PIECE_PACKAGES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
    from mytorch._pieces import REGISTRY

    return REGISTRY


def piece_source(name: str) -> str:
    """The reference source of piece ``name`` as a notebook cell: no decorator, and the markers
    around each function body (after its docstring) — for a class, around each method's body."""
    reg = registry()
    if name not in reg:
        raise ExerciseError(f"no piece named {name!r} in mytorch (known: {', '.join(sorted(reg))})."
                            " Fix the cell's `piece:` metadata or add @piece to the function.")
    src = textwrap.dedent(inspect.getsource(reg[name].reference))
    node = parse_python(src).body[0]
    if isinstance(node, ast.FunctionDef):
        bodies = [node]
    elif isinstance(node, ast.ClassDef):
        bodies = [n for n in node.body if isinstance(n, ast.FunctionDef)]
    else:
        raise ExerciseError(f"piece {name!r} is not a function or class definition")
    lines = src.splitlines()
    for fn in reversed(bodies):  # from the bottom, so earlier line numbers stay valid
        begin, end, indent = _solution_span(name, fn, lines)
        lines[begin:end] = [indent + BEGIN_SOLUTION, *lines[begin:end], indent + END_SOLUTION]
    return "\n".join(lines[node.lineno - 1:]) + "\n"  # from the `def`/`class` line: no decorator


def _solution_span(name: str, fn: ast.FunctionDef, lines: list[str]) -> tuple[int, int, str]:
    """0-based [begin, end) lines of ``fn``'s body after its docstring, and their indentation."""
    body = fn.body
    doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str)
    if doc and len(body) == 1:
        raise ExerciseError(f"piece {name!r}: `{fn.name}` has only a docstring, nothing to write")
    first = body[1] if doc else body[0]
    begin = first.lineno - 1
    floor = body[0].end_lineno if doc else fn.body[0].lineno - 1  # comments above belong in
    while begin - 1 >= floor and lines[begin - 1].strip().startswith("#"):
        begin -= 1
    indent = re.match(r"\s*", lines[first.lineno - 1])[0]
    return begin, fn.end_lineno, indent


def _cells(lines: list[str]) -> list[tuple[int, int, int, dict]]:
    """(open line, first source line, close line, top-level metadata) of each code cell
    (0-based), as mytorch's one MyST reader finds them."""
    from mytorch.mine import myst_cells

    return [(c.opened, c.line - 1, c.close, c.meta) for c in myst_cells("\n".join(lines))]


def piece_cells(text: str) -> list[str]:
    """The names of the piece cells of a solutions text, in order."""
    return [m["piece"] for _, _, _, m in _cells(text.split("\n")) if m.get("piece")]


def fill_pieces(text: str, path: Path | str = "<text>") -> str:
    """``text`` with every piece cell's code replaced by the library's current source."""
    lines = text.split("\n")
    cells = _cells(lines)
    for _opened, start, close, meta in reversed(cells):
        name = meta.get("piece")
        if not name:
            continue
        try:
            src = piece_source(name)
        except ExerciseError as exc:
            raise ExerciseError(f"{path}:{start}: {exc}") from None
        body = src.rstrip("\n").split("\n")
        if lines[start - 1].startswith(":"):
            body = [""] + body  # jupytext writes a blank line after `:key: value` options
        lines[start:close] = body
    return "\n".join(lines)


def setup_names(text: str) -> set[str]:
    """Names bound by the setup cells (tagged ``setup``) of a notebook text, by running them."""
    ns: dict = {}
    for _opened, start, close, meta in _cells(text.split("\n")):
        if "setup" in meta.get("tags", "") and not meta.get("piece"):
            exec("\n".join(text.split("\n")[start:close]), ns)  # noqa: S102 - our own sources
    return set(ns)


def free_names(source: str) -> set[str]:
    """Global names a cell's code reads (its functions' bodies and annotations included)."""
    table = symtable.symtable(source, "<piece>", "exec")
    names: set[str] = set()
    bound = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}

    def walk(t: symtable.SymbolTable) -> None:
        for s in t.get_symbols():
            if s.is_global() or (t.get_type() == "module" and s.is_referenced()):
                names.add(s.get_name())
        for child in t.get_children():
            walk(child)
    walk(table)
    return names - bound


def check_names(text: str, path: Path | str) -> list[str]:
    """Problems: a piece cell using a name the notebook does not have (a private mytorch helper,
    a module the setup cell does not import)."""
    problems = []
    available = setup_names(text) | set(dir(builtins))
    lines = text.split("\n")
    for _opened, start, close, meta in _cells(lines):
        name = meta.get("piece")
        if not name:
            continue
        missing = free_names("\n".join(lines[start:close])) - available - {name}
        if missing:
            problems.append(f"{path}:{start + 1}: piece `{name}` uses {', '.join(sorted(missing))}, "
                            "which the notebook's setup cell does not define: a piece may only use "
                            "the public API, its setup imports and earlier pieces")
        available.add(name)
    return problems


def _forbid_with(node: ast.AST) -> bool:
    """A ``with`` statement one of whose items is ``forbid(...)``."""
    return isinstance(node, ast.With) and any(
        isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Name)
        and i.context_expr.func.id == "forbid" for i in node.items)


def unguarded_calls(text: str, path: Path | str = "<text>") -> list[str]:
    """Problems: a graded cell that runs a piece outside ``with forbid(...)``.

    The check cells and the hidden tests apply the grader's rules visibly: every use of a piece
    (a call, ``plugged(name=name)``, ``chapter_pieces(...)``) sits inside a ``with`` block that
    forbids mytorch's own implementation of it (``rules_of``, ``reference_of``,
    ``chapter_rules``). So a piece that hands the work back to the library fails the visible
    check with the reason, exactly as it fails in grading.
    """
    lines = text.split("\n")
    names = set(piece_cells(text))
    problems: list[str] = []
    for _opened, start, close, meta in _cells(lines):
        if "grade" not in meta:
            continue
        try:
            tree = parse_python("\n".join(lines[start:close]))
        except SyntaxError:
            continue

        def visit(node: ast.AST, guarded: bool, start: int = start) -> None:
            if _forbid_with(node):
                guarded = True
            if not guarded:
                what = None
                if isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load):
                    what = f"`{node.id}`"
                elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "chapter_pieces":
                    what = "`chapter_pieces(...)`"
                if what:
                    problems.append(f"{path}:{start + node.lineno}: the test uses {what} outside "
                                    "`with forbid(*rules_of(...)):` — a visible check must apply the "
                                    "rules the grader applies")
            for child in ast.iter_child_nodes(node):
                visit(child, guarded, start)
        visit(tree, False)
    return problems
