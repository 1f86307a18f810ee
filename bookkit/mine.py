"""``make mine``: run the book and its tests on the student's own pieces, then show what is theirs.

1. Read ``exercises/`` (or another folder): which pieces are written, which are stubs, which fail
   to load — the table is printed before anything runs.
2. Run the library's tests (pytest ``-m library``) with ``MYTORCH_MINE`` set, so that mytorch runs
   the student's pieces; count, per piece, the tests that used it and passed.
3. Execute the chapters on the student's pieces (unless ``--no-chapters``).
4. Print the table again with the test counts, and one line per chapter.

Unfinished work is not an error: the command exits 0 whenever it ran to the end (2 when it could
not run at all), and says in both languages what to look at.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bookkit.project import Project


def _env(source: Path) -> dict:
    env = dict(os.environ)
    env["MYTORCH_MINE"] = str(source)
    env["MYTORCH_MINE_QUIET"] = "1"
    return env


def run(project: Project, source: Path | None, jobs: int, tests: list[str] | None,
        chapters: bool) -> int:
    """The whole ``make mine``; returns the exit status."""
    source = (source or project.exercises_dir).resolve()
    if not source.exists():
        print(f"没有找到 {source}：先运行 make exercises / {source} does not exist: run "
              "`make exercises` first, or pass MINE=<folder of your exercise notebooks>",
              file=sys.stderr)
        return 2
    import mytorch
    from mytorch.mine import use_mine

    rep = use_mine(source, quiet=True)
    print("\n## 你的零件 / Your pieces\n")
    print(rep.table())
    print()
    print(rep.summary())

    with tempfile.TemporaryDirectory(prefix="mytorch-mine-") as tmp:
        tally_path = Path(tmp) / "tally.json"
        env = _env(source)
        env["MYTORCH_MINE_REPORT"] = str(tally_path)
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "library", "-p", "no:cacheprovider",
               "--no-header", "-rN", "--tb=line"]
        if jobs > 1:
            cmd += ["-n", str(jobs)]
        cmd += tests or []
        print("\n## 在你的零件上运行测试 / Running the tests on your pieces\n", flush=True)
        print("$ MYTORCH_MINE=" + str(source), " ".join(cmd[2:]), flush=True)
        proc = subprocess.run(cmd, cwd=project.root, env=env)
        tally = json.loads(tally_path.read_text()) if tally_path.is_file() else {}
    rep.passed = {k: tuple(v) for k, v in tally.items()}

    chapter_lines = []
    if chapters:
        print("\n## 在你的零件上运行各章 / Running the chapters on your pieces\n", flush=True)
        chapter_lines = _run_chapters(project, source)

    print("\n## 结果 / Result\n")
    print(rep.table())
    if chapter_lines:
        print()
        print("\n".join(chapter_lines))
    failing = [p.name for p in rep.rows if rep.passed.get(p.name, (0, 0))[0]
               < rep.passed.get(p.name, (0, 0))[1]]
    print()
    print(rep.summary())
    if failing:
        print(f"这些零件有测试没通过：{', '.join(failing)}。上面的测试输出写明了是哪个测试、用到了哪个零件。\n"
              f"Tests that used these pieces failed: {', '.join(failing)}. The test output above "
              "names each failing test and the pieces it ran.")
    elif proc.returncode not in (0, 1, 5):
        print(f"测试没能运行完（pytest 退出码 {proc.returncode}）/ the tests could not run to the end "
              f"(pytest exit status {proc.returncode})")
        return 2
    del mytorch
    return 0


def _run_chapters(project: Project, source: Path) -> list[str]:
    """Execute each chapter with ``MYTORCH_MINE`` set; one line per chapter."""
    from bookkit.execute import ExecutionFailed, execute
    from bookkit.notebook import read_notebook

    lines = []
    old = os.environ.get("MYTORCH_MINE")
    os.environ.update({"MYTORCH_MINE": str(source), "MYTORCH_MINE_QUIET": "1"})
    try:
        for path in project.chapters():
            rel = path.relative_to(project.root)
            try:
                execute(read_notebook(path), path, project.chapters_dir, root=project.root,
                        timeout=600)
                lines.append(f"✓ {rel}: 在你的零件上运行通过 / runs on your pieces")
            except ExecutionFailed as exc:  # where, and what was raised: enough to go and look
                where = f"cell {exc.cell_number}" if exc.cell_number else "kernel start-up"
                error = (exc.error.strip().splitlines() or ["?"])[0][:200]
                lines.append(f"✗ {rel}: {where} 出错 / failed: {error}")
            print(lines[-1], flush=True)
    finally:
        if old is None:
            os.environ.pop("MYTORCH_MINE", None)
        else:
            os.environ["MYTORCH_MINE"] = old
    return lines
