"""The trusted verdict logic: reference runs, student runs, and the comparison of what they recorded.

Children only report plain data: for each ``check_*`` call of a test, the value the test got (an
array's dtype, shape and bytes; a builtin's canonical text; an exception's class names and
message) and, in a reference run, the expected value. A student's run never even computes the
expected values (``regions.rewrite_tests`` cuts them out). Here, in the parent, each student value
is compared with the expected value and the options (``rtol``, ``match``…) of the REFERENCE
solution's run with the same seeds. A check whose expected value changes between two reference
runs with the same seeds (a memory address, say) is "unstable": its expected value is kept in the
student's run and judged there. Everything a child sends is validated: a malformed value fails its
check, a malformed record makes the run an ``error``; nothing a child sends can raise here.
"""

from __future__ import annotations

import base64
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from bookkit import verdict
from bookkit.grader.records import clean
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
        """A result read back (from the cache): every field checked, every text cleaned, so a
        damaged or hand-edited entry raises (and is graded again) instead of reaching a report."""
        texts = (data["id"], data["status"], data["message"], data["hidden"], data["error"])
        lines = data["visible"]
        if not (all(isinstance(t, str) for t in texts) and type(data["max_points"]) is int
                and data["status"] in STATUSES and data["hidden"] in ("", "passed", "failed")
                and isinstance(lines, list) and all(isinstance(c, dict) for c in lines)):
            raise ValueError("malformed test result")
        visible = []
        for c in lines:
            line = CheckLine(**c)
            if not (all(isinstance(getattr(line, k), str) for k in ("what_zh", "what_en", "expected",
                                                                     "got", "why"))
                    and type(line.ok) is bool):
                raise ValueError("malformed check line")
            visible.append(CheckLine(clean(line.what_zh), clean(line.what_en), line.ok,
                                     clean(line.expected), clean(line.got), clean(line.why)))
        return cls(clean(data["id"]), data["max_points"], data["status"], clean(data["message"]),
                   visible, data["hidden"], clean(data["error"]))


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
        if isinstance(data, (list, tuple)) and len(data) == 4 and data[0] == "v":
            _, pytype, py, arr = data
            if not ((pytype is None and py is None) or (isinstance(pytype, str) and isinstance(py, str))):
                return Value(opaque="malformed")
            return Value(pytype, py, _array(arr) if arr is not None else None)
        if isinstance(data, (list, tuple)) and len(data) == 2 and data[0] == "opaque":
            return Value(opaque=str(data[1])[:100])
    except (ValueError, TypeError, OverflowError, MemoryError):
        pass
    return Value(opaque="malformed")


def _array(data: object) -> np.ndarray:
    if not (isinstance(data, (list, tuple)) and len(data) == 3):
        raise ValueError("malformed array")
    dtype_text, shape, raw = data
    if isinstance(raw, str):  # the child's encoding: base64 text (binascii.Error is a ValueError)
        raw = base64.b64decode(raw, validate=True)
    if isinstance(shape, list):
        shape = tuple(shape)
    if not (isinstance(dtype_text, str) and len(dtype_text) < 16 and isinstance(shape, tuple)
            and isinstance(raw, bytes)):
        raise ValueError("malformed array")
    dtype = np.dtype(dtype_text)
    if dtype.kind not in _KINDS or dtype.fields is not None or len(shape) > 32 or \
            not all(type(n) is int and 0 <= n < 1 << 40 for n in shape):
        raise ValueError("malformed array")
    if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(raw):
        raise ValueError("array size mismatch")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def show(value: Value, indent: int = 0) -> str:
    """A short text of a value for feedback (expected / got): a tuple or list as the student wrote
    it (not as the array it was compared as), an array with its shape and dtype, continuation lines
    indented by ``indent`` so they line up under the first."""
    if value.opaque:
        return f"<{value.opaque}>"
    if value.pytype in ("tuple", "list") and value.py:
        return _readable(value.py)[:300]
    if value.arr is not None:
        a = value.arr
        text = np.array2string(a, threshold=20, edgeitems=3, precision=6, max_line_width=100)
        text = text.replace("\n", "\n" + " " * indent)
        return f"{text}  (shape={a.shape}, dtype={a.dtype})" if a.ndim else text
    return _readable(value.py or "?")[:300]


_HEX_FLOAT = re.compile(r"-?0x[0-9a-f]+(?:\.[0-9a-f]*)?p[+-]?\d+")


def _readable(canon: str) -> str:
    """A canonical text with its floats as Python prints them: the exact hex form (``0x1.e666p-1``)
    is for comparing, ``0.95`` for a student to read."""
    return _HEX_FLOAT.sub(lambda m: repr(float.fromhex(m.group())), canon)


