"""The trusted verdict logic: reference runs, student runs, and the comparison of what they recorded.

Every test cell runs twice: with the reference solution and with the student's regions, each in a
sandboxed child (``sandbox.py``). Children only report the plain values each ``check_*`` call was
given; the parent compares them here, itself: the student's ``got`` against the REFERENCE run's
expected value (the student's own run could have been tampered with). A check whose expected value
changes between two reference runs with the same seed (a memory address, say) is "unstable": for
it, the student's run is compared with its own expected value.
"""

from __future__ import annotations

import base64

import re
from dataclasses import dataclass, field

import numpy as np

from bookkit.grader.regions import Program
from bookkit.grader.sandbox import ChildResult

STATUSES = ("passed", "failed", "error", "timeout", "crashed", "missing", "invalid")
_KINDS = "biufcUS"


@dataclass(frozen=True)
class CheckLine:
    """One visible check, for the student's feedback."""

    what_zh: str
    what_en: str
    ok: bool
    expected: str = ""
    got: str = ""
    why: str = ""


@dataclass
class TestResult:
    """The verdict of one test cell for one student."""

    id: str
    max_points: int
    status: str
    message: str = ""
    visible: list[CheckLine] = field(default_factory=list)
    hidden: str = ""  # "", "passed" or "failed": only the verdict of the hidden part is shown
    error: str = ""  # exception raised by the visible part, for the feedback

    @property
    def points(self) -> int:
        return self.max_points if self.status == "passed" else 0

    def to_json(self) -> dict:
        return {"id": self.id, "max_points": self.max_points, "status": self.status,
                "message": self.message, "visible": [c.__dict__ for c in self.visible],
                "hidden": self.hidden, "error": self.error}

    @classmethod
    def from_json(cls, data: dict) -> TestResult:
        return cls(data["id"], data["max_points"], data["status"], data["message"],
                   [CheckLine(**c) for c in data["visible"]], data["hidden"], data["error"])


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Value:
    """A decoded value: a builtin's type and canonical text, and/or a plain NumPy array."""

    pytype: str | None = None
    py: str | None = None
    arr: np.ndarray | None = None
    opaque: str = ""


def decode(data: object) -> Value:
    """A Value from a child's encoding; anything malformed becomes an opaque (failing) value."""
    try:
        if isinstance(data, tuple) and data and data[0] == "v" and len(data) == 4:
            _, pytype, py, arr = data
            if pytype is not None and not (isinstance(pytype, str) and isinstance(py, str)):
                return Value(opaque="malformed")
            return Value(pytype, py, _array(arr) if arr is not None else None)
        if isinstance(data, tuple) and data and data[0] == "opaque":
            return Value(opaque=str(data[1])[:100] if len(data) > 1 else "?")
    except (ValueError, TypeError):
        pass
    return Value(opaque="malformed")


def _array(data: object) -> np.ndarray:
    dtype_text, shape, raw = data  # type: ignore[misc]
    if isinstance(raw, str):  # the child's encoding: base64 text (binascii.Error is a ValueError)
        raw = base64.b64decode(raw, validate=True)
    if not (isinstance(dtype_text, str) and isinstance(shape, tuple) and isinstance(raw, bytes)):
        raise ValueError("malformed array")
    dtype = np.dtype(dtype_text)
    if dtype.kind not in _KINDS or dtype.fields is not None or len(shape) > 32 or \
            not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("malformed array")
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(raw):
        raise ValueError("array size mismatch")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def show(value: Value) -> str:
    """A short text of a value for feedback (expected / got)."""
    if value.opaque:
        return f"<{value.opaque}>"
    if value.arr is not None:
        a = value.arr
        text = np.array2string(a, threshold=20, edgeitems=3, precision=6, max_line_width=100)
        return f"{text}  (shape={a.shape}, dtype={a.dtype})" if a.ndim else text
    return (value.py or "?")[:300]


def _same_kind(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.dtype.kind in "US") == (b.dtype.kind in "US")


