"""BLAS/LAPACK against the torch oracle: products (every matmul rank case), einsum, tensordot,
inverse/det/solve, norms — forward values, dtypes, gradients and errors."""

import numpy as np
import pytest
from oracle import Case, check, check_raises, randn

import mytorch
import mytorch.linalg  # noqa: F401  (until mytorch/__init__.py imports it)


def spd(n, batch=(), seed=0):
    """A well-conditioned symmetric positive-definite float64 matrix (or batch)."""
    m = randn(*batch, n, n, dtype=np.float64, seed=seed)
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def wellcond(*shape, seed=1):
    """A random float64 matrix safely away from singular: I·n + noise."""
    n = shape[-1]
    return randn(*shape, dtype=np.float64, seed=seed) + n * np.eye(n)


def ints(*shape, lo=-4, hi=5, dtype=np.int64, seed=3):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)


# ------------------------------------------------------------------------ products
PRODUCTS = [
    Case("dot", lambda t, a, b: t.dot(a, b), [randn(5), randn(5, seed=1)]),
    Case("dot-method", lambda t, a, b: a.dot(b), [randn(5), randn(5, seed=1)]),
    Case("vdot", lambda t, a, b: t.vdot(a, b), [randn(4), randn(4, seed=1)]),
    Case("mv", lambda t, a, b: t.mv(a, b), [randn(3, 4), randn(4)]),
    Case("mm", lambda t, a, b: t.mm(a, b), [randn(3, 4), randn(4, 5)]),
    Case("mm-f64", lambda t, a, b: a.mm(b), [randn(3, 4, dtype=np.float64), randn(4, 2, dtype=np.float64)]),
    Case("mm-empty", lambda t, a, b: t.mm(a, b), [randn(0, 3), randn(3, 2)]),
    Case("bmm", lambda t, a, b: t.bmm(a, b), [randn(2, 3, 4), randn(2, 4, 5)]),
    Case("mm-transposed-input", lambda t, a, b: t.mm(a.transpose(0, 1), b), [randn(4, 3), randn(4, 5)]),
    Case("addmm", lambda t, i, a, b: t.addmm(i, a, b), [randn(3, 5), randn(3, 4), randn(4, 5)]),
    Case("addmm-beta-alpha", lambda t, i, a, b: t.addmm(i, a, b, beta=0.5, alpha=-2),
         [randn(3, 5), randn(3, 4), randn(4, 5)]),
    Case("addmm-bias-row", lambda t, i, a, b: t.addmm(i, a, b), [randn(5), randn(3, 4), randn(4, 5)]),
    Case("addmm-bias-col", lambda t, i, a, b: i.addmm(a, b, alpha=3),
     [randn(3, 1), randn(3, 4), randn(4, 5)]),
    Case("addmm-beta0", lambda t, i, a, b: t.addmm(i, a, b, beta=0), [randn(3, 5), randn(3, 4), randn(4, 5)]),
    Case("addmv", lambda t, i, a, b: t.addmv(i, a, b, beta=2), [randn(3), randn(3, 4), randn(4)]),
    Case("addmv-scalar-input", lambda t, i, a, b: t.addmv(i, a, b), [randn(1), randn(3, 4), randn(4)]),
    Case("addr", lambda t, i, a, b: t.addr(i, a, b, alpha=0.5), [randn(3, 4), randn(3), randn(4)]),
    Case("addbmm", lambda t, i, a, b: t.addbmm(i, a, b, beta=0.5, alpha=2),
         [randn(3, 5), randn(2, 3, 4), randn(2, 4, 5)]),
    Case("baddbmm", lambda t, i, a, b: t.baddbmm(i, a, b, alpha=0.5),
         [randn(2, 3, 5), randn(2, 3, 4), randn(2, 4, 5)]),
    Case("baddbmm-bcast-input", lambda t, i, a, b: i.baddbmm(a, b, beta=2),
         [randn(3, 5), randn(2, 3, 4), randn(2, 4, 5)]),
    Case("outer", lambda t, a, b: t.outer(a, b), [randn(3), randn(4)]),
    Case("ger", lambda t, a, b: t.ger(a, b), [randn(3), randn(4)]),
    Case("inner-2d", lambda t, a, b: t.inner(a, b), [randn(2, 3), randn(4, 3)]),
    Case("inner-1d", lambda t, a, b: t.inner(a, b), [randn(3), randn(3, seed=5)]),
    Case("inner-0d", lambda t, a, b: t.inner(a, b), [randn(), randn(2, 3)]),
    Case("kron", lambda t, a, b: t.kron(a, b), [randn(2, 3), randn(4, 2)]),
    Case("kron-ranks", lambda t, a, b: t.kron(a, b), [randn(2, 3), randn(4)]),
    Case("tensordot-2", lambda t, a, b: t.tensordot(a, b), [randn(2, 3, 4), randn(3, 4, 5)]),
    Case("tensordot-1", lambda t, a, b: t.tensordot(a, b, dims=1), [randn(2, 3, 4), randn(4, 5)]),
    Case("tensordot-0", lambda t, a, b: t.tensordot(a, b, dims=0), [randn(2, 3), randn(4)]),
    Case("tensordot-lists", lambda t, a, b: t.tensordot(a, b, dims=([1, 2], [1, 0])),
         [randn(2, 3, 4), randn(4, 3, 5)]),
    Case("tensordot-neg", lambda t, a, b: t.tensordot(a, b, dims=([-1], [0])), [randn(2, 3, 4), randn(4, 5)]),
]