def _listish(data: object, n: int | None = None) -> bool:
    return isinstance(data, (list, tuple)) and (n is None or len(data) == n)


def compare(kind: str, got: object, exp: object, opts: object) -> tuple[bool, str]:
    """Judge one check from plain data only: (ok, reason). The data a child sent is validated
    here; the verdict itself is ``bookkit.verdict``'s, the judge the student's check cells use."""
    opts = list(opts) if _listish(opts) else []
    if kind == "raises":
        if _listish(got, 1) and got[0] == "returned":
            return verdict.raised(None, "", [])
        if not (_listish(got, 3) and got[0] == "raised" and _listish(got[1])
                and all(isinstance(n, str) for n in got[1]) and isinstance(got[2], str)):
            return False, "malformed"
        if not (_listish(exp, 2) and exp[0] == "names" and _listish(exp[1])):
            return False, "the expected exception could not be read"
        match = opts[0] if opts and isinstance(opts[0], str) else None
        return verdict.raised(list(got[1]), got[2], list(exp[1]), match)
    if kind == "shape":
        if _listish(got, 2) and got[0] == "shape" and _listish(got[1]) and _listish(exp, 2):
            return verdict.same_shape(got[1], exp[1])
        return False, "no shape"
    g = decode(got)
    if g.opaque:
        return False, f"the value could not be read ({g.opaque})"
    if kind == "true":
        return verdict.true(g.arr, g.py == "True" or None)
    e = decode(exp)
    if e.opaque:
        return False, "the expected value could not be read"
    if kind == "equal":
        return verdict.equal(g.arr, e.arr, None if g.py is None else (g.pytype, g.py),
                             None if e.py is None else (e.pytype, e.py))
    if kind == "close":
        tol = [o if isinstance(o, (int, float)) and not isinstance(o, bool) else d
               for o, d in zip(opts + [1e-5, 1e-8][len(opts):], (1e-5, 1e-8), strict=False)]
        return verdict.close(g.arr, e.arr, float(tol[0]), float(tol[1]))
    return False, f"unknown check {kind!r}"


# ---------------------------------------------------------------- reference runs


@dataclass
class Reference:
    """The reference run(s) of one exercise: per test cell, its checks; unstable (cell, site)s."""

    ends: dict[int, dict]
    unstable: set[tuple[int, int]] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # reference failures, for the instructor
    durations: dict[int, float] = field(default_factory=dict)  # cell → the longest its runs took


def checks_of(end: object) -> list[list]:
    """The checks of an end record (validated by ``sandbox._parse``), or []."""
    checks = end.get("checks") if isinstance(end, dict) else None
    return [c for c in checks if _listish(c, 8)] if isinstance(checks, list) else []


def make_reference(program: Program, runs: list[ChildResult]) -> Reference:
    """Combine reference runs with the same seeds: the first is authoritative, differences = unstable."""
    first = runs[0]
    ref = Reference(first.ends)
    for run in runs:
        for cell, took in run.durations.items():
            ref.durations[cell] = max(took, ref.durations.get(cell, 0.0))
    for test in program.tests:
        end = first.ends.get(test.cell)
        if end is None:
            ref.problems.append(f"{test.id}: the reference solution did not finish "
                                f"({first.stopped.get(test.cell, first.outcome)}; {first.detail[:300]})")
            continue
        if end.get("error"):
            name, message = end["error"][:2]
            ref.problems.append(f"{test.id}: the reference solution raises {name}: {message}")
        if end.get("violation") or end.get("tamper"):
            ref.problems.append(f"{test.id}: {end.get('violation') or end.get('tamper')}")
        for position, check in enumerate(checks_of(end)):
            kind, site, _, _, _, got, exp, opts = check
            ok, why = compare(kind, got, exp, opts)
            if not ok:
                ref.problems.append(f"{test.id}: the reference solution fails check {position + 1} ({why})")
            for other in runs[1:]:
                other_checks = checks_of(other.ends.get(test.cell))
                if position >= len(other_checks) or other_checks[position][6] != exp:
                    ref.unstable.add((test.cell, site))
    return ref


def same_results(a: ChildResult, b: ChildResult, program: Program,
                 ignore: set[tuple[int, int]] = frozenset(), values: int = 5) -> bool:
    """Whether two runs recorded the same checks and errors in every test cell.

    ``ignore``: (cell, site) of unstable checks, which differ between any two runs anyway;
    ``values``: the index of the compared value in each check (5: got, 6: expected).
    """
    return all(same_cell(a, b, t.cell, ignore, values) for t in program.tests)


