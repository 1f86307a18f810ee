"""The autograd engine against torch: graph structure, backward options, grad modes, in-place
safety, hooks, higher-order gradients, anomaly mode, checkpointing, depth and memory.

Most tests run one snippet written against the torch API on both libraries (``lib``) and compare.
"""
from __future__ import annotations

import gc
import re
import warnings

import numpy as np
import pytest
import torch

import mytorch
from mytorch.autograd.graph import Node
from oracle import as_numpy

LIBS = pytest.mark.parametrize("lib", [mytorch, torch], ids=["mytorch", "torch"])


def same(fn, atol=1e-6):
    """Run ``fn(lib)`` on both libraries; the (nested) results must match."""
    mine, ref = fn(mytorch), fn(torch)
    _compare(mine, ref, atol)
    return mine


def _compare(a, b, atol):
    if isinstance(b, (tuple, list)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _compare(x, y, atol)
    elif isinstance(b, torch.Tensor):
        assert isinstance(a, mytorch.Tensor), (a, b)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(as_numpy(a), as_numpy(b), atol=atol, rtol=1e-6)
    else:
        assert a == b, (a, b)


def raises_like(fn, match=None):
    """Both libraries raise the same exception class (and, optionally, a matching message)."""
    with pytest.raises(Exception) as t:
        fn(torch)
    with pytest.raises(type(t.value)) as m:
        fn(mytorch)
    if match is not None:
        assert re.search(match, str(m.value)), str(m.value)
        assert re.search(match, str(t.value)), str(t.value)
    return m.value


def leaf(lib, values, dtype=None):
    return lib.tensor(values, dtype=dtype or lib.float64, requires_grad=True)


# ============================================================================ the graph
def test_grad_fn_names_and_next_functions():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x * 2 + 1).exp().sum()
        names = []
        node = y.grad_fn
        while node is not None:
            names.append(node.name())
            nxt = [n for n, _ in node.next_functions if n is not None]
            node = nxt[0] if nxt else None
        return names, x.is_leaf, y.is_leaf, y.requires_grad, x.grad_fn is None
    assert same(fn)[0] == ["SumBackward0", "ExpBackward0", "AddBackward0", "MulBackward0",
                           "torch::autograd::AccumulateGrad"]


def test_accumulate_grad_node_is_shared_and_holds_variable():
    x = mytorch.ones(2, requires_grad=True)
    a, b = x * 2, x * 3
    na, nb = a.grad_fn.next_functions[0][0], b.grad_fn.next_functions[0][0]
    assert na is nb and na.variable is x


def test_requires_grad_propagation():
    def fn(lib):
        x = leaf(lib, [1.0])
        c = lib.tensor([2.0], dtype=lib.float64)
        return (x * c).requires_grad, (c * c).requires_grad, (c + 1).grad_fn is None
    same(fn)


def test_requires_grad_only_floats():
    raises_like(lambda lib: lib.tensor([1, 2]).requires_grad_(), "floating point")


def test_cannot_change_requires_grad_of_non_leaf():
    raises_like(lambda lib: setattr(leaf(lib, [1.0]) * 2, "requires_grad", False), "leaf")


# ============================================================================ backward
def test_backward_accumulates():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        (x * x).sum().backward()
        first = x.grad.clone()
        g = x.grad
        (x * 3).sum().backward()
        return first, x.grad, g is x.grad
    same(fn)


def test_backward_with_gradient_argument():
    def fn(lib):
        x = leaf(lib, [[1.0, 2.0], [3.0, 4.0]])
        y = x ** 2
        y.backward(gradient=lib.tensor([[1.0, 0.5], [0.0, 2.0]], dtype=lib.float64))
        return x.grad
    same(fn)


def test_non_scalar_backward_needs_gradient():
    raises_like(lambda lib: (leaf(lib, [1.0, 2.0]) * 2).backward(),
                "grad can be implicitly created only for scalar outputs")


def test_gradient_shape_mismatch():
    raises_like(lambda lib: (leaf(lib, [1.0, 2.0]) * 2).backward(lib.ones(3, dtype=lib.float64)),
                "Mismatch in shape")


def test_backward_of_tensor_without_grad():
    raises_like(lambda lib: lib.ones(2).sum().backward(), "does not require grad")


