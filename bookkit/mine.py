"""``make mine``: run the book and its tests on the student's own pieces, then show what is theirs.

1. Check that this Python can run the tests at all (pytest, and nbclient for the chapters): where it
   cannot, say so and exit 2 — a run that tested nothing must never look like a pass.
2. Read ``exercises/`` (or another folder; ``--chapter NN``: only that chapter's pieces are yours):
   which pieces are written, which are stubs, which fail to load.
3. Run the library's tests (pytest ``-m library``) with ``MYTORCH_MINE`` set, so that mytorch runs
   the student's pieces, behind a progress bar; pytest's own output goes to a log file
   (``build/mine/pytest.log``) that the summary names. With ``--chapter``, only the tests that used
   that chapter's pieces in an earlier run (``build/mine/usage.json``) run, when that is known.
4. Execute the chapters (or the one chapter) on the student's pieces; a chapter that fails names the
   student's pieces it ran.
5. Print the table with the test counts, one line per chapter, and the verdict.

Unfinished work is not an error: the command exits 0 whenever it tested to the end, and 2 when it
could not test (a missing tool, pytest stopping early, no test run).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bookkit.project import Project

LOG_DIR = Path("build") / "mine"
_PERCENT = re.compile(rb"\[\s*(\d+)%\]")
_SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+)(?: in [\d.]+s.*)?=*$")


def _env(source: Path) -> dict:
    env = dict(os.environ)
    env["MYTORCH_MINE"] = str(source)
    env["MYTORCH_MINE_QUIET"] = "1"
    env.pop("PYTEST_XDIST_WORKER", None)
    return env


def missing_tools(jobs: int, chapters: bool) -> list[str]:
    """The modules ``make mine`` needs that this Python lacks (empty: it can run)."""
    needed = ["pytest", "hypothesis", "torch"] + (["xdist"] if jobs > 1 else []) \
        + (["nbclient", "ipykernel", "jupytext"] if chapters else [])
    return [name for name in needed if importlib.util.find_spec(name) is None]


def _cannot_test(missing: list[str]) -> int:
    pip = {"xdist": "pytest-xdist"}
    commands = []
    plain = [pip.get(m, m) for m in missing if m != "torch"]
    if plain:
        commands.append(f"{sys.executable} -m pip install {' '.join(plain)}")
    if "torch" in missing:  # the oracle every library test compares with: its CPU build is enough
        commands.append(f"{sys.executable} -m pip install torch==2.13.0 "
                        "--extra-index-url https://download.pytorch.org/whl/cpu")
    install = "\n  ".join(commands)
    print(f"✗ 这里没法测试你的零件：缺少 {', '.join(missing)}。什么都没有测试，所以也不能说你的零件对。\n"
          f"  安装后再运行 / install them, then run it again:\n  {install}\n"
          f"✗ make mine cannot test your pieces here: this Python lacks {', '.join(missing)}. Nothing "
          "was tested, so nothing is marked as passing.\n"
          "  (`make check` needs none of them: it runs each exercise's visible tests. On Binder, "
          "`make check` works as it is; `make mine` needs the commands above first.)",
          file=sys.stderr)
    return 2


def only_chapter(source: Path, chapter: str, into: Path) -> Path:
    """A folder holding only chapter ``chapter``'s exercise files from ``source``: with it, only that
    chapter's pieces are the student's and every other piece runs the reference."""
    files = sorted(p for p in source.glob(f"{chapter}_*") if p.suffix in (".md", ".ipynb"))
    if not files:
        raise FileNotFoundError(f"no exercise file for chapter {chapter} in {source} "
                                f"(第 {chapter} 章没有练习文件): the names start with {chapter}_")
    for path in files:
        shutil.copy2(path, into / path.name)
    return into


def _usage_tests(usage_path: Path, names: list[str]) -> list[str]:
    """Test ids that ran any of ``names`` in an earlier run (empty when unknown)."""
    try:
        usage = json.loads(usage_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not all(n in usage for n in names):
        return []
    return sorted({t for n in names for t in usage[n]})


def _progress(log: Path, proc: subprocess.Popen, label: str) -> None:
    """A progress bar fed by pytest's ``[ 42%]`` marks in its log, until the run ends."""
    try:
        from tqdm import tqdm
    except ImportError:
        proc.wait()
        return
    with tqdm(total=100, desc=label, unit="%", bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}",
              file=sys.stdout, leave=True) as bar:
        while proc.poll() is None:
            time.sleep(0.5)
            try:
                marks = _PERCENT.findall(log.read_bytes()[-4000:])
            except OSError:
                marks = []
            if marks and int(marks[-1]) > bar.n:
                bar.update(int(marks[-1]) - bar.n)
        if proc.returncode in (0, 1):
            bar.update(100 - bar.n)


