"""inf and nan arrive silently, as in torch: no NumPy RuntimeWarning leaks out of an op.

Each case runs with warnings turned into errors, in both libraries, and the values must agree
(``inf * 0`` is nan, ``1e30 * 1e30`` overflows to inf, ``log(0)`` is -inf, …). The user's own
NumPy code keeps NumPy's warnings: mytorch silences them only around its own array calls.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from nn_oracle import F
from oracle import assert_same

import mytorch

INF, NAN = float("inf"), float("nan")


def t(lib, *values):
    return lib.tensor(list(values))


def big(lib, *shape):
    return lib.full(shape, 3e38)


CASES = {
    "inf_times_0": lambda lib: t(lib, INF, -INF, 1.0) * 0,
    "overflow_mul": lambda lib: t(lib, 1e30, -1e30) * 1e30,
    "overflow_mul_tensors": lambda lib: big(lib, 3) * big(lib, 3),
    "inf_minus_inf": lambda lib: t(lib, INF) - t(lib, INF),
    "inf_plus_minus_inf": lambda lib: t(lib, INF) + t(lib, -INF),
    "scalar_overflows_float32": lambda lib: t(lib, 1.0) - 1e39,
    "add_alpha_overflow": lambda lib: lib.add(big(lib, 2), big(lib, 2), alpha=10),
    "mul_inplace": lambda lib: big(lib, 2).mul_(1e30),
    "add_inplace": lambda lib: big(lib, 2).add_(big(lib, 2)),
    "div_by_zero": lambda lib: t(lib, 0.0, 1.0, -1.0) / 0,
    "log_of_zero": lambda lib: t(lib, 0.0, -1.0).log(),
    "sqrt_negative": lambda lib: t(lib, -1.0).sqrt(),
    "exp_overflow": lambda lib: t(lib, 1000.0).exp(),
    "pow_overflow": lambda lib: big(lib, 2) ** 2,
    "sum_overflow": lambda lib: big(lib, 3).sum(),
    "mean_overflow": lambda lib: big(lib, 3).mean(),
    "cumsum_overflow": lambda lib: big(lib, 3).cumsum(0),
    "prod_overflow": lambda lib: big(lib, 3).prod(),
    "cumprod_overflow": lambda lib: big(lib, 3).cumprod(0),
    "var_overflow": lambda lib: t(lib, 3e38, -3e38).var(),
    "norm_overflow": lambda lib: big(lib, 3).norm(),
    "logsumexp_inf": lambda lib: t(lib, INF, 1.0).logsumexp(0),
    "matmul_overflow": lambda lib: big(lib, 2, 2) @ big(lib, 2, 2),
    "dot_overflow": lambda lib: big(lib, 3).dot(big(lib, 3)),
    "einsum_overflow": lambda lib: lib.einsum("i,i->", big(lib, 3), big(lib, 3)),
    "lerp_overflow": lambda lib: big(lib, 2).lerp(-big(lib, 2), 0.3),
    "addcmul_overflow": lambda lib: big(lib, 2).addcmul(big(lib, 2), big(lib, 2)),
    "hypot_overflow": lambda lib: big(lib, 2).hypot(big(lib, 2)),
    "mul_backward_overflow": lambda lib: _grad(lib, lambda x: (x * 1e30).sum(), big(lib, 2)),
    "conv2d_overflow": lambda lib: F(lib).conv2d(big(lib, 1, 1, 3, 3), big(lib, 1, 1, 2, 2)),
    "conv2d_backward": lambda lib: _grad(lib, lambda x: F(lib).conv2d(
        x, big(lib, 1, 1, 2, 2)).sum(), big(lib, 1, 1, 3, 3)),
    "unfold_backward": lambda lib: _grad(lib, lambda x: (F(lib).unfold(x, 2) * 1e38).sum(),
                                         big(lib, 1, 1, 3, 3)),
    "linear_overflow": lambda lib: F(lib).linear(big(lib, 2, 3), big(lib, 4, 3)),
    "avg_pool_overflow": lambda lib: F(lib).avg_pool2d(big(lib, 1, 1, 4, 4), 2),
    "gelu_tanh_overflow": lambda lib: F(lib).gelu(t(lib, 1e20, -1e20, 50.0), approximate="tanh"),
    "silu_overflow": lambda lib: F(lib).silu(-big(lib, 3)),
    "leaky_relu_overflow": lambda lib: F(lib).leaky_relu(-big(lib, 3), 1e10),
    "layer_norm_overflow": lambda lib: F(lib).layer_norm(t(lib, 1e20, -1e20, 1.0)[None], (3,)),
    "batch_norm_overflow": lambda lib: F(lib).batch_norm(
        t(lib, 1e20, -1e20, 1.0)[:, None], None, None, training=True),
    "mse_overflow": lambda lib: F(lib).mse_loss(big(lib, 3), -big(lib, 3)),
    "softmax_inf": lambda lib: F(lib).softmax(t(lib, INF, 1.0), 0),
}


def _grad(lib, loss_fn, x):
    x = x.clone().requires_grad_()
    loss_fn(x).backward()
    return x.grad


@pytest.mark.parametrize("fn", CASES.values(), ids=CASES.keys())
def test_no_numpy_warning(fn):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = fn(torch)
        mine = fn(mytorch)
    assert_same(mine, ref, atol=0, rtol=1e-6)


def test_user_numpy_code_keeps_its_warnings():
    _ = mytorch.tensor([INF]) * 0  # mytorch's silence must not leak into the caller's NumPy
    with pytest.warns(RuntimeWarning):
        np.array([INF]) * 0
    assert np.geterr()["invalid"] == "warn"
