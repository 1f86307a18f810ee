"""Rprop (resilient backpropagation): only the *sign* of each gradient counts.

Every coordinate keeps its own step size: multiplied by ``etaplus`` while its gradient keeps its
sign, by ``etaminus`` when the sign flips (and that step is skipped), clamped to ``step_sizes``.
Made for full-batch training: mini-batch noise flips the signs at random.
"""
from __future__ import annotations

from typing import Any, Callable

from .._creation import full_like
from .._tensor import Tensor
from .optimizer import (Optimizer, _check_lr, _closure_loss, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["Rprop", "rprop"]


class Rprop(Optimizer):
    """``Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
    foreach=None, maximize=False, differentiable=False)``."""

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    def __init__(self, params: Any, lr: float | Tensor = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            st = [self._lazy_state(p, group, "prev") for p in params]
            for p, s in zip(params, st):
                if "step_size" not in s:
                    s["step_size"] = full_like(p.grad, _to_scalar(group["lr"]))
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            rprop(params, [p.grad for p in params], [s["prev"] for s in st],
                  [s["step_size"] for s in st], [s["step"] for s in st],
                  maximize=group["maximize"], step_size_min=step_size_min,
                  step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus)
        return loss


def rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor],
          step_sizes: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
          capturable: bool = False, maximize: bool = False, differentiable: bool = False,
          has_complex: bool = False, *, step_size_min: float, step_size_max: float,
          etaminus: float, etaplus: float) -> None:
    """The functional form: one sign-based update per parameter, in place."""
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        prev, step_size = prevs[i], step_sizes[i]
        state_steps[i] += 1
        agree = grad.mul(prev).sign()       # +1: same sign as last time, -1: flipped, 0: a zero
        flipped = agree < 0
        factor = full_like(step_size, 1.0).masked_fill_(agree > 0, etaplus).masked_fill_(flipped, etaminus)
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        grad = grad.masked_fill(flipped, 0)  # after a flip: no step now, and no flip next time
        param.addcmul_(grad.sign(), step_size, value=-1)
        prev.copy_(grad)
