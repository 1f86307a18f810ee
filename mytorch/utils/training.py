"""Training-loop helpers (mytorch only: torch has no such module and leaves the loop to you).

Chapter 10 trains models end to end. The loop itself stays in the chapter, written out, as in
every PyTorch program; this module holds the parts that chapter and its exercises turn into
pieces, so a student's version runs inside a real training run:

* ``train_epoch`` (piece 10.1): one pass over a loader in training mode, returning the mean loss
  per sample (each batch's loss weighted by its size); it calls ``train_step``, the four lines of
  one optimisation step, for every batch, and so does ``lr_find``.
* ``confusion_matrix`` (piece 10.2): counts of (true class, predicted class); ``evaluate`` reads
  the accuracy off its diagonal.
* ``early_stopping_update`` (piece 10.3): the bookkeeping behind ``EarlyStopping``.
* ``suggest_lr`` (piece 10.4): the learning rate ``lr_find`` proposes from its loss curve.

Chapter 11 adds a way to watch a run from inside, without touching the loop:

* ``attach_grad_norm_hooks`` (piece 11.5): a tensor hook on each parameter that records the norm
  of the gradient every backward pass computes for it; ``GradNormRecorder`` calls it.
"""
from __future__ import annotations

import copy
import functools
import math
from typing import TYPE_CHECKING, Any, Callable, Iterable

import mytorch as torch

from .._pieces import piece, pieces
from .._tensor import Tensor

if TYPE_CHECKING:
    from ..nn import Module
    from ..optim import Optimizer

__all__ = ["train_step", "train_epoch", "confusion_matrix", "evaluate", "early_stopping_update",
           "EarlyStopping", "suggest_lr", "lr_find", "attach_grad_norm_hooks", "GradNormRecorder"]


