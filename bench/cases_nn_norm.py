"""Chapter 04 benchmark cases: normalisation layers, forward + backward (target ≤ 2× torch).

The NumPy column is a hand-written fused batch norm (forward and backward), the floor that
mytorch's one-node implementation is compared against.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

SHAPE = (32, 16, 32, 32)


def _arrays(*shape: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32))


def _numpy_batch_norm(x: np.ndarray, g: np.ndarray, axes: tuple, eps: float = 1e-5) -> Any:
    """Training-mode batch norm forward and the gradient w.r.t. x, weight and bias."""
    mean = x.mean(axis=axes, keepdims=True)
    xc = x - mean
    invstd = 1.0 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * invstd
    gx = invstd * (g - g.mean(axis=axes, keepdims=True)
                   - xhat * (g * xhat).mean(axis=axes, keepdims=True))
    return xhat, gx, (g * xhat).sum(axis=axes), g.sum(axis=axes)


def _layer(lib: ModuleType, name: str, *args: Any) -> Any:
    if lib.__name__ == "torch":
        return getattr(lib.nn, name)(*args)
    from mytorch.nn.modules import batchnorm, normalization  # until wired into mytorch.nn
    return getattr(batchnorm if hasattr(batchnorm, name) else normalization, name)(*args)


def _fwd_bwd(name: str, shape: tuple, axes: tuple, *args: Any) -> Callable[[ModuleType], Callable]:
    def make(lib: ModuleType) -> Callable[[], Any]:
        x, g = _arrays(*shape)
        if lib is np:
            return lambda: _numpy_batch_norm(x, g, axes)
        layer = _layer(lib, name, *args)
        xt, gt = lib.from_numpy(x).requires_grad_(), lib.from_numpy(g)

        def step() -> None:
            layer(xt).backward(gt)
        return step
    return make


CASES = [
    Case("BatchNorm2d fwd+bwd", "32x16x32x32",
         _fwd_bwd("BatchNorm2d", SHAPE, (0, 2, 3), 16), target=("torch", 2.0)),
]