# Every rank combination of matmul: 1-D promotion and batch broadcasting.
MATMUL_SHAPES = [
    ("1x1", (4,), (4,)), ("2x1", (3, 4), (4,)), ("1x2", (4,), (4, 5)), ("2x2", (3, 4), (4, 5)),
    ("3x1", (2, 3, 4), (4,)), ("1x3", (4,), (2, 4, 5)), ("3x2", (2, 3, 4), (4, 5)),
    ("2x3", (3, 4), (2, 4, 5)), ("3x3", (2, 3, 4), (2, 4, 5)), ("3x3-bcast", (1, 3, 4), (2, 4, 5)),
    ("4x3", (2, 1, 3, 4), (5, 4, 2)), ("4x2", (2, 2, 3, 4), (4, 1)), ("1x4", (3,), (2, 2, 3, 2)),
]
MATMUL = [Case(f"matmul-{n}", lambda t, a, b: t.matmul(a, b), [randn(*sa), randn(*sb, seed=7)])
          for n, sa, sb in MATMUL_SHAPES]
MATMUL += [Case("matmul-operator", lambda t, a, b: a @ b, [randn(2, 3, 4), randn(4, 5)]),
           Case("matmul-method", lambda t, a, b: a.matmul(b), [randn(3), randn(3, 2)])]


@pytest.mark.parametrize("case", PRODUCTS + MATMUL, ids=str)
def test_products(case):
    check(case)


# Integer products work on the CPU; dtype rules differ per op (mm: same dtype; outer/addr: promote).
DTYPES = [
    Case("mm-int64", lambda t, a, b: t.mm(a, b), [ints(3, 4), ints(4, 2)]),
    Case("mm-int32", lambda t, a, b: a @ b, [ints(3, 4, dtype=np.int32), ints(4, 2, dtype=np.int32)]),
    Case("matmul-int-batched", lambda t, a, b: a @ b, [ints(2, 3, 4), ints(4,)]),
    Case("dot-int", lambda t, a, b: t.dot(a, b), [ints(5), ints(5, seed=4)]),
    Case("addmm-int", lambda t, i, a, b: t.addmm(i, a, b, beta=2, alpha=3),
     [ints(2, 4), ints(2, 3), ints(3, 4)]),
    Case("addr-promotes", lambda t, i, a, b: t.addr(i, a, b), [ints(2, 3), randn(2), randn(3)]),
    Case("addr-bool", lambda t, i, a, b: t.addr(i, a, b), [ints(2, 3, lo=0, hi=2).astype(bool),
                                                           ints(2, lo=0, hi=2).astype(bool),
                                                           ints(3, lo=0, hi=2).astype(bool)]),
    Case("outer-int-bool", lambda t, a, b: t.outer(a, b), [ints(2), ints(3, lo=0, hi=2).astype(bool)]),
    Case("kron-promotes", lambda t, a, b: t.kron(a, b), [randn(2, 2), ints(2)]),
    Case("einsum-int", lambda t, a, b: t.einsum("ij,jk->ik", a, b), [ints(2, 3), ints(3, 4)]),
    Case("trace-int", lambda t, a: t.trace(a), [ints(3, 4)]),
    Case("trace-int32", lambda t, a: a.trace(), [ints(3, 3, dtype=np.int32)]),
]


@pytest.mark.parametrize("case", DTYPES, ids=str)
def test_dtypes(case):
    check(case)


