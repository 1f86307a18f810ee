"""The command line: ``python -m bookkit <command>``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bookkit.project import ConfigError, Project, find_root
from bookkit.report import Problem, print_problems

DESCRIPTION = """Tooling of the mytorch book / 本书的工具.

commands:
  check-bilingual  every prose cell is tagged zh/en, in zh→en pairs with matching headings
  check-teaches    chapters only use mytorch API taught so far (front matter `teaches:`)
  check-links      Colab / Binder links name the configured repository and existing files
  check-outputs    outputs the prose quotes (cell metadata `quotes`) are what the cells print
  check-leaks      no chapter or stored output shows an exercise's reference body
  exercises        regenerate exercises/ from solutions/ (--check: fail if stale)
  colab            execute the chapters into notebooks/{zh,en}/ (--check: fail if stale)
  book             the web edition: build/web/index.html (Sphinx; works offline)
  grade            run the visible tests of exercises/*.md and print a verdict table
  grade-class      grade a class's submissions: gradebook, summary, bilingual feedback
  bench-grade      time grade-class on generated submissions (submissions per minute)
  lab              start JupyterLab on the book (chapters and exercises open as notebooks)
  mine             run the tests and chapters on your own pieces (exercises/), print what is yours
"""


def _sources(project: Project, files: list[Path]) -> list[Path]:
    return files or [*project.chapters(), *project.solutions(), *project.exercises()]


def cmd_check_bilingual(project: Project, args: argparse.Namespace) -> int:
    from bookkit.bilingual import check_file

    files = _sources(project, args.files)
    if not files:
        print("no chapters, solutions or exercises found yet: nothing to check")
        return 0
    problems: list[Problem] = []
    for path in files:
        problems += check_file(path)
    return print_problems("check-bilingual", problems, len(files), project.root)


def cmd_check_links(project: Project, args: argparse.Namespace) -> int:
    from bookkit.links import check

    problems, count = check(project)
    return print_problems("check-links", problems, count, project.root)


def cmd_check_outputs(project: Project, args: argparse.Namespace) -> int:
    from bookkit.quotes import check

    problems, count = check(project)
    status = print_problems("check-outputs", problems, len(project.chapters()), project.root)
    if not problems:
        print(f"  {count} quoted output(s) found in the stored outputs")
    return status


def cmd_check_leaks(project: Project, args: argparse.Namespace) -> int:
    from bookkit.leaks import check

    problems, count = check(project)
    return print_problems("check-leaks", problems, count, project.root)


def cmd_check_teaches(project: Project, args: argparse.Namespace) -> int:
    from bookkit.teaches import check, tensor_methods

    chapters = project.chapters()
    others = [*project.solutions(), *project.exercises()]
    if not chapters and not others:
        print("no chapters found yet: nothing to check")
        return 0
    methods, why = tensor_methods(project.root)
    if methods is None:
        print(f"note: {why}; Tensor method calls are not checked, only `torch.X` uses "
              "(this check gets stricter once mytorch.Tensor exists)")
    problems = check(chapters, others, methods, project.mytorch_only())
    return print_problems("check-teaches", problems, len(chapters) + len(others), project.root)


def _report_sync(title: str, report, root: Path, check: bool, fix: str) -> int:
    def rel(path: Path) -> str:
        return str(path.relative_to(root))

    if check:
        if report.ok:
            print(f"✓ {title}: up to date")
            return 0
        for path in report.stale:
            print(f"stale or missing: {rel(path)}")
        for path in report.orphans:
            print(f"orphan (no source any more): {rel(path)}")
        print(f"✗ {title} is out of date: run `{fix}` and commit the result")
        return 1
    for path in report.stale:
        print(f"wrote {rel(path)}")
    for path in report.orphans:
        print(f"removed orphan {rel(path)}")
    print(f"✓ {title}: {len(report.stale)} written, {len(report.orphans)} removed")
    return 0


def cmd_exercises(project: Project, args: argparse.Namespace) -> int:
    from bookkit.exercises import sync
    from bookkit.notebook import NotebookError, read_text

    for path in project.solutions():
        read_text(path)
    for path in project.exercises():
        try:
            read_text(path)
        except NotebookError as exc:
            raise NotebookError(f"{exc} Or move it aside (it may hold a student's answers) and run "
                                "`make exercises` to regenerate it.") from None
    report = sync(project.solutions(), project.exercises_dir, write=not args.check)
    return _report_sync("exercises/", report, project.root, args.check, "make exercises")


def cmd_colab(project: Project, args: argparse.Namespace) -> int:
    from bookkit.colab import sync, total_size

    report = sync(project, write=not args.check, only_stale=args.stale_only, timeout=args.timeout,
                  progress=lambda message: print(message, flush=True))
    status = _report_sync("notebooks/ (Colab, Binder, GitHub)", report, project.root, args.check,
                          "make colab")
    if not args.check:
        print(f"  notebooks/ holds {total_size(project) / 1e6:.1f} MB (keep it under 30 MB)")
    return status


def cmd_book(project: Project, args: argparse.Namespace) -> int:
    from bookkit.colab import sync
    from bookkit.web import WebError, build

    if not project.chapters():
        print("no chapters/NN_slug.md found: nothing to build")
        return 1
    # The pages are the committed, executed notebooks of notebooks/: `make book` writes nothing but
    # build/, so a student's answers in exercises/ never reach a tracked file or the web edition.
    report = sync(project, write=False)
    chapters = [p for p in report.stale if p.parent.name != "exercises"]
    if chapters:
        print(f"note: {len(chapters)} stored chapter notebook(s) differ from chapters/ (e.g. "
              f"{chapters[0].relative_to(project.root)}); the web edition shows the stored ones. "
              "Authors: `make colab` executes the chapters into notebooks/ / 网页版显示的是已提交的笔记本")
    try:
        index = build(project, quiet=not args.verbose)
    except WebError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    site = index.parent.relative_to(project.root)
    print(f"✓ web edition built: open {index.relative_to(project.root)} (works offline)\n"
          f"  搜索结果的摘要需要经由网址打开 / search snippets need the pages served, not opened as files:\n"
          f"  python -m http.server --directory {site} 8000   →   http://localhost:8000/")
    return 0


def cmd_grade(project: Project, args: argparse.Namespace) -> int:
    from bookkit.grader.check import check_file, table
    from bookkit.grader.sandbox import Limits

    files = args.files or project.exercises()
    if args.chapter:
        chosen = [p for p in files if Path(p).name.startswith(f"{args.chapter}_")]
        if not chosen:
            names = ", ".join(sorted({Path(p).name[:2] for p in files})) or "none"
            print(f"error: no exercises for chapter {args.chapter} (第 {args.chapter} 章没有练习); "
                  f"chapters with exercises: {names}. E.g. make check CH=02", file=sys.stderr)
            return 2
        files = chosen
    if not files:
        print("no exercises/NN_slug_exercises.md found: nothing to grade")
        return 0
    rows, problems = [], {}
    for path in files:
        print(f"running {path.name} …", flush=True)
        results, problem = check_file(project.root, path.resolve(), Limits(cell_timeout=args.timeout))
        if problem:
            problems[path.name] = problem
            print(f"✗ {path.name}: {problem}\n    修复 / fix: repair the file (open it in JupyterLab "
                  f"or an editor); `git diff {path}` shows your changes")
        if not results and not problem:
            print(f"error: {path}: has no graded test cells (code cells with `grade:` metadata). "
                  "Pass an exercises/NN_slug_exercises.md file.", file=sys.stderr)
            return 1
        rows += [(path.name, result) for result in results]
    print()
    print(table(rows, problems))
    # Unfinished or failing exercises are the student's work in progress, not a tool error: the
    # table says it all, and `make check` must not end with "make: *** Error 1" as if it broke.
    # A broken file (problem above) is reported with a fix and still counts as a finished run.
    return 0


def cmd_grade_class(project: Project, args: argparse.Namespace) -> int:
    from bookkit.grader.batch import InstructorError, grade_class
    from bookkit.grader.sandbox import IsolationMissing, Limits, require_isolation

    require_isolation(not args.unsafe_no_sandbox)  # fail closed: no kernel isolation, no grading
    try:
        check_class_paths(project, args.submissions.resolve(), args.out.resolve())
        results = grade_class(project.root, args.submissions.resolve(), args.out.resolve(), args.jobs,
                              Limits(cell_timeout=args.timeout), progress=not args.quiet)
    except (InstructorError, IsolationMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:  # the requirement is this command's: a caller in the same process sets its own
        require_isolation(False)
    print(f"✓ graded {len(results)} student(s): {args.out}/gradebook.csv, summary.csv, feedback/")
    return 0


# Folders of the repository that grading must never write into (instructor and book files).
PROTECTED = (".git", ".venv", "chapters", "solutions", "exercises", "notebooks", "mytorch", "bookkit",
             "tests", "docs", "binder", "bench")


def check_class_paths(project: Project, submissions: Path, out: Path) -> None:
    """Refuse, before any grading, what would fail late or overwrite files; InstructorError says why.

    ``submissions`` must hold at least one student folder with UTF-8 names; ``out`` must be a
    writable folder outside the book's sources and outside ``submissions``.
    """
    from bookkit.grader.batch import InstructorError
    from bookkit.grader.submissions import SUFFIXES, display_name, students

    pick = "pick another OUT, e.g. OUT=grades (the default)"
    root = project.root.resolve()
    if out == root or any(out.is_relative_to(root / name) for name in PROTECTED):
        raise InstructorError(f"OUT={out} is inside the book's own files; grading would write over "
                              f"them: {pick}")
    if out.is_relative_to(submissions):
        raise InstructorError(f"OUT={out} is inside SUBMISSIONS={submissions}: its folders would be "
                              f"graded as students next time; {pick} outside SUBMISSIONS")
    if out.exists() and not out.is_dir():
        raise InstructorError(f"OUT={out} is a file, not a folder: {pick}")
    if not submissions.is_dir():
        raise InstructorError(f"SUBMISSIONS={submissions}: no such folder. Pass SUBMISSIONS=<folder> holding "
                              "one folder per student (named by the student's id).")
    people = students(submissions)
    if not people:
        exercise_files = [display_name(p.name) for p in submissions.iterdir() if p.suffix in SUFFIXES]
        hint = (f" It holds exercise files ({', '.join(sorted(exercise_files)[:3])}): it looks like one "
                "student's folder; put it inside a folder, as SUBMISSIONS/<student id>/."
                if exercise_files else "")
        raise InstructorError(f"SUBMISSIONS={submissions} holds no student folders.{hint} Expected one "
                              "folder per student, named by the student's id, with their exercises/ files.")
    strays = sorted(display_name(p.name) for p in submissions.iterdir()  # escapes shown, not run
                    if not p.is_dir() and not p.name.startswith((".", "__")))
    if strays:
        print(f"note: ignoring {len(strays)} file(s) at the top of SUBMISSIONS (not in a student folder): "
              + ", ".join(strays[:5]) + (" …" if len(strays) > 5 else ""), file=sys.stderr)
    # names that are not UTF-8, deep trees and odd files are each student's own rows (grader/)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise InstructorError(f"OUT={out} cannot be written ({exc.strerror}): {pick}, "
                              "or a folder you can write to") from None


def cmd_mine(project: Project, args: argparse.Namespace) -> int:
    from bookkit.mine import run

    tests = list(args.tests) + (["-k", args.keyword] if args.keyword else [])
    return run(project, args.source, args.jobs, tests, not args.no_chapters, args.chapter)


def cmd_lab(project: Project, args: argparse.Namespace) -> int:
    import os

    from bookkit.lab import choose_language, command, free_port_after, install_settings, port_is_free

    if args.install_settings:
        install_settings(project.root)
        print("✓ JupyterLab settings installed from lab/ into this environment")
        return 0
    if not port_is_free(args.port):
        free = free_port_after(args.port)
        print(f"error: port {args.port} is already in use (another JupyterLab?). Stop it, or run "
              f"`make lab PORT={free}`.\n错误：端口 {args.port} 已被占用（可能已有一个 JupyterLab 在运行）。"
              f"先关掉它，或者运行 `make lab PORT={free}`。", file=sys.stderr)
        return 1
    install_settings(project.root)
    choose_language(project.root, args.lang)  # `python -m bookkit lang` switches it later, no restart
    argv = command(project, args.port, browser=not args.no_browser, lang=args.lang)
    os.execv(argv[0], argv)  # JupyterLab takes over this process (Ctrl-C stops it)
    return 0  # pragma: no cover - execv does not return


def cmd_lang(project: Project, args: argparse.Namespace) -> int:
    from bookkit.lab import choose_language

    choose_language(project.root, args.lang)
    shown = {"both": "中文和英文 / both languages", "zh": "只显示中文 / Chinese only", "en": "English only / 只显示英文"}
    print(f"✓ {shown[args.lang]}. 在 JupyterLab 里重新打开章节（或 File → Reload Notebook from Disk）即可，"
          "不用重启 / reopen the chapter in JupyterLab (or File → Reload Notebook from Disk): no restart needed")
    return 0


def cmd_bench_grade(project: Project, args: argparse.Namespace) -> int:
    from bookkit.grader.bench import bench

    return bench(project.root, args.n, args.jobs)


def _chapter(text: str) -> str:
    """A chapter number as the files name it: 2 or 02 -> "02"."""
    if not text.isdigit() or len(text) > 2:
        raise argparse.ArgumentTypeError(f"must be a chapter number like 02, not {text!r}")
    return f"{int(text):02d}"


def _count(text: str, unit: str = "") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number{unit}, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return value


def _positive(text: str) -> int:
    """argparse type: a positive whole number (a count of workers or submissions)."""
    return _count(text)


def _port(text: str) -> int:
    """argparse type: a TCP port number."""
    value = _count(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number (1-65535), not {value}")
    return value


def _timeout(text: str) -> int:
    """argparse type: a positive whole number of seconds."""
    return _count(text, " of seconds")


def make_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    parser = argparse.ArgumentParser(
        prog="python -m bookkit", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, help="repository root (default: found from the cwd)")
    sub = parser.add_subparsers(dest="command", metavar="<command>")

    p = sub.add_parser("check-bilingual", help="check the zh/en pairing of prose cells")
    p.add_argument("files", nargs="*", type=Path, help="files to check (default: all)")
    p.set_defaults(func=cmd_check_bilingual)

    p = sub.add_parser("check-teaches", help="check chapters only use API taught so far")
    p.set_defaults(func=cmd_check_teaches)

    p = sub.add_parser("check-links", help="check Colab/Binder links against the repo and files")
    p.set_defaults(func=cmd_check_links)

    p = sub.add_parser("check-outputs", help="check outputs the prose quotes appear in the stored outputs")
    p.set_defaults(func=cmd_check_outputs)

    p = sub.add_parser("check-leaks", help="check no chapter or stored output shows a piece's body")
    p.set_defaults(func=cmd_check_leaks)

    p = sub.add_parser("exercises", help="regenerate exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 listing stale files")
    p.set_defaults(func=cmd_exercises)

    p = sub.add_parser("colab", help="execute the chapters into notebooks/{zh,en}/ (Colab, Binder, GitHub)")
    p.add_argument("--check", action="store_true",
                   help="execute and write nothing; exit 1 listing notebooks whose source changed")
    p.add_argument("--stale-only", action="store_true",
                   help="execute only chapters whose stored notebooks no longer match their source")
    p.add_argument("--timeout", type=_timeout, default=600, help="seconds per cell (default 600)")
    p.set_defaults(func=cmd_colab)

    p = sub.add_parser("book", help="build the web edition into build/web/ (Sphinx + MyST-NB)")
    p.add_argument("--timeout", type=_timeout, default=600,
                   help="seconds per cell when a stale chapter must be executed (default 600)")
    p.add_argument("--verbose", action="store_true", help="show Sphinx's progress")
    p.set_defaults(func=cmd_book)

    p = sub.add_parser("grade", help="run visible exercise tests, print a verdict table")
    p.add_argument("files", nargs="*", type=Path, help="exercise notebooks (default: exercises/)")
    p.add_argument("--timeout", type=_timeout, default=600, help="seconds per cell (default 600)")
    p.add_argument("--chapter", type=_chapter, default=None, help="only this chapter's exercises (e.g. 02)")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("grade-class", help="grade a class: gradebook, summary, bilingual feedback")
    p.add_argument("submissions", type=Path, help="folder with one folder per student (named by id)")
    p.add_argument("--out", type=Path, default=Path("grades"), help="output folder (default grades/)")
    p.add_argument("--jobs", type=_positive, default=2, help="parallel children (default 2)")
    p.add_argument("--timeout", type=_timeout, default=10, help="seconds per test cell (default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="grade even where user namespaces or seccomp are missing (refused otherwise): "
                        "students' code can then read every file its user can, the solutions and "
                        "the library's reference pieces included, reach the network and see other "
                        "processes (docs/grader.md)")
    p.set_defaults(func=cmd_grade_class)

    p = sub.add_parser("lab", help="start JupyterLab on the book")
    p.add_argument("--port", type=_port, default=8888, help="port (default 8888)")
    p.add_argument("--lang", choices=("both", "zh", "en"), default="both",
                   help="prose to show: both languages (default), zh or en; files stay bilingual")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--install-settings", action="store_true",
                   help="only install lab/'s settings into this environment (Binder's postBuild)")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("lang", help="switch the language JupyterLab shows (no restart)")
    p.add_argument("lang", choices=("both", "zh", "en"), help="both languages, zh or en")
    p.set_defaults(func=cmd_lang)

    p = sub.add_parser("mine", help="run the tests and chapters on your own pieces")
    p.add_argument("--source", type=Path, default=None,
                   help="folder (or notebook) with your pieces (default: exercises/)")
    p.add_argument("--jobs", type=_positive, default=2, help="pytest workers (default 2)")
    p.add_argument("--no-chapters", action="store_true", help="only the tests, not the chapters")
    p.add_argument("--chapter", type=_chapter, default=None,
                   help="only this chapter (e.g. 02): its pieces are yours, the rest the reference")
    p.add_argument("-k", dest="keyword", default=None, help="only tests matching this expression")
    p.add_argument("tests", nargs="*", help="test files or node ids (default: all)")
    p.set_defaults(func=cmd_mine)

    p = sub.add_parser("bench-grade", help="time grade-class on generated submissions")
    p.add_argument("--n", type=_positive, default=100, help="number of submissions (default 100)")
    p.add_argument("--jobs", type=_positive, default=2, help="parallel children (default 2)")
    p.set_defaults(func=cmd_bench_grade)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 check failed or error, 2 usage error)."""
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        print("\nerror: no command given; pick one of the commands above", file=sys.stderr)
        return 2
    try:
        from bookkit.execute import ExecutionFailed  # imported late: keeps --help fast
        from bookkit.notebook import NotebookError
    except ModuleNotFoundError as exc:
        return _missing(exc)

    try:
        project = Project(args.root.resolve() if args.root else find_root())
        return args.func(project, args)
    except (ConfigError, NotebookError, ExecutionFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a file that cannot be read or written: name it and say why
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}. Check that the path exists and that you may "
              "read and write it.", file=sys.stderr)
        return 1
    except ModuleNotFoundError as exc:
        return _missing(exc)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


def _missing(exc: ModuleNotFoundError) -> int:
    """A dependency is not installed in this Python: say so, and how to run bookkit instead."""
    from bookkit.__main__ import HINT

    print(f"error: this Python ({sys.executable}) lacks {exc.name!r}, which this command needs.\n{HINT}",
          file=sys.stderr)
    return 1
