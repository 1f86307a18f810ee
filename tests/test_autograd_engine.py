"""The autograd engine against torch: graph structure, backward options, grad modes, in-place
safety, hooks, higher-order gradients, anomaly mode, checkpointing, depth and memory.

Most tests run one snippet written against the torch API on both libraries (``lib``) and compare.
"""
from __future__ import annotations

import gc
import os
import re
import warnings
import weakref

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


# ============================================================================ saved tensors
def _nn(lib):
    import mytorch.nn  # noqa: F401  (not imported by ``import mytorch``)

    return lib.nn.functional


# ops whose backward reads their own output: changing it in place must be caught
SAVES_OUTPUT = {
    "max": lambda lib, a: a.max(),
    "min": lambda lib, a: a.min(),
    "amax": lambda lib, a: a.amax(0),
    "amin": lambda lib, a: a.amin(0),
    "prod": lambda lib, a: a.prod(),
    "prod_dim": lambda lib, a: a.reshape(2, 2).prod(1),
    "cumprod": lambda lib, a: a.cumprod(0),
    "logsumexp": lambda lib, a: a.logsumexp(0),
    "norm": lambda lib, a: a.norm(),
    "std": lambda lib, a: a.std(),
    "det": lambda lib, a: lib.linalg.det(a.reshape(2, 2)),
    "inverse": lambda lib, a: lib.linalg.inv(a.reshape(2, 2)),
    "exp": lambda lib, a: a.exp(),
    "softmax": lambda lib, a: _nn(lib).softmax(a, 0),
    "pow_tensor": lambda lib, a: lib.pow(2.0, a),
}


@pytest.mark.parametrize("op", SAVES_OUTPUT)
def test_in_place_change_of_a_saved_output_is_caught(op):
    def fn(lib):
        x = leaf(lib, [1.5, 0.5, 2.0, -1.0])
        y = SAVES_OUTPUT[op](lib, x * 1)
        y.mul_(2)
        y.sum().backward()
    raises_like(fn, "modified by an inplace operation")


# ops whose backward reads an input: changing it in place must be caught
SAVES_INPUT = {
    "logsumexp": lambda lib, a, t: a.logsumexp(0),
    "mse_input": lambda lib, a, t: _nn(lib).mse_loss(a, t),
    "mse_target": lambda lib, a, t: _nn(lib).mse_loss(t, a.detach()),
}


@pytest.mark.parametrize("op", SAVES_INPUT)
def test_in_place_change_of_a_saved_input_is_caught(op):
    def fn(lib):
        x = leaf(lib, [1.5, 0.5, 2.0, -1.0])
        t = leaf(lib, [0.3, -0.2, 0.7, 1.1]) * 1
        a = x * 1
        y = SAVES_INPUT[op](lib, a, t)
        (t if op == "mse_target" else a).add_(1)
        y.sum().backward()
    raises_like(fn, "modified by an inplace operation")


@pytest.mark.parametrize("op", ["where", "gather", "index_select", "masked_fill"])
def test_in_place_change_of_a_saved_index_or_mask_is_caught(op):
    def fn(lib):
        x = leaf(lib, [1.5, 0.5, 2.0, -1.0])
        if op in ("where", "masked_fill"):
            c = x > 0
            y = lib.where(c, x, x * 2) if op == "where" else x.masked_fill(c, 0.0)
        else:
            c = lib.tensor([0, 2, 1])
            y = x.gather(0, c) if op == "gather" else x.index_select(0, c)
        c.fill_(0)
        y.sum().backward()
    raises_like(fn, "modified by an inplace operation")


def test_erfinv_recomputes_from_its_input_like_torch():
    def fn(lib):
        x = leaf(lib, [0.1, -0.4, 0.7])
        y = x.erfinv()
        z = y * 1
        y.mul_(3)               # torch saves the input, not the output: no error
        z.sum().backward()
        return x.grad
    same(fn, atol=1e-10)


