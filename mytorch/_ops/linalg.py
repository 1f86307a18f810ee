"""Linear algebra: products (dot, mv, mm, bmm, matmul, the ``add*`` family, outer, einsum,
tensordot, kron) and matrix functions (inverse, det, slogdet, trace, cross, cholesky).

Every product is one BLAS-backed array call (``a @ b`` or ``einsum``). Autograd needs just one
rule, the matrix product's: for ``C = A @ B`` the gradients are ``dA = dC @ Bᵀ`` and
``dB = Aᵀ @ dC``. Vectors are matrices with one dimension of size 1, and batch dimensions that
were broadcast are summed away with ``sum_to``.
"""
from __future__ import annotations

import builtins
import collections
import math
import numbers
import string
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import xp_for
from .._fp import quiet
from .._layout import layout_op, strided
from .._pieces import piece, pieces
from .._tensor import Tensor, make_view, tensor_method, wrap
from ..autograd.grad_mode import STATE
from ..autograd.graph import SavedOutput, needs_grad, record, sum_to, unbroadcast
from ._operands import FP_IGNORE, FP_STATE, broadcast_error, check_same_device, checked_scalar, \
    quietly, result_type, wrap_dim
from ._variants import _cap, _inplace_version, _to_out
from .pointwise import _crossed

__all__ = ["dot", "vdot", "mv", "mm", "bmm", "matmul", "addmm", "addmv", "addr", "addbmm",
           "baddbmm", "outer", "ger", "inner", "einsum", "tensordot", "kron", "inverse", "det",
           "logdet", "slogdet", "trace", "cross", "cholesky", "cholesky_solve", "cholesky_inverse"]


class LinAlgError(RuntimeError):
    """A matrix could not be factorised (singular, not positive-definite): ``torch.linalg.LinAlgError``."""


# Names torch's C++ kernels print for dtypes ("expected m1 and m2 to have the same dtype ...").
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _dims(t: Tensor) -> str:
    return "x".join(str(s) for s in t._data.shape)


def _rg(t: Any) -> bool:
    return isinstance(t, Tensor) and t._requires_grad


def _mT(t: Tensor) -> Tensor:
    """Transpose of the last two dimensions (``Aᵀ`` of every matrix in a batch)."""
    return t.transpose(-2, -1)


def _require_tensor(fn: str, **args: Any) -> None:
    for name, x in args.items():
        if not isinstance(x, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _not_for_bool(t: Tensor, kernel: str) -> None:
    if t._data.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


# ------------------------------------------------------------------------ dot, vdot, mv, mm, bmm
def _check_vectors(a: Tensor, b: Tensor) -> None:
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D "
                           "tensors")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("dot : expected both vectors to have same dtype, but found "
                           f"{_cap(a.dtype)} and {_cap(b.dtype)}")
    n, m = a._data.shape[0], b._data.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have "
                           f"the same number of elements, but got {n} and {m} elements "
                           "respectively")
    _not_for_bool(a, "dot")


@quietly  # inf/nan from overflowing products, silently as in torch
def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product of two 1-D tensors of the same dtype (no broadcasting, no promotion)."""
    _require_tensor("dot", input=input, tensor=tensor)
    _check_vectors(input, tensor)
    dev = check_same_device(input, tensor)
    res = wrap(input._data @ tensor._data, dev)
    if needs_grad(input, tensor):
        record("DotBackward0", res, (input, tensor),
               lambda g: (g * tensor if _rg(input) else None, g * input if _rg(tensor) else None),
               saved=_crossed(input, tensor))
    return _to_out(res, out)


@quietly
def vdot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``dot`` that conjugates its first argument (the same as ``dot`` for real tensors)."""
    _require_tensor("vdot", input=input, other=other)
    _check_vectors(input, other)
    if not input.dtype.is_complex:
        return dot(input, other, out=out)
    dev = check_same_device(input, other)
    res = wrap(input._data.conj() @ other._data, dev)
    if needs_grad(input, other):
        record("VdotBackward0", res, (input, other),
               lambda g: (g.conj() * other if _rg(input) else None,
                          g * input if _rg(other) else None), saved=_crossed(input, other))
    return _to_out(res, out)


@quietly
def mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix @ vector: ``(n, m) @ (m,) -> (n,)``."""
    _require_tensor("mv", input=input, vec=vec)
    _check_mv(input, vec)
    dev = check_same_device(input, vec)
    res = wrap(input._data @ vec._data, dev)
    if needs_grad(input, vec):
        record("MvBackward0", res, (input, vec),
               lambda g: (outer(g, vec) if _rg(input) else None,
                          mv(_mT(input), g) if _rg(vec) else None), saved=_crossed(input, vec))
    return _to_out(res, out)


def _check_mv(mat: Tensor, vec: Tensor, input: Tensor | None = None) -> None:
    """torch's addmv checks (``mv`` is ``addmv`` without an ``input``)."""
    first = vec if input is None else input
    n_in = 1 if input is None else input._data.ndim
    if mat._data.ndim != 2 or vec._data.ndim != 1 or n_in > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {n_in}, "
                           f"{mat._data.ndim}, {vec._data.ndim}")
    if not first._data.dtype == mat._data.dtype == vec._data.dtype:
        raise RuntimeError("addmv input tensors must have the same dtype, but got "
                           f"{_cap(first.dtype)}, {_cap(mat.dtype)}, and {_cap(vec.dtype)}")
    n, m = mat._data.shape
    in_shape = (n,) if input is None else input._data.shape
    if m != vec._data.shape[0] or in_shape not in ((n,), (1,), ()):
        raise RuntimeError(f"size mismatch, got input ({'x'.join(map(str, in_shape))}), "
                           f"mat ({n}x{m}), vec ({vec._data.shape[0]})")
    _not_for_bool(mat, "addmv_impl_cpu")


