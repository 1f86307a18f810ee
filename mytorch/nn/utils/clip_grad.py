"""Gradient clipping: keep one bad batch from throwing the weights far away.

``clip_grad_norm_`` treats all gradients as one long vector: when its norm exceeds ``max_norm``,
every gradient is scaled by the same factor ``max_norm / norm`` (the update keeps its direction,
only shorter). ``clip_grad_value_`` clamps each gradient element into ``[-v, v]`` instead (which
can change the direction). Call either after ``backward()`` and before ``optimizer.step()``.

As in torch, ``clip_grad_norm_`` is two public steps: ``get_total_norm`` (the norm of all the
gradients together: :func:`total_norm`) and ``clip_grads_with_norm_`` (scale them by one factor:
:func:`scale_grads_`).
Splitting them lets a training loop measure the norm, log or all-reduce it, then clip.
"""
from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable

import numpy as np

import mytorch as torch

from ..._creation import tensor as _tensor
from ..._ops.shape import stack
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = list(parameters)
    if is_generator and not parameters:  # model.parameters() of a model without parameters
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                      stacklevel=3)
    return parameters


def _vector_norm(t: Tensor, p: float) -> Tensor:
    return t.abs().max() if p == math.inf else t.norm(p)


def total_norm(tensors: list, norm_type: float) -> "Tensor":
    """The ``norm_type``-norm of all ``tensors`` together, as if flattened into one long vector.

    For ``p > 0`` that is ``(sum over every element x of every tensor of |x|^p) ** (1/p)``; for
    ``p = inf``, the largest ``|x|``. Returns a 0-dim tensor.
    """
    if norm_type == math.inf:
        return torch.stack([t.abs().max() for t in tensors]).max()
    if norm_type == 2.0:
        fast = _two_norm_arrays(tensors)
        if fast is not None:
            return fast
    per_tensor = torch.stack([(t.abs() ** norm_type).sum() for t in tensors])
    return per_tensor.sum() ** (1.0 / norm_type)


def _host_floats(tensors: list) -> bool:
    """Every tensor a float32 or float64 NumPy array of one dtype (the arrays' fast paths)."""
    first = tensors[0]._data
    return all(type(t._data) is np.ndarray and t._data.dtype == first.dtype for t in tensors) \
        and first.dtype in (np.float32, np.float64)


def _two_norm_arrays(tensors: list) -> Tensor | None:
    """The 2-norm of host float arrays: one dot product per tensor (each accumulated in its
    dtype, as torch's per-tensor norms are), then the norm of those norms."""
    if not _host_floats(tensors):
        return None
    dtype = tensors[0]._data.dtype
    squares = np.array([np.dot(a, a) for a in (t._data.reshape(-1) for t in tensors)], dtype)
    with np.errstate(all="ignore"):
        return wrap(np.asarray(np.sqrt(squares.sum(dtype=dtype)), dtype), tensors[0]._device)


def scale_grads_(grads: list, max_norm: float, total_norm: "Tensor") -> None:
    """Scale every gradient, in place, by ``max_norm / (total_norm + 1e-6)`` — but never up.

    One factor for all of them keeps the direction of the update; the ``1e-6`` keeps a zero norm
    from dividing by zero. The factor stays a tensor (no ``.item()``: on a GPU that would wait
    for the device) and goes to each gradient's device.
    """
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    if type(coef._data) is np.ndarray and _host_floats(grads) and coef.dtype == grads[0].dtype:
        c = coef._data[()]
        for g in grads:  # in place on the arrays: the op of mul_, without its dispatch
            np.multiply(g._data, c, out=g._data)
            g._bump()
        return
    for g in grads:
        g.mul_(coef.to(g.device))


def _check_finite(total: Tensor, norm_type: float) -> None:
    if not math.isfinite(float(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")


@no_grad()
def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The norm of ``tensors`` (usually the gradients) taken together as one vector.

    ``norm_type`` may be ``inf``; ``error_if_nonfinite`` raises when the norm is nan or inf.
    ``foreach`` is accepted for compatibility and ignored.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _tensor(0.0)
    first = tensors[0].device
    if norm_type == math.inf or norm_type > 0:
        total = total_norm([t if t.device == first else t.to(first) for t in tensors], norm_type)
    else:  # 0 (count of non-zeros) and -inf: the norm of the per-tensor norms, as torch does
        total = _vector_norm(stack([t.norm(norm_type).to(first) for t in tensors]), norm_type) \
            if norm_type != -math.inf else stack([t.abs().min().to(first) for t in tensors]).min()
    if error_if_nonfinite:
        _check_finite(total, norm_type)
    return total


@no_grad()
def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale the gradients of ``parameters`` by ``max_norm / total_norm`` when that is below 1
    (``total_norm`` as computed by ``get_total_norm``, possibly on other ranks too)."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    scale_grads_(grads, float(max_norm), total_norm)


@no_grad()
def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale all gradients together so that their total ``norm_type``-norm is at most ``max_norm``.

    The total norm is the norm of all gradients concatenated; it is returned, measured *before*
    clipping, which makes it handy to log. ``norm_type`` may be ``inf`` (largest absolute
    value). ``foreach`` is accepted for compatibility and ignored.
    """
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


@no_grad()
def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` (in place)."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(-clip_value, clip_value)
