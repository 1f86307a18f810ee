"""``torch.functional``: ``torch.norm``, the older norm function that dispatches to the newer ones.

``torch.norm(x, p)`` (and ``x.norm(p)``) predates ``torch.linalg``: a number ``p`` (or ``'fro'``)
asks for a vector norm, a named order such as ``'nuc'`` for a matrix norm. torch defines it in
``torch/functional.py`` on top of ``torch.linalg``, and so does mytorch: this module sits above
``linalg`` in the layer stack (docs/architecture.md), while the vector-norm kernel itself lives with
the other reductions (``_ops/reduction.py``).
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ._ops.reduction import vector_norm
from ._tensor import Tensor, tensor_method
from .linalg import matrix_norm

__all__ = ["norm"]


@tensor_method()
def norm(input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
         dtype: Any = None) -> Tensor:
    """Vector p-norm ``sum(|x|**p) ** (1/p)`` over ``dim`` (all elements by default).

    ``p`` may be any number, ``inf``/``-inf`` (largest/smallest ``|x|``), 0 (count of non-zeros)
    or ``'fro'`` (= 2); ``'nuc'`` (the sum of the singular values) is a matrix norm.
    """
    if isinstance(p, str) and (p != "fro" or (isinstance(dim, (tuple, list)) and len(dim) > 2)):
        # the nuclear norm (and any other named order) is a matrix norm, as in torch.norm
        dims = tuple(range(input.ndim)) if dim is None else \
            (dim,) if isinstance(dim, (builtins.int, np.integer)) else tuple(dim)
        return matrix_norm(input, p, dims, keepdim, dtype=dtype)
    return vector_norm(input, p, dim, keepdim, dtype=dtype)
