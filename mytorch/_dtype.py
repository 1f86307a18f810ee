"""Data types and torch's type-promotion rules.

A ``mytorch.dtype`` wraps a NumPy dtype. Promotion follows PyTorch, not NumPy:
tensors with dimensions win over 0-dim tensors, which win over Python numbers,
unless a lower-priority operand belongs to a higher *category*
(bool < integer < floating < complex).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "float32",
    "float64", "complex64", "complex128", "half", "float", "double", "short", "int", "long",
    "cfloat", "cdouble", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "finfo", "iinfo", "get_default_dtype", "set_default_dtype",
    "promote_types", "can_cast",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, e.g. ``mytorch.float32``. Compare with ``is`` or ``==``."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed", "_cat")

    def __init__(self, name: str, np_dtype: Any, cat: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._cat = cat
        self.is_floating_point = cat == _FLOAT
        self.is_complex = cat == _COMPLEX
        self.is_signed = name not in ("bool", "uint8", "uint16", "uint32", "uint64")

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_from_name, (self.name,))

    def to_real(self) -> "dtype":
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> "dtype":
        return {float32: complex64, float64: complex128, float16: complex64}.get(self, self)


def _from_name(name: str) -> dtype:
    return _BY_NAME[name]


bool = dtype("bool", np.bool_, _BOOL)  # noqa: A001 - mirrors torch.bool
uint8 = dtype("uint8", np.uint8, _INT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
# torch's "barebones" unsigned types: storage and a few kernels, and no promotion with other
# integer types (uint16 + int32 is an error in torch, see promote_types)
uint16 = dtype("uint16", np.uint16, _INT)
uint32 = dtype("uint32", np.uint32, _INT)
uint64 = dtype("uint64", np.uint64, _INT)
float16 = dtype("float16", np.float16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
complex64 = dtype("complex64", np.complex64, _COMPLEX)
complex128 = dtype("complex128", np.complex128, _COMPLEX)



class _ExtensionDtype(dtype):
    """A floating dtype NumPy lacks (bfloat16, float8): stored as ml_dtypes' NumPy types.

    The dtype object exists without ml_dtypes (nanoGPT names ``torch.bfloat16`` in a table even
    when it never uses it); its NumPy type, ``.np``, imports ml_dtypes on first use."""

    __slots__ = ()

    def __init__(self, name: str, itemsize: int) -> None:
        self.name, self.itemsize, self._cat = name, itemsize, _FLOAT
        self.is_floating_point, self.is_complex, self.is_signed = True, False, True

    @property
    def np(self) -> Any:  # type: ignore[override]
        found = _EXTENSION_NP.get(self.name)
        return found if found is not None else _load_ml_dtypes()[self.name]


bfloat16 = _ExtensionDtype("bfloat16", 2)
float8_e4m3fn = _ExtensionDtype("float8_e4m3fn", 1)
float8_e4m3fnuz = _ExtensionDtype("float8_e4m3fnuz", 1)
float8_e5m2 = _ExtensionDtype("float8_e5m2", 1)
float8_e5m2fnuz = _ExtensionDtype("float8_e5m2fnuz", 1)
float8_e8m0fnu = _ExtensionDtype("float8_e8m0fnu", 1)
float8_e8m0fnu.is_signed = False  # a power of two: exponent bits only
_EXTENSION = (bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)
_FLOAT8 = _EXTENSION[1:]
_EXTENSION_NP: dict[str, Any] = {}
ON_EXTENSION_LOAD: list = []  # called once ml_dtypes is loaded (upper layers add to it)


def _load_ml_dtypes() -> dict[str, Any]:
    """Import ml_dtypes and register its NumPy types as the extension dtypes' storage."""
    if not _EXTENSION_NP:
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError("mytorch stores bfloat16 and float8 tensors with the ml_dtypes "
                              "package: pip install ml_dtypes") from None
        for d in _EXTENSION:
            npd = np.dtype(getattr(ml_dtypes, d.name))
            _BY_NP[npd], _BY_NP_TYPE[npd.type] = d, d
            _EXTENSION_NP[d.name] = npd
        for hook in ON_EXTENSION_LOAD:  # e.g. mytorch/_bfloat16.py: float32 compute for bfloat16
            hook()
    return _EXTENSION_NP


half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

_ALL = (bool, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128,
        uint16, uint32, uint64)
_BAREBONES = (uint16, uint32, uint64)
_BY_NAME = {d.name: d for d in _ALL + _EXTENSION}
_BY_NP = {d.np: d for d in _ALL}
_BY_NP_TYPE = {d.np.type: d for d in _ALL}

_default_float = float32


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Change the default floating dtype (only float32 and float64 are allowed, as in torch)."""
    global _default_float
    if d not in (float32, float64, float16, bfloat16):
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d
    _PROMO_CACHE.clear()


def from_numpy_dtype(npd: Any) -> dtype:
    """Map a NumPy dtype to mytorch's dtype; TypeError for types torch has no tensor for."""
    try:
        return _BY_NP[np.dtype(npd)]
    except (KeyError, TypeError):
        pass
    npd = np.dtype(npd)
    if not _EXTENSION_NP and type(npd.type).__module__ != "numpy" and npd.kind == "V":
        try:  # perhaps an ml_dtypes array met before any bfloat16 dtype was used
            _load_ml_dtypes()
        except ImportError:
            pass
        if npd in _BY_NP:
            return _BY_NP[npd]
    raise TypeError(
        f"can't convert np.ndarray of type numpy.{npd}. The only supported types are: float64, "
        "float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, uint32, "
        "uint16, uint8, and bool."
    )


