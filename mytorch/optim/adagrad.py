"""Adagrad: each coordinate's step shrinks with the sum of all its past squared gradients.

``sum += g²``; ``param -= clr * g / (sqrt(sum) + eps)`` with ``clr = lr / (1 + (step-1) * lr_decay)``.
Rare features (sparse gradients) keep large steps; frequent ones slow down, and because the sum
only grows, every step size decays towards zero over a long run.
"""
from __future__ import annotations

from typing import Any, Callable

from .._creation import full_like, tensor
from .._pieces import piece, pieces
from .._tensor import Tensor
from .optimizer import (Optimizer, _check_lr, _closure_loss, _scalar_dtype, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["Adagrad", "adagrad", "adagrad_step"]


class Adagrad(Optimizer):
    """``Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None)``.

    Unlike the other optimizers its state exists from the start (``sum`` filled with
    ``initial_accumulator_value``, ``step`` at 0).
    """

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("fused", None))

    def __init__(self, params: Any, lr: float | Tensor = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        if fused:
            if differentiable:
                raise RuntimeError("`fused` does not support `differentiable`")
            if foreach:
                raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p: Tensor) -> None:
        state = self.state[p]
        state["step"] = tensor(0.0, dtype=_scalar_dtype())
        init = self.defaults["initial_accumulator_value"]
        state["sum"] = full_like(p, complex(init, init) if p.is_complex() else init)

    def share_memory(self) -> None:
        """Kept for torch's API: the sums are ordinary (process-local) memory here."""

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            for p in params:
                if len(self.state[p]) == 0:     # a group added after construction
                    self._init_state(p)
            adagrad(params, [p.grad for p in params], [self.state[p]["sum"] for p in params],
                    [self.state[p]["step"] for p in params], lr=group["lr"],
                    weight_decay=group["weight_decay"], lr_decay=group["lr_decay"],
                    eps=group["eps"], maximize=group["maximize"])
        return loss


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            state_steps: list[Tensor], fused: bool | None = None,
            grad_scale: Tensor | None = None, found_inf: Tensor | None = None,
            has_sparse_grad: bool = False, foreach: bool | None = None,
            differentiable: bool = False, has_complex: bool = False, *, lr: float,
            weight_decay: float, lr_decay: float, eps: float, maximize: bool) -> None:
    """The functional form: one ``adagrad_step`` per parameter."""
    lr = _to_scalar(lr)
    for param, grad, state_sum, step_t in zip(params, grads, state_sums, state_steps):
        step_t += 1
        pieces.adagrad_step(param, grad, state_sum, step_t.item(), lr=lr,
                            weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                            maximize=maximize)


@piece("06.2")
def adagrad_step(param: "Tensor", grad: "Tensor", state_sum: "Tensor", step: float, *, lr: float,
                 weight_decay: float, lr_decay: float, eps: float, maximize: bool) -> None:
    """Update one parameter and its sum of squared gradients in place (``step`` 1 at first)."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = g.add(param, alpha=weight_decay)
    clr = lr / (1 + (step - 1) * lr_decay)
    state_sum.addcmul_(g, g, value=1)
    std = state_sum.sqrt().add_(eps)
    param.addcdiv_(g, std, value=-clr)
