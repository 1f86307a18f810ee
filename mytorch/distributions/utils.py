"""Conversions between probabilities and logits shared by the discrete distributions."""
from __future__ import annotations

from functools import update_wrapper
from typing import Any, Callable

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad

__all__ = ["clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits"]


class lazy_property:  # noqa: N801 - torch's name
    """A property computed on first use (with gradients recorded), then stored on the instance.

    Argument validation skips a lazy parameter that was not given (``scale_tril`` of a
    ``MultivariateNormal`` made from a covariance matrix)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)  # type: ignore[arg-type]

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


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