def test_version_error_names_the_producer_of_a_saved_output():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x.exp()
        z = y * 1
        y.add_(1)               # y's grad_fn is now AddBackward0, but Exp saved it
        (z * y).sum().backward()
    raises_like(fn, re.escape("[torch.DoubleTensor [3]], which is output 0 of Exp, is at version 1"))


@pytest.mark.parametrize("change", ["base", "view"])
def test_version_error_names_a_changed_view_as_strided(change):
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        a = x * 1
        v = a[1:]
        w = v * v
        (a if change == "base" else v).mul_(2)
        w.sum().backward()
    raises_like(fn, re.escape("[torch.DoubleTensor [2]], which is output 0 of AsStrided,"))


def test_version_error_names_copy_slices():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        a = x * 1
        c = a * a
        a[0:1].mul_(3)
        c.sum().backward()
    raises_like(fn, re.escape("which is output 0 of torch::autograd::CopySlices, is at version 1"))


# saved only when the other operand needs the gradient (torch's rule): no false version errors
NOT_SAVED = {
    "mul_number": lambda lib, a, c: a * 3,
    "mul_constant": lambda lib, a, c: a * c,
    "reciprocal_number": lambda lib, a, c: 1 / a,
    "div_by_constant": lambda lib, a, c: c / (c + a.detach()) + a / c,
    "lerp_number": lambda lib, a, c: lib.lerp(a, c, 0.3),
    "matmul_constant": lambda lib, a, c: a.reshape(2, 2) @ c.reshape(2, 2),
    "embedding_weight": lambda lib, a, c: _nn(lib).embedding(lib.tensor([1, 0, 1]),
                                                              a.reshape(2, 2)),
}


@pytest.mark.parametrize("op", NOT_SAVED)
def test_no_version_error_for_operands_backward_does_not_read(op):
    def fn(lib):
        x = leaf(lib, [1.5, 0.5, 2.0, -1.0])
        c = lib.tensor([0.5, 2.0, -1.0, 3.0], dtype=lib.float64)
        a = x * 1
        y = NOT_SAVED[op](lib, a, c)
        a.mul_(1.5)
        y.sum().backward()
        return x.grad
    same(fn)


def test_second_backward_works_when_no_node_saved_a_tensor():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x + x).sum()
        y.backward()
        y.backward()
        return x.grad
    same(fn)


def test_second_backward_fails_only_at_a_node_that_saved_tensors():
    def fn(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x * x + x).sum()
        y.backward()
        y.backward()
    raises_like(fn, "Trying to backward through the graph a second time")


