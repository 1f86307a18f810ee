"""Solution regions: what the grader takes from a student, and the program it assembles.

Only the text between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` is taken from a submission,
region by region, in order. It replaces the reference solution in the INSTRUCTOR's notebook; every
other cell, the test cells, the hidden tests and all metadata come from the instructor's source.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field

from nbformat import NotebookNode

from bookkit.exercises import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION
from bookkit.notebook import cell_tags
from bookkit.pysource import parse_python


class RegionError(ValueError):
    """The markers of a submission are unbalanced, or their number differs from the exercise's."""


@dataclass(frozen=True)
class Test:
    """One graded test cell of an exercise notebook."""

    id: str
    points: int
    cell: int  # index in Program.cells


@dataclass(frozen=True)
class Program:
    """An instructor's exercise notebook, ready to receive a student's regions.

    ``cells`` are job cells for the runner: ``{"kind": "code", "source": str}`` or
    ``{"kind": "test", "parts": [["visible" | "hidden", str], ...]}``; a code cell's source holds
    one ``{REGION_k}`` slot per solution region (k counts over the whole notebook). ``where``: the
    number (1-based) of each job cell in the notebook as the student sees it (``make exercises``
    keeps every cell, so the student's copy has the instructor's numbering); a code cell's line
    numbers are the student's too, as their regions are spliced in line for line.
    """

    cells: tuple[dict, ...]
    slots: tuple[tuple[int, int, str], ...]  # (cell index, line index, indent) of each region
    tests: tuple[Test, ...]
    reference: tuple[str, ...]  # the reference solution of each region
    where: tuple[int, ...] = ()  # notebook cell number of each job cell
    _rewritten: dict = field(default_factory=dict, compare=False, repr=False)

    def cell_number(self, index: int) -> int:
        """The number the student sees for job cell ``index`` (its notebook cell, 1-based)."""
        return self.where[index] if 0 <= index < len(self.where) else index + 1

    def assemble(self, regions: list[str] | None, *, cut: frozenset[int] = frozenset(),
                 keep: frozenset[tuple[int, int]] = frozenset(),
                 seeds: dict[int, int] | None = None, hidden: bool = True) -> list[dict]:
        """Job cells with ``regions`` (or the reference solutions) in place; fresh copies.

        Test cells are rewritten (``rewrite_tests``): every ``check_*`` call is numbered (its
        *site*); in the test cells listed in ``cut`` its expected argument is cut out, except at
        the sites in ``keep`` ((cell, site) of checks whose expected value depends on the run).
        ``seeds``: the seed of each test cell (default 0). ``hidden=False``: the hidden parts of
        the tests are left out altogether (they never reach a process that runs them without
        judging them: the visible-only run whose values the feedback shows).
        """
        texts = self.reference if regions is None else regions
        if len(texts) != len(self.slots):
            raise RegionError(f"expected {len(self.slots)} solution regions, got {len(texts)}")
        key = (frozenset(cut), frozenset(keep))
        if key not in self._rewritten:
            self._rewritten[key] = rewrite_tests(self.cells, key[0], key[1])
        tests = self._rewritten[key]
        cells = [dict(c, lines=list(c["lines"])) if c["kind"] == "code" else dict(c) for c in self.cells]
        for (cell, line, indent), body in zip(self.slots, texts, strict=True):
            cells[cell]["lines"][line] = _reindent(body, indent)
        out = []
        for index, c in enumerate(cells):
            if c["kind"] == "code":
                out.append({"kind": "code", "source": "\n".join(c["lines"])})
            else:
                out.append({"kind": "test", "parts": [list(p) for p in tests[index]
                                                      if hidden or p[0] != "hidden"],
                            "seed": int((seeds or {}).get(index, 0))})
        return out


# ---------------------------------------------------------------- check sites and cut expectations

CHECK_CALLS = {"check_equal": ("expected", ()), "check_close": ("expected", ()),
               "check_shape": ("expected_shape", ()), "check_raises": ("exception", ("match",)),
               "check_true": (None, ())}


def _check_name(call: ast.Call) -> str | None:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return name if name in CHECK_CALLS else None


def _expected_nodes(call: ast.Call) -> list[ast.AST] | None:
    """The argument nodes holding the expected value (None: the call's form cannot be cut)."""
    name = _check_name(call)
    keyword, extra = CHECK_CALLS[name]  # type: ignore[index]
    if keyword is None or any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    found = [a for i, a in enumerate(call.args) if i == 1]
    found += [k.value for k in call.keywords if k.arg == keyword or k.arg in extra]
    return found if found else None


