"""Chapter 06/08 benchmark cases: an optimizer step over 10M parameters, and saving/loading 100 MB.

* ``SGD momentum`` / ``Adam`` step: five float32 parameters of 2M elements each, gradients
  already in ``.grad``. torch runs its CPU default (the for-loop, single-tensor kernels) and, in a
  second row, ``foreach=True``; the numpy column is the same update written as whole-array NumPy
  expressions (one temporary per line), which is what the readable pieces cost.
* ``save`` / ``load``: a state dict of 100 float32 tensors of 1024×256 (100 MB) to and from a file.
  ``mytorch.save`` is atomic (temporary file, fsync, rename) and ``mytorch.load`` checks every
  record's CRC-32; torch does neither. numpy: ``np.save`` of one array per tensor into one file.
Targets: mytorch ≤ 1.5× torch.
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

N_PARAMS, SHAPE = 5, (2000, 1000)        # 10M parameters
N_TENSORS, TSHAPE = 100, (1024, 256)     # 100 MB

_DIR = tempfile.mkdtemp(prefix="mytorch-bench-")


def _arrays(n: int, shape: tuple, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(n)]


_P = _arrays(N_PARAMS, SHAPE, 0)
_G = _arrays(N_PARAMS, SHAPE, 1)


def _numpy_sgd() -> Callable[[], Any]:
    bufs = [g.copy() for g in _G]

    def step() -> None:
        for p, g, b in zip(_P, _G, bufs):
            b *= 0.9
            b += g
            p -= 1e-3 * b
    return step


def _numpy_adam() -> Callable[[], Any]:
    ms, vs, t = [np.zeros_like(p) for p in _P], [np.zeros_like(p) for p in _P], [0]

    def step() -> None:
        t[0] += 1
        bc1, bc2 = 1 - 0.9 ** t[0], 1 - 0.999 ** t[0]
        for p, g, m, v in zip(_P, _G, ms, vs):
            m += 0.1 * (g - m)
            v *= 0.999
            v += 0.001 * g * g
            p -= 1e-3 / bc1 * m / (np.sqrt(v) / bc2 ** 0.5 + 1e-8)
    return step


def _optimizer(name: str, foreach: bool | None = None, **kw: Any) -> Callable[[ModuleType],
                                                                              Callable[[], Any]]:
    def make(lib: ModuleType) -> Callable[[], Any]:
        if lib is np:
            return _numpy_sgd() if name == "SGD" else _numpy_adam()
        params = []
        for p, g in zip(_P, _G):
            t = lib.nn.Parameter(lib.from_numpy(p))
            t.grad = lib.from_numpy(g)
            params.append(t)
        extra = {"foreach": foreach} if lib.__name__ == "torch" else {}
        opt = getattr(lib.optim, name)(params, lr=1e-3, **kw, **extra)
        return opt.step
    return make


def _state_dict(lib: ModuleType) -> dict:
    arrays = _arrays(N_TENSORS, TSHAPE, 2)
    if lib is np:
        return {f"layer{i}.weight": a for i, a in enumerate(arrays)}
    return {f"layer{i}.weight": lib.from_numpy(a) for i, a in enumerate(arrays)}


def _path(lib: ModuleType) -> str:
    return os.path.join(_DIR, f"{lib.__name__}.pt")


def _save(lib: ModuleType) -> Callable[[], Any]:
    sd, path = _state_dict(lib), _path(lib)
    if lib is np:
        def save() -> None:
            with open(path, "wb") as f:
                for a in sd.values():
                    np.save(f, a)
        return save
    return lambda: lib.save(sd, path)


def _load(lib: ModuleType) -> Callable[[], Any]:
    _save(lib)()
    path = _path(lib)
    if lib is np:
        def load() -> list:
            with open(path, "rb") as f:
                return [np.load(f) for _ in range(N_TENSORS)]
        return load
    return lambda: lib.load(path)


CASES = [
    Case("SGD momentum step", "10M f32", _optimizer("SGD", momentum=0.9), ("torch", 1.5)),
    Case("SGD momentum step (torch foreach)", "10M f32", _optimizer("SGD", True, momentum=0.9),
         ("torch", 1.5)),
    Case("Adam step", "10M f32", _optimizer("Adam"), ("torch", 1.5)),
    Case("Adam step (torch foreach)", "10M f32", _optimizer("Adam", True), ("torch", 1.5)),
    Case("save state dict", "100 MB", _save, ("torch", 1.5)),
    Case("load state dict", "100 MB", _load, ("torch", 1.5)),
]
