"""mytorch.nn.parallel: data parallelism (``DataParallel`` in one process; ``DistributedDataParallel``
with one process per rank)."""
from __future__ import annotations

from .data_parallel import DataParallel, data_parallel, replicate
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "replicate"]
