"""ASGD: averaged stochastic gradient descent (Polyak–Ruppert averaging).

Plain SGD steps with a decaying learning rate ``eta = lr / (1 + lambd * lr * step) ** alpha``
(and a decay ``1 - lambd * eta`` of the weights), plus a running average ``ax`` of the parameters
kept in the state: from step ``t0`` on, ``ax`` averages the iterates, which jitter around a
minimum less than the last one does. To evaluate, copy ``ax`` into the model.
"""
from __future__ import annotations

from typing import Any, Callable

from .._creation import ones, tensor
from .._tensor import Tensor
from .optimizer import (Optimizer, _check_lr, _closure_loss, _scalar_dtype, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["ASGD", "asgd"]


class ASGD(Optimizer):
    """``ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
    maximize=False, differentiable=False, capturable=False)``."""

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    def __init__(self, params: Any, lr: float | Tensor = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:   # old checkpoints kept eta and mu as numbers
            for p in group["params"]:
                s = self.state.get(p, {})
                for key in ("eta", "mu"):
                    if key in s and not isinstance(s[key], Tensor):
                        s[key] = tensor(float(s[key]), dtype=_scalar_dtype())

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            lr = float(_to_scalar(group["lr"]))
            st = [self._lazy_state(p, group, "ax", eta=lambda: tensor(lr, dtype=_scalar_dtype()),
                                   mu=lambda: ones((), dtype=_scalar_dtype()))
                  for p in params]
            asgd(params, [p.grad for p in params], [s["ax"] for s in st], [s["mu"] for s in st],
                 [s["eta"] for s in st], [s["step"] for s in st], maximize=group["maximize"],
                 lambd=group["lambd"], lr=group["lr"], t0=group["t0"], alpha=group["alpha"],
                 weight_decay=group["weight_decay"])
        return loss


def asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
         etas: list[Tensor], state_steps: list[Tensor], foreach: bool | None = None,
         maximize: bool = False, differentiable: bool = False, capturable: bool = False,
         has_complex: bool = False, *, lambd: float, lr: float, t0: float, alpha: float,
         weight_decay: float) -> None:
    """The functional form: an SGD step, then the average, the new ``eta`` and ``mu``."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        ax, mu, eta = axs[i], mus[i], etas[i]
        state_steps[i] += 1
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        eta_value = eta.item()
        param.mul_(1 - lambd * eta_value)            # the decay term
        param.add_(grad, alpha=-eta_value)           # the SGD step
        if mu.item() != 1:
            ax.add_(param.sub(ax).mul_(mu))          # the running average of the iterates
        else:
            ax.copy_(param)                          # before t0: just the last iterate
        step = state_steps[i].item()
        eta.fill_(lr / ((1 + lambd * lr * step) ** alpha))
        mu.fill_(1 / max(1, step - t0))
