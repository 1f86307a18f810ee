"""Dropout: zero each element (``dropout``) or each whole channel (``dropout1d/2d/3d``) with
probability ``p`` during training, and scale what is kept by ``1 / (1 - p)``.

The scaling keeps every activation's *expected value* unchanged, so at evaluation time
(``training=False``) dropout is simply the identity: the very same tensor is returned.
"""
from __future__ import annotations

import warnings

from ..._device import xp_for
from ..._ops._variants import _inplace_version
from ..._ops.random_ops import _on, _rng
from ..._tensor import Tensor, wrap

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "feature_dropout"]


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, shape: tuple, p: float) -> Tensor:
    """``1 / (1 - p)`` where kept (probability ``1 - p``), ``0`` where dropped; ``shape`` may
    have 1s to share one draw across a whole channel."""
    dt = input._data.dtype
    if p == 1.0:
        return wrap(xp_for(input._device).zeros(shape, dtype=dt), input._device)
    keep = _rng(None, input._device).random(shape) >= p
    return wrap(_on(keep.astype(dt) * dt.type(1.0 / (1.0 - p)), input._device), input._device)


def _apply_mask(input: Tensor, shape: tuple, p: float) -> Tensor:
    return input * _keep_mask(input, shape, p)


_apply_mask_ = _inplace_version(_apply_mask)


def _dropout(input: Tensor, shape: tuple, p: float, training: bool, inplace: bool) -> Tensor:
    if not training or p == 0.0:
        return input
    return (_apply_mask_ if inplace else _apply_mask)(input, shape, p)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``."""
    _check_p(p)
    return _dropout(input, tuple(input.shape), p, training, inplace)


def feature_dropout(input: Tensor, p: float, training: bool, inplace: bool = False) -> Tensor:
    """Drop whole channels: one draw per ``input[n, c]``, shared by all its positions."""
    _check_p(p)
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _dropout(input, shape, p, training, inplace)


def _no_batch(input: Tensor, batched_dim: int, p: float, training: bool,
              inplace: bool) -> Tensor:
    """Channel dropout that also accepts one sample without the batch dimension."""
    if input.dim() == batched_dim:
        return feature_dropout(input, p, training, inplace)
    out = feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    if inplace and training and p > 0:
        return input.copy_(out)
    return out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for ``(N, C, L)`` or ``(C, L)`` inputs."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout on "
                           "inputs with 1 spatial dimension, a channel dimension, and an optional "
                           "batch dimension (i.e. 2D or 3D inputs).")
    return _no_batch(input, 3, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for ``(N, C, H, W)`` inputs (a 3-D input is treated as ``(N, C, L)``)."""
    _check_p(p)
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead. Note that dropout2d "
                      "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
                      "a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if d == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", stacklevel=2)
    return feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel dropout for ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""
    _check_p(p)
    d = input.dim()
    if d not in (4, 5):
        warnings.warn(f"dropout3d: Received a {d}-D input to dropout3d, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead. Note that dropout3d "
                      "exists to provide channel-wise dropout on inputs with 3 spatial dimensions, "
                      "a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    if d == 4:
        return _no_batch(input, 5, p, training, inplace)
    return feature_dropout(input, p, training, inplace)

