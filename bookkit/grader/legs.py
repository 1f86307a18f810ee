"""How a student's file is run: first in one child without any of the chapter's references, then,
for the tests that did not pass there, in children that hold the references of the pieces those
tests are not about.

A test that passes in the first child passed on the student's own code alone: no reference of any
piece of the chapter was in that process (``stubtree.py``), so the pass is earned. A test that
failed there may have failed through another of the student's pieces (the library calls them
everywhere in that child), so it is run again, with its group (``stubtree.test_groups``), in a
child where the chapter's other pieces are the references: its verdict is the one it would get in
the whole library, and its own reference is never in reach. A correct file costs one child, as it
did before the stub trees; only the tests that fail cost another.
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


def run_student(plan_: Plan, program, reference, cells: list[dict], *, seed: int, hidden: bool,
                limits: Limits, skip: frozenset[int] = frozenset(), audit: bool = True) -> ChildResult:
    """A student's run of ``cells``, as ``sandbox.run_all`` returns it (see the module's text).

    The first child is not restarted: where it stops (a cell that never ends or kills it, perhaps
    in another of the student's pieces that the library called), every test it did not finish is
    left to the group children, which restart as ``run_all`` does. A looping piece then costs one
    ``TIMEOUT`` here, and one more in its own test's group, not one per test that calls it.
    """
    everything = plan_.everything
    if not plan_.groups:  # no piece of the chapter: nothing to run again elsewhere
        return run_all(everything.root, cells, seed=seed, hidden=hidden, limits=limits, skip=skip,
                       audit=audit)
    first = run_job(everything.root, cells, seed=seed, hidden=hidden, limits=limits, skip=skip,
                    audit=audit)
    if first.malformed or first.unstarted:
        return first
    stopped_code = frozenset()
    if first.outcome != "done" and first.running is not None and cells[first.running]["kind"] == "code":
        first.stopped[first.running] = first.outcome  # never run it again: it costs the same each time
        stopped_code = frozenset({first.running})
    verdicts = judge(program, reference, first, hidden=hidden)
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
