"""Distances between batches of vectors: ``cosine_similarity`` and ``pairwise_distance``."""
from __future__ import annotations

from ..._ops._operands import result_type
from ..._ops.shape import broadcast_shapes
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...functional import norm

__all__ = ["cosine_similarity", "pairwise_distance"]


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` along ``dim`` (inputs broadcast).

    As in torch, each input is divided by its own norm before the product (the result stays in
    [-1, 1]); the norms are clamped to ``eps`` without changing their gradient.
    """
    dt = result_type(x1, x2)
    if not dt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_scalar_name(dt)}")
    x1, x2 = x1.to(dt), x2.to(dt)
    if x1.shape != x2.shape:
        x1, x2 = x1.broadcast_to(_shape(x1, x2)), x2.broadcast_to(_shape(x1, x2))
    n1 = norm(x1, 2, dim, True).clone()
    n2 = norm(x2, 2, dim, True).clone()
    with no_grad():                          # clamp the values, keep the norms' gradients
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``‖x1 - x2 + eps‖_p`` over the last dimension (``eps`` keeps the gradient finite at 0)."""
    dim = max(x1.dim(), x2.dim()) - 1
    return norm(x1 - x2 + eps, p, dim, keepdim)


def _shape(a: Tensor, b: Tensor) -> tuple:
    return broadcast_shapes(a.shape, b.shape)


def _scalar_name(dt) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(dt.name, dt.name)