def _mm_dtype_error(a: Tensor, b: Tensor) -> RuntimeError:
    return RuntimeError("expected m1 and m2 to have the same dtype, but got: "
                        f"{_C_NAMES[a.dtype.name]} != {_C_NAMES[b.dtype.name]}")


def _check_mm(a: Tensor, b: Tensor) -> None:
    if a._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a._data.dtype != b._data.dtype:
        raise _mm_dtype_error(a, b)
    if a._data.shape[1] != b._data.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_dims(a)} and {_dims(b)})")
    _not_for_bool(a, "addmm_impl_cpu_")


@quietly
def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product of two 2-D tensors of the same dtype: ``(n, m) @ (m, p) -> (n, p)``."""
    _require_tensor("mm", input=input, mat2=mat2)
    if input.layout is not strided:  # a sparse left operand (mytorch/sparse/)
        return layout_op("mm", input, mat2, out=out)
    _check_mm(input, mat2)
    dev = check_same_device(input, mat2)
    res = wrap(input._data @ mat2._data, dev)
    if needs_grad(input, mat2):
        record("MmBackward0", res, (input, mat2),
               lambda g: pieces.matmul_backward(input, mat2, g, (_rg(input), _rg(mat2))),
               saved=_crossed(input, mat2))
    return _to_out(res, out)


def _check_bmm(a: Tensor, b: Tensor) -> None:
    if a._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected scalar type {_cap(a.dtype)} but found {_cap(b.dtype)}")
    (bs, _, k), (bs2, k2, _) = a._data.shape, b._data.shape
    if (bs, k) != (bs2, k2):
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{bs}, {k}] but got: [{bs2}, {k2}].")
    _not_for_bool(a, "bmm")


@quietly
def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """A batch of matrix products: ``(b, n, m) @ (b, m, p) -> (b, n, p)`` (no broadcasting)."""
    _require_tensor("bmm", input=input, mat2=mat2)
    _check_bmm(input, mat2)
    dev = check_same_device(input, mat2)
    res = wrap(input._data @ mat2._data, dev)
    if needs_grad(input, mat2):
        record("BmmBackward0", res, (input, mat2),
               lambda g: (g.bmm(_mT(mat2)) if _rg(input) else None,
                          _mT(input).bmm(g) if _rg(mat2) else None),
               saved=_crossed(input, mat2))
    return _to_out(res, out)


# ------------------------------------------------------------------------ matmul
_MATMUL_NODE = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (1, 2): "SqueezeBackward4",
                (2, 2): "MmBackward0"}


@quietly
def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The ``@`` operator: dot, matrix-vector, matrix-matrix or batched products by rank.

    1-D operands are promoted to a matrix (a row on the left, a column on the right) and the
    added dimension is removed again; dimensions before the last two broadcast as batch
    dimensions. These are NumPy's ``@`` rules too, so the array call does all the work.
    """
    _require_tensor("matmul", input=input, other=other)
    if input.layout is not strided:  # a sparse left operand (mytorch/sparse/)
        return layout_op("matmul", input, other, out=out)
    a, b = input._data, other._data
    if a.dtype != b.dtype:  # no promotion: torch's error names the kernel it would have used
        if a.ndim == 0 or b.ndim == 0:
            raise _matmul_error(a.shape, b.shape)
        if a.ndim == b.ndim == 1:
            _check_vectors(input, other)
        raise _mm_dtype_error(input, other)
    if a.dtype == np.bool_:
        _not_for_bool(input, "addmm_impl_cpu_")
    dev = input._device if input._device == other._device else check_same_device(input, other)
    try:
        res = wrap(a @ b, dev)
    except ValueError:
        raise _matmul_error(a.shape, b.shape) from None
    if needs_grad(input, other):
        record(_MATMUL_NODE.get((a.ndim, b.ndim), "UnsafeViewBackward0"), res, (input, other),
               lambda g: _matmul_grads(g, input, other), saved=_crossed(input, other))
    return _to_out(res, out)


def _matmul_error(sa: tuple, sb: tuple) -> RuntimeError:
    """torch's message for shapes that ``@`` rejected."""
    if not sa or not sb:
        return RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                            f"{len(sa)}D and {len(sb)}D")
    k, k2 = sa[-1], sb[-2] if len(sb) > 1 else sb[0]
    rows = int(np.prod(sa[:-1])) if len(sa) > 1 else 1
    if len(sa) == len(sb) == 1:
        return RuntimeError(f"inconsistent tensor size, expected tensor [{k}] and src [{k2}] to "
                            f"have the same number of elements, but got {k} and {k2} elements "
                            "respectively")
    if len(sb) == 1:
        return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({k2})")
    if k != k2:
        m = rows if len(sb) == 2 else (sa[-2] if len(sa) > 1 else 1)
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({m}x{k} and "
                            f"{k2}x{sb[-1]})")
    ba, bb = sa[:-2], sb[:-2]
    for i in range(1, min(len(ba), len(bb)) + 1):
        if ba[-i] != bb[-i] and 1 not in (ba[-i], bb[-i]):
            dim = max(len(ba), len(bb)) - i
            return RuntimeError(f"The size of tensor a ({ba[-i]}) must match the size of tensor "
                                f"b ({bb[-i]}) at non-singleton dimension {dim}")
    return RuntimeError(f"matmul: shapes {list(sa)} and {list(sb)} cannot be multiplied")


def _column_major(arr: Any) -> bool:
    """A matrix stored column after column (the transpose of a row-major one), as torch tests it."""
    item = arr.itemsize
    return arr.strides[0] == item and arr.strides[1] == arr.shape[0] * item


