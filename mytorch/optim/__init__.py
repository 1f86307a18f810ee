"""``mytorch.optim``: optimizers (one file each, as in torch) and learning-rate schedules.

A training step is always the same three calls::

    optimizer.zero_grad()      # forget the previous gradients
    loss.backward()            # compute new ones
    optimizer.step()           # move every parameter a little, by its optimizer's rule

Each optimizer's per-parameter rule is a piece (``pieces.sgd_step``, ``pieces.adam_step``...),
the part chapter 06 asks you to write.
"""
from __future__ import annotations

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Optimizer", "RMSprop",
           "Rprop", "SGD", "lr_scheduler", "swa_utils"]


def __dir__() -> list[str]:
    return sorted(__all__)
