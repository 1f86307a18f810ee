"""How a student's file is run: first in one child without any of the chapter's references, then,
for the tests that did not pass there, in children that hold the references of the pieces those
tests are not about.

A test that passes in the first child passed on the student's own code alone: no reference of any
piece of the chapter was in that process (``stubtree.py``), so the pass is earned. A test that
failed there may have failed through another of the student's pieces (the library calls them
everywhere in that child), so it is run again, with its group (``stubtree.test_groups``), in a
child where the chapter's other pieces are the references: its verdict is the one it would get in
the whole library, and its own reference is never in reach. The first child runs the file's code
cells before its tests (``definitions_first``), so a test whose check calls, through the library,
a piece the file defines further down finds it defined: a correct file costs one child. Only the
tests that do not pass there cost another, and the first child waits only a few times the
reference's time for each test (``first_deadlines``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bookkit.grader.protocol import judge
from bookkit.grader.sandbox import ChildResult, Leg, Limits, run_all, run_job, run_legs
from bookkit.grader.stubtree import build, chapter_pieces, references, test_groups


@dataclass(frozen=True)
class Plan:
    """The child that runs every test on the student's pieces, and the per-group children."""

    everything: Leg
    groups: tuple[Leg, ...]


def plan(root: Path, exercise: str, source: str, program) -> Plan:
    """The legs of ``exercise``'s student runs (its stub tree is built here, once per library)."""
    pieces = chapter_pieces(exercise, source)
    tree = build(root, pieces)
    tests = frozenset(t.cell for t in program.tests)
    groups = tuple(Leg(tree, g.cells, references(pieces, g.tested))
                   for g in test_groups(source, program, pieces))
    return Plan(Leg(tree, tests, {}), groups if pieces else ())


#: In the first child a test cell gets ``SLACK`` times what the reference solution's run took, plus
#: ``MARGIN`` seconds, and at least ``FLOOR`` of TIMEOUT (never more than TIMEOUT).
SLACK, MARGIN, FLOOR = 4.0, 1.0, 0.25


def first_deadlines(reference, cells: list[dict], timeout: float) -> dict[int, float]:
    """The first child's deadline of each test cell the reference's runs timed.

    No verdict of the first child but a pass is final: a test that does not pass there runs again
    in its group, with the whole ``TIMEOUT``. So the first child need not wait a full ``TIMEOUT``
    for a test that loops (most likely in a piece of its own, which its group runs again anyway):
    a looping piece then costs about one ``TIMEOUT``, as it did when every test ran in the whole
    library, not two. A correct test that is merely slow in the first child costs a second run,
    never its points."""
    durations = getattr(reference, "durations", None) or {}
    return {i: min(timeout, max(FLOOR * timeout, SLACK * durations[i] + MARGIN))
            for i, cell in enumerate(cells) if cell["kind"] == "test" and i in durations}


def definitions_first(cells: list[dict]) -> list[int]:
    """The first child's order: the code cells up to the last test, then the tests, then the rest.

    A test runs in a namespace of its own (a copy of the code cells' one), so no code cell depends
    on a test having run; a test may depend on a later code cell, though: its check plugs the
    student's piece into mytorch, and the library may call another of the chapter's pieces, defined
    further down. Test seeds are per test, so a test draws the same inputs in either order. The
    code after the last test (``use_mine``) still runs after every test. A test that does not pass
    in this order runs again in its group, in the file's order."""
    tests = [i for i, cell in enumerate(cells) if cell["kind"] == "test"]
    last = tests[-1] if tests else -1
    before = [i for i in range(last) if cells[i]["kind"] != "test"]
    return before + tests + list(range(last + 1, len(cells)))


def run_student(plan_: Plan, program, reference, cells: list[dict], *, seed: int, hidden: bool,
                limits: Limits, skip: frozenset[int] = frozenset(), audit: bool = True,
                groups_only: bool = False) -> ChildResult:
    """A student's run of ``cells``, as ``sandbox.run_all`` returns it (see the module's text).

    The first child is not restarted: where it stops (a cell that never ends or kills it, perhaps
    in another of the student's pieces that the library called), every test it did not finish is
    left to the group children, which restart as ``run_all`` does. A looping piece then costs one
    ``TIMEOUT`` here, and one more in its own test's group, not one per test that calls it.

    ``groups_only``: the tests (but ``skip``) go straight to their groups. The feedback's run
    does so: it runs only the tests that did not pass, and each of those got its verdict in its
    group, so that is where what the feedback shows of it must come from too.
    """
    everything = plan_.everything
    if not plan_.groups:  # no piece of the chapter: nothing to run again elsewhere
        return run_all(everything.root, cells, seed=seed, hidden=hidden, limits=limits, skip=skip,
                       audit=audit)
    if groups_only:
        wanted = frozenset(t.cell for t in program.tests) - skip
        return run_legs([Leg(g.root, g.cells & wanted, g.references) for g in plan_.groups
                         if g.cells & wanted], cells, seed=seed, hidden=hidden, limits=limits,
                        audit=audit, skip=skip)
    first = run_job(everything.root, cells, seed=seed, hidden=hidden, limits=limits, skip=skip,
                    audit=audit, cell_timeouts=first_deadlines(reference, cells, limits.cell_timeout),
                    order=definitions_first(cells))
    if first.malformed or first.unstarted:
        return first
    stopped_code = frozenset()
    if first.outcome != "done" and first.running is not None and cells[first.running]["kind"] == "code":
        first.stopped[first.running] = first.outcome  # never run it again: it costs the same each time
        stopped_code = frozenset({first.running})
    # each row on its own checks: an integration row that passed here is not run again because
    # another row (whose piece came later in the file, say) did not pass here
    verdicts = judge(program, reference, first, hidden=hidden, own_work=False)
    retry = {t.cell for t, v in zip(program.tests, verdicts, strict=True)
             if v.status != "passed" and t.cell not in skip}
    legs = [Leg(g.root, g.cells & retry, g.references) for g in plan_.groups if g.cells & retry]
    if not legs:
        return first
    second = run_legs(legs, cells, seed=seed, hidden=hidden, limits=limits, audit=audit,
                      skip=frozenset(skip) | stopped_code)
    if second.malformed:
        return second
    for cell in retry:
        if cell in second.ends:
            first.ends[cell] = second.ends[cell]
            first.stopped.pop(cell, None)
        elif cell in second.stopped:
            first.ends.pop(cell, None)
            first.stopped[cell] = second.stopped[cell]
    first.outcome = second.outcome
    first.unstarted |= second.unstarted
    return first
