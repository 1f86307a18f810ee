"""Making tensors: from data (copying or sharing memory), filled, ranges, identity, ``*_like``, ``new_*``."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Sequence

import numpy as np

from . import _dtype as D
from ._device import CPU, as_device, cuda_backend, device
from ._ops._operands import size_args
from ._tensor import Tensor, tensor_method, wrap

__all__ = ["tensor", "as_tensor", "from_numpy", "asarray", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "arange", "range", "linspace",
           "logspace", "eye", "scalar_tensor", "numel", "is_floating_point", "is_complex",
           "is_nonzero", "empty_strided"]


def _place(arr: np.ndarray, dev: device, requires_grad: bool = False) -> Tensor:
    """Wrap a host array, copying it to ``dev`` when that is a GPU."""
    t = wrap(arr if dev.type == "cpu" else cuda_backend().to_device(arr, dev.index), dev)
    if requires_grad:
        t.requires_grad = True
    return t


def _from_data(data: Any, dtype: D.dtype | None) -> np.ndarray:
    """A fresh host array from nested sequences / NumPy data, with torch's dtype inference."""
    if isinstance(data, Tensor):
        arr = data._host()
        return np.array(arr, dtype=None if dtype is None else dtype.np, copy=True)
    if isinstance(data, np.ndarray):
        D.from_numpy_dtype(data.dtype) if dtype is None else None
        return np.array(data, dtype=None if dtype is None else dtype.np, copy=True)
    if isinstance(data, (list, tuple)):
        data = _unwrap_nested(data)
    try:
        arr = np.array(data)
    except ValueError as e:
        raise ValueError(f"expected a rectangular nested sequence of numbers; "
                         f"rows have different lengths ({e})") from None
    if arr.dtype == object or arr.dtype.kind in "USV":
        raise TypeError(f"new(): invalid data type '{type(data).__name__}': tensors hold numbers "
                        f"(got elements of type {arr.dtype})")
    if dtype is None:
        if arr.dtype == np.float64 and not isinstance(data, np.generic):
            arr = arr.astype(D.get_default_dtype().np)
        elif arr.dtype == np.complex128 and not isinstance(data, np.generic):
            arr = arr.astype(D.get_default_dtype().to_complex().np)
        elif arr.dtype.kind in "iu" and not isinstance(data, np.generic):
            arr = arr.astype(np.int64)
        else:
            D.from_numpy_dtype(arr.dtype)
        return arr
    return arr.astype(dtype.np)


def _unwrap_nested(data: Any) -> Any:
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_unwrap_nested(x) for x in data]
    return data


def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor that **copies** ``data`` (a number, nested lists, a NumPy array, a tensor)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    dt = None if dtype is None else D.to_dtype(dtype)
    arr = _from_data(data, dt)
    dev = as_device(device) if device is not None else (
        data.device if isinstance(data, Tensor) else CPU)
    return _place(arr, dev, requires_grad)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor that **shares memory** with ``ndarray`` (same dtype)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    return wrap(ndarray, CPU)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but **shares memory** when it can (same dtype and device, NumPy or Tensor)."""
    dt = None if dtype is None else D.to_dtype(dtype)
    dev = None if device is None else as_device(device)
    if isinstance(data, Tensor):
        out = data
        if dt is not None or dev is not None:
            out = data.to(device=dev or data.device, dtype=dt or data.dtype)
        return out
    if isinstance(data, np.ndarray) and not any(s < 0 for s in data.strides):
        t = from_numpy(data)
        if dt is not None and dt is not t.dtype:
            t = t.to(dt)
        if dev is not None and dev != CPU:
            t = t.to(dev)
        return t
    return tensor(data, dtype=dt, device=dev)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """torch.asarray: share memory unless ``copy=True`` or a conversion forces a copy."""
    if copy:
        t = tensor(obj.detach() if isinstance(obj, Tensor) else obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _filled(size: tuple, value: Any, dtype: Any, device: Any, requires_grad: bool,
            kind: str = "full") -> Tensor:
    shape = size_args(size)
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = as_device(device)
    if dev.type == "cpu":
        if kind == "empty":
            arr = np.empty(shape, dt.np)
        elif kind == "zeros":
            arr = np.zeros(shape, dt.np)
        else:
            arr = np.full(shape, value, dt.np)
        t = wrap(arr, dev)
    else:
        xp = cuda_backend().xp
        with _on(dev):
            t = wrap(xp.full(shape, value if kind == "full" else 0, dt.np), dev)
    if requires_grad:
        t.requires_grad = True
    return t


class _on:
    """Context that makes ``dev`` the current GPU while allocating (a no-op when simulated)."""

    def __init__(self, dev: device) -> None:
        self.dev = dev

    def __enter__(self) -> None:
        b = cuda_backend()
        self.ctx = None if b.simulated else b.xp.cuda.Device(self.dev.index)
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


def zeros(*size: Any, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros with the given shape."""
    return _filled(size, 0, dtype, device, requires_grad, "zeros")


