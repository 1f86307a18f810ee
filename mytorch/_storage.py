"""Storages: the flat, one-dimensional memory that tensors (and their views) look into.

A tensor is (storage, storage_offset, shape, stride). Here a storage is the NumPy array that
owns the memory, seen as a flat array; views made with ``view``, slicing, ``transpose`` or
``expand`` point into the same storage, which is why changing one changes the other.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype as D

__all__ = ["TypedStorage", "UntypedStorage", "storage_offset"]


def _root(arr: Any) -> Any:
    """The array that owns ``arr``'s memory (follow ``.base`` to the end)."""
    while getattr(arr, "base", None) is not None and hasattr(arr.base, "__array_interface__"):
        arr = arr.base
    return arr


def _ptr(arr: Any) -> int:
    if hasattr(arr, "data") and hasattr(arr.data, "ptr"):
        return int(arr.data.ptr)
    return int(arr.__array_interface__["data"][0])


def _flat_bytes(root: Any) -> Any:
    """The owner's whole memory as a flat uint8 array (owners are contiguous)."""
    if root.ndim == 0:
        root = root.reshape(1)
    if not (root.flags.c_contiguous or root.flags.f_contiguous):
        root = np.lib.stride_tricks.as_strided(root, (root.nbytes // root.itemsize,),
                                               (root.itemsize,))
    return root.reshape(-1, order="A").view(np.uint8)


def storage_offset(t: Any) -> int:
    """How many elements into its storage the tensor's first element sits."""
    return (_ptr(t._data) - _ptr(_root(t._data))) // t._data.itemsize


class UntypedStorage:
    """Raw bytes shared by a tensor and its views."""

    def __init__(self, nbytes: int = 0) -> None:
        self._bytes = np.zeros(nbytes, dtype=np.uint8)
        self.device = None

    @classmethod
    def _of(cls, t: Any) -> "UntypedStorage":
        s = object.__new__(cls)
        s._bytes = _flat_bytes(_root(t._data))
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
        return self._bytes.tolist()

    def __getitem__(self, i: Any) -> Any:
        return self._bytes[i].tolist()

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self._bytes.tolist())
        return f"{body}\n[torch.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}]"


class TypedStorage:
    """The storage seen as elements of the tensor's dtype (``tensor.storage()``)."""

    @classmethod
    def _of(cls, t: Any) -> "TypedStorage":
        s = object.__new__(cls)
        raw = _flat_bytes(_root(t._data))
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

    def tolist(self) -> list:
        return self._arr.tolist()

    def __getitem__(self, i: Any) -> Any:
        return self._arr[i].tolist()

    def __setitem__(self, i: Any, v: Any) -> None:
        self._arr[i] = v

    def __iter__(self):
        return iter(self._arr.tolist())

    def untyped(self) -> UntypedStorage:
        u = object.__new__(UntypedStorage)
        u._bytes = self._arr.view(np.uint8)
        u.device = self.device
        return u

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self._arr.tolist())
        return (f"{body}\n[torch.storage.TypedStorage(dtype={D._BY_NP[self._arr.dtype]}, "
                f"device={self.device}) of size {self.size()}]")
