"""mytorch.backends: switches that choose how kernels run (``torch.backends``).

``cudnn.deterministic`` / ``cudnn.benchmark`` and ``use_deterministic_algorithms`` are the
reproducibility switches of chapter 09. mytorch's kernels are NumPy's and CuPy's: on the CPU they
are deterministic whatever the flags say, and on a GPU CuPy has no autotuner for ``benchmark`` to
turn on; the flags are kept (and read back) so that torch code which sets them runs unchanged and
so that ``use_deterministic_algorithms(True)`` can refuse the few GPU kernels whose float
additions race (scatter-adds through atomics).
"""
from __future__ import annotations

from . import cuda, cudnn, mps
from ._determinism import (are_deterministic_algorithms_enabled,
                           is_deterministic_algorithms_warn_only_enabled,
                           use_deterministic_algorithms)

__all__ = ["cuda", "cudnn", "mps", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled"]
