"""Loss functions: how far a prediction is from its target, as one number to minimise.

Every loss first computes one value per element (or per sample), then *reduces* them with
``reduction``: ``'none'`` keeps them all, ``'sum'`` adds them, ``'mean'`` averages them.

Two families live here:

* **regression** losses (``l1_loss``, ``mse_loss``, ``smooth_l1_loss``, ``huber_loss``,
  ``kl_div``) are short compositions of Tensor ops; autograd differentiates them;
* **classification** losses (``nll_loss``, ``binary_cross_entropy``,
  ``binary_cross_entropy_with_logits``) are single recorded ops: the forward is computed on the
  arrays and the backward is torch's closed-form gradient. That is faster, and it keeps the
  gradient finite where the composition would produce ``0 * inf = nan`` (a saturated sigmoid).
  ``cross_entropy`` is ``nll_loss(log_softmax(x))``; for class-index targets the two are fused
  into one op (same numbers, half the passes over the logits).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ... import _dtype as D
from ..._device import xp_for
from ..._ops import pointwise as _pw
from ..._ops._operands import broadcast_error, check_same_device, result_type
from ..._ops.indexing import where
from ..._ops.shape import broadcast_shapes, broadcast_tensors
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import STATE, no_grad
from ...autograd.graph import depends_on, needs_grad, record
from .activation import log_softmax

__all__ = ["l1_loss", "mse_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "kl_div"]

_REDUCTIONS = ("none", "mean", "sum")


# ----------------------------------------------------------------------------- reduction
def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """The old ``size_average``/``reduce`` flags as a ``reduction`` string (with torch's warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=3)
    return ret


def _reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The reduction to apply: the legacy flags win when given; unknown names are a ValueError."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _reduce_array(loss: Any, reduction: str) -> Any:
    """:func:`_reduce` on a backend array (for the ops that compute their forward on arrays)."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore"):  # the mean of nothing is 0/0 = nan, silently (like torch)
        return loss.sum() / loss.dtype.type(loss.size)


def _scale(g: Tensor, reduction: str, n: int) -> Tensor:
    """The incoming gradient as seen by each element: a mean spreads it over ``n`` elements."""
    return g / n if reduction == "mean" else g


def _weighted_reduce(loss: Tensor, weight: Tensor, reduction: str, mean_by_weight: bool) -> Tensor:
    """torch's Python-side element-weighted reduction of l1/mse (sum of weights) and huber (mean)."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if mean_by_weight else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


# ----------------------------------------------------------------------------- argument checks
def _warn_if_broadcast(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size "
                      f"({input.size()}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)


def _same_device(*tensors: Tensor | None) -> None:
    """torch's device check, in its argument order: the fused losses work on raw arrays."""
    check_same_device(*(t for t in tensors if t is not None))


def _require_float(dt: D.dtype, kernel: str) -> None:
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_pw._cap(dt)}'")


def _not_differentiable(fn: str, name: str, t: Tensor | None) -> None:
    """torch refuses a ``weight`` that requires grad: these ops have no derivative for it."""
    if t is not None and t._requires_grad and STATE.enabled:
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{name}'. This input cannot have requires_grad True.")


def _fits(shape: tuple, other: Tensor | None, other_first: bool = False) -> None:
    """``other`` must broadcast *into* ``shape`` (torch multiplies it in place).

    Shapes that do not broadcast at all get the error of torch's product, whose left operand
    is ``other`` when ``other_first`` (``pos_weight * target``), else the loss (``loss * weight``).
    """
    if other is not None:
        pair = (tuple(other.shape), shape) if other_first else (shape, tuple(other.shape))
        try:
            np.broadcast_shapes(*pair)
        except ValueError:
            broadcast_error(*pair)
        full = tuple(broadcast_shapes(shape, tuple(other.shape)))
        if full != tuple(shape):
            raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast "
                               f"shape {list(full)}")


def _as_grad(g: Tensor, like: Tensor) -> Tensor:
    """A gradient in ``like``'s dtype (targets may have been promoted with the input)."""
    return g if g._data.dtype == like._data.dtype else g.to(like.dtype)


# ============================================================================= regression losses
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|x - y|``: robust to outliers, gradient ±1 everywhere."""
    _warn_if_broadcast(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    x, y = broadcast_tensors(input, target)
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        return _weighted_reduce((x - y).abs() * weight, weight, reduction, mean_by_weight=True)
    return _reduce((x - y).abs(), _reduction(None, None, reduction))


def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(x - y)²``: the regression default; punishes big errors most."""
    _warn_if_broadcast(input, target)
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    x, y = broadcast_tensors(input, target)
    if weight is not None:
        if weight.shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        return _weighted_reduce((x - y).square() * weight, weight, reduction, mean_by_weight=True)
    reduction = _reduction(None, None, reduction)
    _require_float(result_type(x, y), "mse_cpu")
    _same_device(x, y)  # _mse works on the raw arrays
    return _mse(x, y, reduction)


