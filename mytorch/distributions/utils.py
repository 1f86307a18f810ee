"""Conversions between probabilities and logits shared by the discrete distributions."""
from __future__ import annotations

from .. import _dtype as D
from .._tensor import Tensor

__all__ = ["clamp_probs", "logits_to_probs", "probs_to_logits"]


def clamp_probs(probs: Tensor) -> Tensor:
    """Keep probabilities inside (0, 1) so their logits stay finite."""
    eps = D.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds ``log p - log(1-p)`` (binary) or ``log p`` (categorical)."""
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """``sigmoid(logits)`` (binary) or ``softmax(logits, -1)`` (categorical)."""
    if is_binary:
        return logits.sigmoid()
    return (logits - logits.logsumexp(-1, keepdim=True)).exp()


