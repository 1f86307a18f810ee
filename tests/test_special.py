"""Special functions (lgamma, digamma, polygamma, erfinv, xlogy) against torch: values and grads."""
import numpy as np
import pytest
import torch
from oracle import Case, check, check_raises, randn

import mytorch
from mytorch._ops import special


def fns(lib):
    """The module holding the special functions in each library."""
    return special if lib is mytorch else torch


rng = np.random.default_rng(0)
positive = np.abs(randn(4, 5)) + 0.05
anywhere = (randn(3, 7) * 6).astype(np.float32)
anywhere64 = (rng.standard_normal(200) * 30).astype(np.float64)
unit = np.tanh(randn(4, 5)).astype(np.float32)
unit64 = np.concatenate([rng.uniform(-1, 1, 100), 1 - 10.0 ** -rng.uniform(1, 15, 20),
                         10.0 ** -rng.uniform(1, 30, 20)])
ints = np.arange(1, 8, dtype=np.int64)

CASES = [
    Case("lgamma", lambda t, x: fns(t).lgamma(x), [positive]),
    Case("lgamma_method", lambda t, x: x.lgamma(), [anywhere], grad=False),
    Case("lgamma_f64", lambda t, x: fns(t).lgamma(x), [anywhere64], rtol=1e-10),
    Case("lgamma_int", lambda t, x: fns(t).lgamma(x), [ints], grad=False),
    Case("lgamma_large", lambda t, x: fns(t).lgamma(x), [np.array([1e5, 1e10, 1e30, 3e37], np.float32)],
         grad=False),
    Case("digamma", lambda t, x: fns(t).digamma(x), [positive], rtol=1e-5),
    Case("digamma_method", lambda t, x: x.digamma(), [anywhere], grad=False, rtol=1e-4, atol=1e-4),
    Case("digamma_f64", lambda t, x: fns(t).digamma(x), [anywhere64], rtol=1e-9, atol=1e-9),
    Case("polygamma1", lambda t, x: fns(t).polygamma(1, x), [positive], rtol=1e-5),
    Case("polygamma2", lambda t, x: fns(t).polygamma(2, x), [positive], rtol=1e-5),
    Case("polygamma3_method", lambda t, x: x.polygamma(3), [positive], rtol=1e-5, grad=False),
    Case("polygamma0", lambda t, x: fns(t).polygamma(0, x), [positive], rtol=1e-5),
    Case("polygamma_f64", lambda t, x: fns(t).polygamma(2, x), [np.abs(anywhere64) + 0.1],
         rtol=1e-9, grad=False),
    Case("polygamma_negative_x", lambda t, x: fns(t).polygamma(1, x),
         [np.array([-1.5, -0.5, -2.25], np.float64)], rtol=1e-9, grad=False),
    Case("erfinv", lambda t, x: fns(t).erfinv(x), [unit], rtol=1e-5),
    Case("erfinv_method", lambda t, x: x.erfinv(), [unit], grad=False),
    Case("erfinv_f64", lambda t, x: fns(t).erfinv(x), [unit64], rtol=1e-12, grad=False),
    Case("xlogy", lambda t, x, y: fns(t).xlogy(x, y), [randn(3, 4), positive[:3, :4]]),
    Case("xlogy_broadcast", lambda t, x, y: fns(t).xlogy(x, y), [randn(3, 1), positive[:1, :4]]),
    Case("xlogy_scalar_other", lambda t, x: fns(t).xlogy(x, 2.0), [randn(5)]),
    Case("xlogy_scalar_self", lambda t, y: fns(t).xlogy(3.0, y), [positive]),
    Case("xlogy_zero_self", lambda t, x, y: fns(t).xlogy(x, y),
         [np.array([0.0, 0.0, 0.0, 1.0, 2.0], np.float32),
          np.array([0.0, np.inf, np.nan, 0.0, 3.0], np.float32)],
         grad=False),
    Case("xlogy_ints", lambda t, x, y: fns(t).xlogy(x, y), [ints, ints[::-1].copy()], grad=False),
    Case("xlogy_method", lambda t, x, y: x.xlogy(y), [randn(4), positive[0, :4].copy()]),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_special_matches_torch(case):
    check(case)


EDGE = np.array([0.0, -0.0, -1.0, -2.0, 1.0, 2.0, np.inf, -np.inf, np.nan, -1.5, 1e-30], np.float32)


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_poles_and_infinities_like_torch(name):
    m = getattr(special, name)(mytorch.from_numpy(EDGE.copy())).numpy()
    t = getattr(torch, name)(torch.from_numpy(EDGE.copy())).numpy()
    np.testing.assert_allclose(m, t, rtol=1e-5, equal_nan=True)
    assert (np.signbit(m) == np.signbit(t))[np.isinf(t)].all()


def test_erfinv_edges_like_torch():
    y = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.nan, 1e-30], np.float32)
    m = special.erfinv(mytorch.from_numpy(y.copy())).numpy()
    t = torch.erfinv(torch.from_numpy(y.copy())).numpy()
    np.testing.assert_allclose(m, t, rtol=1e-6, equal_nan=True)
    assert np.array_equal(np.signbit(m[:2]), np.signbit(t[:2]))


def test_second_derivative_through_lgamma():
    for lib in (mytorch, torch):
        x = lib.tensor([0.7, 2.5, 4.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(fns(lib).lgamma(x).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        if lib is mytorch:
            mine = (g.detach().numpy(), h.numpy())
        else:
            np.testing.assert_allclose(mine[0], g.detach().numpy(), rtol=1e-10)
            np.testing.assert_allclose(mine[1], h.numpy(), rtol=1e-8)


def test_grad_fn_names():
    x = mytorch.tensor([0.5], requires_grad=True)
    assert special.lgamma(x).grad_fn.name() == "LgammaBackward0"
    assert special.digamma(x).grad_fn.name() == "DigammaBackward0"
    assert special.polygamma(2, x).grad_fn.name() == "PolygammaBackward0"
    assert special.erfinv(x).grad_fn.name() == "ErfinvBackward0"


def test_errors_like_torch():
    check_raises(lambda t, x: fns(t).polygamma(-1, x), positive)
