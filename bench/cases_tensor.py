"""Chapter 01 benchmark cases: element-wise ops, reductions, matmul, and per-op overhead.

Each later chapter adds its own ``cases_<topic>.py`` with a ``CASES`` list; ``bench/__main__.py``
runs them all.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

N = 1_000_000


@functools.cache
def _array(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _data(lib: ModuleType, *shape: int, seed: int = 0) -> Any:
    """The same float32 numbers as a NumPy array, a mytorch tensor or a torch tensor.

    All three share ONE array's memory (``from_numpy`` copies nothing), so where the data sits
    (alignment, huge pages, cache) is the same for every library and the ratios measure only
    what each library adds.
    """
    arr = _array(shape, seed)
    return arr if lib is np else lib.from_numpy(arr)


def _binary(fn: Callable[[Any, Any], Any], *shape: int) -> Callable[[ModuleType], Callable[[], Any]]:
    def make(lib: ModuleType) -> Callable[[], Any]:
        a, b = _data(lib, *shape, seed=1), _data(lib, *shape, seed=2)
        return lambda: fn(a, b)
    return make


def _unary(name: str, *shape: int) -> Callable[[ModuleType], Callable[[], Any]]:
    def make(lib: ModuleType) -> Callable[[], Any]:
        a = _data(lib, *shape)
        return (lambda: getattr(np, name)(a)) if lib is np else (lambda: getattr(a, name)())
    return make


def _matmul(n: int) -> Case:
    return Case("matmul", f"{n}x{n}", _binary(lambda a, b: a @ b, n, n))


def _tiny_add(lib: ModuleType) -> Callable[[], Any]:
    if lib is np:
        a, b = np.ones(3, np.float32), np.ones(3, np.float32)
    else:
        a, b = lib.ones(3), lib.ones(3)
    return lambda: a + b


def _cube(lib: ModuleType) -> Callable[[], Any]:
    """``x ** 3`` (issue 24: as products, like torch; NumPy's column is ``x*x*x`` by hand, since
    its own ``x ** 3`` calls the slow float ``pow``)."""
    a = _data(lib, 2000)
    return (lambda: a * a * a) if lib is np else (lambda: a ** 3)


CASES = [
    Case("add", "1e6", _binary(lambda a, b: a + b, N)),
    Case("mul", "1e6", _binary(lambda a, b: a * b, N)),
    Case("exp", "1e6", _unary("exp", N)),
    Case("sum", "1e6", _unary("sum", N)),
    Case("mean", "1e6", _unary("mean", N)),
    Case("max", "1e6", _unary("max", N)),
    _matmul(512),
    _matmul(1024),
    _matmul(2048),
    Case("add (tiny)", "3", _tiny_add, target=("torch", 3.0)),
    Case("x ** 3", "2000", _cube, target=("torch", 2.0)),
]