# ------------------------------------------------------------------------ einsum
EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("i,j->ij", [(3,), (4,)]),
    ("...ij->...ji", [(2, 3, 4)]), ("ij->", [(2, 3)]), ("ij->j", [(2, 3)]),
    ("ij,jk", [(2, 3), (3, 4)]), ("ba,ab", [(2, 3), (3, 2)]), ("ji", [(2, 3)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]), ("ij,ij->ij", [(2, 3), (1, 3)]),
    ("ij,j->i", [(2, 3), (1,)]), ("bii->bi", [(2, 3, 3)]), ("iij->j", [(2, 2, 3)]),
    ("i,i->", [(4,), (4,)]), (",i->i", [(), (3,)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij->ij", [(2, 3)]), ("Ab,bC->AC", [(2, 3), (3, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(eq, shapes):
    check(Case(eq, lambda t, *ops: t.einsum(eq, *ops),
               [randn(*s, seed=i) for i, s in enumerate(shapes)]))


def test_einsum_operand_list_and_sublist():
    a, b = randn(2, 3), randn(3, 4)
    check(Case("list", lambda t, x, y: t.einsum("ij,jk->ik", [x, y]), [a, b]))
    check(Case("sublist", lambda t, x, y: t.einsum(x, [0, 1], y, [1, 2], [0, 2]), [a, b]))


def test_einsum_diagonal_is_a_view_like_torch():
    a = mytorch.tensor([[1.0, 2.0], [3.0, 4.0]])
    d = mytorch.einsum("ii->i", a)
    assert d._base is not None
    a.mul_(2)
    assert d.tolist() == [2.0, 8.0]


def test_einsum_double_backward():
    a = mytorch.tensor(randn(3, 3, dtype=np.float64), requires_grad=True)
    b = mytorch.tensor(randn(3, 3, dtype=np.float64, seed=2), requires_grad=True)
    (ga,) = mytorch.autograd.grad(mytorch.einsum("ij,jk->", a * a, b), (a,), create_graph=True)
    ga.sum().backward()
    # d/db of sum_ij 2 a_ij * sum_k b_jk = 2 * column sums of a, broadcast over k
    expected = 2 * a.detach().numpy().sum(0)[:, None] * np.ones((1, 3))
    np.testing.assert_allclose(b.grad.numpy(), expected, rtol=1e-12)


# ------------------------------------------------------------------------ matrix functions
MATRIX = [
    Case("inverse", lambda t, a: t.inverse(a), [wellcond(4, 4)], atol=1e-9, rtol=1e-9),
    Case("inverse-batch", lambda t, a: a.inverse(), [wellcond(2, 3, 3)], atol=1e-9, rtol=1e-9),
    Case("linalg.inv", lambda t, a: t.linalg.inv(a), [wellcond(3, 3)], atol=1e-9, rtol=1e-9),
    Case("inverse-f32", lambda t, a: t.inverse(a), [wellcond(3, 3).astype(np.float32)], atol=1e-5),
    Case("inverse-empty", lambda t, a: t.inverse(a), [np.zeros((0, 0))]),
    Case("det", lambda t, a: t.det(a), [wellcond(4, 4)], atol=1e-9, rtol=1e-9),
    Case("det-batch", lambda t, a: a.det(), [wellcond(3, 3, 3)], atol=1e-9, rtol=1e-9),
    Case("linalg.det", lambda t, a: t.linalg.det(a), [wellcond(3, 3)], atol=1e-9, rtol=1e-9),
    Case("det-empty", lambda t, a: t.det(a), [np.zeros((0, 0))], grad=False),
    Case("slogdet", lambda t, a: t.slogdet(-a), [wellcond(3, 3)], atol=1e-9, rtol=1e-9),
    Case("linalg.slogdet", lambda t, a: t.linalg.slogdet(a), [wellcond(2, 3, 3)], atol=1e-9, rtol=1e-9),
    Case("logdet", lambda t, a: t.logdet(a), [spd(3)], atol=1e-9, rtol=1e-9),
    Case("logdet-negative-det", lambda t, a: t.logdet(a), [np.diag([-1.0, 2.0])], grad=False),
    Case("trace", lambda t, a: t.trace(a), [randn(3, 4)]),
    Case("trace-method", lambda t, a: a.trace(), [randn(3, 3)]),
    Case("cross", lambda t, a, b: t.cross(a, b, dim=1), [randn(2, 3), randn(2, 3, seed=1)]),
    Case("cross-bcast", lambda t, a, b: t.linalg.cross(a, b), [randn(4, 3), randn(1, 3, seed=1)]),
    Case("linalg.cholesky", lambda t, a: t.linalg.cholesky(a), [spd(4)], atol=1e-9, rtol=1e-9),
    Case("linalg.cholesky-upper", lambda t, a: t.linalg.cholesky(a, upper=True), [spd(3, (2,))],
         atol=1e-9, rtol=1e-9),
    Case("solve", lambda t, a, b: t.linalg.solve(a, b), [wellcond(3, 3), randn(3, 2, dtype=np.float64)],
         atol=1e-9, rtol=1e-9),
    Case("solve-vector", lambda t, a, b: t.linalg.solve(a, b), [wellcond(3, 3), randn(3, dtype=np.float64)],
         atol=1e-9, rtol=1e-9),
    Case("solve-batch-vector", lambda t, a, b: t.linalg.solve(a, b),
         [wellcond(2, 3, 3), randn(2, 3, dtype=np.float64)], atol=1e-9, rtol=1e-9),
    Case("solve-right", lambda t, a, b: t.linalg.solve(a, b, left=False),
         [wellcond(3, 3), randn(2, 3, dtype=np.float64)], atol=1e-9, rtol=1e-9),
    # only the chosen triangle of A is read (and gets a gradient); batch dims broadcast
    Case("solve_triangular-lower", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
         [wellcond(3, 3), randn(3, 2, dtype=np.float64)], atol=1e-9, rtol=1e-9),
    Case("solve_triangular-upper-bcast", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=True),
         [wellcond(4, 3, 3), randn(2, 1, 3, 2, dtype=np.float64)], atol=1e-9, rtol=1e-9),
    Case("solve_triangular-right-unit", lambda t, a, b: t.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True),
         [wellcond(3, 3), randn(2, 3, dtype=np.float64)], atol=1e-9, rtol=1e-9),
    Case("solve_triangular-B-cast-to-A", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=True),
         [wellcond(3, 3).astype(np.float32), randn(3, 1, dtype=np.float64)], atol=1e-5),
    # cholesky_solve / cholesky_inverse from a factor (its gradient is torch's, not kept triangular)
    Case("cholesky_solve", lambda t, b, L: t.cholesky_solve(b, L), [randn(3, 2, dtype=np.float64),
                                                                  np.linalg.cholesky(spd(3))],
         atol=1e-9, rtol=1e-9),
    Case("cholesky_solve-upper-bcast", lambda t, b, U: b.cholesky_solve(U, upper=True),
         [randn(4, 1, 3, 2, dtype=np.float64), np.linalg.cholesky(spd(3, (2,))).swapaxes(-1, -2).copy()],
         atol=1e-9, rtol=1e-9),
    Case("cholesky_inverse", lambda t, L: t.cholesky_inverse(L), [np.linalg.cholesky(spd(4))],
         atol=1e-9, rtol=1e-9),
    Case("cholesky_inverse-upper-batch", lambda t, U: U.cholesky_inverse(True),
         [np.linalg.cholesky(spd(3, (2,))).swapaxes(-1, -2).copy()], atol=1e-9, rtol=1e-9),
    Case("cholesky_solve-zero-factor", lambda t, b, L: t.cholesky_solve(b, L),
         [np.ones((3, 1)), np.zeros((3, 3))], grad=False),
    Case("solve_triangular-zero-pivot", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
         [np.zeros((2, 2)), np.ones((2, 1))], grad=False),
]


