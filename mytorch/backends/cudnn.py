"""``torch.backends.cudnn``: flags of NVIDIA's convolution library.

mytorch's convolutions are its own (im2col + matmul on NumPy/CuPy), not cuDNN's, so
``is_available()`` is False and ``version()`` None, as on torch's CPU build; the flags are plain
attributes that keep what you set.

* ``benchmark=True`` lets torch try several convolution algorithms on the first batch of each
  shape and keep the fastest: faster for fixed shapes, but run-to-run results may differ;
* ``deterministic=True`` restricts torch to deterministic algorithms.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["enabled", "benchmark", "deterministic", "allow_tf32", "is_available", "version", "flags"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True
benchmark_limit = 10


def is_available() -> bool:
    return False


def version() -> None:
    return None


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:
    """Set the flags for a block, then put the old values back."""
    g = globals()
    old = {k: g[k] for k in ("enabled", "benchmark", "deterministic", "allow_tf32")}
    g.update(enabled=enabled, benchmark=benchmark, deterministic=deterministic,
             allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(old)
