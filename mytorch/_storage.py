"""Storages: the flat, one-dimensional memory that tensors (and their views) look into.

A tensor is (storage, storage_offset, shape, stride). Here the storage is the memory of the array
that *owns* it (follow NumPy's/CuPy's ``.base`` to the end); views made with ``view``, slicing,
``transpose`` or ``expand`` point into the same storage, which is why changing one changes the
other. ``storage_offset`` and ``stride`` are counted in elements, like torch.

张量 = 存储(一维内存) + 偏移 + 形状 + 步长。视图共享同一块存储。
"""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _dtype as D
from ._device import CPU
from ._pieces import piece, pieces

__all__ = ["TypedStorage", "UntypedStorage", "storage_offset", "strided_view", "restride", "resized",
           "extent", "moved", "mark_not_resizable", "with_empty_strides", "storage_root",
           "contiguous_strides", "storage_extent"]


def _is_array(obj: Any) -> bool:
    return hasattr(obj, "dtype") and hasattr(obj, "strides") and hasattr(obj, "shape")


def _root(arr: Any) -> Any:
    """The array that owns ``arr``'s memory.

    Walks ``.base`` to the end, passing through helper objects (NumPy's ``as_strided`` keeps the
    owner behind a small interface object) but stopping at non-array owners such as ``bytes``.
    """
    owner = arr
    base = getattr(arr, "base", None)
    while base is not None:
        if _is_array(base):
            owner = base
        base = getattr(base, "base", None)
    return owner


def _ptr(arr: Any) -> int:
    """Address of the first element (CuPy arrays carry it in ``.data.ptr``)."""
    if isinstance(arr, np.ndarray):
        return arr.__array_interface__["data"][0]
    if hasattr(arr, "data") and hasattr(arr.data, "ptr"):
        return int(arr.data.ptr)
    return int(arr.__array_interface__["data"][0])


def _span(arr: Any) -> tuple[int, int]:
    """(lowest address, number of bytes) of the memory an array can reach."""
    lo = hi = _ptr(arr)
    if arr.flags.c_contiguous:
        return lo, arr.nbytes
    if arr.size == 0:
        return lo, 0
    for n, s in zip(arr.shape, arr.strides, strict=False):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi - lo + arr.itemsize


def _storage_bytes(arr: Any) -> Any:
    """The whole storage behind ``arr`` as a flat ``uint8`` array (shares memory)."""
    root = _root(arr)
    start, nbytes = _span(root)
    return _raw_view(root, start, (nbytes,), (1,), np.uint8)


def _raw_view(root: Any, address: int, shape: tuple, byte_strides: tuple, dtype: Any) -> Any:
    """An array of ``dtype`` at ``address`` inside ``root``'s memory (keeps ``root`` alive)."""
    if not isinstance(root, np.ndarray):  # CuPy: pointer arithmetic on its memory pointer
        import cupy  # type: ignore[import-not-found]

        return cupy.ndarray(shape, dtype, memptr=root.data + (address - _ptr(root)),
                            strides=byte_strides)
    rlo, rbytes = _span(root)
    if root.flags.c_contiguous and 0 not in shape:
        owner = root if type(root) is np.ndarray else root.view(np.ndarray)
        out = np.ndarray(shape, dtype, buffer=owner, offset=address - rlo, strides=byte_strides)
    else:  # an exotic owner, or an empty view at the very end: describe the memory directly
        out = np.asarray(_Window(address, shape, byte_strides, np.dtype(dtype), root))
    return out if type(root) is np.ndarray else out.view(type(root))


class _Window:
    """Exposes raw memory to ``np.asarray`` (the way ``as_strided`` does) and keeps the owner alive."""

    def __init__(self, address: int, shape: tuple, strides: tuple, dtype: np.dtype,
                 owner: Any) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": shape, "strides": strides,
                                    "typestr": dtype.str, "version": 3}
        self.base = owner


