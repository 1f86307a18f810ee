"""Check that each chapter only uses mytorch API that it, or an earlier chapter, teaches.

A chapter's front matter lists what it teaches (``mytorch: {teaches: [tensor, Tensor.view, nn.Linear]}``).
Uses are ``<alias>.name`` chains for any alias of mytorch (``import mytorch as torch``), names imported
with ``from mytorch import name``, and ``.name(`` method calls where ``name`` is a public method of
``mytorch.Tensor`` (skipping calls on modules, literals, and variables assigned from other libraries,
e.g. ``a = np.arange(4)``; calls in ``compare-torch`` cells are not checked either).
Escape hatches: the cell tag ``teaches-skip`` and a ``# teaches: ignore`` comment.

The same pass keeps a promise of the book: every line of a chapter is real PyTorch unless it says
otherwise. A chapter line that uses a name mytorch has and torch lacks (``torch.cuda.simulate()``,
``torch.use_mine()``; the list is ``[tool.bookkit.mytorch-only]`` in pyproject.toml) must end with
``# mytorch only``.
"""

from __future__ import annotations

import ast
import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

from bookkit.notebook import book_metadata, cell_lines, cell_tags, read_notebook
from bookkit.project import chapter_number
from bookkit.pysource import parse_python
from bookkit.report import Problem

REFERENCE_ALIASES = {"real_torch", "torch_ref"}  # real PyTorch, allowed in compare-torch cells
SKIP_TAG, COMPARE_TAG, IGNORE_COMMENT = "teaches-skip", "compare-torch", "# teaches: ignore"
MYTORCH_ONLY_COMMENT = "# mytorch only"


@dataclass(frozen=True)
class Use:
    """One use of the mytorch API in a code cell."""

    name: str  # e.g. "zeros", "nn.Linear", "Tensor.view"
    cell: int  # 1-based cell number
    line: int  # 1-based line inside the cell


@dataclass
class Source:
    """One notebook under check, with its chapter number and its own teaches list."""

    path: Path
    nb: NotebookNode
    text: str
    chapter: int
    teaches: set[str] = field(default_factory=set)


def tensor_methods(root: Path | None = None) -> tuple[set[str] | None, str]:
    """Public attribute names of ``mytorch.Tensor``, or ``(None, why)`` when it can't be imported."""
    if root is not None and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("mytorch")
    except Exception as exc:  # a half-written mytorch can raise anything
        return None, f"cannot import mytorch ({type(exc).__name__}: {exc})"
    tensor = getattr(module, "Tensor", None)
    if not isinstance(tensor, type):
        return None, "mytorch has no Tensor class yet"
    return {name for name in dir(tensor) if not name.startswith("_")}, ""


def _strip_magics(source: str) -> str:
    """Replace IPython magics/shell lines with ``pass`` (same indent) so ast can parse the cell."""
    lines = []
    for line in source.splitlines():
        body = line.lstrip()
        if body.startswith(("%", "!")):
            line = line[: len(line) - len(body)] + "pass"
        lines.append(line)
    return "\n".join(lines)


def _root_name(node: ast.AST) -> str | None:
    """The Name at the bottom of a chain like ``a.b(c)[0].d``."""
    while True:
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id
        else:
            return None


def _chain(node: ast.Attribute) -> tuple[str, list[str]] | None:
    """``torch.nn.Linear`` → ("torch", ["nn", "Linear"]); None when not a pure name chain."""
    parts = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if isinstance(current, ast.Name):
        return current.id, parts[::-1]
    return None


@dataclass
class Scope:
    """Names bound by imports so far in a notebook (imports carry over from cell to cell)."""

    aliases: dict[str, str] = field(default_factory=dict)  # local name -> path inside mytorch
    modules: set[str] = field(default_factory=set)  # other imported modules/names (numpy, ...)
    foreign: set[str] = field(default_factory=set)  # variables holding non-mytorch values


_LITERALS = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set,
             ast.ListComp, ast.DictComp, ast.SetComp)