@pytest.mark.parametrize("case", MATRIX, ids=str)
def test_matrix_functions(case):
    check(case)


NORMS = [
    Case("vector_norm", lambda t, a: t.linalg.vector_norm(a), [randn(3, 4)]),
    Case("vector_norm-ord-dim", lambda t, a: t.linalg.vector_norm(a, 3, dim=1, keepdim=True), [randn(3, 4)]),
    Case("vector_norm-inf", lambda t, a: t.linalg.vector_norm(a, float("inf"), dim=-1), [randn(3, 4)]),
    Case("matrix_norm-fro", lambda t, a: t.linalg.matrix_norm(a), [randn(2, 3, 4)]),
    Case("matrix_norm-1", lambda t, a: t.linalg.matrix_norm(a, 1), [randn(3, 4)]),
    Case("matrix_norm-inf", lambda t, a: t.linalg.matrix_norm(a, -float("inf"), keepdim=True), [randn(3, 4)]),
    Case("matrix_norm-nuc", lambda t, a: t.linalg.matrix_norm(a, "nuc"), [randn(2, 3, 4, dtype=np.float64)],
         atol=1e-9, rtol=1e-9),
    Case("matrix_norm-2", lambda t, a: t.linalg.matrix_norm(a, 2, dim=(0, 2)),
     [randn(3, 2, 4, dtype=np.float64)],
         atol=1e-9, rtol=1e-9),
    Case("matrix_norm--2", lambda t, a: t.linalg.matrix_norm(a, -2), [randn(3, 3, dtype=np.float64)],
         atol=1e-9, rtol=1e-9),
    Case("norm-default", lambda t, a: t.linalg.norm(a), [randn(2, 3, 4)]),
    Case("norm-dim-int", lambda t, a: t.linalg.norm(a, dim=1), [randn(2, 3, 4)]),
    Case("norm-ord-2d", lambda t, a: t.linalg.norm(a, 1), [randn(3, 4)]),
    Case("norm-ord-1d", lambda t, a: t.linalg.norm(a, 1), [randn(4)]),
]