def _matmul_backward_arrays(a: "Tensor", b: "Tensor", grad: "Tensor",
                            needs_input_grad: tuple = (True, True)) -> tuple:
    """:func:`matmul_backward` on bare arrays in a plain backward (grad mode off), for operands
    in host memory of one dtype: matrices, batches of matrices with the same batch dims, or a
    batch times one matrix (a linear layer without bias): one BLAS call per gradient, nothing
    to sum back but the matrix's gradient over the batch. Like torch's ``mm`` backward, the
    gradient of a matrix stored column-major (``W.t()`` in a linear layer) is computed
    transposed, so it comes out in that operand's layout and ``W.grad`` needs no copy."""
    ga, xa, xb = grad._data, a._data, b._data
    if (STATE.enabled or type(ga) is not np.ndarray or type(xa) is not np.ndarray
            or type(xb) is not np.ndarray or not ga.dtype == xa.dtype == xb.dtype
            or xb.ndim < 2 or ga.ndim != xa.ndim
            or xb.ndim != 2 and xa.shape[:-2] != xb.shape[:-2]):
        return matmul_backward(a, b, grad, needs_input_grad)
    dev = grad._device
    da = db = None
    token = FP_STATE.set(FP_IGNORE)
    try:
        if xa.ndim == xb.ndim == 2:
            if needs_input_grad[0]:
                da = wrap((xb @ ga.T).T if _column_major(xa) else ga @ xb.T, dev)
            if needs_input_grad[1]:
                db = wrap((ga.T @ xa).T if _column_major(xb) else xa.T @ ga, dev)
        else:
            if needs_input_grad[0]:
                da = wrap(ga @ xb.swapaxes(-1, -2), dev)
            if needs_input_grad[1]:
                if xb.ndim == 2:  # one matrix for the whole batch: its gradient summed over it
                    rows = math.prod(xa.shape[:-1])
                    db = xa.reshape(rows, xa.shape[-1]).T @ ga.reshape(rows, ga.shape[-1])
                else:
                    db = xa.swapaxes(-1, -2) @ ga
                db = wrap(db, dev)
    finally:
        FP_STATE.reset(token)
    return da, db


@piece("02.2", fast=_matmul_backward_arrays)
def matmul_backward(a: "Tensor", b: "Tensor", grad: "Tensor",
                    needs_input_grad: tuple = (True, True)) -> tuple:
    """The gradients of ``a`` and ``b`` in ``a @ b`` (matrices, or batches of matrices that
    broadcast), given ``grad``, the gradient of the product; None where not needed."""
    da = db = None
    if needs_input_grad[0]:
        da = unbroadcast(grad @ b.transpose(-1, -2), a.shape)
    if needs_input_grad[1]:
        db = unbroadcast(a.transpose(-1, -2) @ grad, b.shape)
    return da, db


def _matmul_grads(g: Tensor, a: Tensor, b: Tensor) -> tuple:
    """Gradients of ``a @ b`` for every rank case: 1-D operands (and the matching dimension of
    ``g``) are promoted to matrices for the piece :func:`matmul_backward`, then reshaped back."""
    a2 = a if a.ndim > 1 else a.unsqueeze(0)
    b2 = b if b.ndim > 1 else b.unsqueeze(1)
    if b.ndim == 1:
        g = g.unsqueeze(-1)
    if a.ndim == 1:
        g = g.unsqueeze(-2)
    ga, gb = pieces.matmul_backward(a2, b2, g, (_rg(a), _rg(b)))
    return (ga.reshape(a.shape) if ga is not None else None,
            gb.reshape(b.shape) if gb is not None else None)


Tensor.__matmul__ = lambda self, other: matmul(self, other) if isinstance(other, Tensor) \
    else NotImplemented
Tensor.__rmatmul__ = lambda self, other: matmul(other, self) if isinstance(other, Tensor) \
    else NotImplemented


# ------------------------------------------------------------------------ addmm and friends
def _scaled_sum(name: str, input: Tensor, prod: Any, factors: tuple, factor_grads: Any,
                beta: Any, alpha: Any, out: Tensor | None) -> Tensor:
    """``beta * input + alpha * prod`` for the ``add*`` family, with its autograd.

    ``input`` broadcasts to ``prod``'s shape (never the other way round). With ``beta=0`` the
    input is ignored, NaNs included, as in torch. ``factor_grads(g)`` maps the gradient of
    ``prod`` to the gradients of ``factors``.
    """
    inp = input._data
    if inp.shape != prod.shape:
        _check_expand(inp.shape, prod.shape)
    dt = D._BY_NP[prod.dtype]
    res = prod if alpha == 1 else prod * checked_scalar(alpha, dt)  # overflow: error, like torch
    if beta != 0:
        res = res + (inp if beta == 1 else inp * checked_scalar(beta, dt))
    res = wrap(res, input._device)
    if needs_grad(input, *factors):
        shape = inp.shape

        def backward(g: Tensor) -> tuple:
            gi = sum_to(g if beta == 1 else g * beta, shape) if _rg(input) else None
            return (gi, *factor_grads(g if alpha == 1 else g * alpha))

        record(name, res, (input, *factors), backward, saved=_crossed(*factors))
    return _to_out(res, out)


def _check_expand(shape: tuple, target: tuple) -> None:
    """``shape`` must broadcast to ``target`` without growing it (torch's expand error)."""
    lead = len(target) - len(shape)
    for i, n in enumerate(shape):
        if lead < 0 or n != 1 and n != target[i + lead]:
            raise RuntimeError(f"The expanded size of the tensor ({target[max(i + lead, 0)]}) must "
                               f"match the existing size ({n}) at non-singleton dimension "
                               f"{max(i + lead, 0)}.  Target sizes: {list(target)}.  Tensor "
                               f"sizes: {list(shape)}")


def _check_input_dtype(input: Tensor, mat: Tensor) -> None:
    if input._data.dtype != mat._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_cap(input.dtype)} "
                           f"and {_cap(mat.dtype)}")


