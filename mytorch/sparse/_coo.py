"""Sparse COO tensors: ``indices`` (sparse_dim × nnz, int64) and ``values`` (nnz × dense dims).

A sparse tensor is a :class:`Tensor` whose layout is ``torch.sparse_coo``: it holds no array of
its own (``_data`` says so if a dense operation reads it), only its two dense tensors. Every
operation here is written with dense, differentiable operations on ``values`` (``index_add``,
``index_select``...), so gradients reach the values, and the tensors the values came from,
through the ordinary autograd graph; nothing here knows about autograd.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import mytorch as torch

from .._layout import sparse_coo
from .._tensor import Size, Tensor

__all__ = ["SparseCooTensor", "sparse_coo_tensor", "to_sparse", "mm", "sum"]


class _NoArray:
    """The ``_data`` of a sparse tensor: a dense operation that reads it gets a clear error."""

    __slots__ = ()
    shape = ()

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError("this operation is not implemented for sparse COO tensors "
                                  "(layout=torch.sparse_coo) in mytorch: call .to_dense() first")


class SparseCooTensor(Tensor):
    """``torch.Tensor`` with ``layout == torch.sparse_coo`` (torch has no separate class)."""

    _sp_indices: Tensor
    _sp_values: Tensor
    _sp_size: Size
    _sp_coalesced: bool

    @classmethod
    def _make(cls, indices: Tensor, values: Tensor, size: Sequence[int],
              coalesced: bool) -> SparseCooTensor:
        t = cls._wrap(values._data[:0], values.device)  # then the slots a Tensor has
        t._data = _NoArray()
        t._sp_indices, t._sp_values = indices, values
        t._sp_size = Size(int(s) for s in size)
        t._sp_coalesced = coalesced
        t.grad_fn = values.grad_fn
        return t

    # ------------------------------------------------------------------ attributes
    @property
    def layout(self) -> Any:
        return sparse_coo

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def shape(self) -> Size:
        return self._sp_size

    def size(self, dim: int | None = None) -> Any:
        return self._sp_size if dim is None else self._sp_size[dim]

    def dim(self) -> int:
        return len(self._sp_size)

    @property
    def ndim(self) -> int:
        return len(self._sp_size)

    def numel(self) -> int:
        return math.prod(self._sp_size)

    def __len__(self) -> int:
        return self._sp_size[0]

    @property
    def dtype(self) -> Any:
        return self._sp_values.dtype

    @property
    def requires_grad(self) -> bool:
        return self._sp_values.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._sp_values.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> SparseCooTensor:
        self._sp_values.requires_grad_(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self._sp_values.is_leaf

    @property
    def grad(self) -> Any:
        if self._sp_values.grad is None:
            return None
        raise NotImplementedError("the gradient of a sparse leaf is not kept as a sparse tensor "
                                  "in mytorch: read the gradient of its values (the tensor passed "
                                  "to sparse_coo_tensor) instead")

    def sparse_dim(self) -> int:
        return self._sp_indices.shape[0]

    def dense_dim(self) -> int:
        return self._sp_values.dim() - 1

    def _nnz(self) -> int:
        return self._sp_values.shape[0]

    def _indices(self) -> Tensor:
        return self._sp_indices

    def _values(self) -> Tensor:
        return self._sp_values

    def indices(self) -> Tensor:
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._sp_indices

    def values(self) -> Tensor:
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._sp_values

    def is_coalesced(self) -> bool:
        return self._sp_coalesced

    def detach(self) -> SparseCooTensor:
        return SparseCooTensor._make(self._sp_indices, self._sp_values.detach(), self._sp_size,
                                     self._sp_coalesced)

    # ------------------------------------------------------------------ conversions
    def _linear(self) -> np.ndarray:
        """Each entry's position among the sparse dimensions, row-major."""
        sizes = self._sp_size[:self.sparse_dim()]
        idx = self._sp_indices.cpu().numpy()
        return np.ravel_multi_index(tuple(idx), sizes) if idx.shape[1] else np.zeros(0, np.int64)

    def coalesce(self) -> SparseCooTensor:
        """Sorted indices without duplicates; the values of a duplicated index are summed."""
        if self._sp_coalesced:
            return self
        sizes = self._sp_size[:self.sparse_dim()]
        unique, inverse = np.unique(self._linear(), return_inverse=True)
        v = self._sp_values
        summed = torch.zeros((len(unique),) + tuple(v.shape[1:]), dtype=v.dtype, device=v.device) \
            .index_add(0, torch.from_numpy(inverse.astype(np.int64)).to(v.device), v)
        idx = np.stack(np.unravel_index(unique, sizes)).astype(np.int64).reshape(len(sizes), -1)
        return SparseCooTensor._make(torch.from_numpy(idx).to(v.device), summed, self._sp_size, True)

    def to_dense(self, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
        """The dense tensor: duplicated indices add up."""
        sd, v = self.sparse_dim(), self._sp_values
        n = math.prod(self._sp_size[:sd])
        flat = torch.zeros((n,) + tuple(v.shape[1:]), dtype=v.dtype, device=v.device).index_add(
            0, torch.from_numpy(self._linear().astype(np.int64)).to(v.device), v)
        out = flat.reshape(self._sp_size)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args: Any, **kwargs: Any) -> SparseCooTensor:
        return self

    def to(self, *args: Any, **kwargs: Any) -> SparseCooTensor:
        """A dtype cast of the values and/or a move of both tensors to a device."""
        values = self._sp_values.to(*args, **kwargs)
        indices = self._sp_indices.to(values.device)
        return SparseCooTensor._make(indices, values, self._sp_size, self._sp_coalesced)

    def float(self) -> SparseCooTensor:
        return self.to(torch.float32)

    def double(self) -> SparseCooTensor:
        return self.to(torch.float64)

    def half(self) -> SparseCooTensor:
        return self.to(torch.float16)

    def long(self) -> SparseCooTensor:
        return self.to(torch.int64)

    def int(self) -> SparseCooTensor:
        return self.to(torch.int32)

    def bool(self) -> SparseCooTensor:
        return self.to(torch.bool)

    def cpu(self) -> SparseCooTensor:
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> SparseCooTensor:
        return self.to("cuda" if device is None else device)

    def t(self) -> SparseCooTensor:
        """The transpose of a 2-D sparse matrix: the two rows of indices swap."""
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} dense")
        return SparseCooTensor._make(self._sp_indices.flip(0), self._sp_values,
                                     self._sp_size[::-1], False)

    # ------------------------------------------------------------------ arithmetic
    def mul(self, other: Any) -> SparseCooTensor:
        """Times a number (or a one-element tensor): the values are scaled."""
        if isinstance(other, Tensor) and (other.is_sparse or other.dim() > 0):
            raise NotImplementedError("a sparse tensor times a tensor is not implemented in "
                                      "mytorch: multiply by a number, or call .to_dense()")
        return SparseCooTensor._make(self._sp_indices, self._sp_values * other, self._sp_size,
                                     self._sp_coalesced)

    __mul__ = __rmul__ = mul

    def __neg__(self) -> SparseCooTensor:
        return self.mul(-1)

    def add(self, other: Any, *, alpha: Any = 1) -> SparseCooTensor:
        """Sparse + sparse: both sets of entries, coalesced (dense + sparse is dense's add)."""
        if not isinstance(other, SparseCooTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if other.shape != self.shape:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                               f"size {list(self.shape)} while other has size {list(other.shape)}")
        values = torch.cat([self._sp_values, other._sp_values * alpha if alpha != 1
                            else other._sp_values])
        indices = torch.cat([self._sp_indices, other._sp_indices], 1)
        return SparseCooTensor._make(indices, values, self._sp_size, False).coalesce()

    __add__ = add

    # ------------------------------------------------------------------ products
    def mm(self, mat2: Tensor) -> Tensor:
        return mm(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        return _matmul(self, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        return _matmul(self, other)

    def __repr__(self) -> str:
        head, vhead = "tensor(indices=", "       values="
        ind = repr(self._sp_indices).replace("\n", "\n" + " " * len(head))
        val = repr(self._sp_values)
        val = val[:val.rfind(", grad_fn=")] + ")" if ", grad_fn=" in val else val
        val = val.replace(", requires_grad=True", "").replace("\n", "\n" + " " * len(vhead))
        last = (f"       size={tuple(self._sp_size)}, nnz={self._nnz()}, "
                f"layout=torch.sparse_coo")
        extra = ""
        if self.grad_fn is not None:
            extra = f"grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra = "requires_grad=True"
        if extra:
            last += (",\n       " if len(last) + len(extra) + 3 > 80 else ", ") + extra
        return f"{head}{ind},\n{vhead}{val},\n{last})"

    __str__ = __repr__


def sparse_coo_tensor(indices: Any, values: Any, size: Sequence[int] | None = None, *,
                      dtype: Any = None, device: Any = None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseCooTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]`` (duplicates allowed: they add)."""
    idx = indices if isinstance(indices, Tensor) else torch.tensor(indices)
    val = values if isinstance(values, Tensor) else torch.tensor(values, dtype=dtype)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if not idx.dtype.is_floating_point and not idx.dtype.is_complex and idx.dtype != torch.bool:
        idx = idx.to(torch.int64)  # int32 indices (from NumPy, say) are widened, as torch does
    else:
        raise RuntimeError("indices must be an int64 tensor")
    if val.dim() < 1 or val.shape[0] != idx.shape[1]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{idx.shape[1]}, nnz from values: {val.shape[0] if val.dim() else 1}")
    if dtype is not None and val.dtype != dtype:
        val = val.to(dtype)
    if device is not None:
        idx, val = idx.to(device), val.to(device)
    sd = idx.shape[0]
    host = idx.cpu().numpy()
    top = host.max(axis=1) + 1 if idx.shape[1] else np.zeros(sd, np.int64)
    if size is None:
        size = tuple(int(t) for t in top) + tuple(val.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sd + val.dim() - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sd}) + dense_dim "
                           f"({val.dim() - 1}), but got {len(size)}")
    for d in range(sd):
        if idx.shape[1] and (top[d] > size[d] or host[d].min() < 0):
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {int(top[d]) - 1}")
    if requires_grad:
        val = val.detach().requires_grad_(True)
    return SparseCooTensor._make(idx, val, size, bool(is_coalesced) or idx.shape[1] <= 1)


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: int | None = None) -> SparseCooTensor:
    """``Tensor.to_sparse()``: the non-zero entries (of the first ``sparse_dim`` dimensions)."""
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"to_sparse(layout={layout}) is not implemented in mytorch: "
                                  "only torch.sparse_coo")
    sd = self.dim() if sparse_dim is None else int(sparse_dim)
    if dense_dim is not None:
        sd = self.dim() - int(dense_dim)
    arr = self.detach().cpu().numpy()
    nonzero = arr != 0 if sd == arr.ndim else (arr != 0).reshape(arr.shape[:sd] + (-1,)).any(-1)
    idx = np.stack(np.nonzero(nonzero)).astype(np.int64).reshape(sd, -1)
    pos = torch.from_numpy(idx).to(self.device)
    values = self[tuple(pos[d] for d in range(sd))]  # differentiable: gradients reach self
    return SparseCooTensor._make(pos, values, tuple(self.shape), True)


def _dense_to_dense(self: Tensor, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """``Tensor.to_dense()`` of a strided tensor: the tensor itself."""
    return self if dtype is None else self.to(dtype)


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``torch.sparse.mm``: a sparse (n × m) matrix times a dense (m × p) one, dense result.

    Each stored entry ``v`` at ``(i, j)`` adds ``v · mat2[j]`` to row ``i``: an ``index_add`` of
    scaled rows, so the gradients of the values and of ``mat2`` come from those two operations.
    """
    if not isinstance(mat1, SparseCooTensor):
        return torch.mm(mat1, mat2)
    if isinstance(mat2, SparseCooTensor):
        raise NotImplementedError("sparse @ sparse is not implemented in mytorch: "
                                  "call .to_dense() on the right operand")
    if mat1.dim() != 2 or mat1.sparse_dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"mm: expected a 2-D sparse matrix and a 2-D dense one, got "
                           f"{mat1.dim()}-D and {mat2.dim()}-D")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: "
                           f"{str(mat1.dtype).replace('torch.', '')} != "
                           f"{str(mat2.dtype).replace('torch.', '')}")
    rows, cols = mat1._sp_indices[0].to(mat2.device), mat1._sp_indices[1].to(mat2.device)
    scaled = mat2.index_select(0, cols) * mat1._sp_values.unsqueeze(1)
    out = torch.zeros(mat1.shape[0], mat2.shape[1], dtype=mat2.dtype, device=mat2.device)
    return out.index_add(0, rows, scaled)