def compare(kind: str, got: object, exp: object, opts: tuple) -> tuple[bool, str]:
    """Judge one check like ``bookkit.feedback`` would, from plain data only: (ok, reason)."""
    if kind == "raises":
        if not (isinstance(got, tuple) and got):
            return False, "malformed"
        if got[0] == "returned":
            return False, "nothing was raised"
        if got[0] != "raised" or len(got) != 4:
            return False, "malformed"
        _, caught, name, message = got
        if caught is not True:
            return False, f"raised another exception ({name})"
        match = opts[0] if opts else None
        if isinstance(match, str) and not re.search(match, str(message)[:2000]):
            return False, "error message differs"
        return True, ""
    if kind == "shape":
        if isinstance(got, tuple) and len(got) == 2 and got[0] == "shape":
            return (got == exp, "shape differs")
        return False, "no shape"
    g = decode(got)
    if g.opaque:
        return False, f"the value could not be read ({g.opaque})"
    if kind == "true":
        if g.arr is not None:
            return (g.arr.size == 1 and bool(g.arr.reshape(-1)[0])), "condition is false"
        return g.py == "True", "condition is false"
    e = decode(exp)
    if e.opaque:
        return False, "the expected value could not be read"
    if kind == "equal":
        if g.arr is None or e.arr is None:
            ok = g.py is not None and g.pytype == e.pytype and g.py == e.py
            return ok, "values differ"
        if g.arr.shape != e.arr.shape:
            return False, "shapes differ"
        if not _same_kind(g.arr, e.arr):
            return False, "values differ"
        numeric = g.arr.dtype.kind in "biufc" and e.arr.dtype.kind in "biufc"
        nan = numeric and g.arr.dtype.kind in "fc"
        return bool(np.array_equal(g.arr, e.arr, equal_nan=nan)), "values differ"
    if kind == "close":
        if g.arr is None or e.arr is None or g.arr.dtype.kind in "US" or e.arr.dtype.kind in "US":
            return False, "not numbers"
        a, b = g.arr.astype(float), e.arr.astype(float)
        if a.shape != b.shape:
            return False, "shapes differ"
        rtol, atol = (opts + (1e-5, 1e-8))[:2] if len(opts) < 2 else opts[:2]
        return bool(np.allclose(a, b, rtol=float(rtol), atol=float(atol), equal_nan=True)), \
            "values not close"
    return False, f"unknown check {kind!r}"


# ---------------------------------------------------------------- reference runs


@dataclass
class Reference:
    """The reference run(s) of one exercise: per test cell, its checks; unstable check positions."""

    ends: dict[int, dict]
    unstable: set[tuple[int, int]] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # reference failures, for the instructor


def _checks(end: dict | None) -> list[tuple]:
    checks = end.get("checks") if isinstance(end, dict) else None
    return [c for c in checks if isinstance(c, tuple) and len(c) == 7] if isinstance(checks, list) else []


def make_reference(program: Program, runs: list[ChildResult]) -> Reference:
    """Combine reference runs with the same seed: the first is authoritative, differences = unstable."""
    first = runs[0]
    ref = Reference(first.ends)
    for test in program.tests:
        end = first.ends.get(test.cell)
        if end is None:
            ref.problems.append(f"{test.id}: the reference solution did not finish "
                                f"({first.stopped.get(test.cell, first.outcome)}; {first.detail[:300]})")
            continue
        if end.get("error"):
            name, message = end["error"][:2]
            ref.problems.append(f"{test.id}: the reference solution raises {name}: {message}")
        for position, check in enumerate(_checks(end)):
            kind, _, _, _, got, exp, opts = check
            ok, why = compare(kind, got, exp, opts)
            if not ok:
                ref.problems.append(f"{test.id}: the reference solution fails check {position + 1} ({why})")
            for other in runs[1:]:
                other_checks = _checks(other.ends.get(test.cell))
                if position >= len(other_checks) or other_checks[position][5] != exp:
                    ref.unstable.add((test.cell, position))
    return ref


def same_results(a: ChildResult, b: ChildResult, program: Program,
                 ignore: set[tuple[int, int]] = frozenset()) -> bool:
    """Whether two reference runs recorded the same checks and errors in every test cell.

    ``ignore``: (cell, position) of unstable checks, which differ between any two runs anyway.
    """
    def kept(run: ChildResult, cell: int) -> list:
        return [c for n, c in enumerate(_checks(run.ends.get(cell))) if (cell, n) not in ignore]

    return all(kept(a, t.cell) == kept(b, t.cell) and
               (a.ends.get(t.cell) or {}).get("error") == (b.ends.get(t.cell) or {}).get("error")
               for t in program.tests)


# ---------------------------------------------------------------- verdicts


