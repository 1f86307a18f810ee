"""Window functions and histograms against the torch oracle."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import Case, check, check_raises, randn

import mytorch

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
DTYPES = ["float32", "float64", "float16"]


def _window_cases():
    for name in WINDOWS:
        for n in (0, 1, 2, 5, 16):
            for periodic in (True, False):
                for dt in DTYPES:
                    yield Case(f"{name}-{n}-{'periodic' if periodic else 'symmetric'}-{dt}",
                               lambda t, name=name, n=n, p=periodic, dt=dt:
                               getattr(t, name)(n, p, dtype=getattr(t, dt)),
                               [], grad=False, atol=1e-6, rtol=0)


@pytest.mark.parametrize("case", list(_window_cases()), ids=str)
def test_windows_match_torch(case):
    check(case)


WINDOW_ARGS = [
    Case("hann-default", lambda t: t.hann_window(8), [], grad=False, atol=1e-6),
    Case("hamming-alpha-beta", lambda t: t.hamming_window(7, False, 0.5, 0.5), [], grad=False, atol=1e-6),
    Case("hamming-kw", lambda t: t.hamming_window(6, periodic=True, alpha=0.6, beta=0.3), [], grad=False,
         atol=1e-6),
    Case("kaiser-beta", lambda t: t.kaiser_window(9, False, 5.0), [], grad=False, atol=1e-6),
    Case("kaiser-kw", lambda t: t.kaiser_window(10, True, 3.0, dtype=t.float64), [], grad=False,
         atol=1e-12),
    Case("blackman-long", lambda t: t.blackman_window(101), [], grad=False, atol=1e-6),
    Case("bartlett-odd", lambda t: t.bartlett_window(7, periodic=False), [], grad=False, atol=1e-6),
]


@pytest.mark.parametrize("case", WINDOW_ARGS, ids=str)
def test_window_arguments(case):
    check(case)


def test_window_requires_grad_and_default_dtype():
    w = mytorch.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.dtype is mytorch.float32
    mytorch.set_default_dtype(mytorch.float64)
    try:
        assert mytorch.blackman_window(3).dtype is mytorch.float64
    finally:
        mytorch.set_default_dtype(mytorch.float32)


WINDOW_ERRORS = [
    ("negative", lambda t: t.hann_window(-1), "requires non-negative window_length"),
    ("int-dtype", lambda t: t.hamming_window(4, dtype=t.long), "expects floating point dtypes"),
    ("float-length", lambda t: t.kaiser_window(4.0), "must be int, not float"),
    ("bartlett-negative", lambda t: t.bartlett_window(-3), "window_length=-3"),
]


@pytest.mark.parametrize("name,fn,msg", WINDOW_ERRORS, ids=[e[0] for e in WINDOW_ERRORS])
def test_window_errors(name, fn, msg):
    assert msg in str(check_raises(fn))


# ------------------------------------------------------------------------ histc
def arr(*xs, dtype=np.float32):
    return np.array(xs, dtype=dtype)


HISTC = [
    Case("basic", lambda t, x: t.histc(x, bins=4, min=0, max=3), [arr(1, 2, 1)]),
    Case("defaults", lambda t, x: t.histc(x), [randn(1000)]),
    Case("data-range", lambda t, x: x.histc(7), [randn(3, 50)]),
    Case("edges", lambda t, x: t.histc(x, bins=4, min=0, max=4), [arr(0, 1, 2, 3, 4)]),
    Case("outside-ignored", lambda t, x: t.histc(x, 4, 0, 4), [arr(-1, 1, 2, 3, 5)]),
    Case("constant", lambda t, x: t.histc(x, bins=4), [arr(2, 2, 2)]),
    Case("min-eq-max-uses-data", lambda t, x: t.histc(x, bins=4, min=2, max=2), [arr(1, 2, 3)]),
    Case("empty", lambda t, x: t.histc(x, bins=4), [arr()]),
    Case("nan-ignored-with-range", lambda t, x: t.histc(x, bins=4, min=0, max=4), [arr(1, np.nan, 3)]),
    Case("float64", lambda t, x: t.histc(x, bins=5, min=-2, max=2), [randn(200, dtype=np.float64)]),
    Case("float16", lambda t, x: t.histc(x, bins=3), [randn(40).astype(np.float16)]),
    Case("tiny-bins", lambda t, x: t.histc(x, bins=1000, min=-0.5, max=0.5), [randn(5000)]),
]


@pytest.mark.parametrize("case", HISTC, ids=str)
def test_histc(case):
    check(Case(case.name, case.fn, case.inputs, grad=False))


def test_histc_is_not_differentiable_like_torch():
    x = mytorch.tensor([1.0, 2.0], requires_grad=True)
    assert not mytorch.histc(x, bins=3).requires_grad


HISTC_ERRORS = [
    ("int", lambda t, x: t.histc(x, bins=4, min=0, max=3), [arr(1, 2, dtype=np.int64)],
     "not implemented for 'Long'"),
    ("bool", lambda t, x: t.histc(x, bins=4, min=0, max=3), [arr(1, 0, dtype=bool)],
     "not implemented for 'Bool'"),
    ("max-lt-min", lambda t, x: t.histc(x, bins=4, min=3, max=0), [arr(1, 2)], "max must be larger than min"),
    ("bins-0", lambda t, x: t.histc(x, bins=0), [arr(1, 2)], "bins must be > 0"),
    ("nan-range", lambda t, x: t.histc(x, bins=4), [arr(1, np.nan)], "is not finite"),
    ("inf-range", lambda t, x: t.histc(x, bins=4, min=0, max=float("inf")), [arr(1, 2)],
     "[0, inf] is not finite"),
    ("float-bins", lambda t, x: t.histc(x, bins=4.0), [arr(1, 2)], "must be int"),
]


@pytest.mark.parametrize("name,fn,inputs,msg", HISTC_ERRORS, ids=[e[0] for e in HISTC_ERRORS])
def test_histc_errors(name, fn, inputs, msg):
    assert msg in str(check_raises(fn, *inputs))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-100, 100, width=32), max_size=60), st.integers(1, 30),
       st.floats(-50, 0, width=32), st.floats(0.5, 60, width=32))
def test_histc_property_matches_torch(values, bins, lo, width):
    check(Case("prop", lambda t, x: t.histc(x, bins, lo, lo + width), [np.array(values, np.float32)],
               grad=False))


# ------------------------------------------------------------------------ histogram
HISTOGRAM = [
    Case("bins-int", lambda t, x: t.histogram(x, 4), [arr(-1, 1, 2, 3, 5)]),
    Case("range", lambda t, x: t.histogram(x, 4, range=(0.0, 4.0)), [arr(-1, 1, 2, 3, 5)]),
    Case("edges", lambda t, x, e: t.histogram(x, e), [arr(-1, 1, 2, 3, 5), arr(0, 1, 3, 6)]),
    Case("weight-density", lambda t, x, w: t.histogram(x, 4, weight=w, density=True),
         [arr(-1, 1, 2, 3, 5), arr(1, 2, 3, 4, 5)]),
]


@pytest.mark.parametrize("case", HISTOGRAM, ids=str)
def test_histogram(case):
    check(Case(case.name, case.fn, case.inputs, grad=False))