def test_backward_inputs_argument():
    def fn(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        (x * w).sum().backward(inputs=[w])
        return x.grad is None, w.grad
    same(fn)


def test_freed_graph_raises():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x * x).sum()
        y.backward()
        y.backward()
    err = raises_like(fn, "Trying to backward through the graph a second time")
    assert "retain_graph=True" in str(err)


def test_retain_graph_allows_second_backward():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    same(fn)


def test_diamond_graph_counts_each_path():
    def fn(lib):
        x = leaf(lib, [0.5, -1.0])
        a = x.sin()
        y = (a * a + a.exp() * x).sum()
        y.backward()
        return x.grad
    same(fn)


def test_no_recursion_for_a_long_chain():
    x = mytorch.ones(3, dtype=mytorch.float64, requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(as_numpy(x.grad), 1.0001 ** 10_000, rtol=1e-4)
    del y  # freeing a 10,000-deep graph must not hit the recursion limit either
    gc.collect()


def test_training_loop_does_not_grow_memory():
    """1,000 steps of forward + backward + update: no graph nodes survive between iterations."""
    rng = np.random.default_rng(0)
    w = mytorch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32)).requires_grad_()
    x = mytorch.from_numpy(rng.standard_normal((16, 8)).astype(np.float32))

    def live_nodes() -> int:
        gc.collect()
        return sum(isinstance(o, Node) for o in gc.get_objects())

    def step() -> None:
        loss = (x @ w).tanh().pow(2).mean()
        loss.backward()
        with mytorch.no_grad():
            w.sub_(0.01 * w.grad)
        w.grad = None

    for _ in range(10):
        step()
    before = live_nodes()
    gc.disable()  # count what reference counting alone frees: no cycles may be left behind
    try:
        for _ in range(1000):
            step()
    finally:
        gc.enable()
    assert live_nodes() <= before + 2


def test_backward_frees_saved_tensors():
    x = mytorch.ones(3, requires_grad=True)
    y = x.exp()
    z = (y * y).sum()
    node = z.grad_fn.next_functions[0][0]  # MulBackward0 saved y twice
    assert node._saved
    z.backward()
    assert node._saved == () and node._backward is None


# ============================================================================ autograd.grad
def test_grad_returns_without_touching_dot_grad():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        (g,) = lib.autograd.grad((x ** 3).sum(), x)
        return g, x.grad is None
    same(fn)


def test_grad_of_intermediate_tensor():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * 3
        y = (h ** 2).sum()
        return lib.autograd.grad(y, [h, x])
    same(fn)


def test_grad_allow_unused():
    def fn(lib):
        x, z = leaf(lib, [1.0]), leaf(lib, [2.0])
        return lib.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)[1] is None
    assert same(fn)
    raises_like(lambda lib: lib.autograd.grad((leaf(lib, [1.0]) * 2).sum(),
                                              [leaf(lib, [2.0])]),
                "appears to not have been used in the graph")


def test_grad_materialize_grads():
    def fn(lib):
        x, z = leaf(lib, [1.0]), leaf(lib, [2.0, 3.0])
        return lib.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    same(fn)


def test_grad_of_input_not_requiring_grad():
    raises_like(lambda lib: lib.autograd.grad((leaf(lib, [1.0]) * 2).sum(), [lib.ones(1)]),
                "does not require grad")


@pytest.mark.parametrize("name, f", [
    ("cube", lambda lib, x: x ** 3),
    ("tanh", lambda lib, x: x.tanh()),
    ("sin_exp", lambda lib, x: (x.sin() * x.exp())),
    ("sigmoid", lambda lib, x: x.sigmoid()),
], ids=lambda v: v if isinstance(v, str) else "")
def test_second_derivative(name, f):
    def fn(lib):
        x = leaf(lib, [-1.5, 0.3, 2.0])
        (g,) = lib.autograd.grad(f(lib, x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = lib.autograd.grad(gg.sum(), x)
        return g, gg, ggg
    same(fn, atol=1e-10)


def test_double_backward_of_matmul():
    def fn(lib):
        rng = np.random.default_rng(1)
        a = lib.tensor(rng.standard_normal((3, 4)), requires_grad=True)
        b = lib.tensor(rng.standard_normal((4, 2)), requires_grad=True)
        y = ((a @ b) ** 2).sum()
        ga, gb = lib.autograd.grad(y, [a, b], create_graph=True)
        (ga * ga).sum().backward()
        return ga, gb, a.grad, b.grad
    same(fn, atol=1e-10)


def test_create_graph_backward_makes_grad_differentiable():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        flag = g.requires_grad
        (gg,) = lib.autograd.grad(g.sum(), x)
        return flag, gg
    same(fn)


# ============================================================================ grad modes
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "set_grad_enabled"])
def test_modes_as_context_managers(mode):
    def fn(lib):
        x = leaf(lib, [1.0])
        ctx = lib.set_grad_enabled(False) if mode == "set_grad_enabled" else getattr(lib, mode)()
        with ctx:
            y = x * 2
            inside = lib.is_grad_enabled()
        return y.requires_grad, y.grad_fn is None, inside, lib.is_grad_enabled()
    same(fn)


