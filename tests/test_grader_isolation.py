"""Issue 21: nothing in the student's reach to copy, and isolation that fails closed.

A child's memory belongs to the student: NumPy's ``__array_interface__`` reads and writes any
address without ctypes, so the Python seal can be switched off. These tests grade with the seal
off (``audit=False``) to stand for a student who did that, and check what still holds: the
child's ``mytorch`` has no reference body of the pieces being graded and no solutions file is in
its view, so a generic body that fetches and renames the reference earns nothing, while the
reference solutions handed in as a student's keep full marks.
"""

from __future__ import annotations

import ast
import dis
import inspect
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from bookkit.exercises import strip_solutions
from bookkit.grader import batch, legs, sandbox, stubtree
from bookkit.grader.batch import grade_class, load_exercises
from bookkit.grader.bench import fill_regions
from bookkit.grader.sandbox import Limits, run_job
from tests.grader_support import rows

ROOT = Path(__file__).resolve().parent.parent

# Pasted into every region. It finds the piece it is the body of (its own frame), proves that it
# can read memory with no ctypes, then looks for a correct implementation everywhere a student
# could: the registry's reference and fast kernel, the library module, the notebook's source
# files (the library's and the solutions), and returns what a renamed copy of it computes (new
# name, first line and file: `forbid`'s code and (file, name) matches miss it).
THIEF = textwrap.dedent('''
    import sys as _sys, types as _types, importlib as _il
    import numpy as _np
    _frame = _sys._getframe(0)
    _name, _given = _frame.f_code.co_name, dict(_frame.f_locals)
    _up, _depth = _frame.f_back, 0
    while _up is not None:
        _depth += _up.f_code.co_name == _name
        _up = _up.f_back
    if _depth:  # a stub that dispatched back here: no reference behind it
        raise NotImplementedError("nothing to copy")
    class _Window:  # any object with an __array_interface__ is memory NumPy reads and writes
        def __init__(self, address, size):
            self.__array_interface__ = {"data": (address, False), "shape": (size,),
                                        "typestr": "|u1", "version": 3}
    _pieces = _il.import_module("mytorch._pieces")
    assert bytes(_np.asarray(_Window(id(_pieces.REGISTRY), 16)))  # arbitrary read, no ctypes
    _candidates = []
    _piece = _pieces.REGISTRY.get(_name)
    if _piece is not None:
        _candidates += [_piece.reference, _piece.fast, getattr(_il.import_module(_piece.module), _name, None)]
        _module_file = _piece.module.replace(".", "/") + ".py"
        for _path in (ROOT_TEXT + "/" + _module_file, ROOT_TEXT + "/solutions"):
            try:
                _files = [_path] if _path.endswith(".py") else [_path + "/" + f for f in
                                                               __import__("os").listdir(_path)]
                for _file in _files:
                    _text = open(_file, encoding="utf-8").read()
                    _at = _text.find("def " + _name + "(")
                    if _at >= 0:
                        _namespace = dict(_il.import_module(_piece.module).__dict__)
                        _lines = _text[_at:].split("\\n")
                        _end = next((i for i, l in enumerate(_lines[1:], 1) if l and not l[0].isspace()),
                                    len(_lines))
                        _src = "\\n".join(l for l in _lines[:_end] if "SOLUTION" not in l)
                        _src = _src.replace("def " + _name, "def _copied", 1)
                        exec(compile(_src, "<pasted>", "exec"), _namespace)
                        _candidates.append(_namespace["_copied"])
            except Exception:
                pass
    for _fn in _candidates:
        _fn = getattr(_fn, "__wrapped__", _fn)
        if not isinstance(_fn, _types.FunctionType):
            continue
        _code = _fn.__code__.replace(co_name="renamed", co_qualname="renamed", co_filename="<elsewhere>",
                                     co_firstlineno=1)
        _copy = _types.FunctionType(_code, _fn.__globals__, "renamed", _fn.__defaults__, _fn.__closure__)
        _copy.__kwdefaults__ = _fn.__kwdefaults__
        _names = _code.co_varnames[:_code.co_argcount + _code.co_kwonlyargcount]
        try:
            return _copy(**{k: _given[k] for k in _names if k in _given})
        except NotImplementedError:
            continue
    raise NotImplementedError("nothing to copy")
''').replace("ROOT_TEXT", repr(str(ROOT)))