def _parse_parts(cell: dict) -> list[tuple[str, ast.Module]]:
    return [(part, parse_python(source)) for part, source in cell["parts"]]


def _sites(trees: list[tuple[str, ast.Module]]) -> dict[int, int]:
    """``id(call node) → site``: check calls numbered in a fixed (breadth-first) order."""
    sites: dict[int, int] = {}
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _check_name(node):
                sites[id(node)] = len(sites)
    return sites


def rewrite_tests(cells: tuple[dict, ...], cut: frozenset[int],
                  keep: frozenset[tuple[int, int]]) -> dict[int, list[tuple[str, str]]]:
    """The parts of every test cell with numbered checks and, in ``cut`` cells, without expectations.

    Cutting replaces a check's expected argument with ``None`` (and passes ``_cut=True``), so the
    expected value is never computed in a student's process; simple assignments ``name = ...`` whose
    name is only ever read by cut expectations (``want = a + b``) are removed too. The parent gets
    the expected values from the reference solution's run instead; calibration verifies that a
    cut cell still draws the same inputs (``batch.Grader.calibrate``).
    """
    parsed = {i: _parse_parts(c) for i, c in enumerate(cells) if c["kind"] == "test"}
    sites = {i: _sites(trees) for i, trees in parsed.items()}
    cut_roots: set[int] = set()
    for i, trees in parsed.items():
        if i not in cut:
            continue
        for _, tree in trees:
            for node in ast.walk(tree):
                site = sites[i].get(id(node)) if isinstance(node, ast.Call) else None
                if site is not None and (i, site) not in keep:
                    for arg in _expected_nodes(node) or ():
                        cut_roots.add(id(arg))
    removable = _expected_only(parsed, cut, cut_roots)
    out: dict[int, list[tuple[str, str]]] = {}
    for i, trees in parsed.items():
        parts = []
        for part, tree in trees:
            _Rewriter(sites[i], cut_roots, removable if i in cut else set(), i, keep).visit(tree)
            ast.fix_missing_locations(tree)
            parts.append((part, ast.unparse(tree)))
        out[i] = parts
    return out


