"""``torch.sparse``: sparse COO tensors (``torch.sparse_coo_tensor``, ``Tensor.to_sparse``) and
the products and sums that take them (``_coo.py``). ``torch.mm`` and ``@`` with a sparse left
operand reach ``mm`` here through the layout's table of operations (``mytorch/_layout.py``)."""
from ._coo import mm, sparse_coo_tensor, sum

__all__ = ["mm", "sum"]

del sparse_coo_tensor  # torch.sparse_coo_tensor lives in the top-level namespace
