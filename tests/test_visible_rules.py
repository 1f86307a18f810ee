"""What a student sees is what the grader does (issue 20): a piece that hands the work back to
mytorch's own implementation fails the visible checks, with the reason, and earns (almost) nothing
from ``make grade``, integration rows included.

The hostile submission is generated from the piece registry, the way a student who wants the
points without the work would write it: every piece's body calls the library's own version, by a
different route each time (``__import__``, ``importlib``, the module in ``sys.modules``, the
registry's ``reference``).
"""

from __future__ import annotations

import ast
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from bookkit.exercises import BEGIN_SOLUTION, strip_solutions
from bookkit.grader.stubtree import _forward
from bookkit.pieces import _cells, registry, unguarded_calls

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*_exercises.md"))
CHAPTERS = [p.stem for p in SOLUTIONS]

#: ways of reaching mytorch's own version of piece ``{name}`` living in module ``{module}``
ROUTES = (
    "__import__({module!r}, fromlist=['_']).{name}",
    "__import__('importlib').import_module({module!r}).{name}",
    "getattr(__import__('sys').modules[{module!r}], {name!r})",
    "__import__('mytorch._pieces', fromlist=['_']).REGISTRY[{name!r}].reference",
)


def delegating_bodies(text: str) -> list[str | None]:
    """One body per solution region of a solutions ``text``: each piece's function (or method)
    calls mytorch's own; a region outside a piece cell keeps ``None`` (the stub)."""
    reg = registry()
    lines = text.split("\n")
    bodies: list[str | None] = []
    for index, (_opened, start, close, meta) in enumerate(_cells(lines)):
        source = "\n".join(lines[start:close])
        regions = sum(1 for line in source.split("\n") if line.strip() == BEGIN_SOLUTION)
        name = meta.get("piece")
        if not name:
            bodies += [None] * regions
            continue
        p = reg[name]
        target = ROUTES[index % len(ROUTES)].format(module=p.module, name=name)
        tree = ast.parse(source)
        top = tree.body[0]
        functions = [top] if isinstance(top, ast.FunctionDef) else \
            [n for n in top.body if isinstance(n, ast.FunctionDef)]
        for fn in functions:
            method = "" if fn is top else f".{fn.name}"
            bodies.append(f"return {target}{method}({_forward(fn.args, skip_first=False)})")
        assert len(functions) == regions, (name, len(functions), regions)
    return bodies


def hostile_text(path: Path) -> str:
    """The exercise file a delegating student hands in."""
    from bookkit.grader.bench import fill_regions
    from bookkit.pieces import fill_pieces

    text = fill_pieces(path.read_text(encoding="utf-8"), path)
    return fill_regions(strip_solutions(text, path), delegating_bodies(text))


# ---------------------------------------------------------------- fast: the rules themselves


def test_every_route_of_the_rules_exists_and_names_a_piece() -> None:
    """A renamed library function must not silently drop out of an exercise's rules."""
    from bookkit.feedback import ROUTES as RULES
    from bookkit.feedback import _resolve

    reg = registry()
    for name, paths in RULES.items():
        assert name in reg, f"ROUTES names {name!r}, which is no piece"
        for path in paths:
            assert _resolve(path), f"{name}: {path} does not name a Python function of mytorch"


@pytest.mark.parametrize("route", range(len(ROUTES)))
def test_a_delegating_piece_fails_inside_its_rules_with_the_reason(route: int) -> None:
    import mytorch
    from bookkit.feedback import forbid, rules_of

    target = ROUTES[route].format(module="mytorch.optim.adam", name="adam_step")
    scope: dict = {}
    exec(f"def adam_step(*args, **kwargs):\n    return {target}(*args, **kwargs)\n", scope)
    p, m, v = mytorch.ones(2), mytorch.zeros(2), mytorch.zeros(2)
    opts = dict(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, amsgrad=False,
                maximize=False, decoupled_weight_decay=False)
    with pytest.raises(RuntimeError) as info, forbid(*rules_of("adam_step")):
        scope["adam_step"](p, mytorch.ones(2), m, v, None, 1, **opts)
    message = str(info.value)
    assert "exercise 06.4 asks you to write `adam_step`; your code calls mytorch's own" in message
    assert "练习 06.4 要你自己写 `adam_step`" in message
    assert p.tolist() == [1.0, 1.0]  # nothing ran
    scope["adam_step"](p, mytorch.ones(2), m, v, None, 1, **opts)  # outside the block: restored
    assert p.tolist() != [1.0, 1.0]