@quietly
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1,
          out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``: a linear layer's ``bias + x @ W.T`` in one call."""
    _require_tensor("addmm", input=input, mat1=mat1, mat2=mat2)
    _check_mm(mat1, mat2)
    _check_input_dtype(input, mat2)
    check_same_device(input, mat1, mat2)
    return _scaled_sum("AddmmBackward0", input, mat1._data @ mat2._data, (mat1, mat2),
                       lambda g: (g.mm(_mT(mat2)) if _rg(mat1) else None,
                                  _mT(mat1).mm(g) if _rg(mat2) else None), beta, alpha, out)


@quietly
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1,
          out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    _require_tensor("addmv", input=input, mat=mat, vec=vec)
    _check_mv(mat, vec, input)
    check_same_device(input, mat, vec)
    return _scaled_sum("AddmvBackward0", input, mat._data @ vec._data, (mat, vec),
                       lambda g: (outer(g, vec) if _rg(mat) else None,
                                  mv(_mT(mat), g) if _rg(vec) else None), beta, alpha, out)


@quietly
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1,
         out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``; unlike ``addmm`` the dtypes promote."""
    _require_tensor("addr", input=input, vec1=vec1, vec2=vec2)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    check_same_device(input, vec1, vec2)
    dt = result_type(input, vec1, vec2)
    # Differentiable casts: each gradient flows back in its own input's dtype.
    input, vec1, vec2 = (t if t.dtype is dt else t.to(dt) for t in (input, vec1, vec2))
    return _scaled_sum("AddrBackward0", input, vec1._data[:, None] * vec2._data, (vec1, vec2),
                       lambda g: (mv(g, vec2) if _rg(vec1) else None,
                                  mv(_mT(g), vec1) if _rg(vec2) else None), beta, alpha, out)


@quietly
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1,
           out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * Σ_b batch1[b] @ batch2[b]``: the batch is summed away."""
    _require_tensor("addbmm", input=input, batch1=batch1, batch2=batch2)
    b1, b2 = batch1._data, batch2._data
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError("batch1 and batch2 must have same number of batches, got "
                           f"{b1.shape[0]} and {b2.shape[0]}")
    if b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and "
                           f"{b2.shape[1]}x{b2.shape[2]})")
    if b1.dtype != b2.dtype:
        raise RuntimeError(f"expected scalar type {_cap(batch1.dtype)} but found "
                           f"{_cap(batch2.dtype)}")
    _check_input_dtype(input, batch2)
    _not_for_bool(batch1, "addbmm")
    dev = check_same_device(input, batch1, batch2)
    prod = xp_for(dev).tensordot(b1, b2, axes=((0, 2), (0, 1)))
    return _scaled_sum("AddbmmBackward0", input, prod, (batch1, batch2),
                       lambda g: (g.matmul(_mT(batch2)) if _rg(batch1) else None,
                                  _mT(batch1).matmul(g) if _rg(batch2) else None),
                       beta, alpha, out)


@quietly
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1,
            out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)`` (attention scores with a bias)."""
    _require_tensor("baddbmm", input=input, batch1=batch1, batch2=batch2)
    _check_bmm(batch1, batch2)
    if input._data.dtype != batch1._data.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_C_NAMES[input.dtype.name]}"
                           f", batch1: {_C_NAMES[batch1.dtype.name]}, batch2: "
                           f"{_C_NAMES[batch2.dtype.name]}")
    check_same_device(input, batch1, batch2)
    return _scaled_sum("BaddbmmBackward0", input, batch1._data @ batch2._data, (batch1, batch2),
                       lambda g: (g.bmm(_mT(batch2)) if _rg(batch1) else None,
                                  _mT(batch1).bmm(g) if _rg(batch2) else None),
                       beta, alpha, out)


# ------------------------------------------------------------------------ outer, inner, kron
def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``input[i] * vec2[j]``: a column times a row, with type promotion like ``*``."""
    _require_tensor("outer", input=input, vec2=vec2)
    for name, v in (("self", input), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    return _to_out(input.unsqueeze(1) * vec2, out)


ger = outer


def inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Sum over the last dimension of both: ``out[..a, ..b] = Σ_k input[..a, k] * other[..b, k]``."""
    _require_tensor("inner", input=input, other=other)
    if input._data.ndim == 0 or other._data.ndim == 0:
        return _to_out(input * other, out)
    if input._data.dtype != other._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input._data.shape)} and {list(other._data.shape)}")
    return _to_out(tensordot(input, other, dims=([-1], [-1])), out)


def kron(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Kronecker product: every element of ``input`` scales a whole copy of ``other``.

    With both padded to the same rank ``n``, ``input`` is reshaped to ``(a0, 1, a1, 1, ...)`` and
    ``other`` to ``(1, b0, 1, b1, ...)``; their broadcast product reshaped to ``(a0*b0, ...)``
    is the answer (and ``*`` supplies promotion and autograd).
    """
    _require_tensor("kron", input=input, other=other)
    n = builtins.max(input._data.ndim, other._data.ndim)
    sa = (1,) * (n - input._data.ndim) + tuple(input._data.shape)
    sb = (1,) * (n - other._data.ndim) + tuple(other._data.shape)
    a = input.reshape([s for x in sa for s in (x, 1)])
    b = other.reshape([s for x in sb for s in (1, x)])
    return _to_out((a * b).reshape([x * y for x, y in zip(sa, sb, strict=True)]), out)


# ------------------------------------------------------------------------ einsum, tensordot
_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def einsum(*args: Any) -> Tensor:
    """Einstein summation: ``einsum('ij,jk->ik', a, b)`` is ``a @ b``.

    Each operand's dimensions get letters; letters shared between operands are multiplied
    together, letters missing from the output are summed. Operands may be passed as varargs
    or as one list, and ``...`` stands for broadcast batch dimensions. The backward of an
    einsum is again an einsum: swap the output's subscripts with one operand's.
    """
    equation, operands = _einsum_args(args)
    shapes = [tuple(t._data.shape) for t in operands]
    subs, out_sub = _parse_einsum(equation, shapes)
    return _einsum(subs, out_sub, operands, _letter_sizes(subs, shapes))


def _einsum_args(args: tuple) -> tuple[str, list]:
    """Accept ``(equation, *operands)``, ``(equation, [operands])`` or torch's sublist form."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
        for op in ops:
            if not isinstance(op, Tensor):
                raise TypeError(f"einsum(): expected Tensor operands, got {type(op).__name__}")
        return args[0], ops
    # Sublist form: einsum(op0, [0, 1], op1, [1, 2], [0, 2]) with integers (or Ellipsis).
    ops, terms = list(args[0::2]), list(args[1::2])
    out = None
    if len(args) % 2:
        out, ops = ops[-1], ops[:-1]

    def letters(sub: Sequence) -> str:
        return "".join("..." if s is Ellipsis else _LETTERS[s] for s in sub)

    eq = ",".join(letters(t) for t in terms) + ("" if out is None else "->" + letters(out))
    return eq, ops


def _parse_einsum(equation: str, shapes: list) -> tuple[list[str], str]:
    """Per-operand subscripts and the output's, with every ``...`` replaced by letters."""
    for i, c in enumerate(equation):
        if not (c in _LETTERS or c in " .,->"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    free = [c for c in _LETTERS if c not in equation]
    n_ell = builtins.max([len(s) - len(t) + 3 for t, s in zip(terms, shapes, strict=True) if "..." in t],
                         default=0)
    ell = "".join(free[:n_ell])
    subs = []
    for i, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        if "..." in term:
            n = len(shape) - (len(term) - 3)
            if n < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                                   f"({len(term) - 3}) is more than the number of dimensions "
                                   f"({len(shape)}) for operand {i}")
            term = term.replace("...", ell[n_ell - n:])
        elif len(term) != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)}) "
                               f"does not match the number of dimensions ({len(shape)}) for "
                               f"operand {i} and no ellipsis was given")
        subs.append(term)
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if not any(c in sub for sub in subs):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the "
                                   "equation for any input operand")
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                   "the output")
    else:  # implicit output: the batch dims, then letters used exactly once, alphabetically
        counts = collections.Counter(lhs.replace(".", "").replace(",", ""))
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    return subs, out