def ones(*size: Any, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones with the given shape."""
    return _filled(size, 1, dtype, device, requires_grad)


def empty(*size: Any, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False, pin_memory: bool = False,
          memory_format: Any = None) -> Tensor:
    """An *uninitialised* tensor: its values are whatever was in memory. Fill it before reading."""
    return _filled(size, 0, dtype, device, requires_grad, "empty")


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                  device: Any = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor with the given strides (in elements)."""
    shape, strides = tuple(size), tuple(stride)
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    n = 1 + builtins.sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
    buf = np.empty(n, dt.np)
    arr = np.lib.stride_tricks.as_strided(buf, shape, tuple(st * dt.itemsize for st in strides))
    return _place(arr, as_device(device), requires_grad)


def full(size: Sequence[int], fill_value: Any, *, out: Tensor | None = None, dtype: Any = None,
         layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor filled with ``fill_value``; its dtype follows the value (int → int64, bool → bool)."""
    if dtype is None:
        if isinstance(fill_value, Tensor):
            fill_value = fill_value.item()
        dtype = D.scalar_dtype(fill_value)
    return _filled((tuple(size),) if not isinstance(size, int) else (size,), fill_value, dtype,
                   device, requires_grad)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    return _filled((), s, dtype or D.get_default_dtype(), device, requires_grad)


def _like(input: Tensor, dtype: Any, device: Any) -> tuple:
    return (input.shape, input.dtype if dtype is None else dtype,
            input.device if device is None else device)


def zeros_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return _filled((shape,), 0, dt, dev, requires_grad, "zeros")


def ones_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return _filled((shape,), 1, dt, dev, requires_grad)


def empty_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return _filled((shape,), 0, dt, dev, requires_grad, "empty")


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, layout: Any = None,
              device: Any = None, requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    shape, dt, dev = _like(input, dtype, device)
    return _filled((shape,), fill_value, dt, dev, requires_grad)


def arange(start: Any = 0, end: Any = None, step: Any = 1, *, out: Tensor | None = None,
           dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values ``start, start+step, …`` up to (not including) ``end``; int64 when all are integers."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dt = D.int64 if all(isinstance(v, (int, np.integer)) for v in vals) else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    n = math.ceil((end - start) / step)
    if dt._cat == D._INT and all(isinstance(v, (int, np.integer)) for v in vals):
        arr = np.arange(start, end, step, dtype=dt.np)
    else:
        arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    return _place(arr, as_device(device), requires_grad)


def range(start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:  # noqa: A001
    """Deprecated torch.range: like arange but *includes* ``end`` and defaults to float."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use torch.arange,"
                  " which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    n = int(math.floor((end - start) / step)) + 1
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt.np)
    return _place(arr, as_device(device), requires_grad)


def linspace(start: Any, end: Any, steps: int, *, out: Tensor | None = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    if not isinstance(steps, (int, np.integer)) or steps < 0:
        raise RuntimeError(f"number of steps must be non-negative")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    calc = np.float64 if dt._cat <= D._FLOAT else np.complex128
    if steps == 1:
        arr = np.array([start], dtype=calc)
    else:
        # torch's symmetric formula: the first half counts up from start, the second down from end
        i = np.arange(steps, dtype=np.float64)
        step = (end - start) / (steps - 1)
        half = steps // 2
        arr = np.where(i < half, start + step * i, end - step * (steps - 1 - i)).astype(calc)
    if dt._cat == D._INT:
        arr = np.trunc(arr)
    return _place(arr.astype(dt.np), as_device(device), requires_grad)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, out: Tensor | None = None,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    exps = linspace(start, end, steps, dtype=D.float64)._data
    arr = np.power(float(base), exps)
    return _place(arr.astype(dt.np), as_device(device), requires_grad)


def eye(n: int, m: int | None = None, *, out: Tensor | None = None, dtype: Any = None,
        layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An ``n × m`` matrix with ones on the diagonal."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    return _place(np.eye(n, n if m is None else m, dtype=dt.np), as_device(device), requires_grad)


def numel(input: Tensor) -> int:
    """Number of elements of ``input``."""
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    return input.is_complex()


def is_nonzero(input: Tensor) -> bool:
    """The truth value of a one-element tensor (RuntimeError otherwise)."""
    if input.numel() != 1:
        if input.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item())


# ------------------------------------------------------------------ Tensor.new_* family
@tensor_method()
def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` with ``self``'s dtype and device unless told otherwise."""
    return tensor(data, dtype=self.dtype if dtype is None else dtype,
                  device=self.device if device is None else device, requires_grad=requires_grad)


@tensor_method()
def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


@tensor_method()
def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@tensor_method()
def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


@tensor_method()
def new_full(self: Tensor, size: Sequence[int], fill_value: Any, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@tensor_method()
def new(self: Tensor, *args: Any) -> Tensor:
    """Legacy ``x.new(2, 3)`` (uninitialised, same dtype/device) or ``x.new([1, 2])`` (data)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return tensor(args[0], dtype=self.dtype, device=self.device)
    return empty(*args, dtype=self.dtype, device=self.device)
