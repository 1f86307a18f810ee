"""``Distribution``: the interface every distribution implements, and argument validation."""
from __future__ import annotations

import numbers
from typing import Any

from .. import _dtype as D
from .._creation import tensor
from .._tensor import Size, Tensor
from ..autograd.grad_mode import no_grad
from . import constraints
from .utils import lazy_property

__all__ = ["Distribution", "broadcast_all"]


class Distribution:
    """A batch of probability distributions with a common ``batch_shape`` and ``event_shape``.

    Subclasses set ``arg_constraints`` (parameter name → constraint) and ``support``, and
    implement ``log_prob`` and ``rsample`` or ``sample``; ``sample`` never records gradients.
    """

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: constraints.Constraint | None = None
    _validate_args = True  # torch: __debug__, i.e. on unless Python runs with -O

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument/sample validation on or off for all distributions."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: tuple = Size(), event_shape: tuple = Size(),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraint is constraints.dependent:
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None),
                                                             lazy_property):
                    continue  # a parameter computed from another one (validated there)
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    # ------------------------------------------------------------------ shapes
    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    def _extended_shape(self, sample_shape: tuple = Size()) -> Size:
        """``sample_shape + batch_shape + event_shape``: the shape of a sample."""
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    # ------------------------------------------------------------------ summaries
    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self)} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    # ------------------------------------------------------------------ sampling and scoring
    def sample(self, sample_shape: tuple = Size()) -> Tensor:
        """A sample (no gradient flows to the parameters)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: tuple = Size()) -> Tensor:
        """A *reparameterised* sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def _validate_sample(self, value: Tensor) -> None:
        """ValueError (torch's wording) when ``value`` is outside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        support = self.support
        if support is None or support is constraints.dependent:
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{value}")

    def __repr__(self) -> str:
        values = {k: self.__dict__[k] for k in self.arg_constraints if k in self.__dict__}
        args = ", ".join(f"{k}: {v if v.numel() == 1 else v.size()}" for k, v in values.items())
        return f"{type(self).__name__}({args})"


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers → tensors of one broadcast shape (numbers take the tensors' dtype)."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    for v in values:
        if not isinstance(v, (Tensor, numbers.Number)):
            raise ValueError("Input arguments must all be instances of numbers.Number, "
                             "torch.Tensor or objects implementing __torch_function__.")
    like = tensors[0] if tensors else None
    dtype = like.dtype if like is not None else D.get_default_dtype()
    device = like.device if like is not None else None
    as_tensors = [v if isinstance(v, Tensor) else tensor(float(v), dtype=dtype, device=device)
                  for v in values]
    shape: tuple = ()
    for t in as_tensors:
        shape = _broadcast(shape, tuple(t.shape))
    return tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in as_tensors)


def _broadcast(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y and 1 not in (x, y):
            raise RuntimeError(f"shape mismatch: objects cannot be broadcast to a single shape. "
                               f"Mismatch is between arg 0 and arg 1 at dimension {i}")
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)
