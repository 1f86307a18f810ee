"""`make mine` and `make check` as a student meets them: no false pass where nothing could be tested,
one chapter at a time (CH=02), a short report that leads with the table and names a log, and a
failing chapter that names the student's pieces it ran."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bookkit import mine
from bookkit.project import Project

ROOT = Path(__file__).resolve().parents[1]


def _bookkit(*argv: str, hide: tuple[str, ...] = (), cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """`python -m bookkit ...` in a Python that cannot import the modules in ``hide``."""
    code = (f"import sys\nfor name in {hide!r}: sys.modules[name] = None\n"
            "from bookkit.cli import main\nsys.exit(main(sys.argv[1:]))")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    return subprocess.run([sys.executable, "-c", code, "--root", str(ROOT), *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_make_mine_without_pytest_says_it_tested_nothing_and_fails() -> None:
    proc = _bookkit("mine", "--jobs", "1", "--no-chapters", hide=("pytest",))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lacks pytest" in proc.stderr and "-m pip install pytest" in proc.stderr
    assert "yours" not in proc.stdout and "✓" not in proc.stdout, "a run that tested nothing printed a verdict"


def test_make_mine_needs_xdist_only_with_jobs_and_notebook_tools_only_with_chapters() -> None:
    assert "xdist" not in mine.missing_tools(1, chapters=False)
    assert mine.missing_tools(1, chapters=False) == []  # this environment has pytest and hypothesis


def test_one_chapters_pieces_are_copied_alone(tmp_path: Path) -> None:
    source = tmp_path / "exercises"
    source.mkdir()
    for name in ("02_autograd_exercises.md", "03_modules_exercises.md", "02_notes.txt"):
        (source / name).write_text("x", encoding="utf-8")
    into = tmp_path / "only"
    into.mkdir()
    mine.only_chapter(source, "02", into)
    assert sorted(p.name for p in into.iterdir()) == ["02_autograd_exercises.md"]
    with pytest.raises(FileNotFoundError, match="chapter 07"):
        mine.only_chapter(source, "07", into)


def test_a_failing_chapter_names_the_students_pieces_most_likely_behind_it() -> None:
    rows = [SimpleNamespace(name="nll_loss", exercise="05.2", chapter=5, status="mine"),
            SimpleNamespace(name="unbroadcast", exercise="02.1", chapter=2, status="mine"),
            SimpleNamespace(name="softmax", exercise="05.1", chapter=5, status="stub")]
    rep = SimpleNamespace(rows=rows, passed={"nll_loss": (3, 3), "unbroadcast": (10, 10)})
    assert "`nll_loss` (05.2)" in mine._suspects(rep, Path("chapters/05_losses.md"))
    assert "unbroadcast" not in mine._suspects(rep, Path("chapters/05_losses.md"))
    rep.passed["unbroadcast"] = (7, 10)  # a piece that failed tests is named first
    assert "`unbroadcast` (02.1)" in mine._suspects(rep, Path("chapters/05_losses.md"))
    assert mine._suspects(None, Path("chapters/05_losses.md")) == ""


def test_check_and_mine_take_one_chapter_and_refuse_a_wrong_one() -> None:
    proc = _bookkit("grade", "--chapter", "99")
    assert proc.returncode == 2 and "no exercises for chapter 99" in proc.stderr and "01" in proc.stderr
    proc = _bookkit("grade", "--chapter", "x2")
    assert proc.returncode == 2 and "chapter number like 02" in proc.stderr


@pytest.mark.slow
def test_make_mine_for_one_chapter_leads_with_the_table_and_names_its_log(tmp_path: Path) -> None:
    """`make mine CH=01` on the reference solutions: a short report, pytest's output in the log."""
    proc = _bookkit("mine", "--source", str(ROOT / "solutions"), "--chapter", "01", "--jobs", "1",
                    "--no-chapters", "tests/test_pieces_tensors.py")
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    result = out.split("## 结果 / Result")[1]
    assert "| 01." in result and "| 02." not in result, "CH=01 shows only chapter 01's pieces"
    assert "build/mine/pytest.log" in result and (ROOT / "build" / "mine" / "pytest.log").is_file()
    assert "passed" in result and "✓" in result
    assert len(out.splitlines()) < 60, f"make mine printed {len(out.splitlines())} lines"
    assert Project(ROOT).root == ROOT


def _extra(name: str, seen: set[str] | None = None) -> set[str]:
    """The requirement names of pyproject's extra ``name``, its own `mytorch[...]` extras resolved."""
    import re
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    seen = seen if seen is not None else set()
    names: set[str] = set()
    for requirement in extras[name]:
        if m := re.match(r"mytorch\[([\w,-]+)\]", requirement):
            for sub in m.group(1).split(","):
                if sub not in seen:
                    seen.add(sub)
                    names |= _extra(sub, seen)
        else:
            names.add(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower())
    return names


def test_students_get_a_light_environment_with_cpu_only_torch(tmp_path: Path) -> None:
    """`make lab` / `check` / `mine` install the `lab` extra and CPU-only PyTorch, not the contributor
    toolchain (CuPy, Playwright, Sphinx, the import linter); `make test` adds that on top."""
    lab = _extra("lab")
    assert {"jupyterlab", "matplotlib", "mplfonts", "pytest", "hypothesis", "nbclient", "nbval"} <= lab
    assert not lab & {"cupy-cuda12x", "playwright", "sphinx", "import-linter", "torch", "myst-nb"}, lab
    venv = tmp_path / "venv"
    for target in ("lab", "check", "mine"):
        plan = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60, env={**os.environ, "MYTORCH_PYTHON": ""}).stdout
        # torch alone from the CPU index (no fallback to PyPI's CUDA build), then its dependencies
        assert "--no-deps 'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu" in plan, plan
        assert "-e '.[lab]'" in plan and ".[dev" not in plan and "[web" not in plan, plan
    plan = subprocess.run(["make", "-n", "test", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "MYTORCH_PYTHON": ""}).stdout
    assert plan.index("whl/cpu") < plan.index("-e '.[dev,lab]'"), "make test must take torch's CPU build first"


def test_make_mine_does_not_count_a_piece_that_calls_mytorchs_own(tmp_path: Path) -> None:
    """The same rules as `make check`: a piece that delegates to the library, or takes a route its
    exercise rules out, is named and earns no passing test in `make mine`'s table."""
    stub = '    raise NotImplementedError("请完成这个练习 / Complete this exercise")'
    text = (ROOT / "exercises" / "05_losses_exercises.md").read_text(encoding="utf-8")
    parts = text.split(stub)
    bodies = [stub, "    return __import__('mytorch.nn._functional.loss', fromlist=['_']).nll_loss_nd("
                    "input, target, weight, ignore_index, reduction)", stub,
              "    return torch.nn.functional.cross_entropy(input, target, weight=weight, "
              "ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)"]
    bodies += [stub] * (len(parts) - 1 - len(bodies))
    (tmp_path / "05_losses_exercises.md").write_text(
        parts[0] + "".join(b + rest for b, rest in zip(bodies, parts[1:], strict=True)), encoding="utf-8")
    rows = [SimpleNamespace(name=n, chapter=5, status=s) for n, s in
            (("huber", "stub"), ("nll_loss_nd", "mine"), ("cross_entropy_loss", "mine"))]
    assert mine.rule_breakers(Project(ROOT), tmp_path, SimpleNamespace(rows=rows)) == [
        "nll_loss_nd", "cross_entropy_loss"]
