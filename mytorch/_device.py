"""Devices and the array backend behind each one.

``cpu`` tensors hold NumPy arrays. ``cuda`` tensors hold CuPy arrays when CuPy sees a GPU.
Without a GPU, ``MYTORCH_SIMULATE_CUDA=1`` (or ``mytorch.cuda.simulate()``) makes ``cuda``
a *simulated* device: NumPy arrays of a subclass that refuses to mix with host arrays, so
the device rules (results stay on the operands' device, mixing raises) can be tested honestly
on any laptop.
"""
from __future__ import annotations

import os
from builtins import type as builtins_type
from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["device", "set_default_device", "get_default_device"]


class device:
    """Where a tensor lives: ``device('cpu')``, ``device('cuda:1')``, ``device('cuda', 0)``, ``device(0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type: "str | int | device", index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int) and not isinstance(type, bool):
            # an int means "this index of the accelerator": an error on a machine without one
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            if cuda_backend_or_none() is None:
                raise RuntimeError("Cannot access accelerator device when none is available.")
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({builtins_type(type).__name__})")
        if not type:
            raise RuntimeError("Device string must not be empty")
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed "
                                   f"explicitly: {type}")
            type, _, idx = type.partition(":")
            if not idx.isdigit() or (idx != "0" and idx.startswith("0")):
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self.type, self.index = type, index

    def __eq__(self, other: object) -> bool:
        # Like torch, a device never equals a string: compare ``t.device.type == "cuda"`` instead.
        if self is other:
            return True
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


# set_default_device: where factory functions (zeros, tensor, randn, layers' weights) put new
# tensors when no device= is given. None means the CPU.
_DEFAULT_DEVICE: list = [None]


def set_default_device(device: Any) -> None:
    """Make factory functions create tensors on ``device`` (``None`` goes back to the CPU)."""
    _DEFAULT_DEVICE[0] = None if device is None else as_device(device)


def get_default_device() -> device:
    """Where factory functions create tensors when no ``device=`` is given."""
    return _DEFAULT_DEVICE[0] or CPU


def as_device(d: Any) -> device:
    """Accept a device, a string or an int; return a concrete device (cuda gets an index).

    ``None`` is the default device (the CPU unless ``set_default_device`` changed it).
    """
    if d is None:
        return _DEFAULT_DEVICE[0] or CPU
    if not isinstance(d, device):
        d = device(d)
    if d.type == "meta":
        raise NotImplementedError("mytorch has no meta device: tensors without data (shapes and "
                                  "dtypes only) are not supported; use device='cpu'")
    if d.type == "cuda":
        backend = cuda_backend()  # raises a clear error when there is no CUDA at all
        idx = backend.current_device() if d.index is None else d.index
        if idx >= backend.device_count():
            raise RuntimeError(f"CUDA error: invalid device ordinal (asked for {d}, "
                               f"{backend.device_count()} device(s) available)")
        if d.index is None:
            d = device("cuda", idx)
    return d


# ---------------------------------------------------------------------------- backends
class _SimulatedArray(np.ndarray):
    """A NumPy array that pretends to live on a GPU: mixing it with host arrays is an error."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        for x in inputs + tuple(kwargs.get("out", ())):
            if type(x) is np.ndarray and x.ndim > 0:
                raise TypeError("simulated cuda: operand is a host (NumPy) array; "
                                "copy it to the device first")
        inputs = tuple(x.view(np.ndarray) if isinstance(x, _SimulatedArray) else x for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, _SimulatedArray) else x
                                  for x in kwargs["out"])
        res = getattr(ufunc, method)(*inputs, **kwargs)
        return _to_sim(res)

    def __array_function__(self, func, types, args, kwargs):
        return _to_sim(func(*_from_sim(args), **_from_sim(kwargs)))

    def dot(self, b, out=None):
        # ndarray.dot bypasses both hooks above and returns a host scalar for 1-D operands, where
        # CuPy returns a 0-d device array: keep the result on the (simulated) device.
        return _to_sim(np.dot(self.view(np.ndarray), _from_sim(b), out=_from_sim(out)))


def _from_sim(x: Any) -> Any:
    if isinstance(x, _SimulatedArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_from_sim(v) for v in x)
    if isinstance(x, dict):
        return {k: _from_sim(v) for k, v in x.items()}
    return x


def _to_sim(x: Any) -> Any:
    if type(x) is np.ndarray:
        return x.view(_SimulatedArray)
    if isinstance(x, np.generic):
        return np.asarray(x).view(_SimulatedArray)
    if isinstance(x, tuple):
        return tuple(_to_sim(v) for v in x)
    if isinstance(x, list):
        return [_to_sim(v) for v in x]
    return x


class _SimulatedNumPy(ModuleType):
    """``numpy`` seen from the simulated device: every array it returns is a _SimulatedArray."""

    def __init__(self) -> None:
        super().__init__("mytorch_simulated_cuda_numpy")
        self.ndarray = _SimulatedArray

    def __getattr__(self, name: str) -> Any:
        obj = getattr(np, name)
        if callable(obj) and not isinstance(obj, type):
            def wrapped(*args, **kwargs):
                return _to_sim(obj(*_from_sim(args), **_from_sim(kwargs)))
            wrapped.__name__ = name
            setattr(self, name, wrapped)
            return wrapped
        return obj


