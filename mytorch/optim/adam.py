"""Adam: momentum on the gradient plus a per-coordinate step size from its running square.

For each parameter Adam keeps ``exp_avg`` (m, an average of the gradients) and ``exp_avg_sq``
(v, an average of their squares), both starting at zero. Because they start at zero, early
averages are too small; dividing by ``1 - beta ** step`` (the *bias correction*) undoes that::

    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    param -= lr / (1 - beta1**step) * m / (sqrt(v) / sqrt(1 - beta2**step) + eps)

``weight_decay`` adds ``weight_decay * param`` to the gradient (an L2 penalty, which then gets
divided by sqrt(v) like everything else); ``decoupled_weight_decay=True`` (AdamW) shrinks the
parameter directly instead. ``amsgrad`` divides by the largest v seen so far.
"""
from __future__ import annotations

from typing import Any, Callable

from .._pieces import piece, pieces
from .._tensor import Tensor
from . import _fused
from .optimizer import (Optimizer, _check_lr, _closure_loss, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["Adam", "adam", "adam_step"]


def _check_betas(betas: Any, capturable: bool, foreach: Any) -> tuple:
    for i, b in enumerate(betas[:2]):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b}")
    if not (isinstance(betas[0], float) and isinstance(betas[1], float) or
            isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor)):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, b in enumerate(betas[:2]):
        if isinstance(b, Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False "
                                 "and foreach=True")
            if b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
    return tuple(b.squeeze() if isinstance(b, Tensor) and b.dim() else b for b in betas)


class Adam(Optimizer):
    """``Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
    foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
    decoupled_weight_decay=False)``."""

    _group_defaults = (("amsgrad", False), ("maximize", False), ("foreach", None),
                       ("capturable", False), ("differentiable", False),
                       ("decoupled_weight_decay", False), ("fused", None))

    def __init__(self, params: Any, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and "
                                 "foreach=True")
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        betas = _check_betas(betas, capturable, foreach)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")

    def _init_group(self, group: dict[str, Any]) -> tuple[list, ...]:
        params = self._params_with_grad(group)
        extra = ("max_exp_avg_sq",) if group["amsgrad"] else ()
        st = [self._lazy_state(p, group, "exp_avg", "exp_avg_sq", *extra) for p in params]
        return (params, [p.grad for p in params], [s["exp_avg"] for s in st],
                [s["exp_avg_sq"] for s in st],
                [s["max_exp_avg_sq"] for s in st] if group["amsgrad"] else [],
                [s["step"] for s in st])

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            adam(*self._init_group(group), amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2,
                 lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
                 maximize=group["maximize"], foreach=group["foreach"],
                 capturable=group["capturable"], differentiable=group["differentiable"],
                 fused=group["fused"], decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], state_steps: list[Tensor],
         foreach: bool | None = None, capturable: bool = False, differentiable: bool = False,
         fused: bool | None = None, grad_scale: Tensor | None = None,
         found_inf: Tensor | None = None, has_complex: bool = False,
         decoupled_weight_decay: bool = False, *, amsgrad: bool, beta1: float, beta2: float,
         lr: float | Tensor, weight_decay: float, eps: float, maximize: bool) -> None:
    """The functional form: each step counter goes up by one, then one ``adam_step`` per
    parameter."""
    lr, beta1, beta2 = _to_scalar(lr), _to_scalar(beta1), _to_scalar(beta2)
    for i, param in enumerate(params):
        step_t = state_steps[i]
        step_t += 1
        pieces.adam_step(param, grads[i], exp_avgs[i], exp_avg_sqs[i],
                         max_exp_avg_sqs[i] if amsgrad else None, step_t.item(), lr=lr,
                         beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize,
                         decoupled_weight_decay=decoupled_weight_decay)


@piece("06.4", fast=_fused.adam_step)
def adam_step(param: "Tensor", grad: "Tensor", exp_avg: "Tensor", exp_avg_sq: "Tensor",
              max_exp_avg_sq: "Tensor | None", step: float, *, lr: float, beta1: float,
              beta2: float, eps: float, weight_decay: float, amsgrad: bool, maximize: bool,
              decoupled_weight_decay: bool) -> None:
    """Update one parameter and its averages in place; ``step`` is 1 at the first update."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        if decoupled_weight_decay:
            param.mul_(1 - lr * weight_decay)           # AdamW: shrink the weights themselves
        else:
            g = g.add(param, alpha=weight_decay)        # Adam: an L2 term in the gradient
    exp_avg.lerp_(g, 1 - beta1)                         # m = beta1 m + (1 - beta1) g
    exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)  # v = beta2 v + (1 - beta2) g²
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    if amsgrad:
        max_exp_avg_sq.copy_(max_exp_avg_sq.maximum(exp_avg_sq))  # the largest v so far
        v = max_exp_avg_sq
    else:
        v = exp_avg_sq
    denom = (v.sqrt() / bias_correction2 ** 0.5).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-step_size)
