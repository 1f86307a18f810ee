"""``make bench-grade``: grade N generated submissions of every exercise and print the throughput.

The submissions mix correct ones (the reference regions), partly wrong ones (some regions left as
the stub or returning None) and hostile ones (a busy loop, a sleep, ``os._exit``, a memory bomb,
real torch, monkeypatching mytorch), like a real class with a few troublemakers.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bookkit.exercises import PLACEHOLDER, strip_solutions
from bookkit.grader.batch import grade_class, load_exercises
from bookkit.grader.regions import find_regions

HOSTILE = (
    "while True:\n    pass",
    "import time\ntime.sleep(3600)",
    "import os\nos._exit(0)",
    "x = bytearray(1 << 40)",
    "import torch\nreturn None",
    "import mytorch\nmytorch.tensor = lambda *a, **k: None\nreturn None",
)


def fill_regions(exercise_text: str, bodies: list[str | None]) -> str:
    """The student version of an exercise with region k holding ``bodies[k]`` (None: the stub)."""
    lines = exercise_text.splitlines()
    out, cursor = [], 0
    for (begin, end), body in zip(find_regions(lines), bodies, strict=False):
        out += lines[cursor:begin + 1]
        indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
        text = PLACEHOLDER if body is None else body
        out += [indent + line for line in text.splitlines()]
        cursor = end
    out += lines[cursor:]
    return "\n".join(out) + "\n"


def generate(root: Path, folder: Path, n: int) -> None:
    """Write ``n`` student folders into ``folder`` (70% correct, 20% partly wrong, 10% hostile)."""
    import textwrap

    for ex in load_exercises(root):
        template = strip_solutions(ex.source)
        reference = [textwrap.dedent(r) for r in ex.program.reference]
        for i in range(n):
            bodies: list[str | None] = list(reference)
            if i % 10 == 9:
                bodies[i % len(bodies)] = HOSTILE[i // 10 % len(HOSTILE)]
            elif i % 10 >= 7:
                for k in range(i % 3, len(bodies), 3):
                    bodies[k] = None if k % 2 else "return None"
            student = folder / f"s{i:04d}"
            student.mkdir(parents=True, exist_ok=True)
            (student / f"{ex.name}.md").write_text(fill_regions(template, bodies), encoding="utf-8")


def bench(root: Path, n: int, jobs: int) -> int:
    """Generate, grade with ``jobs`` workers, print submissions per minute."""
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        submissions, out = Path(tmp) / "submissions", Path(tmp) / "grades"
        generate(root, submissions, n)
        start = time.perf_counter()
        grade_class(root, submissions, out, jobs)
        seconds = time.perf_counter() - start
        rows = (out / "gradebook.csv").read_text(encoding="utf-8").count("\n") - 1
    print(f"graded {n} submissions ({rows} gradebook rows) in {seconds:.1f} s with JOBS={jobs}: "
          f"{n / seconds * 60:.0f} submissions/minute (target: 100 in ≤ 300 s = ≥ 20/minute)")
    return 0