def test_custom_function_releases_what_it_saved():
    x = mytorch.ones(3, requires_grad=True)
    h = x * 2

    class Twice(mytorch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 2 + a * 0

    y = Twice.apply(h)
    ref = weakref.ref(h)
    node = y.grad_fn
    del h
    assert ref() is not None            # saved for backward
    assert "_to_save" not in node.__dict__
    y.sum().backward()
    assert ref() is None                # backward freed it, as torch does
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        node.saved_tensors


# ============================================================================ freeing the graph
GRAPHS = {
    "pointwise": lambda lib, x: (x * 2).exp().tanh().sigmoid().relu().sqrt().sum(),
    "reductions": lambda lib, x: x.amax(1).sum() + x.prod() + x.cumprod(0).logsumexp(0).sum()
    + x.norm() + x.std(),
    "linalg": lambda lib, x: lib.linalg.inv(x[:3, :3] + 4 * lib.eye(3)).sum()
    + lib.linalg.det(x[:3, :3]) + lib.linalg.matrix_norm(x, ord=2),
    "nn": lambda lib, x: _nn(lib).log_softmax(x, 1).sum() + _nn(lib).softmax(x, 0).sum()
    + _nn(lib).mse_loss(x, x.detach() * 2),
    "in_place": lambda lib, x: (x * 1).exp_().sum(),
    "custom_function": lambda lib, x: _custom_exp().apply(x).sum(),
    "checkpoint": lambda lib, x: lib.utils.checkpoint.checkpoint(
        lambda a: a.sin().exp(), x, use_reentrant=False).sum(),
}


def _custom_exp() -> type:
    """The Exp Function of test_autograd_function (imported late: that module imports this one)."""
    from test_autograd_function import make_functions

    return make_functions(mytorch)["Exp"]


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_graph_is_freed_by_reference_counting_alone(graph):
    """Like torch, a graph never back-propagated goes away with its output: no reference cycle
    (an op's closure keeping the op's own output) may wait for the cyclic garbage collector."""
    x = mytorch.from_numpy(np.random.default_rng(0).standard_normal((3, 4))).requires_grad_()
    gc.collect()
    gc.disable()
    try:
        y = GRAPHS[graph](mytorch, x)
        nodes, stack = [], [y.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or any(n is node for n in nodes):
                continue
            nodes.append(node)
            stack.extend(n for n, _ in node.next_functions)
        refs = [weakref.ref(n) for n in nodes if not isinstance(n, mytorch.autograd.graph
                                                                 .AccumulateGrad)]
        saved = [weakref.ref(t._data) for n in nodes for t in n._saved[::2]
                 if getattr(t, "_data", None) is not None and t._data is not x._data]
        del y, nodes, node, stack
        assert all(r() is None for r in refs), [r() for r in refs if r() is not None]
        assert all(r() is None for r in saved)
    finally:
        gc.enable()


def test_a_leaf_does_not_keep_its_accumulate_grad_alive():
    gc.collect()
    gc.disable()
    try:
        x = mytorch.ones(2, requires_grad=True)
        y = x * 2
        acc = weakref.ref(y.grad_fn.next_functions[0][0])
        assert y.grad_fn.next_functions[0][0] is (x * 3).grad_fn.next_functions[0][0]
        del y
        assert acc() is None
        ref = weakref.ref(x)
        z = x * 2
        del x
        assert ref() is not None     # the graph keeps its leaf
        del z
        assert ref() is None
    finally:
        gc.enable()


def test_backward_with_create_graph_warns_once():
    mytorch.autograd.api._create_graph_warned = False
    x = mytorch.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="create a reference cycle between the parameter and its "
                                         "gradient"):
        (x * x).sum().backward(create_graph=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * x).sum().backward(create_graph=True)
        mytorch.autograd.grad((x * x).sum(), x, create_graph=True)


def test_requires_grad_on_integers_messages():
    raises_like(lambda lib: lib.tensor([1, 2]).requires_grad_(),
                "^only Tensors of floating point dtype can require gradients$")
    raises_like(lambda lib: setattr(lib.tensor([1, 2]), "requires_grad", True),
                "^only Tensors of floating point and complex dtype can require gradients$")


def test_anomaly_trace_shows_only_the_callers_frames(recwarn):
    with mytorch.autograd.detect_anomaly():
        q = mytorch.tensor([0.0, 1.0], requires_grad=True)
        r = (q * 1).sqrt_() * 0  # an in-place op: more of mytorch's own frames on the stack
        with pytest.raises(RuntimeError):
            r.sum().backward()
    trace = [str(w.message) for w in recwarn.list if "Error detected in" in str(w.message)][-1]
    lib_dir = os.path.dirname(mytorch.__file__)
    assert "(q * 1).sqrt_()" in trace and lib_dir not in trace, trace


# ============================================================================ hooks
def test_hooks_and_retain_grad_on_each_output_of_a_multi_output_function():
    def fn(lib):
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return ga * 2 + gb * 3

        x = leaf(lib, [1.0, 2.0])
        a, b = Split.apply(x)
        seen = []
        a.register_hook(lambda g: seen.append(g.clone()))
        b.register_hook(lambda g: g * 10)
        a.retain_grad()
        b.retain_grad()
        (a * a + b).sum().backward()
        return x.grad, a.grad, b.grad, seen
    same(fn)


def test_node_pre_hook_sees_every_output_of_a_multi_output_node():
    def fn(lib):
        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                return ga + gb

        x = leaf(lib, [1.0, 2.0])
        a, b = Split.apply(x)
        a.grad_fn.register_prehook(lambda gs: (gs[0] * 0, gs[1] * 5))
        (a + b).sum().backward()
        return x.grad
    same(fn)


def test_node_hook_return_value_replaces_its_gradients():
    def fn(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, -1.0])
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 100, None))
        y.sum().backward()
        return x.grad, w.grad is None
    same(fn)