def to_dtype(d: Any) -> dtype:
    """Accept a mytorch dtype, a NumPy dtype, a Python type (float/int/bool) or a name."""
    if isinstance(d, dtype):
        return d
    if d is _py_float:  # torch maps the Python types to 64-bit dtypes: dtype=float is float64
        return float64
    if d is _py_complex:
        return complex128
    if d is _py_int:
        return int64
    if d is _py_bool:
        return bool
    if isinstance(d, str):
        d = d.removeprefix("torch.")
        if d in _BY_NAME:
            return _BY_NAME[d]
        alias = {"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16, "cfloat": complex64, "cdouble": complex128}
        if d in alias:
            return alias[d]
        raise TypeError(f"unknown dtype name {d!r}")
    return from_numpy_dtype(d)


import builtins as _builtins  # noqa: E402
import math as _math  # noqa: E402

_py_float, _py_int, _py_bool, _py_complex = _builtins.float, _builtins.int, _builtins.bool, _builtins.complex


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (torch.promote_types)."""
    if a is b:
        return a
    if a in _FLOAT8 or b in _FLOAT8:
        raise RuntimeError("Promotion for Float8 Types is not supported, attempted to promote "
                           f"{_scalar_name(a)} and {_scalar_name(b)}")
    if a in _BAREBONES or b in _BAREBONES:
        if a._cat == _FLOAT or b._cat == _FLOAT:
            return a if a._cat == _FLOAT else b
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                           f"attempted to promote {_scalar_name(a)} and {_scalar_name(b)}")
    if a._cat == b._cat:
        if a is bfloat16 or b is bfloat16:  # floats: bfloat16 with float16 meet in float32
            other = b if a is bfloat16 else a
            return float32 if other is float16 else other
        if a._cat == _INT and (a is uint8 or b is uint8):
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return _BY_NP[np.promote_types(a.np, b.np)]
    hi, lo = (a, b) if a._cat > b._cat else (b, a)
    if hi._cat == _COMPLEX and lo is float64:
        return complex128
    return hi


def _scalar_name(d: dtype) -> str:
    """torch's ScalarType name (``UInt16``, ``Int``, ``ComplexFloat``...) for error messages."""
    return {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
            "int64": "Long", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
            "float16": "Half", "float32": "Float", "float64": "Double",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble", "bfloat16": "BFloat16",
            "float8_e4m3fn": "Float8_e4m3fn", "float8_e4m3fnuz": "Float8_e4m3fnuz",
            "float8_e5m2": "Float8_e5m2", "float8_e5m2fnuz": "Float8_e5m2fnuz",
            "float8_e8m0fnu": "Float8_e8m0fnu"}[d.name]


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # Port of ATen's combine_categories.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher._cat == _COMPLEX:
        return higher
    if lower._cat == _COMPLEX:
        return higher.to_complex() if higher._cat == _FLOAT else lower
    if higher._cat == _FLOAT:
        return higher
    if higher is bool or lower._cat == _FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(x: Any) -> dtype:
    """The dtype a Python number stands for when it meets a tensor."""
    if isinstance(x, _py_bool):
        return bool
    if isinstance(x, _py_int):
        return int64
    if isinstance(x, _py_float):
        return _default_float
    if isinstance(x, _py_complex):
        return _default_float.to_complex()
    if isinstance(x, np.generic):
        return from_numpy_dtype(x.dtype)
    raise TypeError(f"unsupported scalar type {type(x).__name__}")


_PROMO_CACHE: dict = {}


def result_type_key(key: tuple) -> dtype:
    """Promote a tuple of (priority, dtype) pairs; priority 2=tensor with dims, 1=0-dim, 0=number."""
    res = _PROMO_CACHE.get(key)
    if res is not None:
        return res
    states: list[dtype | None] = [None, None, None]
    for prio, d in key:
        cur = states[prio]
        states[prio] = d if cur is None else promote_types(cur, d)
    res = _combine(states[2], _combine(states[1], states[0]))
    _PROMO_CACHE[key] = res
    return res


def can_cast(from_: dtype, to: dtype) -> bool:
    """torch.can_cast: False when casting would lose a category (float→int, complex→float, …)."""
    if from_._cat <= to._cat:
        return True
    return False


class finfo:
    """Machine limits of a floating dtype (torch.finfo)."""

    def __init__(self, type: dtype | None = None) -> None:  # noqa: A002
        d = _default_float if type is None else to_dtype(type)
        if d._cat < _FLOAT:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to "
                            "handle 'torch.finfo'")
        if isinstance(d, _ExtensionDtype):
            import ml_dtypes  # loaded with d.np

            info = ml_dtypes.finfo(d.np)
        else:
            info = np.finfo(d.np)
        self.dtype = d.to_real().name
        self.bits = info.bits
        self.eps = _py_float(info.eps) if d is not float8_e5m2fnuz else 0.125  # (torch's value)
        self.max = _py_float(info.max)
        self.min = _py_float(info.min)
        self.tiny = self.smallest_normal = _py_float(info.smallest_normal)
        # torch: a power of ten, 10 ** -floor(-log10(eps)) (NumPy's precision, but ml_dtypes
        # rounds differently for the 1-byte types)
        self.resolution = 10 ** -_math.floor(-_math.log10(self.eps))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype (torch.iinfo)."""

    def __init__(self, type: dtype) -> None:  # noqa: A002
        d = to_dtype(type)
        if d._cat != _INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = np.iinfo(d.np)
        self.dtype = d.name
        self.bits, self.max, self.min = info.bits, _py_int(info.max), _py_int(info.min)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
