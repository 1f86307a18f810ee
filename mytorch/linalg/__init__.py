"""``torch.linalg``: matrix functions with NumPy-style names (``inv``, ``det``, ``norm``, ...).

Most are the same kernels as the older top-level functions (``torch.inverse`` is
``torch.linalg.inv``); this namespace adds ``solve`` and the norms. Failures to factorise a
matrix raise :class:`LinAlgError`, a ``RuntimeError`` subclass, as in torch.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import return_types as _return_types
from .._device import xp_for
from .._ops import reduction as _reduction
from .._ops._operands import check_same_device
from .._ops._variants import _to_out
from .._ops.linalg import LinAlgError, _check_square, _mT, _rg, _triangular_arrays, inverse, matmul
from .._ops.linalg import cholesky as _cholesky
from .._ops.linalg import cross as _cross
from .._ops.linalg import det as _det
from .._ops.linalg import slogdet as _slogdet
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.graph import SavedOutput, needs_grad, record, record_outputs, sum_to

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "cross",
           "matmul",
           "norm", "vector_norm", "matrix_norm", "svd", "svdvals", "pinv"]


def inv(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``A⁻¹``; raises :class:`LinAlgError` for a singular matrix."""
    return inverse(A, out=out)


def det(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Determinant of a square matrix or a batch of them."""
    return _to_out(_det(A), out)


def slogdet(A: Tensor, *, out: Any = None) -> Any:
    """``(sign, logabsdet)`` with ``det A = sign · exp(logabsdet)``."""
    return _slogdet(A)


def cholesky(A: Tensor, *, upper: bool = False, out: Tensor | None = None) -> Tensor:
    """Lower-triangular ``L`` with ``A = L Lᴴ`` (``Lᴴ`` when ``upper=True``)."""
    return _to_out(_cholesky(A, upper), out)


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """Cross product along ``dim`` (default: the last dimension, unlike ``torch.cross``)."""
    return _cross(input, other, dim, out=out)


# ------------------------------------------------------------------------ solve
def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Tensor | None = None) -> Tensor:
    """``X`` with ``A X = B`` (``X A = B`` if ``left=False``), without forming ``A⁻¹``.

    ``B`` is a vector (or a batch of vectors) when it has one dimension less than ``A``.
    """
    if not left:
        return _to_out(_mT(solve(_mT(A), _mT(B))), out)
    _check_square(A, "linalg.solve")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    X = _solve(A, B.unsqueeze(-1) if vector else B)
    return _to_out(X.squeeze(-1) if vector else X, out)


def _solve(A: Tensor, B: Tensor) -> Tensor:
    """Matrix right-hand sides. Backward: ``g_B = A⁻ᵀ g`` (one more solve), ``g_A = -g_B Xᵀ``."""
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A.dtype} and B of type {B.dtype} instead")
    if A.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B"
                           f" ({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    try:
        arr = xp_for(A._device).linalg.solve(A._data, B._data)
    except np.linalg.LinAlgError:
        raise LinAlgError("linalg.solve: The solver failed because the input matrix is "
                          "singular.") from None
    X = wrap(arr, A._device)
    if needs_grad(A, B):
        sa, sb = tuple(A.shape), tuple(B.shape)
        out = SavedOutput(X)  # the solution, kept without a reference cycle through X

        def backward(g: Tensor) -> tuple:
            gB = _solve(_mT(A), g)
            return (sum_to(-gB.matmul(_mT(out())), sa) if _rg(A) else None,
                    sum_to(gB, sb) if _rg(B) else None)

        record("LinalgSolveExBackward0", X, (A, B), backward,
               saved=(A, out) if _rg(A) else (A,))
    return X


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Tensor | None = None) -> Tensor:
    """``X`` with ``A X = B`` (``X A = B`` if ``left=False``) for a triangular ``A``: only its
    upper (``upper=True``) or lower triangle is read, and its diagonal is taken as ones when
    ``unitriangular``. Batch dimensions broadcast. A zero on the diagonal gives inf/nan, no error.

    Backward: ``g_B`` solves the system of ``Aᴴ`` (the other triangle); ``g_A = -g_B Xᴴ``
    (``-Xᴴ g_B`` on the right), restricted to the triangle that was read.
    """
    name = "linalg.solve_triangular"
    check_same_device(A, B)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    n, m = A.shape[-2:]
    if n != m:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {n} by {m} "
                           "matrices")
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    if A._data.dtype.kind not in "fc" or A._data.dtype.itemsize < 4:  # the kernel's types: A's
        raise NotImplementedError(f'"triangular_solve_cpu" not implemented for \'{_cap_name(A.dtype)}\'')
    a, b = A._data, B._data.astype(A._data.dtype, copy=False)  # B is cast to A's dtype
    xp = xp_for(A._device)
    if left:
        arr = _triangular_arrays(xp, a, b, upper, unitriangular)
    else:  # X A = B  <=>  Aᵀ Xᵀ = Bᵀ, whose matrix has the other triangle
        arr = xp.swapaxes(_triangular_arrays(xp, xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2),
                                             not upper, unitriangular), -1, -2)
    X = wrap(arr, A._device)
    if needs_grad(A, B):
        sa, sb = tuple(A.shape), tuple(B.shape)
        saved = SavedOutput(X)

        def backward(g: Tensor) -> tuple:
            gB = solve_triangular(_mT(A), g, upper=not upper, left=left,
                                  unitriangular=unitriangular)
            gA = None
            if _rg(A):
                gA = -gB.matmul(_mT(saved())) if left else -_mT(saved()).matmul(gB)
                gA = gA.triu(int(unitriangular)) if upper else gA.tril(-int(unitriangular))
                gA = sum_to(gA, sa).to(A.dtype)
            return gA, (sum_to(gB, sb).to(B.dtype) if _rg(B) else None)

        record("LinalgSolveTriangularBackward0", X, (A, B), backward,
               saved=(A, saved) if _rg(A) else (A,))
    return _to_out(X, out)


# ------------------------------------------------------------------------ norms
def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """``(Σ |x|^ord)^(1/ord)`` over ``dim`` (every element by default); ``ord`` may be ±inf or 0."""
    return _to_out(_reduction.vector_norm(x, ord, dim, keepdim, dtype=dtype), out)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """Norm of each matrix in ``dim``: ``'fro'``, ``'nuc'``, ±1 (column sums), ±inf (row sums),
    ±2 (largest/smallest singular value)."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(str(d) for d in dim)}")
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        res = _reduction.vector_norm(A, 2, (d0, d1), keepdim)
    elif ord in (1, -1, math.inf, -math.inf):
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(dim=inner, keepdim=True)
        res = (sums.amax if ord > 0 else sums.amin)(dim=outer, keepdim=True)
        if not keepdim:
            res = res.squeeze((d0, d1))
    elif ord in ("nuc", 2, -2):
        res = _singular_norm(A, ord, d0, d1, keepdim)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return _to_out(res, out)