def _track_assignments(tree: ast.AST, scope: Scope) -> None:
    """Remember which variables hold values from other libraries or Python literals."""
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value]
    for node in sorted(assigns, key=lambda n: (n.lineno, n.col_offset)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        root = _root_name(node.value)
        foreign = isinstance(node.value, _LITERALS) or root in scope.modules or root in scope.foreign
        for target in targets:
            if isinstance(target, ast.Name):
                (scope.foreign.add if foreign else scope.foreign.discard)(target.id)


def uses_in_cell(
    source: str, cell: int, methods: set[str] | None, scope: Scope, compare: bool = False,
    keep_ignored: bool = False,
) -> tuple[list[Use], list[int]]:
    """mytorch API uses in one code cell, and lines importing real torch outside the rules.

    ``compare`` marks a ``compare-torch`` cell: real torch may be imported there as ``real_torch`` or
    ``torch_ref``, and method calls are not checked (they may be on real torch tensors).
    Uses on lines with ``# teaches: ignore`` are dropped unless ``keep_ignored``.
    Raises SyntaxError for unparseable code.
    """
    tree = parse_python(_strip_magics(source))
    ignored = {n for n, text in enumerate(source.splitlines(), 1) if IGNORE_COMMENT in text}
    uses: list[Use] = []
    bad_imports: list[int] = []
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))),
                       key=lambda n: (n.lineno, n.col_offset)):
        if isinstance(node, ast.Import):
            for item in node.names:
                local = item.asname or item.name.split(".")[0]
                if item.name == "mytorch" or item.name.startswith("mytorch."):
                    scope.aliases[local] = item.name[len("mytorch."):] if item.asname else ""
                    scope.modules.discard(local)
                    continue
                if item.name.split(".")[0] == "torch" and not (compare and local in REFERENCE_ALIASES):
                    bad_imports.append(node.lineno)
                scope.modules.add(local)
                scope.aliases.pop(local, None)
        elif node.module and node.level == 0:
            is_mytorch = node.module == "mytorch" or node.module.startswith("mytorch.")
            if node.module.split(".")[0] == "torch" and not compare:
                bad_imports.append(node.lineno)
            for item in node.names:
                local = item.asname or item.name
                if is_mytorch and item.name != "*":
                    prefix = node.module[len("mytorch"):].lstrip(".")
                    full = f"{prefix}.{item.name}" if prefix else item.name
                    uses.append(Use(full, cell, node.lineno))
                    scope.aliases[local] = full
                    scope.modules.discard(local)
                elif not is_mytorch:
                    scope.modules.add(local)
                    scope.aliases.pop(local, None)
    _track_assignments(tree, scope)
    consumed: set[int] = set()  # Attribute nodes inside a chain that is already recorded
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in consumed:
            chain = _chain(node)
            if chain and chain[0] in scope.aliases:
                base, parts = chain
                inner = node.value
                while isinstance(inner, ast.Attribute):
                    consumed.add(id(inner))
                    inner = inner.value
                name = ".".join(filter(None, [scope.aliases[base], *parts]))
                uses.append(Use(name, cell, node.lineno))
        if methods and not compare and isinstance(node, ast.Call) \
                and isinstance(node.func, ast.Attribute):
            name, receiver = node.func.attr, node.func.value
            root = _root_name(receiver)
            skip = scope.aliases.keys() | scope.modules | scope.foreign
            if name in methods and root not in skip and not isinstance(receiver, _LITERALS):
                uses.append(Use(f"Tensor.{name}", cell, node.func.lineno))
    kept = sorted({u for u in uses if keep_ignored or u.line not in ignored},
                  key=lambda u: (u.line, u.name))
    return kept, [line for line in bad_imports if line not in ignored]


def mytorch_only(name: str, extras: dict[str, set[str]]) -> str | None:
    """The mytorch-only part of a use (``"cuda.simulate"`` → ``"cuda.simulate"``, ``"mine.plugged"``
    → ``"mine"``), or None when real torch has the whole chain as far as ``extras`` knows."""
    parts = name.split(".")
    for n in range(len(parts)):
        module = ".".join(["mytorch", *parts[:n]])
        if parts[n] in extras.get(module, ()):
            return ".".join(parts[:n + 1])
    return None


