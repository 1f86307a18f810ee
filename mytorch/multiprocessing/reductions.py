"""Tensors in shared memory, and how they travel between processes (``torch.multiprocessing.reductions``).

``t.share_memory_()`` moves ``t``'s storage into a POSIX shared-memory block (``/dev/shm``). A
forked child sees the same pages; a tensor sent to another process (a ``Queue``, ``Process``
arguments under the ``spawn`` start method) is pickled as the *name* of its block plus its
geometry, and the receiver maps the same block: both processes then read and write the same
numbers — which is what Hogwild training relies on. Tensors that are not yet shared are moved to
shared memory when sent, as torch does.
"""
from __future__ import annotations

import os
import weakref
from multiprocessing import shared_memory
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

from .._storage import moved, storage_root
from .._tensor import Tensor, tensor_method
from ..nn.parameter import Parameter

__all__ = ["share_memory_", "is_shared", "init_reductions"]

# name -> SharedMemory, for the blocks this process created or mapped (kept open while used)
_blocks: dict[str, shared_memory.SharedMemory] = {}
_owner_of: dict[int, str] = {}  # id(root array) -> block name


def _release(name: str, creator: int) -> None:
    block = _blocks.pop(name, None)
    if block is None:
        return
    try:
        block.close()
    except BufferError:  # an array still maps it: the mapping ends with the process
        pass
    if os.getpid() == creator:  # a forked child must not unlink its parent's block
        try:
            block.unlink()
        except FileNotFoundError:
            pass


def _block_of(arr: np.ndarray) -> str | None:
    return _owner_of.get(id(storage_root(arr)))


def is_shared(self: Tensor) -> bool:
    """Whether the tensor's storage is in shared memory (CUDA tensors: always, as in torch)."""
    return self._device.type != "cpu" or _block_of(self._data) is not None


def share_memory_(self: Tensor) -> Tensor:
    """Move the storage to shared memory, in place (its views follow); no-op if already shared."""
    if self._device.type != "cpu" or _block_of(self._data) is not None:
        return self
    old = storage_root(self._data)
    block = shared_memory.SharedMemory(create=True, size=max(old.nbytes, 1))
    new = np.ndarray(old.shape, old.dtype, buffer=block.buf, strides=old.strides)
    new[...] = old
    _blocks[block.name] = block
    _owner_of[id(new)] = block.name
    weakref.finalize(new, _forget, id(new), block.name, os.getpid())
    self._data = moved(self._data, old, new)
    for t in (self._base, *(r() for r in (self._vc.views or ()))):
        if t is not None and t is not self:
            t._data = moved(t._data, old, new)
    return self


def _forget(root_id: int, name: str, creator: int) -> None:
    _owner_of.pop(root_id, None)
    _release(name, creator)


def _attach(name: str) -> shared_memory.SharedMemory:
    block = _blocks.get(name)
    if block is None:
        block = _blocks[name] = shared_memory.SharedMemory(name=name)
    return block


def _rebuild(cls: type, name: str, root_shape: tuple, dtype: str, root_strides: tuple,
             offset: int, shape: tuple, strides: tuple, requires_grad: bool) -> Tensor:
    block = _attach(name)
    root = np.ndarray(root_shape, dtype, buffer=block.buf, strides=root_strides)
    _owner_of[id(root)] = name
    weakref.finalize(root, _owner_of.pop, id(root), None)
    arr = np.ndarray(shape, dtype, buffer=root, offset=offset, strides=strides) if root.size else \
        np.ndarray(shape, dtype)
    t = Tensor._wrap(arr)
    if cls is Parameter:
        return Parameter(t, requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _reduce(t: Tensor) -> Any:
    if t._device.type != "cpu" or t.grad_fn is not None:
        return t.__reduce_ex__(2)  # device tensors and graph outputs: copied, as plain pickling
    share_memory_(t)
    root = storage_root(t._data)
    offset = t._data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return (_rebuild, (type(t), _owner_of[id(root)], root.shape, root.dtype.str, root.strides,
                       offset, t._data.shape, t._data.strides, t.requires_grad))


def init_reductions() -> None:
    """Teach multiprocessing's pickler to send tensors through shared memory."""
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, _reduce)


tensor_method("share_memory_")(share_memory_)
tensor_method("is_shared")(is_shared)
