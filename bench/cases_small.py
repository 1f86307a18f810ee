"""Where students wait (issue 16): long chains of tiny ops, one big element-wise expression, and
one SGD step of a small MLP. Forward + backward in every row.

The NumPy column is the same computation with the backward written by hand (no graph, no
Tensor): the floor any autograd library can reach.

* ``1000-op chain``: 250 rounds of ``t = (t * w + b).tanh() * 0.9`` on 10-element float32
  tensors (``w`` and ``b`` shared by every round, as a recurrent layer shares its weights), then
  ``t.sum().backward()``. It measures what creating, recording and replaying a node costs.
  Target ≤ 1.2× torch.
* ``(a*b + c).relu().sum()`` on 10⁶ elements: the three leaves' gradients. Target ≤ 1.2× NumPy.
* ``MLP 784-256-10 SGD step``: ``Linear → ReLU → Linear``, cross-entropy, batch 64,
  ``zero_grad``/``backward``/``step``. Target ≤ 1.2× torch.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

ROUNDS, TINY = 250, 10           # 4 ops per round: 1,000 ops
N = 1_000_000
MLP, MLP_BATCH = (784, 256, 10), 64


def _rand(seed: int, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


# ----------------------------------------------------------------------------- 1,000 tiny ops
def _chain(lib: ModuleType) -> Callable[[], Any]:
    x0, w0, b0 = _rand(0, TINY), _rand(1, TINY, scale=0.5), _rand(2, TINY, scale=0.1)
    if lib is np:
        def by_hand() -> Any:
            t, saved = x0, []
            for _ in range(ROUNDS):                      # forward, keeping what backward needs
                y = np.tanh(t * w0 + b0)
                saved.append((t, y))
                t = y * np.float32(0.9)
            loss = t.sum()
            g = np.ones_like(t)
            gw, gb = np.zeros_like(w0), np.zeros_like(b0)
            for t_in, y in reversed(saved):              # backward, by hand
                g = g * np.float32(0.9)
                g = g * (1 - y * y)
                gb += g
                gw += g * t_in
                g = g * w0
            return loss, g, gw, gb
        return by_hand
    x, w, b = (lib.from_numpy(a.copy()).requires_grad_() for a in (x0, w0, b0))

    def step() -> Any:
        x.grad = w.grad = b.grad = None
        t = x
        for _ in range(ROUNDS):
            t = (t * w + b).tanh() * 0.9
        loss = t.sum()
        loss.backward()
        return loss
    return step


# ----------------------------------------------------------------------------- element-wise 1e6
def _elementwise(lib: ModuleType) -> Callable[[], Any]:
    a0, b0, c0 = _rand(3, N), _rand(4, N), _rand(5, N)
    if lib is np:
        def by_hand() -> Any:
            s = a0 * b0 + c0
            loss = np.maximum(s, 0).sum()
            g = (s > 0).astype(np.float32)               # d loss / d s
            return loss, g * b0, g * a0, g
        return by_hand
    a, b, c = (lib.from_numpy(v.copy()).requires_grad_() for v in (a0, b0, c0))

    def step() -> Any:
        a.grad = b.grad = c.grad = None
        loss = (a * b + c).relu().sum()
        loss.backward()
        return loss
    return step


# ----------------------------------------------------------------------------- MLP SGD step
def _mlp_weights() -> list[np.ndarray]:
    out = []
    for i, (n_in, n_out) in enumerate(zip(MLP[:-1], MLP[1:])):
        bound = 1 / np.sqrt(n_in)
        rng = np.random.default_rng(10 + i)
        out += [rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32),
                rng.uniform(-bound, bound, n_out).astype(np.float32)]
    return out


def _mlp_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20)
    return (rng.standard_normal((MLP_BATCH, MLP[0])).astype(np.float32),
            rng.integers(0, MLP[-1], MLP_BATCH))


def _mlp_step(lib: ModuleType) -> Callable[[], Any]:
    x0, y0 = _mlp_batch()
    if lib is np:
        w1, b1, w2, b2 = _mlp_weights()
        rows = np.arange(MLP_BATCH)

        def by_hand() -> Any:
            h = x0 @ w1.T + b1
            a = np.maximum(h, 0)
            z = a @ w2.T + b2
            z = z - z.max(1, keepdims=True)
            e = np.exp(z)
            s = e.sum(1, keepdims=True)
            loss = (np.log(s[:, 0]) - z[rows, y0]).mean()
            gz = e / s
            gz[rows, y0] -= 1
            gz /= MLP_BATCH
            gw2, gb2 = gz.T @ a, gz.sum(0)
            gh = (gz @ w2) * (h > 0)
            gw1, gb1 = gh.T @ x0, gh.sum(0)
            for p, g in ((w1, gw1), (b1, gb1), (w2, gw2), (b2, gb2)):
                p -= np.float32(0.01) * g
            return loss
        return by_hand
    nn = lib.nn
    model = nn.Sequential(nn.Linear(MLP[0], MLP[1]), nn.ReLU(), nn.Linear(MLP[1], MLP[2]))
    with lib.no_grad():
        for p, v in zip(model.parameters(), _mlp_weights()):
            p.copy_(lib.from_numpy(v))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x, y = lib.from_numpy(x0), lib.from_numpy(y0)
    cross_entropy = nn.functional.cross_entropy

    def step() -> Any:
        opt.zero_grad()
        loss = cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


CASES = [
    Case("1000-op chain fwd+bwd", f"{4 * ROUNDS} ops of {TINY}", _chain, target=("torch", 1.2)),
    Case("(a*b+c).relu().sum() fwd+bwd", "1e6", _elementwise, target=("numpy", 1.2)),
    Case("MLP SGD step", f"{MLP_BATCH}x784→256→10", _mlp_step, target=("torch", 1.2)),
]
