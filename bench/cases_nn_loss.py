"""Chapter 05 benchmark cases: cross-entropy forward + backward on a batch of logits.

The NumPy column is the same computation written by hand (stable log-softmax, pick the targets,
mean; gradient ``(softmax - one_hot) / N``), so it shows what the autograd bookkeeping costs.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case


def _logits_and_targets(n: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, c)).astype(np.float32), rng.integers(0, c, n)


def _numpy_cross_entropy(x: np.ndarray, t: np.ndarray) -> tuple[Any, np.ndarray]:
    shifted = x - x.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(len(t))
    loss = (np.log(s[:, 0]) - shifted[rows, t]).mean()
    grad = e / s
    grad[rows, t] -= 1
    return loss, grad / len(t)


def _cross_entropy(n: int, c: int) -> Callable[[ModuleType], Callable[[], Any]]:
    def make(lib: ModuleType) -> Callable[[], Any]:
        x, t = _logits_and_targets(n, c)
        if lib is np:
            return lambda: _numpy_cross_entropy(x, t)
        if lib.__name__ == "torch":
            cross_entropy = lib.nn.functional.cross_entropy
        else:
            from mytorch.nn._functional.loss import cross_entropy
        logits, target = lib.from_numpy(x).requires_grad_(), lib.from_numpy(t)

        def step() -> Any:
            logits.grad = None
            loss = cross_entropy(logits, target)
            loss.backward()
            return loss

        return step
    return make


CASES = [
    Case("cross_entropy fwd+bwd", "256x1000", _cross_entropy(256, 1000), target=("torch", 2.0)),
    Case("cross_entropy fwd+bwd", "32x10", _cross_entropy(32, 10), target=("torch", 3.0)),
]
