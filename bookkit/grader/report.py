"""The grader's outputs: ``gradebook.csv``, ``summary.csv``, ``feedback/<student>.md``, ``seeds.json``.

Every file is written atomically (a temporary file in the same folder, then ``os.replace``), so an
interrupted run never leaves a half-written file, and the same results give byte-identical files.
Files get the permissions the instructor's umask gives new files (not ``mkstemp``'s 0600). CSV
files start with a UTF-8 byte-order mark (Excel then reads 张三 as 张三), and cells that a spreadsheet
would read as a formula are escaped; every student gets one feedback file whose name is derived from
their id alone (normalised, and disambiguated by a hash where needed), never shared with another's.

Everything a student controls (their id, file names, messages, values) is shown escaped: control
characters and lone surrogates as ``\\xNN`` (``records.printable``), and in Markdown the characters
that would make HTML, a link, an image or a table cell of it (``md_text``); multi-line text goes in
code spans or fenced blocks it cannot close. One student's broken row costs that row, never the file.
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

from bookkit import verdict
from bookkit.grader.protocol import TestResult
from bookkit.grader.records import printable

CSV_BOM = "\ufeff"  # first character of gradebook.csv and summary.csv (read back with utf-8-sig)

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
        """A result read back from the cache, checked field by field (ValueError, KeyError or
        TypeError when anything is off: the unit is graded again, never reported broken)."""
        texts = (data["exercise"], data["file"], data["status"], data["message"])
        if not (all(isinstance(t, str) for t in texts) and data["status"] in ("ok", "missing", "invalid")
                and isinstance(data["tests"], list) and all(isinstance(t, dict) for t in data["tests"])):
            raise ValueError("malformed exercise result")
        return cls(data["exercise"], printable(data["file"]), data["status"], printable(data["message"]),
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


def safe_name(student: str) -> str:
    """A file name for a student id: letters, digits and ``._-@+`` kept, anything else ``_``."""
    name = "".join(c if c.isalnum() or c in "._-@+" else "_"
                   for c in unicodedata.normalize("NFC", printable(student, one_line=True)))
    return name.lstrip(".")[:80] or "_"


_HASHED = re.compile(r"-[0-9a-f]{10}$", re.IGNORECASE)


def _id_bytes(student: str) -> bytes:
    """The bytes of a folder name (undecodable bytes as they were; any other surrogate kept)."""
    try:
        return student.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return student.encode("utf-8", "surrogatepass")


def feedback_names(students: list[str]) -> dict[str, str]:
    """One feedback file name per student id, never shared, the same in every run.

    An id that is a safe file name as it is keeps it; any other (changed by normalisation or
    replacement, equal to another's ignoring case as on macOS, or shaped like a hashed name: a
    folder named ``a_b-0123456789`` must not take the file of the student ``a b``) gets a hash of
    the exact id. Two hashed names differ by their hashes, and no kept name looks hashed.
    """
    base = {s: safe_name(s) for s in students}
    folded: dict[str, int] = {}
    for name in base.values():
        folded[name.casefold()] = folded.get(name.casefold(), 0) + 1
    names = {}
    for student, name in base.items():
        if name != student or folded[name.casefold()] > 1 or _HASHED.search(name):
            digest = hashlib.sha256(_id_bytes(student)).hexdigest()
            name = f"{name}-{digest[:10]}"
        names[student] = name + ".md"
    taken: dict[str, str] = {}
    for student in sorted(names, key=_id_bytes):
        name = names[student]
        while name.casefold() in taken:  # two hashes alike in 40 bits: lengthen, in a fixed order
            digest = hashlib.sha256(_id_bytes(student)).hexdigest()
            name = f"{name[:-3]}{digest[10:14]}.md"
        taken[name.casefold()] = student
        names[student] = name
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
    return printable(" ".join(str(text).split()), one_line=True)[:300]


def _student_rows(student: str, exercises: list[ExerciseResult]) -> list[list]:
    return [[cell(v) for v in (student, ex.exercise, t.id, t.points, t.max_points, t.status,
                               _one_line(t.message))]
            for ex in exercises for t in ex.tests]


def gradebook_csv(results: dict[str, list[ExerciseResult]]) -> str:
    """One row per student × test (without the byte-order mark: ``CSV_BOM`` is added on writing).
    A student whose rows cannot be written gets one ``error`` row saying so; the others are intact."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GRADEBOOK_COLUMNS)
    for student in sorted(results):
        try:
            rows = _student_rows(student, results[student])
        except Exception as exc:  # a grader bug on one student: that student's row says so
            rows = [[cell(student), "", "", 0, 0, "error",
                     f"the grader could not write this student's rows ({type(exc).__name__}); "
                     "please report it"]]
        writer.writerows(rows)
    return buffer.getvalue()


