"""The legacy tensor types: ``torch.FloatTensor``, ``torch.LongTensor``, ``torch.cuda.FloatTensor``, ...

They are not subclasses of ``Tensor`` (every tensor is a plain ``Tensor``) but *type objects*
standing for a (dtype, device) pair, as in torch:

* ``isinstance(t, torch.FloatTensor)`` is ``t.dtype == torch.float32 and t.device.type == 'cpu'``;
* ``torch.FloatTensor(2, 3)`` / ``torch.FloatTensor([1, 2])`` build a ``Tensor`` of that dtype
  (sizes: uninitialised; data: copied; a tensor of that dtype: aliased);
* ``t.type(torch.DoubleTensor)`` casts, and ``t.type()`` names them.

The legacy constructor ``torch.Tensor(2, 3)`` / ``torch.Tensor([1, 2])`` / ``torch.Tensor(t)``,
which they all go through, is here too: it needs the creation functions and (to alias a tensor)
the autograd graph, both above the Tensor class in mytorch's layer stack, so this module attaches
it to ``Tensor`` as ``__init__``.

旧式张量类型：不是 Tensor 的子类，而是代表（dtype, 设备）组合的类型对象。
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtype as D
from ._creation import _from_data
from ._device import as_device, cuda_backend, device
from ._ops._operands import size_args
from ._tensor import _LEGACY_NAMES, Size, Tensor, _c_name, _init, tensor_method
from .autograd.graph import needs_grad, record

# the dtypes torch has a legacy type for (no complex, no uint16/32/64 ones)
_TYPES = {dt: name for dt, name in _LEGACY_NAMES.items()
          if dt in ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
                    "bool")}
__all__ = list(_TYPES.values())


class _LegacyTensorType(type):
    """Metaclass of the legacy types: instance checks look at dtype and device."""

    _legacy_dtype: D.dtype
    is_cuda: bool

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls._legacy_dtype and \
            obj.is_cuda == cls.is_cuda

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:
        unknown = set(kwargs) - {"device"}
        if unknown:
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)}, "
                            f"{', '.join(f'{k}=' for k in sorted(unknown))}...), but expected "
                            "one of: (*, torch.device device), (torch.Storage storage), "
                            "(Tensor other), (tuple of ints size, *, torch.device device), "
                            "(object data, *, torch.device device)")
        device = kwargs.get("device", "cuda" if cls.is_cuda else None)
        t = Tensor.__new__(Tensor)
        t.__init__(*args, device=device, dtype=cls._legacy_dtype)
        return t

    @property
    def dtype(cls) -> D.dtype:
        return cls._legacy_dtype

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _legacy_init(self: Tensor, *args: Any, device: Any = None, dtype: Any = None) -> None:
    """Legacy constructor, as in torch: sizes give an uninitialised tensor of the default
    dtype (``Tensor(2, 3)``, ``Tensor(torch.Size([2]))``, ``Tensor()`` is empty), data is
    copied (``Tensor([1, 2])``, ``Tensor((2, 3))``, a NumPy array), and a tensor is aliased:
    ``Tensor(t)`` shares ``t``'s memory and keeps its dtype.

    ``dtype`` is mytorch's own: the legacy classes (``torch.FloatTensor``) pass theirs.
    """
    if hasattr(self, "_data"):
        return  # built by a subclass's __new__ (e.g. Parameter)
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    dev = as_device(device)
    data = args[0] if len(args) == 1 else None
    if isinstance(data, Tensor):
        if dtype is not None and data.dtype is not dt:
            raise TypeError(f"expected {_options(dt, dev)} (got {_options(data.dtype, dev)})")
        _alias(self, data)
        return
    if isinstance(data, (float, complex, bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    if data is not None and not isinstance(data, (int, np.integer, Size)):
        arr = _from_data(data, dt)
    else:  # sizes: Tensor(2, 3), Tensor(torch.Size([2, 3])), Tensor() is empty
        arr = np.empty(size_args(tuple(data) if isinstance(data, Size) else (args or (0,))),
                       dtype=dt.np)
    _init(self, arr if dev.type == "cpu" else cuda_backend().to_device(arr, dev.index), dev)


_legacy_init.__name__, _legacy_init.__qualname__ = "__init__", "Tensor.__init__"
tensor_method("__init__")(_legacy_init)


def _alias(t: Tensor, src: Tensor) -> None:
    """Make ``t`` a view of all of ``src`` (``torch.Tensor(src)``): same memory, same dtype."""
    _init(t, src._data, src._device)
    t._vc = src._vc
    t._base = src if src._base is None else src._base
    t._inference = src._inference
    if needs_grad(src):
        record("AliasBackward0", t, (src,), lambda g: (g,))


def _options(dt: D.dtype, dev: device) -> str:
    """torch's printout of TensorOptions, in the legacy constructors' dtype errors."""
    return (f"TensorOptions(dtype={_c_name(dt)}, device={dev}, layout=Strided, requires_grad=false "
            "(default), pinned_memory=false (default), memory_format=(nullopt))")


def _make(name: str, dtype_name: str, cuda: bool) -> type:
    return _LegacyTensorType(name, (), {
        "_legacy_dtype": D._BY_NAME[dtype_name], "is_cuda": cuda,
        "__module__": "torch.cuda" if cuda else "torch",
        "__doc__": f"Legacy type for {'CUDA ' if cuda else ''}tensors of dtype {dtype_name}."})


CPU_TYPES = {name: _make(name, dt, False) for dt, name in _TYPES.items()}
CUDA_TYPES = {name: _make(name, dt, True) for dt, name in _TYPES.items()}
