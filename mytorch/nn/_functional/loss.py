"""Loss functions: how far a prediction is from its target, as one number to minimise.

Every loss first computes one value per element (or per sample), then *reduces* them with
``reduction``: ``'none'`` keeps them all, ``'sum'`` adds them, ``'mean'`` averages them.

The public functions check their arguments as torch does and then call a *piece* (chapter 05's
exercises, at the bottom of this file) through the registry, so that a student's version can
take its place:

* ``huber`` — the pointwise Huber function; ``smooth_l1_loss`` and ``huber_loss`` are one graph
  node each around it (``SmoothL1LossBackward0``, ``HuberLossBackward0``), as in torch;
* ``nll_loss_nd`` — pick each target's log-probability, weight it, leave out ``ignore_index``,
  divide a mean by the kept weights. Its fast path is a fused kernel on the arrays;
* ``cross_entropy_loss`` — ``nll_loss(log_softmax(x))`` plus label smoothing, torch's very
  composition (same graph). Its fast path fuses the two for the common unsmoothed (N, C) case:
  one ``NllLossBackward0`` node (torch has a ``LogSoftmaxBackward0`` below it), half the passes;
* ``bce_with_logits`` — binary cross-entropy from logits without overflow; fast path fused;
* ``kl_div_loss`` — the KL divergence's terms and its reductions (``'batchmean'`` included).

``l1_loss`` and ``kl_div`` are compositions of Tensor ops, as in torch; ``mse_loss`` and
``binary_cross_entropy`` are single recorded ops (the forward on the arrays, the backward torch's
closed form), which keeps the gradient finite where a composition would give ``0 * inf = nan``.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

import mytorch as torch  # the pieces below use the public API, as a student's notebook does

from ... import _dtype as D
from ..._device import xp_for
from ..._ops import pointwise as _pw
from ..._ops._operands import broadcast_error, check_same_device, result_type
from ..._ops.shape import broadcast_shapes, broadcast_tensors
from ..._pieces import REGISTRY, piece, pieces
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import STATE, no_grad
from ...autograd.graph import depends_on, needs_grad, record
from ...autograd.piece_op import as_op
from .activation import _row_max, _row_sum, log_softmax

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
    return _huber_op("SmoothL1LossBackward0", x, y, beta, beta, reduction)


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
    if weight is None:
        return _huber_op("HuberLossBackward0", x, y, delta, 1.0, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    # torch weighs the unreduced loss in Python, then reduces (a mean over elements, not weights)
    unweighted = _huber_op("HuberLossBackward0", x, y, delta, 1.0, "none")
    return _weighted_reduce(unweighted * weight, weight, reduction, mean_by_weight=False)


def _huber_composed(x: Tensor, y: Tensor, delta: float, div: float, reduction: str) -> Tensor:
    """``reduce(huber(x - y, delta) / div)`` with the piece that runs now."""
    return _reduce(pieces.huber(x - y, delta) / div, reduction)


# A version of the piece other than the library's own runs inside one node named as torch's.
_HUBER_NODES = {name: as_op(name)(_huber_composed)
                for name in ("SmoothL1LossBackward0", "HuberLossBackward0")}


def _huber_op(name: str, x: Tensor, y: Tensor, delta: float, div: float,
              reduction: str) -> Tensor:
    """SmoothL1 (``div = delta = β``) or Huber (``div = 1``) as one node called ``name``.

    With the library's own ``huber`` piece it is a fused kernel like :func:`_mse`: the forward on
    the arrays, the backward ``clamp(d, -δ, δ) / div`` written with tensor ops (differentiable
    again); any other version runs inside :func:`as_op`, which differentiates it.
    """
    if pieces.huber is not REGISTRY["huber"].default:
        return _HUBER_NODES[name](x, y, delta, div, reduction)
    dt = result_type(x, y)
    a, b = x._data.astype(dt.np, copy=False), y._data.astype(dt.np, copy=False)
    with _pw._quiet():
        d = a - b
        z = np.abs(d)
        loss = np.where(z < delta, 0.5 * d * d / div, (delta / div) * (z - 0.5 * delta))
        out = wrap(_reduce_array(loss.astype(dt.np, copy=False), reduction), x._device)
    if needs_grad(x, y):
        n = d.size

        def backward(g: Tensor) -> tuple:
            gd = (x - y).clamp(-delta, delta) * (_scale(g, reduction, n) / div)
            return (_as_grad(gd, x) if x._requires_grad else None,
                    _as_grad(-gd, y) if y._requires_grad else None)

        record(name, out, (x, y), backward, saved=(x, y))
    return out


def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """KL divergence ``Σ p (log p - x)`` with ``x`` = log-probabilities of the model, ``p`` = target.

    ``reduction='batchmean'`` (sum / batch size) is the mathematical KL; ``'mean'`` also divides
    by the number of classes, which is why torch warns about it. The piece :func:`kl_div_loss`.
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    _reduction(None, None, "sum" if reduction == "batchmean" else reduction)  # a known name
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    return pieces.kl_div_loss(input, target, reduction, log_target)


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