def _singular_norm(A: Tensor, ord: Any, d0: int, d1: int, keepdim: bool) -> Tensor:
    """Norms from the singular values σ: ``'nuc'`` = Σσ, ``2`` = max σ, ``-2`` = min σ.

    As in torch, a reduction of the S of a differentiable SVD: the gradient is ``U diag(g) Vᵀ``
    on the singular vectors used, and it can be differentiated again (through ``U`` and ``V``).
    """
    M = A.movedim((d0, d1), (-2, -1))
    s = _svd(M)[1]
    res = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    if keepdim:
        for d in sorted((d0, d1)):
            res = res.unsqueeze(d)
    return res


def _svd(A: Tensor) -> tuple:
    """``U, S, Vh`` with ``A = U diag(S) Vh`` (reduced), as one graph node with three outputs."""
    xp, dev = xp_for(A._device), A._device
    u, s, vh = (wrap(a, dev) for a in xp.linalg.svd(A._data, full_matrices=False))
    if needs_grad(A):
        saved = (SavedOutput(u, 0), SavedOutput(s, 1), SavedOutput(vh, 2))
        record_outputs("LinalgSvdBackward0", (u, s, vh), (A,),
                       lambda grads: (_svd_backward(*grads, *(t() for t in saved)),), saved)
    return u, s, vh


