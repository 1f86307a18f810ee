"""Fidelity against torch 2.13 (issue fid27): views made in no_grad or inference mode of a tensor
that requires grad; in-place writes through indexing into split/chunk/unbind outputs; rrelu;
var_mean / std_mean's single node."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from oracle import torch

import mytorch


def _outcome(lib: Any, fn: Callable) -> Any:
    """What a case shows: its result (tensors as values, nodes as names) or its error."""
    try:
        return _describe(fn(lib))
    except Exception as e:  # noqa: BLE001 (class and message are compared)
        return type(e).__name__, str(e)


def _describe(x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x).__name__, [_describe(v) for v in x]
    if hasattr(x, "detach") and hasattr(x, "grad_fn"):  # a tensor of either library
        return (_nan_safe(x.detach().numpy().round(5).tolist()), str(x.dtype).split(".")[-1],
                x.requires_grad, _describe(x.grad_fn))
    if hasattr(x, "next_functions"):  # a node: its name, as the user's repr shows it
        return x.name().rsplit("::", 1)[-1]
    return x


def _nan_safe(v: Any) -> Any:
    """nan compares unequal to itself: spell it out."""
    if isinstance(v, list):
        return [_nan_safe(e) for e in v]
    return "nan" if v != v else v


# ============================================================================ no_grad views
def _base(lib: Any, leaf: bool) -> tuple:
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return x, (x if leaf else x * 2)


def _ng_view(lib: Any, make: Callable, leaf: bool = False, mode: str = "no_grad") -> tuple:
    x, y = _base(lib, leaf)
    with getattr(lib, mode)():
        v = make(lib, y)
    return x, y, v


def _flags(lib: Any, make: Callable, leaf: bool = False) -> tuple:
    _, _, v = _ng_view(lib, make, leaf)
    return v.requires_grad, v.is_leaf, v.grad_fn, repr(v)


VIEWS: dict[str, Callable] = {
    "slice": lambda lib, y: y[:2],
    "select": lambda lib, y: y[1],
    "view": lambda lib, y: y.view(3),
    "reshape": lambda lib, y: y.reshape(3),
    "unsqueeze": lambda lib, y: y.unsqueeze(0),
    "t_of_2d": lambda lib, y: y.view(1, 3).t(),
    "expand": lambda lib, y: y.expand(2, 3),
    "narrow": lambda lib, y: y.narrow(0, 1, 2),
    "split": lambda lib, y: y.split(2)[0],
    "unbind": lambda lib, y: y.unbind()[1],
    "as_strided": lambda lib, y: y.as_strided((2,), (1,)),
    # not views of something that requires grad: they do not require grad
    "of_a_no_grad_result": lambda lib, y: (y * 2)[:2],
    "of_detach": lambda lib, y: y.detach()[:2],
    "of_data": lambda lib, y: y.data[:2],
    "advanced_index": lambda lib, y: y[[0, 1]],
}


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "nonleaf"])
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_no_grad_view_flags(name: str, leaf: bool) -> None:
    case = lambda lib: _flags(lib, VIEWS[name], leaf)  # noqa: E731
    assert _outcome(mytorch, case) == _outcome(torch, case)


def _inplace(lib: Any, make: Callable, op: Callable, leaf: bool = False) -> Any:
    _, y, v = _ng_view(lib, make, leaf)
    op(lib, v)
    return y, v


INPLACE: dict[str, Callable] = {
    "add_number": lambda lib, v: v.add_(1),
    "mul_tensor": lambda lib, v: v.mul_(lib.full(v.shape, 2.0)),
    "add_grad_tensor": lambda lib, v: v.add_(lib.ones(v.shape, requires_grad=True)),
    "zero_": lambda lib, v: v.zero_(),
    "fill_": lambda lib, v: v.fill_(5),
    "copy_": lambda lib, v: v.copy_(lib.zeros(v.shape)),
    "exp_": lambda lib, v: v.exp_(),
    "relu_": lambda lib, v: lib.nn.functional.relu(v, inplace=True),
    "iadd": lambda lib, v: v.__iadd__(1),
    "setitem_int": lambda lib, v: v.__setitem__(0, 5.0),
    "setitem_slice": lambda lib, v: v.__setitem__(slice(0, 1), 5.0),
    "setitem_whole_slice": lambda lib, v: v.__setitem__(slice(None), 5.0),
    "setitem_ellipsis": lambda lib, v: v.__setitem__(Ellipsis, 5.0),
    "setitem_list": lambda lib, v: v.__setitem__([0], 5.0),
    "setitem_none": lambda lib, v: v.__setitem__(None, 5.0),
    "view_of_view_add_": lambda lib, v: v[:1].add_(1),
    "setitem_grad_value": lambda lib, v: v.__setitem__(0, lib.ones((), requires_grad=True)),
}


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "nonleaf"])
@pytest.mark.parametrize("op", sorted(INPLACE))
@pytest.mark.parametrize("view", ["slice", "view", "split", "expand_then_slice"])
def test_no_grad_view_inplace_refused(view: str, op: str, leaf: bool) -> None:
    make = VIEWS.get(view, lambda lib, y: y.view(1, 3).expand(2, 3)[0])
    case = lambda lib: _inplace(lib, make, INPLACE[op], leaf)  # noqa: E731
    assert _outcome(mytorch, case) == _outcome(torch, case)


@pytest.mark.parametrize("op", sorted(INPLACE))
def test_no_grad_view_inplace_allowed_in_no_grad(op: str) -> None:
    def case(lib: Any) -> Any:
        _, y, v = _ng_view(lib, VIEWS["slice"], leaf=False)
        with lib.no_grad():
            INPLACE[op](lib, v.detach() if op == "add_grad_tensor" else v)
        return y

    assert _outcome(mytorch, case) == _outcome(torch, case)


@pytest.mark.parametrize("key", [0, slice(0, 1), [0]], ids=["int", "slice", "list"])
def test_no_grad_view_of_a_plain_tensor_set_from_a_grad_value(key: Any) -> None:
    def case(lib: Any) -> Any:
        a = lib.ones(3)
        with lib.no_grad():
            v = a[:2]
        v[key] = lib.ones((), requires_grad=True)

    assert _outcome(mytorch, case) == _outcome(torch, case)


def test_view_of_something_not_requiring_grad_may_change() -> None:
    def case(lib: Any) -> Any:
        x, y = _base(lib, leaf=False)
        with lib.no_grad():
            v, w = (y * 2)[:2], y.detach()[:2]
        return v.add_(1), w.add_(1), y

    assert _outcome(mytorch, case) == _outcome(torch, case)


def _uses(lib: Any, leaf: bool) -> Any:
    """A no_grad view in grad-mode ops: results require grad, the gradient goes nowhere."""
    x, y, v = _ng_view(lib, VIEWS["slice"], leaf)
    w = lib.ones(2, requires_grad=True)
    z = v * 3
    z.sum().backward()
    (v * w).sum().backward()
    return (z, [f[0] is None for f in z.grad_fn.next_functions], v.clone(), x.grad, v.grad,
            w.grad, lib.autograd.grad((v * w).sum(), [w, v], allow_unused=True))


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "nonleaf"])
def test_no_grad_view_in_grad_mode_ops(leaf: bool) -> None:
    case = lambda lib: _uses(lib, leaf)  # noqa: E731
    assert _outcome(mytorch, case) == _outcome(torch, case)


ERRORS: dict[str, Callable] = {
    "backward_of_the_view": lambda lib, v: v.backward(lib.ones(2)),
    "grad_wrt_the_view": lambda lib, v: lib.autograd.grad((v * lib.ones(2, requires_grad=True))
                                                          .sum(), v),
    "numpy": lambda lib, v: v.numpy(),
    "detach_": lambda lib, v: v.detach_(),
    "retain_grad": lambda lib, v: (v.retain_grad(), v.retains_grad),
    "requires_grad_false": lambda lib, v: (v.requires_grad_(False), v.requires_grad),
    "requires_grad_true_owns_its_grad": lambda lib, v: (
        v.requires_grad_(), (v * 2).sum().backward(), v.grad),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_no_grad_view_other_uses(name: str) -> None:
    def case(lib: Any) -> Any:
        _, _, v = _ng_view(lib, VIEWS["slice"], leaf=True)
        return ERRORS[name](lib, v)

    assert _outcome(mytorch, case) == _outcome(torch, case)


CHANGES: dict[str, Callable] = {  # the base, or another view of it, changes after the view is made
    "base_in_grad_mode": lambda lib, x, y, v: y.mul_(3) if y is not x else None,
    "base_in_no_grad": lambda lib, x, y, v: _no_grad(lib, lambda: y.mul_(3)),
    "view_itself_in_no_grad": lambda lib, x, y, v: _no_grad(lib, lambda: v.add_(1)),
    "sibling_in_no_grad": lambda lib, x, y, v: _no_grad(lib, lambda: y[1:].add_(1)),
}
AFTER: dict[str, Callable] = {
    "mul": lambda lib, v: v * 2,
    "sum": lambda lib, v: v.sum(),
    "clone": lambda lib, v: v.clone(),
    "cat": lambda lib, v: lib.cat([v, v]),
    "add_": lambda lib, v: v.add_(1),
    "setitem": lambda lib, v: v.__setitem__(0, 1.0),
    "slice": lambda lib, v: v[:1],
    "mul_in_no_grad": lambda lib, v: _no_grad(lib, lambda: v * 2),
    "compare": lambda lib, v: v == 1,
    "detach_mul": lambda lib, v: v.detach() * 2,
    "repr": lambda lib, v: repr(v),
    "requires_grad": lambda lib, v: v.requires_grad,
}


def _no_grad(lib: Any, fn: Callable) -> Any:
    with lib.no_grad():
        return fn()


@pytest.mark.parametrize("after", sorted(AFTER))
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_no_grad_view_after_its_base_changed(change: str, after: str) -> None:
    def case(lib: Any) -> Any:
        x, y, v = _ng_view(lib, VIEWS["slice"], leaf=change != "base_in_grad_mode")
        CHANGES[change](lib, x, y, v)
        return AFTER[after](lib, v)

    assert _outcome(mytorch, case) == _outcome(torch, case)


def test_transposed_weight_kept_across_an_optimizer_step() -> None:
    """A student keeps ``W.t()`` made under no_grad; after ``step()`` torch refuses to use it."""
    def case(lib: Any) -> Any:
        lib.manual_seed(0)
        lin = lib.nn.Linear(2, 2)
        with lib.no_grad():
            wt = lin.weight.t()
        before = lib.ones(1, 2) @ wt
        opt = lib.optim.SGD(lin.parameters(), lr=0.1)
        lin(lib.ones(1, 2)).sum().backward()
        opt.step()
        return before.requires_grad, lib.ones(1, 2) @ wt

    assert _outcome(mytorch, case)[1] == _outcome(torch, case)[1]


def test_inference_mode_view() -> None:
    def case(lib: Any) -> Any:
        x, y = _base(lib, leaf=True)
        with lib.inference_mode():
            v = x[1:]
            w = x[1:]
            w.add_(1)
        out = [v.requires_grad, v.is_inference(), repr(v), v * 2]
        for fn in (lambda: v.add_(1), lambda: v.__setitem__(0, 1.0), lambda: w * 2):
            out.append(_outcome(lib, lambda _: fn()))
        return out

    assert _outcome(mytorch, case) == _outcome(torch, case)


def test_custom_function_returning_a_view() -> None:
    def case(lib: Any) -> Any:
        class Head(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: Any) -> Any:
                ctx.inside = a[:2].requires_grad
                return a[:2]

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return lib.cat([g, g.new_zeros(1)])

        x, y = _base(lib, leaf=False)
        o = Head.apply(y)
        return o.grad_fn.inside, _outcome(lib, lambda _: o.add_(1))

    assert _outcome(mytorch, case) == _outcome(torch, case)


def test_library_code_under_no_grad_still_trains() -> None:
    """init functions, clip_grad_norm_ and optimizers take views under no_grad: unchanged."""
    def case(lib: Any) -> Any:
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Linear(4, 1))
        for i, p in enumerate(net.parameters()):
            lib.nn.init.constant_(p, 0.1 * (i + 1))
        lib.nn.init.ones_(net[0].weight[0])  # init on a view (no_grad inside)
        lib.nn.init.zeros_(net[2].weight[:, 1:3])
        opt = lib.optim.Adam(net.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            net(lib.ones(2, 3)).pow(2).sum().backward()
            lib.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
        with lib.no_grad():
            for row in net[0].weight:  # rows are views made under no_grad
                row.mul_(0.5)
        return [p.detach() for p in net.parameters()]

    a, b = _outcome(mytorch, case), _outcome(torch, case)
    assert a[0] == b[0] == "list"
    for pa, pb in zip(a[1], b[1]):
        np.testing.assert_allclose(pa[0], pb[0], rtol=1e-5, atol=1e-6)


# ============================================================================ split + indexing
def _split(lib: Any, how: str) -> Any:
    t = lib.ones(4, 3, requires_grad=True)
    return {"split": lambda: t.clone().split(2), "chunk": lambda: t.clone().chunk(2),
            "unbind": lambda: t.clone().unbind(0), "sizes": lambda: t.clone().split([1, 3]),
            "leaf_split": lambda: t.split(2)}[how]()


KEYS: dict[str, Any] = {
    "0": 0, "-1": -1, "0:1": slice(0, 1), ":": slice(None), "0:": slice(0, None),
    ":100": slice(None, 100), "::2": slice(None, None, 2), "-2:": slice(-2, None),
    ":, 0": (slice(None), 0), "0, 0": (0, 0), "0, :": (0, slice(None)), "0, :2": (0, slice(2)),
    ":1, 0": (slice(1), 0), "None": None, "0, None": (0, None), "None, 0": (None, 0),
    "...": Ellipsis, "..., 0": (Ellipsis, 0), "[0]": [0], "[0], 0": ([0], 0),
    "[0], :1": ([0], slice(1)), "True": True, "tensor(0)": "tensor0",
}


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("how", ["split", "chunk", "unbind", "sizes", "leaf_split"])
def test_setitem_on_multi_output_view(how: str, key: str) -> None:
    def case(lib: Any) -> Any:
        k = lib.tensor(0) if KEYS[key] == "tensor0" else KEYS[key]
        s = _split(lib, how)[1]
        if how == "unbind" and isinstance(k, tuple) and len([i for i in k if i is not None
                                                             and i is not Ellipsis]) > 1:
            k = k[:1]
        s[k] = 5.0

    assert _outcome(mytorch, case) == _outcome(torch, case)


SPLIT_INPLACE: dict[str, Callable] = {
    "add_": lambda lib, s: s[0].add_(1),
    "row_add_": lambda lib, s: s[1][0].add_(1),
    "t_add_": lambda lib, s: s[1].t().add_(1),
    "view_add_": lambda lib, s: s[1].view(-1).add_(1),
    "value_requires_grad": lambda lib, s: s[0].__setitem__(0, lib.ones(3, requires_grad=True)),
    "split_in_no_grad_then_setitem": lambda lib, s: _no_grad_split_setitem(lib),
    "nothing_requires_grad": lambda lib, s: lib.ones(4, 3).split(2)[0].__setitem__(0, 5.0),
    "only_the_value_requires_grad": lambda lib, s: lib.ones(4, 3).split(2)[0].__setitem__(
        (slice(None), 0), lib.ones((), requires_grad=True)),
}


def _no_grad_split_setitem(lib: Any) -> Any:
    with lib.no_grad():
        s = lib.ones(4, 3, requires_grad=True).clone().split(2)
    s[0][0] = 5.0
    return s[0]


@pytest.mark.parametrize("name", sorted(SPLIT_INPLACE))
def test_split_output_inplace(name: str) -> None:
    case = lambda lib: SPLIT_INPLACE[name](lib, _split(lib, "split"))  # noqa: E731
    assert _outcome(mytorch, case) == _outcome(torch, case)


GETITEM_KEYS: dict[str, Any] = {
    ":": slice(None), "(:,)": (slice(None),), "0:2": slice(0, 2), "(0:2,)": (slice(0, 2),),
    "...": Ellipsis, "0, :": (0, slice(None)), ":, :": (slice(None),) * 2,
    "0:5": slice(0, 5), "None": None, "0, None": (0, None), "None, :": (None, slice(None)),
    "-2:": slice(-2, None), ":, 0, None": (slice(None), 0, None), "::1": slice(None, None, 1),
    "..., None": (Ellipsis, None), "0": 0, ":, 1": (slice(None), 1), "1:, 0": (slice(1, None), 0),
}


@pytest.mark.parametrize("key", sorted(GETITEM_KEYS))
def test_getitem_node_names(key: str) -> None:
    """x[key] names its node after torch's last view op (a whole-dim slice makes none)."""
    def case(lib: Any) -> Any:
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        y = x[GETITEM_KEYS[key]]
        y.backward(lib.ones_like(y))
        return y, x.grad

    assert _outcome(mytorch, case) == _outcome(torch, case)


