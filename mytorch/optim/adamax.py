"""Adamax: Adam with the infinity norm: ``exp_inf = max(beta2 * exp_inf, |g| + eps)``.

The running maximum replaces Adam's root-mean-square, so it needs no bias correction of its
own; only the first moment is corrected (``lr / (1 - beta1 ** step)``).
"""
from __future__ import annotations

from typing import Any, Callable

from .._tensor import Tensor
from .optimizer import (Optimizer, _check_lr, _closure_loss, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    """``Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None,
    *, maximize=False, differentiable=False, capturable=False)``."""

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    def __init__(self, params: Any, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            st = [self._lazy_state(p, group, "exp_avg", "exp_inf") for p in params]
            beta1, beta2 = group["betas"]
            adamax(params, [p.grad for p in params], [s["exp_avg"] for s in st],
                   [s["exp_inf"] for s in st], [s["step"] for s in st], eps=group["eps"],
                   beta1=beta1, beta2=beta2, lr=group["lr"],
                   weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss


def adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_infs: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
           maximize: bool = False, differentiable: bool = False, capturable: bool = False,
           has_complex: bool = False, *, eps: float, beta1: float, beta2: float, lr: float,
           weight_decay: float) -> None:
    """The functional form: one ``_adamax_step`` per parameter."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        state_steps[i] += 1
        _adamax_step(param, grads[i], exp_avgs[i], exp_infs[i], state_steps[i].item(),
                     eps=eps, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay,
                     maximize=maximize)


def _adamax_step(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_inf: Tensor, step: float, *,
                 eps: float, beta1: float, beta2: float, lr: float, weight_decay: float,
                 maximize: bool) -> None:
    """Update one parameter, its average and its running maximum in place."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = g.add(param, alpha=weight_decay)
    exp_avg.lerp_(g, 1 - beta1)
    exp_inf.copy_(exp_inf.mul_(beta2).maximum(g.abs().add_(eps)))
    clr = lr / (1 - beta1 ** step)
    param.addcdiv_(exp_avg, exp_inf, value=-clr)