def _check_targets(input: Tensor, target: Tensor, ignore_index: int) -> None:
    """torch's IndexError for a class index that does not exist (``ignore_index`` excepted)."""
    t = target._data
    n_classes = input.shape[0 if input.dim() == 1 else 1]
    if not t.size or (t.min() >= 0 and t.max() < n_classes):  # the usual case: two reductions
        return
    t = t.astype(np.int64, copy=False)
    bad = (t != ignore_index) & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].reshape(-1)[0])} is out of bounds.")


def _class_targets(input: Tensor, target: Tensor, ignore_index: int) -> tuple[Any, Any, int]:
    """(index array safe to gather with, mask of ignored targets, class dim), for targets
    already checked by :func:`_check_targets`."""
    cdim = 0 if input.dim() == 1 else 1
    xp = xp_for(input._device)
    t = target._data.astype(np.int64, copy=False)
    if input.dim() == 1:
        t = t.reshape(())
    ignored = t == ignore_index
    return xp.where(ignored, 0, t), ignored, cdim


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``-input[n, target[n]]`` (times ``weight[target[n]]``): the loss for log-probabilities.

    ``input`` is ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)`` and ``target`` holds class indices of
    shape ``()``, ``(N,)`` or ``(N, d1, ...)``. Targets equal to ``ignore_index`` contribute 0;
    ``'mean'`` divides by the summed weight of the targets that were *not* ignored. The piece
    :func:`nll_loss_nd` does the work, after torch's checks.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _same_device(input, target, weight)
    _check_nll(input, target, weight)
    _not_differentiable("nll_loss_forward", "weight", weight)
    _check_targets(input, target, ignore_index)
    if target.dtype is not D.int64:  # uint8 indices: as int64 (uint8 would index as a mask)
        target = target.to(D.int64)
    nd = input.dim()
    if nd <= 2 or nd == 4:
        return pieces.nll_loss_nd(input, target, weight, ignore_index, reduction)
    # torch computes 3-D and 5-D+ inputs as one (N, C, 1, L) image of L pixels, then views back
    n, c = input.shape[0], input.shape[1]
    flat = input.contiguous().view(n, c, 1, -1) if input.numel() else input.view(n, c, 0, 0)
    flat_t = target.contiguous().view(n, 1, -1) if target.numel() else target.view(n, 0, 0)
    out = pieces.nll_loss_nd(flat, flat_t, weight, ignore_index, reduction)
    return out.view(n, *input.shape[2:]) if reduction == "none" else out


def _nll_loss_fused(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int,
                    reduction: str) -> Tensor:
    """The fast path of :func:`nll_loss_nd`: one op on the arrays, the gradient in closed form
    (``-w[n]`` (/ the kept weight) at each target, 0 elsewhere)."""
    safe, ignored, cdim = _class_targets(input, target, ignore_index)
    xp = xp_for(input._device)
    x = input._data
    key = _along(safe, cdim, xp)
    picked = xp.where(ignored, 0, x[key].reshape(safe.shape))
    out, coef = _weighted_nll(input, picked, _target_weights(weight, safe, ignored, x.dtype, xp),
                              reduction)
    if needs_grad(input):
        name, second = _NLL_NODES[input.dim() == 4]

        def backward(g: Tensor) -> tuple:
            if not (g._requires_grad or STATE.enabled):  # usual: g is a constant, fold it in
                return (wrap(_scatter_along(x.shape, key, coef * g._data, xp), input._device),)
            d_input = wrap(_scatter_along(x.shape, key, coef, xp), input._device)
            d = d_input * (g.unsqueeze(cdim) if reduction == "none" else g)
            # create_graph: like torch's, the gradient depends (with derivative 0) on the input
            return (depends_on(d, input, second),)

        record(name, out, (input,), backward)
    return out


