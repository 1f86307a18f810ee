"""Negative log-likelihood losses of two output distributions, as torch writes them:

* ``gaussian_nll_loss`` — the prediction is a Gaussian's mean, ``var`` its variance (one per
  element, or one per sample for all features): ``½ (log var + (x - y)² / var)``, ``var`` clamped
  to ``eps`` without changing its gradient (regression that also predicts its uncertainty);
* ``poisson_nll_loss`` — counts: ``exp(x) - y x`` for a log-rate ``x`` (``log_input``), else
  ``x - y log(x + eps)``; ``full`` adds Stirling's approximation of ``log(y!)``.

Both are compositions of Tensor ops (torch's Python and ATen code), so their gradients and
graph nodes are torch's.
"""
from __future__ import annotations

import math

from ..._creation import ones_like
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .loss import _reduce, _reduction

__all__ = ["gaussian_nll_loss", "poisson_nll_loss"]


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``½ (log var + (input - target)² / var)`` (plus ``½ log 2π`` when ``full``), reduced."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():  # one variance per sample: broadcast over features
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                y for x, y in zip(input.size(), var.size()) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)



def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood of counts ``target`` for rates ``input``, reduced."""
    if size_average is None and reduce is None and reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        stirling_term = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss += stirling_term.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)
