"""Margin losses on embeddings: learn a distance or a similarity rather than a label.

Each pushes pairs (or triplets) of embeddings to the right side of a margin and is written, as in
torch's ATen, with ordinary tensor ops (so its graph is torch's graph, node for node):

* ``margin_ranking_loss`` — ``max(0, -y (x1 - x2) + margin)``: rank ``x1`` above ``x2`` when y = 1;
* ``hinge_embedding_loss`` — ``x`` for similar pairs (y = 1), ``max(0, margin - x)`` for others;
* ``cosine_embedding_loss`` — ``1 - cos`` for similar pairs, ``max(0, cos - margin)`` for others;
* ``triplet_margin_loss`` — ``max(0, d(a, p) - d(a, n) + margin)`` with the p-norm distance
  (``swap``: use the closer of ``d(a, n)`` and ``d(p, n)``), and its form with any distance;
* ``soft_margin_loss`` — the logistic loss ``log(1 + exp(-y x))`` for y = ±1 (one fused node, as
  torch's kernel), and ``multilabel_soft_margin_loss``, its 0/1 form averaged over the classes.
"""
from __future__ import annotations

from typing import Callable

from ..._creation import zeros_like
from ..._ops.comparison import minimum
from ..._ops.indexing import where
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...autograd.graph import needs_grad, record, sum_to
from .activation import logsigmoid
from .distance import pairwise_distance
from .loss import _reduce, _reduction

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss"]

_EPSILON = 1e-12  # keeps a zero vector's squared norm away from 0 in cosine_embedding_loss


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced (target: 1 or -1)."""
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but "
                           f"got sizes: input1: {input1.size()}, input2: {input2.size()}, target: "
                           f"{target.size()} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min_(0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1, reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = zeros_like(input)
    margin_clamp = (margin - input).clamp_min_(0)
    output_margin = where(target != 1, margin_clamp, zeros)
    output_self = where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where target is 1, ``max(0, cos(x1, x2) - margin)`` where it is -1."""
    reduction = _reduction(size_average, reduce, reduction)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want, what = (2, "1D target tensor expects 2D") if targ_dim == 1 else (1, "0D target tensor expects 1D")
    if input1.dim() != want or input2.dim() != want:
        raise RuntimeError(f"{what} input tensors, but found inputs with sizes {list(input1.shape)} "
                           f"and {list(input2.shape)}.")
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + _EPSILON
    mag_square2 = (input2 * input2).sum(targ_dim) + _EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt_()
    zeros = zeros_like(cos)
    output_pos = where(target == 1, 1 - cos, zeros)
    output_neg = where(target == -1, (cos - margin).clamp_min_(0), zeros)
    return _reduce(output_pos + output_neg, reduction)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, and "
                           f"negative {n}D inputs")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, ‖a - p‖ - ‖a - n‖ + margin)`` (p-norm distances), reduced."""
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(
        anchor: Tensor, positive: Tensor, negative: Tensor, *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None, margin: float = 1.0,
        swap: bool = False, reduction: str = "mean") -> Tensor:
    """:func:`triplet_margin_loss` with any distance (default: ``pairwise_distance``)."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    distance = distance_function if distance_function is not None else pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = minimum(dist_neg, distance(positive, negative))
    loss = (margin + dist_pos - dist_neg).clamp_min(0)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))`` (target: 1 or -1), reduced; one
    ``SoftMarginLossBackward0`` node whose gradient is ``-target · z / (1 + z)``, ``z = e^(-y x)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if needs_grad(target):
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to "
                           "argument 'target'. This input cannot have requires_grad True.")
    with no_grad():
        res = _reduce((-input).mul(target).exp().log1p(), reduction)
    if needs_grad(input):
        shape, n = tuple(input.shape), input.numel()

        def backward(g: Tensor) -> tuple:
            z = (-target * input).exp()
            norm = 1.0 / n if reduction == "mean" else 1.0
            return sum_to(-norm * target * z / (1 + z) * g, shape), None

        record("SoftMarginLossBackward0", res, (input, target), backward, saved=(input, target))
    return res


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Binary cross-entropy of each class (target 0/1) from logits, averaged over the classes
    (the last dimension), then reduced over the samples."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)
