"""``torch.utils.tensorboard``: log scalars, histograms, images and text for TensorBoard.

The event files are written with the ``tensorboard`` package's own protocol buffers and record
writer, so ``tensorboard --logdir runs`` reads them as it reads torch's. Like torch, this is a
separate import that needs ``pip install tensorboard`` (or ``pip install 'mytorch[tensorboard]'``).
"""
try:
    import tensorboard  # noqa: F401
except ImportError as e:  # torch raises an ImportError too; ours says what to install
    raise ImportError("mytorch.utils.tensorboard needs the tensorboard package: "
                      "pip install tensorboard  (or pip install 'mytorch[tensorboard]')") from e

from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
