"""Grading a whole class: ``python -m bookkit grade-class SUBMISSIONS [--out OUT] [--jobs N]``.

Work unit: one (student, exercise file). Reference runs are made once per exercise (three runs:
two with one seed to find unstable checks, one with another seed to see whether the tests draw
random inputs); when they do, each student also gets a reference run with their own seed. Each
unit's result is cached in ``OUT/.cache/`` under a hash of everything it depends on, so an
interrupted run resumes where it stopped and a re-run reproduces the same files.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from bookkit.grader.protocol import Reference, TestResult, judge, make_reference, same_results
from bookkit.grader.regions import Program, RegionError, build_program
from bookkit.grader.report import (
    ExerciseResult,
    feedback_md,
    gradebook_csv,
    safe_name,
    seeds_json,
    summary_csv,
    write_atomic,
)
from bookkit.grader.sandbox import Limits, run_all
from bookkit.grader.submissions import pick_file, read_submission, stray_files, students
from bookkit.notebook import NotebookError, read_notebook

GRADER_VERSION = "1"
CALIBRATION_SEEDS = (20240601, 20240602)


class InstructorError(Exception):
    """Something only the instructor can fix (no such folder, no exercises); says what to do."""


def student_seed(student: str, exercise: str) -> int:
    """The seed of one student's run of one exercise: a hash, so re-runs draw the same inputs."""
    return int(hashlib.sha256(f"{student}\0{exercise}".encode()).hexdigest()[:8], 16)


@dataclass
class Exercise:
    """One exercise file: its name, instructor source, program and reference."""

    name: str
    source: str
    program: Program
    reference: Reference | None = None
    seeded: bool = False  # the tests draw random inputs: reference per student seed