def is_taught(name: str, taught: set[str]) -> bool:
    """True when ``name`` (or a dotted prefix of it) is taught; ``Tensor.x`` also accepts ``x``."""
    if name.startswith("Tensor.") and name[len("Tensor."):] in taught:
        return True
    parts = name.split(".")
    return any(".".join(parts[:n]) in taught for n in range(1, len(parts) + 1))


def load(path: Path) -> Source:
    """Read a notebook and its chapter number (front matter, else the file name's NN)."""
    nb = read_notebook(path)
    meta = book_metadata(nb)
    number = meta.get("chapter", chapter_number(path))
    teaches = meta.get("teaches") or []
    if not isinstance(number, int):
        number = -1
    return Source(path, nb, path.read_text(encoding="utf-8"), number,
                  {str(t) for t in teaches} if isinstance(teaches, list) else set())


def check(chapters: list[Path], others: list[Path], methods: set[str] | None,
          extras: dict[str, set[str]] | None = None) -> list[Problem]:
    """Check ``chapters`` (which define what is taught) and ``others`` (e.g. exercises).

    ``extras`` (module → names torch lacks) turns on the ``# mytorch only`` check, for chapters
    only: exercises build mytorch itself and use its own tools freely.
    """
    problems: list[Problem] = []
    sources = [load(p) for p in chapters]
    taught_by = sorted((s.chapter, s.teaches) for s in sources if s.chapter >= 0)
    for source in sources + [load(p) for p in others]:
        marks = extras if extras and source in sources else None
        if source.chapter < 0:
            problems.append(Problem(source.path, "chapter number unknown",
                                    "name the file NN_slug.md or set mytorch.chapter in the front matter"))
            continue
        taught = set(source.teaches)
        for number, names in taught_by:
            if number <= source.chapter:
                taught |= names
        problems += _check_source(source, taught, methods, marks)
    return problems


def _check_source(source: Source, taught: set[str], methods: set[str] | None,
                  extras: dict[str, set[str]] | None = None) -> list[Problem]:
    problems = []
    starts = cell_lines(source.text, source.nb)
    scope = Scope()

    def file_line(index: int, line: int | None) -> int | None:
        return starts[index] + (line or 1) - 1 if starts[index] else None

    for index, cell in enumerate(source.nb.cells):
        if cell.cell_type != "code" or SKIP_TAG in cell_tags(cell):
            continue
        try:
            uses, bad_imports = uses_in_cell(cell.source, index + 1, methods, scope,
                                             compare=COMPARE_TAG in cell_tags(cell),
                                             keep_ignored=True)
        except SyntaxError as exc:
            problems.append(Problem(source.path, f"cannot parse this code cell ({exc.msg})",
                                    f"fix the syntax, or tag the cell '{SKIP_TAG}'",
                                    cell=index + 1, line=file_line(index, exc.lineno)))
            continue
        for line in bad_imports:
            problems.append(Problem(
                source.path, "imports real PyTorch outside the rules",
                f"only in a cell tagged '{COMPARE_TAG}', as `import torch as real_torch` "
                "(or torch_ref); mytorch itself is imported as `import mytorch as torch`",
                cell=index + 1, line=file_line(index, line)))
        lines = cell.source.splitlines()
        for use in uses:
            text = lines[use.line - 1] if 0 < use.line <= len(lines) else ""
            only = mytorch_only(use.name, extras) if extras else None
            if only and MYTORCH_ONLY_COMMENT not in text:
                problems.append(Problem(
                    source.path, f"uses '{only}', which real PyTorch does not have",
                    f"end the line with '{MYTORCH_ONLY_COMMENT}' and say in the text that it is "
                    "mytorch's own (the chapters promise real PyTorch code otherwise)",
                    cell=index + 1, line=file_line(index, use.line)))
            if IGNORE_COMMENT in text or is_taught(use.name, taught):
                continue
            problems.append(Problem(
                source.path, f"uses '{use.name}', which no chapter up to {source.chapter} teaches",
                f"add '{use.name}' to `teaches:` in this chapter's front matter (or an earlier "
                f"chapter's), or end the line with '{IGNORE_COMMENT}'",
                cell=index + 1, line=file_line(index, use.line)))
    return problems
