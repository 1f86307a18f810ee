"""Grading a whole class: ``python -m bookkit grade-class SUBMISSIONS [--out OUT] [--jobs N]``.

Work unit: one (student, exercise file). Each test cell draws its random inputs from its own seed,
a hash of (student, exercise, test): an unfinished exercise never changes another's inputs.
Calibration, once per exercise, runs the reference solution four times: twice with the same seeds
(two zygotes: checks whose expected value depends on the process are "unstable"), once with other
seeds (do the tests draw random inputs? then each student also gets a reference run with their
own seeds), and once with the expected values cut out as a student's run has them (a test cell
whose inputs change without them keeps them, and the instructor is told). A student's file is run
once with every test (the score) and, when a visible check failed or raised, once more with only
the visible tests (what the feedback shows; the hidden parts are left out of that run's cells, so
they never enter its process). Each unit's result is cached in ``OUT/.cache/`` under a hash of
everything it depends on, so an interrupted run resumes and a re-run is identical; an entry that
does not read back as a well-formed result, or whose student's feedback could not be written, is
graded again. Nothing one student's file does can stop the run: every failure is that student's
row, and writing one student's feedback or rows is guarded on its own.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from bookkit.grader.legs import plan, run_student
from bookkit.grader.protocol import (
    Reference,
    TestResult,
    judge,
    make_reference,
    same_cell,
    same_results,
)
from bookkit.grader.records import printable
from bookkit.grader.regions import Program, RegionError, build_program
from bookkit.grader.report import (
    CSV_BOM,
    ExerciseResult,
    fallback_feedback,
    feedback_md,
    feedback_names,
    gradebook_csv,
    seeds_json,
    summary_csv,
    write_atomic,
)
from bookkit.grader.sandbox import Limits, run_all
from bookkit.grader.submissions import display_name, pick_file, read_submission, stray_files, students
from bookkit.notebook import NotebookError, read_notebook

GRADER_VERSION = "3"
CALIBRATION = ("\0calibration-a", "\0calibration-b")


class InstructorError(Exception):
    """Something only the instructor can fix (no such folder, no exercises); says what to do."""


def student_seed(student: str, exercise: str, test: str = "") -> int:
    """The seed of one student's exercise (its code cells), or of one of its tests: a hash, so
    re-runs draw the same inputs, and no test's inputs depend on another test."""
    key = f"{student}\0{exercise}" + (f"\0{test}" if test else "")
    return int(hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:8], 16)


def test_seeds(program: Program, student: str, exercise: str) -> dict[int, int]:
    """The seed of every test cell of ``program`` for ``student``."""
    return {t.cell: student_seed(student, exercise, t.id) for t in program.tests}


@dataclass
class Exercise:
    """One exercise file: its name, instructor source, program and reference."""

    name: str
    source: str
    program: Program
    reference: Reference | None = None
    seeded: bool = False  # the tests draw random inputs: reference per student seed
    cut: frozenset[int] = frozenset()  # test cells whose expected values a student's run never computes


