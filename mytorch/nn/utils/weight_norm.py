"""``weight_norm(module)``: split a weight into a direction and a length, ``w = g · v / ‖v‖``
(Salimans & Kingma 2016), so that gradient descent moves the two separately.

``‖v‖`` is taken over every dimension except ``dim`` (one length per output unit for the
default ``dim=0``; ``dim=None``: one length for the whole tensor). The parameters become
``weight_g`` and ``weight_v``; a forward pre-hook recomputes ``weight`` before each call. torch
keeps this form for old code; :func:`nn.utils.parametrizations.weight_norm` is the current one.
"""
from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...autograd.graph import needs_grad, record
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim"]

T_module = TypeVar("T_module", bound=Module)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, shaped to broadcast against
    ``v`` (``dim=-1``: the norm of the whole tensor, a scalar) — ``torch.norm_except_dim``."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        return v.contiguous().view(v.size(0), -1).norm(pow, dim=1).view(
            (v.size(0),) + (1,) * (v.dim() - 1))
    if dim == v.dim() - 1:
        return v.contiguous().view(-1, v.size(-1)).norm(pow, dim=0).view(
            (1,) * (v.dim() - 1) + (v.size(-1),))
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """``v · (g / ‖v‖)`` — ``torch._weight_norm``. For ``dim`` first or last, as torch's fused
    kernel, one ``WeightNormInterfaceBackward0`` node with its closed-form gradients
    (``n = ‖v‖``, ``s = Σ g_w · v`` over the normed dims)::

        g_g = s / n,    g_v = (g / n) · (g_w - v · s / n²)

    written with Tensor ops (differentiable again); other dims compose the ops (``MulBackward0``).
    """
    if dim not in (0, v.dim() - 1):
        return v * (g / norm_except_dim(v, 2, dim))
    with no_grad():
        n = norm_except_dim(v, 2, dim)
        res = v * (g / n)
    if needs_grad(v, g):
        axes = tuple(d for d in range(v.dim()) if d != dim)

        def backward(gw: Tensor) -> tuple:
            norm = norm_except_dim(v, 2, dim)
            s = (gw * v).sum(axes, keepdim=True)
            return (g / norm) * (gw - v * (s / (norm * norm))), (s / norm).view(g.shape)

        record("WeightNormInterfaceBackward0", res, (v, g), backward, saved=(v, g))
    return res


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"),
                            self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                                   f"{name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Reparametrize ``module.<name>`` as ``g · v / ‖v‖`` (parameters ``<name>_g``,
    ``<name>_v``); returns ``module``. Deprecated in torch in favour of the parametrization."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`weight_norm`: ``<name>`` is an ordinary parameter again (``g · v / ‖v‖``)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
