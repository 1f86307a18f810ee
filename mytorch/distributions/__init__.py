"""Probability distributions (``torch.distributions``): sample, score (``log_prob``), summarise.

Each distribution stores its parameters as tensors broadcast to a common ``batch_shape``; a
sample has shape ``sample_shape + batch_shape + event_shape``. ``log_prob`` is built from
differentiable mytorch ops, so it can be maximised by gradient descent.
"""
from . import constraints
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .distribution import Distribution
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = ["Distribution", "Bernoulli", "Beta", "Categorical", "Independent", "MultivariateNormal",
           "Normal", "Uniform", "constraints", "kl_divergence", "register_kl"]