def train_step(model: "Module", loss_fn: "Callable", optimizer: "Optimizer", inputs: "Tensor",
               targets: "Tensor") -> "Tensor":
    """One step of gradient descent on one batch; returns the batch's loss, cut from the graph.

    Forget the old gradients, compute the loss, back-propagate it, let the optimizer move the
    parameters.
    """
    optimizer.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _through_registry(fn: Callable) -> Callable:
    """The public name of a piece the book's own cells call directly: each call goes to whatever
    ``pieces.<name>`` holds now (the reference, or the student's version once switched on)."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(pieces, fn.__name__)(*args, **kwargs)
    return call


@_through_registry
@piece("10.1")
def train_epoch(model: "Module", loader: "Iterable", loss_fn: "Callable", optimizer: "Optimizer",
                progress: "Callable[[Iterable], Iterable] | None" = None) -> float:
    """One pass over ``loader`` in training mode; returns the mean loss per sample.

    Each batch's mean loss counts as many times as the batch has samples, so a short last batch
    weighs less. ``progress`` wraps the loader (e.g. ``tqdm``) to show a progress bar.
    """
    model.train()
    total, count = 0.0, 0
    for inputs, targets in (progress(loader) if progress is not None else loader):
        loss = train_step(model, loss_fn, optimizer, inputs, targets)
        total += float(loss) * len(targets)
        count += len(targets)
    return total / max(count, 1)


@piece("10.2")
def confusion_matrix(predictions: "Tensor", targets: "Tensor", num_classes: int) -> "Tensor":
    """``(num_classes, num_classes)`` int64 counts: row = true class, column = predicted class."""
    cell = targets * num_classes + predictions          # one number per (true, predicted) pair
    counts = torch.zeros(num_classes * num_classes, dtype=torch.int64)
    counts.index_add_(0, cell, torch.ones_like(cell))
    return counts.view(num_classes, num_classes)


def evaluate(model: Any, loader: Iterable, num_classes: int) -> tuple[float, Tensor]:
    """Accuracy and confusion matrix of a classifier over ``loader`` (eval mode, no graph)."""
    was_training = model.training
    model.eval()
    total = torch.zeros(num_classes, num_classes, dtype=torch.int64)
    with torch.no_grad():
        for inputs, targets in loader:
            predictions = model(inputs).argmax(dim=1)
            total += pieces.confusion_matrix(predictions.long(), targets.long(), num_classes)
    model.train(was_training)
    accuracy = float(total.diagonal().sum()) / max(float(total.sum()), 1.0)
    return accuracy, total


@piece("10.3")
def early_stopping_update(best: float | None, bad_epochs: int, metric: float, mode: str,
                          min_delta: float) -> tuple[float, int, bool]:
    """After one epoch: ``(best, bad_epochs, improved)``.

    ``metric`` improves on ``best`` when it is lower by more than ``min_delta`` (``mode="min"``)
    or higher by more than ``min_delta`` (``"max"``); the first metric always improves. An
    improvement resets the count of epochs without one.
    """
    if best is None:
        improved = True
    elif mode == "min":
        improved = metric < best - min_delta
    else:
        improved = metric > best + min_delta
    if improved:
        return metric, 0, True
    return best, bad_epochs + 1, False


class EarlyStopping:
    """Stop training once ``metric`` has not improved for ``patience`` epochs in a row.

    ``stopper.step(val_loss)`` after each epoch returns True when it is time to stop;
    ``stopper.improved`` says whether this epoch was the best so far (save a checkpoint then).
    ``state_dict()`` goes into the checkpoint so that a resumed run keeps counting.
    """

    def __init__(self, patience: int = 3, mode: str = "min", min_delta: float = 0.0) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode!r} is unknown: use 'min' or 'max'")
        if patience < 0 or min_delta < 0:
            raise ValueError("patience and min_delta must not be negative")
        self.patience, self.mode, self.min_delta = int(patience), mode, float(min_delta)
        self.best: float | None = None
        self.bad_epochs = 0
        self.improved = False

    def step(self, metric: float | Tensor) -> bool:
        """Record one epoch's metric; True when training should stop."""
        value = float(metric)
        if math.isnan(value):
            raise ValueError("the metric is NaN: training has diverged")
        self.best, self.bad_epochs, self.improved = pieces.early_stopping_update(
            self.best, self.bad_epochs, value, self.mode, self.min_delta)
        return self.bad_epochs >= self.patience

    def state_dict(self) -> dict:
        return {"best": self.best, "bad_epochs": self.bad_epochs, "patience": self.patience,
                "mode": self.mode, "min_delta": self.min_delta}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update({k: state[k] for k in ("best", "bad_epochs", "patience", "mode",
                                                     "min_delta")})


@piece("10.4")
def suggest_lr(lrs: list, losses: list, beta: float = 0.9) -> float:
    """The learning rate where the smoothed loss falls fastest (per unit of log lr).

    The losses are smoothed with an exponential moving average (``beta``), bias-corrected as in
    Adam; the curve is cut where the smoothed loss climbs above 4 times its minimum (the run has
    diverged); the slope between neighbouring points is taken against ``log(lr)``.
    """
    smoothed, avg, lowest = [], 0.0, math.inf
    for i, loss in enumerate(losses):
        avg = beta * avg + (1 - beta) * loss
        value = avg / (1 - beta ** (i + 1))
        if value > 4 * lowest:
            break
        lowest = min(lowest, value)
        smoothed.append(value)
    best, steepest = lrs[0], math.inf
    for i in range(1, len(smoothed)):
        slope = (smoothed[i] - smoothed[i - 1]) / (math.log(lrs[i]) - math.log(lrs[i - 1]))
        if slope < steepest:
            best, steepest = lrs[i], slope
    return best