@pytest.mark.parametrize("case", NORMS, ids=str)
def test_norms(case):
    check(case)


# ------------------------------------------------------------------------ errors
f, i64 = randn, ints
ERRORS = [
    ("dot-2d", lambda t, a, b: t.dot(a, b), [f(2, 2), f(2, 2)], "1D tensors expected, but got 2D and 2D"),
    ("dot-dtype", lambda t, a, b: t.dot(a, b), [f(2), i64(2)],
     "expected both vectors to have same dtype, but found Float and Long"),
    ("dot-size", lambda t, a, b: t.dot(a, b), [f(2), f(3)], "inconsistent tensor size"),
    ("dot-bool", lambda t, a, b: t.dot(a, b), [i64(3) > 0, i64(3) > 0], "not implemented for 'Bool'"),
    ("vdot-2d", lambda t, a, b: t.vdot(a, b), [f(2, 2), f(2, 2)], "1D tensors expected"),
    ("mv-size", lambda t, a, b: t.mv(a, b), [f(2, 3), f(4)],
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("mv-rank", lambda t, a, b: t.mv(a, b), [f(2, 3), f(3, 1)], "vector + matrix @ vector expected"),
    ("mv-dtype", lambda t, a, b: t.mv(a, b), [f(2, 3), i64(3)], "must have the same dtype"),
    ("mm-shapes", lambda t, a, b: t.mm(a, b), [f(2, 3), f(4, 5)],
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("mm-1d", lambda t, a, b: t.mm(a, b), [f(3), f(3, 4)], "self must be a matrix"),
    ("mm-dtype", lambda t, a, b: t.mm(a, b), [f(2, 3), i64(3, 4)],
     "expected m1 and m2 to have the same dtype, but got: float != long int"),
    ("mm-bool", lambda t, a, b: t.mm(a, b), [i64(2, 3) > 0, i64(3, 4) > 0], "not implemented for 'Bool'"),
    ("bmm-2d", lambda t, a, b: t.bmm(a, b), [f(2, 3), f(3, 5)], "batch1 must be a 3D tensor"),
    ("bmm-sizes", lambda t, a, b: t.bmm(a, b), [f(2, 2, 3), f(3, 3, 5)],
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]."),
    ("bmm-dtype", lambda t, a, b: t.bmm(a, b), [f(2, 2, 3), i64(2, 3, 5)],
     "expected scalar type Float but found Long"),
    ("matmul-0d", lambda t, a, b: t.matmul(a, b), [f(), f(3)],
     "need to be at least 1D, but they are 0D and 1D"),
    ("matmul-1x1", lambda t, a, b: t.matmul(a, b), [f(3), f(4)], "inconsistent tensor size"),
    ("matmul-2x1", lambda t, a, b: a @ b, [f(2, 3), f(4)],
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    ("matmul-1x2", lambda t, a, b: a @ b, [f(3), f(4, 5)], "(1x3 and 4x5)"),
    ("matmul-3x2", lambda t, a, b: a @ b, [f(2, 2, 3), f(4, 5)], "(4x3 and 4x5)"),
    ("matmul-bcast", lambda t, a, b: a @ b, [f(2, 2, 3), f(3, 3, 5)],
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"),
    ("matmul-dtype", lambda t, a, b: a @ b, [f(2, 3), i64(3, 4)], "float != long int"),
    ("matmul-dtype-1d", lambda t, a, b: a @ b, [f(3), i64(3)], "found Float and Long"),
    ("matmul-scalar", lambda t, a: a @ 2, [f(3)], "unsupported operand"),
    ("addmm-input-shape", lambda t, i, a, b: t.addmm(i, a, b), [f(3, 4), f(2, 3), f(3, 4)],
     "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0"),
    ("addmm-input-dtype", lambda t, i, a, b: t.addmm(i, a, b), [i64(2, 4), f(2, 3), f(3, 4)],
     "self and mat2 must have the same dtype, but got Long and Float"),
    ("addmm-positional-beta", lambda t, i, a, b: t.addmm(i, a, b, 2, 3), [f(2, 4), f(2, 3), f(3, 4)], ""),
    ("addmv-input", lambda t, i, a, b: t.addmv(i, a, b), [f(3), f(2, 3), f(3)], "size mismatch"),
    ("addr-2d", lambda t, i, a, b: t.addr(i, a, b), [f(2, 3), f(2, 1), f(3)], "Expected 1-D argument vec1"),
    ("addbmm-batches", lambda t, i, a, b: t.addbmm(i, a, b), [f(2, 5), f(3, 2, 4), f(2, 4, 5)],
     "must have same number of batches, got 3 and 2"),
    ("addbmm-sizes", lambda t, i, a, b: t.addbmm(i, a, b), [f(2, 5), f(3, 2, 4), f(3, 3, 5)],
     "Incompatible matrix sizes for bmm (2x4 and 3x5)"),
    ("baddbmm-input", lambda t, i, a, b: t.baddbmm(i, a, b), [f(2, 2, 5), f(3, 2, 4), f(3, 4, 5)],
     "expanded size"),
    ("outer-2d", lambda t, a, b: t.outer(a, b), [f(2, 2), f(3)], "Expected 1-D argument self, but got 2-D"),
    ("inner-last-dim", lambda t, a, b: t.inner(a, b), [f(2, 3), f(4, 4)], "the last dimension must match"),
    ("inner-dtype", lambda t, a, b: t.inner(a, b), [f(2, 3), i64(4, 3)],
     "both inputs should have same dtype"),
    ("tensordot-lists", lambda t, a, b: t.tensordot(a, b, dims=([1], [1, 0])), [f(2, 3, 4), f(4, 3, 5)],
     "both dimension lists should have same length"),
    ("tensordot-sizes", lambda t, a, b: t.tensordot(a, b, dims=([1], [0])), [f(2, 3, 4), f(4, 3, 5)],
     "contracted dimensions need to match, but first has size 3 in dim 1 and second has size 4 in dim 0"),
    ("tensordot-neg", lambda t, a, b: t.tensordot(a, b, dims=-1), [f(2, 3), f(3, 2)], "dims >= 0"),
    ("tensordot-too-many", lambda t, a, b: t.tensordot(a, b, dims=3), [f(2, 3, 4), f(4, 5)], "dims=3"),
    ("einsum-size", lambda t, a, b: t.einsum("ij,jk->ik", a, b), [f(2, 3), f(4, 4)],
     "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    ("einsum-few-ops", lambda t, a: t.einsum("ij,jk->ik", a), [f(2, 3)], "fewer operands"),
    ("einsum-many-ops", lambda t, a, b: t.einsum("ij->ij", a, b), [f(2, 3), f(2, 3)], "more operands"),
    ("einsum-ndim", lambda t, a, b: t.einsum("ijk,jk->ik", a, b), [f(2, 3), f(3, 4)],
     "number of subscripts in the equation (3) does not match the number of dimensions (2)"),
    ("einsum-dtype", lambda t, a, b: t.einsum("ij,jk->ik", a, b), [f(2, 3), i64(3, 4)],
     "expected scalar type Float but found Long"),
    ("einsum-char", lambda t, a, b: t.einsum("i1,jk->ik", a, b), [f(2, 3), f(3, 4)],
     "invalid subscript given at index 1"),
    ("einsum-out-missing", lambda t, a: t.einsum("ij->k", a), [f(2, 3)],
     "output subscript k does not appear"),
    ("einsum-out-twice", lambda t, a: t.einsum("ij->ii", a), [f(2, 3)], "appears more than once"),
    ("einsum-diag-sizes", lambda t, a: t.einsum("ii->i", a), [f(2, 3)], "sizes don't match, 2 != 3"),
    ("einsum-no-operands", lambda t: t.einsum("i"), [], "must specify the equation string"),
    ("inverse-nonsquare", lambda t, a: t.inverse(a), [f(2, 3)], "A must be batches of square matrices"),
    ("inverse-1d", lambda t, a: t.inverse(a), [f(3)], "at least 2 dimensions"),
    ("inverse-int", lambda t, a: t.inverse(a), [i64(3, 3)], "Expected a floating point or complex tensor"),
    ("inverse-half", lambda t, a: t.inverse(a), [f(3, 3).astype(np.float16)], "Half"),
    ("det-int", lambda t, a: t.det(a), [i64(3, 3)], "Expected a floating point or complex tensor"),
    ("det-nonsquare", lambda t, a: t.det(a), [f(3, 2)], "3 by 2 matrices"),
    ("trace-3d", lambda t, a: t.trace(a), [f(3, 4, 2)], "expected a matrix, but got tensor with dim 3"),
    ("trace-bool", lambda t, a: t.trace(a), [i64(3, 3) > 0], "not implemented for 'Bool'"),
    ("cross-no-3", lambda t, a, b: t.cross(a, b), [f(2, 4), f(2, 4)], "no dimension of size 3"),
    ("norm-3d-ord", lambda t, a: t.linalg.norm(a, 2), [f(2, 3, 4)], "must be 1D or 2D"),
    ("cholesky_solve-1d-b", lambda t, b, L: t.cholesky_solve(b, L), [f(3), f(3, 3)],
     "b should have at least 2 dimensions, but has 1 dimensions instead"),
    ("cholesky_solve-1d-L", lambda t, b, L: t.cholesky_solve(b, L), [f(3, 2), f(3)],
     "u should have at least 2 dimensions, but has 1 dimensions instead"),
    ("cholesky_solve-nonsquare", lambda t, b, L: t.cholesky_solve(b, L), [f(3, 2), f(2, 3)],
     "A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("cholesky_solve-sizes", lambda t, b, L: t.cholesky_solve(b, L), [f(4, 2), f(3, 3)],
     "Incompatible matrix sizes for cholesky_solve: each A matrix is 3 by 3 but each b matrix is 4 by 2"),
    ("cholesky_solve-dtypes", lambda t, b, L: t.cholesky_solve(b.double(), L), [f(3, 2), f(3, 3)],
     "Expected b and A to have the same dtype, but found b of type Double and A of type Float instead."),
    ("cholesky_solve-int", lambda t, b, L: t.cholesky_solve(b, L), [i64(3, 2), i64(3, 3)],
     "\"cholesky_solve_cpu\" not implemented for 'Long'"),
    ("cholesky_solve-batches", lambda t, b, L: t.cholesky_solve(b, L), [f(2, 3, 2), f(1, 3, 3, 3)],
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"),
    ("cholesky_inverse-1d", lambda t, L: t.cholesky_inverse(L), [f(3)],
     "cholesky_inverse: The input tensor A must have at least 2 dimensions."),
    ("cholesky_inverse-nonsquare", lambda t, L: t.cholesky_inverse(L), [f(2, 3)],
     "cholesky_inverse: A must be batches of square matrices, but they are 2 by 3 matrices"),
    ("cholesky_inverse-int", lambda t, L: t.cholesky_inverse(L), [i64(3, 3)],
     "\"cholesky_inverse_out_cpu\" not implemented for 'Long'"),
    ("solve_triangular-1d-A", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
     [f(3), f(3, 2)], "The input tensor A must have at least 2 dimensions."),
    ("solve_triangular-nonsquare", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
     [i64(3, 2), f(3, 2)], "A must be batches of square matrices, but they are 3 by 2 matrices"),
    ("solve_triangular-1d-B", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
     [f(3, 3), f(3)], "The input tensor B must have at least 2 dimensions."),
    ("solve_triangular-shapes", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
     [f(3, 3), f(4, 2)], "Incompatible shapes of A and B for the equation AX = B (3x3 and 4x2)"),
    ("solve_triangular-shapes-right",
     lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False, left=False),
     [f(3, 3), f(4, 2)], "Incompatible shapes of A and B for the equation XA = B (3x3 and 4x2)"),
    ("solve_triangular-int", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
     [i64(3, 3), f(3, 2)], "\"triangular_solve_cpu\" not implemented for 'Long'"),
    ("solve_triangular-half", lambda t, a, b: t.linalg.solve_triangular(a, b, upper=False),
     [f(3, 3).astype(np.float16), f(3, 2)], "not implemented for 'Half'"),
]


@pytest.mark.parametrize("name,fn,inputs,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn, inputs, msg):
    err = check_raises(fn, *inputs)
    assert msg in str(err), f"message {str(err)!r} lacks {msg!r}"


# torch raises its own torch.linalg.LinAlgError (a RuntimeError); ours is mytorch.linalg's.
LINALG_ERRORS = [
    ("inverse-singular", lambda t, a: t.inverse(a), [np.zeros((3, 3))], "singular"),
    ("linalg.inv-singular", lambda t, a: t.linalg.inv(a), [np.ones((2, 3, 3))], "singular"),
    ("cholesky-not-pd", lambda t, a: t.linalg.cholesky(a), [-np.eye(3)], "positive-definite"),
    ("solve-singular", lambda t, a, b: t.linalg.solve(a, b), [np.zeros((2, 2)), np.ones(2)], "singular"),
    ("cholesky_inverse-zero-diagonal", lambda t, L: t.cholesky_inverse(L), [np.array([[1.0, 0], [1, 0]])],
     "The diagonal element 2 is zero, the inversion could not be completed"),
]


@pytest.mark.parametrize("name,fn,inputs,msg", LINALG_ERRORS, ids=[e[0] for e in LINALG_ERRORS])
def test_linalg_errors(name, fn, inputs, msg):
    import torch
    with pytest.raises(torch.linalg.LinAlgError):
        fn(torch, *[torch.from_numpy(x) for x in inputs])
    with pytest.raises(mytorch.linalg.LinAlgError, match=msg):
        fn(mytorch, *[mytorch.from_numpy(x) for x in inputs])
    assert issubclass(mytorch.linalg.LinAlgError, RuntimeError)


def test_cholesky_solve_and_inverse_nodes_and_double_backward():
    import torch
    L0 = np.linalg.cholesky(spd(3))
    grads = []
    for lib in (mytorch, torch):
        L = lib.tensor(L0, requires_grad=True)
        x = lib.cholesky_solve(lib.ones(3, 1, dtype=lib.float64), L)
        inv = lib.cholesky_inverse(L)
        names = [n.name() if lib is mytorch else type(n).__name__ for n in (x.grad_fn, inv.grad_fn)]
        assert names == ["CholeskySolveBackward0", "CholeskyInverseBackward0"]
        (g,) = lib.autograd.grad(x.pow(2).sum() + inv.sum(), L, create_graph=True)
        g.pow(2).sum().backward()
        grads.append(L.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)


def test_solve_triangular_node_and_double_backward():
    import torch
    """One ``LinalgSolveTriangularBackward0`` node; its backward is differentiable."""
    a0 = np.tril(np.random.default_rng(3).standard_normal((3, 3))) + 3 * np.eye(3)
    grads = []
    for lib in (mytorch, torch):
        a = lib.tensor(a0, requires_grad=True)
        x = lib.linalg.solve_triangular(a, lib.ones(3, 1, dtype=lib.float64), upper=False)
        assert x.grad_fn.name() == "LinalgSolveTriangularBackward0"
        (g,) = lib.autograd.grad(x.pow(2).sum(), a, create_graph=True)
        g.sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_grad_fn_names():
    a = mytorch.randn(3, 4, requires_grad=True)
    assert (a @ mytorch.randn(4, 2)).grad_fn.name() == "MmBackward0"
    assert (a @ mytorch.randn(4)).grad_fn.name() == "MvBackward0"
    assert mytorch.addmm(mytorch.randn(3, 2), a, mytorch.randn(4, 2)).grad_fn.name() == "AddmmBackward0"


# ------------------------------------------------------------------------ same BLAS call
@pytest.mark.parametrize("n", [64, 257])
def test_matmul_is_the_plain_numpy_product(n):
    """``a @ b`` is bit-for-bit NumPy's product (no casts or copies that change rounding).

    Speed itself is measured by ``make bench``, never asserted in a test.
    """
    a, b = randn(n, n), randn(n, n, seed=1)
    out = mytorch.from_numpy(a) @ mytorch.from_numpy(b)
    assert out.dtype is mytorch.float32
    np.testing.assert_array_equal(out.numpy(), a @ b)


@pytest.mark.parametrize("eq, shapes", [
    ("bij,bjd->bid", [(2, 3, 3), (2, 3, 4)]), ("bid,de,bje->bij", [(2, 3, 4), (4, 4), (2, 3, 4)]),
    ("ij,ij->", [(2, 3), (2, 3)]), ("ij,jk->ki", [(2, 3), (3, 2)]), ("bi,bj->bij", [(2, 3), (2, 4)]),
    ("ij,j->ij", [(2, 3), (3,)]), ("bii->b", [(2, 3, 3)]), ("ij->j", [(2, 3)]), ("ii->i", [(3, 3)]),
    ("ij->ji", [(2, 3)])])
def test_einsum_grad_fn_is_torchs_last_node(eq, shapes):
    """torch's einsum is made of permutes, a mul or bmm, views and sums: its output's node."""
    import torch
    names = []
    for lib in (mytorch, torch):
        ops = [lib.ones(s, requires_grad=True) for s in shapes]
        names.append(lib.einsum(eq, *ops).grad_fn.name())
    assert names[0] == names[1]