def test_a_route_the_prompt_rules_out_fails_visibly() -> None:
    """07.3 says 'do not use torch.multinomial': the visible rules say so too."""
    import mytorch
    from bookkit.feedback import forbid, rules_of

    def weighted_draw(weights, num_samples, replacement, generator):
        yield from mytorch.multinomial(weights, num_samples, replacement, generator=generator).tolist()

    with pytest.raises(RuntimeError, match="multinomial"), forbid(*rules_of("weighted_draw")):
        list(weighted_draw(mytorch.tensor([1.0, 2.0]), 3, True, mytorch.Generator().manual_seed(0)))


def test_the_integration_rules_cover_every_piece_of_the_chapter() -> None:
    from bookkit.feedback import chapter_rules, reference_of

    reg = registry()
    for chapter in {p.chapter for p in reg.values()}:
        names = [n for n, p in reg.items() if p.chapter == chapter]
        assert set(reference_of(*names)) == set(chapter_rules(chapter))


def test_every_graded_cell_applies_the_rules() -> None:
    """No graded cell of solutions/ uses a piece outside ``with forbid(...)``; and the lint notices
    one that does."""
    for path in SOLUTIONS:
        assert unguarded_calls(path.read_text(encoding="utf-8"), path) == []
    text = (ROOT / "solutions" / "06_optimizers_exercises.md").read_text(encoding="utf-8")
    bare = text.replace('with forbid(*rules_of("adam_step")):', "if True:", 1)
    assert bare != text
    problems = unguarded_calls(bare, "06")
    assert len(problems) == 1 and "`adam_step` outside `with forbid" in problems[0]


def test_the_hostile_submission_delegates_every_piece() -> None:
    """The generator itself: every piece region of every chapter holds a delegating body."""
    reg = registry()
    seen = set()
    for path in SOLUTIONS:
        text = hostile_text(path)
        seen |= {n for n in reg if re.search(rf"[.'\"]{re.escape(n)}\b", text)}
        assert "return __import__(" in text
    assert seen == set(reg)



def test_the_slow_tests_cover_every_chapter_with_pieces() -> None:
    """The per-chapter tests below run on every exercise file; each chapter that has pieces has
    one, and its piece cells are exactly the registry's pieces of that chapter (08.2 included)."""
    reg = registry()
    by_chapter = {int(name[:2]): name for name in CHAPTERS}
    assert {p.chapter for p in reg.values()} <= set(by_chapter)
    for chapter, name in by_chapter.items():
        text = (ROOT / "solutions" / f"{name}.md").read_text(encoding="utf-8")
        cells = {m["piece"] for _, _, _, m in _cells(text.split("\n")) if m.get("piece")}
        assert cells == {n for n, p in reg.items() if p.chapter == chapter}, name

