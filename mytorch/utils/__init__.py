"""mytorch.utils: hook handles, checkpointing and data loading (``mytorch.utils.data``)."""

from . import checkpoint  # noqa: E402,F401  (torch.utils.checkpoint without a separate import)
from . import benchmark  # noqa: E402,F401  (its time_cuda is a piece: registered at import)
from . import data  # noqa: E402,F401  (torch.utils.data without a separate import)
