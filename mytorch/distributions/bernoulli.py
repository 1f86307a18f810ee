"""``Bernoulli(probs=… | logits=…)``: 1 with probability ``probs``, else 0."""
from __future__ import annotations

from typing import Any

from .._ops.random_ops import bernoulli
from .._tensor import Size, Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution, broadcast_all
from .utils import logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    """A coin flip; give exactly one of ``probs`` (in [0, 1]) or ``logits`` (log-odds)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        super().__init__(param.shape, validate_args=validate_args)

    def __getattr__(self, name: str) -> Any:
        # probs and logits are computed from each other on first use, then cached
        if name == "probs":
            self.probs = logits_to_probs(self.__dict__["logits"], is_binary=True)
            return self.probs
        if name == "logits":
            self.logits = probs_to_logits(self.__dict__["probs"], is_binary=True)
            return self.logits
        raise AttributeError(name)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Any) -> Tensor:
        """``value·logits - softplus(logits)``, computed stably for large |logits|."""
        if self._validate_args:
            self._validate_sample(value)
        logits = self.logits
        return -(logits.clamp(min=0) - logits * value + (-logits.abs()).exp().log1p())

    def entropy(self) -> Tensor:
        logits = self.logits
        return logits.clamp(min=0) - logits * self.probs + (-logits.abs()).exp().log1p()
