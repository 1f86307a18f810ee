"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay.

``SGD`` checks its settings and keeps one momentum buffer per parameter; ``step`` gathers the
parameters that received a gradient and hands them to :func:`sgd`, whose loop applies the piece
``sgd_step`` to each one. That piece is the whole algorithm::

    d   = grad (negated with maximize=True) + weight_decay * param
    buf = momentum * buf + (1 - dampening) * d        (buf = d at the first step)
    d   = d + momentum * buf    if nesterov else buf
    param -= lr * d
"""
from __future__ import annotations

from typing import Any, Callable

from .._pieces import piece, pieces
from .._tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_lr, _closure_loss, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["SGD", "sgd", "sgd_step"]


class SGD(Optimizer):
    """``SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
    maximize=False, foreach=None, differentiable=False, fused=None)``."""

    _group_defaults = (("nesterov", False), ("maximize", False), ("foreach", None),
                       ("differentiable", False), ("fused", False))

    def __init__(self, params: Any, lr: float | Tensor = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float | Tensor = 0, nesterov: bool = False,
                 *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            grads = [p.grad for p in params]
            buffers = [self.state[p].get("momentum_buffer") for p in params] \
                if group["momentum"] != 0 else []
            sgd(params, grads, buffers, weight_decay=group["weight_decay"],
                momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
                nesterov=group["nesterov"], maximize=group["maximize"])
            if group["momentum"] != 0:
                for p, buf in zip(params, buffers):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def sgd(params: list[Tensor], d_p_list: list[Tensor], momentum_buffer_list: list[Tensor | None],
        has_sparse_grad: bool = False, foreach: bool | None = None, fused: bool | None = None,
        grad_scale: Tensor | None = None, found_inf: Tensor | None = None, *,
        weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
        maximize: bool) -> None:
    """The functional form: update ``params`` in place; new momentum buffers are written back
    into ``momentum_buffer_list``."""
    lr, weight_decay = _to_scalar(lr), _to_scalar(weight_decay)
    for i, param in enumerate(params):
        buf = momentum_buffer_list[i] if momentum != 0 else None
        buf = pieces.sgd_step(param, d_p_list[i], buf, lr=lr, momentum=momentum,
                              dampening=dampening, weight_decay=weight_decay,
                              nesterov=nesterov, maximize=maximize)
        if momentum != 0:
            momentum_buffer_list[i] = buf


@piece("06.1", fast=_fused.sgd_step)
def sgd_step(param: "Tensor", grad: "Tensor", momentum_buffer: "Tensor | None", *, lr: float,
             momentum: float, dampening: float, weight_decay: float, nesterov: bool,
             maximize: bool) -> "Tensor | None":
    """Update one parameter in place (grad mode is off); return its momentum buffer.

    ``momentum_buffer`` is ``None`` at the first step: the buffer then starts as a copy of the
    direction ``d``. Without momentum the buffer stays ``None``.
    """
    d = -grad if maximize else grad
    if weight_decay != 0:
        d = d.add(param, alpha=weight_decay)            # L2 penalty: its gradient is wd * param
    if momentum != 0:
        if momentum_buffer is None:
            momentum_buffer = d.clone()
        else:
            momentum_buffer.mul_(momentum).add_(d, alpha=1 - dampening)
        d = d.add(momentum_buffer, alpha=momentum) if nesterov else momentum_buffer
    param.add_(d, alpha=-lr)
    return momentum_buffer