class _PinnedBuffer(bytearray):
    """Host memory the simulated device treats as page-locked (pinned)."""


class CudaBackend:
    """What mytorch needs from a GPU array library: its namespace and host<->device copies."""

    def __init__(self, xp: ModuleType, simulated: bool, count: int) -> None:
        self.xp, self.simulated, self._count, self._current = xp, simulated, count, 0

    def device_count(self) -> int:
        return self._count

    def current_device(self) -> int:
        if not self.simulated:
            return self.xp.cuda.runtime.getDevice()
        return self._current

    def set_device(self, idx: int) -> None:
        if self.simulated:
            self._current = idx
        else:
            self.xp.cuda.runtime.setDevice(idx)

    def to_device(self, arr: np.ndarray, index: int, non_blocking: bool = False) -> Any:
        """Copy a host array to device ``index``. ``non_blocking`` with a pinned source queues
        the copy on the current stream and returns at once (a pageable source is copied
        synchronously, as CUDA does)."""
        if self.simulated:
            return np.array(arr, copy=True).view(_SimulatedArray)
        with self.xp.cuda.Device(index):
            if non_blocking and self.is_pinned(arr):
                out = self.xp.empty(arr.shape, arr.dtype)
                out.set(np.ascontiguousarray(arr), stream=self.xp.cuda.get_current_stream())
                return out
            return self.xp.asarray(arr)

    def pin(self, arr: np.ndarray) -> np.ndarray:
        """A copy of ``arr`` in page-locked host memory (``Tensor.pin_memory``): the GPU's DMA
        engine reads it directly, so copies are faster and can be asynchronous. The simulated
        device marks the copy as pinned (its owner is a ``_PinnedBuffer``)."""
        if self.simulated:
            buf = _PinnedBuffer(max(arr.nbytes, 1))
            out = np.frombuffer(buf, dtype=arr.dtype, count=arr.size).reshape(arr.shape)
        else:
            import cupyx  # type: ignore[import-not-found]

            out = cupyx.empty_pinned(arr.shape, arr.dtype)
        out[...] = arr
        return out

    def is_pinned(self, arr: np.ndarray) -> bool:
        """Whether a host array lives in page-locked memory."""
        base = arr
        while getattr(base, "base", None) is not None:
            base = base.base
        if isinstance(getattr(base, "obj", None), _PinnedBuffer):  # a memoryview of one
            return True
        if self.simulated or not isinstance(arr, np.ndarray) or arr.size == 0:
            return False
        attrs = self.xp.cuda.runtime.pointerGetAttributes(arr.ctypes.data)
        return attrs.type == self.xp.cuda.runtime.memoryTypeHost

    def to_host(self, arr: Any) -> np.ndarray:
        if self.simulated:
            return np.array(arr.view(np.ndarray), copy=True)
        return self.xp.asnumpy(arr)

    def is_device_array(self, arr: Any) -> bool:
        return isinstance(arr, self.xp.ndarray) and not type(arr) is np.ndarray

    def synchronize(self) -> None:
        if not self.simulated:
            self.xp.cuda.Stream.null.synchronize()


class _CudaState:
    """Which CUDA backend is in use: found on first use (``probed``), or set by ``simulate_cuda``.

    Kept as attributes of one object, so the module's own names never change when it does (the
    class grader watches the library's module dictionaries for tampering).
    """

    backend: CudaBackend | None = None
    probed = False


_CUDA = _CudaState()


def _probe() -> CudaBackend | None:
    try:
        import cupy  # type: ignore[import-not-found]

        n = cupy.cuda.runtime.getDeviceCount()
        if n > 0:
            return CudaBackend(cupy, simulated=False, count=n)
    except Exception:  # no cupy, no driver, no GPU: fall through
        pass
    if os.environ.get("MYTORCH_SIMULATE_CUDA", "") not in ("", "0"):
        return CudaBackend(_SimulatedNumPy(), simulated=True, count=2)
    return None


def cuda_backend_or_none() -> CudaBackend | None:
    if not _CUDA.probed:
        _CUDA.backend, _CUDA.probed = _probe(), True
    return _CUDA.backend


def simulate_cuda(enabled: bool = True, count: int = 2) -> None:
    """Turn the simulated CUDA device on or off (for tests and for learning without a GPU)."""
    _CUDA.backend = CudaBackend(_SimulatedNumPy(), simulated=True, count=count) if enabled else None
    _CUDA.probed = True


def cuda_state() -> tuple[CudaBackend | None, bool]:
    """The CUDA backend now in use and whether it was looked for (to put it back later)."""
    return _CUDA.backend, _CUDA.probed


def restore_cuda_state(state: tuple[CudaBackend | None, bool]) -> None:
    _CUDA.backend, _CUDA.probed = state


def cuda_backend() -> CudaBackend:
    b = cuda_backend_or_none()
    if b is None:
        raise AssertionError(
            "Torch not compiled with CUDA enabled (mytorch: no CUDA device found. A real GPU needs "
            "CuPy: pip install cupy-cuda12x. To practise device code without one, set "
            "MYTORCH_SIMULATE_CUDA=1 or call mytorch.cuda.simulate().)")
    return b


def xp_for(d: device) -> ModuleType:
    """The array namespace (numpy or cupy-like) that holds data for device ``d``."""
    if d.type == "cpu":
        return np
    return cuda_backend().xp
