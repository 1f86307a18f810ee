"""Turning an op's arguments into backend arrays: device checks, type promotion, dims, sizes.

Every operation starts here, so these checks (and their error messages) are the same everywhere.
Also here: :class:`quiet`, which keeps NumPy's floating-point warnings out of the user's way.
"""
from __future__ import annotations

import builtins
import functools
import numbers
from typing import Any, Callable, NoReturn, Sequence

import numpy as np

from .. import _dtype as D
from .._device import CPU, cuda_backend, device
# torch computes inf and nan without a word, NumPy warns: how mytorch keeps NumPy quiet (and why
# that is cheap) is in _fp.py; the op families import it from here
from .._fp import FP_IGNORE, FP_STATE, quiet, quietly  # noqa: F401
from .._pieces import piece, pieces
from .._storage import restride
from .._tensor import Tensor

_scalar_types = (builtins.bool, builtins.int, builtins.float, builtins.complex, np.generic)


@piece("09.1")
def common_device(tensors: list) -> "device | None":
    """The device an operation on ``tensors`` runs on and puts its result on, or ``None`` when
    they live on different devices. A 0-dim CPU tensor counts as a plain number: it may join
    tensors of any device (``x_cuda * torch.tensor(2.0)`` works, ``x_cuda * x_cpu`` does not)."""
    devices = []
    for t in tensors:
        is_number = t.device.type == "cpu" and t.dim() == 0
        if not is_number and t.device not in devices:
            devices.append(t.device)
    if len(devices) > 1:
        return None
    return devices[0] if devices else tensors[0].device


def check_same_device(*tensors: Tensor) -> device:
    """The common device of ``tensors``; RuntimeError (torch's wording) when they differ.

    As in torch, a 0-dim CPU tensor may meet tensors on another device (it acts as a number):
    the rule is the piece ``common_device``, asked only when the devices are not all the same.
    """
    if not tensors:
        return CPU
    first = tensors[0]._device
    for t in tensors:
        if t._device != first:
            break
    else:
        return first
    dev = pieces.common_device(tensors)
    if dev is None:
        _device_mismatch(tensors)
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                           "devices")
    return dev


def _device_mismatch(tensors: Sequence[Tensor]) -> device:
    """Raise torch's error naming the two devices that clash (in torch's order)."""
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
    if type(x) in _NUMBERS and not -65504 <= x <= 65504:  # may overflow float16/32 (or wrap)
        with quiet():  # 1e39 in float32 is inf, silently (as in torch)
            return _cast_scalar(x, dt)
    return _cast_scalar(x, dt)


_NUMBERS = (builtins.float, builtins.int)


def _cast_scalar(x: Any, dt: D.dtype) -> Any:
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