def _svd_backward(gU: Any, gS: Any, gVh: Any, U: Tensor, S: Tensor, Vh: Tensor) -> Tensor:
    """The gradient of ``A`` from those of ``U, S, Vh`` (real matrices), with differentiable ops.

    ``gA = U [(skew(UᵀgU) S + S skew(VᵀgV)) / E + diag(gS)] Vᵀ + (I - UUᵀ) gU S⁻¹ Vᵀ`` with
    ``skew(X) = X - Xᵀ`` and ``E_jk = S_k² - S_j²`` (1 on the diagonal); a wide A is handled as its
    transpose. Only the singular values' part is needed when only ``gS`` is given.
    """
    if gU is None and gVh is None:
        return U.matmul(gS.unsqueeze(-1) * Vh) if gS is not None else U.matmul(Vh) * 0
    m, n = U.shape[-2], Vh.shape[-1]
    if m < n:  # Aᵀ = V S Uᵀ
        return _mT(_svd_backward(None if gVh is None else _mT(gVh), gS,
                                 None if gU is None else _mT(gU), _mT(Vh), S, _mT(U)))
    V = _mT(Vh)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    E = E + wrap(xp_for(E._device).eye(E.shape[-1], dtype=E._data.dtype), E._device)
    inner = None
    if gU is not None:
        UtgU = _mT(U).matmul(gU)
        inner = (UtgU - _mT(UtgU)) * S.unsqueeze(-2)
    if gVh is not None:
        VtgV = _mT(V).matmul(_mT(gVh))
        term = S.unsqueeze(-1) * (VtgV - _mT(VtgV))
        inner = term if inner is None else inner + term
    inner = inner / E
    if gS is not None:
        inner = inner + gS.diag_embed()
    gA = U.matmul(inner).matmul(Vh)
    if gU is not None and m > n:
        gA = gA + (gU - U.matmul(_mT(U).matmul(gU))).div(S.unsqueeze(-2)).matmul(Vh)
    return gA


# ------------------------------------------------------------------------ SVD and pseudo-inverse
def _check_float_matrix(A: Tensor, name: str) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_cap_name(A.dtype)}")


def _cap_name(dt: Any) -> str:
    """torch's ScalarType name (``Float``, ``Long``...), as its error messages print it."""
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "float16": "Half", "float32": "Float", "float64": "Double",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble", "uint16": "UInt16",
            "uint32": "UInt32", "uint64": "UInt64"}.get(dt.name, dt.name)


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None,
        out: Any = None) -> Any:
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``: singular values in descending order.

    With ``full_matrices=True`` (the default) ``U`` is ``m×m`` and ``Vh`` ``n×n``; the extra
    columns span the null spaces and are not unique (the gradient ignores them, as torch's).
    Singular vectors are unique only up to sign: compare ``U diag(S) Vh``, not ``U`` itself.
    """
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    _check_float_matrix(A, "linalg.svd")
    xp, dev = xp_for(A._device), A._device
    u, s, vh = (wrap(a, dev) for a in xp.linalg.svd(A._data, full_matrices=full_matrices))
    if needs_grad(A):
        k = s.shape[-1]
        saved = (SavedOutput(u, 0), SavedOutput(s, 1), SavedOutput(vh, 2))

        def backward(grads: list) -> tuple:
            gU, gS, gVh = grads
            U, S, Vh = (t() for t in saved)
            if full_matrices:   # only the first k singular vectors are determined by A
                U, Vh = U[..., :k], Vh[..., :k, :]
                gU = None if gU is None else gU[..., :k]
                gVh = None if gVh is None else gVh[..., :k, :]
            return (_svd_backward(gU, gS, gVh, U, S, Vh),)

        record_outputs("LinalgSvdBackward0", (u, s, vh), (A,), backward, saved)
    return _return_types.linalg_svd(u, s, vh)


def svdvals(A: Tensor, *, driver: str | None = None, out: Tensor | None = None) -> Tensor:
    """The singular values of ``A`` (or of each matrix of a batch), largest first."""
    _check_float_matrix(A, "linalg.svd")
    if needs_grad(A):
        return _to_out(_svd(A)[1], out)
    s = xp_for(A._device).linalg.svd(A._data, compute_uv=False)
    return _to_out(wrap(s, A._device), out)


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
         out: Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse: ``V diag(1/σ) Uᴴ`` over the singular values σ above
    ``max(atol, rtol · σ_max)`` (smaller ones count as zero).

    ``rtol`` defaults to ``eps · max(m, n)`` (0 when only ``atol > 0`` is given). With
    ``hermitian=True`` an eigendecomposition is used instead of the SVD.
    """
    if A.ndim < 2 or not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"linalg.pinv({_cap_name(A.dtype)}{{{list(A.shape)}}}): expected a "
                           "tensor with 2 or more dimensions of float, double, cfloat or cdouble "
                           "types")
    xp, a = xp_for(A._device), A._data
    real = np.finfo(a.dtype).dtype
    default_rtol = np.finfo(real).eps * max(a.shape[-1], a.shape[-2])
    atol_a = 0.0 if atol is None else _tol_array(atol, xp)
    if rtol is None:
        rtol_a = xp.where(xp.asarray(atol_a) > 0, 0.0, default_rtol) if atol is not None \
            else default_rtol
    else:
        rtol_a = _tol_array(rtol, xp)
    if hermitian:
        w, u = xp.linalg.eigh(a)
        w_abs = xp.abs(w)
        tol = xp.maximum(atol_a, rtol_a * w_abs.max(-1, keepdims=True)) if w.shape[-1] else 0
        w_inv = xp.where(w_abs > tol, 1 / xp.where(w == 0, 1, w), 0).astype(a.dtype)
        res = (u * w_inv[..., None, :]) @ xp.conj(xp.swapaxes(u, -1, -2))
    else:
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        tol = xp.maximum(atol_a, rtol_a * s[..., :1]) if s.shape[-1] else 0
        s_inv = xp.where(s > tol, 1 / xp.where(s == 0, 1, s), 0).astype(s.dtype)
        res = (xp.conj(xp.swapaxes(vh, -1, -2)) * s_inv[..., None, :]) @ \
            xp.conj(xp.swapaxes(u, -1, -2))
    P = wrap(xp.ascontiguousarray(res.astype(a.dtype, copy=False)), A._device)
    if needs_grad(A):
        out_p = SavedOutput(P)
        record("LinalgPinvBackward0", P, (A,), lambda g: (_pinv_backward(g, out_p(), A),),
               saved=(A, out_p))
    return _to_out(P, out)


