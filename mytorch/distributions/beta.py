"""``Beta(concentration1, concentration0)``: a distribution over probabilities in [0, 1].

Density ``x^(a-1) (1-x)^(b-1) / B(a, b)`` with ``a = concentration1`` (pseudo-counts of
"heads") and ``b = concentration0`` ("tails"); ``B(a, b) = Γ(a)Γ(b)/Γ(a+b)``.
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import random as _random
from .._creation import tensor
from .._device import cuda_backend
from .._ops.special import digamma, lgamma, xlogy
from .._tensor import Size, Tensor, wrap
from . import constraints
from .distribution import Distribution, broadcast_all

__all__ = ["Beta"]


class Beta(Distribution):
    """Beta distribution parameterised by ``concentration1`` (α) and ``concentration0`` (β).

    Example: ``Beta(2., 5.).sample()`` is a probability near 2/7 (the mean α/(α+β)).
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        if isinstance(concentration1, numbers.Real) and isinstance(concentration0, numbers.Real):
            pair = tensor([float(concentration1), float(concentration0)])
            self._c1, self._c0 = pair[0], pair[1]
        else:
            self._c1, self._c0 = broadcast_all(concentration1, concentration0)
        super().__init__(self._c1.shape, validate_args=validate_args)

    @property
    def concentration1(self) -> Tensor:
        return self._c1

    @property
    def concentration0(self) -> Tensor:
        return self._c0

    # ------------------------------------------------------------------ summaries
    @property
    def mean(self) -> Tensor:
        return self._c1 / (self._c1 + self._c0)

    @property
    def mode(self) -> Tensor:
        return (self._c1 - 1) / (self._c1 + self._c0 - 2)

    @property
    def variance(self) -> Tensor:
        total = self._c1 + self._c0
        return self._c1 * self._c0 / (total.pow(2) * (total + 1))

    def entropy(self) -> Tensor:
        """``log B(a,b) - (a-1)ψ(a) - (b-1)ψ(b) + (a+b-2)ψ(a+b)``."""
        a, b = self._c1, self._c0
        total = a + b
        return (lgamma(a) + lgamma(b) - lgamma(total) - (a - 1) * digamma(a)
                - (b - 1) * digamma(b) + (total - 2) * digamma(total))

    # ------------------------------------------------------------------ sampling and scoring
    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        """``X / (X + Y)`` with ``X ~ Gamma(α)``, ``Y ~ Gamma(β)`` (drawn by the default generator).

        mytorch has no reparameterised gradient for Gamma draws, so there is no ``rsample``.
        """
        shape = tuple(self._extended_shape(sample_shape))
        a = np.broadcast_to(self._c1._host().astype(np.float64), shape)
        b = np.broadcast_to(self._c0._host().astype(np.float64), shape)
        rng = _random.default_generator._np
        x, y = rng.standard_gamma(a), rng.standard_gamma(b)
        with np.errstate(invalid="ignore"):
            ratio = x / (x + y)
        dt = self._c1.dtype.np
        info = np.finfo(dt)  # keep samples strictly inside (0, 1), as torch clamps them
        ratio = np.clip(np.nan_to_num(ratio, nan=0.5), info.tiny, 1 - info.eps).astype(dt)
        dev = self._c1.device
        return wrap(ratio if dev.type == "cpu" else cuda_backend().to_device(ratio, dev.index), dev)

    def log_prob(self, value: Any) -> Tensor:
        """``(α-1) log x + (β-1) log(1-x) - log B(α, β)``, differentiable in α, β and x."""
        if self._validate_args:
            self._validate_sample(value)
        a, b = self._c1, self._c0
        return (xlogy(a - 1, value) + xlogy(b - 1, 1 - value)
                + lgamma(a + b) - lgamma(a) - lgamma(b))
