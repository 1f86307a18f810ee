"""Making tensors: from data (copying or sharing memory), filled, ranges, identity, ``*_like``, ``new_*``."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Sequence

import numpy as np

from . import _dtype as D
from ._device import CPU, as_device, cuda_backend, device
from ._layout import channels_last, contiguous_format, preserve_format
from ._ops._operands import _limits, channels_last_copy, checked_scalar, preserve_layout, size_args, \
    star_or_keyword
from ._storage import mark_not_resizable
from ._tensor import Size, Tensor, _cap_name, tensor_method, wrap

__all__ = ["tensor", "as_tensor", "from_numpy", "asarray", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "arange", "range", "linspace",
           "logspace", "eye", "scalar_tensor", "numel", "get_device", "is_floating_point", "is_complex",
           "is_nonzero", "empty_strided", "tril_indices", "triu_indices"]


def _place(arr: np.ndarray, dev: device, requires_grad: bool = False) -> Tensor:
    """Wrap a host array, copying it to ``dev`` when that is a GPU."""
    t = wrap(arr if dev.type == "cpu" else cuda_backend().to_device(arr, dev.index), dev)
    if requires_grad:
        t.requires_grad = True
    return t


def _from_data(data: Any, dtype: D.dtype | None) -> np.ndarray:
    """A fresh host array from nested sequences / NumPy data, with torch's dtype inference."""
    if isinstance(data, Tensor):
        return np.array(data._host(), dtype=None if dtype is None else dtype.np, copy=True)
    if isinstance(data, np.ndarray):
        _check_numpy(data)
        return np.array(data, dtype=None if dtype is None else dtype.np, copy=True)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    leaves: dict = {}  # Python/NumPy scalar type (or a dtype) -> True: what the data holds
    data = _scan(data, leaves)
    dt = dtype if dtype is not None else _infer_dtype(leaves)
    if dt._cat == D._INT and leaves and leaves.keys() <= _REAL_SCALARS:
        try:
            return _checked_ints(data, dt, builtins.float in leaves)
        except ValueError as e:
            if "Overflow" in str(e):
                raise
            raise ValueError(f"expected a rectangular nested sequence (every row of the same "
                             f"length); NumPy says: {e}") from None
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # 1e300 → inf in float32, silently
            arr = np.array(data, dtype=dt.np)
    except OverflowError:
        arr = _wrapped_ints(data, dt)
    except ValueError as e:
        raise ValueError(f"expected a rectangular nested sequence (every row of the same "
                         f"length); NumPy says: {e}") from None
    return arr


def _checked_ints(data: Any, dt: D.dtype, floats: bool) -> np.ndarray:
    """Python numbers into an integer dtype, checked like torch's tensor(): 300 or 1e10 do not fit
    (RuntimeError), -1 wraps into an unsigned dtype (255 for uint8), 2.7 is truncated to 2."""
    lo, hi = _limits(dt)
    if floats:
        src = np.array(data, dtype=np.float64)
        ok = bool(((src >= lo) & (src <= hi)).all())  # nan and inf fail too
    else:
        try:
            src = np.array(data, dtype=np.int64)
        except OverflowError:
            if dt is not D.uint64:
                raise ValueError("Overflow when unpacking long long") from None
            try:  # uint64 holds 2**63 ... 2**64 - 1
                src = np.array(data, dtype=np.uint64)
            except OverflowError:
                raise ValueError("Overflow when unpacking long long") from None
        ok = bool(((src >= (lo if lo else -hi)) & (src <= hi)).all())
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
    return src.astype(dt.np)


def _wrapped_ints(data: Any, dt: D.dtype) -> np.ndarray:
    """Integers outside ``dt``'s range wrap around (-1 → 255 for uint8) as long as they fit int64."""
    try:
        return np.array(data, dtype=np.int64).astype(dt.np)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long: the integers must fit in int64") from None


def _check_numpy(arr: np.ndarray) -> None:
    """torch accepts only its own dtypes and non-negative strides from NumPy."""
    D.from_numpy_dtype(arr.dtype)
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")


