"""Custom ``autograd.Function`` and gradcheck/gradgradcheck, against torch."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import mytorch
from test_autograd_engine import leaf, raises_like, same


def make_functions(lib):
    """The same custom Functions written for either library."""

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class ScaleAdd(lib.autograd.Function):
        """a * k + b with a Python number k: one gradient per forward argument (None for k)."""

        @staticmethod
        def forward(ctx, a, k, b):
            ctx.k = k
            ctx.record = ctx.needs_input_grad
            return a * k + b

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, g

    class SplitSigns(lib.autograd.Function):
        """Two outputs: the positive and negative parts."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0), x.clamp(max=0)

        @staticmethod
        def backward(ctx, gp, gn):
            (x,) = ctx.saved_tensors
            return gp * (x > 0).to(x.dtype) + gn * (x <= 0).to(x.dtype)

    class Cube(lib.autograd.Function):
        """torch 2 style: forward without ctx, plus setup_context."""

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    class ArgMaxAndMax(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return x.max(), idx

        @staticmethod
        def backward(ctx, g, gidx):
            x, idx = ctx.saved_tensors
            out = lib.zeros_like(x)
            out[idx] = g
            return out

    class MulInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            x.mul_(k)
            ctx.mark_dirty(x)
            ctx.k = k
            return x

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    return dict(Exp=Exp, ScaleAdd=ScaleAdd, SplitSigns=SplitSigns, Cube=Cube,
                ArgMaxAndMax=ArgMaxAndMax, MulInPlace=MulInPlace)


def test_custom_exp_gradient_and_grad_fn():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [0.5, -1.0, 2.0])
        y = F["Exp"].apply(x)
        (y * y).sum().backward()
        return y, x.grad, type(y.grad_fn).__name__, len(y.grad_fn.next_functions)
    same(fn)


def test_needs_input_grad_and_non_tensor_args():
    def fn(lib):
        F = make_functions(lib)
        a, b = leaf(lib, [1.0, 2.0]), lib.tensor([3.0, 4.0], dtype=lib.float64)
        y = F["ScaleAdd"].apply(a, 3.0, b)
        y.sum().backward()
        return y, a.grad, y.grad_fn.record, len(y.grad_fn.next_functions), \
            y.grad_fn.next_functions[1][0] is None
    same(fn)


def test_multiple_outputs_one_node():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [1.0, -2.0, 3.0])
        p, n = F["SplitSigns"].apply(x)
        (p * 2 + n * 5).sum().backward()
        return p, n, x.grad, p.grad_fn is n.grad_fn
    same(fn)


def test_one_of_two_outputs_used_gets_zeros():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [1.0, -2.0, 3.0])
        p, _ = F["SplitSigns"].apply(x)
        p.sum().backward()
        return x.grad
    same(fn)


def test_setup_context_style():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [1.0, 2.0])
        F["Cube"].apply(x).sum().backward()
        return x.grad
    same(fn)


def test_mark_non_differentiable():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [1.0, 5.0, 3.0])
        m, idx = F["ArgMaxAndMax"].apply(x)
        m.backward()
        return m, idx, idx.requires_grad, x.grad
    same(fn)


def test_mark_dirty():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [1.0, 2.0])
        h = x * 1
        y = F["MulInPlace"].apply(h, 3.0)
        y.sum().backward()
        return y is h, x.grad, h._version
    same(fn)


def test_no_input_requires_grad_gives_no_graph():
    def fn(lib):
        F = make_functions(lib)
        y = F["Exp"].apply(lib.ones(2))
        return y.requires_grad, y.grad_fn is None
    same(fn)