def _mse(x: Tensor, y: Tensor, reduction: str) -> Tensor:
    """``reduce((x - y)²)`` as one op that saves ``x`` and ``y``, like torch's: changing either in
    place before backward is then an error rather than unnoticed."""
    dt = result_type(x, y)
    a, b = x._data.astype(dt.np, copy=False), y._data.astype(dt.np, copy=False)
    with _pw._quiet():
        diff = a - b
        out = wrap(_reduce_array(diff * diff, reduction), x._device)
    if needs_grad(x, y):
        n = diff.size

        def backward(g: Tensor) -> tuple:
            d = (x - y) * (_scale(g, reduction, n) * 2)
            return (_as_grad(d, x) if x._requires_grad else None,
                    _as_grad(-d, y) if y._requires_grad else None)

        record("MseLossBackward0", out, (x, y), backward, saved=(x, y))
    return out


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """Quadratic ``0.5 d²/β`` for ``|d| < β``, linear ``|d| - 0.5β`` beyond: L1 with a smooth tip."""
    _warn_if_broadcast(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    x, y = broadcast_tensors(input, target)
    if beta == 0.0:
        return _reduce((x - y).abs(), reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _require_float(result_type(x, y), "smooth_l1_cpu")
    d = x - y
    z = d.abs()
    return _reduce(where(z < beta, 0.5 * d * d / beta, z - 0.5 * beta), reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d²`` for ``|d| < δ``, ``δ(|d| - 0.5δ)`` beyond: equals ``δ · smooth_l1_loss(β=δ)``."""
    _warn_if_broadcast(input, target)
    x, y = broadcast_tensors(input, target)
    if weight is None:
        reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _require_float(result_type(x, y), "huber_cpu")
    d = x - y
    z = d.abs()
    loss = where(z < delta, 0.5 * d * d, delta * (z - 0.5 * delta))
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    return _weighted_reduce(loss * weight, weight, reduction, mean_by_weight=False)


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence ``Σ p (log p - x)`` with ``x`` = log-probabilities of the model, ``p`` = target.

    ``reduction='batchmean'`` (sum / batch size) is the mathematical KL; ``'mean'`` also divides
    by the number of classes, which is why torch warns about it.
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    enum = _reduction(None, None, "sum" if reduction == "batchmean" else reduction)
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input  # 0 · log 0 counts as 0
    out = _reduce(loss, enum)
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.size(0)
    return out


# ============================================================================= negative log-likelihood
def _check_nll(input: Tensor, target: Tensor, weight: Tensor | None) -> None:
    """torch's checks, in torch's order: dims, batch size, target shape, target dtype, weight."""
    nd, tshape = input.dim(), tuple(target.shape)
    if nd < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {nd})")
    if nd != 1 and input.shape[0] != (tshape[0] if tshape else 0):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({tshape[0] if tshape else 0}).")
    if nd == 1 and len(tshape) == 1 and tshape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                         f"{tshape[0]}")
    if nd <= 2 and len(tshape) > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if nd == 4 and len(tshape) != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {len(tshape)}")
    if nd == 4 and tshape != (input.shape[0],) + tuple(input.shape[2:]):
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                           f"{list(tshape)}")
    if nd > 2 and nd != 4 and tshape[1:] != tuple(input.shape[2:]):
        want = [input.shape[0], *input.shape[2:]]
        raise RuntimeError(f"Expected target size {want}, got {list(tshape)}")
    if target.dtype not in (D.int64, D.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{_pw._cap(target.dtype)}")
    n_classes = input.shape[0 if nd == 1 else 1]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"weight tensor should be defined either for all {n_classes} classes "
                           f"or no classes but got weight tensor of shape: {list(weight.shape)}")
    _require_float(input.dtype, "nll_loss_out_frame")
    if weight is not None and weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_pw._cap(input.dtype)} but found "
                           f"{_pw._cap(weight.dtype)}")


def _class_targets(input: Tensor, target: Tensor, ignore_index: int) -> tuple[Any, Any, int]:
    """(index array safe to gather with, mask of ignored targets, class dim); IndexError if out
    of range."""
    cdim = 0 if input.dim() == 1 else 1
    xp = xp_for(input._device)
    t = target._data.astype(np.int64, copy=False)
    if input.dim() == 1:
        t = t.reshape(())
    ignored = t == ignore_index
    safe = xp.where(ignored, 0, t)
    bad = (safe < 0) | (safe >= input.shape[cdim])
    if bad.any():
        raise IndexError(f"Target {int(safe[bad].reshape(-1)[0])} is out of bounds.")
    return safe, ignored, cdim


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``-input[n, target[n]]`` (times ``weight[target[n]]``): the loss for log-probabilities.

    ``input`` is ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)`` and ``target`` holds class indices of
    shape ``()``, ``(N,)`` or ``(N, d1, ...)``. Targets equal to ``ignore_index`` contribute 0;
    ``'mean'`` divides by the summed weight of the targets that were *not* ignored.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _same_device(input, target, weight)
    _check_nll(input, target, weight)
    _not_differentiable("nll_loss_forward", "weight", weight)
    safe, ignored, cdim = _class_targets(input, target, ignore_index)
    xp = xp_for(input._device)
    x = input._data
    key = _along(safe, cdim, xp)
    picked = x[key].reshape(safe.shape)
    out, coef = _weighted_nll(input, picked, _target_weights(weight, safe, ignored, x.dtype, xp),
                              reduction)
    if needs_grad(input):
        def backward(g: Tensor) -> tuple:
            # d loss / d input[n, c] = coef[n] = -w[n] (/ total) where c = target[n], 0 elsewhere.
            if not (g._requires_grad or STATE.enabled):  # usual: g is a constant, fold it in
                return (wrap(_scatter_along(x.shape, key, coef * g._data, xp), input._device),)
            d_input = wrap(_scatter_along(x.shape, key, coef, xp), input._device)
            d = d_input * (g.unsqueeze(cdim) if reduction == "none" else g)
            # create_graph: like torch's, the gradient depends (with derivative 0) on the input
            return (depends_on(d, input, "NllLossBackwardBackward0"),)

        record("NllLossBackward0", out, (input,), backward)
    return out


def _target_weights(weight: Tensor | None, safe: Any, ignored: Any, dtype: Any, xp: Any) -> Any:
    """Each target's class weight (1 without ``weight``), 0 where the target is ignored."""
    if weight is None:
        return (~ignored).astype(dtype)
    return xp.where(ignored, 0, weight._data[safe]).astype(dtype, copy=False)


def _weighted_nll(input: Tensor, picked: Any, w: Any, reduction: str) -> tuple[Tensor, Any]:
    """The reduced loss ``-w · picked`` and ``coef``, the derivative of it w.r.t. ``picked``."""
    losses = -picked * w
    if reduction == "none":
        res, coef = losses, -w
    elif reduction == "sum":
        res, coef = losses.sum(), -w
    else:
        total = w.sum()
        with np.errstate(invalid="ignore", divide="ignore"):  # all ignored: 0/0 = nan, as torch
            res, coef = losses.sum() / total, -w / total
    xp = xp_for(input._device)
    return wrap(xp.asarray(res, dtype=input._data.dtype), input._device), coef


def _along(safe: Any, dim: int, xp: Any) -> tuple:
    """The NumPy key of position ``safe[n, ...]`` along ``dim``: ``arr[key]`` reads
    ``arr[n, safe[n], ...]`` for ``dim=1`` (the result keeps a size-1 ``dim``)."""
    shape = safe.shape[:dim] + (1,) + safe.shape[dim:]
    key = [xp.arange(n).reshape((n,) + (1,) * (len(shape) - 1 - d)) for d, n in enumerate(shape)]
    key[dim] = safe.reshape(shape)
    return tuple(key)


def _scatter_along(shape: tuple, key: tuple, values: Any, xp: Any) -> Any:
    """Zeros with ``values`` written at ``key`` (see :func:`_along`): a one-hot gradient."""
    out = xp.zeros(shape, dtype=values.dtype)
    out[key] = values.reshape(out[key].shape)
    return out


# ============================================================================= cross-entropy
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, dim=1), target)``: the loss for raw scores (logits).

    ``target`` is either class indices (``(N,)`` or ``(N, d1, ...)``, int64) or class
    probabilities of ``input``'s shape (floating). ``label_smoothing=ε`` mixes the target with
    the uniform distribution: ``(1 - ε)·target + ε/C``.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _same_device(input, target, weight)
    if input.shape == target.shape:  # same shape: the target holds probabilities
        if not target.dtype.is_floating_point:
            raise RuntimeError("Expected floating point type for target with class probabilities, "
                               f"got {_pw._cap(target.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        return _cross_entropy_smoothed(input, target, weight, reduction, ignore_index,
                                       label_smoothing)
    return _cross_entropy_indices(input, target, weight, ignore_index, reduction)


def _cross_entropy_indices(input: Tensor, target: Tensor, weight: Tensor | None,
                           ignore_index: int, reduction: str) -> Tensor:
    """``nll_loss(log_softmax(input))`` as one op: the same numbers with half the passes.

    Only the target's log-probability is needed: ``z_y - m - log Σ exp(z - m)`` (m = the max).
    The gradient is ``(softmax - one_hot) · w``; the forward keeps ``exp(z - m)`` and its sums
    for it. Under ``create_graph=True`` the backward is built from differentiable ops instead.
    """
    cdim = 0 if input.dim() == 1 else 1
    if not input.dtype.is_floating_point:  # torch's log_softmax refuses first
        last = "lastdim_" if cdim == input.dim() - 1 else ""
        raise NotImplementedError(f"\"log_softmax_{last}kernel_impl\" not implemented for "
                                  f"'{_pw._cap(input.dtype)}'")
    _check_nll(input, target, weight)
    _not_differentiable("nll_loss_forward", "weight", weight)
    safe, ignored, cdim = _class_targets(input, target, ignore_index)
    xp = xp_for(input._device)
    x = input._data
    key = _along(safe, cdim, xp)
    with _pw._quiet():
        shifted = x - x.max(axis=cdim, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=cdim, keepdims=True)
        picked = (shifted[key] - np.log(s)).reshape(safe.shape)
    out, coef = _weighted_nll(input, picked, _target_weights(weight, safe, ignored, x.dtype, xp),
                              reduction)
    if needs_grad(input):
        def backward(g: Tensor) -> tuple:
            if STATE.enabled or g._requires_grad:  # create_graph: keep d(grad)/d(input)
                one_hot = wrap(_scatter_along(x.shape, key, xp.ones_like(coef), xp), input._device)
                p = log_softmax(input, cdim).exp()
                scale = wrap(coef.reshape(s.shape), input._device)
                return ((one_hot - p) * scale * (g.unsqueeze(cdim) if reduction == "none" else g),)
            vals = (coef * g._data).reshape(s.shape)  # d loss / d log p_y, per sample
            grad = e / s                              # softmax
            grad *= -vals                             # -p · vals everywhere ...
            grad[key] += vals                         # ... plus vals at the targets
            return (wrap(grad, input._device),)

        record("NllLossBackward0", out, (input,), backward)
    return out


def _check_smoothing(label_smoothing: float) -> None:
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")


def _class_view(weight: Tensor, ndim: int, cdim: int) -> Tensor:
    """``weight`` (C,) shaped to broadcast along the class dim of an ``ndim``-dim input."""
    shape = [1] * ndim
    shape[cdim] = weight.shape[0]
    return weight.view(*shape)


def _cross_entropy_probs(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                         label_smoothing: float) -> Tensor:
    """``-Σ_c w_c p_c log q_c`` per sample, for a target of probabilities ``p``."""
    cdim = 0 if input.dim() == 1 else 1
    n_classes = input.shape[cdim] if input.dim() else 1
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                           f"{n_classes} classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    logp = log_softmax(input, cdim)
    if label_smoothing > 0.0:
        _check_smoothing(label_smoothing)
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * (_class_view(weight, input.dim(), cdim) if input.dim() > 1 else weight)
    if reduction == "none":
        return -prod.sum(cdim)
    if reduction == "sum":
        return -prod.sum()
    if input.numel() == 0:
        return -prod.sum() * math.nan
    return -prod.sum() / (input.numel() // n_classes)


def _cross_entropy_smoothed(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                            ignore_index: int, eps: float) -> Tensor:
    """Class-index targets with label smoothing: ``(1-ε)·nll + ε/C · Σ_c -w_c log q_c``."""
    cdim = 0 if input.dim() == 1 else 1
    logp = log_softmax(input, cdim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    n_classes = input.shape[cdim]
    safe, ignored, _ = _class_targets(input, target, ignore_index)
    if weight is not None:
        smooth = -(logp * _class_view(weight, input.dim(), cdim)).sum(cdim)
    else:
        smooth = -logp.sum(cdim)
    smooth = smooth.masked_fill(wrap(ignored, input._device), 0.0)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":
        kept = ~ignored
        denom = kept.sum() if weight is None else weight._data[safe[kept]].sum()
        smooth = smooth.sum() / float(denom)
    return (1 - eps) * nll + smooth * (eps / n_classes)


# ============================================================================= binary cross-entropy
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-w [y log p + (1-y) log(1-p)]`` for probabilities ``p`` in [0, 1].

    Each log is clamped at -100 (like torch), so ``p = 0`` or ``1`` gives a loss of 100, not inf.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _same_device(input, target, weight)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input "
                         f"size ({input.size()}) is deprecated. Please ensure they have the same "
                         "size.")
    if weight is not None:
        weight = weight.expand(*broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
        _fits(tuple(input.shape), weight)
    _require_float(input.dtype, "binary_cross_entropy")
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {_pw._cap(target.dtype)} but expected "
                           f"{_pw._cap(input.dtype)}")
    x, y = input._data, target._data
    if not ((x >= 0) & (x <= 1)).all():  # written so that a NaN fails it too, as in torch
        raise RuntimeError("all elements of input should be between 0 and 1")
    if not ((y >= 0) & (y <= 1)).all():
        raise RuntimeError("all elements of target should be between 0 and 1")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    with _pw._quiet():
        loss = (y - 1) * np.maximum(np.log1p(-x), -100) - y * np.maximum(np.log(x), -100)
    if weight is not None:
        loss = loss * weight._data.astype(x.dtype, copy=False)
    out = wrap(xp_for(input._device).asarray(_reduce_array(loss, reduction), dtype=x.dtype),
               input._device)
    if needs_grad(input, target):
        n = x.size
        w = None if weight is None else weight.to(input.dtype)

        def backward(g: Tensor) -> tuple:
            g = _scale(g, reduction, n)
            if w is not None:
                g = g * w
            gi = gt = None
            if input._requires_grad:  # (p - y) / (p (1 - p)), kept finite at p = 0 or 1
                gi = g * (input - target) / ((1 - input) * input).clamp_min(1e-12)
            if target._requires_grad:  # log(1 - p) - log p
                gt = g * -input.logit()
            return gi, gt

        record("BinaryCrossEntropyBackward0", out, (input, target), backward,
               saved=tuple(t for t in (input, target, weight) if t is not None))
    return out


def _log_sigmoid(x: Tensor) -> Tensor:
    """``log σ(x) = min(x, 0) - log(1 + e^{-|x|})``: never exponentiates a large positive number."""
    return x.clamp_max(0) - (-x.abs()).exp().log1p()


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None, reduce: bool | None = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(x), y)`` computed from the logits ``x`` directly.

    ``-[p_w y log σ(x) + (1-y) log(1-σ(x))] = (1-y) x - (1 + (p_w - 1) y) log σ(x)``, with the
    stable ``log σ`` (the log-sum-exp trick): finite for any ``x``, even ±1e4.
    ``pos_weight`` (one value per class, broadcast over the last dim) scales the positive term.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _same_device(input, target, weight, pos_weight)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.size()}) must be the same as input size "
                         f"({input.size()})")
    _require_float(input.dtype, "log_sigmoid_cpu")
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"result type {_pw._cap(result_type(input, target))} can't be cast "
                           f"to the desired output type {_pw._cap(target.dtype)}")
    _fits(tuple(input.shape), pos_weight, other_first=True)  # torch uses pos_weight first
    _fits(tuple(input.shape), weight)
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    with no_grad():
        log_sig = _log_sigmoid(input)
        if pos_weight is not None:
            log_sig = log_sig * ((pos_weight - 1) * target + 1)
        loss = (1 - target) * input - log_sig
        if weight is not None:
            loss = loss * weight
        out = _reduce(loss, reduction)
    if needs_grad(input, target):
        n = input.numel()

        def backward(g: Tensor) -> tuple:
            g = _scale(g, reduction, n)
            if weight is not None:
                g = g * weight
            gi = gt = None
            if input._requires_grad:  # σ(x) - y, or with p_w: (p_w y + 1 - y) σ(x) - p_w y
                if pos_weight is None:
                    gi = g * (input.sigmoid() - target)
                else:
                    py = pos_weight * target
                    gi = g * ((py + 1 - target) * input.sigmoid() - py)
                gi = _as_grad(gi, input)
            if target._requires_grad:  # -x, or with p_w: log σ(-x) - p_w log σ(x)
                if pos_weight is None:
                    gt = g * -input
                else:
                    gt = g * (_log_sigmoid(-input) - pos_weight * _log_sigmoid(input))
                gt = _as_grad(gt, target)
            return gi, gt

        record("BinaryCrossEntropyWithLogitsBackward0", out, (input, target), backward,
               saved=tuple(t for t in (input, target, weight, pos_weight) if t is not None))
    return out
