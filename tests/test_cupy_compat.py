"""No NumPy-only call hides in a GPU path: everything device code calls exists in CuPy.

CuPy installs and imports without a GPU (it is in the ``dev`` extra), so its API can be checked
here. The op and gradient suites run on the *simulated* device under the ``cuda_leg`` plugin
(``tests/cuda_leg.py``), together with the layer workload of ``test_cuda_workload.py``, while a
recorder notes every entry point that device code reaches:

* ``xp.<name>`` — the backend namespace (``CudaBackend.xp``: ``cupy`` on a GPU);
* NumPy functions called on device arrays (``np.where(a, ...)``), which CuPy serves through
  ``__array_function__`` only if it has a function of the same name;
* ufuncs and their methods (``np.add.at``, ``np.maximum.reduce``);
* the device arrays' methods and attributes (``arr.astype``, ``arr.strides``).

Each one, with the keyword names used, is then looked up in CuPy: it must exist and accept those
keywords. (Only calls written in mytorch's code count: NumPy's own Python code calls ufuncs on
our behalf, and CuPy's methods have their own implementations.)
"""
from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

cupy = pytest.importorskip("cupy", reason="CuPy is part of the dev extra: pip install -e '.[dev]'")

ROOT = Path(__file__).resolve().parent.parent
SUITES = ["test_ops_pointwise.py", "test_ops_reduction.py", "test_ops_shape.py",
          "test_ops_indexing.py", "test_ops_linalg.py", "test_ops_comparison.py",
          "test_ops_signal.py", "test_special.py", "test_gradients.py", "test_cuda_workload.py"]


def _params(obj: Any) -> tuple[set[str], bool] | None:
    """(parameter names, accepts **kwargs) of a CuPy callable; None when it cannot be read."""
    try:
        sig = inspect.signature(obj)
        names = {p.name for p in sig.parameters.values()}
        return names, any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    except (TypeError, ValueError):
        pass
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    m = re.match(r"[\w.]+\((.*)\)", doc[0]) if doc else None
    if not m:
        return None
    args = [a.strip().lstrip("\\*") for a in m.group(1).split(",")]
    names = {a.split("=")[0].strip() for a in args if a and a != "/"}
    return names, any(a.startswith("**") for a in m.group(1).split(","))


def _lookup(entry: dict) -> tuple[Any, str]:
    """The CuPy object that serves a recorded entry, and how it was reached."""
    kind, name = entry["kind"], entry["name"]
    if kind == "method":
        return getattr(cupy.ndarray, name, None), f"cupy.ndarray.{name}"
    obj: Any = cupy
    parts = name.split(".")
    for i, part in enumerate(parts):
        obj = getattr(obj, part, None)
        if obj is None:
            return None, "cupy." + ".".join(parts[:i + 1])
    return obj, "cupy." + name


def _problems(entries: list[dict]) -> list[str]:
    found = []
    for e in entries:
        obj, where = _lookup(e)
        if obj is None:
            found.append(f"{where} does not exist (used as {e['kind']} {e['name']} at {e['site']})")
            continue
        if not e["kwargs"] or e["kind"] == "method":
            continue
        params = _params(obj)
        if params is None:
            found.append(f"{where}: cannot read its signature to check keywords {e['kwargs']} "
                         f"(at {e['site']})")
            continue
        names, var_kw = params
        bad = [k for k in e["kwargs"] if k not in names and not var_kw]
        if bad:
            found.append(f"{where} has no keyword {bad} (used at {e['site']})")
    return found


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("xp") / "record.json"
    env = dict(os.environ, MYTORCH_TEST_SIMULATE="1", MYTORCH_RECORD_XP=str(out))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "cuda_leg", "-q", "--tb=line",
                           "-p", "no:cacheprovider", "-n", "0", *SUITES],
                          cwd=ROOT / "tests", env=env, capture_output=True, text=True, timeout=600)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_recorder_saw_the_device_code(recorded):
    kinds = {e["kind"] for e in recorded}
    assert kinds == {"xp", "np", "ufunc", "method"}, kinds
    names = {e["name"] for e in recorded}
    assert {"where", "einsum", "linalg.solve", "add.at", "astype"} <= names
    assert len(recorded) > 120
    assert all(e["site"].startswith("mytorch/") for e in recorded)


def test_every_device_call_exists_in_cupy(recorded):
    problems = _problems(recorded)
    assert not problems, "device code calls what CuPy lacks:\n  " + "\n  ".join(problems)


def test_the_checker_catches_numpy_only_calls():
    fake = [{"kind": "xp", "name": "nanpercentile_of_doom", "kwargs": [], "site": "x"},
            {"kind": "ufunc", "name": "add.reduce", "kwargs": ["where"], "site": "y"},
            {"kind": "np", "name": "linalg.solve", "kwargs": [], "site": "z"},
            {"kind": "method", "name": "ctypes_of_doom", "kwargs": [], "site": "w"},
            {"kind": "xp", "name": "concatenate", "kwargs": ["axis", "out"], "site": "v"}]
    problems = _problems(fake)
    assert len(problems) == 3
    assert "nanpercentile_of_doom" in problems[0] and "'where'" in problems[1]
    assert "ctypes_of_doom" in problems[2]


def _failures(simulate: bool) -> set[str]:
    env = dict(os.environ, MYTORCH_TEST_SIMULATE="1" if simulate else "0")
    env.pop("MYTORCH_RECORD_XP", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "cuda_leg", "-q", "--tb=no", "-rf",
                           "-p", "no:cacheprovider", "-n", "0", *SUITES],
                          cwd=ROOT / "tests", env=env, capture_output=True, text=True, timeout=1200)
    assert " passed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("FAILED ")}


@pytest.mark.gpu
def test_parity_and_gradient_suites_on_the_gpu():
    """The real-GPU leg: every oracle case that passes on the simulated device passes on the GPU
    (a case may fail on both: it builds CPU tensors next to device inputs)."""
    on_gpu, simulated = _failures(simulate=False), _failures(simulate=True)
    assert on_gpu <= simulated, "fail on the GPU only:\n  " + "\n  ".join(sorted(on_gpu - simulated))