def lr_find(model: Any, loss_fn: Callable, optimizer: Any, loader: Iterable, start_lr: float = 1e-5,
            end_lr: float = 1.0, num_steps: int = 100) -> tuple[list, list, float]:
    """The learning-rate range test: ``num_steps`` training steps at rates growing geometrically
    from ``start_lr`` to ``end_lr``; returns the rates, the losses and ``suggest_lr``'s choice.

    The model's and the optimizer's states are put back afterwards, so the test changes nothing.
    """
    if not 0 < start_lr < end_lr or num_steps < 2:
        raise ValueError("lr_find needs 0 < start_lr < end_lr and num_steps >= 2")
    saved_model = copy.deepcopy(model.state_dict())
    saved_optim = copy.deepcopy(optimizer.state_dict())
    ratio = (end_lr / start_lr) ** (1 / (num_steps - 1))
    lrs, losses, batches = [], [], iter(loader)
    model.train()
    for i in range(num_steps):
        try:
            inputs, targets = next(batches)
        except StopIteration:
            batches = iter(loader)
            inputs, targets = next(batches)
        lr = start_lr * ratio ** i
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = float(train_step(model, loss_fn, optimizer, inputs, targets))
        lrs.append(lr)
        losses.append(loss)
        if not math.isfinite(loss) or loss > 4 * min(losses):
            break
    model.load_state_dict(saved_model)
    optimizer.load_state_dict(saved_optim)
    return lrs, losses, pieces.suggest_lr(lrs, losses)


# ------------------------------------------------------------------ watching gradients (chapter 11)
@piece("11.5")
def attach_grad_norm_hooks(named_parameters: "Iterable", norms: dict) -> list:
    """Hook every ``(name, parameter)`` so that each backward pass records its gradient's norm.

    ``parameter.register_hook(hook)`` makes autograd call ``hook(grad)`` with the gradient this
    backward pass computed for the parameter, before it is added into ``.grad``. The hook appends
    the L2 norm of that gradient, as a Python float, to ``norms[name]`` (already a list) and
    leaves the gradient as it is. Returns the handles, one per parameter, that remove the hooks.
    """
    handles = []
    for name, param in named_parameters:
        def record(grad, name=name):           # bind this parameter's name now, not the loop's last
            norms[name].append(torch.linalg.vector_norm(grad).item())
        handles.append(param.register_hook(record))
    return handles


class GradNormRecorder:
    """Record the gradient norm of a model's parameters at every backward pass.

    ``recorder.norms[name]`` gets one float per backward pass that reached that parameter::

        with GradNormRecorder(model, filter=lambda name, p: p.dim() > 1) as recorder:
            ...                                 # train as usual
        recorder.norms["fc.weight"]

    ``filter(name, parameter)`` picks the parameters to watch (all by default); frozen ones
    (``requires_grad=False``) have no gradient and are skipped. The hooks go away at the end of
    the ``with`` block, or with ``remove()``: a forgotten hook keeps running, and its lists keep
    growing, in every later backward pass.
    """

    def __init__(self, model: Any, filter: Callable[[str, Any], bool] | None = None) -> None:
        named_parameters = getattr(model, "named_parameters", None)
        if not callable(named_parameters):
            raise TypeError("GradNormRecorder(model): model must be a module (something with "
                            f"named_parameters()), not {type(model).__name__}")
        if filter is not None and not callable(filter):
            raise TypeError("GradNormRecorder(filter=...): filter must be a function "
                            f"filter(name, parameter) -> bool, not {type(filter).__name__}")
        chosen = [(name, p) for name, p in named_parameters()
                  if p.requires_grad and (filter is None or filter(name, p))]
        if not chosen:
            raise ValueError("GradNormRecorder: no parameter to watch (none requires grad"
                             + ("" if filter is None else " and passes the filter") + ")")
        self.norms: dict[str, list[float]] = {name: [] for name, _ in chosen}
        handles = pieces.attach_grad_norm_hooks(chosen, self.norms)
        if handles is None or len(handles) != len(chosen):
            got = "None" if handles is None else f"{len(handles)} handles"
            raise RuntimeError(f"attach_grad_norm_hooks (piece 11.5) must return one handle per "
                               f"parameter: {len(chosen)} parameters, got {got}")
        self._handles = list(handles)

    def remove(self) -> None:
        """Unregister every hook (calling it again does nothing); the norms stay."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self) -> "GradNormRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "recording" if self._handles else "removed"
        steps = max((len(v) for v in self.norms.values()), default=0)
        return f"GradNormRecorder({len(self.norms)} parameters, {steps} backward passes, {state})"
