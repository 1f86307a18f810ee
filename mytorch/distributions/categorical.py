"""``Categorical(probs=… | logits=…)``: one of K categories, indices 0 … K-1."""
from __future__ import annotations

from typing import Any

from .. import _dtype as D
from .._ops.random_ops import multinomial
from .._tensor import Size, Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution, _broadcast
from .utils import logits_to_probs

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Categories weighted by the last dimension of ``probs`` (normalised) or ``logits``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real}

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def __getattr__(self, name: str) -> Any:
        if name == "probs":
            self.probs = logits_to_probs(self.__dict__["logits"])
            return self.probs
        if name == "logits":
            eps = D.finfo(self.__dict__["probs"].dtype).eps
            self.logits = self.__dict__["probs"].clamp(min=eps, max=1 - eps).log()
            return self.logits
        raise AttributeError(name)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> Size:
        return self.probs.shape

    @property
    def mean(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return self.probs.new_full(self._extended_shape(), float("nan"))

    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        """Indices of shape ``sample_shape + batch_shape`` (int64)."""
        n = Size(sample_shape).numel()
        with no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            draws = multinomial(rows, n, True)  # (batch, n)
            return draws.t().reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """``logits[..., value]`` with ``value`` broadcast against the batch."""
        if self._validate_args:
            self._validate_sample(value)
        logits = self.logits
        batch = tuple(logits.shape[:-1])
        value = value.long()
        shape = _broadcast(tuple(value.shape), batch)
        index = value.expand(shape).unsqueeze(-1)
        return logits.expand(shape + (self._num_events,)).gather(-1, index).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = D.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