def _write(folder: Path, exercises, bodies_of) -> None:
    folder.mkdir(parents=True)
    for ex in exercises:
        (folder / f"{ex.name}.md").write_text(fill_regions(strip_solutions(ex.source), bodies_of(ex)),
                                             encoding="utf-8")


def _layers() -> dict:
    cells = [{"kind": "code", "source": "x = 1"}]
    return run_job(ROOT, cells, seed=1, hidden=True, limits=Limits(cell_timeout=20)).isolation


@pytest.mark.slow
def test_the_stub_tree_holds_no_reference_body_of_the_graded_pieces() -> None:
    from bookkit.pieces import registry

    ex = next(e for e in load_exercises(ROOT) if e.name.startswith("05_"))
    names = stubtree.chapter_pieces(ex.name, ex.source)
    assert {"huber", "nll_loss_nd", "cross_entropy_loss"} <= set(names)
    tree = stubtree.build(ROOT, names)
    package = tree / "mytorch"
    bodies = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bodies.add(ast.dump(ast.Module(node.body, [])))
    for name in names:
        p = registry()[name]
        for fn in (p.reference, p.fast):
            if fn is None:
                continue
            node = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(fn)))).body[0]
            copied = [b for b in bodies if ast.dump(ast.Module(node.body, [])) == b]
            assert not copied, f"{name}: {fn.__qualname__} is still in the stub tree"
    assert not (tree / "solutions").exists()
    assert (tree / "bookkit").resolve() == (ROOT / "bookkit").resolve()


def test_two_checkouts_of_one_version_do_not_share_a_stub_tree(tmp_path) -> None:
    """Seen with two clones on one machine: the tree links to its checkout's bookkit, and the
    second clone's grader used the first clone's tree (and would have kept using it once that
    clone was deleted)."""
    import shutil

    other = tmp_path / "clone"
    shutil.copytree(ROOT / "mytorch", other / "mytorch",
                    ignore=shutil.ignore_patterns("__pycache__"))
    names = ("huber", "nll_loss_nd")
    assert stubtree._library_digest(other / "mytorch") == stubtree._library_digest(ROOT / "mytorch")
    assert stubtree.tree_name(ROOT, names) != stubtree.tree_name(other, names)
    assert stubtree.tree_name(ROOT, names) == stubtree.tree_name(ROOT, names[::-1])


def test_in_the_jail_no_reference_body_and_no_solutions_are_readable() -> None:
    if not _layers().get("namespaces"):
        pytest.skip("no namespaces on this machine: the fallback's view is the whole file system")
    ex = next(e for e in load_exercises(ROOT) if e.name.startswith("05_"))
    tree = stubtree.build(ROOT, stubtree.chapter_pieces(ex.name, ex.source))
    probe = textwrap.dedent(f'''
        import os
        import mytorch.nn._functional.loss as loss
        from mytorch._pieces import REGISTRY
        def readable(path):
            try:
                open(path, "rb").close()
                return True
            except OSError:
                return False
        text = open(loss.__file__, encoding="utf-8").read()
        value = [readable({str(ROOT / "solutions" / (ex.name + ".md"))!r}),
                 readable({str(ROOT / "mytorch" / "nn" / "_functional" / "loss.py")!r}),
                 os.path.exists({str(ROOT / "solutions")!r}),
                 "z = d.abs()" in text, "_grader_stub" in text,
                 any("_grader_stub" in str(c) for c in REGISTRY["huber"].reference.__code__.co_consts)]
    ''')
    cells = [{"kind": "code", "source": probe},
             {"kind": "test", "parts": [["visible", "check_equal(value, value, 'v', 'v')"]]}]
    result = run_job(tree, cells, seed=1, hidden=True, limits=Limits(cell_timeout=30), audit=False)
    assert result.outcome == "done" and result.ends[0]["error"] is None, (result.ends, result.detail)
    assert result.ends[1]["checks"][0][5][2] == "[False,False,False,False,True,True]"