def _letter_sizes(subs: list, shapes: list) -> dict:
    """Each letter's size; a size of 1 broadcasts against any other."""
    sizes: dict = {}
    for i, (sub, shape) in enumerate(zip(subs, shapes, strict=True)):
        seen: dict = {}
        for c, n in zip(sub, shape, strict=True):
            if c in seen and seen[c] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the "
                                   f"sizes don't match, {seen[c]} != {n}")
            seen[c] = n
            prev = sizes.get(c, 1)
            if n != 1 and prev != 1 and n != prev:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which "
                                   f"does not broadcast with previously seen size {prev}")
            sizes[c] = builtins.max(prev, n) if n != 1 else prev
    return sizes


@quietly
def _einsum(subs: list, out_sub: str, operands: list, sizes: dict) -> Tensor:
    """Run an explicit einsum (no ``...``; ``sizes`` maps letters to sizes) with autograd."""
    dt = operands[0]._data.dtype
    for t in operands[1:]:
        if t._data.dtype != dt:
            raise RuntimeError(f"expected scalar type {_cap(operands[0].dtype)} but found "
                               f"{_cap(t.dtype)}")
    if len(operands) > 1 and dt == np.bool_:
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    dev = check_same_device(*operands)
    arrays = [t._data for t in operands]
    eq = ",".join(subs) + "->" + out_sub
    # optimize=True lets NumPy contract pairs with BLAS (tensordot) instead of its C loops.
    arr = xp_for(dev).einsum(eq, *arrays, optimize=len(arrays) > 1)
    single_view = len(arrays) == 1 and getattr(arr, "base", None) is not None
    res = make_view(operands[0], arr) if single_view else wrap(arr, dev)
    if needs_grad(*operands):
        # an operand is read by the gradients of the *other* operands only
        saved = tuple(op for i, op in enumerate(operands)
                      if any(o._requires_grad for j, o in enumerate(operands) if j != i))
        record(_einsum_node_name(subs, out_sub), res, tuple(operands),
               lambda g: _einsum_grads(g, subs, out_sub, operands, sizes), saved=saved)
    return res


def _einsum_node_name(subs: list, out_sub: str) -> str:
    """The node torch's einsum ends with (it is made of permutes, a product and views): a letter
    summed away ends one operand in a sum (``SumBackward1``, else it is a permuted view) and
    several in a bmm and its view (``ViewBackward0``, else they meet in a broadcast product)."""
    summed = bool(set("".join(subs)) - set(out_sub))
    if len(subs) == 1:
        return "SumBackward1" if summed else "PermuteBackward0"
    return "ViewBackward0" if summed else "MulBackward0"


