"""The verdict of one check, judged from plain data: one judge for the student's check cells
(``bookkit.feedback``) and for the grader (``bookkit.grader.protocol``), so that a check passes
in a notebook exactly when it passes in ``make check`` and ``make grade``.

Values reach the judge as NumPy arrays of plain dtypes (numbers, booleans, strings) or, for
Python values that are not arrays, as a ``(type name, canonical value)`` pair compared as a whole.
Each judge returns ``(ok, why)``; ``why`` is the English reason, :func:`reason_zh` its Chinese.
NumPy only: the grader's parent imports this without mytorch.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["equal", "close", "same_shape", "raised", "true", "reason_zh", "RULE_BROKEN", "not_own_work"]

#: What a forbidden call's message says (``bookkit.feedback.forbidden_message``), in English.
RULE_BROKEN = ("your code calls mytorch's own", "this exercise does not allow calling")
NOT_DONE = ("NotImplementedError", "请完成这个练习")

#: The verdict of a test whose piece is still the stub: what is wrong and what to do (make check's
#: table, the gradebook and the feedback all show this one line).
STUB_MESSAGE = ("还没完成：把这道题里的 `raise NotImplementedError(...)` 换成你的代码 / not done yet "
                "(NotImplementedError): replace the exercise's `raise NotImplementedError(...)` with "
                "your code")


def not_own_work(status: str, *texts: str) -> bool:
    """Whether a failed test's messages say its piece is not the student's own work: a stub, a
    call of mytorch's own implementation, a route the exercise rules out. The integration row
    of a chapter gives points only when none of its exercises is like that."""
    text = " ".join(texts)
    return status != "passed" and any(m in text for m in RULE_BROKEN + NOT_DONE)

_ZH = {
    "values differ": "值不相等",
    "shapes differ": "形状不同",
    "values not close": "数值不够接近",
    "not numbers": "不是数值",
    "condition is false": "条件不成立",
    "nothing was raised": "没有抛出异常",
    "raised another exception": "抛出了别的异常",
    "error message differs": "错误信息不符",
    "the expected message pattern is not a valid regex": "期望的错误信息不是合法的正则表达式",
}


def reason_zh(why: str) -> str:
    """The Chinese of a judge's reason (the English itself when there is none)."""
    return _ZH.get(why.split(" (")[0], why)


def equal(got: np.ndarray | None, expected: np.ndarray | None,
          got_value: object = None, expected_value: object = None) -> tuple[bool, str]:
    """Exact equality: arrays by shape, kind (text vs numbers) and values, NaN equal to NaN;
    otherwise the ``(type, value)`` pairs."""
    if got is None or expected is None:
        return got_value is not None and got_value == expected_value, "values differ"
    if got.shape != expected.shape:
        return False, "shapes differ"
    if (got.dtype.kind in "US") != (expected.dtype.kind in "US"):
        return False, "values differ"
    numeric = got.dtype.kind in "biufc" and expected.dtype.kind in "biufc"
    nan = numeric and got.dtype.kind in "fc"
    return bool(np.array_equal(got, expected, equal_nan=nan)), "values differ"


def close(got: np.ndarray | None, expected: np.ndarray | None, rtol: float = 1e-5,
          atol: float = 1e-8) -> tuple[bool, str]:
    """``np.allclose`` with NaN equal to NaN, on arrays of numbers of the same shape."""
    if got is None or expected is None or got.dtype.kind not in "biufc" \
            or expected.dtype.kind not in "biufc":
        return False, "not numbers"
    a, b = got.astype(float), expected.astype(float)
    if a.shape != b.shape:
        return False, "shapes differ"
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)), "values not close"


def max_diff(got: np.ndarray, expected: np.ndarray) -> float:
    """The largest absolute difference of two arrays of numbers of one shape (for feedback)."""
    a, b = got.astype(float), expected.astype(float)
    return float(np.nanmax(np.abs(a - b))) if a.size and a.shape == b.shape else 0.0


def same_shape(got: tuple[int, ...] | list[int], expected: tuple[int, ...] | list[int]) -> tuple[bool, str]:
    return list(got) == list(expected), "shapes differ"


def raised(names: list[str] | None, message: str, expected: list[str],
           match: str | None = None) -> tuple[bool, str]:
    """``names``: the class names of the raised exception's MRO (None: nothing was raised)."""
    if names is None:
        return False, "nothing was raised"
    if not any(n in names for n in expected):
        return False, f"raised another exception ({names[0] if names else '?'})"
    if match is not None:
        try:
            if not re.search(match, message[:2000]):
                return False, "error message differs"
        except re.error:
            return False, "the expected message pattern is not a valid regex"
    return True, ""


def true(condition: np.ndarray | None, value: object = None) -> tuple[bool, str]:
    """A one-element array holding a true value, or the value ``True`` itself."""
    if condition is not None:
        return condition.size == 1 and bool(condition.reshape(-1)[0]), "condition is false"
    return value is True, "condition is false"
