"""``Tensor.to``: casting to another dtype and moving to another device, differentiably.

The Tensor class itself (``_tensor.py``) only holds data; ``to`` copies it into a new tensor and,
under autograd, records ``ToCopyBackward0`` (whose backward casts/moves the gradient back), so it
lives here with the operations. ``float()``, ``cuda()``, ``type_as()``... all call it.
(torch: ``aten/src/ATen/native/TensorConversions.cpp``.)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import as_device, cuda_backend, device
from .._tensor import Tensor, tensor_method
from ..autograd.graph import needs_grad, record
from ._operands import preserve_layout
from .shape import to_memory_format

__all__: list[str] = []  # a Tensor method only


@tensor_method()
def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Cast and/or move: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``.

    Returns ``self`` when nothing changes (and ``copy=False``), like torch.
    """
    memory_format = kwargs.pop("memory_format", None)
    if memory_format is not None and memory_format.name != "preserve_format":
        return to_memory_format(self.to(*args, **kwargs), memory_format)
    non_blocking = kwargs.get("non_blocking", False)
    dev, dt, copy = _parse_to(self, args, kwargs)
    if dev == self._device and dt is self.dtype and not copy:
        return self
    arr = self._data
    src_dev = self._device
    if dt is not self.dtype:
        with np.errstate(over="ignore", invalid="ignore"):  # torch casts silently (inf, wrap)
            arr = arr.astype(dt.np)
        if not self._data.flags.c_contiguous:  # laid out like empty_like(self), as in torch
            arr = preserve_layout(arr, self)
    if dev != src_dev:
        if src_dev.type == "cpu":
            arr = cuda_backend().to_device(arr, dev.index, non_blocking)
        elif dev.type == "cpu":
            arr = cuda_backend().to_host(arr)
        else:
            arr = cuda_backend().to_device(cuda_backend().to_host(arr), dev.index)
    elif arr is self._data:
        arr = arr.copy()
    out = Tensor._wrap(arr, dev)
    if needs_grad(self):
        src_dt = self.dtype
        record("ToCopyBackward0", out, (self,),
               lambda g: (g.to(src_dev, src_dt),))
    return out


def _parse_to(t: Tensor, args: tuple, kwargs: dict) -> tuple[device, D.dtype, bool]:
    dev, dt = t._device, t.dtype
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    items = list(args)
    if "device" in kwargs:
        items.append(kwargs.pop("device"))
    if "dtype" in kwargs:
        items.append(kwargs.pop("dtype"))
    if "other" in kwargs:
        items.append(kwargs.pop("other"))
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in items:
        if isinstance(a, bool):
            continue  # positional non_blocking / copy flags of old call forms
        if isinstance(a, Tensor):
            dev, dt = a._device, a.dtype
        elif isinstance(a, D.dtype):
            dt = a
        elif isinstance(a, (str, device, int)):
            dev = as_device(a)
        elif a is None:
            continue
        else:
            dt = D.to_dtype(a)
    return dev, dt, copy