# ============================================================================ the geometry pieces
@piece("01.1")
def contiguous_strides(shape: tuple) -> tuple:
    """The strides (in elements) of a row-major, contiguous tensor of ``shape``: the last dim
    moves by 1, and each dim steps over one whole block of the dims after it. A dim of length 0
    counts as 1, so an empty tensor still gets strides (torch's rule)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@piece("01.2")
def storage_extent(shape: tuple, stride: tuple, offset: int) -> int:
    """How many elements a storage must hold for a view with ``shape``, ``stride`` (all >= 0)
    and ``offset``: one more than the position of its last element, or 0 if it has no element."""
    if 0 in shape:
        return 0
    last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
    return last + 1


def extent(size: Sequence[int], stride: Sequence[int], offset: int) -> int:
    """How many storage elements a (size, stride, offset) geometry needs (the piece
    :func:`storage_extent`)."""
    return pieces.storage_extent(size, stride, offset)


def storage_offset(t: Any) -> int:
    """How many elements into its storage the tensor's first element sits."""
    start, _ = _span(_root(t._data))
    return (_ptr(t._data) - start) // t._data.itemsize


def storage_nbytes(arr: Any) -> int:
    """Size in bytes of the storage behind ``arr``."""
    return _span(_root(arr))[1]


def restride(arr: Any, size: Sequence[int], stride: Sequence[int], shift: int = 0) -> Any:
    """A view of ``arr``'s memory with ``size``/``stride`` (elements), starting ``shift`` elements
    after ``arr``'s first element. The caller guarantees it stays inside the storage."""
    item = arr.itemsize
    out = _raw_view(_root(arr), _ptr(arr) + shift * item, tuple(size),
                    tuple(s * item for s in stride), arr.dtype)
    if type(out) is not type(arr):
        out = out.view(type(arr))
    return out


# Storages that belong to someone else (``from_numpy``): they may not grow, as in torch.
_FIXED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def mark_not_resizable(arr: Any) -> None:
    """Remember that ``arr``'s storage is borrowed (from NumPy) and must keep its size."""
    root = _root(arr)
    _FIXED[id(root)] = root


def resized(arr: Any, size: Sequence[int], stride: Sequence[int]) -> Any:
    """``arr`` re-shaped in place of its storage (``resize_``): same storage offset, new geometry.

    When the storage is too small a bigger one is allocated and the old bytes copied over; the
    caller moves the other tensors on the old storage over with :func:`moved`. A borrowed
    storage (``from_numpy``) cannot grow: RuntimeError, as in torch.
    """
    root = _root(arr)
    start, nbytes = _span(root)
    item = arr.itemsize
    offset = (_ptr(arr) - start) // item
    need = extent(size, stride, offset) * item
    if need > nbytes:  # grow: new memory, old contents first
        if _FIXED.get(id(root)) is root:
            raise RuntimeError("Trying to resize storage that is not resizable")
        if not isinstance(root, np.ndarray):
            import cupy  # type: ignore[import-not-found]

            new = cupy.zeros(need, np.uint8)
        else:
            new = np.zeros(need, np.uint8)
        new[:nbytes] = _storage_bytes(arr).view(np.ndarray) if type(new) is np.ndarray \
            else _storage_bytes(arr)
        root, start = new, _ptr(new)
    out = _raw_view(root, start + offset * item, tuple(size), tuple(s * item for s in stride),
                    arr.dtype)
    if type(out) is not type(arr):
        out = out.view(type(arr))
    return out


def with_empty_strides(arr: Any) -> Any:
    """An empty array seen with torch's strides for it.

    NumPy gives every empty array all-zero strides; torch gives an empty tensor the strides it
    would have with its empty dims counted as 1 (``zeros(0, 3).stride() == (3, 1)``), and keeps
    them through views (``zeros(0, 3).t().stride() == (1, 3)``).
    """
    return restride(arr, arr.shape, tuple(pieces.contiguous_strides(arr.shape)))


def moved(arr: Any, old: Any, new: Any) -> Any:
    """``arr`` (a view into the storage whose owner is ``old``) re-pointed at the same place in
    ``new``, a bigger copy of that storage: how the views of a tensor follow ``resize_``."""
    if _root(arr) is not old:
        return arr
    shift = _ptr(arr) - _span(old)[0]
    out = _raw_view(new, _span(new)[0] + shift, arr.shape, arr.strides, arr.dtype)
    return out if type(out) is type(arr) else out.view(type(arr))


