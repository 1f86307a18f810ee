"""Chapter 02 benchmark cases: a training step of a small MLP, and the graph's cost per operation.

* ``mlp step``: forward + backward of 64→256→256→10 (ReLU, mean-squared loss), batch 256, float32.
  NumPy runs the same step with the backward written by hand: the floor any autograd can reach.
  Target: mytorch ≤ 1.5× torch.
* ``small-op chain``: 20 element-wise ops on 3-element tensors, then backward; reported per op, so
  it measures what recording and replaying the graph costs. Target: ≤ 15 µs per op.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

SIZES = (64, 256, 256, 10)
BATCH = 256
CHAIN = 20


def _weights() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    ws = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        ws.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32))
        ws.append(np.zeros(n_out, np.float32))
    return ws


def _numpy_mlp() -> Callable[[], Any]:
    """The same step with a hand-written backward (no graph at all)."""
    ws = _weights()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32)

    def step() -> Any:
        acts, h = [x], x
        for i in range(0, len(ws), 2):
            h = h @ ws[i] + ws[i + 1]
            if i < len(ws) - 2:
                h = np.maximum(h, 0)
            acts.append(h)
        g = 2 * (h - y) / h.size
        grads = []
        for i in range(len(ws) - 2, -1, -2):
            a = acts[i // 2]
            grads += [a.T @ g, g.sum(0)]
            g = g @ ws[i].T
            if i:
                g = g * (a > 0)
        return grads

    return step


def _mlp(lib: ModuleType) -> Callable[[], Any]:
    if lib is np:
        return _numpy_mlp()
    ws = [lib.from_numpy(w.copy()).requires_grad_() for w in _weights()]
    rng = np.random.default_rng(1)
    x = lib.from_numpy(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = lib.from_numpy(rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32))

    def step() -> Any:
        for w in ws:
            w.grad = None
        h = x
        for i in range(0, len(ws), 2):
            h = h @ ws[i] + ws[i + 1]
            if i < len(ws) - 2:
                h = h.relu()
        loss = ((h - y) ** 2).mean()
        loss.backward()
        return loss

    return step


def _chain(lib: ModuleType) -> Callable[[], Any]:
    if lib is np:
        a = np.array([0.1, 0.2, 0.3], np.float32)

        def raw() -> Any:  # the arithmetic alone, forward only
            t = a
            for _ in range(CHAIN // 2):
                t = np.sin(t * 1.01)
            return t.sum()

        return raw
    a = lib.tensor([0.1, 0.2, 0.3], requires_grad=True)

    def step() -> Any:
        a.grad = None
        t = a
        for _ in range(CHAIN // 2):
            t = (t * 1.01).sin()
        t.sum().backward()
        return t

    return step


CASES = [
    Case("mlp step (fwd+bwd)", f"{BATCH}x64→256→256→10", _mlp, target=("torch", 1.5)),
    Case("small-op chain (fwd+bwd)", f"{CHAIN} ops of 3", _chain, target=("µs", 15.0), per=CHAIN),
]