def _einsum_grads(g: Tensor, subs: list, out_sub: str, operands: list, sizes: dict) -> tuple:
    """The gradient of operand ``i`` is the einsum of ``g`` with all the *other* operands,
    written into operand ``i``'s subscripts. Two fixes make every equation work:

    * a letter that no other term has (it was summed away, or only broadcast there) comes
      from a vector of ones of its size;
    * a repeated letter (``'ii'``, a diagonal) gets a fresh letter plus an identity matrix
      linking the two, since an einsum output cannot repeat a letter.
    """
    grads = []
    used = set("".join(subs) + out_sub)
    fresh = (c for c in _LETTERS if c not in used)
    for i, (sub, op) in enumerate(zip(subs, operands, strict=True)):
        if not op._requires_grad:
            grads.append(None)
            continue
        terms = [out_sub] + [s for j, s in enumerate(subs) if j != i]
        ops = [g] + [o for j, o in enumerate(operands) if j != i]
        have = _letter_sizes(terms, [tuple(t._data.shape) for t in ops])
        xp, dev, dt = xp_for(op._device), op._device, g._data.dtype
        target = ""
        for c, n in zip(sub, op._data.shape, strict=True):
            if c in target:  # repeated: diagonal through an identity matrix
                new = next(fresh)
                terms.append(c + new)
                ops.append(wrap(xp.eye(n, dtype=dt), dev))
                target += new
                continue
            if have.get(c, 1) < sizes[c]:
                terms.append(c)
                ops.append(wrap(xp.ones(sizes[c], dtype=dt), dev))
                have[c] = sizes[c]
            target += c
        grad = _einsum(terms, target, ops, _letter_sizes(terms, [t.shape for t in ops]))
        grads.append(sum_to(grad, op._data.shape))
    return tuple(grads)


@quietly
def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Tensor | None = None) -> Tensor:
    """Contract ``dims`` dimensions of ``a`` with ``dims`` dimensions of ``b``.

    ``dims=d`` pairs the last ``d`` dims of ``a`` with the first ``d`` of ``b``; ``dims=([..],
    [..])`` names them. Built as an einsum: shared letters for contracted dims.
    """
    _require_tensor("tensordot", a=a, b=b)
    na, nb = a._data.ndim, b._data.ndim
    da, db = _tensordot_dims(dims, na, nb)
    for x, y in zip(da, db, strict=True):
        if a._data.shape[x] != b._data.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a._data.shape[x]} in dim {x} and second has size "
                               f"{b._data.shape[y]} in dim {y}")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")
    sa = _LETTERS[:na]
    sb = list(_LETTERS[na:na + nb])
    for x, y in zip(da, db, strict=True):
        sb[y] = sa[x]
    sb = "".join(sb)
    out_sub = "".join(c for i, c in enumerate(sa) if i not in da) + \
        "".join(c for i, c in enumerate(sb) if i not in db)
    shapes = [tuple(a._data.shape), tuple(b._data.shape)]
    return _to_out(_einsum([sa, sb], out_sub, [a, b], _letter_sizes([sa, sb], shapes)), out)


def _tensordot_dims(dims: Any, na: int, nb: int) -> tuple[list, list]:
    if isinstance(dims, Tensor):
        dims = dims.item() if dims._data.ndim == 0 else dims.tolist()
    if isinstance(dims, numbers.Integral):
        d = int(dims)
        if d < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={d}")
        if d > na or d > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={d}")
        return list(range(na - d, na)), list(range(d))
    da, db = dims
    da = [da] if isinstance(da, numbers.Integral) else list(da)
    db = [db] if isinstance(db, numbers.Integral) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    return [wrap_dim(d, na) for d in da], [wrap_dim(d, nb) for d in db]


# ------------------------------------------------------------------------ matrix functions
def _check_square(t: Tensor, fn: str) -> None:
    if t._data.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got "
                           f"{_cap(t.dtype)}")
    if t.dtype is D.float16:
        raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got Half")
    n, m = t._data.shape[-2:]
    if n != m:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {n} by {m} "
                           "matrices")


