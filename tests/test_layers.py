"""mytorch is a layered stack: no import cycles, and each layer loads without the ones above it.

The layers themselves are the import-linter ``layers`` contract in ``pyproject.toml`` (run by
``make lint``); docs/architecture.md explains them. These tests add two things import-linter does
not check:

* no import cycle at all, even between modules of the same layer: every strongly connected
  component of mytorch's import graph (function-level imports included, ``TYPE_CHECKING`` imports
  and a module's imports of its own ancestor packages excluded, see ``_graph``) is one module;
* every module has a layer;
* Python's package rule: importing ``mytorch.autograd.graph`` first runs
  ``mytorch/autograd/__init__.py``. A package whose children sit in different layers must not
  load its upper children from ``__init__`` (it names them lazily instead), or importing a low
  module would drag the upper layers in. Checked by importing the layers bottom to top in a fresh
  interpreter, without ``mytorch/__init__.py``, and looking at ``sys.modules`` after each layer.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def _graph() -> grimp.ImportGraph:
    """mytorch's import graph, without the imports of a module's own ancestor packages.

    ``import mytorch as torch`` (or ``import mytorch.distributed as dist`` inside
    ``mytorch.distributed``) is how a module writes its pieces with the public API, exactly as a
    student's notebook does. Python has started the ancestor before the module runs, and the
    names are looked up at call time, once mytorch/__init__.py has loaded every layer: so it is no
    dependency between layers (the contract ignores ``mytorch.** -> mytorch`` too).
    """
    graph = grimp.build_graph("mytorch", exclude_type_checking_imports=True, cache_dir=None)
    for module in list(graph.modules):
        parts = module.split(".")
        for n in range(1, len(parts)):
            ancestor = ".".join(parts[:n])
            if graph.direct_import_exists(importer=module, imported=ancestor):
                graph.remove_import(importer=module, imported=ancestor)
    return graph


def strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Tarjan's algorithm, without recursion: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _source(module: str) -> str:
    path = ROOT.joinpath(*module.split("."))
    return str((path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).relative_to(ROOT))


def describe_cycle(graph: grimp.ImportGraph, component: list[str]) -> str:
    """Every import between the modules of one component, as ``file:line: importer -> imported``."""
    members = set(component)
    lines = [f"import cycle between {len(component)} modules: {', '.join(component)}"]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            for d in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {_source(importer)}:{d['line_number']}: {importer} -> {imported}"
                             f"    ({d['line_contents'].strip()})")
    return "\n".join(lines)


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles = strongly_connected(graph)
    assert not cycles, ("mytorch's imports must point down the layer stack (docs/architecture.md); "
                        "move the shared code down, or attach the method from the upper layer:\n"
                        + "\n\n".join(describe_cycle(graph, c) for c in cycles))


def test_cycle_finder_reports_a_cycle(tmp_path: Path) -> None:
    """The check above can fail: a two-module cycle (one import inside a function) is reported."""
    pkg = tmp_path / "cyclepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text("def f():\n    from . import high\n    return high\n")
    (pkg / "high.py").write_text("from . import low\n")
    (pkg / "alone.py").write_text("from . import high\n")
    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("cyclepkg", cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    assert strongly_connected(graph) == [["cyclepkg.high", "cyclepkg.low"]]
    text = describe_cycle(graph, ["cyclepkg.high", "cyclepkg.low"])
    assert "cyclepkg.low -> cyclepkg.high" in text and ":2:" in text


def contract_layers() -> list[list[str]]:
    """The layers of the import-linter contract, bottom first; each a list of module names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    layers = []
    for entry in reversed(contract["layers"]):
        names = [n.strip() for part in entry.split("|") for n in part.split(":")]
        layers.append([n.strip("()") for n in names if n])
    return layers


def _layer_of(module: str, layers: list[list[str]]) -> int | None:
    for i, layer in enumerate(layers):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return i
    return None


def test_every_module_has_a_layer() -> None:
    """A new module must be placed in the stack (pyproject.toml), not float outside it. Only the
    packages whose modules sit in different layers (mytorch itself, autograd, _ops, utils) have
    none: their __init__ files import nothing, or only from the bottom layer."""
    layers = contract_layers()
    spanning = {m.rsplit(".", i)[0] for layer in layers for m in layer for i in range(1, m.count(".") + 1)}
    missing = sorted(m for m in _graph().modules
                     if _layer_of(m, layers) is None and m not in spanning)
    assert not missing, ("add these modules to the layers in pyproject.toml [tool.importlinter] "
                         f"(docs/architecture.md says where): {missing}")


_CLIMB = r"""
import importlib, importlib.util, json, sys, types
root, layers = sys.argv[1], json.loads(sys.argv[2])
pkg = types.ModuleType("mytorch")  # the package without its __init__.py, which imports everything
pkg.__path__ = [root + "/mytorch"]
sys.modules["mytorch"] = pkg

def layer_of(module):
    for i, layer in enumerate(layers):
        if any(module == m or module.startswith(m + ".") for m in layer):
            return i

problems, seen = [], set()
for i, layer in enumerate(layers):
    for name in layer:
        if importlib.util.find_spec(name) is not None:  # (optional layers may not exist yet)
            importlib.import_module(name)
    for loaded in sorted(m for m in sys.modules if m.startswith("mytorch.")):
        j = layer_of(loaded)
        if j is not None and j > i and loaded not in seen:
            seen.add(loaded)
            problems.append(f"importing layer {i + 1} of {len(layers)} ({', '.join(layer)}) "
                            f"loaded {loaded}, from layer {j + 1}")
print(json.dumps(problems))
"""


def test_each_layer_loads_without_the_layers_above() -> None:
    layers = contract_layers()
    assert len(layers) >= 8 and ["mytorch._storage"] in layers
    done = subprocess.run([sys.executable, "-c", _CLIMB, str(ROOT), json.dumps(layers)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    problems = json.loads(done.stdout.splitlines()[-1])
    assert not problems, ("a module imported upper layers at run time (`lint-imports` shows the "
                          "chain; or a package __init__.py imports its upper modules eagerly):\n"
                          + "\n".join(problems))
