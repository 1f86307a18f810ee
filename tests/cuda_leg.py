"""A pytest plugin that runs the oracle suites with mytorch's inputs on a ``cuda`` device.

``python -m pytest -p cuda_leg tests/test_ops_pointwise.py ...`` with

* ``MYTORCH_TEST_DEVICE`` (default ``cuda:0``): inside ``oracle.check`` every mytorch input and
  gradient weighting is made on that device; outputs and gradients are compared on the host
  (the layer suites build their inputs elsewhere and stay on the CPU: ``test_cupy_compat`` runs
  layers on the device itself);
* ``MYTORCH_TEST_SIMULATE=1``: use the simulated device even where a GPU exists (the baseline
  that the real-GPU leg is compared with);
* ``MYTORCH_RECORD_XP=<file.json>``: record every array-library entry point that device code
  reaches (the backend namespace ``xp.<name>``, NumPy functions and ufuncs dispatched from device
  arrays, and the device arrays' methods), with the keyword names used, and write them to the
  file at the end. ``tests/test_cupy_compat.py`` checks each against CuPy.

Cases that build CPU tensors inside their body fail with the device-mixing error: that is a
difference between the legs, not a bug, so the legs are compared by their outcomes.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import mytorch
from mytorch import _device

_MYTORCH_DIR = str(Path(mytorch.__file__).parent)
_RECORD: dict[str, dict[str, Any]] = {}


def _site() -> str:
    """The first mytorch line (outside _device.py) on the stack: where the call was made."""
    for frame, line in traceback.walk_stack(sys._getframe(2)):
        f = frame.f_code.co_filename
        if f.startswith(_MYTORCH_DIR) and not f.endswith("_device.py"):
            return f"{os.path.relpath(f, os.path.dirname(_MYTORCH_DIR))}:{line}"
    return "?"


def _from_mytorch(depth: int) -> bool:
    """Whether the code that made this call is mytorch's (NumPy's own Python code calls ufuncs
    and reads attributes on our behalf, e.g. ``arr.sum()`` runs ``add.reduce(..., where=True)``:
    only what mytorch itself writes has to exist in CuPy)."""
    return sys._getframe(depth + 1).f_code.co_filename.startswith(_MYTORCH_DIR)


def _note(kind: str, name: str, kwargs: Any = ()) -> None:
    key = f"{kind}:{name}"
    entry = _RECORD.get(key)
    if entry is None:
        entry = _RECORD[key] = {"kind": kind, "name": name, "kwargs": [], "site": _site()}
    for k in kwargs:
        if k not in entry["kwargs"]:
            entry["kwargs"].append(k)


class _Recording(ModuleType):
    """The backend namespace, recording each attribute used (and each call's keyword names)."""

    def __init__(self, inner: Any, prefix: str) -> None:
        super().__init__(prefix)
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        obj = getattr(self._inner, name)
        path = f"{self._prefix}.{name}" if self._prefix else name
        if isinstance(obj, ModuleType):
            return _Recording(obj, path)
        if isinstance(obj, type) or not callable(obj):
            _note("xp", path)
            return obj

        def call(*args: Any, **kwargs: Any) -> Any:
            _note("xp", path, kwargs)
            return obj(*args, **kwargs)
        return call


def _install_recorder() -> None:
    backend = _device.cuda_backend()
    backend.xp = _Recording(backend.xp, "")
    cls = _device._SimulatedArray
    if getattr(cls, "_recording", False):
        return
    cls._recording = True
    array_function, array_ufunc = cls.__array_function__, cls.__array_ufunc__

    def __array_function__(self, func, types, args, kwargs):
        if not _from_mytorch(1):
            return array_function(self, func, types, args, kwargs)
        mod = func.__module__ or "numpy"
        sub = mod.split(".")[1] if mod.startswith("numpy.") and mod.split(".")[1] in (
            "linalg", "fft") else ""
        _note("np", f"{sub}.{func.__name__}" if sub else func.__name__, kwargs)
        return array_function(self, func, types, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if _from_mytorch(1):
            _note("ufunc", ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}",
                  kwargs)
        return array_ufunc(self, ufunc, method, *inputs, **kwargs)

    def __getattribute__(self, name):
        if not name.startswith("__") and _from_mytorch(1):
            _note("method", name)
        return np.ndarray.__getattribute__(self, name)

    cls.__array_function__ = __array_function__
    cls.__array_ufunc__ = __array_ufunc__
    cls.__getattribute__ = __getattribute__


def _checks_on(dev: str, check: Any) -> Any:
    """``oracle.check`` with ``mytorch.from_numpy`` putting arrays on ``dev`` while it runs: the
    inputs, and the gradient weightings, are then device tensors."""
    host_from_numpy = mytorch.from_numpy

    def on_device(arr: np.ndarray) -> mytorch.Tensor:
        return host_from_numpy(arr).to(dev)

    def device_check(*args: Any, **kwargs: Any) -> Any:
        mytorch.from_numpy = on_device
        try:
            return check(*args, **kwargs)
        finally:
            mytorch.from_numpy = host_from_numpy
    return device_check


def pytest_configure(config: pytest.Config) -> None:
    import oracle

    if os.environ.get("MYTORCH_TEST_SIMULATE") == "1":
        mytorch.cuda.simulate(True)
    if not mytorch.cuda.is_available():
        raise pytest.UsageError("cuda_leg: no CUDA device (set MYTORCH_TEST_SIMULATE=1)")
    oracle.check = _checks_on(os.environ.get("MYTORCH_TEST_DEVICE", "cuda:0"), oracle.check)
    if os.environ.get("MYTORCH_RECORD_XP"):
        if not mytorch.cuda.is_simulated():
            raise pytest.UsageError("cuda_leg: recording needs the simulated device")
        _install_recorder()


@pytest.fixture(autouse=True)
def _keep_the_device():
    """Tests that switch simulation off (the no-GPU fixtures) would leave the leg without one."""
    yield
    if os.environ.get("MYTORCH_TEST_SIMULATE") == "1" and not mytorch.cuda.is_simulated():
        mytorch.cuda.simulate(True)
        if os.environ.get("MYTORCH_RECORD_XP"):
            _install_recorder()


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("MYTORCH_RECORD_XP")
    if out:
        Path(out).write_text(json.dumps(sorted(_RECORD.values(), key=lambda e: e["kind"] + e["name"]),
                                        indent=1))