# ============================================================================ rrelu
X = [-3.0, -1.5, -0.25, -0.0, 0.0, 0.5, 2.0]
EVAL: dict[str, Callable] = {
    "F.rrelu": lambda lib, x: lib.nn.functional.rrelu(x),
    "F.rrelu_bounds": lambda lib, x: lib.nn.functional.rrelu(x, 0.05, 0.6, False),
    "F.rrelu_keywords": lambda lib, x: lib.nn.functional.rrelu(x, upper=0.5, training=False),
    "F.rrelu_inplace": lambda lib, x: lib.nn.functional.rrelu(x * 1, inplace=True),
    "F.rrelu_": lambda lib, x: lib.nn.functional.rrelu_(x * 1, 0.2, 0.4),
    "torch.rrelu": lambda lib, x: lib.rrelu(x, 0.1, 0.2),
    "torch.rrelu_": lambda lib, x: lib.rrelu_(x * 1),
    "module_eval": lambda lib, x: lib.nn.RReLU(0.1, 0.3).eval()(x),
    "module_eval_inplace": lambda lib, x: lib.nn.RReLU(inplace=True).eval()(x * 1),
    "equal_bounds": lambda lib, x: lib.nn.functional.rrelu(x, 0.3, 0.3, True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(EVAL))
def test_rrelu_eval_like_torch(name: str, dtype: str) -> None:
    """Without training rrelu is leaky_relu with slope (lower + upper) / 2: values, gradients
    (first and second) and node names are torch's."""
    def case(lib: Any) -> Any:
        x = lib.tensor(X, dtype=getattr(lib, dtype), requires_grad=True)
        y = EVAL[name](lib, x)
        w = lib.linspace(0.5, 2.0, len(X), dtype=x.dtype)
        g, = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        return y, g, g.grad_fn

    assert _outcome(mytorch, case) == _outcome(torch, case)


ERRS: dict[str, Callable] = {
    "bounds_eval": lambda lib: lib.nn.functional.rrelu(lib.ones(2), 0.5, 0.1),
    "bounds_training": lambda lib: lib.nn.functional.rrelu(lib.ones(2), 0.5, 0.1, True),
    "bounds_before_dtype": lambda lib: lib.nn.functional.rrelu(lib.ones(2, dtype=lib.long), 0.5,
                                                               0.1),
    "long_eval": lambda lib: lib.nn.functional.rrelu(lib.ones(2, dtype=lib.long)),
    "long_training": lambda lib: lib.nn.functional.rrelu(lib.ones(2, dtype=lib.long),
                                                         training=True),
    "leaf_inplace": lambda lib: lib.nn.functional.rrelu(lib.ones(2, requires_grad=True),
                                                        inplace=True),
    "empty": lambda lib: lib.nn.functional.rrelu(lib.empty(0), training=True),
    "zero_dim": lambda lib: lib.nn.functional.rrelu(lib.tensor(-2.0)),
}


@pytest.mark.parametrize("name", sorted(ERRS))
def test_rrelu_errors_and_edges_like_torch(name: str) -> None:
    assert _outcome(mytorch, ERRS[name]) == _outcome(torch, ERRS[name])


@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_draws_a_slope_per_negative_element(inplace: bool) -> None:
    lower, upper = 0.1, 0.3
    x0 = mytorch.tensor([-4.0, -1.0, -0.5, 0.0, 1.0, 3.0] * 50, requires_grad=True)
    x = x0 * 1 if inplace else x0
    y = mytorch.nn.functional.rrelu(x, lower, upper, training=True, inplace=inplace)
    assert y.grad_fn.name() == ("RreluWithNoiseBackward1" if inplace else
                                "RreluWithNoiseBackward0")
    y.sum().backward()
    xs, ys, gs = x0.detach().numpy(), y.detach().numpy(), x0.grad.numpy()
    neg, pos = xs < 0, xs > 0
    slopes = ys[neg] / xs[neg]
    assert ((slopes >= lower) & (slopes <= upper)).all()
    assert len(np.unique(slopes)) > 100                    # drawn per element
    np.testing.assert_allclose(gs[neg], slopes, rtol=1e-6)  # the gradient is the drawn slope
    assert (ys[pos] == xs[pos]).all() and (gs[pos] == 1).all()
    zero = xs == 0                                          # x = 0 draws a slope too (as torch)
    assert (ys[zero] == 0).all() and ((gs[zero] >= lower) & (gs[zero] <= upper)).all()


def test_rrelu_training_is_reproducible() -> None:
    x = mytorch.linspace(-2, 2, 41)
    mytorch.manual_seed(3)
    a = mytorch.nn.functional.rrelu(x, training=True)
    m = mytorch.nn.RReLU()
    b = m(x)
    mytorch.manual_seed(3)
    assert mytorch.equal(a, mytorch.nn.functional.rrelu(x, training=True))
    assert mytorch.equal(b, m(x)) and not mytorch.equal(a, b)
    g1, g2 = mytorch.Generator().manual_seed(7), mytorch.Generator().manual_seed(7)
    assert mytorch.equal(mytorch.rrelu(x, training=True, generator=g1),
                         mytorch.rrelu(x, training=True, generator=g2))
    assert mytorch.equal(m.eval()(x), mytorch.nn.functional.leaky_relu(x, (1 / 8 + 1 / 3) / 2))


def test_rrelu_module_like_torch() -> None:
    def case(lib: Any) -> Any:
        mods = [lib.nn.RReLU(), lib.nn.RReLU(0.1, 0.3, True), lib.nn.RReLU(lower=0.1),
                lib.nn.RReLU(1, 2), lib.nn.RReLU(upper=0.5, inplace=False)]
        return ([repr(m) for m in mods], type(mods[0]).__constants__, mods[1].training,
                [(m.lower, m.upper, m.inplace) for m in mods], dict(mods[0].named_parameters()))

    assert _outcome(mytorch, case) == _outcome(torch, case)


def test_rrelu_bfloat16_like_torch() -> None:
    """bfloat16 is computed in float32 and rounded once, as torch's kernel does."""
    pytest.importorskip("ml_dtypes")

    def case(lib: Any) -> Any:
        x = lib.tensor(X, dtype=lib.bfloat16)
        return lib.nn.functional.rrelu(x).float()

    try:
        assert _outcome(mytorch, case) == _outcome(torch, case)
    finally:
        mytorch._bfloat16.uninstall()  # bfloat16's first use wrapped mytorch's ops: unwrap them


# ============================================================================ var_mean / std_mean
MOMENT_ARGS: dict[str, tuple] = {
    "all": ((), {}), "dim0": ((0,), {}), "dim1_keepdim": ((1,), {"keepdim": True}),
    "correction0": ((0,), {"correction": 0}), "dims": (([0, 1],), {}),
    "none_biased": ((None,), {"unbiased": False}), "unbiased_true": ((1,), {"unbiased": True}),
    "correction2": ((), {"correction": 2}), "positional_unbiased": ((0, False), {}),
    "positional_keepdim": ((0, True, True), {}), "legacy_bool": ((False,), {}),
    "negative_dim": ((-1,), {"correction": 0.5, "keepdim": True}),
}


@pytest.mark.parametrize("fname", ["var_mean", "std_mean"])
@pytest.mark.parametrize("args", sorted(MOMENT_ARGS))
def test_var_mean_one_node_two_outputs(fname: str, args: str) -> None:
    def case(lib: Any) -> Any:
        x = lib.tensor([[0.5, -1.0, 2.0, 3.5], [1.0, 4.0, -2.0, 0.0], [2.5, 2.5, 1.0, -3.0]],
                       dtype=lib.float64, requires_grad=True)
        a, kw = MOMENT_ARGS[args]
        v, m = getattr(lib, fname)(x, *a, **kw)
        node = v.grad_fn
        wv = lib.linspace(0.5, 1.5, v.numel(), dtype=x.dtype).reshape(v.shape)
        g, = lib.autograd.grad((v * wv).sum() + (m * 2).sum(), x, create_graph=True)
        gv, = lib.autograd.grad(v.sum(), x, retain_graph=True)
        gm, = lib.autograd.grad(m.sum(), x)
        return (v, m, node, m.grad_fn is node, v.output_nr, m.output_nr,
                [f[0].name() for f in node.next_functions], g, gv, gm, g.grad_fn,
                [f[0] is None or f[0].name() for f in g.grad_fn.next_functions])

    a, b = _outcome(mytorch, case), _outcome(torch, case)
    assert a[1][2:] == b[1][2:]                       # nodes, names and structure
    for (x, *ra), (y, *rb) in zip(a[1][:2] + a[1][7:10], b[1][:2] + b[1][7:10]):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
        assert ra == rb


def test_var_mean_without_grad_and_float32() -> None:
    def case(lib: Any) -> Any:
        x = lib.linspace(-3, 5, 24).reshape(2, 3, 4)
        return (lib.var_mean(x, (0, 2)), lib.std_mean(x, 1, keepdim=True),
                x.var(1), x.std(), lib.std_mean(x.double(), correction=0))

    assert _outcome(mytorch, case) == _outcome(torch, case)


def test_var_mean_complex_is_real_variance_complex_mean() -> None:
    def case(lib: Any) -> Any:
        c = lib.tensor([1 + 1j, 2 - 1j, 0.5j, -1.5 + 0.25j], requires_grad=True)
        v, m = lib.var_mean(c)
        v.backward()
        return v, m, lib.std_mean(c.detach(), 0, correction=0), lib.var(c.detach()), c.grad

    assert _outcome(mytorch, case) == _outcome(torch, case)


MOMENT_ERRORS: dict[str, Callable] = {
    "var_mean_long": lambda lib: lib.var_mean(lib.ones(2, dtype=lib.long)),
    "std_mean_long": lambda lib: lib.std_mean(lib.ones(2, dtype=lib.long)),
    "var_long": lambda lib: lib.var(lib.ones(2, dtype=lib.long)),
    "std_bool": lambda lib: lib.ones(2, dtype=lib.bool).std(),
}


@pytest.mark.parametrize("name", sorted(MOMENT_ERRORS))
def test_var_mean_errors_like_torch(name: str) -> None:
    assert _outcome(mytorch, MOMENT_ERRORS[name]) == _outcome(torch, MOMENT_ERRORS[name])


DOF_CASES: dict[str, Callable] = {
    "var_mean_one": lambda lib: lib.var_mean(lib.ones(1)),
    "std_mean_dim": lambda lib: lib.std_mean(lib.ones(3, 1), 1),
    "var": lambda lib: lib.var(lib.ones(1)),
    "std_method": lambda lib: lib.ones(1).std(0),
    "correction_too_big": lambda lib: lib.var_mean(lib.ones(2, 3), 1, correction=3),
    "empty": lambda lib: lib.var_mean(lib.ones(0)),
    "empty_output": lambda lib: lib.var_mean(lib.ones(0, 3), 1),
    "empty_dim": lambda lib: lib.var_mean(lib.ones(3, 0), 1),
    "fine": lambda lib: lib.var_mean(lib.ones(3), correction=2.5),
    "biased_one": lambda lib: lib.var(lib.ones(1), unbiased=False),
}


@pytest.mark.parametrize("name", sorted(DOF_CASES))
def test_degrees_of_freedom_warning_like_torch(name: str) -> None:
    import warnings

    def caught(lib: Any) -> Any:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = _outcome(lib, DOF_CASES[name])
        here = [x for x in w if "degrees of freedom" in str(x.message)]
        return (out, [str(x.message).split(" (Triggered")[0] for x in here],
                [x.filename == __file__ for x in here])

    assert caught(mytorch) == caught(torch)