def _matmul(a: SparseCooTensor, b: Tensor) -> Tensor:
    if b.dim() == 1:
        return mm(a, b.unsqueeze(1)).squeeze(1)
    return mm(a, b)


def _with_out(fn: Any) -> Any:
    def run(a: Any, b: Any, *, out: Tensor | None = None) -> Tensor:
        res = fn(a, b)
        if out is not None:
            out.resize_(res.shape).copy_(res)
            return out
        return res
    return run


def sum(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:
    """``torch.sparse.sum``: over every dimension (a dense 0-d tensor), or over ``dim``: sparse
    while some sparse dimensions remain, else dense."""
    if not isinstance(input, SparseCooTensor):
        return input.sum() if dim is None else input.sum(dim)
    v = input._sp_values if dtype is None else input._sp_values.to(dtype)
    if dim is None:
        return v.sum()
    n, sd = input.dim(), input.sparse_dim()
    dims = sorted({(d + n if d < 0 else d) for d in (dim if isinstance(dim, (tuple, list)) else [dim])})
    dense_axes = [d - sd + 1 for d in dims if d >= sd]
    if dense_axes:
        v = v.sum(dense_axes)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:
        return v.sum(0)
    size = [input.shape[d] for d in keep] + [input.shape[d] for d in range(sd, n) if d not in dims]
    idx = input._sp_indices[keep] if len(keep) < sd else input._sp_indices
    return SparseCooTensor._make(idx, v, size, False).coalesce()


def _dense_plus_sparse(sparse: SparseCooTensor, dense: Tensor, *, alpha: Any = 1,
                       out: Tensor | None = None) -> Tensor:
    """``dense + alpha * sparse`` (torch.add(dense, sparse)): a dense result."""
    return torch.add(dense, sparse.to_dense(), alpha=alpha, out=out)


def _install() -> None:
    """Register the sparse operations with the layout and attach the dense tensor's methods."""
    sparse_coo.ops["radd"] = _dense_plus_sparse
    sparse_coo.ops["mm"] = _with_out(mm)
    sparse_coo.ops["matmul"] = _with_out(_matmul)
    Tensor.to_sparse = to_sparse  # type: ignore[method-assign]
    Tensor.to_sparse_coo = to_sparse  # type: ignore[attr-defined]
    Tensor.to_dense = _dense_to_dense  # type: ignore[method-assign]
    Tensor.is_sparse = False  # type: ignore[misc]


_install()