class Grader:
    """Grades (student, exercise) units against prepared exercises, with a result cache."""

    def __init__(self, root: Path, exercises: list[Exercise], out: Path, limits: Limits) -> None:
        self.root, self.exercises, self.out, self.limits = root, exercises, out, limits
        self.cache = out / ".cache"

    def calibrate(self, ex: Exercise) -> None:
        """Reference runs of one exercise: unstable checks, seed dependence, instructor problems."""
        cells = ex.program.assemble(None)
        # a2 is forked by a zygote of its own: values that depend on the process (data_ptr(), id(),
        # the order of a set of strings) differ from a1's and are found unstable, as they will
        # differ in a student's run
        a1, a2, b = (run_all(self.root, cells, seed=s, hidden=True, limits=self.limits, new_zygote=new)
                     for s, new in ((CALIBRATION_SEEDS[0], False), (CALIBRATION_SEEDS[0], True),
                                    (CALIBRATION_SEEDS[1], False)))
        ex.reference = make_reference(ex.program, [a1, a2])
        ex.seeded = not same_results(a1, b, ex.program, ignore=ex.reference.unstable)

    def reference_for(self, ex: Exercise, seed: int) -> Reference:
        assert ex.reference is not None
        if not ex.seeded:
            return ex.reference
        run = run_all(self.root, ex.program.assemble(None), seed=seed, hidden=True, limits=self.limits)
        own = make_reference(ex.program, [run])
        own.unstable |= ex.reference.unstable
        return own

    def grade(self, student_dir: Path, ex: Exercise) -> ExerciseResult:
        """One student's result for one exercise (from the cache when nothing changed)."""
        path = pick_file(student_dir, ex.name)
        sub = read_submission(path)
        file = path.name if path else ""
        if sub.status == "missing":
            sub = type(sub)("missing", message=f"no {ex.name}.md or {ex.name}.ipynb submitted")
        if sub.status != "ok":
            return ExerciseResult(ex.name, file, sub.status, sub.message,
                                  [TestResult(t.id, t.points, sub.status, _short(sub, file))
                                   for t in ex.program.tests])
        seed = student_seed(student_dir.name, ex.name)
        key = hashlib.sha256(json.dumps([GRADER_VERSION, ex.source, file, seed, self.limits.cell_timeout,
                                         sub.digest_source.hex()]).encode()).hexdigest()
        cached = self.cache / f"{key}.json"
        if cached.is_file():
            try:
                return ExerciseResult.from_json(json.loads(cached.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError):
                pass  # a damaged cache entry: grade again
        try:
            cells = ex.program.assemble(list(sub.regions))
        except RegionError as exc:
            message = (f"{exc}: keep exactly the '### BEGIN SOLUTION' / '### END SOLUTION' lines of "
                       f"the exercise file and write your code between them")
            return ExerciseResult(ex.name, file, "invalid", message,
                                  [TestResult(t.id, t.points, "invalid", message) for t in ex.program.tests])
        reference = self.reference_for(ex, seed)
        run = run_all(self.root, cells, seed=seed, hidden=True, limits=self.limits)
        result = ExerciseResult(ex.name, file, "ok", "", judge(ex.program, reference, run))
        if not run.unstarted:  # a child that never started is redone by the next run
            write_atomic(cached, json.dumps(result.to_json(), ensure_ascii=False, sort_keys=True))
        return result


def _short(sub, file: str) -> str:
    return f"{file} {sub.message}" if file else sub.message


def load_exercises(root: Path) -> list[Exercise]:
    """The instructor's exercises (``solutions/NN_slug_exercises.md``), parsed."""
    from bookkit.project import Project

    exercises = []
    for path in Project(root).solutions():
        try:
            program = build_program(read_notebook(path))
        except (NotebookError, RegionError) as exc:
            raise InstructorError(f"{path}: {exc}. Fix the solutions file (make exercises shows "
                                  "marker problems).") from None
        exercises.append(Exercise(path.stem, path.read_text(encoding="utf-8"), program))
    return exercises


def grade_class(root: Path, submissions: Path, out: Path, jobs: int = 2,
                limits: Limits | None = None, progress: bool = True,
                exercises: list[Exercise] | None = None) -> dict[str, list[ExerciseResult]]:
    """Grade every student folder of ``submissions``; write the gradebook, summary and feedback."""
    if not submissions.is_dir():
        raise InstructorError(f"{submissions}: no such folder. Pass SUBMISSIONS=<folder> holding one "
                              "folder per student (named by the student's id).")
    exercises = load_exercises(root) if exercises is None else exercises
    if not exercises:
        raise InstructorError(f"no exercises in {root / 'solutions'}: add solutions/NN_slug_exercises.md "
                              "files (see CONTRIBUTING.md) before grading.")
    people = students(submissions)
    grader = Grader(root, exercises, out, limits or Limits())
    results: dict[str, list[ExerciseResult]] = {p.name: [] for p in people}
    names = [ex.name for ex in exercises]
    bar = _progress(len(people) * len(exercises) + len(exercises), progress)
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in as_completed([pool.submit(grader.calibrate, ex) for ex in exercises]):
            future.result()
            bar.update(1)
        for ex in exercises:
            for problem in ex.reference.problems:  # type: ignore[union-attr]
                print(f"warning: {ex.name}: {problem} (fix solutions/{ex.name}.md)", file=sys.stderr)
        units = {pool.submit(grader.grade, p, ex): (p, ex) for p in people for ex in exercises}
        pending = {p.name: len(exercises) for p in people}
        for future in as_completed(units):
            person, ex = units[future]
            result = future.result()
            with lock:
                results[person.name].append(result)
                pending[person.name] -= 1
                if not pending[person.name]:
                    results[person.name].sort(key=lambda r: names.index(r.exercise))
                    write_atomic(out / "feedback" / f"{safe_name(person.name)}.md",
                                 feedback_md(person.name, results[person.name], stray_files(person, names)))
            bar.update(1)
    bar.close()
    write_atomic(out / "gradebook.csv", gradebook_csv(results))
    write_atomic(out / "summary.csv", summary_csv(results, names))
    write_atomic(out / "seeds.json", seeds_json({p.name: {e: student_seed(p.name, e) for e in names}
                                                 for p in people}))
    return results


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="unit", desc="grading", file=sys.stderr, dynamic_ncols=True)
