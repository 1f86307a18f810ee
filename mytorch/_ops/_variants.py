"""The in-place and ``out=`` variants of an op, built around its functional form.

torch generates three variants of most ops: ``add(a, b)``, ``a.add_(b)`` (in place) and
``add(a, b, out=t)``. Every op module shares the two that write into an existing tensor:

* :func:`inplace` writes a result into ``self`` (its views see it), bumps its version counter and
  makes the new graph node ``self``'s history; :func:`_inplace_version` builds ``Tensor.<op>_``
  from the functional op;
* :func:`_to_out` copies a result into ``out=`` (resizing an empty one), as torch does;

with torch's checks and messages (``result type Float can't be cast to the desired output type
Long``). This module sits below the op families in mytorch's layer stack, so pointwise, shape,
indexing, linalg... all import it and none of them has to import another for it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.graph import adopt_outputs, check_inplace, needs_grad, rebase_history, record
from ._operands import check_no_overlap


def _check_out_dtype(res_dt: D.dtype, out_dt: D.dtype) -> None:
    if not D.can_cast(res_dt, out_dt):
        raise RuntimeError(f"result type {_cap(res_dt)} can't be cast to the desired output type "
                           f"{_cap(out_dt)}")


def _cap(d: D.dtype) -> str:
    """torch's C++ name of a dtype, as its error messages print it (``Float``, ``Long``…)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def _check_shape(self: Tensor, res_shape: tuple) -> None:
    if tuple(res_shape) != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(res_shape)}")


def inplace(self: Tensor, res: Any, name: str, inputs: tuple, backward: Any,
            saved: tuple = ()) -> Tensor:
    """Write ``res`` into ``self``'s memory (views see it), bump its version, rebase its history.

    ``saved``: tensors other than ``self`` that ``backward`` reads (self's old value is gone).
    """
    grad_needed = needs_grad(*inputs)
    if grad_needed:  # torch's refusals: a leaf that requires grad, a view of one, some views
        check_inplace(self)
    _check_out_dtype(D._BY_NP[res.dtype], self.dtype)
    _check_shape(self, res.shape)
    if grad_needed:
        # The old value of self becomes an ordinary input of the new node.
        old = _stand_in(self, self._data)
        inputs = tuple(old if x is self else x for x in inputs)
    self._data[...] = res
    self._bump()
    if grad_needed:
        record(name, self, inputs, backward, saved)
        if self._base is not None:
            rebase_history(self)  # the base changed too: its grad_fn must see it
    return self


def _to_out(res: Tensor, out: Tensor | None) -> Tensor:
    """Support ``out=``: copy into the given tensor (resizing an empty one), as torch does."""
    if out is None:
        return res
    check_no_overlap(out)
    if res._requires_grad and out._requires_grad:
        raise RuntimeError("out=... arguments don't support automatic differentiation, but one of "
                           "the arguments requires grad.")
    _check_out_dtype(res.dtype, out.dtype)
    if tuple(out.shape) != tuple(res.shape):
        out._data = np.empty(res._data.shape, out._data.dtype) if out._device.type == "cpu" \
            else res._data.astype(out._data.dtype)
    out._data[...] = res._data
    out._bump()
    return out


def _stand_in(t: Tensor, arr: Any) -> Tensor:
    """A tensor over ``arr`` with ``t``'s history (its node and which output of it, or its leaf
    node): it stands in for ``t`` in the graph of an in-place op on ``t``."""
    old = Tensor._wrap(arr, t._device)
    old.grad_fn, old._requires_grad, old._acc_node = t.grad_fn, t._requires_grad, t._acc_node
    if t._output_nr:  # output 1, 2... of a node with several
        old._output_nr = t._output_nr
    return old


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t``'s current value that stands in for ``t`` in the autograd graph."""
    return _stand_in(t, t._data.copy())


def _inplace_version(fn: Callable) -> Callable:
    """Build ``Tensor.<op>_`` from the out-of-place ``fn``: same math, result written into self.

    Under autograd, ``fn`` runs on a snapshot of the old value (which carries self's history),
    so its backward still sees the input as it was; self then takes over the new graph node.
    This is what torch does for in-place ops whose derivative needs the original input.
    """
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        grad_needed = needs_grad(self, *args, *kwargs.values())
        if grad_needed:
            check_inplace(self)
        check_no_overlap(self)  # an expanded tensor: torch refuses to write into it
        res = fn(_snapshot(self) if grad_needed else self, *args, **kwargs)
        _check_out_dtype(res.dtype, self.dtype)
        _check_shape(self, res._data.shape)
        self._data[...] = res._data
        self._bump()
        if res.grad_fn is not None:
            self.grad_fn, self._requires_grad = res.grad_fn, True
            if self._output_nr:  # it was output 1, 2... of another node
                self._output_nr = res._output_nr
            adopt_outputs(res.grad_fn, res, self)  # a saved result now lives in self
            if self._base is not None:
                rebase_history(self)
        return self

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__module__ = fn.__module__  # exp_ belongs to pointwise, addmm_ to linalg, ...
    method.__doc__ = f"In-place version of :func:`{fn.__name__}`."
    return method