def same_cell(a: ChildResult, b: ChildResult, cell: int, ignore: set[tuple[int, int]] = frozenset(),
              values: int = 5) -> bool:
    """``same_results`` for one test cell."""
    def kept(run: ChildResult) -> list:
        return [c[:5] + [c[values] if (cell, c[1]) not in ignore else None]
                for c in checks_of(run.ends.get(cell))]

    end_a, end_b = a.ends.get(cell), b.ends.get(cell)
    return (end_a is None) == (end_b is None) and kept(a) == kept(b) and \
        (end_a or {}).get("error") == (end_b or {}).get("error")


# ---------------------------------------------------------------- verdicts


def judge(program: Program, ref: Reference, run: ChildResult, hidden: bool = True,
          view: ChildResult | None = None, cells: list[dict] | None = None,
          own_work: bool = True, settled: frozenset[int] = frozenset()) -> list[TestResult]:
    """The TestResult of every test cell of a student's run; never raises.

    ``run`` decides every status. ``view``, a run of the same code with only the visible parts of
    the tests (a process that never held a hidden test), supplies what the feedback shows of the
    visible checks (expected vs got, error messages): so nothing of a hidden test can reach a
    student's feedback through values their code returns. ``cells``: the job cells that ran (the
    student's code in place), so that a syntax error is shown as such, found by compiling the
    cell here rather than from what the child says. ``own_work=False``: each row on its own
    checks only (the integration row is not failed for another row's sake). ``settled``: the
    test cells ``view`` did not run because they passed; the feedback shows nothing of them but
    the pass.
    """
    results = []
    for test in program.tests:
        try:
            result = _judge_test(program, ref, run, test, hidden, cells)
            if view is not None and test.cell in settled:
                result.visible, result.error = [], ""
            elif view is not None:
                shown = _judge_test(program, ref, view, test, False, cells)
                result.visible, result.error = shown.visible, shown.error
        except Exception as exc:  # a grader bug must cost one test, never the class
            result = TestResult(test.id, test.points, "error",
                                f"the grader could not judge this test ({type(exc).__name__}: {exc})")
        results.append(result)
    if own_work:
        _integration_needs_own_work(results)
    return results


def _integration_needs_own_work(results: list[TestResult]) -> None:
    """An integration row counts only pieces that are the student's own work: when another test
    of the exercise failed because its piece is a stub, calls mytorch's own implementation or
    takes a route its exercise rules out, the integration row fails too."""
    others = [r.id for r in results if r.id != "integration"
              and verdict.not_own_work(r.status, r.message, r.error)]
    for r in results:
        if r.id == "integration" and others:
            # passed or not, the row's own error (a RecursionError from a piece that calls the
            # library, which calls the piece) is not what the student should look at first
            if r.status == "passed":
                r.status = "failed"
            r.message = (f"只计算你自己写的零件，先把 {', '.join(others)} 改成你自己的实现 / the integration "
                         f"row counts only pieces that are your own work: first make {', '.join(others)} "
                         "your own (see their rows)")


def _judge_test(program: Program, ref: Reference, run: ChildResult, test, hidden: bool,
                cells: list[dict] | None = None) -> TestResult:
    result = TestResult(test.id, test.points, "passed")
    if run.malformed:
        result.status = "error"
        result.message = f"your code broke the grader's protocol ({run.malformed})"
        return result
    stopped = run.stopped
    end = run.ends.get(test.cell)
    earlier = [i for i in stopped if i < test.cell and program.cells[i]["kind"] == "code"]
    if end is None:
        outcome = stopped.get(test.cell, run.outcome if run.outcome != "done" else "crashed")
        result.status = outcome if outcome in STATUSES else "crashed"
        result.message = ("the test did not finish in time" if result.status == "timeout"
                          else run.detail if run.unstarted else "the process died during the test")
        return result
    _judge_cell(result, checks_of(ref.ends.get(test.cell)), checks_of(end), end, ref, test.cell, hidden)
    code_errors = sorted(i for i, e in run.ends.items() if 0 <= i < min(len(program.cells), test.cell)
                         and program.cells[i]["kind"] == "code" and e.get("error"))
    if result.status == "error" and earlier:
        what = "never finished" if stopped[earlier[-1]] == "timeout" else "crashed the process"
        result.message += f" (your code in cell {program.cell_number(earlier[-1])} {what})"
    elif result.status == "error" and code_errors:
        index = code_errors[0]
        name, message = (list(run.ends[index]["error"]) + ["", ""])[:2]
        syntax = syntax_error(cells[index].get("source", "") if cells and index < len(cells) else None,
                              program.cell_number(index), str(name), str(message))
        if syntax:  # what follows (a NameError of the function never defined) is only its echo
            result.message, result.error = syntax
        else:
            result.message += (f" (your code in cell {program.cell_number(index)} raised {name}: "
                               f"{str(message)[:120]})")
    return result


SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")


