"""Gradient clipping: keep one bad batch from throwing the weights far away.

``clip_grad_norm_`` treats all gradients as one long vector: when its norm exceeds ``max_norm``,
every gradient is scaled by the same factor ``max_norm / norm`` (the update keeps its direction,
only shorter). ``clip_grad_value_`` clamps each gradient element into ``[-v, v]`` instead (which
can change the direction). Call either after ``backward()`` and before ``optimizer.step()``.
"""
from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable

from ..._creation import tensor as _tensor
from ..._ops.shape import stack
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = list(parameters)
    if is_generator and not parameters:  # model.parameters() of a model without parameters
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                      stacklevel=3)
    return parameters


def _vector_norm(t: Tensor, p: float) -> Tensor:
    return t.abs().max() if p == math.inf else t.norm(p)


@no_grad()
def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale all gradients together so that their total ``norm_type``-norm is at most ``max_norm``.

    The total norm is the norm of the per-tensor norms (= the norm of all gradients concatenated);
    it is returned, measured *before* clipping, which makes it handy to log. ``norm_type`` may be
    ``inf`` (largest absolute value). ``foreach`` is accepted for compatibility and ignored.
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return _tensor(0.0)
    total = _vector_norm(stack([_vector_norm(g, norm_type) for g in grads]), norm_type)
    if error_if_nonfinite and not math.isfinite(float(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)  # 1e-6: no division by a zero norm
    for g in grads:
        g.mul_(coef.to(g.device))
    return total


@no_grad()
def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]`` (in place)."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(-clip_value, clip_value)