def test_the_child_runs_as_an_unprivileged_user_with_no_processes_to_spare(monkeypatch, tmp_path) -> None:
    """Even when the grader runs as root (CI does): another uid, owning nothing of the instructor's;
    RLIMIT_NPROC is 0 (seen in the fallback, where /proc is there to read). So even without
    namespaces (and with the seal off) it writes into no checkout, OUT, HOME or classmate's folder
    and signals none of the instructor's processes."""
    if os.getuid() != 0:
        pytest.skip("the grader runs unprivileged already")
    mine = tmp_path / "instructor"  # stands for OUT, HOME, a classmate's folder: root's, 0755
    mine.mkdir()
    (mine / "kept.txt").write_text("mine")
    mine.chmod(0o755)
    targets = [ROOT / "mytorch" / "planted.py", ROOT / "solutions" / "planted.md",
               ROOT / "bookkit" / "planted.py", mine / "planted.txt", mine / "kept.txt"]
    source = textwrap.dedent(f'''
        import os
        value = [str(os.getuid()), str(os.getgid())]
        try:
            value += [l.split()[2:4] for l in open("/proc/self/limits") if l.startswith("Max processes")][0]
        except OSError:
            value += ["no /proc", ""]
        for target in {[str(t) for t in targets]!r}:
            try:
                with open(target, "a") as f:
                    f.write("x")
                value.append("wrote " + target)
            except OSError:
                pass
        try:
            os.kill({os.getpid()}, 0)
            value.append("signalled the instructor")
        except OSError:
            pass
    ''')
    cells = [{"kind": "code", "source": source},
             {"kind": "test", "parts": [["visible", "check_equal(value, value, 'v', 'v')"]]}]
    sandbox.shutdown()
    monkeypatch.setenv("BOOKKIT_GRADER_NO_NAMESPACES", "1")
    try:
        result = run_job(ROOT, cells, seed=1, hidden=True, limits=Limits(cell_timeout=30), audit=False)
    finally:
        sandbox.shutdown()  # the next tests get zygotes with namespaces again
    assert result.ends[0]["error"] is None, result.ends
    assert result.ends[1]["checks"] and len(result.ends[1]["checks"][0][5]) > 2, result.ends
    uid, gid, *nproc = eval(result.ends[1]["checks"][0][5][2])
    assert int(uid) in sandbox.CHILD_IDS and int(gid) in sandbox.CHILD_IDS, (uid, gid)
    assert nproc[:2] == ["0", "0"] and not nproc[2:], nproc
    assert (mine / "kept.txt").read_text() == "mine"
    assert not any(t.exists() for t in targets if t.name != "kept.txt")


