"""Adadelta: step sizes from the ratio of two running RMS values, so ``lr`` can stay at 1.

``square_avg`` averages ``g²``; ``acc_delta`` averages the squares of the updates themselves. The
update ``delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g`` has the units of the
parameter (the ratio of RMS(update) to RMS(gradient) acts as a per-coordinate learning rate).
"""
from __future__ import annotations

from typing import Any, Callable

from .._tensor import Tensor
from .optimizer import (Optimizer, _check_lr, _closure_loss, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    """``Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
    capturable=False, maximize=False, differentiable=False)``."""

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    def __init__(self, params: Any, lr: float | Tensor = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            st = [self._lazy_state(p, group, "square_avg", "acc_delta") for p in params]
            adadelta(params, [p.grad for p in params], [s["square_avg"] for s in st],
                     [s["acc_delta"] for s in st], [s["step"] for s in st], lr=group["lr"],
                     rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                     maximize=group["maximize"])
        return loss


def adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
             acc_deltas: list[Tensor], state_steps: list[Tensor], capturable: bool = False,
             foreach: bool | None = None, differentiable: bool = False,
             has_complex: bool = False, *, lr: float, rho: float, eps: float,
             weight_decay: float, maximize: bool) -> None:
    """The functional form: one ``_adadelta_step`` per parameter."""
    lr = _to_scalar(lr)
    for param, grad, square_avg, acc_delta, step in zip(params, grads, square_avgs, acc_deltas,
                                                        state_steps):
        step += 1
        _adadelta_step(param, grad, square_avg, acc_delta, lr=lr, rho=rho, eps=eps,
                       weight_decay=weight_decay, maximize=maximize)


def _adadelta_step(param: Tensor, grad: Tensor, square_avg: Tensor, acc_delta: Tensor, *,
                   lr: float, rho: float, eps: float, weight_decay: float,
                   maximize: bool) -> None:
    """Update one parameter and its two running averages in place."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = g.add(param, alpha=weight_decay)
    square_avg.mul_(rho).addcmul_(g, g, value=1 - rho)          # E[g²]
    std = square_avg.add(eps).sqrt_()
    delta = acc_delta.add(eps).sqrt_()                          # RMS of past updates
    delta.div_(std).mul_(g)
    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)   # E[delta²]
    param.add_(delta, alpha=-lr)