@pytest.mark.parametrize("mode", ["no_grad", "no_grad()", "inference_mode", "inference_mode()",
                                  "enable_grad", "enable_grad()"])
def test_modes_as_decorators(mode):
    def fn(lib):
        deco = getattr(lib, mode.rstrip("()"))
        deco = deco() if mode.endswith("()") else deco

        @deco
        def double(t):
            return t * 2

        x = leaf(lib, [1.0])
        with lib.no_grad():
            inner = double(x).requires_grad
        return double(x).requires_grad, inner, double.__name__
    same(fn)


def test_enable_grad_inside_no_grad():
    def fn(lib):
        x = leaf(lib, [1.0])
        with lib.no_grad():
            with lib.enable_grad():
                y = x * 2
            z = x * 2
        return y.requires_grad, z.requires_grad
    same(fn)


def test_set_grad_enabled_as_a_call():
    def fn(lib):
        x = leaf(lib, [1.0])
        lib.set_grad_enabled(False)
        try:
            y = x * 2
        finally:
            lib.set_grad_enabled(True)
        return y.requires_grad, lib.is_grad_enabled()
    same(fn)


@pytest.mark.parametrize("mode", [False, True])
def test_set_grad_enabled_as_a_decorator_changes_nothing_until_called(mode):
    def fn(lib):
        @lib.set_grad_enabled(mode)
        def double(t):
            return t * 2, lib.is_grad_enabled()

        after_definition = lib.is_grad_enabled()
        y, inside = double(leaf(lib, [1.0]))
        return after_definition, inside, y.requires_grad, lib.is_grad_enabled()
    same(fn)


@pytest.mark.parametrize("outer", ["no_grad", "inference_mode"])
def test_inference_mode_false_turns_grad_on(outer):
    def fn(lib):
        with getattr(lib, outer)():
            with lib.inference_mode(False):
                y = leaf(lib, [1.0]) * 2
                return lib.is_grad_enabled(), lib.is_inference_mode_enabled(), y.requires_grad
    same(fn)


def test_inference_mode_tensors():
    def fn(lib):
        with lib.inference_mode():
            a = lib.ones(3)
            inside = lib.autograd.grad_mode.torch.is_inference_mode_enabled() if lib is torch \
                else lib.autograd.is_inference_mode_enabled()
        return a.is_inference(), inside, a.requires_grad
    same(fn)


def test_inference_tensor_cannot_be_saved_for_backward():
    def fn(lib):
        with lib.inference_mode():
            a = lib.ones(3, dtype=lib.float64)
        return a * leaf(lib, [1.0, 2.0, 3.0])
    raises_like(fn, "Inference tensors cannot be saved for backward")


def test_inference_tensor_inplace_and_requires_grad_outside():
    def inplace(lib):
        with lib.inference_mode():
            a = lib.ones(3)
        a.add_(1)

    def flag(lib):
        with lib.inference_mode():
            a = lib.ones(3)
        a.requires_grad_()
    raises_like(inplace, "Inplace update to inference tensor outside InferenceMode")
    raises_like(flag, "Setting requires_grad=True on inference tensor outside InferenceMode")


def test_inference_tensor_used_without_saving_is_fine():
    def fn(lib):
        with lib.inference_mode():
            a = lib.ones(2, dtype=lib.float64)
        x = leaf(lib, [1.0, 2.0])
        (x + a).sum().backward()
        return x.grad, a.clone().is_inference()
    same(fn)


# ============================================================================ detach and .data
def test_detach_shares_memory_and_version():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        d = y.detach()
        d[0] = 10.0
        return y, d.requires_grad, d.is_leaf, y._version, d._version
    same(fn)


