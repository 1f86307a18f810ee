"""mytorch.utils: hook handles, checkpointing and data loading (``mytorch.utils.data``)."""

from . import checkpoint  # noqa: E402,F401  (torch.utils.checkpoint without a separate import)
from . import data  # noqa: E402,F401  (torch.utils.data without a separate import)
