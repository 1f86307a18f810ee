"""``load``'s environment overrides (TORCH_FORCE_WEIGHTS_ONLY_LOAD,
TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD) and the safe-globals API, with NumPy arrays in a real torch
file: mytorch must accept and refuse exactly what torch does."""
from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
import torch

import mytorch

# what a pickled NumPy array needs (NumPy 2 spells the module numpy._core)
NUMPY_GLOBALS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.int64))]


@pytest.fixture()
def numpy_file(tmp_path):
    path = tmp_path / "with_numpy.pt"
    torch.save({"a": np.arange(3), "w": torch.ones(2)}, path)
    return path


def outcome(lib, path, **kwargs):
    """(what came back or the exception class, the warnings' first words)."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            got = lib.load(path, **kwargs)
            res = (sorted(got), got["a"].tolist())
        except Exception as e:  # noqa: BLE001
            res = type(e).__name__
    return res, [str(m.message)[:60] for m in w if "TORCH_FORCE" in str(m.message)]


ENV = [
    ({}, {}),
    ({}, {"weights_only": False}),
    ({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, {}),
    ({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "true"}, {"weights_only": True}),   # explicit wins
    ({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "0"}, {}),
    ({"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "YES"}, {}),
    ({"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"}, {"weights_only": False}),  # forced even then
    ({"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "y"}, {}),
    ({"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, {}),
]


@pytest.mark.parametrize("env,kwargs", ENV, ids=str)
def test_environment_overrides_as_torch(env, kwargs, numpy_file, monkeypatch):
    for name in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert outcome(mytorch, numpy_file, **kwargs) == outcome(torch, numpy_file, **kwargs)


def test_both_overrides_set_is_torch_error(numpy_file, monkeypatch):
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError) as ref:
        torch.load(numpy_file)
    with pytest.raises(RuntimeError) as mine:
        mytorch.load(numpy_file)
    assert str(mine.value) == str(ref.value)


@pytest.mark.parametrize("lib", [torch, mytorch], ids=lambda m: m.__name__)
def test_safe_globals_admit_numpy_arrays(lib, numpy_file):
    ser = lib.serialization
    ser.clear_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        lib.load(numpy_file)
    with ser.safe_globals(NUMPY_GLOBALS):
        assert lib.load(numpy_file)["a"].tolist() == [0, 1, 2]
        assert set(map(id, ser.get_safe_globals())) >= set(map(id, NUMPY_GLOBALS))
    assert ser.get_safe_globals() == []  # the block's globals are gone again
    with pytest.raises(pickle.UnpicklingError):
        lib.load(numpy_file)
    ser.add_safe_globals(NUMPY_GLOBALS)
    try:
        assert lib.load(numpy_file)["a"].tolist() == [0, 1, 2]
    finally:
        ser.clear_safe_globals()
    assert ser.get_safe_globals() == []


def test_the_refusal_names_the_global_as_torch(numpy_file):
    msgs = []
    for lib in (torch, mytorch):
        lib.serialization.clear_safe_globals()
        with pytest.raises(pickle.UnpicklingError) as e:
            lib.load(numpy_file)
        msgs.append([line for line in str(e.value).splitlines() if "add_safe_globals" in line])
    assert msgs[0] and msgs[1] == msgs[0]