# ============================================================================ double backward
DOUBLE = {
    "prod_zero": lambda lib, x: x.prod(),
    "prod_zeros_dim": lambda lib, x: x.reshape(2, 3).prod(0),
    "prod_two_zeros": lambda lib, x: (x * lib.tensor([1.0, 1, 1, 0, 1, 1], dtype=lib.float64))
    .prod(),
    "cumprod_zero": lambda lib, x: x.cumprod(0),
    "cumprod_zeros_2d": lambda lib, x: x.reshape(2, 3).cumprod(1),
    "erfinv": lambda lib, x: (x * 0.3).erfinv(),
    "mul_": lambda lib, x: (x * 1).mul_(x),
    "mul_number_": lambda lib, x: (x * x).mul_(3),
    "view_mul_": lambda lib, x: _view_mul(x),
    "setitem": lambda lib, x: _setitem(lib, x),
    "matrix_norm_2": lambda lib, x: lib.linalg.matrix_norm(x.reshape(2, 3) + 1, ord=2),
    "matrix_norm_nuc": lambda lib, x: lib.linalg.matrix_norm(x.reshape(3, 2) + 1, ord="nuc"),
    "scatter_reduce_prod": lambda lib, x: (x + 1).scatter_reduce(
        0, lib.tensor([0, 1, 0, 2]), x[:4] * 2 + 1, "prod"),
    "det_singular": lambda lib, x: lib.linalg.det(x[:4].reshape(2, 2) * 0 + lib.tensor(
        [[1.0, 2.0], [2.0, 4.0]], dtype=lib.float64) + x[:4].reshape(2, 2) * 0),
}


def _view_mul(x):
    y = x * 1
    y[1:3].mul_(x[:2])
    return y


def _setitem(lib, x):
    b = lib.zeros(6, dtype=lib.float64)
    b[1:3] = x[:2] * x[3:5]
    return b


@pytest.mark.parametrize("op", DOUBLE)
def test_second_derivatives_match_torch(op):
    def fn(lib):
        x = leaf(lib, [2.0, 0.0, -1.5, 0.5, 3.0, 0.7])
        y = DOUBLE[op](lib, x)
        w = lib.from_numpy(np.linspace(0.5, 2.0, y.numel()).reshape(tuple(y.shape)))
        (g,) = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return g, gg
    same(fn, atol=1e-9)


# piecewise-linear ops: the gradient is a function of the input too, with derivative zero
PIECEWISE = {
    "relu": lambda lib, x: lib.relu(x),
    "leaky_relu": lambda lib, x: _nn(lib).leaky_relu(x, 0.1),
    "hardtanh": lambda lib, x: _nn(lib).hardtanh(x),
    "relu6": lambda lib, x: _nn(lib).relu6(x),
    "prelu": lambda lib, x: _nn(lib).prelu(x, lib.tensor([0.25], dtype=lib.float64)),
    "elu": lambda lib, x: _nn(lib).elu(x, 0.7),
    "max_pool1d": lambda lib, x: _nn(lib).max_pool1d(x, 2),
    "max_pool2d": lambda lib, x: _nn(lib).max_pool2d(x.unsqueeze(0), 2),
    "avg_pool1d": lambda lib, x: _nn(lib).avg_pool1d(x, 2),
    "adaptive_max_pool1d": lambda lib, x: _nn(lib).adaptive_max_pool1d(x, 2),
    "adaptive_avg_pool2d": lambda lib, x: _nn(lib).adaptive_avg_pool2d(x.unsqueeze(0), (1, 3)),
    "nll_loss": lambda lib, x: _nn(lib).nll_loss(x, lib.tensor([1, 3])),
}