def test_forward_runs_without_recording():
    def fn(lib):
        seen = []

        class Probe(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                inner = x * 2
                seen.append((inner.requires_grad, lib.is_grad_enabled()))
                return inner

            @staticmethod
            def backward(ctx, g):
                return g * 2

        Probe.apply(leaf(lib, [1.0]))
        return seen
    same(fn)


def test_wrong_number_of_gradients():
    def fn(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return g

        Bad.apply(leaf(lib, [1.0]), 2).sum().backward()
    raises_like(fn, re.escape("function BadBackward returned an incorrect number of gradients "
                              "(expected 2, got 1)"))


def test_wrong_gradient_shape():
    def fn(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return lib.ones(5, dtype=lib.float64)

        Bad.apply(leaf(lib, [1.0, 2.0, 3.0])).sum().backward()
    raises_like(fn, re.escape("Function BadBackward returned an invalid gradient at index 0 - got "
                              "[5] but expected shape compatible with [3]"))


def test_broadcastable_gradient_is_summed():
    def fn(lib):
        class Wide(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g.expand(4, 3) * 1.0

        x = leaf(lib, [1.0, 2.0, 3.0])
        Wide.apply(x).sum().backward()
        return x.grad
    same(fn)


def test_saved_tensors_freed_after_backward():
    def fn(lib):
        F = make_functions(lib)
        y = F["Exp"].apply(leaf(lib, [1.0]))
        y.sum().backward()
        y.grad_fn.saved_tensors
    raises_like(fn, "Trying to backward through the graph a second time")


def test_saved_tensor_modified_in_place():
    def fn(lib):
        F = make_functions(lib)
        y = F["Exp"].apply(leaf(lib, [1.0]))
        y.add_(1)
        y.sum().backward()
    raises_like(fn, "modified by an inplace operation")


def test_double_backward_through_custom_function():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [0.3, 1.2])
        (g,) = lib.autograd.grad(F["Cube"].apply(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg
    same(fn)


def test_once_differentiable_runs_backward_without_graph():
    def fn(lib):
        from importlib import import_module
        once = import_module(lib.__name__ + ".autograd.function").once_differentiable

        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = leaf(lib, [3.0])
        Sq.apply(x).sum().backward()
        return x.grad
    same(fn)


def test_legacy_call_is_refused():
    def fn(lib):
        F = make_functions(lib)
        F["Exp"]()(leaf(lib, [1.0]))
    raises_like(fn, "Legacy autograd function with non-static forward method is deprecated")


# ============================================================================ gradcheck
def test_gradcheck_passes_for_correct_function():
    def fn(lib):
        F = make_functions(lib)
        x = leaf(lib, [0.1, -0.7, 1.3])
        return lib.autograd.gradcheck(F["Exp"].apply, (x,)), \
            lib.autograd.gradgradcheck(F["Cube"].apply, (x,))
    assert same(fn) == (True, True)


def _wrong(lib):
    class WrongExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # wrong: should be g * exp(x)

    return WrongExp


def test_gradcheck_catches_a_wrong_backward():
    for lib in (torch, mytorch):
        with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to "
                                               "input 0") as err:
            lib.autograd.gradcheck(_wrong(lib).apply, (leaf(lib, [0.5, 1.5]),))
    assert isinstance(err.value, mytorch.autograd.GradcheckError)

    def quiet(lib):
        return lib.autograd.gradcheck(_wrong(lib).apply, (leaf(lib, [0.5]),),
                                      raise_exception=False)
    assert same(quiet) is False


def test_gradgradcheck_catches_a_wrong_double_backward():
    def fn(lib):
        class BadSecond(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 2

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x.detach()  # first derivative right, but cut from the graph in x

        x = leaf(lib, [0.5, 1.5])
        return lib.autograd.gradcheck(BadSecond.apply, (x,)), \
            lib.autograd.gradgradcheck(BadSecond.apply, (x,), raise_exception=False)
    assert same(fn) == (True, False)


def test_gradcheck_needs_an_input_requiring_grad():
    raises_like(lambda lib: lib.autograd.gradcheck(lambda t: t * 2, (lib.ones(2),)),
                "at least one input tensor to require gradient")


def test_gradcheck_warns_for_float32():
    x = mytorch.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="not a double precision floating point"):
        mytorch.autograd.gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


@pytest.mark.parametrize("name, f, shapes", [
    ("matmul", lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("broadcast_mul", lambda a, b: a * b, [(3, 1), (1, 4)]),
    ("softmax_like", lambda a: a.exp() / a.exp().sum(1, keepdim=True), [(2, 5)]),
    ("multi_output", lambda a: (a.sin(), a.cos() * 2), [(3,)]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradcheck_and_gradgradcheck_of_compositions(name, f, shapes):
    rng = np.random.default_rng(3)
    xs = [mytorch.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert mytorch.autograd.gradcheck(f, xs)
    assert mytorch.autograd.gradgradcheck(f, xs)


def test_gradcheck_no_warning_for_double():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mytorch.autograd.gradcheck(lambda t: t.sin(), (leaf(mytorch, [0.3]),))


def test_saved_output_is_differentiable_and_makes_no_reference_cycle():
    """ctx keeps a saved *output* without holding the tensor (which holds ctx): a second
    derivative still flows through it, and the graph goes away with the output."""
    import gc
    import weakref

    def fn(lib):
        Exp = make_functions(lib)["Exp"]
        x = leaf(lib, [0.5, -1.0])
        y = Exp.apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg
    same(fn)
    gc.disable()
    try:
        y = make_functions(mytorch)["Exp"].apply(mytorch.ones(2, requires_grad=True))
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("op", ["mul_(2)", "add_(a)", "sub_(1)", "relu_()", "div_(a)",
                                "copy_(a * 5)", "masked_fill_(a > 0, 1.0)", "__setitem__(0, 7.0)"])
def test_in_place_op_on_a_second_output_of_a_function(op):
    """An in-place op on output 1 of a node with two outputs: its new node's edge leads to that
    output (not output 0), and the tensor is then output 0 of the new node, as in torch."""
    results = []
    for lib in (mytorch, torch):
        class TwoOutputs(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return 2 * ga + 3 * gb

        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        a, b = TwoOutputs.apply(x)
        eval("b." + op, {"a": a, "b": b})
        (a + b * b).sum().backward()
        results.append((x.grad.tolist(), b.output_nr, b.grad_fn.name()))
    assert results[0] == results[1]