#: torch's nodes (and their backward's) for nll_loss: images (N, C, H, W) have a kernel of their own
_NLL_NODES = {False: ("NllLossBackward0", "NllLossBackwardBackward0"),
              True: ("NllLoss2DBackward0", "NllLoss2DBackwardBackward0")}


def _nll_node(fn: Callable) -> Callable:
    """The ``wrap`` of :func:`nll_loss_nd`: another version of it runs as one node named as
    torch names it (see ``_NLL_NODES``)."""
    ops = {image: as_op(names[0])(fn) for image, names in _NLL_NODES.items()}

    def op(input: Tensor, *args: Any) -> Tensor:
        return ops[input.dim() == 4](input, *args)

    op.__wrapped__ = fn  # type: ignore[attr-defined]
    op.__name__ = getattr(fn, "__name__", "nll_loss_nd")
    return op


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
    _check_smoothing(label_smoothing)
    if not input.dtype.is_floating_point:  # torch's log_softmax refuses first
        last = "lastdim_" if input.dim() in (1, 2) else ""  # the class dim is the last one
        raise NotImplementedError(f"\"log_softmax_{last}kernel_impl\" not implemented for "
                                  f"'{_pw._cap(input.dtype)}'")
    _check_nll(input, target, weight)
    _not_differentiable("nll_loss_forward", "weight", weight)
    _check_targets(input, target, ignore_index)
    if target.dtype is not D.int64:
        target = target.to(D.int64)
    # torch smooths only for label_smoothing > 0 (a negative one is ignored, not refused)
    return pieces.cross_entropy_loss(input, target, weight, ignore_index, reduction,
                                     max(float(label_smoothing), 0.0))


def _cross_entropy_fused(input: Tensor, target: Tensor, weight: Tensor | None,
                         ignore_index: int, reduction: str, label_smoothing: float) -> Tensor:
    """The fast path of :func:`cross_entropy_loss`: for (N, C) or (C,) logits without label
    smoothing, ``nll_loss(log_softmax(input))`` as one op — the same numbers, half the passes.

    Only the target's log-probability is needed: ``z_y - m - log Σ exp(z - m)`` (m = the max).
    The gradient is ``(softmax - one_hot) · w``; the forward keeps ``exp(z - m)`` and its sums
    for it. Under ``create_graph=True`` the backward is built from differentiable ops instead.
    The one node is ``NllLossBackward0``; torch's graph has a ``LogSoftmaxBackward0`` under it,
    which the reference (used for everything else) builds too.
    """
    if label_smoothing > 0.0 or input.dim() > 2:
        return cross_entropy_loss(input, target, weight, ignore_index, reduction, label_smoothing)
    safe, ignored, cdim = _class_targets(input, target, ignore_index)
    xp = xp_for(input._device)
    x = input._data
    key = _along(safe, cdim, xp)
    with _pw._quiet():
        shifted = x - _row_max(x, cdim)
        e = np.exp(shifted)
        s = _row_sum(e, cdim)
        picked = xp.where(ignored, 0, (shifted[key] - np.log(s)).reshape(safe.shape))
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
    if not ((x >= 0) & (x <= 1)).all():  # NaN fails too, as in torch (on a GPU: a device assert)
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
    return pieces.bce_with_logits(input, target, weight, pos_weight, reduction)


def _bce_with_logits_fused(input: Tensor, target: Tensor, weight: Tensor | None,
                           pos_weight: Tensor | None, reduction: str) -> Tensor:
    """The fast path of :func:`bce_with_logits`: the forward without recording, one node whose
    backward is torch's closed form (``σ(x) - y`` for the logits)."""
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


# ============================================================================= the pieces (ch. 05)
@piece("05.1")
def huber(d, delta):
    """The Huber function of the errors ``d``: ``0.5 d²`` while ``|d| < delta``, and beyond
    that the two straight lines that carry the parabola on with no jump in value or slope."""
    z = d.abs()
    return torch.where(z < delta, 0.5 * d * d, delta * (z - 0.5 * delta))


