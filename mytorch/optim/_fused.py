"""Fused fast paths of the optimizer pieces (CPU, contiguous float32/float64 tensors).

The readable pieces (``sgd_step``, ``adam_step``) update a parameter with one tensor operation
per line of the algorithm; each line walks all of the parameter's memory, and most make a
temporary as large as the parameter. For a 10M-parameter model that is ~10 passes over 40 MB.

The kernels here do the same arithmetic, in the same order, over blocks of 64K elements: the
block's temporaries stay in the CPU cache, so every array is read and written about once. Anything
they do not handle (GPU tensors, other dtypes, strided memory) goes to the reference piece.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._ops._operands import host_floats_of_one_dtype
from .._pieces import REGISTRY
from .._tensor import Tensor

__all__ = ["sgd_step", "adam_step"]

_BLOCK = 1 << 16


def _fusable(*tensors: Tensor | None) -> bool:
    """All given tensors are CPU, C-contiguous and of one float dtype (Nones are skipped)."""
    return host_floats_of_one_dtype(*tensors, contiguous=True)


def _flat(t: Tensor) -> np.ndarray:
    return t._data.reshape(-1)


def sgd_step(param: Tensor, grad: Tensor, momentum_buffer: Tensor | None, *, lr: float,
             momentum: float, dampening: float, weight_decay: float, nesterov: bool,
             maximize: bool) -> Tensor | None:
    """``pieces.sgd_step`` in one pass over memory (see ``mytorch/optim/sgd.py``)."""
    if not _fusable(param, grad, momentum_buffer) or param.shape != grad.shape:
        return REGISTRY["sgd_step"].reference(
            param, grad, momentum_buffer, lr=lr, momentum=momentum, dampening=dampening,
            weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
    p, g = _flat(param), _flat(grad)
    first = momentum != 0 and momentum_buffer is None
    if first:
        momentum_buffer = Tensor._wrap(np.empty_like(grad._data), grad.device)
    b = _flat(momentum_buffer) if momentum != 0 else None
    n = p.size
    t = np.empty(min(n, _BLOCK), p.dtype)
    u = np.empty_like(t)
    for i in range(0, n, _BLOCK):
        j = min(i + _BLOCK, n)
        pp, gg, tt, uu = p[i:j], g[i:j], t[:j - i], u[:j - i]
        d = gg
        if weight_decay != 0:              # d = ±grad + weight_decay * param
            np.multiply(pp, weight_decay, out=tt)
            np.subtract(tt, gg, out=tt) if maximize else np.add(gg, tt, out=tt)
            d = tt
        elif maximize:
            d = np.negative(gg, out=tt)
        if b is not None:
            bb = b[i:j]
            if first:
                bb[...] = d
            else:                          # buf = momentum * buf + (1 - dampening) * d
                np.multiply(bb, momentum, out=bb)
                if dampening != 0:
                    np.add(bb, np.multiply(d, 1 - dampening, out=uu), out=bb)
                else:
                    np.add(bb, d, out=bb)
            if nesterov:                   # d = d + momentum * buf
                np.multiply(bb, momentum, out=uu)
                d = np.add(d, uu, out=uu)
            else:
                d = bb
        np.multiply(d, -lr, out=uu)        # param -= lr * d
        np.add(pp, uu, out=pp)
    param._bump()
    if b is not None:
        momentum_buffer._bump()
    return momentum_buffer


def _lerp(m: np.ndarray, g: np.ndarray, w: Any, tmp: np.ndarray) -> None:
    """``m.lerp_(g, w)`` with torch's formula (exact at ``w == 1``)."""
    np.subtract(g, m, out=tmp)
    if abs(w) < 0.5:
        np.multiply(tmp, w, out=tmp)
        np.add(m, tmp, out=m)
    else:
        np.multiply(tmp, 1 - w, out=tmp)
        np.subtract(g, tmp, out=m)


def adam_step(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
              max_exp_avg_sq: Tensor | None, step: float, *, lr: float, beta1: float,
              beta2: float, eps: float, weight_decay: float, amsgrad: bool, maximize: bool,
              decoupled_weight_decay: bool) -> None:
    """``pieces.adam_step`` in one pass over memory (see ``mytorch/optim/adam.py``)."""
    if not _fusable(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq) or \
            param.shape != grad.shape:
        return REGISTRY["adam_step"].reference(
            param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, lr=lr, beta1=beta1,
            beta2=beta2, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
            decoupled_weight_decay=decoupled_weight_decay)
    p, g, m, v = _flat(param), _flat(grad), _flat(exp_avg), _flat(exp_avg_sq)
    vmax = _flat(max_exp_avg_sq) if amsgrad else None
    dt = p.dtype.type
    w1 = dt(1 - beta1)                     # lerp's weight, rounded to the tensors' dtype
    step_size = lr / (1 - beta1 ** step)
    bc2_sqrt = (1 - beta2 ** step) ** 0.5
    n = p.size
    t = np.empty(min(n, _BLOCK), p.dtype)
    u = np.empty_like(t)
    for i in range(0, n, _BLOCK):
        j = min(i + _BLOCK, n)
        pp, gg, mm, vv, tt, uu = p[i:j], g[i:j], m[i:j], v[i:j], t[:j - i], u[:j - i]
        if maximize:
            gg = np.negative(gg, out=uu)
        if weight_decay != 0:
            if decoupled_weight_decay:     # AdamW: param *= 1 - lr * weight_decay
                np.multiply(pp, 1 - lr * weight_decay, out=pp)
            else:                          # Adam: grad += weight_decay * param (L2)
                np.multiply(pp, weight_decay, out=tt)
                gg = np.add(gg, tt, out=uu)
        _lerp(mm, gg, w1, tt)              # m = lerp(m, g, 1 - beta1)
        np.multiply(gg, 1 - beta2, out=tt)  # v = beta2 * v + (1 - beta2) * g * g
        np.multiply(tt, gg, out=tt)
        np.multiply(vv, beta2, out=vv)
        np.add(vv, tt, out=vv)
        if vmax is not None:
            vm = vmax[i:j]
            np.maximum(vm, vv, out=vm)
            vv = vm
        np.sqrt(vv, out=tt)                # denom = sqrt(v) / sqrt(bc2) + eps
        np.divide(tt, bc2_sqrt, out=tt)
        np.add(tt, eps, out=tt)
        np.multiply(mm, -step_size, out=uu)  # param += -step_size * m / denom
        np.divide(uu, tt, out=uu)
        np.add(pp, uu, out=pp)
    for t_ in (param, exp_avg, exp_avg_sq, max_exp_avg_sq):
        if t_ is not None:
            t_._bump()
