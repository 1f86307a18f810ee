"""Tensors in shared memory, and how they travel between processes (``torch.multiprocessing.reductions``).

``t.share_memory_()`` moves ``t``'s storage into a block of shared memory. A forked child sees the
same pages; a tensor sent to another process (a ``Queue``, ``Process`` arguments under the ``spawn``
start method) is pickled as the block's *file descriptor* plus its geometry, and the receiver maps
the same block: both processes then read and write the same numbers — which is what Hogwild training
relies on. Tensors that are not yet shared are moved to shared memory when sent, as torch does.

Lifetime (torch's ``file_descriptor`` strategy): a block has no name once created (a Linux
``memfd``, elsewhere a POSIX block unlinked at once), so nothing is left in ``/dev/shm`` if a process
dies. A block lives while some process maps it or holds a descriptor of it. Pickling a tensor
duplicates the descriptor and parks the copy with ``multiprocessing``'s resource sharer until the
receiver collects it: the sender may drop the tensor right after ``q.put(t)`` (it must stay alive
until the receiver has taken it, as with torch). Each process closes its mapping when the last
array over the block is garbage collected.
"""
from __future__ import annotations

import mmap
import os
import uuid
import weakref
from multiprocessing import shared_memory
from multiprocessing.reduction import DupFd, ForkingPickler
from typing import Any

import numpy as np

from .._storage import moved, storage_root
from .._tensor import Tensor, tensor_method
from ..nn.parameter import Parameter

__all__ = ["share_memory_", "is_shared", "init_reductions"]


class _Block:
    """One block of shared memory in this process: a file descriptor and its mapping.

    ``key`` names the block across processes (a receiver that gets the same block twice maps it
    once); ``roots`` counts the live arrays of this process over it.
    """

    def __init__(self, fd: int, size: int, key: str) -> None:
        self.fd, self.size, self.key, self.roots = fd, size, key, 0
        self.mmap = mmap.mmap(fd, size)
        self.buf = memoryview(self.mmap)

    @classmethod
    def create(cls, size: int) -> _Block:
        """A new, nameless block of ``size`` bytes."""
        fd = None
        if hasattr(os, "memfd_create"):
            try:
                fd = os.memfd_create("mytorch-shared", os.MFD_CLOEXEC)
                os.ftruncate(fd, size)
            except OSError:   # not allowed here (a sandbox): a POSIX block instead
                if fd is not None:
                    os.close(fd)
                fd = None
        if fd is None:
            shm = shared_memory.SharedMemory(create=True, size=size)
            fd = os.dup(shm._fd)   # ours: it outlives the name, unlinked right away
            shm.close()
            shm.unlink()
        return cls(fd, size, uuid.uuid4().hex)

    def close(self) -> None:
        try:
            self.buf.release()
            self.mmap.close()
        except BufferError:   # an array still maps it: the mapping ends with the process
            pass
        os.close(self.fd)


# key -> _Block, for the blocks this process created or mapped (kept open while used)
_blocks: dict[str, _Block] = {}
_owner_of: dict[int, str] = {}  # id(root array) -> block key


def _adopt(root: np.ndarray, block: _Block) -> None:
    """Record that ``root`` lives in ``block``; the block closes with the last such array."""
    _owner_of[id(root)] = block.key
    block.roots += 1
    weakref.finalize(root, _forget, id(root), block.key)


def _forget(root_id: int, key: str) -> None:
    _owner_of.pop(root_id, None)
    block = _blocks.get(key)
    if block is None:
        return
    block.roots -= 1
    if block.roots <= 0:
        del _blocks[key]
        block.close()


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
    block = _Block.create(max(old.nbytes, 1))
    new = np.ndarray(old.shape, old.dtype, buffer=block.buf, strides=old.strides)
    new[...] = old
    _blocks[block.key] = block
    _adopt(new, block)
    self._data = moved(self._data, old, new)
    for t in (self._base, *(r() for r in (self._vc.views or ()))):
        if t is not None and t is not self:
            t._data = moved(t._data, old, new)
    return self


def _rebuild(cls: type, key: str, fd: Any, size: int, root_shape: tuple, dtype: str,
             root_strides: tuple, offset: int, shape: tuple, strides: tuple,
             requires_grad: bool) -> Tensor:
    own_fd = fd.detach()   # always collect it: the sender keeps its copy until we do
    block = _blocks.get(key)
    if block is None:
        block = _blocks[key] = _Block(own_fd, size, key)
    else:
        os.close(own_fd)
    root = np.ndarray(root_shape, dtype, buffer=block.buf, strides=root_strides)
    _adopt(root, block)
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
    block = _blocks[_owner_of[id(root)]]
    return (_rebuild, (type(t), block.key, DupFd(block.fd), block.size, root.shape, root.dtype.str,
                       root.strides, offset, t._data.shape, t._data.strides, t.requires_grad))


def init_reductions() -> None:
    """Teach multiprocessing's pickler to send tensors through shared memory."""
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, _reduce)


tensor_method("share_memory_")(share_memory_)
tensor_method("is_shared")(is_shared)