def _summary_line(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []
    for line in reversed(lines):
        if m := _SUMMARY.match(line.strip()):
            return m.group(1)
    return ""


def run(project: Project, source: Path | None, jobs: int, tests: list[str] | None,
        chapters: bool, chapter: str | None = None) -> int:
    """The whole ``make mine``; returns the exit status."""
    source = (source or project.exercises_dir).resolve()
    if not source.exists():
        print(f"没有找到 {source}：先运行 make exercises / {source} does not exist: run "
              "`make exercises` first, or pass MINE=<folder of your exercise notebooks>",
              file=sys.stderr)
        return 2
    missing = missing_tools(jobs, chapters)
    if missing:
        return _cannot_test(missing)
    with tempfile.TemporaryDirectory(prefix="mytorch-mine-") as tmp:
        if chapter:
            folder = Path(tmp) / "pieces"
            folder.mkdir()
            try:
                source = only_chapter(source, chapter, folder)
            except FileNotFoundError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
        return _run(project, source, jobs, tests, chapters, chapter, Path(tmp))


def _run(project: Project, source: Path, jobs: int, tests: list[str] | None, chapters: bool,
         chapter: str | None, tmp: Path) -> int:
    import mytorch  # noqa: F401  (loads every piece's module, so the table lists them all)
    from mytorch.mine import use_mine

    rep = use_mine(source, quiet=True)
    if chapter:
        rep.rows = [p for p in rep.rows if p.chapter == int(chapter)]
    yours = [p.name for p in rep.rows if p.status == "mine"]
    broken = rule_breakers(project, source, rep)
    log_dir = project.root / LOG_DIR
    log_dir.mkdir(parents=True, exist_ok=True)
    log, usage = log_dir / "pytest.log", log_dir / "usage.json"
    tally_path = tmp / "tally.json"
    env = _env(source)
    env["MYTORCH_MINE_REPORT"] = str(tally_path)
    env["MYTORCH_MINE_USAGE"] = str(usage)
    cmd = [sys.executable, "-m", "pytest", "-m", "library", "-p", "no:cacheprovider",
           "--no-header", "-rfE", "--tb=short", "-o", "console_output_style=progress"]
    if jobs > 1:
        cmd += ["-n", str(jobs)]
    selected = tests or []
    note = ""
    if chapter and not tests:
        known = _usage_tests(usage, yours) if yours else []
        if known:
            selected, note = known, f"{len(known)} tests that use chapter {chapter}'s pieces"
        elif yours:
            note = ("all library tests: which of them use chapter " + chapter + "'s pieces is learnt "
                    "from this run, so the next `make mine CH=" + chapter + "` runs only those")
    if chapter and not yours:
        print(f"第 {chapter} 章还没有你写的零件（全是未完成）/ chapter {chapter} has none of your pieces yet "
              "(all stubs): nothing to test.")
        print("\n## 结果 / Result\n")
        print(rep.table())
        return 0
    print(f"你的零件 {len(yours)} 个 / {len(yours)} of your pieces are in; testing them"
          + (f" ({note})" if note else "") + ".", flush=True)
    with open(log, "wb") as out:
        out.write(("$ MYTORCH_MINE=" + str(source) + " " + " ".join(cmd[2:] + selected) + "\n").encode())
        out.flush()
        proc = subprocess.Popen(cmd + selected, cwd=project.root, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
        watcher = threading.Thread(target=_progress, args=(log, proc, "测试 / tests"), daemon=True)
        watcher.start()
        proc.wait()
        watcher.join(timeout=5)
    tally = json.loads(tally_path.read_text()) if tally_path.is_file() else None
    counts = _summary_line(log)
    rel_log = log.relative_to(project.root)
    if proc.returncode not in (0, 1) or tally is None:
        print(f"✗ 测试没能运行完（pytest 退出码 {proc.returncode}），所以什么都不能算通过；详情见 {rel_log}\n"
              f"✗ The tests could not run to the end (pytest exit status {proc.returncode}{', ' + counts if counts else ''}), "
              f"so nothing counts as passing: see {rel_log}", file=sys.stderr)
        return 2
    rep.passed = {k: tuple(v) for k, v in tally.items()}
    for name in broken:  # a piece that is not the student's own work earns no passing test
        rep.passed[name] = (0, rep.passed.get(name, (0, 0))[1])

    chapter_lines = []
    if chapters:
        paths = [p for p in project.chapters() if not chapter or p.name.startswith(f"{chapter}_")]
        chapter_lines = _run_chapters(project, source, paths, rep)

    failing = [p.name for p in rep.rows if p.name not in broken
               if rep.passed.get(p.name, (0, 0))[0] < rep.passed.get(p.name, (0, 0))[1]]
    print("\n## 结果 / Result\n")
    print(rep.table())
    if chapter_lines:
        print()
        print("\n".join(chapter_lines))
    print()
    print(f"测试 / tests: {counts or '?'} — pytest 的完整输出 / pytest's full output: {rel_log}")
    print(rep.summary())
    if broken:
        print("✗ 这些零件不是你自己的实现（调用了 mytorch 自己的版本或题目禁止的路），通过的测试不算数："
              f"{', '.join(broken)}；`make check` 写明了是哪次调用。\n"
              f"✗ These pieces are not your own work (they call mytorch's own version, or a route the "
              f"exercise rules out), so their passing tests do not count: {', '.join(broken)}. "
              "`make check` names the call.")
    stopped = [line for line in chapter_lines if line.startswith("✗")]
    if failing:
        print(f"✗ 这些零件有测试没通过：{', '.join(failing)}。{rel_log} 里写明了是哪个测试、用到了哪个零件。\n"
              f"✗ Tests that used these pieces failed: {', '.join(failing)}. {rel_log} names each "
              "failing test and the pieces it ran.")
    elif stopped:
        print("✗ 有章节在你的零件上没能运行完（见上）/ a chapter did not run on your pieces (see above).")
    elif yours and not broken:
        print("✓ 你的零件通过了用到它们的全部测试 / your pieces pass every test that uses them.")
    return 0


def rule_breakers(project: Project, source: Path, rep) -> list[str]:  # noqa: ANN001 - mine.Report
    """The student's pieces that break their exercise's rules (call mytorch's own implementation, or
    a route the prompt forbids), found by the exercise files' visible checks: the same rules
    `make check` and `make grade` apply, so `make mine` never counts such a piece as passing."""
    from bookkit.grader.check import check_file
    from bookkit.grader.sandbox import Limits
    from bookkit.verdict import RULE_BROKEN

    mine = {p.name: p for p in rep.rows if p.status == "mine"}
    chapters = {f"{p.chapter:02d}" for p in mine.values()}
    found: list[str] = []
    for path in sorted(source.glob("*_exercises.*")) if source.is_dir() else [source]:
        if path.suffix not in (".md", ".ipynb") or path.name[:2] not in chapters:
            continue
        results, _ = check_file(project.root, path.resolve(), Limits(cell_timeout=600))
        for r in results:
            text = f"{r.message} {r.error}"
            if r.status != "passed" and any(m in text for m in RULE_BROKEN):
                found += [n for n in mine if r.id.endswith(f"_{n}") and n not in found]
    return found


def _run_chapters(project: Project, source: Path, paths: list[Path] | None = None,
                  rep=None) -> list[str]:  # noqa: ANN001 - mytorch.mine.Report
    """Execute each chapter with ``MYTORCH_MINE`` set; one line per chapter. A chapter that fails
    names the student's pieces that failed tests, or else the chapter's own pieces that are theirs."""
    from bookkit.execute import ExecutionFailed, execute
    from bookkit.notebook import read_notebook

    lines = []
    old = os.environ.get("MYTORCH_MINE")
    os.environ.update({"MYTORCH_MINE": str(source), "MYTORCH_MINE_QUIET": "1"})
    try:
        for path in project.chapters() if paths is None else paths:
            rel = path.relative_to(project.root)
            try:
                execute(read_notebook(path), path, project.chapters_dir, root=project.root,
                        timeout=600)
                lines.append(f"✓ {rel}: 在你的零件上运行通过 / runs on your pieces")
            except ExecutionFailed as exc:  # where, and what was raised: enough to go and look
                where = f"cell {exc.cell_number}" if exc.cell_number else "kernel start-up"
                error = (exc.error.strip().splitlines() or ["?"])[0][:200]
                lines.append(f"✗ {rel}: {where} 出错 / failed: {error}" + _suspects(rep, path))
            print(lines[-1], flush=True)
    finally:
        if old is None:
            os.environ.pop("MYTORCH_MINE", None)
        else:
            os.environ["MYTORCH_MINE"] = old
    return lines


def _suspects(rep, path: Path) -> str:  # noqa: ANN001 - mytorch.mine.Report
    """'— look at your piece X (exercise NN.k)': the student's pieces most likely behind a failure."""
    if rep is None:
        return ""
    mine = [p for p in rep.rows if p.status == "mine"]
    passed = rep.passed or {}
    failing = [p for p in mine if passed.get(p.name, (0, 0))[0] < passed.get(p.name, (0, 0))[1]]
    number = int(path.name[:2]) if path.name[:2].isdigit() else -1
    suspects = failing or [p for p in mine if p.chapter == number] or [p for p in mine if p.chapter <= number]
    if not suspects:
        return ""
    names = ", ".join(f"`{p.name}` ({p.exercise})" for p in suspects[:4])
    return f"\n    先看你的零件 / look at your piece(s): {names}"
