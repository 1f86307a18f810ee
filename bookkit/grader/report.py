"""The grader's outputs: ``gradebook.csv``, ``summary.csv``, ``feedback/<student>.md``, ``seeds.json``.

Every file is written atomically (a temporary file in the same folder, then ``os.replace``), so an
interrupted run never leaves a half-written file, and the same results give byte-identical files.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from bookkit.grader.protocol import TestResult

GRADEBOOK_COLUMNS = ["student", "exercise", "test", "points", "max_points", "status", "message"]
_LABELS = {
    "passed": "✓ 通过 / passed", "failed": "✗ 未通过 / failed", "error": "✗ 出错 / error",
    "timeout": "⏱ 超时 / timed out", "crashed": "✗ 进程崩溃 / crashed", "missing": "— 未提交 / missing",
    "invalid": "✗ 文件无效 / invalid file",
}


@dataclass
class ExerciseResult:
    """One student's results for one exercise file."""

    exercise: str  # file stem, e.g. 01_tensors_exercises
    file: str  # the graded file's name, or ""
    status: str  # ok | missing | invalid
    message: str
    tests: list[TestResult] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"exercise": self.exercise, "file": self.file, "status": self.status,
                "message": self.message, "tests": [t.to_json() for t in self.tests]}

    @classmethod
    def from_json(cls, data: dict) -> ExerciseResult:
        return cls(data["exercise"], data["file"], data["status"], data["message"],
                   [TestResult.from_json(t) for t in data["tests"]])


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def safe_name(student: str) -> str:
    """A file name for a student id: letters, digits and ``._-@+`` kept, anything else ``_``."""
    name = "".join(c if c.isalnum() or c in "._-@+" else "_" for c in unicodedata.normalize("NFC", student))
    return name.lstrip(".") or "_"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]


def gradebook_csv(results: dict[str, list[ExerciseResult]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GRADEBOOK_COLUMNS)
    for student in sorted(results):
        for ex in results[student]:
            for t in ex.tests:
                writer.writerow([student, ex.exercise, t.id, t.points, t.max_points, t.status,
                                 _one_line(t.message)])
    return buffer.getvalue()


def summary_csv(results: dict[str, list[ExerciseResult]], exercises: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "total", "max", *exercises])
    for student in sorted(results):
        by_name = {ex.exercise: ex for ex in results[student]}
        points = [sum(t.points for t in by_name[e].tests) if e in by_name else 0 for e in exercises]
        maximum = sum(t.max_points for ex in results[student] for t in ex.tests)
        writer.writerow([student, sum(points), maximum, *points])
    return buffer.getvalue()


def _code(text: str) -> str:
    text = text.replace("\n", " ⏎ ")[:400]
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}"


def feedback_md(student: str, exercises: list[ExerciseResult], strays: list[tuple[str, str]]) -> str:
    """Bilingual feedback: per test what was checked; expected vs got for visible checks only."""
    total = sum(t.points for ex in exercises for t in ex.tests)
    maximum = sum(t.max_points for ex in exercises for t in ex.tests)
    out = [f"# 成绩反馈 / Grading feedback: {student}", "",
           f"**总分 / total: {total} / {maximum}**", ""]
    if strays:
        out += ["## 未评分的文件 / Files not graded", "",
                "这些文件的名字不对，没有评分。/ These files have unexpected names and were not graded.", ""]
        for name, close in strays:
            hint = f" → 应为 / should be `{close}`?" if close else ""
            out.append(f"- `{name}`{hint}")
        out.append("")
    for ex in exercises:
        got = sum(t.points for t in ex.tests)
        out += [f"## {ex.exercise} ({got} / {sum(t.max_points for t in ex.tests)})", ""]
        if ex.status == "missing":
            out += [f"未找到 `{ex.exercise}.md` 或 `.ipynb`。/ "
                    f"No `{ex.exercise}.md` or `.ipynb` was found.", ""]
        elif ex.status == "invalid":
            out += [f"文件 `{ex.file}` 无法评分 / The file `{ex.file}` could not be graded: {ex.message}", ""]
        else:
            out += [f"评分文件 / graded file: `{ex.file}`", ""]
        out += ["| 测试 / test | 分数 / points | 结果 / result |", "| --- | --- | --- |"]
        out += [f"| {t.id} | {t.points} / {t.max_points} | {_LABELS.get(t.status, t.status)} |"
                for t in ex.tests]
        out.append("")
        if ex.status != "ok":
            continue
        for t in ex.tests:
            out += [f"### {t.id}: {_LABELS.get(t.status, t.status)}", ""]
            for line in t.visible:
                mark = "✓" if line.ok else "✗"
                out.append(f"- {mark} {line.what_zh} / {line.what_en}")
                if not line.ok:
                    out += [f"  - 期望 / expected: {_code(line.expected)}",
                            f"  - 得到 / got: {_code(line.got)}"]
            if t.error:
                out.append(f"- 出错 / error: {_code(t.error)}")
            if t.status in ("timeout", "crashed") and not t.visible:
                out.append(f"- {t.message}")
            if t.hidden:
                mark = "✓ 通过 / passed" if t.hidden == "passed" else "✗ 未通过 / failed"
                out.append(f"- 隐藏测试 / hidden tests: {mark}")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def seeds_json(seeds: dict[str, dict[str, int]]) -> str:
    return json.dumps(seeds, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