def _expected_only(parsed: dict[int, list], cut: frozenset[int], cut_roots: set[int]) -> set[int]:
    """``id`` of the assignment statements that only feed cut expectations (removable)."""
    bindings: dict[str, list[ast.Assign]] = {}
    other_bound: set[str] = set()
    loads: list[tuple[str, str, object]] = []  # (name, context, detail)
    for i, trees in parsed.items():
        for _, tree in trees:
            parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                        isinstance(node.targets[0], ast.Name) and i in cut and \
                        not any(isinstance(n, ast.Call) and _check_name(n) for n in ast.walk(node.value)):
                    bindings.setdefault(node.targets[0].id, []).append(node)
                elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    parent = parents.get(id(node))
                    if not (isinstance(parent, ast.Assign) and parent in bindings.get(node.id, ())):
                        other_bound.add(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    other_bound.add(node.name)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    context, up, child = "live", parents.get(id(node)), node
                    while up is not None:
                        if id(child) in cut_roots:
                            context = "cut"
                            break
                        if isinstance(up, ast.Assign) and child is up.value and len(up.targets) == 1 and \
                                isinstance(up.targets[0], ast.Name):
                            context = "rhs:" + up.targets[0].id
                            break
                        child, up = up, parents.get(id(up))
                    if context == "live" and id(child) in cut_roots:
                        context = "cut"
                    loads.append((node.id, context if i in cut else "live", None))
    names = set(bindings) - other_bound
    changed = True
    while changed:
        changed = False
        for name in list(names):
            for load, context, _ in loads:
                fed = context == "cut" or (context.startswith("rhs:") and context[4:] in names)
                if load == name and not fed:
                    names.discard(name)
                    changed = True
                    break
    return {id(node) for name in names for node in bindings[name]}


class _Rewriter(ast.NodeTransformer):
    def __init__(self, sites: dict[int, int], cut_roots: set[int], removable: set[int], cell: int,
                 keep: frozenset[tuple[int, int]]) -> None:
        self.sites, self.cut_roots, self.removable = sites, cut_roots, removable
        self.cell, self.keep = cell, keep

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if id(node) in self.removable:
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        site = self.sites.get(id(node))
        cut = site is not None and (any(id(a) in self.cut_roots for a in node.args)
                                    or any(id(k.value) in self.cut_roots for k in node.keywords))
        if site is not None and cut:
            node.args = [ast.Constant(None) if id(a) in self.cut_roots else a for a in node.args]
            node.keywords = [k for k in node.keywords if id(k.value) not in self.cut_roots]
        self.generic_visit(node)
        if site is not None:
            node.keywords.append(ast.keyword("_site", ast.Constant(site)))
            if cut:
                node.keywords.append(ast.keyword("_cut", ast.Constant(True)))
        return node


def _reindent(body: str, indent: str) -> str:
    """Student text re-indented like the instructor's region; IPython magics disabled."""
    lines = []  # one line per line of the student's (line numbers of errors are theirs)
    for line in textwrap.dedent(body.expandtabs(4)).split("\n"):
        if line.lstrip().startswith(("%", "!")):  # IPython magic / shell escape: not Python
            line = line[: len(line) - len(line.lstrip())] + "pass  # IPython magic removed by the grader"
        lines.append(indent + line if line.strip() else "")
    if not any(line.strip() for line in lines):
        lines = [indent + "pass"]
    return "\n".join(lines)


def find_regions(lines: list[str]) -> list[tuple[int, int]]:
    """``(begin, end)`` line indices of each solution region; RegionError when unbalanced."""
    regions, begin = [], None
    for index, line in enumerate(lines):
        marker = line.strip()
        if marker == BEGIN_SOLUTION:
            if begin is not None:
                raise RegionError(f"line {index + 1}: '{BEGIN_SOLUTION}' inside another region")
            begin = index
        elif marker == END_SOLUTION:
            if begin is None:
                raise RegionError(f"line {index + 1}: '{END_SOLUTION}' without a BEGIN before it")
            regions.append((begin, index))
            begin = None
    if begin is not None:
        raise RegionError(f"line {begin + 1}: '{BEGIN_SOLUTION}' is never closed")
    return regions


def regions_of_text(text: str) -> list[str]:
    """The student's text of each region, in order, from any text (MyST .md, .py, …)."""
    lines = text.splitlines()
    return ["\n".join(lines[b + 1:e]) for b, e in find_regions(lines)]


def regions_of_cells(sources: list[str]) -> list[str]:
    """The student's text of each region from the code cells of a notebook, in order."""
    found = []
    for source in sources:
        found += regions_of_text(source)
    return found


def _test_parts(source: str) -> list[list[str]]:
    """Split a test cell at its hidden-test markers into visible/hidden parts that compile alone."""
    parts: list[list[str]] = [["visible", ""]]
    for line in source.splitlines(keepends=True):
        marker = line.strip()
        if marker in (BEGIN_HIDDEN, END_HIDDEN):
            parts.append(["hidden" if marker == BEGIN_HIDDEN else "visible", ""])
        else:
            parts[-1][1] += line
    parts = [p for p in parts if p[1].strip()]
    try:
        for _, text in parts:
            compile(text, "<test>", "exec")
    except SyntaxError:  # markers inside a block: run the cell whole, as hidden
        return [["hidden", source]]
    return parts


def build_program(nb: NotebookNode) -> Program:
    """The Program of an instructor's solutions notebook (compare-torch cells are left out)."""
    cells: list[dict] = []
    slots, tests, reference, where = [], [], [], []
    for number, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code" or "compare-torch" in cell_tags(cell):
            continue
        where.append(number)
        spec = cell.get("metadata", {}).get("grade")
        lines = cell.source.splitlines()
        regions = find_regions(lines)
        if isinstance(spec, dict):
            if regions:
                raise RegionError(f"test cell {spec.get('id')!r} holds a solution region; "
                                  "put solutions in their own cells")
            tests.append(Test(str(spec.get("id", f"cell{len(cells) + 1}")),
                              int(spec.get("points", 0) or 0), len(cells)))
            cells.append({"kind": "test", "parts": _test_parts(cell.source)})
            continue
        kept: list[str] = []
        cursor = 0
        for begin, end in regions:
            kept += lines[cursor:begin + 1]
            indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
            slots.append((len(cells), len(kept), indent))
            reference.append("\n".join(lines[begin + 1:end]))
            kept += ["", lines[end]]
            cursor = end + 1
        kept += lines[cursor:]
        cells.append({"kind": "code", "lines": kept})
    return Program(tuple(cells), tuple(slots), tuple(tests), tuple(reference), tuple(where))
