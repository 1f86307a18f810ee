"""``torch.backends.mps``: Apple's Metal GPUs, which mytorch (NumPy and CuPy) does not drive."""
from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: mytorch has no Metal (MPS) backend, so ``device("mps")`` is never usable."""
    return False


def is_built() -> bool:
    """False: mytorch was not built with MPS support (it has none)."""
    return False