# ---------------------------------------------------------------- slow: notebooks and the grader


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_check_cells_of_a_delegating_student_fail_with_the_reason(chapter: str) -> None:
    """Run the exercise notebook as a student would, every piece delegating: every graded cell
    fails, and the first failure of each piece's cell names the piece and mytorch's own."""
    text = hostile_text(ROOT / "solutions" / f"{chapter}.md")
    lines = text.split("\n")
    ns: dict = {"__name__": "__main__"}
    outcomes: dict[str, str] = {}
    for opened, start, close, _meta in _cells(lines):
        source = "\n".join(lines[start:close])
        if "use_mine" in source:
            continue
        graded = re.search(r"^\s*id: (\S+)", "\n".join(lines[opened:start]), re.M)
        try:
            with redirect_stdout(io.StringIO()):
                exec(compile(source, f"{chapter}:{start + 1}", "exec"), ns)
            outcome = "passed"
        except Exception as exc:  # noqa: BLE001 - any failure is the student's red cell
            outcome = f"{type(exc).__name__}: {exc}"
        if graded:
            outcomes[graded[1]] = outcome
    assert outcomes and all(o != "passed" for o in outcomes.values()), outcomes
    for test, outcome in outcomes.items():
        if test != "integration":
            assert "your code calls mytorch's own" in outcome, (test, outcome[:300])


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_make_check_and_make_grade_agree_on_a_delegating_student(chapter: str, tmp_path: Path) -> None:
    """``make check`` shows red, with the reason, for every exercise of a delegating student, and
    ``make grade`` gives them at most 10% of the chapter's points, integration row included; the
    reference solution's calibration runs find no problem (every check passes under the rules)."""
    from bookkit.grader.batch import grade_class, load_exercises
    from bookkit.grader.check import check_file
    from bookkit.grader.sandbox import Limits
    from tests.grader_support import rows

    exercises = [e for e in load_exercises(ROOT) if e.name == chapter]
    path = tmp_path / "subs" / "lazy" / f"{chapter}.md"
    path.parent.mkdir(parents=True)
    path.write_text(hostile_text(ROOT / "solutions" / f"{chapter}.md"), encoding="utf-8")
    limits = Limits(cell_timeout=60)
    visible, problem = check_file(ROOT, path, limits)
    assert not problem
    red = [t for t in visible if t.status != "passed"]
    assert len(red) == len(visible), [(t.id, t.status) for t in visible]
    for t in red:
        if t.id != "integration":
            assert "your code calls mytorch's own" in t.message + t.error, (t.id, t.message, t.error)
    grade_class(ROOT, tmp_path / "subs", tmp_path / "out", 1, limits, progress=False, exercises=exercises)
    # the reference solution, run in the sandbox to calibrate, passes every check under the rules
    assert exercises[0].reference is not None and exercises[0].reference.problems == []
    table = rows(tmp_path / "out")["lazy"]
    got, total = sum(p for _, p, _ in table), sum(t.points for t in exercises[0].program.tests)
    assert got <= 0.1 * total, table


def test_delegating_bodies_match_the_signatures() -> None:
    """Each generated body passes exactly the parameters of the stub it replaces."""
    text = (ROOT / "solutions" / "06_optimizers_exercises.md").read_text(encoding="utf-8")
    bodies = delegating_bodies(text)
    assert bodies[0].startswith("return ") and bodies[0].endswith(
        "(param, grad, momentum_buffer, lr=lr, momentum=momentum, dampening=dampening, "
        "weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)"), bodies[0]


def test_the_integration_row_counts_only_the_students_own_pieces() -> None:
    """A chapter's integration row fails when another exercise's piece is a stub, calls
    mytorch's own or takes a ruled-out route, even if the integration run itself passed; a piece
    that is merely wrong does not take the integration row with it."""
    from bookkit.feedback import forbidden_message, reference_of, rules_of
    from bookkit.grader.protocol import TestResult, _integration_needs_own_work

    own = forbidden_message(reference_of("adam_step")[0])
    route = forbidden_message(rules_of("weighted_draw")[-1])
    for status, message, error, counts in [
            ("failed", "not done yet (NotImplementedError)", "", False),
            ("error", f"RuntimeError: {own}"[:200], f"RuntimeError: {own}", False),
            ("failed", route, "", False),
            ("failed", "check 2 (the buffer) failed: values not close", "", True),
            ("passed", "", "", True)]:
        results = [TestResult("ex1", 3, status, message, error=error), TestResult("integration", 4, "passed")]
        _integration_needs_own_work(results)
        assert (results[1].status == "passed") == counts, (message, results[1])
        if not counts:
            assert "ex1" in results[1].message and "your own work" in results[1].message


def test_an_integration_row_that_errors_says_which_pieces_to_make_your_own_first() -> None:
    """A delegating piece makes the integration run recurse (the piece calls the library, which calls
    the piece): the row keeps its error, and `make check` leads with the pieces to fix."""
    from bookkit.feedback import forbidden_message, reference_of
    from bookkit.grader.check import table
    from bookkit.grader.protocol import TestResult, _integration_needs_own_work

    own = forbidden_message(reference_of("adam_step")[0])
    results = [TestResult("ex1", 3, "error", f"RuntimeError: {own}"[:200], error=f"RuntimeError: {own}"),
               TestResult("integration", 4, "error", "RecursionError: maximum recursion depth exceeded",
                          error="RecursionError: maximum recursion depth exceeded")]
    _integration_needs_own_work(results)
    assert results[1].status == "error" and "first make ex1 your own" in results[1].message
    shown = table([("06_optimizers_exercises.md", t) for t in results], {})
    after = shown.split("integration", 1)[1]
    assert after.index("first make ex1 your own") < after.index("RecursionError")