class Grader:
    """Grades (student, exercise) units against prepared exercises, with a result cache."""

    def __init__(self, root: Path, exercises: list[Exercise], out: Path, limits: Limits) -> None:
        self.root, self.exercises, self.out, self.limits = root, exercises, out, limits
        self.cache = out / ".cache"
        self.isolation: dict = {}
        self.cached: dict[tuple[str, str], Path] = {}  # (student, exercise) → its cache entry

    def _run(self, cells: list[dict], **kwargs) -> object:
        run = run_all(self.root, cells, limits=self.limits, **kwargs)
        if run.isolation and not self.isolation:
            self.isolation = dict(run.isolation)
        return run

    def _run_student(self, ex: Exercise, cells: list[dict], reference: Reference, **kwargs) -> object:
        """A student's run: in children whose mytorch holds no reference of the pieces their tests
        are about (``legs.py``, ``stubtree.py``); expected values come from the reference runs."""
        plans = getattr(self, "_plans", None)
        if plans is None:
            plans = self._plans = {}
        if ex.name not in plans:
            plans[ex.name] = plan(self.root, ex.name, ex.source, ex.program)
        run = run_student(plans[ex.name], ex.program, reference, cells,
                          limits=self.limits, audit=getattr(self, "audit", True), **kwargs)
        if run.isolation and not self.isolation:
            self.isolation = dict(run.isolation)
        return run

    def calibrate(self, ex: Exercise) -> None:
        """Reference runs of one exercise: unstable checks, seed dependence, cut cells, problems."""
        program = ex.program
        seeds = [test_seeds(program, who, ex.name) for who in CALIBRATION]
        full = [program.assemble(None, seeds=s) for s in seeds]
        # a2 is forked by a zygote of its own: values that depend on the process (data_ptr(), id(),
        # the order of a set of strings) differ from a1's and are found unstable
        a1, a2, b = (self._run(cells, seed=student_seed(who, ex.name), hidden=True, new_zygote=new)
                     for cells, who, new in ((full[0], CALIBRATION[0], False),
                                             (full[0], CALIBRATION[0], True),
                                             (full[1], CALIBRATION[1], False)))
        ex.reference = make_reference(program, [a1, a2])
        ex.seeded = not same_results(a1, b, program, ignore=ex.reference.unstable)
        keep = frozenset(ex.reference.unstable)
        cut = frozenset(t.cell for t in program.tests)
        for _ in range(2):  # the student's form of each test must draw the same inputs
            c = self._run(program.assemble(None, cut=cut, keep=keep, seeds=seeds[0]),
                          seed=student_seed(CALIBRATION[0], ex.name), hidden=True)
            bad = {t.cell for t in program.tests if t.cell in cut and not same_cell(a1, c, t.cell, keep)}
            if not bad:
                break
            cut -= bad
            for t in program.tests:
                if t.cell in bad:
                    ex.reference.problems.append(
                        f"{t.id}: its inputs change when its expected values are not computed, so a "
                        "student's run computes them too (they are still taken from the reference); "
                        "compute expected values after calling the student's code, in the check itself")
        ex.cut = cut

    def reference_for(self, ex: Exercise, student: str) -> Reference:
        assert ex.reference is not None
        if not ex.seeded:
            return ex.reference
        cells = ex.program.assemble(None, seeds=test_seeds(ex.program, student, ex.name))
        run = self._run(cells, seed=student_seed(student, ex.name), hidden=True)
        own = make_reference(ex.program, [run])
        own.unstable |= ex.reference.unstable
        return own

    def grade(self, student_dir: Path, ex: Exercise) -> ExerciseResult:
        """One student's result for one exercise; whatever goes wrong is this student's row."""
        try:
            return self._grade(student_dir, ex)
        except Exception as exc:  # a grader bug or a file no one foresaw: one row, never the class
            message = (f"the grader failed on this file ({type(exc).__name__}: "
                       f"{printable(str(exc))[:200]}); not the student's fault: please report it "
                       "with the file")
            print(f"warning: {display_name(student_dir.name)}/{ex.name}: {printable(message, True)}\n"
                  + printable(traceback.format_exc(limit=3)), file=sys.stderr)
            return ExerciseResult(ex.name, "", "error", message,
                                  [TestResult(t.id, t.points, "error", message) for t in ex.program.tests])

    def _grade(self, student_dir: Path, ex: Exercise) -> ExerciseResult:
        path = pick_file(student_dir, ex.name)
        sub = read_submission(path, student_dir)
        file = str(path.relative_to(student_dir)) if path else ""
        if sub.status == "missing":
            sub = type(sub)("missing", message=f"no {ex.name}.md or {ex.name}.ipynb submitted")
        if sub.status != "ok":
            return ExerciseResult(ex.name, file, sub.status, sub.message,
                                  [TestResult(t.id, t.points, sub.status, _short(sub, file))
                                   for t in ex.program.tests])
        student = student_dir.name
        seeds = test_seeds(ex.program, student, ex.name)
        key = hashlib.sha256(json.dumps([GRADER_VERSION, ex.source, file, student_seed(student, ex.name),
                                         self.limits.cell_timeout, sub.digest_source.hex()],
                                        ensure_ascii=True).encode()).hexdigest()
        cached = self.cache / f"{key}.json"
        self.cached[(student, ex.name)] = cached
        if cached.is_file():
            try:
                return ExerciseResult.from_json(json.loads(cached.read_text(encoding="utf-8")))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                pass  # a damaged cache entry: grade again
        try:
            cells = ex.program.assemble(list(sub.regions), cut=ex.cut,
                                        keep=frozenset(ex.reference.unstable), seeds=seeds)
        except RegionError as exc:
            message = (f"{exc}: keep exactly the '### BEGIN SOLUTION' / '### END SOLUTION' lines of "
                       f"the exercise file and write your code between them")
            return ExerciseResult(ex.name, file, "invalid", message,
                                  [TestResult(t.id, t.points, "invalid", message) for t in ex.program.tests])
        reference = self.reference_for(ex, student)
        code_seed = student_seed(student, ex.name)
        run = self._run_student(ex, cells, reference, seed=code_seed, hidden=True)
        tests = judge(ex.program, reference, run, cells=cells)
        if any(t.error or any(not line.ok for line in t.visible) for t in tests):
            # what the feedback shows comes from a run that never held a hidden test: its cells
            # are built without them; cells that did not finish in the first run are not run again,
            # nor tests that passed (the feedback shows only their pass); the others run in their
            # groups, where their verdicts came from
            visible = ex.program.assemble(list(sub.regions), cut=ex.cut, seeds=seeds, hidden=False,
                                          keep=frozenset(ex.reference.unstable))
            unfinished = frozenset(i for i in range(len(cells)) if i not in run.ends)
            passed = frozenset(s.cell for s, t in zip(ex.program.tests, tests, strict=True)
                               if t.status == "passed")
            view = self._run_student(ex, visible, reference, seed=code_seed, hidden=False,
                                     skip=unfinished | passed, groups_only=True)
            tests = judge(ex.program, reference, run, view=view, cells=cells, settled=passed)
        result = ExerciseResult(ex.name, file, "ok", "", tests)
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
    """Grade every student folder of ``submissions``; write the gradebook, summary and feedback.

    Always writes all three: a student's file can cost that student's rows, never the run.
    """
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
    files = feedback_names([p.name for p in people])
    strays: dict[str, list[tuple[str, str]]] = {}
    bar = _progress(len(people) * len(exercises) + len(exercises), progress)
    lock = threading.Lock()

    def finish(person: Path) -> None:
        """Write one student's feedback; whatever fails costs this student's details, not the class."""
        try:
            strays[person.name] = stray_files(person, names)
        except Exception as exc:  # an unreadable folder: say so in the feedback
            strays[person.name] = [(f"(the folder could not be listed: {exc})", "")]
        results[person.name].sort(key=lambda r: names.index(r.exercise))
        target = out / "feedback" / files[person.name]
        try:
            write_atomic(target, feedback_md(person.name, results[person.name], strays[person.name]))
        except Exception as exc:  # a grader bug on one student's results
            print(f"warning: {display_name(person.name)}: the feedback could not be written "
                  f"({type(exc).__name__}); their cached results are dropped, so the next run grades "
                  "them again", file=sys.stderr)
            for ex in exercises:  # a cached result that broke the report is never reused
                entry = grader.cached.get((person.name, ex.name))
                if entry is not None:
                    entry.unlink(missing_ok=True)
            try:
                write_atomic(target, fallback_feedback(person.name, results[person.name]))
            except Exception:
                pass

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in as_completed([pool.submit(grader.calibrate, ex) for ex in exercises]):
            future.result()
            bar.update(1)
        for ex in exercises:
            for problem in ex.reference.problems:  # type: ignore[union-attr]
                print(f"warning: {ex.name}: {printable(problem, True)} (fix solutions/{ex.name}.md)",
                      file=sys.stderr)
        units = {pool.submit(grader.grade, p, ex): (p, ex) for p in people for ex in exercises}
        pending = {p.name: len(exercises) for p in people}
        for future in as_completed(units):
            person, ex = units[future]
            result = future.result()  # grade() never raises
            with lock:
                results[person.name].append(result)
                pending[person.name] -= 1
                if not pending[person.name]:
                    finish(person)
            bar.update(1)
    bar.close()
    write_atomic(out / "gradebook.csv", CSV_BOM + gradebook_csv(results))
    write_atomic(out / "summary.csv", CSV_BOM + summary_csv(results, names))
    write_atomic(out / "seeds.json", seeds_json({p.name: {e: student_seed(p.name, e) for e in names}
                                                 for p in people}))
    print(summary_lines(grader.isolation, strays), file=sys.stderr)
    return results


def isolation_line(layers: dict) -> str:
    """One line: which operating-system isolation the children had."""
    if layers.get("namespaces") and layers.get("seccomp"):
        return ("isolation: full (each child in its own user, mount, PID, network and IPC namespaces, "
                "read-only view, private /tmp, seccomp filter)")
    if not layers:
        return "isolation: unknown (no child was started)"
    why = layers.get("why") or "unknown reason"
    return f"warning: isolation reduced ({why}); the Python seal and rlimits still apply"


def summary_lines(layers: dict, strays: dict[str, list[tuple[str, str]]]) -> str:
    """The terminal summary: the isolation line, then every misplaced or misnamed file."""
    lines = [isolation_line(layers)]
    listed = [(student, name, close) for student, found in sorted(strays.items()) for name, close in found]
    if listed:
        lines.append(f"{len(listed)} file(s) not graded (wrong name or place; listed in each feedback):")
        for student, name, close in listed[:50]:  # names arrive escaped; escaped again to be sure
            hint = f"  → {printable(close, True)}?" if close else ""
            lines.append(f"  {display_name(student)}/{printable(name, True)}{hint}")
        if len(listed) > 50:
            lines.append(f"  … and {len(listed) - 50} more")
    return "\n".join(lines)


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
