"""The backward pass's floating-point state (``autograd/engine.py``).

A backward pass switches NumPy's warnings off once for the whole pass (``FP_STATE``), so that the
nodes compute inf and nan silently, as torch's do, without paying for it node by node. The user's
code that the pass runs (tensor and leaf hooks, node hooks, post-accumulate hooks, a custom
Function's backward, saved-tensor hooks, module backward hooks) must not notice: it runs in the
caller's own NumPy error state, as it would outside backward.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from oracle import assert_same

import mytorch
from mytorch.autograd.graph import saved_tensors_hooks

BIG = 3e38  # float32: BIG * BIG, BIG + BIG overflow to inf


def _seen(log: list, tag: str) -> None:
    """A hook's body: note the NumPy error state it runs in, and whether the user's own NumPy
    overflow still reaches the user there (as a warning, or an error under ``over="raise"``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            np.float32(BIG) * np.float32(BIG)
            noticed = any(issubclass(w.category, RuntimeWarning) for w in caught)
        except FloatingPointError:
            noticed = True
    log.append((tag, np.geterr()["over"], noticed))


def _hooked_graph(lib, log: list):
    """A small graph with every kind of user hook on it; returns ``(loss, leaf)``."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.register_hook(lambda g: _seen(log, "leaf hook"))
    x.register_post_accumulate_grad_hook(lambda t: _seen(log, "post-accumulate hook"))

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            _seen(log, "Function.backward")
            (t,) = ctx.saved_tensors
            return 2 * t * g

    y = x * 2.0                                           # a rule node (MulBackward0)
    y.register_hook(lambda g: _seen(log, "tensor hook"))
    z = Square.apply(y).exp()
    z.grad_fn.register_prehook(lambda gs: _seen(log, "node pre-hook"))
    z.grad_fn.register_hook(lambda gi, go: _seen(log, "node hook"))
    return z.sum(), x


TAGS = {"leaf hook", "post-accumulate hook", "Function.backward", "tensor hook",
        "node pre-hook", "node hook"}


@pytest.mark.parametrize("mode", ["plain", "create_graph", "retain_grad", "anomaly"])
def test_user_hooks_run_in_the_callers_numpy_state(mode):
    log: list = []
    loss, x = _hooked_graph(mytorch, log)
    if mode == "retain_grad":
        loss.retain_grad()
    with np.errstate(over="raise"):
        outside = np.geterr()["over"]
        if mode == "anomaly":
            with mytorch.autograd.detect_anomaly():
                loss.backward()
        else:
            loss.backward(create_graph=mode == "create_graph")
    assert {tag for tag, _, _ in log} == TAGS
    assert all(over == outside and noticed for _, over, noticed in log), log
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the hooks' over="raise" shows; the default warns)
        log.clear()
        loss, x = _hooked_graph(mytorch, log)
        loss.backward()
    assert all(over == "warn" and noticed for _, over, noticed in log), log


def test_hooks_of_autograd_grad_and_nested_backward_see_the_callers_state():
    log: list = []
    x = mytorch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    y.register_hook(lambda g: _seen(log, "outer"))

    def inner(g):  # a hook that runs a backward pass of its own
        with mytorch.enable_grad():
            a = mytorch.tensor([1.0], requires_grad=True)
            b = a * 2.0
            b.register_hook(lambda g: _seen(log, "inner"))
            b.sum().backward()

    y.register_hook(inner)
    with np.errstate(over="raise"):
        (gx,) = mytorch.autograd.grad((y * y).sum(), x)
    assert [(tag, over) for tag, over, _ in log] == [("outer", "raise"), ("inner", "raise")]
    np.testing.assert_allclose(gx.numpy(), [18.0, 36.0])


def test_saved_tensor_hooks_and_module_hooks_see_the_callers_state():
    log: list = []
    with saved_tensors_hooks(lambda t: t, lambda t: (_seen(log, "unpack"), t)[1]):
        x = mytorch.tensor([1.0, 2.0], requires_grad=True)
        loss = (x * x).sum()
    lin = mytorch.nn.Linear(2, 1)
    lin.register_full_backward_hook(lambda m, gi, go: _seen(log, "module hook"))
    loss = loss + lin(x).sum()
    with np.errstate(over="raise"):
        loss.backward()
    assert {tag for tag, _, _ in log} == {"unpack", "module hook"}
    assert all(over == "raise" for _, over, _ in log), log
    assert np.geterr()["over"] == "warn"  # and the pass put the state back


def _overflowing_backward(lib, hook: bool):
    """Gradients that overflow to inf in a rule node (``BIG * BIG``), in a closure node (matmul)
    and where two finite gradients meet (the engine's sum, ``BIG + BIG``); with ``hook``, the
    rule nodes run in full (``run_in_full``)."""
    x = lib.ones(2, 2, requires_grad=True)
    v = lib.ones(2, 2, requires_grad=True)
    w = lib.full((2, 2), BIG, requires_grad=True)
    y = x * BIG
    if hook:
        y.register_hook(lambda g: None)
        y.retain_grad()
    loss = (y * BIG).sum() + (v * BIG).sum() + (v * BIG).sum() + (w @ w).sum()
    loss.backward()
    return x.grad, v.grad, w.grad


@pytest.mark.parametrize("hook", [False, True], ids=["plain", "in_full"])
def test_overflow_in_backward_is_silent_as_in_torch_whatever_the_callers_state(hook):
    ref = _overflowing_backward(torch, hook)
    for state in ("raise", "warn"):
        with np.errstate(all=state), warnings.catch_warnings():
            warnings.simplefilter("error")
            mine = _overflowing_backward(mytorch, hook)
        for m, r in zip(mine, ref, strict=True):
            assert_same(m, r)


def test_grad_accumulating_to_inf_over_two_passes_is_silent_as_in_torch():
    grads = []
    for lib in (mytorch, torch):
        x = lib.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):  # the second pass adds BIG into .grad's BIG
                (x * BIG).sum().backward()
        grads.append(x.grad)
    assert_same(*grads)
