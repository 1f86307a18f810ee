"""The rule table of element-wise ops (``autograd/rules.py``, ``_ops/pointwise.py``'s ``RULES``).

Each rule's derivative is written once and runs two ways: on bare arrays in a plain backward,
and on tensors when the backward builds a graph (``create_graph=True``). Both must give torch's
gradient, for every rule of the table.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mytorch
from mytorch._ops.pointwise import RULES
from mytorch.autograd.node import CLOSURE

from oracle import assert_same

# inputs inside every op's domain (log, sqrt, acosh, atanh, ...)
_DOMAIN = {"acosh": (1.5, 3.0), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8), "atanh": (-0.8, 0.8)}
_CALL = {"pow": lambda lib, x, w: x ** 3, "sub": lambda lib, x, w: x - w,
         "add": lambda lib, x, w: x + w, "mul": lambda lib, x, w: x * w,
         "div": lambda lib, x, w: x / w, "neg": lambda lib, x, w: -x,
         "clamp": lambda lib, x, w: x.clamp(0.8, 1.6)}


def _inputs(op: str) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _DOMAIN.get(op, (0.5, 2.0))
    rng = np.random.default_rng(abs(hash(op)) % 1000)
    return rng.uniform(lo, hi, 6), rng.uniform(0.5, 2.0, 6)


@pytest.mark.parametrize("op", sorted(RULES))
@pytest.mark.parametrize("create_graph", [False, True], ids=["arrays", "tensors"])
def test_each_rule_gives_torchs_gradient_on_arrays_and_on_tensors(op, create_graph):
    x0, w0 = _inputs(op)
    grads = []
    for lib in (mytorch, torch):
        x, w = (lib.tensor(a, requires_grad=True) for a in (x0, w0))
        call = _CALL.get(op, lambda lib, x, w: getattr(lib, op)(x))
        y = call(lib, x, w)
        if lib is mytorch:
            assert y.grad_fn.name() == RULES[op].name
            dt = y.grad_fn._dtype
            assert dt is not CLOSURE and dt is not None  # a rule's node, on the plain path
        gy = lib.tensor(np.linspace(0.5, 1.5, 6))
        got = lib.autograd.grad(y, (x, w), gy, create_graph=create_graph, allow_unused=True)
        grads.append(got)
    for m, r in zip(*grads, strict=True):
        assert (m is None) == (r is None)
        if m is not None:
            assert_same(m, r, atol=1e-12, rtol=1e-10)
            # on tensors, the rule's arithmetic is recorded wherever torch's is
            assert (m.grad_fn is None) == (r.grad_fn is None)
