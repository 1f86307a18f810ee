"""Turning an op's arguments into backend arrays: device checks, type promotion, dims, sizes.

Every operation starts here, so these checks (and their error messages) are the same everywhere.
"""
from __future__ import annotations

import builtins
import numbers
from typing import Any, NoReturn, Sequence

import numpy as np

from .. import _dtype as D
from .._device import CPU, device
from .._tensor import Tensor, wrap

_scalar_types = (builtins.bool, builtins.int, builtins.float, builtins.complex, np.generic)


def check_same_device(*tensors: Tensor) -> device:
    """The common device of ``tensors``; RuntimeError (torch's wording) when they differ.

    As in torch, a 0-dim CPU tensor may meet tensors on another device (it acts as a number).
    """
    dev = None
    for t in tensors:
        d = t._device
        if dev is None or dev == d:
            dev = d
            continue
        if d.type == "cpu" and t._data.ndim == 0:
            continue
        if dev.type == "cpu" and _first_cpu_scalar(tensors, dev):
            dev = d
            continue
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                           f"devices, {dev} and {d}!")
    return dev if dev is not None else CPU


def _first_cpu_scalar(tensors: Sequence[Tensor], dev: device) -> bool:
    return all(t._data.ndim == 0 for t in tensors if t._device == dev)


def scalar_array(x: Any, dt: D.dtype) -> Any:
    """A Python number as a NumPy scalar of ``dt`` (wrapping out-of-range ints like torch)."""
    try:
        return dt.np.type(x)
    except (OverflowError, ValueError, TypeError):
        return np.array(x).astype(dt.np)[()]


def array_on(t: Tensor, dev: device) -> Any:
    """``t``'s array on ``dev`` (only 0-dim CPU tensors ever need moving here)."""
    if t._device == dev:
        return t._data
    if dev.type == "cpu":
        return np.asarray(t.item())
    from .._device import cuda_backend
    return cuda_backend().to_device(t._data, dev.index)


def binary(a: Any, b: Any) -> tuple[Any, Any, device, D.dtype]:
    """Arrays for ``a op b`` already cast to the promoted dtype, their device and that dtype."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            xa, xb = a._data, b._data
            if xa.dtype == xb.dtype and a._device is b._device:  # fast path: nothing to convert
                return xa, xb, a._device, D._BY_NP[xa.dtype]
            dev = a._device if a._device == b._device else check_same_device(a, b)
            dt = D.result_type_key(((2 if xa.ndim else 1, D._BY_NP[xa.dtype]),
                                    (2 if xb.ndim else 1, D._BY_NP[xb.dtype])))
            xa, xb = array_on(a, dev), array_on(b, dev)
            if xa.dtype != dt.np:
                xa = xa.astype(dt.np)
            if xb.dtype != dt.np:
                xb = xb.astype(dt.np)
            return xa, xb, dev, dt
        dt = D.result_type_key(((2 if a._data.ndim else 1, D._BY_NP[a._data.dtype]),
                                (0, _scalar_dtype(b))))
        xa = a._data if a._data.dtype == dt.np else a._data.astype(dt.np)
        return xa, scalar_array(b, dt), a._device, dt
    if not isinstance(b, Tensor):
        raise TypeError(f"expected a Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    xb, xa, dev, dt = binary(b, a)
    return xa, xb, dev, dt


def broadcast_error(shape_a: Sequence[int], shape_b: Sequence[int]) -> NoReturn:
    """Raise torch's RuntimeError for shapes that do not broadcast, naming the first bad dim.

    Shapes are aligned on the right; the dim is counted in the (longer) broadcast shape.
    """
    ndim = max(len(shape_a), len(shape_b))
    for k in range(1, ndim + 1):
        sa = shape_a[-k] if k <= len(shape_a) else 1
        sb = shape_b[-k] if k <= len(shape_b) else 1
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) "
                               f"at non-singleton dimension {ndim - k}") from None
    raise RuntimeError(f"shapes {list(shape_a)} and {list(shape_b)} cannot be broadcast "
                       "together") from None


def _scalar_dtype(x: Any) -> D.dtype:
    if isinstance(x, _scalar_types):
        return D.scalar_dtype(x)
    raise TypeError(f"unsupported operand type: '{type(x).__name__}' (expected a Tensor or a number)")


def to_tensor(x: Any, like: Tensor | None = None) -> Tensor:
    """Tensors pass through; numbers and lists become tensors on ``like``'s device."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, _scalar_types):
        dt = D.scalar_dtype(x)
        arr = np.asarray(x, dtype=dt.np)
    else:
        from .._creation import tensor
        return tensor(x, device=like.device if like is not None else None)
    if like is not None and like._device.type != "cpu":
        from .._device import cuda_backend
        return wrap(cuda_backend().to_device(arr, like._device.index), like._device)
    return wrap(arr, CPU)


def wrap_dim(dim: int, ndim: int) -> int:
    """Normalise a possibly negative ``dim``; IndexError in torch's words when out of range."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims: Any, ndim: int) -> tuple[int, ...]:
    """Normalise an int or a sequence of ints; repeated dims are an error as in torch."""
    if isinstance(dims, numbers.Integral):
        return (wrap_dim(int(dims), ndim),)
    out = tuple(wrap_dim(int(d), ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out} appears multiple times in the list of dims")
    return out


def size_args(size: tuple) -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(torch.Size([2, 3]))``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, numbers.Integral) or isinstance(s, builtins.bool):
            raise TypeError(f"size must be a sequence of ints, but got an element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)
