"""The legacy tensor types: ``torch.FloatTensor``, ``torch.LongTensor``, ``torch.cuda.FloatTensor``, ...

They are not subclasses of ``Tensor`` (every tensor is a plain ``Tensor``) but *type objects*
standing for a (dtype, device) pair, as in torch:

* ``isinstance(t, torch.FloatTensor)`` is ``t.dtype == torch.float32 and t.device.type == 'cpu'``;
* ``torch.FloatTensor(2, 3)`` / ``torch.FloatTensor([1, 2])`` build a ``Tensor`` of that dtype
  (sizes: uninitialised; data: copied; a tensor of that dtype: aliased);
* ``t.type(torch.DoubleTensor)`` casts, and ``t.type()`` names them.

旧式张量类型：不是 Tensor 的子类，而是代表（dtype, 设备）组合的类型对象。
"""
from __future__ import annotations

from typing import Any

from . import _dtype as D
from ._tensor import _LEGACY_NAMES, Tensor

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


def _make(name: str, dtype_name: str, cuda: bool) -> type:
    return _LegacyTensorType(name, (), {
        "_legacy_dtype": D._BY_NAME[dtype_name], "is_cuda": cuda,
        "__module__": "torch.cuda" if cuda else "torch",
        "__doc__": f"Legacy type for {'CUDA ' if cuda else ''}tensors of dtype {dtype_name}."})


CPU_TYPES = {name: _make(name, dt, False) for dt, name in _TYPES.items()}
CUDA_TYPES = {name: _make(name, dt, True) for dt, name in _TYPES.items()}
