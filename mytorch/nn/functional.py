"""``nn.functional``: the stateless functions behind the layers.

A module such as ``nn.Linear`` *owns* its weights and calls ``F.linear(x, self.weight, self.bias)``
in ``forward``; the function itself keeps no state. Use a module when there are parameters (or a
train/eval switch) to keep; use the function for parameter-free steps inside your own ``forward``.
"""
from __future__ import annotations

from .._ops import pointwise as _pw
from .._tensor import Tensor
from ._functional.linear import bilinear, linear

__all__ = ["bilinear", "linear", "relu", "relu_"]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` element-wise; ``inplace=True`` overwrites ``input``."""
    return input.relu_() if inplace else _pw.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`."""
    return input.relu_()


# The layer families, one implementation module each under nn/_functional/.
from ._functional import conv as _conv, padding as _padding, pooling as _pooling  # noqa: E402
from ._functional import sampling as _sampling  # noqa: E402
from ._functional.conv import *  # noqa: E402,F401,F403
from ._functional.padding import *  # noqa: E402,F401,F403
from ._functional.pooling import *  # noqa: E402,F401,F403
from ._functional.sampling import *  # noqa: E402,F401,F403

__all__ += [*_conv.__all__, *_padding.__all__, *_pooling.__all__, *_sampling.__all__]
from ._functional import activation as _act, attention as _attn, dropout as _drop  # noqa: E402
from ._functional import normalization as _norm, sparse as _sparse  # noqa: E402
from ._functional.activation import *  # noqa: E402,F401,F403
from ._functional.attention import *  # noqa: E402,F401,F403
from ._functional.dropout import *  # noqa: E402,F401,F403
from ._functional.normalization import *  # noqa: E402,F401,F403
from ._functional.sparse import *  # noqa: E402,F401,F403

__all__ += [*_act.__all__, *_attn.__all__, *_drop.__all__, *_norm.__all__, *_sparse.__all__]
from ._functional import loss as _loss  # noqa: E402
from ._functional.loss import *  # noqa: E402,F401,F403

__all__ += [*_loss.__all__]
from ._functional import distance as _distance  # noqa: E402
from ._functional.distance import *  # noqa: E402,F401,F403

__all__ += [*_distance.__all__]
from ._functional import margin_loss as _margin_loss  # noqa: E402
from ._functional.margin_loss import *  # noqa: E402,F401,F403

__all__ += [*_margin_loss.__all__]
from ._functional import likelihood as _likelihood  # noqa: E402
from ._functional.likelihood import *  # noqa: E402,F401,F403

__all__ += [*_likelihood.__all__]
from ._functional import activation_more as _act_more  # noqa: E402
from ._functional.activation_more import *  # noqa: E402,F401,F403

__all__ += [*_act_more.__all__]


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