def test_detach_in_place():
    def fn(lib):
        x = leaf(lib, [1.0])
        y = x * 2
        y.detach_()
        return y.requires_grad, y.grad_fn is None, y.is_leaf
    same(fn)
    raises_like(lambda lib: (leaf(lib, [1.0, 2.0]) * 1)[0].detach_(), "Can't detach views in-place")


def test_data_hides_changes_from_autograd():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * x
        x.data.mul_(10)         # invisible to autograd: no version bump
        y.sum().backward()      # so no error, and the gradient uses the *new* x
        return x.grad, x.data.requires_grad, x._version
    same(fn)


def test_detach_in_place_change_is_caught():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x.exp()
        z = y * 1.0
        y.detach().mul_(10)     # detach shares the version counter: caught
        (y * z).sum().backward()
        y.sum()
    same(lambda lib: leaf(lib, [1.0]).detach()._version)
    raises_like(lambda lib: _modify_saved(lib, lambda t: t.detach().mul_(10)),
                "modified by an inplace operation")


def _modify_saved(lib, change):
    x = leaf(lib, [1.0, 2.0])
    y = x.exp()          # ExpBackward0 saves its result y
    change(y)
    y.sum().backward()


# ============================================================================ in-place safety
def test_modified_saved_tensor_message_matches_torch():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        b = x.clone()
        c = b * b
        b.add_(1)
        c.sum().backward()
    raises_like(fn, re.escape("[torch.DoubleTensor [3]], which is output 0 of Add, is at version 1;"
                              " expected version 0 instead. Hint: enable anomaly detection"))


def test_modified_leaf_input_message_matches_torch():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        d = lib.ones(2, dtype=lib.float64)
        c = x * d
        d.add_(1)
        c.sum().backward()
    raises_like(fn, re.escape("[torch.DoubleTensor [2]] is at version 1; expected version 0"))


def test_version_counter_counts_in_place_ops():
    def fn(lib):
        t = lib.zeros(3)
        v0 = t._version
        t.add_(1)
        t[0] = 5
        t.view(3).mul_(2)
        return v0, t._version
    same(fn)


def test_in_place_on_leaf_requiring_grad():
    raises_like(lambda lib: leaf(lib, [1.0]).add_(1), "a leaf Variable that requires grad")
    raises_like(lambda lib: leaf(lib, [1.0, 2.0])[0:1].mul_(2),
                "a view of a leaf Variable that requires grad")

    def under_no_grad(lib):
        x = leaf(lib, [1.0, 2.0])
        with lib.no_grad():
            x.mul_(2)
        return x, x.requires_grad, x.is_leaf
    same(under_no_grad)


def test_in_place_on_non_leaf_rebases_history():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.mul_(x)
        y.exp_()
        name = y.grad_fn.name()
        y.sum().backward()
        return name, x.grad
    same(fn)


@pytest.mark.parametrize("case", ["slice_mul", "column_add", "copy_into_buffer", "setitem",
                                  "view_of_view"])
def test_in_place_on_view_updates_base_history(case):
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        w = leaf(lib, [2.0, -3.0])
        weights = lib.arange(1.0, 7.0, dtype=lib.float64)
        if case == "slice_mul":
            base = x * 1
            base[1:3].mul_(w)
        elif case == "column_add":
            base = (x * 1).view(3, 2)
            base[:2, 1].add_(w.exp())
            weights = weights.view(3, 2)
        elif case == "copy_into_buffer":
            base = lib.zeros(6, dtype=lib.float64)
            base[2:4].copy_(w * x[:2])
        elif case == "setitem":
            base = x.sin()
            base[4:] = w ** 2
        else:
            base = (x * 1).view(2, 3)
            base[1][0:2].mul_(w)
            weights = weights.view(2, 3)
        name = base.grad_fn.name() if case != "setitem" else ""  # indexing names it CopySlices
        (base * weights).sum().backward()
        return name, x.grad if x.grad is not None else 0, w.grad
    same(fn)


# ============================================================================ hooks, retain_grad
def test_non_leaf_grad_is_none_with_warning():
    def fn(lib):
        x = leaf(lib, [1.0])
        y = x * 2
        y.backward()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = y.grad
        return g is None, [str(w.message)[:200] for w in caught], [w.category for w in caught]
    assert same(fn)[1][0].startswith("The .grad attribute of a Tensor that is not a leaf Tensor")


