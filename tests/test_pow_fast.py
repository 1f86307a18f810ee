"""``x ** n`` for a Python number ``n``: small integers and halves computed as products / roots,
as torch's CPU kernel does; checked against torch forward, backward and double backward."""
import numpy as np
import pytest
import torch

import mytorch

EXPONENTS = [2, 3, -1, -2, -3, 0.5, -0.5, 0, 1, 4, 5, 6, 7, 8, -4, -8, 1.7, 2.0, 3.0, -1.0, 9,
             True, 1e-3, float("inf"), float("-inf"), float("nan")]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 1e-20, 1e20, 3e-3, float("inf"), float("-inf"),
           float("nan")]
TOL = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-13}


def _values(dtype):
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):  # 1e20 is inf in float16
        return np.concatenate([np.array(SPECIAL), rng.standard_normal(40) * 3]).astype(dtype)


def _close(m, t, rtol):
    got, want = m.detach().numpy(), t.detach().numpy()
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=0,
                               equal_nan=True)
    # same signs of zero and infinities
    np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("n", EXPONENTS)
def test_pow_scalar_forward_matches_torch(dtype, n):
    x = _values(dtype)
    _close(mytorch.tensor(x) ** n, torch.tensor(x) ** n, TOL[dtype])
    _close(mytorch.pow(mytorch.tensor(x), n), torch.pow(torch.tensor(x), n), TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3, -1, -2, -3, 0.5, -0.5, 0, 1, 4, 5, -4, 1.7])
def test_pow_scalar_backward_matches_torch(dtype, n):
    x = _values(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    mx, tx = mytorch.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (mx ** n).backward(mytorch.tensor(g))
    (tx ** n).backward(torch.tensor(g))
    _close(mx.grad, tx.grad, TOL[dtype] * 4)


@pytest.mark.parametrize("n", [2, 3, -1, 0.5, -0.5, 0, 4, -3])
def test_pow_scalar_double_backward(n):
    x = np.array([0.7, 1.3, 2.0, 0.25, 3.5])
    mx, tx = mytorch.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mg, = mytorch.autograd.grad((mx ** n).sum(), mx, create_graph=True)
    tg, = torch.autograd.grad((tx ** n).sum(), tx, create_graph=True)
    _close(mg, tg, 1e-12)
    if n == 0:  # the gradient is a constant zero: nothing to differentiate again
        assert not mg.requires_grad and not tg.requires_grad
        return
    mgg, = mytorch.autograd.grad(mg.sum(), mx)
    tgg, = torch.autograd.grad(tg.sum(), tx)
    _close(mgg, tgg, 1e-12)


def test_pow_grad_fn_and_strided_input():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    mx = mytorch.tensor(x, requires_grad=True)
    y = mx ** 3
    assert y.grad_fn.name() == "PowBackward0"
    mt, tt = mytorch.tensor(x).t(), torch.tensor(x).t()   # a transposed view keeps its layout
    _close(mt ** 3, tt ** 3, 0)
    assert (mt ** 3).stride() == (tt ** 3).stride()
    _close(mt ** 4, tt ** 4, 1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4])
def test_pow_int_tensor_matches_torch(dtype, n):
    x = np.array([0, 1, 2, 3, 5, 7], dtype=dtype)
    if np.dtype(dtype).kind == "i":
        x = np.concatenate([x, np.array([-1, -2, -3], dtype=dtype)])
    m, t = mytorch.tensor(x) ** n, torch.tensor(x) ** n
    assert str(m.dtype) == str(t.dtype)
    np.testing.assert_array_equal(m.numpy(), t.numpy())


def test_pow_int_tensor_float_exponent_and_errors():
    x = np.array([0, 1, 4, 9], dtype=np.int64)
    _close(mytorch.tensor(x) ** 0.5, torch.tensor(x) ** 0.5, 1e-7)
    _close(mytorch.tensor(x) ** -1.0, torch.tensor(x) ** -1.0, 1e-7)
    for n in (-1, -2):
        with pytest.raises(RuntimeError) as want:
            torch.tensor(x) ** n
        with pytest.raises(RuntimeError) as got:
            mytorch.tensor(x) ** n
        assert str(got.value) == str(want.value)


def test_zero_to_the_zero():
    for dt in (np.float32, np.int64):
        x = np.array([0, 0, 2], dtype=dt)
        np.testing.assert_array_equal((mytorch.tensor(x) ** 0).numpy(), (torch.tensor(x) ** 0).numpy())
    mx = mytorch.tensor([0.0, float("nan")], requires_grad=True)
    tx = torch.tensor([0.0, float("nan")], requires_grad=True)
    (mx ** 0).sum().backward()
    (tx ** 0).sum().backward()
    _close(mx, tx, 0)
    _close(mx.grad, tx.grad, 0)
    _close(mytorch.tensor([0.0, float("nan")]) ** 0, torch.tensor([0.0, float("nan")]) ** 0, 0)


def test_pow_out_and_inplace_still_follow_torch():
    x = np.array([1.5, -2.0, 0.5], dtype=np.float32)
    mo, to = mytorch.empty(3), torch.empty(3)
    mytorch.pow(mytorch.tensor(x), 3, out=mo)
    torch.pow(torch.tensor(x), 3, out=to)
    _close(mo, to, 0)
    m, t = mytorch.tensor(x), torch.tensor(x)
    m.pow_(2)
    t.pow_(2)
    _close(m, t, 0)
    mx = mytorch.tensor(x, requires_grad=True).clone()
    y = mx ** 2
    mx.mul_(2)  # the base was saved for backward: changing it is torch's version error
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
