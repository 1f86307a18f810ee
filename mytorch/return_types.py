"""``torch.return_types``: the named tuples that ops such as ``max(t, dim)`` and ``sort`` return.

They are tuples (so ``values, indices = t.max(1)`` unpacks) whose fields also have names
(``t.max(1).indices``), and they print like torch's::

    torch.return_types.max(
    values=tensor([3., 2.]),
    indices=tensor([1, 0]))
"""
from __future__ import annotations

from typing import Any

__all__ = ["max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "aminmax",
           "cummax", "cummin", "linalg_svd", "svd"]


class _ReturnType(tuple):
    """Base class: a tuple with named fields, printed as ``torch.return_types.<name>(...)``."""

    _fields: tuple[str, ...] = ()
    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> _ReturnType:
        values = tuple(args) + tuple(kwargs[f] for f in cls._fields[len(args):])
        if len(values) != len(cls._fields):
            raise TypeError(f"torch.return_types.{cls.__name__} takes {len(cls._fields)} fields "
                            f"({', '.join(cls._fields)}), got {len(values)}")
        return tuple.__new__(cls, values)

    @property
    def n_fields(self) -> int:
        return len(self._fields)

    def __repr__(self) -> str:
        body = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True))
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return (type(self), tuple(self))


def _make(name: str, fields: tuple[str, ...]) -> type:
    cls = type(name, (_ReturnType,), {"__slots__": (), "_fields": fields,
                                      "__module__": __name__,
                                      "__qualname__": name})
    for i, field in enumerate(fields):
        setattr(cls, field, property(lambda self, i=i: tuple.__getitem__(self, i)))
    return cls


max = _make("max", ("values", "indices"))  # noqa: A001 - torch's names
min = _make("min", ("values", "indices"))  # noqa: A001
sort = _make("sort", ("values", "indices"))
topk = _make("topk", ("values", "indices"))
kthvalue = _make("kthvalue", ("values", "indices"))
median = _make("median", ("values", "indices"))
nanmedian = _make("nanmedian", ("values", "indices"))
mode = _make("mode", ("values", "indices"))
cummax = _make("cummax", ("values", "indices"))
cummin = _make("cummin", ("values", "indices"))
aminmax = _make("aminmax", ("min", "max"))
linalg_svd = _make("linalg_svd", ("U", "S", "Vh"))
svd = _make("svd", ("U", "S", "V"))