def syntax_error(source: str | None, number: int, name: str, message: str) -> tuple[str, str] | None:
    """(one line, the line with a caret) for a code cell whose error is a syntax error, or None.

    The cell is compiled here, in the parent (compiling runs nothing), so line, column and text
    come from the student's code, not from the child; the cell is named by the number the student
    sees (``Program.cell_number``), and its line numbers are those of the student's cell.
    """
    if name not in SYNTAX_ERRORS:
        return None
    exc: SyntaxError | None = None
    if source is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(source, f"<cell {number}>", "exec", dont_inherit=True)
        except SyntaxError as found:
            exc = found
        except (ValueError, RecursionError, MemoryError, OverflowError):
            pass
    if exc is None:  # only the child's text: name its cell the student's way
        text = re.sub(r"\(<cell-\d+>, line (\d+)\)", lambda m: f"(cell {number}, line {m[1]})", message)
        return f"{name}: {clean(text)[:200]}", f"{name}: {clean(text)[:300]}"
    kind = type(exc).__name__
    line = f"{kind}: {clean(str(exc.msg))[:200]} (cell {number}, line {exc.lineno})"
    block = [line]
    text = (exc.text or "").rstrip("\n")
    if text.strip():
        shown = text.lstrip()
        column = max((exc.offset or 1) - 1 - (len(text) - len(shown)), 0)
        width = 1
        if exc.end_lineno == exc.lineno and exc.end_offset and exc.end_offset > (exc.offset or 0):
            width = exc.end_offset - (exc.offset or 0)
        block += ["    " + clean(shown)[:300], "    " + " " * min(column, 300) + "^" * min(width, 80)]
    return line, "\n".join(block)


def _judge_cell(result: TestResult, ref_checks: list[list], checks: list[list], end: dict,
                ref: Reference, cell: int, hidden: bool) -> None:
    """Fill ``result`` from the student's checks of one test cell, in order."""
    hidden_ok: bool | None = None
    failure = ""
    for position, ref_check in enumerate(ref_checks):
        kind, site, part, what_zh, what_en, _, ref_exp, opts = ref_check
        if part == "hidden" and not hidden:
            continue
        if position >= len(checks):
            break
        s_kind, s_site, s_part, _, _, got, s_exp, _ = checks[position]
        unstable = (cell, site) in ref.unstable
        expected = s_exp if unstable else ref_exp
        if (s_kind, s_site, s_part) != (kind, site, part):
            ok, why = False, "the test took another path (its checks differ from the reference's)"
        else:
            ok, why = compare(kind, got, expected, opts)
        if part == "hidden":
            hidden_ok = ok if hidden_ok is None else hidden_ok and ok
            if not ok and not failure:
                failure = f"hidden check {position + 1} failed: {why}"
        else:
            line = CheckLine(what_zh, what_en, ok)
            if not ok:
                line = CheckLine(what_zh, what_en, False, _show_raw(kind, expected),
                                 _show_raw(kind, got), why)
                if not failure:
                    failure = f"check {position + 1} ({what_en}) failed: {why}"
            result.visible.append(line)
    wanted = [c for c in ref_checks if hidden or c[2] != "hidden"]
    tamper, violation, error = end.get("tamper"), end.get("violation"), end.get("error")
    complete = len(checks) == len(wanted) and not error
    if hidden and any(c[2] == "hidden" for c in ref_checks):
        result.hidden = "passed" if hidden_ok and complete and not violation else "failed"
    if violation:
        result.status, result.message = "failed", str(violation)[:300]
    elif failure:
        result.status, result.message = "failed", failure
    elif tamper:
        result.status, result.message = "failed", f"changed the test environment ({tamper})"
    elif error:
        name, message = (list(error) + ["", ""])[:2]
        if name == "NotImplementedError":
            result.status, result.message = "failed", verdict.STUB_MESSAGE
        else:
            result.status, result.message = "error", f"{name}: {str(message)[:200]}"
    elif len(checks) != len(wanted):
        result.status = "failed"
        result.message = f"{len(checks)} checks ran, the reference runs {len(wanted)}"
    if error and end.get("part") != "hidden":  # the student may see errors of visible tests
        name, message = (list(error) + ["", ""])[:2]
        result.error = f"{name}: {str(message)[:300]}"


def _show_raw(kind: str, data: object) -> str:
    if kind == "raises":
        if _listish(data, 2) and data[0] == "names" and _listish(data[1]):
            return " / ".join(map(str, data[1]))
        if _listish(data, 3) and data[0] == "raised" and _listish(data[1]) and data[1]:
            return f"{data[1][0]}: {str(data[2])[:200]}"
        return "(正常返回 / returned normally)"
    if kind == "shape":
        return str(tuple(data[1])) if _listish(data, 2) and _listish(data[1]) else "?"
    return show(decode(data), indent=8)