@pytest.mark.slow
def test_grading_refuses_without_isolation_unless_told(tmp_path: Path, monkeypatch) -> None:
    """`make grade` without namespaces: exit 2 before any student's code runs, saying what to do;
    with the flag (whose help says what is lost) it grades, and the summary says isolation was reduced."""
    from tests.grader_support import fixture_exercises, write_student

    subs = tmp_path / "subs"
    write_student(subs, "s1", ["return a + b", None, None])
    env = dict(os.environ, BOOKKIT_GRADER_NO_NAMESPACES="1", PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "bookkit", "grade-class", str(subs), "--out", str(tmp_path / "out"),
               "--quiet", "--timeout", "20"]
    refused = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2, refused.stderr
    assert "grading refused" in refused.stderr and "--unsafe-no-sandbox" in refused.stderr
    assert not (tmp_path / "out" / "gradebook.csv").exists()
    helped = subprocess.run([sys.executable, "-m", "bookkit", "grade-class", "--help"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert "--unsafe-no-sandbox" in helped.stdout and "solutions" in helped.stdout

    # what the flag does (the command sets this), on the small fixture exercise
    monkeypatch.setenv("BOOKKIT_GRADER_NO_NAMESPACES", "1")
    sandbox.shutdown()
    try:
        sandbox.require_isolation(True)
        with pytest.raises(sandbox.IsolationMissing):
            grade_class(ROOT, subs, tmp_path / "out", 1, Limits(cell_timeout=20), progress=False,
                        exercises=fixture_exercises())
        sandbox.require_isolation(False)
        grade_class(ROOT, subs, tmp_path / "out", 1, Limits(cell_timeout=20), progress=False,
                    exercises=fixture_exercises())
    finally:
        sandbox.require_isolation(False)
        sandbox.shutdown()
    assert rows(tmp_path / "out")["s1"][0] == ("ex1_add", 2, "passed")

    from bookkit import cli

    seen = []
    monkeypatch.setattr(batch, "grade_class", lambda *a, **k: seen.append(sandbox._REQUIRE[0]) or {})
    monkeypatch.chdir(ROOT)
    for flag in ([], ["--unsafe-no-sandbox"]):
        assert cli.main(["grade-class", str(subs), "--out", str(tmp_path / "o2"), "--quiet", *flag]) == 0
    sandbox.require_isolation(False)
    assert seen == [True, False]


@pytest.mark.slow
def test_a_memory_access_body_in_every_region_earns_nothing(tmp_path: Path, monkeypatch) -> None:
    """Chapters 01, 05 and 06, the seal switched off for every student (as a student with memory
    access can): the body above earns nothing, the reference solutions keep full marks."""
    exercises = [e for e in load_exercises(ROOT) if e.name[:2] in ("01", "05", "06")]
    assert len(exercises) == 3
    _write(tmp_path / "subs" / "control", exercises,
           lambda ex: [textwrap.dedent(r) for r in ex.program.reference])
    _write(tmp_path / "subs" / "thief", exercises, lambda ex: [THIEF] * len(ex.program.reference))
    monkeypatch.setattr(batch.Grader, "audit", False, raising=False)
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 2, Limits(cell_timeout=30), progress=False,
                exercises=exercises)
    table = rows(tmp_path / "out")
    assert all(status == "passed" for _, _, status in table["control"]), table["control"]
    assert sum(points for _, points, _ in table["thief"]) == 0, table["thief"]


@pytest.mark.slow
def test_the_memory_access_body_does_take_the_points_where_the_reference_is_in_reach(tmp_path, monkeypatch):
    """The attack is real: run in the whole library (as every child was before issue 21), the
    same body earns points — so the test above can fail."""
    exercises = [e for e in load_exercises(ROOT) if e.name.startswith("05_")]
    _write(tmp_path / "subs" / "thief", exercises, lambda ex: [THIEF] * len(ex.program.reference))
    monkeypatch.setattr(batch.Grader, "audit", False, raising=False)
    monkeypatch.setattr(batch, "plan", lambda root, name, source, program: legs.Plan(
        sandbox.Leg(root, frozenset(t.cell for t in program.tests)), ()))
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 2, Limits(cell_timeout=30), progress=False,
                exercises=exercises)
    # where the references are in reach the body gets to one: it earns points, or (since the check
    # cells apply the exercises' rules with forbid) is caught running mytorch's own code
    import csv
    with open(tmp_path / "out" / "gradebook.csv", encoding="utf-8-sig", newline="") as f:
        thief = [r for r in csv.DictReader(f) if r["student"] == "thief"]
    reached = [r for r in thief if int(r["points"]) > 0 or "calls mytorch's own" in r["message"]]
    assert reached, thief