def inverse(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``A⁻¹`` of a square matrix (or a batch); ``LinAlgError`` when A is singular.

    Backward: from ``A A⁻¹ = I`` follows ``d(A⁻¹) = -A⁻¹ dA A⁻¹``, so
    ``grad_A = -A⁻ᵀ g A⁻ᵀ``.
    """
    _check_square(input, "linalg.inv")
    xp = xp_for(input._device)
    try:
        arr = xp.linalg.inv(input._data)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.inv: The diagonal element is zero, the inversion could not be "
                          "completed because the input matrix is singular.") from None
    res = wrap(arr, input._device)
    if needs_grad(input):
        inv = SavedOutput(res)

        def backward(g: Tensor) -> tuple:
            r = inv()
            return (-(_mT(r).matmul(g).matmul(_mT(r))),)

        record("LinalgInvExBackward0", res, (input,), backward, saved=(inv,))
    return _to_out(res, out)


def det(input: Tensor) -> Tensor:
    """Determinant of a square matrix (or a batch).

    Backward: ``grad_A = g · adj(A)ᵀ``, the transposed adjugate, which is ``det(A) · A⁻ᵀ`` when A
    is invertible; a singular A has an adjugate too (no inverse needed), so its gradient is finite.
    """
    _check_square(input, "linalg.det")
    res = wrap(xp_for(input._device).linalg.det(input._data), input._device)
    if needs_grad(input):
        out = SavedOutput(res)
        record("LinalgDetBackward0", res, (input,),
               lambda g: (g.unsqueeze(-1).unsqueeze(-1) * _cofactors(input, out()),),
               saved=(input, out))
    return res


def _cofactors(A: Tensor, d: Tensor) -> Tensor:
    """``adj(A)ᵀ``, the matrix of cofactors of each matrix of A, given ``d = det(A)``."""
    if bool((d._data != 0).all()):
        try:
            return d.unsqueeze(-1).unsqueeze(-1) * _mT(inverse(A))
        except LinAlgError:  # numerically singular after all
            pass
    n = A._data.shape[-1]
    xp, dev = xp_for(A._device), A._device
    if n == 1:
        return wrap(xp.ones(A._data.shape, dtype=A._data.dtype), dev)
    if STATE.enabled:
        # create_graph: cofactor expansion, (-1)^(i+j) det(A without row i and column j), made of
        # differentiable ops (n² determinants of (n-1)x(n-1) minors; only for singular inputs)
        keep = np.array([[j for j in range(n) if j != i] for i in range(n)])
        rows = wrap(xp.asarray(keep[:, None, :, None]), dev)
        cols = wrap(xp.asarray(keep[None, :, None, :]), dev)
        sign = wrap(xp.asarray((-1.0) ** np.add.outer(np.arange(n), np.arange(n)),
                               dtype=A._data.dtype), dev)
        return det(A[..., rows, cols]) * sign
    # From the SVD A = U S Vᵀ: adj(A)ᵀ = det(U) det(Vᵀ) · U diag(prod of the other s) Vᵀ,
    # which needs no division by a singular value.
    u, sv, vh = xp.linalg.svd(A._data)
    before = xp.cumprod(xp.concatenate([xp.ones_like(sv[..., :1]), sv[..., :-1]], -1), -1)
    after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([sv[..., 1:], xp.ones_like(sv[..., :1])],
                                                      -1), -1), -1), -1)
    scale = (xp.linalg.det(u) * xp.linalg.det(vh))[..., None, None]
    return wrap(scale * (u * (before * after)[..., None, :]) @ vh, dev)


_Slogdet = collections.namedtuple("slogdet", ["sign", "logabsdet"])


def slogdet(input: Tensor) -> Any:
    """``(sign, log|det A|)``: the determinant without overflow for large matrices."""
    _check_square(input, "linalg.slogdet")
    sign, logabs = xp_for(input._device).linalg.slogdet(input._data)
    sign_t = wrap(sign, input._device)
    logabs_t = wrap(logabs, input._device)
    if needs_grad(input):
        record("LinalgSlogdetBackward0", logabs_t, (input,),
               lambda g: (g.unsqueeze(-1).unsqueeze(-1) * _mT(inverse(input)),), saved=(input,))
    return _Slogdet(sign_t, logabs_t)


def logdet(input: Tensor) -> Tensor:
    """``log(det A)``: NaN where the determinant is negative, ``-inf`` where it is zero."""
    _check_square(input, "logdet")
    sign, logabs = xp_for(input._device).linalg.slogdet(input._data)
    res = wrap(xp_for(input._device).where(sign < 0, np.nan, logabs), input._device)
    if needs_grad(input):
        record("LogdetBackward0", res, (input,),
               lambda g: (g.unsqueeze(-1).unsqueeze(-1) * _mT(inverse(input)),), saved=(input,))
    return res


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (integers sum to int64, like ``sum``)."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    _not_for_bool(input, "trace")
    dt = np.int64 if input.dtype._cat == D._INT else None
    res = wrap(xp_for(input._device).trace(input._data, dtype=dt), input._device)
    if needs_grad(input):
        n, m = input._data.shape
        eye = wrap(xp_for(input._device).eye(n, m, dtype=input._data.dtype), input._device)
        record("TraceBackward0", res, (input,), lambda g: (g * eye,))
    return res


def cross(input: Tensor, other: Tensor, dim: int | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3).

    Backward: ``a × b`` is linear in each factor, ``grad_a = b × g`` and ``grad_b = g × a``.
    """
    _require_tensor("cross", input=input, other=other)
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    dev = check_same_device(input, other)
    a, b = input._data, other._data
    if a.dtype != b.dtype:
        dt = result_type(input, other).np
        a, b = a.astype(dt), b.astype(dt)
    shape = np.broadcast_shapes(a.shape, b.shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=2)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = wrap_dim(dim, len(shape))
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    res = wrap(xp_for(dev).cross(a, b, axis=d), dev)
    if needs_grad(input, other):
        sa, sb = a.shape, b.shape
        record("LinalgCrossBackward0", res, (input, other),
               lambda g: (sum_to(cross(other, g, d), sa) if _rg(input) else None,
                          sum_to(cross(g, input, d), sb) if _rg(other) else None),
               saved=(input, other))
    return _to_out(res, out)


def cholesky(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """``L`` with ``A = L Lᵀ`` for a symmetric positive-definite ``A`` (``Lᵀ`` if ``upper``).

    Backward (Murray 2016): with ``Φ`` = lower triangle with a halved diagonal,
    ``grad_A = ½ (S + Sᵀ)`` where ``S = L⁻ᵀ Φ(Lᵀ g_L) L⁻¹``.
    """
    _check_square(input, "cholesky")
    try:
        arr = xp_for(input._device).linalg.cholesky(input._data)
    except np.linalg.LinAlgError:
        raise LinAlgError("cholesky: The factorization could not be completed because the input "
                          "is not positive-definite.") from None
    low = wrap(arr, input._device)
    if needs_grad(input):
        saved_low = SavedOutput(low)
        record("LinalgCholeskyExBackward0", low, (input,),
               lambda g: (_cholesky_grad(saved_low(), g),), saved=(saved_low,))
    return _mT(low) if upper else _to_out(low, out)


def _cholesky_grad(low: Tensor, g: Tensor) -> Tensor:
    n = low._data.shape[-1]
    xp, dev = xp_for(low._device), low._device
    dt = low._data.dtype
    phi = wrap(xp.tril(xp.ones((n, n), dtype=dt)) - 0.5 * xp.eye(n, dtype=dt), dev)
    inv = inverse(low)
    s = _mT(inv).matmul(_mT(low).matmul(g) * phi).matmul(inv)
    return (s + _mT(s)) * 0.5


def _triangular_arrays(xp: Any, a: Any, b: Any, upper: bool, unit: bool) -> Any:
    """Solve ``T X = B`` with ``T`` the chosen triangle of ``a`` (batched, broadcast)."""
    t = xp.triu(a) if upper else xp.tril(a)
    if unit:
        n = a.shape[-1]
        t = t - t * xp.eye(n, dtype=t.dtype) + xp.eye(n, dtype=t.dtype)
    try:
        return xp.linalg.solve(t, b)
    except np.linalg.LinAlgError:  # a zero pivot: substitute row by row, as a triangular solver does
        shape = np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:]
        x = xp.zeros(shape, dtype=t.dtype)
        with quiet():
            for i in (range(t.shape[-1] - 1, -1, -1) if upper else range(t.shape[-1])):
                done = (t[..., i, :, None] * x).sum(-2)
                x[..., i, :] = (b[..., i, :] - done) / t[..., i, i, None]
        return x


def _check_factor(L: Tensor, fn: str) -> None:
    if L._data.ndim < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    n, m = L._data.shape[-2:]
    if n != m:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {n} by {m} "
                           "matrices")