@piece("05.2", fast=_nll_loss_fused, wrap=_nll_node)
def nll_loss_nd(input, target, weight, ignore_index, reduction):
    """The negative log-likelihood of the class indices ``target`` under the log-probabilities
    ``input`` (classes along dim 1; dim 0 for one sample): each sample's loss is minus the
    log-probability of its target class, times that class's ``weight`` when one is given. A
    sample whose target is ``ignore_index`` counts for nothing; ``'mean'`` is the weighted mean
    over the samples kept, ``'sum'`` the sum, ``'none'`` leaves one loss per sample."""
    cdim = 0 if input.dim() == 1 else 1
    kept = target != ignore_index
    safe = target.masked_fill(~kept, 0)          # an ignored sample reads class 0, then drops it
    picked = input.gather(cdim, safe.unsqueeze(cdim)).squeeze(cdim).masked_fill(~kept, 0)
    w = kept.to(input.dtype) if weight is None else weight[safe].masked_fill(~kept, 0)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()                  # the kept weight, not the number of samples


@piece("05.4", fast=_cross_entropy_fused)
def cross_entropy_loss(input, target, weight, ignore_index, reduction, label_smoothing):
    """Cross-entropy of the logits ``input`` (classes along dim 1; dim 0 for one sample) and
    the class indices ``target``: ``nll_loss`` of ``log_softmax(input)``. With
    ``label_smoothing`` ε > 0 the target becomes the mixture ``(1 - ε)·one_hot + ε·uniform``;
    ``weight``, ``ignore_index`` and the ``'mean'`` divisor treat the uniform part exactly as
    ``nll_loss`` treats the one-hot part."""
    cdim = 0 if input.dim() == 1 else 1
    log_p = log_softmax(input, cdim)
    loss = nll_loss(log_p, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return loss
    n_classes = input.shape[cdim]
    if weight is not None:                       # one weight per class, along the class dim
        shape = [1] * input.dim()
        shape[cdim] = n_classes
        log_p = log_p * weight.view(shape)
    ignored = target == ignore_index
    uniform = (-log_p.sum(cdim)).masked_fill(ignored, 0)    # -Σ_c w_c log p_c, per sample
    if reduction == "sum":
        uniform = uniform.sum()
    elif reduction == "mean":                    # nll_loss's divisor: the kept targets' weight
        kept = target[~ignored]
        uniform = uniform.sum() / (kept.numel() if weight is None else weight[kept].sum())
    return (1 - label_smoothing) * loss + uniform * (label_smoothing / n_classes)


@piece("05.5", fast=_bce_with_logits_fused, wrap=as_op("BinaryCrossEntropyWithLogitsBackward0"))
def bce_with_logits(input, target, weight, pos_weight, reduction):
    """Binary cross-entropy ``-[y·log σ(x) + (1 - y)·log(1 - σ(x))]`` of the logits
    ``x = input`` and the targets ``y``, finite for every ``x`` (±1e4 too) and with the right
    gradient everywhere (``x = 0`` included). ``pos_weight`` multiplies the ``y·log σ(x)``
    term, ``weight`` the whole loss (both optional, broadcast); reduced by ``reduction``."""
    # log σ(x) = min(x, 0) - log(1 + e^-|x|): no exponent is ever positive. min(x, 0) written
    # (x - |x|) / 2 has derivative 1/2 at 0, so that the kinks of the two terms cancel there.
    log_sig = (input - input.abs()) / 2 - (-input.abs()).exp().log1p()
    pos = log_sig if pos_weight is None else pos_weight * log_sig
    loss = -(target * pos + (1 - target) * (log_sig - input))   # log(1 - σ(x)) = log σ(x) - x
    if weight is not None:
        loss = loss * weight
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


@piece("05.6")
def kl_div_loss(input, target, reduction, log_target):
    """The KL divergence of the log-probabilities ``input`` from the distribution ``target``
    (probabilities, or log-probabilities when ``log_target``), term by term:
    ``t·(log t - input)``, a term with ``t = 0`` being 0. Reduced by ``reduction``: ``'none'``,
    ``'sum'``, ``'mean'`` (over every element) or ``'batchmean'`` (the sum over the batch
    size, ``input.size(0)``)."""
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input     # xlogy: 0·log 0 counts as 0
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "batchmean" and input.dim() > 0:
        return loss.sum() / input.size(0)
    return loss.sum()
