"""Chapter 04 benchmark cases: convolution and pooling layers, forward + backward.

The "numpy" column runs the same im2col / strided-window algorithm on bare arrays (no Tensor,
no autograd), so ``my/np`` shows what the framework adds; the targets are against torch (CPU).
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

SHAPE = (32, 16, 32, 32)


def _arrays(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _conv2d(lib: ModuleType) -> Callable[[], Any]:
    x, w, b = _arrays(0, *SHAPE), _arrays(1, 32, 16, 3, 3), _arrays(2, 32)
    if lib is np:
        from mytorch.nn._functional import conv as C

        geo = C._Geometry((1, 1), ((1, 1), (1, 1)), (1, 1), 1)

        def raw() -> Any:
            y, cols = C._forward_arrays(x, w, geo)
            y += b.reshape(-1, 1, 1)
            g = np.ones_like(y)
            return (C._input_grad_arrays(g, w, geo, x.shape[2:]),
                    C._weight_grad_arrays(x, g, geo, w.shape[2:], cols), g.sum((0, 2, 3)))
        return raw
    F = _functional(lib)
    xt, wt, bt = (lib.from_numpy(a).requires_grad_() for a in (x, w, b))

    def step() -> Any:
        y = F.conv2d(xt, wt, bt, padding=1)
        y.backward(lib.ones_like(y))
    return step


def _max_pool2d(lib: ModuleType) -> Callable[[], Any]:
    x = _arrays(0, *SHAPE)
    if lib is np:
        from mytorch.nn._functional import pooling as P

        geo = P._Pool((32, 32), (16, 16), (2, 2), (2, 2), (0, 0), (1, 1))

        def raw() -> Any:
            best, arg = P._max_arrays(x, geo, True)
            g = np.ones_like(best)
            dx = np.zeros_like(x)
            for i, k in enumerate(P.taps(geo.kernel)):
                dx[geo.slices(k)] += g * (arg == i)
            return dx
        return raw
    F = _functional(lib)
    xt = lib.from_numpy(x).requires_grad_()

    def step() -> Any:
        y = F.max_pool2d(xt, 2)
        y.backward(lib.ones_like(y))
    return step


def _functional(lib: ModuleType) -> Any:
    if lib.__name__ == "torch":
        return lib.nn.functional
    from mytorch.nn._functional import conv, pooling  # until nn.functional re-exports them

    class F:
        conv2d = staticmethod(conv.conv2d)
        max_pool2d = staticmethod(pooling.max_pool2d)
    return F


CASES = [
    Case("Conv2d fwd+bwd", "32x16x32x32,32@3x3", _conv2d, target=("torch", 3.0)),
    Case("MaxPool2d(2) fwd+bwd", "32x16x32x32", _max_pool2d, target=("torch", 2.0)),
]
