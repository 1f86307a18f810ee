"""mytorch.utils: hooks handles now; data loading and checkpointing in later chapters."""

from . import checkpoint  # noqa: E402,F401  (torch.utils.checkpoint without a separate import)
from . import benchmark  # noqa: E402,F401  (its time_cuda is a piece: registered at import)
from .data import distributed as _distributed  # noqa: E402,F401  (DistributedSampler's piece, ch. 12: registered at import; data/__init__.py imports it once the data package lands)