@piece("01.7")
def broadcast_shape(a: tuple, b: tuple) -> tuple | None:
    """The shape that tensors of shapes ``a`` and ``b`` broadcast to, or None when they cannot.

    Align the shapes on the right (a missing dim counts as 1); in each dim the lengths must be
    equal or one of them 1, and the result takes the other one (so 1 with 0 gives 0).
    """
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def broadcast_pair(shape_a: Sequence[int], shape_b: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of two shapes (the piece :func:`broadcast_shape`), or torch's RuntimeError
    naming the dim that does not match."""
    out = pieces.broadcast_shape(shape_a, shape_b)
    if out is None:
        broadcast_error(shape_a, shape_b)
    return out if type(out) is tuple else tuple(out)


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


def result_type(*operands: Any) -> D.dtype:
    """torch.result_type: the dtype an arithmetic op over ``operands`` (tensors and numbers)
    produces. Tensors with dimensions outrank 0-dim tensors, which outrank Python numbers."""
    key = []
    for x in operands:
        if isinstance(x, Tensor):
            key.append((2 if x._data.ndim else 1, x.dtype))
        else:
            key.append((0, D.scalar_dtype(x)))
    return D.result_type_key(tuple(key))


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


# ------------------------------------------------------------------------ numbers meet dtypes
# torch converts a Python number to a tensor's dtype in two ways (c10/util/TypeCast.h):
#  * arithmetic (``u8 + 300``, ``i8 == 200``): the number joins type promotion by category only
#    (``binary``), then is cast to the computation's dtype like a C cast (300 wraps to 44);
#  * a value that *becomes* elements or a coefficient (fill values, ``alpha``, clamp bounds, ``full``):
#    ``Scalar.to<T>()`` checks the range and raises instead of wrapping. Negative integers may
#    still wrap into unsigned types (-1 -> 255 for uint8), down to -max.
_C_TYPE = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
           "int32": "int", "int64": "int64_t", "uint16": "uint16_t", "uint32": "uint32_t",
           "uint64": "uint64_t", "float16": "c10::Half", "float32": "float", "float64": "double",
           "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
_LIMITS: dict = {}


def _limits(dt: D.dtype) -> tuple:
    """(lowest, max) of ``dt`` as Python numbers (of its real part for complex dtypes)."""
    lim = _LIMITS.get(dt.name)
    if lim is None:
        if dt._cat == D._INT:
            info = np.iinfo(dt.np)
            lim = (int(info.min), int(info.max))
        else:
            info = D.finfo(dt.to_real())  # (bfloat16 and float8 too: NumPy's finfo lacks them)
            lim = (info.min, info.max)
        _LIMITS[dt.name] = lim
    return lim


def _check_int64(x: int) -> None:
    """A Python int must fit in 64 bits (signed or unsigned) to become a torch Scalar."""
    if x >= 1 << 64:
        raise OverflowError("int too big to convert")
    if x < -(1 << 63):
        raise OverflowError("can't convert negative int to unsigned")


def checked_scalar(x: Any, dt: D.dtype, names: dict = _C_TYPE) -> Any:
    """The number ``x`` as a NumPy scalar of ``dt``, or torch's overflow RuntimeError.

    torch's ``Scalar.to<T>()`` (fill values, ``alpha``, clamp bounds, ``full``): integers must lie
    in the dtype's range (negative ones may wrap into unsigned types, down to -max); floats must
    lie in the range too (a float dtype takes inf and nan; an integer dtype truncates toward 0);
    a complex number needs a zero imaginary part unless ``dt`` is complex.
    """
    if isinstance(x, np.generic):
        x = x.item()
    cat = dt._cat
    if cat == D._BOOL:
        return np.bool_(x)
    if isinstance(x, builtins.bool):
        x = int(x)
    elif isinstance(x, builtins.int):
        _check_int64(x)
    if isinstance(x, builtins.complex) and cat != D._COMPLEX:
        if x.imag != 0:
            raise _overflow(dt, names)
        x = x.real
    lo, hi = _limits(dt)
    if cat == D._INT:
        if isinstance(x, builtins.int):
            if x > hi or x < (lo if lo else -hi):
                raise _overflow(dt, names)
            return dt.np.type(x % (1 << (8 * dt.itemsize)) if x < lo else x)
        if not lo <= x <= hi:  # also nan and inf, which an integer cannot hold
            raise _overflow(dt, names)
        return dt.np.type(int(x))
    if cat == D._FLOAT:
        if abs(x) > hi and not np.isinf(x):
            raise _overflow(dt, names)
        return dt.np.type(x)
    z = builtins.complex(x)
    for part in (z.real, z.imag):
        if abs(part) > hi and not np.isinf(part):
            raise _overflow(dt, names)
    return dt.np.type(z)


def _overflow(dt: D.dtype, names: dict) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {names[dt.name]} without overflow")


def binary_float(a: Any, b: Any) -> tuple[Any, Any, device, D.dtype]:
    """``binary`` for ops computed in floating point (true division, atan2): integer and bool
    results become the default float dtype, and a Python number goes straight to that dtype, so
    ``uint8_tensor / -3`` divides by -3.0 (not by 253, the uint8 that -3 wraps to)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        xa, xb = a._data, b._data
        if xa.dtype == xb.dtype and a._device is b._device and xa.dtype.kind in "fc":
            return xa, xb, a._device, D._BY_NP[xa.dtype]
        dev = a._device if a._device == b._device else check_same_device(a, b)
        dt = D.result_type_key(((2 if xa.ndim else 1, D._BY_NP[xa.dtype]),
                                (2 if xb.ndim else 1, D._BY_NP[xb.dtype])))
        if dt._cat < D._FLOAT:  # each operand goes straight to float: no integer wrap on the way
            dt = D.get_default_dtype()
        xa, xb = array_on(a, dev), array_on(b, dev)
        return (xa if xa.dtype == dt.np else xa.astype(dt.np),
                xb if xb.dtype == dt.np else xb.astype(dt.np), dev, dt)
    t, s = (a, b) if isinstance(a, Tensor) else (b, a)
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    arr = t._data
    dt = D.result_type_key(((2 if arr.ndim else 1, D._BY_NP[arr.dtype]), (0, _scalar_dtype(s))))
    if dt._cat < D._FLOAT:
        dt = D.get_default_dtype()
    xt = arr if arr.dtype == dt.np else arr.astype(dt.np)
    xs = scalar_array(s, dt)
    return (xt, xs, t._device, dt) if t is a else (xs, xt, t._device, dt)


# ------------------------------------------------------------------------ output memory layout
# torch decides the strides of a new result in one of two ways:
#  * reductions (sum, mean, max(dim), cumsum, ...) allocate a contiguous result;
#  * element-wise ops (TensorIterator) follow their inputs' memory layout: the result of an op on
#    transposed or channels_last inputs is transposed or channels_last too (``iter_strides``).
# NumPy also follows its inputs, with slightly different rules, so results are checked here and
# re-laid out (one copy) only in the rare cases where NumPy and torch disagree.
def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements (an empty dim counts as 1, as in torch): the piece
    ``contiguous_strides`` (exercise 01.1)."""
    return tuple(pieces.contiguous_strides(tuple(shape)))


def _elem_strides(arr: Any) -> tuple[int, ...]:
    item = arr.itemsize
    return tuple(s // item for s in arr.strides)


def _dense(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """Non-overlapping and dense: some order of the dims is contiguous (torch's check)."""
    expected = 1
    for st, n in sorted((st, n) for n, st in zip(shape, stride) if n != 1):
        if st != expected:
            return False
        expected *= n
    return True


def _follows(shape: Sequence[int], stride: Sequence[int], order: Sequence[int]) -> bool:
    """True when the dims in ``order`` (innermost first) are laid out contiguously."""
    expected = 1
    for d in order:
        n = shape[d]
        if n != 1:
            if stride[d] != expected:
                return False
            expected *= n
    return True


def iter_strides(shape: tuple, operands: Sequence[tuple]) -> tuple[int, ...]:
    """The strides torch's TensorIterator gives the result of an element-wise op.

    ``operands`` are the inputs' ``(shape, strides)`` in argument order (a Python number is
    ``((), ())``). A port of ``compute_fast_setup_type``, ``reorder_dimensions`` and
    ``allocate_or_resize_outputs``: inputs of one shape that are all contiguous, all
    channels_last, or all dense with equal strides give that layout; otherwise the dims are
    sorted by the inputs' strides (the first input that tells two dims apart decides) and the
    result is contiguous in that order.
    """
    nd = len(shape)
    same = all(s == shape for s, _ in operands)
    if same and operands:
        rev = range(nd - 1, -1, -1)
        if all(_follows(s, st, rev) for s, st in operands):
            return contiguous_strides(shape)
        if nd == 4 and all(_follows(s, st, (1, 3, 2, 0)) for s, st in operands):
            n, c, h, w = (x if x > 1 else 1 for x in shape)
            return (h * w * c, 1, w * c, c)
        first = operands[-1][1]
        if all(st == first for _, st in operands) and _dense(shape, first):
            return first
    if nd <= 1:
        return contiguous_strides(shape)
    strides = []
    for s, st in operands:
        off = nd - len(s)
        full = [0] * nd
        for i, n in enumerate(s):
            full[off + i] = 0 if n == 1 and shape[off + i] != 1 else st[i]
        strides.append(full)

    def should_swap(d0: int, d1: int) -> int:
        for full in strides:
            s0, s1 = full[d0], full[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(nd - 1, -1, -1))
    for i in range(1, nd):  # insertion sort that leaves ambiguous pairs where they are
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    if perm == list(range(nd - 1, -1, -1)):
        return contiguous_strides(shape)
    out, acc = [0] * nd, 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def _dense_order(shape: tuple, stride: tuple) -> tuple:
    """``(shape in memory order, the transpose back)``: how to allocate dense ``stride``."""
    # outermost dim first; a size-1 dim shares its stride with the dim just outside it
    order = sorted(range(len(shape)), key=lambda d: (-stride[d], shape[d] == 1))
    return tuple(shape[d] for d in order), tuple(order.index(d) for d in range(len(shape)))


def _relaid(res: Any, stride: tuple, plan: tuple | None = None) -> Any:
    """A copy of the fresh array ``res`` with the given element strides (``plan``: the cached
    ``_dense_order`` of that layout)."""
    shape = res.shape
    mem_shape, back = plan or _dense_order(shape, stride)
    if type(res) is np.ndarray:
        out = np.empty(mem_shape, res.dtype).transpose(back)
    else:  # CuPy or the simulated device
        out = np.empty_like(res, shape=mem_shape, order="C").transpose(back)
    if _elem_strides(out) != tuple(stride):  # not a permutation of a contiguous layout
        out = restride(np.empty_like(res, shape=(res.size,)), shape, stride)
    out[...] = res
    return out


_LAYOUTS: dict = {}  # (result shape, operand geometries) -> torch's result strides


def pointwise_layout(res: Any, *operands: Any) -> Any:
    """``res``, the fresh result of an element-wise op on ``operands`` (arrays or numbers), laid
    out as torch lays it out (see :func:`iter_strides`); a copy only when NumPy chose otherwise."""
    if res.ndim < 2:
        return res
    if res.size:
        for x in operands:
            if getattr(x, "ndim", 0) and not x.flags.c_contiguous:
                break
        else:  # contiguous inputs give a contiguous result in both libraries
            return res
    key = [res.shape, res.itemsize]
    for x in operands:
        key.append((x.shape, x.strides, x.itemsize) if getattr(x, "ndim", 0) else None)
    key = tuple(key)
    cached = _LAYOUTS.get(key)
    if cached is None:  # the same geometry comes back again and again (training loops): cache it
        ops = tuple((tuple(x.shape), _elem_strides(x)) if getattr(x, "ndim", 0) else ((), ())
                    for x in operands)
        want = iter_strides(tuple(res.shape), ops)
        if len(_LAYOUTS) > 4096:
            _LAYOUTS.clear()
        cached = _LAYOUTS[key] = (want, tuple(s * res.itemsize for s in want),
                                  _dense_order(tuple(res.shape), want))
    want = cached[0]
    if res.strides == cached[1]:
        return res
    if not res.size:  # nothing to copy: just describe the empty result with torch's strides
        return restride(res, res.shape, want)
    return _relaid(res, want, cached[2])


def contiguous_result(res: Any) -> Any:
    """``res`` with row-major strides: reductions (sum, mean, max(dim), cumsum...) return
    contiguous tensors in torch, whatever the layout of their input."""
    if res.ndim < 2 or not res.size:
        return res if res.ndim == 0 or res.flags.c_contiguous else res.copy()
    if res.flags.c_contiguous and (1 not in res.shape or
                                   _elem_strides(res) == contiguous_strides(res.shape)):
        return res  # (NumPy's flag ignores the strides of size-1 dims; torch's strides don't)
    return _relaid(res, contiguous_strides(res.shape))


def preserve_strides(t: Tensor) -> tuple[int, ...]:
    """The strides of ``empty_like(t)`` (``memory_format=torch.preserve_format``, the default):
    a dense tensor's own strides (a transposed tensor stays transposed), else dense strides in
    the order of ``t``'s (torch's ``infer_dense_strides``)."""
    arr = t._data
    shape, stride = tuple(arr.shape), _elem_strides(arr)
    if arr.flags.c_contiguous and stride == contiguous_strides(shape):
        return stride
    if _dense(shape, stride):
        return stride
    return iter_strides(shape, ((shape, stride),))


def preserve_layout(res: Any, t: Tensor) -> Any:
    """``res`` (a fresh array of ``t``'s shape) laid out like ``empty_like(t)``."""
    if res.ndim < 2 or (t._data.flags.c_contiguous and res.flags.c_contiguous):
        return res
    want = preserve_strides(t)
    if _elem_strides(res) == want:
        return res
    if not res.size:
        return restride(res, res.shape, want)
    return _relaid(res, want)


def channels_last_copy(arr: Any) -> Any:
    """A copy of a 4-d (N, C, H, W) array laid out channels-last (C varies fastest)."""
    if arr.ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    return arr.transpose(0, 2, 3, 1).copy().transpose(0, 3, 1, 2)


# ------------------------------------------------------------------------ writing into overlapping memory
_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a "
            "single memory location. Please clone() the tensor before performing the operation.")


def check_no_overlap(t: Tensor) -> None:
    """torch refuses to write into a tensor whose elements share memory (an expanded tensor: a
    dimension of stride 0 and size > 1), since the result would depend on the write order."""
    arr = t._data
    if 0 in arr.strides:
        for n, s in zip(arr.shape, arr.strides):
            if s == 0 and n > 1:
                raise RuntimeError(_OVERLAP)


_WARNED: set = set()


def warn_once(message: str, stacklevel: int = 3) -> None:
    """A UserWarning shown once per process, like torch's ``TORCH_WARN_ONCE``."""
    if message not in _WARNED:
        _WARNED.add(message)
        import warnings

        warnings.warn(message, UserWarning, stacklevel=stacklevel)


def warn_if_expanded(t: Tensor, op: str, example: str = "tensor[mask] = scalar") -> None:
    """masked_fill_, index_fill_ and index_put_ still write into expanded tensors, with torch's
    deprecation warning."""
    arr = t._data
    if 0 in arr.strides and any(s == 0 and n > 1 for n, s in zip(arr.shape, arr.strides)):
        import warnings

        warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor "
                      "before performing this operation. This also applies to advanced indexing "
                      f"e.g. {example}", UserWarning, stacklevel=3)