@pytest.mark.parametrize("op", PIECEWISE)
def test_second_derivative_of_piecewise_linear_ops_is_zero_not_an_error(op):
    def fn(lib):
        x = leaf(lib, [[-1.5, 0.0, 0.7, 2.0], [0.3, -0.2, 0.0, 7.0]])
        y = PIECEWISE[op](lib, x)
        w = lib.from_numpy(np.linspace(0.5, 2.0, y.numel()).reshape(tuple(y.shape)))
        (g,) = lib.autograd.grad((y * w).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return g, g.requires_grad, gg
    same(fn)


def test_prelu_mixed_second_derivatives_at_zero_match_torch():
    def fn(lib):
        x = leaf(lib, [-1.0, 0.0, 2.0])
        w = leaf(lib, [0.25])
        g = leaf(lib, [1.0, 2.0, 3.0])
        y = _nn(lib).prelu(x, w)
        gx, gw = lib.autograd.grad(y, [x, w], g, create_graph=True)
        v = lib.tensor([0.5, 0.7, 1.1], dtype=lib.float64)
        return [lib.autograd.grad(out, t, retain_graph=True, allow_unused=True)[0]
                for out in ((gx * v).sum(), gw.sum()) for t in (x, w, g)]
    same(fn)


def test_det_of_a_singular_matrix_has_the_adjugate_as_gradient():
    """torch's create_graph path gives the adjugate (its plain backward returns 0 here)."""
    def fn(lib):
        a = leaf(lib, [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
        (g,) = lib.autograd.grad(lib.linalg.det(a), a, create_graph=True)
        return g
    ref = same(fn)
    a = leaf(mytorch, [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    mytorch.linalg.det(a).backward()
    np.testing.assert_allclose(as_numpy(a.grad), as_numpy(ref), atol=1e-12)


# ============================================================================ checkpoint variants
@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_with_an_input_that_needs_no_grad(reentrant):
    def fn(lib):
        w = leaf(lib, [1.5, -1.0, 3.0])
        x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's reentrant variant warns here
            y = lib.utils.checkpoint.checkpoint(lambda a: (a * w).sin() * w, x,
                                                use_reentrant=reentrant)
        if not y.requires_grad:
            return False, w.grad is None
        (y ** 2).sum().backward()
        return True, w.grad
    assert same(fn)[0] is (not reentrant)


def test_non_reentrant_checkpoint_with_grad_inputs_and_double_backward():
    def fn(lib):
        x = leaf(lib, [0.5, 1.0, 2.0])
        w = leaf(lib, [1.5, -1.0, 3.0])
        h = w * 2  # a tensor from outside the region, used inside it
        y = lib.utils.checkpoint.checkpoint(lambda a, b: ((a * h).sin() * a).sum() * b, x,
                                            lib.tensor(2.0, dtype=lib.float64),
                                            use_reentrant=False)
        gx, gw = lib.autograd.grad(y, [x, w], create_graph=True)
        (hx,) = lib.autograd.grad((gx * gx).sum() + gw.sum(), x)
        y2 = lib.utils.checkpoint.checkpoint(lambda a: (a * w).exp().sum(), x,
                                             use_reentrant=False)
        y2.backward(inputs=[w])
        return y, gx, gw, hx, x.grad is None, w.grad
    same(fn)


@pytest.mark.parametrize("how", ["grad", "inputs"])
def test_reentrant_checkpoint_refuses_grad_and_backward_inputs(how):
    def fn(lib):
        x = leaf(lib, [0.5, 1.0])
        y = lib.utils.checkpoint.checkpoint(lambda a: a.exp(), x, use_reentrant=True).sum()
        if how == "grad":
            lib.autograd.grad(y, x)
        else:
            y.backward(inputs=[x])
    raises_like(fn, "When use_reentrant=True, torch.utils.checkpoint is incompatible with "
                    r"\.grad\(\) or passing an `inputs` parameter to \.backward\(\)")


def test_non_reentrant_checkpoint_keeps_the_graph_drops_saved_tensors_recomputes_on_use():
    """As torch: the region's normal graph stays (SinBackward0, MulBackward0), but nothing it
    saved for backward is kept; the first node that needs a saved tensor recomputes them all."""
    calls, inner = [], []

    def block(lib):
        def f(a):
            calls.append(1)
            e = a.exp()
            if lib is mytorch:
                inner.append(weakref.ref(e._data))
            return e.sin(), a * 2
        return f

    names = {}
    for lib in (torch, mytorch):
        x = leaf(lib, [1.0, 1.0, 1.0])
        y, z = lib.utils.checkpoint.checkpoint(block(lib), x, use_reentrant=False)
        names[lib.__name__] = (type(y.grad_fn).__name__ if lib is torch else y.grad_fn.name(),
                               [type(n).__name__ if lib is torch else n.name()
                                for n, _ in y.grad_fn.next_functions])
    assert names["torch"] == names["mytorch"] == ("SinBackward0", ["ExpBackward0"])
    calls.clear()
    x = mytorch.ones(3, dtype=mytorch.float64, requires_grad=True)
    y, z = mytorch.utils.checkpoint.checkpoint(block(mytorch), x, use_reentrant=False)
    assert len(calls) == 1 and z.grad_fn.name() == "MulBackward0"
    gc.collect()
    assert inner[-1]() is None, "the region's saved activation should be freed after forward"
    z.sum().backward(retain_graph=True)  # MulBackward0 saved nothing it needs: no recompute
    assert len(calls) == 1
    (y.sum() + z.sum()).backward()
    assert len(calls) == 2  # once, at the first node needing a saved tensor
    np.testing.assert_allclose(as_numpy(x.grad), np.cos(np.e) * np.e + 4, rtol=1e-6)


def test_saved_tensors_hooks_see_every_saved_tensor_and_decide_what_backward_uses():
    def fn(lib):
        packed = []
        x = leaf(lib, [1.0, 2.0, 3.0])
        a = x * 2
        with lib.autograd.graph.saved_tensors_hooks(
                lambda t: (packed.append(tuple(t.shape)), t.clone())[1], lambda t: t):
            y = (a * a).exp()
        a.add_(1)  # no error: backward uses what pack returned (the values before the change)
        y.sum().backward()
        return x.grad, len(packed)
    same(fn)


def test_save_on_cpu_gives_the_same_gradients():
    def fn(lib):
        x = leaf(lib, [0.5, 1.0, 2.0])
        with lib.autograd.graph.save_on_cpu():
            y = (x.exp() * x).sin()
        y.sum().backward()
        return x.grad
    same(fn)


def test_checkpoint_passes_keyword_arguments_without_reentrant_only():
    def fn(lib):
        x = leaf(lib, [0.5, 1.0])
        y = lib.utils.checkpoint.checkpoint(lambda a, k=1.0: a * k, x, k=3.0,
                                            use_reentrant=False)
        y.sum().backward()
        return x.grad
    same(fn)
    raises_like(lambda lib: lib.utils.checkpoint.checkpoint(lambda a, k=1.0: a * k,
                                                            leaf(lib, [1.0]), k=3.0,
                                                            use_reentrant=True),
                "Unexpected keyword arguments: k")


# ============================================================================ sum_to_size
def test_sum_to_size_undoes_broadcasting():
    def fn(lib):
        x = leaf(lib, np.arange(24.0).reshape(2, 3, 4).tolist())
        outs = [x.sum_to_size(3, 1), x.sum_to_size((1, 4)), x.sum_to_size(lib.Size([2, 1, 4])),
                x.sum_to_size(2, 3, 4)]
        sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
        return outs, x.grad
    same(fn)
    raises_like(lambda lib: lib.ones(2, 3, 4).sum_to_size(5),
                re.escape("size {[5]} is not expandable to size {[2, 3, 4]}."))
