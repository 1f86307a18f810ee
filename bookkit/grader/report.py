"""The grader's outputs: ``gradebook.csv``, ``summary.csv``, ``feedback/<student>.md``, ``seeds.json``.

Every file is written atomically (a temporary file in the same folder, then ``os.replace``), so an
interrupted run never leaves a half-written file, and the same results give byte-identical files.
Files get the permissions the instructor's umask gives new files (not ``mkstemp``'s 0600). CSV
cells that a spreadsheet would read as a formula are escaped; every student gets one feedback file
whose name is derived from their id alone (normalised, and disambiguated by a hash where needed).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import tempfile
import threading
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


_UMASK: list[int] = []
_UMASK_LOCK = threading.Lock()


def file_mode() -> int:
    """The mode a new file gets under the process's umask (read once: ``os.umask`` sets it too)."""
    with _UMASK_LOCK:
        if not _UMASK:
            mask = os.umask(0o022)
            os.umask(mask)
            _UMASK.append(mask)
    return 0o666 & ~_UMASK[0]


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def printable(text: str) -> str:
    """``text`` with undecodable bytes of a file name (surrogate escapes) shown as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def safe_name(student: str) -> str:
    """A file name for a student id: letters, digits and ``._-@+`` kept, anything else ``_``."""
    name = "".join(c if c.isalnum() or c in "._-@+" else "_"
                   for c in unicodedata.normalize("NFC", printable(student)))
    return name.lstrip(".")[:80] or "_"


def feedback_names(students: list[str]) -> dict[str, str]:
    """One feedback file name per student id, never shared, the same in every run.

    An id that is a safe file name as it is keeps it; any other (changed by normalisation or
    replacement, or equal to another's ignoring case, as on macOS) gets a hash of the exact id.
    """
    base = {s: safe_name(s) for s in students}
    folded: dict[str, int] = {}
    for name in base.values():
        folded[name.casefold()] = folded.get(name.casefold(), 0) + 1
    names = {}
    for student, name in base.items():
        if name != student or folded[name.casefold()] > 1:
            digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()
            name = f"{name}-{digest[:10]}"
        names[student] = name + ".md"
    return names


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> object:
    """A CSV cell that no spreadsheet reads as a formula (a leading ``'`` as OWASP advises)."""
    if isinstance(value, str):
        value = printable(value)
        if value.startswith(_FORMULA):
            return "'" + value
    return value


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]


def gradebook_csv(results: dict[str, list[ExerciseResult]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GRADEBOOK_COLUMNS)
    for student in sorted(results):
        for ex in results[student]:
            for t in ex.tests:
                writer.writerow([cell(v) for v in (student, ex.exercise, t.id, t.points, t.max_points,
                                                    t.status, _one_line(t.message))])
    return buffer.getvalue()


def summary_csv(results: dict[str, list[ExerciseResult]], exercises: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "total", "max", *exercises])
    for student in sorted(results):
        by_name = {ex.exercise: ex for ex in results[student]}
        points = [sum(t.points for t in by_name[e].tests) if e in by_name else 0 for e in exercises]
        maximum = sum(t.max_points for ex in results[student] for t in ex.tests)
        writer.writerow([cell(student), sum(points), maximum, *points])
    return buffer.getvalue()


def _code(text: str) -> str:
    """Inline code that the text cannot break out of (a fence longer than any run of backticks)."""
    text = printable(str(text)).replace("\r", " ").replace("\n", " ⏎ ").replace("|", "¦")[:400]
    longest = max(map(len, re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def feedback_md(student: str, exercises: list[ExerciseResult], strays: list[tuple[str, str]]) -> str:
    """Bilingual feedback: per test what was checked; expected vs got for visible checks only."""
    total = sum(t.points for ex in exercises for t in ex.tests)
    maximum = sum(t.max_points for ex in exercises for t in ex.tests)
    out = [f"# 成绩反馈 / Grading feedback: {printable(student)}", "",
           f"**总分 / total: {total} / {maximum}**", ""]
    if strays:
        out += ["## 未评分的文件 / Files not graded", "",
                "这些文件的名字不对，没有评分。/ These files have unexpected names and were not graded.", ""]
        for name, close in strays:
            hint = f" → 应为 / should be `{close}`?" if close else ""
            out.append(f"- {_code(printable(name))}{hint}")
        out.append("")
    for ex in exercises:
        got = sum(t.points for t in ex.tests)
        out += [f"## {ex.exercise} ({got} / {sum(t.max_points for t in ex.tests)})", ""]
        if ex.status == "missing":
            out += [f"未找到 `{ex.exercise}.md` 或 `.ipynb`。/ "
                    f"No `{ex.exercise}.md` or `.ipynb` was found.", ""]
        elif ex.status == "invalid":
            out += [f"文件 {_code(ex.file)} 无法评分 / The file {_code(ex.file)} could not be graded: "
                    f"{_one_line(ex.message)}", ""]
        elif ex.status == "error":
            out += [f"评分程序出错 / The grader failed on this file: {_one_line(ex.message)}", ""]
        else:
            out += [f"评分文件 / graded file: {_code(ex.file)}", ""]
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
                out.append(f"- {_one_line(t.message)}")
            if t.hidden:
                mark = "✓ 通过 / passed" if t.hidden == "passed" else "✗ 未通过 / failed"
                out.append(f"- 隐藏测试 / hidden tests: {mark}")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def seeds_json(seeds: dict[str, dict[str, int]]) -> str:
    return json.dumps(seeds, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