# ------------------------------------------------------------------------ torch's keyword spellings
def star_or_keyword(args: tuple, kwargs: dict, name: str, fn: str) -> tuple:
    """The ``*args`` of ``f(2, 3)`` / ``f((2, 3))``, or, as torch also accepts, ``f(name=(2, 3))``
    (``zeros(size=...)``, ``view(size=...)``, ``permute(dims=...)``...)."""
    if not kwargs:
        return args
    for k in kwargs:
        if k != name:
            raise TypeError(f"{fn}() got an unexpected keyword argument '{k}'")
    if args:
        raise TypeError(f"{fn}() got multiple values for argument '{name}'")
    return (kwargs[name],)


def numpy_names(fn: Callable) -> Callable:
    """Accept NumPy's names for two arguments, as torch's native functions do: ``axis`` for
    ``dim`` and ``keepdims`` for ``keepdim`` (``x.sum(axis=0, keepdims=True)``)."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for alias, name in (("axis", "dim"), ("keepdims", "keepdim")):
                if alias in kwargs:
                    if name in kwargs:
                        raise TypeError(f"{fn.__name__}() got an unexpected keyword argument "
                                        f"'{alias}'")
                    kwargs[name] = kwargs.pop(alias)
        return fn(*args, **kwargs)
    return op


_HOST_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def host_floats_of_one_dtype(*tensors: Any, contiguous: bool = False) -> bool:
    """Whether every given tensor (``None`` skipped) holds a float32 or float64 array in host
    memory (and row-major, with ``contiguous``), all of one dtype: the inputs a fused NumPy
    kernel (a recurrent layer, an optimizer step) is written for."""
    dtype = None
    for t in tensors:
        if t is None:
            continue
        arr = t._data
        if type(arr) is not np.ndarray or arr.dtype not in _HOST_FLOATS or (
                contiguous and not arr.flags.c_contiguous):
            return False
        if dtype is None:
            dtype = arr.dtype
        elif arr.dtype != dtype:
            return False
    return True