def _library_functions(reg) -> dict[int, str]:
    return {id(fn): name for name, p in reg.items() for fn in (p.reference, p.fast)
            if isinstance(fn, types.FunctionType)}


def test_a_given_reference_reaches_the_other_pieces_through_the_registry() -> None:
    """A child of a test group runs the chapter's other pieces on references compiled from the
    library's source (``stubtree.give``). Those name the pieces they use by their plain names
    (``conv2d_unfold`` calls ``conv_output_size``), which in a library module are the library's
    functions: in a stub tree, the stub of the piece under test, which the test forbids. So the
    reference solution of chapter 04's exercise 1 lost its points ("calls mytorch's own"): its
    test plugs the student's piece into ``nn.Conv2d``, whose given ``conv2d_unfold`` called the
    forbidden function. A given reference must reach every other piece through the registry."""
    import mytorch
    from bookkit.pieces import registry
    from mytorch.mine import plugged

    reg = registry()
    stub = types.ModuleType("mytorch._grader_stub_under_test")
    exec(compile(stubtree._STUB_SOURCE, "<stub>", "exec"), stub.__dict__)
    stub.give(stubtree.references(list(reg), frozenset()))
    library = _library_functions(reg)
    leaks = []
    for name, (given, _fast) in stub._GIVEN.items():
        functions = [getattr(m, "__func__", m) for m in vars(given).values()] if isinstance(given, type) \
            else [given]
        for fn in functions:
            if not isinstance(fn, types.FunctionType):
                continue
            codes = [fn.__code__]
            for code in codes:
                codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
                leaks += [(name, ins.argval) for ins in dis.get_instructions(code)
                          if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")
                          and id(fn.__globals__.get(ins.argval)) in library]
    assert not leaks, f"given references that call another piece's library function directly: {leaks}"

    # what forbid sees: the library's conv_output_size never runs; the plugged one does
    library_code = reg["conv_output_size"].reference.__code__
    seen, mine_calls = [], []

    def mine(n, kernel_size, stride=1, padding=0, dilation=1, ceil_mode=False):
        mine_calls.append(n)
        return (n + 2 * padding - dilation * (kernel_size - 1) - 1) // stride + 1

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is library_code:
            seen.append(frame.f_code.co_qualname)

    conv2d_unfold = stub._GIVEN["conv2d_unfold"][0]
    x, w = mytorch.ones(1, 1, 5, 5), mytorch.ones(1, 1, 3, 3)
    with plugged(conv_output_size=mine):
        sys.setprofile(profile)
        try:
            out = conv2d_unfold(x, w, None, (1, 1), (0, 0), (1, 1), 1)
        finally:
            sys.setprofile(None)
    assert tuple(out.shape) == (1, 1, 3, 3) and mine_calls and not seen


@pytest.mark.slow
def test_a_looping_piece_costs_the_first_child_little_and_its_test_one_timeout(tmp_path, monkeypatch) -> None:
    """A test that does not pass in the first child runs again in its group with the whole
    TIMEOUT, so the first child gives each test only a few times what the reference solution's
    run took (``legs.first_deadlines``): a looping piece does not cost two TIMEOUTs."""
    timeout = 8.0
    ex = next(e for e in load_exercises(ROOT) if e.name.startswith("03_"))
    bodies = [textwrap.dedent(r) for r in ex.program.reference]
    bodies[0] = "while True:\n    pass"
    (tmp_path / "subs" / "loops").mkdir(parents=True)
    (tmp_path / "subs" / "loops" / f"{ex.name}.md").write_text(
        fill_regions(strip_solutions(ex.source), bodies), encoding="utf-8")
    firsts: list[tuple[float, dict]] = []
    real = legs.run_job

    def first_child(root, cells, **kwargs):
        result = real(root, cells, **kwargs)
        firsts.append((result.elapsed, kwargs.get("cell_timeouts") or {}))
        return result

    monkeypatch.setattr(legs, "run_job", first_child)
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, Limits(cell_timeout=timeout), progress=False,
                exercises=[ex])
    table = rows(tmp_path / "out")["loops"]
    others = [s for t, _, s in table[1:] if t != "integration"]
    assert table[0][2] == "timeout" and others and all(s == "passed" for s in others), table
    elapsed, deadlines = firsts[0]
    assert deadlines and max(deadlines.values()) < timeout and elapsed < timeout * 0.75, firsts