def _scan(data: Any, leaves: dict) -> Any:
    """Record the type of every leaf in ``leaves``; replace one-element tensors by numbers.

    torch infers a dtype from each leaf (int → int64, float → the default dtype, a NumPy scalar or a
    tensor → its own dtype) and promotes them all, so ``[np.int32(1), np.int32(2)]`` is int32.
    """
    if isinstance(data, (list, tuple)):
        kinds = set(map(type, data))
        if kinds <= _PLAIN_SCALARS:  # the common, fast case: a row of Python numbers
            leaves.update(dict.fromkeys(kinds, True))
            return data
        return [_scan(x, leaves) for x in data]
    if isinstance(data, Tensor):
        if data.numel() != 1:
            if data.dtype.is_floating_point or data.dtype.is_complex:
                raise ValueError("only one element tensors can be converted to Python scalars")
            raise TypeError("only integer tensors of a single element can be converted to an index")
        leaves[data.dtype] = True
        return data.item()
    if isinstance(data, np.ndarray):
        _check_numpy(data)
        leaves[D.from_numpy_dtype(data.dtype)] = True
        return data
    if data is None or not isinstance(data, (_PLAIN_SCALARS_T, np.generic)):
        if isinstance(data, (str, bytes)):
            raise ValueError(f"too many dimensions '{type(data).__name__}'")
        if hasattr(data, "__len__") and hasattr(data, "__getitem__"):
            return [_scan(x, leaves) for x in data]  # range, torch.Size, other sequences
        raise RuntimeError(f"Could not infer dtype of {type(data).__name__}")
    leaves[type(data)] = True
    return data


_PLAIN_SCALARS_T = (builtins.bool, builtins.int, builtins.float, builtins.complex)
_PLAIN_SCALARS = set(_PLAIN_SCALARS_T)
_REAL_SCALARS = {builtins.bool, builtins.int, builtins.float}


def _infer_dtype(leaves: dict) -> D.dtype:
    """Promote the dtypes the leaves stand for; an empty sequence is the default float dtype."""
    out = None
    for kind in leaves:
        if isinstance(kind, D.dtype):
            d = kind
        elif issubclass(kind, np.generic):
            d = D.from_numpy_dtype(np.dtype(kind))
        elif kind is builtins.bool:
            d = D.bool
        elif kind is builtins.int:
            d = D.int64
        elif kind is builtins.float:
            d = D.get_default_dtype()
        else:
            d = D.get_default_dtype().to_complex()
        out = d if out is None else D.promote_types(out, d)
    return D.get_default_dtype() if out is None else out


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
        data.device if isinstance(data, Tensor) else as_device(None))
    return _place(arr, dev, requires_grad)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor that **shares memory** with ``ndarray`` (same dtype)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _check_numpy(ndarray)
    # torch sees the array's own memory as the storage (offset 0), even when the array is a
    # slice of a larger one; a memoryview cuts NumPy's .base chain at this array.
    if ndarray.base is not None and ndarray.size:
        ndarray = np.asarray(memoryview(ndarray))
    mark_not_resizable(ndarray)  # NumPy's memory: resize_ may not grow it (torch's rule)
    t = wrap(ndarray, CPU)
    t._data = ndarray  # an empty array keeps NumPy's zero strides, as torch.from_numpy does
    return t


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
    if not size:
        raise TypeError(f"{kind}() missing 1 required positional arguments: \"size\"")
    shape = size_args(size)
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = as_device(device)
    if kind == "full":
        value = checked_scalar(value, dt)  # full((2,), 300, dtype=uint8) raises, as in torch
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
          device: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """A tensor of zeros with the given shape (``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros(size=...)``)."""
    size = star_or_keyword(size, kwargs, "size", "zeros")
    return _filled(size, 0, dtype, device, requires_grad, "zeros")