def judge(program: Program, ref: Reference, run: ChildResult, hidden: bool = True) -> list[TestResult]:
    """The TestResult of every test cell of a student's run."""
    stopped = run.stopped
    code_errors = {i: e for i, e in run.ends.items()
                   if program.cells[i]["kind"] == "code" and e.get("error")}
    results = []
    for test in program.tests:
        result = TestResult(test.id, test.points, "passed")
        end = run.ends.get(test.cell)
        ref_checks = _checks(ref.ends.get(test.cell))
        earlier = [i for i in stopped if i < test.cell and program.cells[i]["kind"] == "code"]
        if end is None:
            outcome = stopped.get(test.cell, run.outcome if run.outcome != "done" else "crashed")
            result.status = outcome if outcome in STATUSES else "crashed"
            result.message = ("the test did not finish in time" if result.status == "timeout"
                              else run.detail if run.unstarted else "the process died during the test")
            results.append(result)
            continue
        _judge_cell(result, ref_checks, _checks(end), end, ref, test.cell, hidden)
        if result.status == "error" and earlier:
            what = "never finished" if stopped[earlier[-1]] == "timeout" else "crashed the process"
            result.message += f" (your code in cell {earlier[-1] + 1} {what})"
        elif result.status == "error" and code_errors:
            first = min(code_errors)
            name, message = code_errors[first][:2]
            result.message += f" (your code in cell {first + 1} raised {name}: {message[:120]})"
        results.append(result)
    return results


def _judge_cell(result: TestResult, ref_checks: list[tuple], checks: list[tuple], end: dict,
                ref: Reference, cell: int, hidden: bool) -> None:
    """Fill ``result`` from the student's checks of one test cell, in order."""
    hidden_ok: bool | None = None
    failure = ""
    for position, ref_check in enumerate(ref_checks):
        kind, part, what_zh, what_en, ref_got, ref_exp, opts = ref_check
        if part == "hidden" and not hidden:
            continue
        if position >= len(checks):
            break
        s_kind, s_part, _, _, got, s_exp, _ = checks[position]
        if s_kind != kind or s_part != part:
            ok, why = False, "the test took another path (its checks differ from the reference's)"
        else:
            unstable = (cell, position) in ref.unstable
            ok, why = compare(kind, got, s_exp if unstable else ref_exp, opts)
        if part == "hidden":
            hidden_ok = ok if hidden_ok is None else hidden_ok and ok
            if not ok and not failure:
                failure = f"hidden check {position + 1} failed: {why}"
        else:
            line = CheckLine(what_zh, what_en, ok)
            if not ok:
                shown_exp = s_exp if (cell, position) in ref.unstable else ref_exp
                line = CheckLine(what_zh, what_en, False, _show_raw(kind, shown_exp),
                                 _show_raw(kind, got), why)
                if not failure:
                    failure = f"check {position + 1} ({what_en}) failed: {why}"
            result.visible.append(line)
    tamper = end.get("tamper")
    error = end.get("error")
    complete = len(checks) == len(ref_checks) and not error
    if any(c[1] == "hidden" for c in ref_checks):
        result.hidden = "passed" if hidden_ok and complete else "failed"
    if failure:
        result.status, result.message = "failed", failure
    elif tamper:
        result.status, result.message = "failed", f"changed the test environment ({tamper})"
    elif error:
        name, message = (list(error) + ["", ""])[:2]
        if name == "NotImplementedError":
            result.status, result.message = "failed", "not done yet (NotImplementedError)"
        else:
            result.status, result.message = "error", f"{name}: {str(message)[:200]}"
    elif len(checks) != len(ref_checks):
        result.status = "failed"
        result.message = f"{len(checks)} checks ran, the reference runs {len(ref_checks)}"
    if error and end.get("part") != "hidden":  # the student may see errors of visible tests
        name, message = (list(error) + ["", ""])[:2]
        result.error = f"{name}: {str(message)[:300]}"


def _show_raw(kind: str, data: object) -> str:
    if kind == "raises":
        if isinstance(data, tuple) and data and data[0] == "names":
            return " / ".join(map(str, data[1]))
        if isinstance(data, tuple) and data and data[0] == "raised":
            return f"{data[2]}: {str(data[3])[:200]}"
        return "(正常返回 / returned normally)"
    if kind == "shape":
        return str(data[1]) if isinstance(data, tuple) and len(data) == 2 else "?"
    return show(decode(data))