@pytest.mark.slow
def test_a_correct_file_is_graded_in_one_child(tmp_path, monkeypatch) -> None:
    """The first child runs the code cells before the tests (``legs.definitions_first``): chapter
    02's first check runs real backward passes, which call pieces the file defines further down
    (matmul's and softmax's backward), so in the file's order it failed there and cost a second
    child; a correct file now passes in the first."""
    ex = next(e for e in load_exercises(ROOT) if e.name.startswith("02_"))
    _write(tmp_path / "subs" / "right", [ex], lambda e: [textwrap.dedent(r) for r in e.program.reference])
    again: list = []
    real = legs.run_legs
    monkeypatch.setattr(legs, "run_legs",
                        lambda legs_, cells, **kw: again.append(legs_) or real(legs_, cells, **kw))
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, progress=False, exercises=[ex])
    table = rows(tmp_path / "out")["right"]
    assert table and all(status == "passed" for _, _, status in table), table
    assert again == [], again


def test_the_first_child_runs_the_code_cells_up_to_the_last_test_first() -> None:
    cells = [{"kind": k} for k in ("code", "code", "test", "code", "test", "test", "code")]
    assert legs.definitions_first(cells) == [0, 1, 3, 2, 4, 5, 6]
    assert legs.definitions_first([{"kind": "code"}]) == [0]
    with pytest.raises(ValueError, match="each of the 2 cell indices once"):
        run_job(ROOT, [{"kind": "code", "source": ""}] * 2, seed=1, hidden=True, limits=Limits(),
                order=[0, 0])


@pytest.mark.slow
def test_the_feedback_run_reruns_only_what_did_not_pass_and_in_its_group(tmp_path, monkeypatch) -> None:
    """The visible-only run (what the feedback shows) starts no first child: the tests that passed
    are not run again, the others run straight in their groups, where their verdicts came from."""
    ex = next(e for e in load_exercises(ROOT) if e.name.startswith("03_"))
    bodies = [textwrap.dedent(r) for r in ex.program.reference]
    bodies[1] = "return None"
    _write(tmp_path / "subs" / "half", [ex], lambda e: bodies)
    firsts, groups = [], []
    real_job, real_legs = legs.run_job, legs.run_legs
    monkeypatch.setattr(legs, "run_job",
                        lambda root, cells, **kw: firsts.append(kw) or real_job(root, cells, **kw))
    monkeypatch.setattr(legs, "run_legs",
                        lambda legs_, cells, **kw: groups.append((legs_, kw)) or real_legs(legs_, cells,
                                                                                           **kw))
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, progress=False, exercises=[ex])
    table = rows(tmp_path / "out")["half"]
    failed = [t for t, _, s in table if s != "passed"]
    assert failed and len(failed) < len(table), table
    assert len(firsts) == 1 and firsts[0]["hidden"], firsts  # the graded run's first child only
    assert [kw["hidden"] for _, kw in groups] == [True, False], groups
    shown = {c for leg in groups[1][0] for c in leg.cells}
    assert shown and shown.isdisjoint(groups[1][1]["skip"])
    feedback = next((tmp_path / "out" / "feedback").iterdir()).read_text(encoding="utf-8")
    for test in failed:  # each with what went wrong, from the visible-only run
        details = feedback.split(f"#### {test}:")[1].split("####")[0]
        assert "TypeError: 'NoneType'" in details, feedback
