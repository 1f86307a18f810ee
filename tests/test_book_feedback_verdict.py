"""One judge (issue 22): a check cell and the grader reach the same verdict on the same values."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from bookkit import feedback
from bookkit.grader.protocol import compare


def _enc(value: object) -> list:
    """A value as the grader's child records it (builtins by canonical text, arrays by bytes)."""
    canon = repr(value) if type(value) in (int, bool, str, type(None)) else None
    array = np.asarray(value) if not isinstance(value, (str, type(None))) else None
    if isinstance(value, str):
        array = np.asarray(value)
    arr = None if array is None else [array.dtype.str, list(array.shape),
                                      base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()]
    return ["v", type(value).__name__ if canon is not None else None, canon, arr]


def _cell(check, *args) -> bool:
    try:
        check(*args)
        return True
    except AssertionError:
        return False


PAIRS = [
    ([1.0, 2.0], [1.0, 2.0]), ([1.0, np.nan], [1.0, np.nan]), ([1, 2], [1, 2, 3]), ([[1, 2]], [1, 2]),
    ([1, 2], [1.0, 2.0]), ([True, False], [1, 0]), (["a"], ["a"]), (["1"], [1]), (3, 3), (3, 4),
    ("x", "x"), ("x", "y"), (None, None), ([1.0, 2.0], [1.0, 2.0 + 1e-7]),
]


@pytest.mark.parametrize("got, expected", PAIRS)
def test_check_equal_and_the_grader_agree(got: object, expected: object) -> None:
    assert _cell(feedback.check_equal, got, expected) == compare("equal", _enc(got), _enc(expected), [])[0]


@pytest.mark.parametrize("got, expected", PAIRS)
def test_check_close_and_the_grader_agree(got: object, expected: object) -> None:
    assert _cell(feedback.check_close, got, expected) == \
        compare("close", _enc(got), _enc(expected), [1e-5, 1e-8])[0]


@pytest.mark.parametrize("condition", [True, False, 1, 0, [True], [True, True], np.float64(0.5)])
def test_check_true_and_the_grader_agree(condition: object) -> None:
    assert _cell(feedback.check_true, condition, "c", "c") == compare("true", _enc(condition), None, [])[0]


@pytest.mark.parametrize("raised, expected, match", [
    (ValueError("bad size"), ValueError, None), (ValueError("bad size"), ValueError, "size"),
    (ValueError("bad size"), ValueError, "shape"), (KeyError("k"), LookupError, None),
    (TypeError("t"), ValueError, None), (None, ValueError, None)])
def test_check_raises_and_the_grader_agree(raised, expected, match) -> None:
    def fn():
        if raised is not None:
            raise raised

    got = ["returned"] if raised is None else \
        ["raised", [c.__name__ for c in type(raised).__mro__], str(raised)]
    grader = compare("raises", got, ["names", [expected.__name__]], [match])[0]
    assert _cell(feedback.check_raises, fn, expected, "r", "r", match) == grader
