"""``make check``: run the visible tests of the student exercises and print a verdict table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bookkit.execute import DEFAULT_TIMEOUT, execute
from bookkit.notebook import read_notebook


@dataclass(frozen=True)
class Verdict:
    """The outcome of one graded test cell."""

    path: Path
    test_id: str
    points: int
    error: str  # "" when the test passed

    @property
    def passed(self) -> bool:
        return not self.error

    @property
    def label(self) -> str:
        if self.passed:
            return "✓ 通过 / passed"
        if self.error.startswith("NotImplementedError"):
            return "… 未完成 / to do"
        return f"✗ 未通过 / failed: {self.error}"


def grade(path: Path, cwd: Path, root: Path, timeout: int = DEFAULT_TIMEOUT) -> list[Verdict]:
    """Execute one exercise notebook (errors allowed) and judge each ``grade`` cell."""
    nb = execute(read_notebook(path), path, cwd, root=root, timeout=timeout, allow_errors=True)
    verdicts = []
    for index, cell in enumerate(nb.cells):
        spec = cell.get("metadata", {}).get("grade")
        if cell.cell_type != "code" or not isinstance(spec, dict):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        error = f"{errors[0].get('ename')}: {errors[0].get('evalue')}".splitlines()[0] if errors else ""
        verdicts.append(Verdict(path, str(spec.get("id", f"cell{index + 1}")),
                                int(spec.get("points", 0) or 0), error[:100]))
    return verdicts


def table(verdicts: list[Verdict], root: Path) -> str:
    """A plain-text table of verdicts with a points total."""
    rows = [("练习 / exercise", "测试 / test", "分 / pts", "结果 / verdict")]
    for v in verdicts:
        name = str(v.path.relative_to(root)) if v.path.is_relative_to(root) else str(v.path)
        rows.append((name, v.test_id, f"{v.points if v.passed else 0}/{v.points}", v.label))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
    lines.insert(1, "-" * (sum(widths) + 20))
    got = sum(v.points for v in verdicts if v.passed)
    total = sum(v.points for v in verdicts)
    lines.append(f"总分 / total: {got}/{total}")
    return "\n".join(lines)
