"""torch.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) against torch: values and
nesting of the results, create_graph, strict mode and the argument errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mytorch

A = np.random.default_rng(0).standard_normal((3, 2))
B = np.random.default_rng(1).standard_normal(3)


def f_vec(t, x):                       # R^2 -> R^3
    return t.tanh(t.from_numpy(A) @ x) * x.sum()


def f_pair(t, x, y):                   # (R^2, R^3) -> (R^3, R)
    return t.from_numpy(A) @ x + y.sin(), (x.pow(3).sum() * y).sum()


def f_scalar(t, x):
    return (x.exp() * x.flip(0)).sum()


def f_scalar2(t, x, y):
    return (x.outer(y) ** 2).sum() + x.prod()


X = np.array([0.3, -0.7])
Y = np.array([0.5, 1.5, -0.2])

CASES = [
    ("jacobian", lambda t, F: F.jacobian(lambda x: f_vec(t, x), t.tensor(X))),
    ("jacobian_tuples", lambda t, F: F.jacobian(lambda x, y: f_pair(t, x, y), (t.tensor(X), t.tensor(Y)))),
    ("jacobian_tuple_in", lambda t, F: F.jacobian(lambda x, y: f_scalar2(t, x, y), (t.tensor(X), t.tensor(Y)))),
    ("jacobian_vectorize", lambda t, F: F.jacobian(lambda x: f_vec(t, x), t.tensor(X), vectorize=True)),
    ("jacobian_unused_input", lambda t, F: F.jacobian(lambda x, y: x * 2, (t.tensor(X), t.tensor(Y)))),
    ("hessian", lambda t, F: F.hessian(lambda x: f_scalar(t, x), t.tensor(Y))),
    ("hessian_tuple", lambda t, F: F.hessian(lambda x, y: f_scalar2(t, x, y), (t.tensor(X), t.tensor(Y)))),
    ("vjp", lambda t, F: F.vjp(lambda x: f_vec(t, x), t.tensor(X), t.tensor(B))),
    ("vjp_scalar_no_v", lambda t, F: F.vjp(lambda x: f_scalar(t, x), t.tensor(Y))),
    ("jvp", lambda t, F: F.jvp(lambda x: f_vec(t, x), t.tensor(X), t.tensor([1.0, -2.0], dtype=t.float64))),
    ("jvp_tuples", lambda t, F: F.jvp(lambda x, y: f_pair(t, x, y), (t.tensor(X), t.tensor(Y)),
                                      (t.tensor(X) * 0 + 1, t.tensor(Y)))),
    ("vhp", lambda t, F: F.vhp(lambda x: f_scalar(t, x), t.tensor(Y), t.tensor(B))),
    ("hvp", lambda t, F: F.hvp(lambda x: f_scalar(t, x), t.tensor(Y), t.tensor(B))),
    ("hvp_tuple", lambda t, F: F.hvp(lambda x, y: f_scalar2(t, x, y), (t.tensor(X), t.tensor(Y)),
                                     (t.tensor(X), t.tensor(B)))),
]


def _flat(x, path=""):
    if isinstance(x, tuple):
        out = [("tuple", path, len(x))]
        for i, el in enumerate(x):
            out += _flat(el, f"{path}/{i}")
        return out
    return [("tensor", path, tuple(x.shape), x.requires_grad, x.detach().numpy())]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn):
    mine = _flat(fn(mytorch, mytorch.autograd.functional))
    ref = _flat(fn(torch, torch.autograd.functional))
    assert [m[:-1] if m[0] == "tensor" else m for m in mine] == \
        [r[:-1] if r[0] == "tensor" else r for r in ref]
    for m, r in zip(mine, ref):
        if m[0] == "tensor":
            np.testing.assert_allclose(m[-1], r[-1], rtol=1e-12, atol=1e-12, err_msg=m[1])


def test_create_graph_keeps_the_results_differentiable():
    """A Jacobian with create_graph=True is differentiated again (the PINN pattern)."""
    res = []
    for t in (mytorch, torch):
        x = t.tensor(X, requires_grad=True)
        jac = t.autograd.functional.jacobian(lambda z: f_vec(t, z), x, create_graph=True)
        assert jac.requires_grad
        jac.pow(2).sum().backward()
        h = t.autograd.functional.hessian(lambda z: f_scalar(t, z), x, create_graph=True)
        _, hv = t.autograd.functional.hvp(lambda z: f_scalar(t, z), x, t.ones(2, dtype=t.float64),
                                          create_graph=True)
        res.append((x.grad.numpy(), h.requires_grad, hv.requires_grad))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12)
    assert res[0][1:] == res[1][1:] == (True, True)


ERRORS = [
    ("not_tensor", lambda t, F: F.jacobian(lambda x: x, [1.0])),
    ("not_tensor_in_tuple", lambda t, F: F.vjp(lambda x, y: x, (t.ones(2), 3))),
    ("vjp_needs_v", lambda t, F: F.vjp(lambda x: x * 2, t.ones(2))),
    ("vjp_v_size", lambda t, F: F.vjp(lambda x: x * 2, t.ones(2), t.ones(3))),
    ("vjp_v_length", lambda t, F: F.vjp(lambda x: (x, x), t.ones(2), (t.ones(2),))),
    ("jvp_needs_v", lambda t, F: F.jvp(lambda x: x * 2, t.ones(2))),
    ("jvp_v_entry_size", lambda t, F: F.jvp(lambda x, y: x * y, (t.ones(2), t.ones(2)), (t.ones(2), t.ones(3)))),
    ("hessian_not_scalar", lambda t, F: F.hessian(lambda x: x * 2, t.ones(2))),
    ("hessian_tuple_output", lambda t, F: F.hessian(lambda x: (x.sum(), x.sum()), t.ones(2))),
    ("vhp_not_scalar", lambda t, F: F.vhp(lambda x: x * 2, t.ones(2), t.ones(2))),
    ("strict_independent", lambda t, F: F.jacobian(lambda x, y: x * 2, (t.ones(2), t.ones(2)), strict=True)),
    ("strict_no_grad_output", lambda t, F: F.vjp(lambda x: t.ones(2), t.ones(2), t.ones(2), strict=True)),
    ("strict_linear_hessian", lambda t, F: F.hessian(lambda x: x.sum(), t.ones(2), strict=True)),
    ("strict_vectorize", lambda t, F: F.jacobian(lambda x: x, t.ones(2), strict=True, vectorize=True)),
    ("forward_mode_needs_vectorize", lambda t, F: F.jacobian(lambda x: x, t.ones(2), strategy="forward-mode")),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(name, fn):
    with pytest.raises(Exception) as ref:
        fn(torch, torch.autograd.functional)
    with pytest.raises(type(ref.value)) as mine:
        fn(mytorch, mytorch.autograd.functional)
    assert str(mine.value) == str(ref.value)