def _cholesky_solve_arrays(xp: Any, b: Any, factor: Any, upper: bool) -> Any:
    """``A⁻¹ b`` for ``A = L Lᵀ`` (``Uᵀ U`` if ``upper``): a lower, then an upper triangular solve."""
    low = xp.swapaxes(factor, -1, -2) if upper else factor
    y = _triangular_arrays(xp, low, b, False, False)
    return _triangular_arrays(xp, xp.swapaxes(low, -1, -2), y, True, False)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *,
                   out: Tensor | None = None) -> Tensor:
    """``X`` with ``A X = B`` (``B = input``) from the Cholesky factor ``input2`` of ``A``
    (``A = L Lᵀ``, or ``Uᵀ U`` if ``upper``): two triangular solves, no inverse.

    Backward (torch's formula): ``g_B = A⁻¹ g``, then with ``S = g_B Xᵀ + X g_Bᵀ``,
    ``g_L = -S L`` (``-U S`` for an upper factor).
    """
    B, L = input, input2
    check_same_device(B, L)
    if B._data.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B._data.ndim} dimensions "
                           "instead")
    if L._data.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L._data.ndim} dimensions "
                           "instead")
    n, m = L._data.shape[-2:]
    if n != m:
        raise RuntimeError(f"A must be batches of square matrices, but they are {n} by {m} matrices")
    if B._data.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {n} by "
                           f"{n} but each b matrix is {B._data.shape[-2]} by {B._data.shape[-1]}")
    if B.dtype != L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{_cap(B.dtype)} and A of type {_cap(L.dtype)} instead.")
    if B._data.dtype.kind not in "fc" or B._data.dtype.itemsize < 4:
        raise NotImplementedError(f'"cholesky_solve_cpu" not implemented for \'{_cap(B.dtype)}\'')
    try:
        np.broadcast_shapes(B._data.shape[:-2], L._data.shape[:-2])
    except ValueError:
        broadcast_error(B._data.shape[:-2], L._data.shape[:-2])
    X = wrap(_cholesky_solve_arrays(xp_for(B._device), B._data, L._data, upper), B._device)
    if needs_grad(B, L):
        sb, sl = tuple(B.shape), tuple(L.shape)
        saved = SavedOutput(X)

        def backward(g: Tensor) -> tuple:
            gB = cholesky_solve(g, L, upper)
            gL = None
            if _rg(L):
                common = gB.matmul(_mT(saved()))
                common = common + _mT(common)
                gL = sum_to(-(L.matmul(common) if upper else common.matmul(L)), sl)
            return (sum_to(gB, sb) if _rg(B) else None), gL

        record("CholeskySolveBackward0", X, (B, L), backward,
               saved=(L, saved) if _rg(L) else (L,))
    return _to_out(X, out)


def cholesky_inverse(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """``A⁻¹`` from the Cholesky factor of ``A`` (``A = L Lᵀ``, or ``Uᵀ U`` if ``upper``).

    Backward (torch's formula): with ``S = A⁻¹ (g + gᵀ) A⁻¹``, ``g_L = -S L`` (``-U S``)."""
    L = input
    _check_factor(L, "cholesky_inverse")
    if L._data.dtype.kind not in "fc" or L._data.dtype.itemsize < 4:
        raise NotImplementedError(f'"cholesky_inverse_out_cpu" not implemented for '
                                  f"'{_cap(L.dtype)}'")
    xp, n = xp_for(L._device), L._data.shape[-1]
    diag = xp.diagonal(L._data, axis1=-2, axis2=-1)
    if bool((diag == 0).any()):
        raise LinAlgError(f"cholesky_inverse: The diagonal element {int((diag == 0).argmax(-1).max()) + 1}"
                          " is zero, the inversion could not be completed because the input matrix "
                          "is singular.")
    eye_n = xp.broadcast_to(xp.eye(n, dtype=L._data.dtype), L._data.shape)
    res = wrap(_cholesky_solve_arrays(xp, eye_n, L._data, upper), L._device)
    if needs_grad(L):
        saved = SavedOutput(res)

        def backward(g: Tensor) -> tuple:
            inv = saved()
            common = inv.matmul((g + _mT(g)).matmul(inv))
            return (-(L.matmul(common) if upper else common.matmul(L)),)

        record("CholeskyInverseBackward0", res, (L,), backward, saved=(L, saved))
    return _to_out(res, out)


# ------------------------------------------------------------------------ methods
for _name in ("dot", "vdot", "mv", "mm", "bmm", "matmul", "addmm", "addmv", "addr", "addbmm",
              "baddbmm", "outer", "ger", "inner", "kron", "inverse", "det", "logdet", "slogdet",
              "trace", "cross", "cholesky", "cholesky_solve", "cholesky_inverse"):
    tensor_method(_name)(globals()[_name])


# ------------------------------------------------------------------------ in-place versions
def _register_inplace() -> None:
    """``addmm_``, ``addmv_``, ``addr_``, ``addbmm_``, ``baddbmm_``: the result written into self."""
    for name in ("addmm", "addmv", "addr", "addbmm", "baddbmm"):
        tensor_method(name + "_")(_inplace_version(globals()[name]))


_register_inplace()