def storage_root(arr: Any) -> Any:
    """The array that owns ``arr``'s storage."""
    return _root(arr)


def strided_view(arr: Any, size: Sequence[int], stride: Sequence[int], offset: int) -> Any:
    """A view with ``size``/``stride``/``offset`` (in elements) measured from the storage start.

    This is ``as_strided``: it may reach any element of the storage, not only those ``arr`` shows.
    RuntimeError (torch's wording) when the geometry runs past the end of the storage.
    """
    root = _root(arr)
    start, nbytes = _span(root)
    item = arr.itemsize
    need = extent(size, stride, offset) * item
    if need > nbytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{offset}, and itemsize {item} requiring a storage size of {need} are "
                           f"out of bounds for storage of size {nbytes}")
    out = _raw_view(root, start + offset * item, tuple(size), tuple(s * item for s in stride),
                    arr.dtype)
    if type(out) is not type(arr) and type(arr) is not np.ndarray:
        out = out.view(type(arr))
    return out


class UntypedStorage:
    """Raw bytes shared by a tensor and its views (``tensor.untyped_storage()``)."""

    def __init__(self, nbytes: int = 0) -> None:
        self._bytes = np.zeros(nbytes, dtype=np.uint8)
        self.device = CPU

    @classmethod
    def _of(cls, t: Any) -> UntypedStorage:
        s = object.__new__(cls)
        s._bytes = _storage_bytes(t._data)
        s.device = t.device
        return s

    def nbytes(self) -> int:
        return int(self._bytes.size)

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def data_ptr(self) -> int:
        return _ptr(self._bytes)

    def element_size(self) -> int:
        return 1

    def tolist(self) -> list:
        return self._host().tolist()

    def _host(self) -> np.ndarray:
        b = self._bytes
        return b if type(b) is np.ndarray else np.asarray(b.get() if hasattr(b, "get") else b)

    def __getitem__(self, i: Any) -> Any:
        return self._host()[i].tolist()

    def __setitem__(self, i: Any, v: Any) -> None:
        self._bytes[i] = v

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[torch.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}]"


_TYPED_STORAGE_WARNED = [False]


def warn_typed_storage(stacklevel: int = 2) -> None:
    """torch's deprecation warning for ``tensor.storage()``: once per process, like torch."""
    if not _TYPED_STORAGE_WARNED[0]:
        import warnings

        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter to "
                      "you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=stacklevel + 1)
        _TYPED_STORAGE_WARNED[0] = True


class TypedStorage:
    """The storage seen as elements of the tensor's dtype (``tensor.storage()``)."""

    @classmethod
    def _of(cls, t: Any) -> TypedStorage:
        s = object.__new__(cls)
        raw = _storage_bytes(t._data)
        usable = raw.size - raw.size % t._data.itemsize
        s._arr = raw[:usable].view(t._data.dtype)
        s.dtype = t.dtype
        s.device = t.device
        return s

    def size(self) -> int:
        return int(self._arr.size)

    def __len__(self) -> int:
        return self.size()

    def data_ptr(self) -> int:
        return _ptr(self._arr)

    def element_size(self) -> int:
        return self._arr.itemsize

    def nbytes(self) -> int:
        return int(self._arr.nbytes)

    def _host(self) -> np.ndarray:
        a = self._arr
        return a if type(a) is np.ndarray else np.asarray(a.get() if hasattr(a, "get") else a)

    def tolist(self) -> list:
        return self._host().tolist()

    def __getitem__(self, i: Any) -> Any:
        return self._host()[i].tolist()

    def __setitem__(self, i: Any, v: Any) -> None:
        self._arr[i] = v

    def __iter__(self):
        return iter(self.tolist())

    def untyped(self) -> UntypedStorage:
        u = object.__new__(UntypedStorage)
        u._bytes = self._arr.view(np.uint8)
        u.device = self.device
        return u

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[torch.storage.TypedStorage(dtype={D._BY_NP[self._arr.dtype]}, "
                f"device={self.device}) of size {self.size()}]")
