"""RMSprop: divide each coordinate's step by a running root-mean-square of its gradients.

``square_avg`` is an exponential average of ``g²`` (decay ``alpha``); the update is
``g / (sqrt(square_avg) + eps)``, so coordinates with steadily large gradients take smaller
steps. ``centered=True`` subtracts the squared running mean of ``g`` first (an estimate of the
variance instead of the raw second moment); ``momentum > 0`` accumulates the scaled steps in a
buffer, as SGD's momentum does.
"""
from __future__ import annotations

from typing import Any, Callable

from .._pieces import piece, pieces
from .._tensor import Tensor
from .optimizer import (Optimizer, _check_lr, _closure_loss, _to_scalar,
                        _use_grad_for_differentiable)

__all__ = ["RMSprop", "rmsprop", "rmsprop_step"]


class RMSprop(Optimizer):
    """``RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
    centered=False, capturable=False, foreach=None, maximize=False, differentiable=False)``."""

    _group_defaults = (("momentum", 0), ("centered", False), ("foreach", None),
                       ("maximize", False), ("differentiable", False), ("capturable", False))

    def __init__(self, params: Any, lr: float | Tensor = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = _closure_loss(closure)
        for group in self.param_groups:
            params = self._params_with_grad(group)
            extra = ("momentum_buffer",) * (group["momentum"] > 0) + ("grad_avg",) * group["centered"]
            st = [self._lazy_state(p, group, "square_avg", *extra) for p in params]
            rmsprop(params, [p.grad for p in params], [s["square_avg"] for s in st],
                    [s["grad_avg"] for s in st] if group["centered"] else [],
                    [s["momentum_buffer"] for s in st] if group["momentum"] > 0 else [],
                    [s["step"] for s in st], lr=group["lr"], alpha=group["alpha"],
                    eps=group["eps"], weight_decay=group["weight_decay"],
                    momentum=group["momentum"], centered=group["centered"],
                    maximize=group["maximize"])
        return loss


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list[Tensor], momentum_buffer_list: list[Tensor],
            state_steps: list[Tensor], foreach: bool | None = None, maximize: bool = False,
            differentiable: bool = False, capturable: bool = False, has_complex: bool = False, *,
            lr: float, alpha: float, eps: float, weight_decay: float, momentum: float,
            centered: bool) -> None:
    """The functional form: one ``rmsprop_step`` per parameter."""
    lr = _to_scalar(lr)
    for i, param in enumerate(params):
        state_steps[i] += 1
        pieces.rmsprop_step(param, grads[i], square_avgs[i],
                            grad_avgs[i] if centered else None,
                            momentum_buffer_list[i] if momentum > 0 else None, lr=lr,
                            alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                            centered=centered, maximize=maximize)


@piece("06.3")
def rmsprop_step(param: "Tensor", grad: "Tensor", square_avg: "Tensor", grad_avg: "Tensor | None",
                 momentum_buffer: "Tensor | None", *, lr: float, alpha: float, eps: float,
                 weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """Update one parameter and its running averages in place."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        g = g.add(param, alpha=weight_decay)
    square_avg.mul_(alpha).addcmul_(g, g, value=1 - alpha)     # E[g²]
    if centered:
        grad_avg.lerp_(g, 1 - alpha)                            # E[g]
        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()   # sqrt(E[g²] - E[g]²)
    else:
        avg = square_avg.sqrt()
    avg = avg.add_(eps)
    if momentum > 0:
        momentum_buffer.mul_(momentum).addcdiv_(g, avg)
        param.add_(momentum_buffer, alpha=-lr)
    else:
        param.addcdiv_(g, avg, value=-lr)