def ones(*size: Any, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """A tensor of ones with the given shape."""
    size = star_or_keyword(size, kwargs, "size", "ones")
    return _filled(size, 1, dtype, device, requires_grad)


def empty(*size: Any, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False, pin_memory: bool = False,
          memory_format: Any = None, **kwargs: Any) -> Tensor:
    """An *uninitialised* tensor: its values are whatever was in memory. Fill it before reading."""
    size = star_or_keyword(size, kwargs, "size", "empty")
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
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = D.scalar_dtype(fill_value)
    return _filled((tuple(size),), fill_value, dtype, device, requires_grad)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    return _filled(((),), s, dtype or D.get_default_dtype(), device, requires_grad)


def _like(input: Tensor, dtype: Any, device: Any) -> tuple:
    return (input.shape, input.dtype if dtype is None else dtype,
            input.device if device is None else device)


def like_layout(t: Tensor, input: Tensor, memory_format: Any) -> Tensor:
    """Lay ``t`` (a fresh result of ``input``'s shape) out as the ``*_like`` functions do.

    ``preserve_format`` (the default) keeps ``input``'s layout: a transposed or channels_last
    input gives a transposed or channels_last result (see ``_operands.preserve_strides``).
    """
    if memory_format is None or memory_format is preserve_format:
        if not input._data.flags.c_contiguous:
            t._data = preserve_layout(t._data, input)
    elif memory_format is channels_last:
        t._data = channels_last_copy(t._data)
    elif memory_format is not contiguous_format:
        raise RuntimeError(f"unsupported memory format {memory_format}")
    return t


def zeros_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Zeros with ``input``'s shape, dtype, device and memory layout (unless told otherwise)."""
    shape, dt, dev = _like(input, dtype, device)
    return like_layout(_filled((shape,), 0, dt, dev, requires_grad, "zeros"), input,
                       memory_format)


def ones_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Ones with ``input``'s shape, dtype, device and memory layout (unless told otherwise)."""
    shape, dt, dev = _like(input, dtype, device)
    return like_layout(_filled((shape,), 1, dt, dev, requires_grad), input, memory_format)


def empty_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Uninitialised, with ``input``'s shape, dtype, device and memory layout."""
    shape, dt, dev = _like(input, dtype, device)
    return like_layout(_filled((shape,), 0, dt, dev, requires_grad, "empty"), input,
                       memory_format)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, layout: Any = None,
              device: Any = None, requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """``fill_value`` everywhere, with ``input``'s shape, dtype, device and memory layout."""
    shape, dt, dev = _like(input, dtype, device)
    return like_layout(_filled((shape,), fill_value, dt, dev, requires_grad), input,
                       memory_format)


def arange(start: Any = 0, end: Any = None, step: Any = 1, *, out: Tensor | None = None,
           dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Values ``start, start+step, …`` up to (not including) ``end``; int64 when all are integers.

    Like torch, the length is ``ceil((end - start) / step)`` computed in float64, and element ``i``
    is ``start + i * step`` computed in float64 (float32 for half), then rounded to the dtype; so
    ``arange(0, 1, 0.1)`` has 10 elements, not 11. An integer dtype truncates start and step first.
    """
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if any(isinstance(v, complex) for v in (start, end, step)):
        raise RuntimeError("value cannot be converted to type double without overflow")
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dt = D.int64 if integral else D.get_default_dtype()
    else:
        dt = D.to_dtype(dtype)
    if dt._cat == D._INT:
        n = _int_arange_length(start, end, step, dt)
        start, step = builtins.int(start), builtins.int(step)
        arr = (np.arange(n, dtype=np.int64) * step + start).astype(dt.np)
    else:
        n = _arange_length(start, end, step)
        calc = np.float32 if dt is D.float16 else np.float64
        arr = (np.arange(n, dtype=calc) * calc(step) + calc(start)).astype(dt.np)
    return _place(arr, as_device(device), requires_grad)


def _arange_length(start: Any, end: Any, step: Any) -> int:
    """Number of elements of ``arange(start, end, step)``, with torch's checks."""
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    return builtins.int(math.ceil((end - start) / step))


def _int_arange_length(start: Any, end: Any, step: Any, dt: D.dtype) -> int:
    """torch truncates the bounds to int64 first when the result dtype is int64."""
    if dt is not D.int64:
        return _arange_length(start, end, step)
    if step != 0 and builtins.int(step) == 0:  # e.g. step=0.5 truncated to 0
        raise ValueError("step must be nonzero")
    s, e, st = builtins.int(start), builtins.int(end), builtins.int(step)
    _arange_length(s, e, st)
    sign = (st > 0) - (st < 0)
    return max((e - s + st - sign) // st, 0)


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
    start, end = _range_scalar(start, "start"), _range_scalar(end, "end")
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, builtins.bool):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _range_dtype(dtype, start, end)
    return _place(_linspace_array(start, end, steps, dt), as_device(device), requires_grad)


def _range_scalar(x: Any, name: str) -> Any:
    """linspace/logspace take numbers or 0-dim tensors for their bounds."""
    if isinstance(x, Tensor):
        if x.ndim != 0:
            raise RuntimeError(f"linspace only supports 0-dimensional start and end tensors, but "
                               f"got {name} with {x.ndim} dimension(s).")
        return x.item()
    return x


def _range_dtype(dtype: Any, start: Any, end: Any) -> D.dtype:
    """The default float dtype, or its complex partner when a bound is complex."""
    if dtype is not None:
        return D.to_dtype(dtype)
    if isinstance(start, complex) or isinstance(end, complex):
        return D.get_default_dtype().to_complex()
    return D.get_default_dtype()


def _linspace_array(start: Any, end: Any, steps: int, dt: D.dtype) -> np.ndarray:
    """torch's symmetric formula: the first half counts up from start, the second down from end.

    As in torch, the bounds are first converted to the result dtype (an integer dtype truncates
    them); the step is computed in that dtype, or in float64 for integer results.
    """
    if dt._cat <= D._INT:
        start, end = builtins.int(start), builtins.int(end)
        calc = np.float64
    else:
        calc = dt.np.type
        start, end = calc(start), calc(end)
    if steps == 1:
        return np.array([start], dtype=calc).astype(dt.np)
    i = np.arange(steps, dtype=calc)
    step = (calc(end) - calc(start)) / calc(steps - 1)
    arr = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
    return arr.astype(dt.np)


def logspace(start: Any, end: Any, steps: int, base: float = 10.0, *, out: Tensor | None = None,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)``."""
    start, end = _range_scalar(start, "start"), _range_scalar(end, "end")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = _range_dtype(dtype, start, end)
    exps = _linspace_array(start, end, steps, D.complex128 if dt.is_complex else D.float64)
    arr = np.power(complex(base) if dt.is_complex else float(base), exps)
    return _place(arr.astype(dt.np), as_device(device), requires_grad)


def eye(n: int, m: int | None = None, *, out: Tensor | None = None, dtype: Any = None,
        layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """An ``n × m`` matrix with ones on the diagonal."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    return _place(np.eye(n, n if m is None else m, dtype=dt.np), as_device(device), requires_grad)


def _tri_indices(which: str, row: int, col: int, offset: int, dtype: Any, device: Any) -> Tensor:
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = D.to_dtype(dtype)
    if dt._cat != D._INT:
        raise NotImplementedError(f'"{which}_indices" not implemented for '
                                  f"'{_legacy_name(dt)}'")
    rows, cols = (np.tril_indices if which == "tril" else np.triu_indices)(row, offset, col)
    return _place(np.stack([rows, cols]).astype(dt.np), as_device(device))


def _legacy_name(dt: D.dtype) -> str:
    return _cap_name(dt)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = D.int64,
                 device: Any = "cpu", layout: Any = None) -> Tensor:
    """The (row, column) indices of the lower triangle of a ``row × col`` matrix: a 2 × N tensor,
    in row-major order; ``offset`` moves the diagonal (> 0: above it, < 0: below)."""
    return _tri_indices("tril", row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = D.int64,
                 device: Any = "cpu", layout: Any = None) -> Tensor:
    """The (row, column) indices of the upper triangle of a ``row × col`` matrix (2 × N)."""
    return _tri_indices("triu", row, col, offset, dtype, device)


def numel(input: Tensor) -> int:
    """Number of elements of ``input``."""
    return input.numel()


def get_device(input: Tensor) -> int:
    """``input.get_device()``: the GPU index of ``input``, -1 for a CPU tensor."""
    return input.get_device()


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
              requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Zeros of the given size with ``self``'s dtype and device (unless told otherwise)."""
    size = star_or_keyword(size, kwargs, "size", "new_zeros")
    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


@tensor_method()
def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Ones of the given size with ``self``'s dtype and device (unless told otherwise)."""
    size = star_or_keyword(size, kwargs, "size", "new_ones")
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@tensor_method()
def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """An uninitialised tensor of the given size with ``self``'s dtype and device."""
    size = star_or_keyword(size, kwargs, "size", "new_empty")
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
    if not args:
        return empty(0, dtype=self.dtype, device=self.device)
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)) \
            and not isinstance(args[0], Size):
        return tensor(args[0], dtype=self.dtype, device=self.device)
    return empty(*args, dtype=self.dtype, device=self.device)
