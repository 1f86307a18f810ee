"""selu, celu, hardsigmoid, hardswish, mish, softsign, tanhshrink, hardshrink, softshrink,
threshold (functions and modules), torch.special.expit / entr / xlog1py and copysign, against
real torch: values and gradients (random points, the kinks, 0, ±inf, nan), node names, in-place
forms, reprs and dtype errors."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import mytorch
import mytorch.nn.functional as MF

SPECIAL = [0.0, -0.0, 0.5, -0.5, 3.0, -3.0, 0.1, 1.0, -1.0, 20.0, -20.0, 100.0, -100.0,
           float("inf"), float("-inf"), float("nan")]

# name -> (mytorch function, torch function); each takes one tensor
UNARY = {
    "selu": (MF.selu, TF.selu),
    "celu": (MF.celu, TF.celu),
    "celu_alpha": (lambda x: MF.celu(x, 0.5), lambda x: TF.celu(x, 0.5)),
    "celu_0.7": (lambda x: MF.celu(x, 0.7), lambda x: TF.celu(x, 0.7)),
    "hardsigmoid": (MF.hardsigmoid, TF.hardsigmoid),
    "hardswish": (MF.hardswish, TF.hardswish),
    "mish": (MF.mish, TF.mish),
    "softsign": (MF.softsign, TF.softsign),
    "tanhshrink": (MF.tanhshrink, TF.tanhshrink),
    "hardshrink": (MF.hardshrink, TF.hardshrink),
    "hardshrink_1": (lambda x: MF.hardshrink(x, 1.0), lambda x: TF.hardshrink(x, 1.0)),
    "softshrink": (MF.softshrink, TF.softshrink),
    "softshrink_1": (lambda x: MF.softshrink(x, 1.0), lambda x: TF.softshrink(x, 1.0)),
    "threshold": (lambda x: MF.threshold(x, 0.1, 20.0), lambda x: TF.threshold(x, 0.1, 20.0)),
    "expit": (mytorch.special.expit, torch.special.expit),
    "entr": (mytorch.special.entr, torch.special.entr),
    "torch.selu": (mytorch.selu, torch.selu),
    "torch.celu": (lambda x: mytorch.celu(x, 2.0), lambda x: torch.celu(x, 2.0)),
    "torch.hardshrink": (mytorch.hardshrink, torch.hardshrink),
    "Tensor.hardshrink": (lambda x: x.hardshrink(0.3), lambda x: x.hardshrink(0.3)),
    "torch.threshold": (lambda x: mytorch.threshold(x, -1.0, 5.0),
                        lambda x: torch.threshold(x, -1.0, 5.0)),
}


def _inputs(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([rng.normal(0, 3, 40), SPECIAL]).astype(dtype)


def _check(ours, theirs, dtype):
    np.testing.assert_equal(ours.dtype.itemsize, theirs.dtype.itemsize)
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_forward_backward_and_node_name_match_torch(name, dtype):
    ours_fn, torch_fn = UNARY[name]
    a = _inputs(dtype)
    x = mytorch.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, ty = ours_fn(x), torch_fn(t)
    _check(y, ty, dtype)
    assert y.grad_fn.name() == ty.grad_fn.name()
    g = np.random.default_rng(1).normal(size=a.shape).astype(dtype)
    y.backward(mytorch.tensor(g))
    ty.backward(torch.tensor(g))
    # torch's gradient at nan depends on whether the element fell in a SIMD lane or in the
    # scalar tail (hardshrink: 0 or g): not compared
    ok = ~np.isnan(a)
    _check(x.grad[mytorch.tensor(ok)], t.grad[torch.tensor(ok)], dtype)


# in-place forms: (mytorch, torch), each called on a tensor that needs grad (a non-leaf)
INPLACE = {
    "selu_": (MF.selu_, TF.selu_),
    "selu inplace": (lambda x: MF.selu(x, inplace=True), lambda x: TF.selu(x, inplace=True)),
    "torch.selu_": (mytorch.selu_, torch.selu_),
    "celu_": (lambda x: MF.celu_(x, 0.7), lambda x: TF.celu_(x, 0.7)),
    "celu inplace": (lambda x: MF.celu(x, inplace=True), lambda x: TF.celu(x, inplace=True)),
    "threshold_": (lambda x: MF.threshold_(x, 0.1, 20.0), lambda x: TF.threshold_(x, 0.1, 20.0)),
    "threshold inplace": (lambda x: MF.threshold(x, 0.1, -5.0, True),
                          lambda x: TF.threshold(x, 0.1, -5.0, True)),
    "hardswish": (lambda x: MF.hardswish(x, True), lambda x: TF.hardswish(x, True)),
    "hardsigmoid": (lambda x: MF.hardsigmoid(x, True), lambda x: TF.hardsigmoid(x, True)),
    "mish": (lambda x: MF.mish(x, True), lambda x: TF.mish(x, True)),
    "copysign_": (lambda x: x.copysign_(-1.0), lambda x: x.copysign_(-1.0)),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_forms_match_torch(name):
    ours_fn, torch_fn = INPLACE[name]
    a = _inputs("float64")[np.isfinite(_inputs("float64"))]
    x = mytorch.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    xc, tc = x * 1, t * 1
    y, ty = ours_fn(xc), torch_fn(tc)
    assert y is xc and ty is tc
    _check(y, ty, "float64")
    assert y.grad_fn.name() == ty.grad_fn.name()
    y.sum().backward()
    ty.sum().backward()
    _check(x.grad, t.grad, "float64")


def test_inplace_without_grad_overwrites_the_tensor():
    x = mytorch.tensor([-2.0, 0.05, 4.0])
    assert MF.threshold_(x, 0.1, 7.0) is x
    assert x.tolist() == [7.0, 7.0, 4.0]


def test_threshold_keeps_integer_dtypes_and_truncates_its_numbers():
    for dt in ("int64", "uint8"):
        a = np.array([0, 1, 2], dtype=dt)
        ours = MF.threshold(mytorch.tensor(a), 0.5, 7.9)
        theirs = TF.threshold(torch.tensor(a), 0.5, 7.9)
        assert ours.tolist() == theirs.tolist() and str(ours.dtype) == str(theirs.dtype)


@pytest.mark.parametrize("name,args", [
    ("selu", ()), ("celu", ()), ("hardsigmoid", ()), ("hardswish", ()), ("mish", ()),
    ("hardshrink", ()), ("softshrink", ()), ("threshold", (0.0, 1.0))])
def test_integer_and_bool_inputs_fail_like_torch(name, args):
    for values in ([1, 2], [True, False]):
        if name == "threshold" and values == [1, 2]:
            continue  # threshold has integer kernels
        with pytest.raises(Exception) as theirs:
            getattr(TF, name)(torch.tensor(values), *args)
        with pytest.raises(type(theirs.value), match=str(theirs.value)):
            getattr(MF, name)(mytorch.tensor(values), *args)


def test_argument_errors_match_torch():
    with pytest.raises(RuntimeError, match="ZeroDivisionError: alpha cannot be 0 for CELU"):
        MF.celu(mytorch.ones(2), 0.0)
    with pytest.raises(RuntimeError) as theirs:
        TF.softshrink(torch.ones(2), -1.0)
    with pytest.raises(RuntimeError) as ours:
        MF.softshrink(mytorch.ones(2), -1.0)
    assert str(ours.value) == str(theirs.value)


def test_softsign_tanhshrink_on_integers_give_floats_like_torch():
    for fn in ("softsign", "tanhshrink"):
        ours = getattr(MF, fn)(mytorch.tensor([1, -2]))
        theirs = getattr(TF, fn)(torch.tensor([1, -2]))
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


MODULES = [("SELU", ()), ("SELU", (True,)), ("CELU", ()), ("CELU", (2.0, True)),
           ("Hardsigmoid", ()), ("Hardsigmoid", (True,)), ("Hardswish", ()), ("Hardswish", (True,)),
           ("Mish", ()), ("Mish", (True,)), ("Softsign", ()), ("Tanhshrink", ()),
           ("Hardshrink", ()), ("Hardshrink", (0.25,)), ("Softshrink", ()), ("Softshrink", (1,)),
           ("Threshold", (0.1, 20)), ("Threshold", (0.1, 20.0, True))]


@pytest.mark.parametrize("name,args", MODULES)
def test_modules_repr_and_forward_match_torch(name, args):
    ours, theirs = getattr(mytorch.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    assert getattr(type(ours), "__constants__", None) == getattr(type(theirs), "__constants__",
                                                                 None)
    a = _inputs("float32")
    _check(ours(mytorch.tensor(a)), theirs(torch.tensor(a)), "float32")


def test_shrink_modules_are_separate_classes():
    assert not isinstance(mytorch.nn.Softshrink(), mytorch.nn.Hardshrink)


BINARY = {"xlog1py": (mytorch.special.xlog1py, torch.special.xlog1py),
          "copysign": (mytorch.copysign, torch.copysign),
          "Tensor.copysign": (lambda a, b: a.copysign(b), lambda a, b: a.copysign(b))}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_broadcast_and_match_torch(name, dtype):
    ours_fn, torch_fn = BINARY[name]
    rng = np.random.default_rng(2)
    a = np.concatenate([rng.normal(0, 2, (3, 8)), [[0.0, -0.0, 1.0, -1.0, np.inf, -np.inf,
                                                      np.nan, 2.0]]]).astype(dtype)
    b = np.array([0.5, -0.0, 0.0, -1.0, np.inf, -0.5, 3.0, np.nan], dtype=dtype)
    x, y = mytorch.tensor(a, requires_grad=True), mytorch.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, tout = ours_fn(x, y), torch_fn(tx, ty)
    _check(out, tout, dtype)
    assert out.grad_fn.name() == tout.grad_fn.name()
    g = rng.normal(size=a.shape).astype(dtype)
    out.backward(mytorch.tensor(g))
    tout.backward(torch.tensor(g))
    _check(x.grad, tx.grad, dtype)
    _check(y.grad, ty.grad, dtype)


@pytest.mark.parametrize("args", [([1, 2], [-1, 1]), ([True, False], [False, True]),
                                  ([1.0, 2.0], -1.5), ([1, 2], -2.5)])
def test_binary_dtypes_and_scalars_match_torch(args):
    a, b = args
    wrap_m = (lambda v: mytorch.tensor(v)) if isinstance(b, list) else (lambda v: v)
    wrap_t = (lambda v: torch.tensor(v)) if isinstance(b, list) else (lambda v: v)
    for name in ("copysign",):
        ours = getattr(mytorch, name)(mytorch.tensor(a), wrap_m(b))
        theirs = getattr(torch, name)(torch.tensor(a), wrap_t(b))
        assert str(ours.dtype) == str(theirs.dtype)
        assert ours.tolist() == theirs.tolist()
    ours = mytorch.special.xlog1py(mytorch.tensor(a), wrap_m(b))
    theirs = torch.special.xlog1py(torch.tensor(a), wrap_t(b))
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("scalar_first", [True, False])
def test_xlog1py_with_a_number_matches_torch(scalar_first):
    a = np.array([0.5, -0.5, 0.0])
    x, t = mytorch.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    args = (lambda v: (2.0, v)) if scalar_first else (lambda v: (v, 2.0))
    y, ty = mytorch.special.xlog1py(*args(x)), torch.special.xlog1py(*args(t))
    _check(y, ty, "float32")
    assert y.grad_fn.name() == ty.grad_fn.name()
    y.sum().backward()
    ty.sum().backward()
    _check(x.grad, t.grad, "float32")


def test_copysign_scalar_node_and_inplace_integer_error():
    x = mytorch.tensor([1.0, -2.0], requires_grad=True)
    assert mytorch.copysign(x, -1.0).grad_fn.name() == "CopysignBackward1"
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        mytorch.tensor([1, 2]).copysign_(-1.0)


def test_entr_and_expit_on_integers_and_special_points():
    for fn in ("entr", "expit"):
        ours = getattr(mytorch.special, fn)(mytorch.tensor([0, 1, 2]))
        theirs = getattr(torch.special, fn)(torch.tensor([0, 1, 2]))
        assert str(ours.dtype) == str(theirs.dtype)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    out = mytorch.tensor([1.0, 2.0])
    assert mytorch.special.expit(mytorch.tensor([0.0, 1.0]), out=out) is out


def test_names_exist_where_torch_has_them():
    for n in ("selu", "selu_", "celu", "celu_", "threshold", "threshold_", "hardshrink",
              "copysign"):
        assert hasattr(torch, n) and hasattr(mytorch, n), n
    for n in ("hardswish", "mish", "entr", "xlog1py", "expit"):
        assert hasattr(torch, n) == hasattr(mytorch, n), n
    for n in ("hardshrink", "copysign", "copysign_"):
        assert hasattr(torch.Tensor, n) and hasattr(mytorch.Tensor, n), n
    assert {n for n in dir(TF) if n in MF.__all__} >= {
        "selu", "selu_", "celu", "celu_", "hardsigmoid", "hardswish", "mish", "softsign",
        "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_"}


@pytest.mark.parametrize("name", ["selu", "celu_0.7", "hardsigmoid", "hardswish", "mish",
                                  "softsign", "tanhshrink", "hardshrink", "softshrink",
                                  "threshold", "expit", "entr"])
def test_second_derivatives_match_torch(name):
    """``create_graph=True``: the gradient is differentiable again, with torch's values."""
    ours_fn, torch_fn = UNARY[name]
    a = np.concatenate([np.linspace(-4.1, 4.3, 13), [-1000.0, 800.0]])  # exp overflows
    if name == "entr":
        a = np.abs(a) + 0.5
    x, t = mytorch.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (gx,) = mytorch.autograd.grad(ours_fn(x).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad(torch_fn(t).sum(), t, create_graph=True)
    _check(gx, gt, "float64")
    if name != "hardsigmoid":  # torch: "derivative for aten::hardsigmoid_backward is not
        # implemented"; mytorch's is 0 (the slope is constant on each piece)
        (gx * gx).sum().backward()
        (gt * gt).sum().backward()
        _check(x.grad, t.grad, "float64")


@pytest.mark.parametrize("name, kwargs", [("elu", {}), ("leaky_relu", {"negative_slope": 0.2})])
@pytest.mark.parametrize("how", ["inplace", "underscore"])
def test_in_place_elu_and_leaky_relu_are_torchs_second_nodes(name: str, kwargs: dict, how: str) -> None:
    """torch's in-place kernels save the result, not the input: EluBackward1, LeakyReluBackward1."""
    names = []
    for lib in (mytorch, torch):
        x = lib.tensor([-1.5, 0.5, 2.0], requires_grad=True).clone()
        y = (getattr(lib.nn.functional, name)(x, inplace=True, **kwargs) if how == "inplace"
             else getattr(lib.nn.functional, name + "_")(x, **kwargs))
        y.sum().backward()
        names.append(y.grad_fn.name())
    assert names[0] == names[1], names


# ----------------------------------------------------------------------------- glu, gumbel_softmax
@pytest.mark.parametrize("shape,dim", [((3, 4), -1), ((4, 3), 0), ((2, 6, 3), 1)])
def test_glu_matches_torch(shape, dim):
    x0 = np.random.default_rng(0).standard_normal(shape)
    res = []
    for lib, F_ in ((mytorch, MF), (torch, TF)):
        x = lib.tensor(x0, requires_grad=True)
        y = F_.glu(x, dim)
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        g.sum().backward()
        res.append((y.detach().numpy(), x.grad.numpy(),
                    y.grad_fn.name() if lib is mytorch else type(y.grad_fn).__name__,
                    repr(lib.nn.GLU(dim)), lib.nn.GLU(dim)(x).detach().numpy()))
    for a, b in zip(res[0], res[1]):
        assert a == b if isinstance(a, str) else np.allclose(a, b, rtol=1e-12, atol=1e-12)
    assert res[0][2] == "GluBackward0"


@pytest.mark.parametrize("fn", [lambda t: t.nn.functional.glu(t.ones(3, 3)),
                                lambda t: t.nn.functional.glu(t.tensor(1.0)),
                                lambda t: t.nn.functional.glu(t.ones(4), dim=1)])
def test_glu_errors_match_torch(fn):
    with pytest.raises(Exception) as ref:
        fn(torch)
    with pytest.raises(type(ref.value)) as mine:
        fn(mytorch)
    assert str(mine.value) == str(ref.value)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_is_torch_s_formula(hard, monkeypatch):
    """With the same exponential draws, the same sample and gradients (straight-through when hard)."""
    draws = np.random.default_rng(1).exponential(size=(4, 5)).astype(np.float32)
    res = []
    for lib, F_ in ((mytorch, MF), (torch, TF)):
        monkeypatch.setattr(lib.Tensor, "exponential_",
                            lambda self, *a, lib=lib, **k: self.copy_(lib.from_numpy(draws.copy())))
        logits = lib.tensor(np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32),
                            requires_grad=True)
        y = F_.gumbel_softmax(logits, tau=0.5, hard=hard)
        (y * lib.arange(5.0)).sum().backward()
        res.append((y.detach().numpy(), logits.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-4, atol=1e-6)
    if hard:
        assert set(np.unique(res[0][0])) == {0.0, 1.0}


def test_gumbel_softmax_samples_and_eps_warning():
    mytorch.manual_seed(0)
    y = MF.gumbel_softmax(mytorch.zeros(20000, 3), hard=True)
    np.testing.assert_allclose(y.mean(0).numpy(), [1 / 3] * 3, atol=0.02)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        MF.gumbel_softmax(mytorch.zeros(2, 3), eps=1e-5)
