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
from bookkit.grader.sandbox import ChildResult, Leg, Limits, run_legs
from bookkit.grader.stubtree import build, chapter_pieces, references, test_groups

RETRIED = ("failed", "error")  # a timeout or a dead process is not run again: each costs its time again


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
    return Plan(Leg(tree, tests, {}), tuple(g for g in groups if g.references))


def run_student(plan_: Plan, program, reference, cells: list[dict], *, seed: int, hidden: bool,
                limits: Limits, skip: frozenset[int] = frozenset(), audit: bool = True) -> ChildResult:
    """A student's run of ``cells``, as ``sandbox.run_all`` returns it (see the module's text)."""
    first = run_legs([plan_.everything], cells, seed=seed, hidden=hidden, limits=limits, skip=skip,
                     audit=audit)
    if first.malformed or first.unstarted or not plan_.groups:
        return first
    verdicts = judge(program, reference, first, hidden=hidden)
    retry = {t.cell for t, v in zip(program.tests, verdicts, strict=True)
             if v.status in RETRIED and t.cell not in skip}
    legs = [Leg(g.root, g.cells & retry, g.references) for g in plan_.groups if g.cells & retry]
    if not legs:
        return first
    stopped_code = frozenset(i for i in first.stopped if cells[i]["kind"] == "code")
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
    first.unstarted |= second.unstarted
    return first
