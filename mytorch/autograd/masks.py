"""Backward helpers of ops whose derivative is constant where defined (relu, pooling, losses).

:func:`mask_grad` keeps a gradient where a mask holds; :func:`depends_on` records a gradient as a
function of the input with derivative zero. Both make ``create_graph`` give zeros, as torch's
``*_backward`` ops do, instead of "does not require grad".
"""
from __future__ import annotations

from typing import Any

from .._device import xp_for
from .._tensor import Tensor, wrap
from .grad_mode import STATE
from .node import SavedOutput, record

__all__ = ["mask_grad", "depends_on"]


def mask_grad(name: str, g: "Tensor", mask: Any, x: Any, twice: str = "") -> "Tensor":
    """``g`` where the bool array ``mask`` holds (0 elsewhere), or ``g * mask`` for a float array:
    the backward of relu-like, piecewise-linear ops.

    ``mask`` comes from ``x`` (the tensor, or :class:`SavedOutput`, that the op saved) but is
    constant wherever it is defined, so the second derivative is zero. Under ``create_graph`` the
    result is recorded as a function of ``g`` *and* ``x``, like torch's ``*_backward`` ops:
    differentiating it again w.r.t. the input gives zeros, not an error. ``twice``: the message
    of the RuntimeError that differentiating it again raises instead, where torch's does.
    """
    arr = g._data
    if mask.dtype != bool:
        out = arr * mask.astype(arr.dtype, copy=False)
    elif arr.ndim and not any(arr.strides) and arr.shape == mask.shape:
        # one number broadcast (the gradient of a sum, a mean): the mask times that number
        v = arr[(0,) * arr.ndim]
        out = mask.astype(arr.dtype)
        if not bool(xp_for(g._device).isfinite(v)):
            out = xp_for(g._device).where(mask, arr, arr.dtype.type(0))
        elif v != 1:
            out *= v
    elif bool(xp_for(g._device).isfinite(arr).all()):
        out = arr * mask  # much faster than where() on an irregular mask
    else:  # 0 * inf would be nan: where the mask is off, the gradient is exactly 0 (as torch's)
        out = xp_for(g._device).where(mask, arr, arr.dtype.type(0))
    res = wrap(out, g._device)
    if STATE.enabled:
        t = x() if x.__class__ is SavedOutput else x
        if g._requires_grad or t._requires_grad:
            record(name, res, (g, t), _refuse(twice) if twice else
                   lambda gg: (mask_grad(name, gg, mask, t) if g._requires_grad else None,
                               gg.new_zeros(tuple(t.shape)) if t._requires_grad else None),
                   saved=(t,))
    return res


def _refuse(message: str) -> Any:
    def backward(gg: "Tensor") -> tuple:
        raise RuntimeError(message)
    return backward


def depends_on(g: "Tensor", x: Any, name: str) -> "Tensor":
    """``g``, recorded under ``create_graph`` as a function of ``x`` too, with derivative zero.

    For the backward of ops whose gradient does not depend on the input's values (pooling,
    nll_loss): torch's backward ops take the input anyway, so differentiating the gradient w.r.t.
    the input gives zeros instead of "does not require grad".
    """
    if not STATE.enabled:
        return g
    t = x() if x.__class__ is SavedOutput else x
    if not t._requires_grad:
        return g
    out = wrap(g._data, g._device)
    return record(name, out, (g, t), lambda gg: (gg if g._requires_grad else None,
                                                 gg.new_zeros(tuple(t.shape))))
