"""Averaging the weights of a model over training: ``AveragedModel``, ``SWALR``, ``update_bn``.

Near the end of training the weights wander around a good region, pushed by the noise of each
mini-batch. Their *average* over many steps usually lies nearer the middle of that region than
any single step does: it generalises better and its validation curve is smoother. Two averages:

* the plain running mean of every snapshot so far (Stochastic Weight Averaging, SWA), usually
  with a constant or cyclic learning rate (``SWALR``) while it collects;
* an exponential moving average (EMA) that forgets old snapshots at the rate ``1 - decay``.

``AveragedModel(model)`` keeps a copy of the model; ``update_parameters(model)`` folds the current
weights into it with :func:`average_into_`. Batch-norm statistics are
not weights: after averaging, ``update_bn(loader, averaged)`` recomputes them with one pass.
"""
from __future__ import annotations

import copy
import itertools
import math
from typing import Any, Callable, Iterable

from .._creation import tensor
from .._dtype import long
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _warn_get_lr_called_within_step
from .optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def average_into_(averaged: list, current: list, num_averaged: int,
                  decay: float | None) -> None:
    """Fold the ``current`` tensors into their ``averaged`` copies, in place.

    ``decay=None``: the running mean of every value seen — ``averaged`` is already the mean of
    ``num_averaged`` values, make it the mean of one more. Otherwise an exponential moving
    average: keep the fraction ``decay`` of ``averaged`` and take ``1 - decay`` of ``current``.
    """
    for avg, cur in zip(averaged, current):
        if decay is None:
            avg.add_((cur - avg) / (num_averaged + 1))
        else:
            avg.mul_(decay).add_(cur, alpha=1 - decay)


def _floating(tensors: list) -> bool:
    return bool(tensors) and (tensors[0].is_floating_point() or tensors[0].is_complex())


def _count(num_averaged: Any) -> Any:
    return num_averaged.item() if isinstance(num_averaged, Tensor) else num_averaged


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[list, list, Any], None]:
    """The ``multi_avg_fn`` of an exponential moving average (``AveragedModel(model,
    multi_avg_fn=get_ema_multi_avg_fn(0.999))``)."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    @no_grad()
    def ema_update(ema_param_list: list, current_param_list: list, _: Any) -> None:
        if _floating(ema_param_list):
            average_into_(ema_param_list, current_param_list, 0, float(decay))
        else:  # integer buffers (a counter): average in float, store rounded down
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[[list, list, Any], None]:
    """The ``multi_avg_fn`` of the running mean (what ``AveragedModel`` does by default)."""
    @no_grad()
    def swa_update(averaged_param_list: list, current_param_list: list,
                   num_averaged: Any) -> None:
        if _floating(averaged_param_list):
            average_into_(averaged_param_list, current_param_list,
                                 _count(num_averaged), None)
        else:
            n = _count(num_averaged)
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.copy_(p_avg + (p_model - p_avg) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """One tensor at a time: ``avg_fn(averaged, current, num_averaged)`` returning the new EMA."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """One tensor at a time: the new running mean."""
    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose weights are the average of the model's over training.

    Call ``update_parameters(model)`` after the optimizer steps you want to average (every step,
    or once per epoch); evaluate or save the ``AveragedModel`` itself. ``avg_fn`` (one tensor at a
    time) or ``multi_avg_fn`` (lists of tensors) choose the average, the running mean by default;
    ``use_buffers=True`` averages the buffers too instead of copying them.
    """

    def __init__(self, model: Module, device: Any = None,
                 avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[[list, list, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=long, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _tracked(self, model: Module) -> tuple[Iterable[Tensor], Iterable[Tensor]]:
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.parameters(), model.parameters()

    @no_grad()
    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        mine, theirs = self._tracked(model)
        averaged, current = [], []
        first = int(self.n_averaged.item()) == 0
        for p_avg, p_model in zip(mine, theirs):
            p_model_ = p_model.detach().to(p_avg.device)
            averaged.append(p_avg.detach())
            current.append(p_model_)
            if first:
                p_avg.detach().copy_(p_model_)
        if not first:
            n = self.n_averaged
            if self.avg_fn is not None:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, n.to(a.device)))
            else:  # lists of one device and dtype each, as torch's foreach kernels want them
                average = self.multi_avg_fn or get_swa_multi_avg_fn()
                groups: dict = {}
                for a, c in zip(averaged, current):
                    mine_, theirs_ = groups.setdefault((str(a.device), a.dtype), ([], []))
                    mine_.append(a)
                    theirs_.append(c)
                for (dev, _), (a_list, c_list) in groups.items():
                    average(a_list, c_list, n.to(dev))
        if not self.use_buffers:  # buffers follow the model (recompute BN stats with update_bn)
            for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the batch-norm running statistics of ``model`` with one pass over ``loader``
    (each batch a tensor, or a list/tuple whose first item is the input)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Move each group's rate to ``swa_lr`` over ``anneal_epochs`` steps (cosine or linear),
    then keep it there: the schedule to use while ``AveragedModel`` collects snapshots."""

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        lrs = swa_lr if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(
            optimizer.param_groups)
        if len(lrs) != len(optimizer.param_groups):
            raise ValueError("swa_lr must have the same length as optimizer.param_groups: "
                             f"swa_lr has {len(lrs)}, optimizer.param_groups has "
                             f"{len(optimizer.param_groups)}")
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(float(g["lr"]), g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