def summary_csv(results: dict[str, list[ExerciseResult]], exercises: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "total", "max", *exercises])
    for student in sorted(results):
        try:
            by_name = {ex.exercise: ex for ex in results[student]}
            points = [sum(t.points for t in by_name[e].tests) if e in by_name else 0 for e in exercises]
            maximum = sum(t.max_points for ex in results[student] for t in ex.tests)
            writer.writerow([cell(student), sum(points), maximum, *points])
        except Exception:  # a grader bug on one student: an empty row, the others intact
            writer.writerow([cell(student), "", "", *["" for _ in exercises]])
    return buffer.getvalue()


# ---------------------------------------------------------------- feedback (Markdown)

_MD_SPECIAL = re.compile(r"[\\`*\[\]<>&|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def md_text(text: object) -> str:
    """Text a student controls as one line of plain Markdown text: no HTML (``<img onerror=…>``
    shows as text), no link or image, no emphasis or table cell break, no control character."""
    text = _one_line(str(text))
    return _MD_SPECIAL.sub(lambda m: "&lt;" if m.group() == "<" else "&gt;" if m.group() == ">"
                           else "&amp;" if m.group() == "&" else "\\" + m.group(), text)


def _code(text: str) -> str:
    """Inline code that the text cannot break out of (a fence longer than any run of backticks)."""
    text = str(text).replace("\r", " ").replace("\n", " ⏎ ")
    text = printable(text, one_line=True).replace("|", "¦")[:400]
    longest = max(map(len, re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def _block(text: str, indent: str = "  ") -> list[str]:
    """A fenced code block (plain text, kept as it is, line breaks and carets included)."""
    lines = printable(str(text)).replace("\t", "    ").splitlines()[:20] or [""]
    lines = [line[:300] for line in lines]
    longest = max((len(m) for line in lines for m in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [indent + fence + "text"] + [indent + line for line in lines] + [indent + fence]


def _fix_hint(t: TestResult) -> str:
    """One short line on what to fix in a test, from what the feedback may show (never the message
    of the run with hidden tests, which values from a hidden test could reach)."""
    failed = [line for line in t.visible if not line.ok]
    if t.status in ("timeout", "crashed"):
        return _one_line(t.message)
    if t.error:
        first = t.error.splitlines()[0]
        return verdict.STUB_MESSAGE if first.startswith("NotImplementedError") else _code(first)
    if failed:
        line = failed[0]
        why = f": {md_text(line.why)}" if line.why else ""
        return f"{md_text(line.what_zh)} / {md_text(line.what_en)}{why}"
    if t.message == verdict.STUB_MESSAGE:
        return verdict.STUB_MESSAGE
    if t.hidden == "failed":
        return "隐藏测试未通过 / the hidden tests failed"
    return "见下文 / see the details below"


def feedback_md(student: str, exercises: list[ExerciseResult], strays: list[tuple[str, str]]) -> str:
    """Bilingual feedback: the score table and what to fix first, then details of what failed
    (expected vs got for visible checks only, the verdict alone for hidden tests)."""
    total = sum(t.points for ex in exercises for t in ex.tests)
    maximum = sum(t.max_points for ex in exercises for t in ex.tests)
    out = [f"# 成绩反馈 / Grading feedback: {md_text(student)}", "",
           f"**总分 / total: {total} / {maximum}**", "",
           "| 练习 / exercise | 分数 / points | 结果 / result |", "| --- | --- | --- |"]
    todo: list[str] = []
    for ex in exercises:
        got = sum(t.points for t in ex.tests)
        open_ = [t for t in ex.tests if t.status != "passed"]
        if ex.status != "ok":
            verdict = _LABELS.get(ex.status, ex.status)
            todo.append(f"- {ex.exercise}: {verdict}")
        elif not open_:
            verdict = "✓ 全部通过 / all passed"
        else:
            verdict = f"✗ {len(open_)} 项未通过 / {len(open_)} to fix"
            todo += [f"- {ex.exercise} · {t.id}: {_LABELS.get(t.status, t.status)} — {_fix_hint(t)}"
                     for t in open_]
        out.append(f"| {ex.exercise} | {got} / {sum(t.max_points for t in ex.tests)} | {verdict} |")
    out += ["", "## 需要修改 / What to fix", ""]
    out += (todo or ["全部通过，没有需要修改的。/ Everything passed: nothing to fix."]) + [""]
    if strays:
        out += ["## 未评分的文件 / Files not graded", "",
                "这些文件的名字不对，没有评分。/ These files have unexpected names and were not graded.", ""]
        for name, close in strays:
            hint = f" → 应为 / should be `{close}`?" if close else ""
            out.append(f"- {_code(name)}{hint}")
        out.append("")
    details = [ex for ex in exercises if ex.status != "ok" or any(t.status != "passed" for t in ex.tests)]
    if details:
        out += ["## 详情 / Details", ""]
    for ex in details:
        got = sum(t.points for t in ex.tests)
        out += [f"### {ex.exercise} ({got} / {sum(t.max_points for t in ex.tests)})", ""]
        if ex.status == "missing":
            out += [f"未找到 `{ex.exercise}.md` 或 `.ipynb`。/ "
                    f"No `{ex.exercise}.md` or `.ipynb` was found.", ""]
            continue
        if ex.status == "invalid":
            out += [f"文件 {_code(ex.file)} 无法评分 / The file {_code(ex.file)} could not be graded: "
                    f"{md_text(ex.message)}", ""]
            continue
        if ex.status == "error":
            out += [f"评分程序出错 / The grader failed on this file: {md_text(ex.message)}", ""]
            continue
        out += [f"评分文件 / graded file: {_code(ex.file)}", ""]
        for t in ex.tests:
            if t.status == "passed":
                continue
            out += [f"#### {t.id}: {_LABELS.get(t.status, t.status)} ({t.points} / {t.max_points})", ""]
            passed = sum(1 for line in t.visible if line.ok)
            if passed:
                out.append(f"- ✓ {passed} 项可见检查通过 / {passed} visible check(s) passed")
            for line in t.visible:
                if not line.ok:
                    out += [f"- ✗ {md_text(line.what_zh)} / {md_text(line.what_en)}",
                            f"  - 期望 / expected: {_code(line.expected)}",
                            f"  - 得到 / got: {_code(line.got)}"]
            if t.error:
                out += ["- 出错 / error:", *_block(t.error)]
            if t.status in ("timeout", "crashed") and not t.visible:
                out.append(f"- {md_text(t.message)}")
            if t.hidden:
                mark = "✓ 通过 / passed" if t.hidden == "passed" else "✗ 未通过 / failed"
                out.append(f"- 隐藏测试 / hidden tests: {mark}")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def fallback_feedback(student: str, exercises: list[ExerciseResult]) -> str:
    """The feedback of a student whose full feedback could not be written: the points alone."""
    try:
        total = sum(t.points for ex in exercises for t in ex.tests)
        maximum = sum(t.max_points for ex in exercises for t in ex.tests)
        score = f"**总分 / total: {total} / {maximum}**"
    except Exception:
        score = ""
    return (f"# 成绩反馈 / Grading feedback: {md_text(student)}\n\n{score}\n\n"
            "详细反馈无法生成，请联系老师。/ The detailed feedback could not be written: please ask "
            "your instructor (the gradebook has your rows).\n")


def seeds_json(seeds: dict[str, dict[str, int]]) -> str:
    return json.dumps(seeds, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