@tensor_method("svd")
def _torch_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *,
               out: Any = None) -> Any:
    """``torch.svd``, the older form: ``(U, S, V)`` with ``V`` (not ``Vh``); ``some=False`` gives
    square ``U`` and ``V``. Prefer :func:`torch.linalg.svd`."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        U = wrap(xp_for(input._device).zeros(batch + (m, m), input._data.dtype), input._device)
        V = wrap(xp_for(input._device).zeros(batch + (n, n), input._data.dtype), input._device)
        return _return_types.svd(U, S, V)
    U, S, Vh = svd(input, full_matrices=not some)
    return _return_types.svd(U, S, _mT(Vh))


@tensor_method("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: :func:`pinv` with ``rcond`` as the relative tolerance."""
    return pinv(input, atol=0.0, rtol=rcond)


def _tol_array(tol: Any, xp: Any) -> Any:
    """A tolerance (number or tensor, one per matrix of a batch) as an array that broadcasts
    against the singular values' ``(..., 1)``."""
    if isinstance(tol, Tensor):
        return xp.asarray(tol._data)[..., None]
    return tol


def _pinv_backward(g: Tensor, P: Tensor, A: Tensor) -> Tensor:
    """torch's ``pinv_backward`` (real matrices): the derivative of ``A⁺`` where the rank is
    constant; written for the smaller of ``m×m`` and ``n×n`` products."""
    m, n = A.shape[-2], A.shape[-1]
    Ph, gh = _mT(P), _mT(g)
    if m <= n:
        K = gh.matmul(P)
        KPh = K.matmul(Ph)
        return (-_mT(P.matmul(K)) + KPh - A.matmul(P).matmul(KPh)
                + Ph.matmul(P).matmul(gh - K.matmul(A)))
    K = P.matmul(gh)
    PhK = Ph.matmul(K)
    return (-_mT(K.matmul(P)) + (gh - A.matmul(K)).matmul(P).matmul(Ph) + PhK
            - PhK.matmul(P).matmul(A))


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         out: Tensor | None = None, dtype: Any = None) -> Tensor:
    """A vector norm (``dim`` an int, or a 1-D input) or a matrix norm (``dim`` a pair, or a
    2-D input); with neither ``ord`` nor ``dim``, the 2-norm of all elements."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None:
        if ord is None:
            return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
        if A.ndim not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    if len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype, out=out)
    raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                       f"{list(dim)}")


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