def test_retain_grad():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        y.retain_grad()
        (y ** 2).sum().backward()
        return y.grad, y.retains_grad, x.grad
    same(fn)


def test_register_hook_on_leaf_and_non_leaf():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        seen = []
        x.register_hook(lambda g: seen.append(g.clone()))
        y = x * 3
        y.register_hook(lambda g: g * 10)       # replaces y's gradient
        (y ** 2).sum().backward()
        return x.grad, seen
    same(fn)


def test_hook_handle_remove():
    def fn(lib):
        x = leaf(lib, [1.0])
        h = x.register_hook(lambda g: g * 100)
        h.remove()
        (x * 2).sum().backward()
        return x.grad
    same(fn)


def test_hook_on_tensor_not_requiring_grad():
    raises_like(lambda lib: lib.ones(1).register_hook(lambda g: g),
                "cannot register a hook on a tensor that doesn't require gradient")


def test_assigning_grad_checks_shape():
    raises_like(lambda lib: setattr(leaf(lib, [1.0, 2.0]), "grad", lib.ones(3, dtype=lib.float64)),
                re.escape("attempting to assign a gradient of size '[3]' to a tensor of size '[2]'"))


def test_node_hooks():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x.exp()
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append((gi[0].clone(), go[0].clone())))
        y.sum().backward()
        return seen
    same(fn)


# ============================================================================ anomaly mode
def test_detect_anomaly_names_the_forward_op(recwarn):
    def fn(lib):
        with lib.autograd.detect_anomaly():
            q = leaf(lib, [0.0, 1.0])
            r = lib.sqrt(q) * 0
            r.sum().backward()
    err = raises_like(fn, r"Function 'SqrtBackward0' returned nan values in its 0th output\.")
    messages = [str(w.message) for w in recwarn.list]
    traced = [m for m in messages if m.startswith("Error detected in SqrtBackward0")]
    assert traced and "test_autograd_engine.py" in traced[-1] and "lib.sqrt(q)" in traced[-1]
    assert err


def test_set_detect_anomaly_switches():
    def fn(lib):
        where = torch if lib is torch else mytorch.autograd  # torch has them at top level only
        before = where.is_anomaly_enabled()
        with lib.autograd.set_detect_anomaly(True):
            inside = where.is_anomaly_enabled()
        lib.autograd.set_detect_anomaly(True, check_nan=False)
        nan_flag = where.is_anomaly_check_nan_enabled()
        lib.autograd.set_detect_anomaly(False)
        return before, inside, nan_flag, where.is_anomaly_enabled()
    same(fn)


def test_nan_without_anomaly_mode_is_silent():
    def fn(lib):
        q = leaf(lib, [0.0])
        (lib.sqrt(q) * 0).sum().backward()
        return bool(q.grad.isnan().all())
    same(fn)


# ============================================================================ checkpoint
@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_gradients_match(reentrant):
    def fn(lib):
        x = leaf(lib, [0.5, 1.0, 2.0])
        w = leaf(lib, [1.5, -1.0, 3.0])
        y = lib.utils.checkpoint.checkpoint(lambda a: (a * w).sin() * a, x,
                                            use_reentrant=reentrant)
        (y ** 2).sum().backward()
        return y, x.grad, w.grad
    same(fn)


def test_checkpoint_recomputes_forward_once_in_backward():
    calls = []

    def block(a):
        calls.append(1)
        return a.exp()

    x = mytorch.ones(3, requires_grad=True)
    y = mytorch.utils.checkpoint.checkpoint(block, x, use_reentrant=True)
    assert y.grad_fn.name() == "CheckpointFunctionBackward" and len(calls) == 1
    y.sum().backward()
    assert len(calls) == 2


def test_checkpoint_keeps_random_numbers():
    def fn(lib):
        lib.manual_seed(0)
        x = leaf(lib, [1.0] * 5)
        y = lib.utils.checkpoint.checkpoint(lambda a: a * lib.rand(5, dtype=lib.float64), x,
                                            use_reentrant=True)
        y.sum().backward()
        return bool((x.grad == y.detach()).all())
    assert same(fn) is True


def test_checkpoint_warns_without_use_reentrant():
    x = mytorch.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        mytorch.utils.checkpoint.checkpoint(lambda a: a * 2, x)
