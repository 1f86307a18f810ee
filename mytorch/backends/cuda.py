"""``torch.backends.cuda``: matmul precision flags (kept; CuPy's matmul follows CuPy's settings)."""
from __future__ import annotations

import importlib.util

__all__ = ["matmul", "is_built"]


class _MatmulFlags:
    """``torch.backends.cuda.matmul.allow_tf32`` (TensorFloat-32: faster, 10-bit mantissa)."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether mytorch can use CUDA at all: true when CuPy is importable."""
    return importlib.util.find_spec("cupy") is not None
