"""Sparse COO tensors against torch: creation, coalescing, conversions, products and sums, with the
gradients of the values and of the dense operand (duplicated indices included)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mytorch

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]  # (0, 2) appears twice: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0, -2.0]


def _both(fn):
    """``fn(lib)`` for torch and mytorch."""
    return fn(torch), fn(mytorch)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(b.detach().numpy()), a.detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def _coo(lib, values=VAL, size=(3, 3), **kw):
    return lib.sparse_coo_tensor(lib.tensor(IDX), lib.tensor(values, **kw), size)


def test_creation_attributes_and_repr():
    ref, mine = _both(lambda lib: _coo(lib))
    assert mine.layout is mytorch.sparse_coo and repr(mine.layout) == repr(ref.layout)
    assert mine.is_sparse and not mytorch.zeros(2).is_sparse
    assert mine.shape == ref.shape and mine.dim() == ref.dim() == 2 and mine.dtype == mytorch.float32
    assert (mine._nnz(), mine.sparse_dim(), mine.dense_dim()) == (ref._nnz(), ref.sparse_dim(),
                                                                   ref.dense_dim())
    assert mine.is_coalesced() == ref.is_coalesced() is False
    assert repr(mine) == repr(ref)
    _close(ref._indices(), mine._indices())
    with pytest.raises(RuntimeError, match="uncoalesced"):
        mine.indices()
    # the size is inferred from the indices, values may have dense dimensions
    ref, mine = _both(lambda lib: lib.sparse_coo_tensor(lib.tensor(IDX), lib.ones(5, 2)))
    assert mine.shape == ref.shape == (3, 3, 2) and repr(mine) == repr(ref)
    assert isinstance(mine, mytorch.Tensor)


def test_coalesce_to_dense_and_to_sparse():
    ref, mine = _both(lambda lib: _coo(lib).coalesce())
    assert mine.is_coalesced() and repr(mine).split("grad_fn")[0] == repr(ref).split("grad_fn")[0]
    _close(ref.indices(), mine.indices())
    _close(ref.values(), mine.values())
    for r, m in [_both(lambda lib: _coo(lib).to_dense()),
                 _both(lambda lib: lib.sparse_coo_tensor(lib.tensor(IDX), lib.arange(10.).reshape(5, 2),
                                                         (3, 4, 2)).to_dense())]:
        _close(r, m)
    dense = [[0.0, 2.0, 0.0], [3.0, 0.0, -1.0]]
    ref, mine = _both(lambda lib: lib.tensor(dense).to_sparse())
    assert repr(mine) == repr(ref) and mine.is_coalesced()
    ref, mine = _both(lambda lib: lib.tensor([[[0.0, 1.0], [0.0, 0.0]], [[2.0, 0.0], [0.0, 0.0]]])
                      .to_sparse(1))
    assert (mine.sparse_dim(), mine._nnz()) == (ref.sparse_dim(), ref._nnz()) == (1, 2)
    _close(ref.to_dense(), mine.to_dense())
    assert mine.to_dense().to_sparse().to_dense().shape == (2, 2, 2)


@pytest.mark.parametrize("how", ["sparse.mm", "mm", "@", "method"])
def test_sparse_times_dense_forward_and_backward(how):
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(3, 4)).astype(np.float32)
    up = rng.normal(size=(3, 4)).astype(np.float32)
    out = {}
    for lib in (torch, mytorch):
        v = lib.tensor(VAL, requires_grad=True)
        d = lib.tensor(dense, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(IDX), v, (3, 3))
        y = {"sparse.mm": lambda: lib.sparse.mm(s, d), "mm": lambda: lib.mm(s, d),
             "@": lambda: s @ d, "method": lambda: s.mm(d)}[how]()
        (y * lib.tensor(up)).sum().backward()
        out[lib] = y, v.grad, d.grad
    for r, m in zip(out[torch], out[mytorch]):
        _close(r, m)


def test_gradients_through_to_sparse_coalesce_and_sum():
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(3, 3)).astype(np.float32) * (rng.random((3, 3)) > 0.4)
    res = {}
    for lib in (torch, mytorch):
        x = lib.tensor(x0, requires_grad=True)
        v = lib.tensor(VAL, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(IDX), v, (3, 3))
        loss = (lib.sparse.mm(x.to_sparse(), lib.ones(3, 2)) ** 2).sum() \
            + lib.sparse.sum(s.coalesce()) * 2 + (s.to_dense() ** 2).sum()
        loss.backward()
        res[lib] = loss, x.grad, v.grad
    for r, m in zip(res[torch], res[mytorch]):
        _close(r, m)


def test_sparse_sum_over_dimensions():
    for dim in [None, 0, 1, (0, 1), -1]:
        ref, mine = _both(lambda lib: lib.sparse.sum(_coo(lib), dim) if dim is not None
                          else lib.sparse.sum(_coo(lib)))
        assert mine.layout is (mytorch.sparse_coo if ref.layout == torch.sparse_coo else mytorch.strided)
        _close(ref.to_dense() if ref.is_sparse else ref, mine.to_dense() if mine.is_sparse else mine)
    hybrid = np.arange(10.0, dtype=np.float32).reshape(5, 2)
    for dim in [2, (0, 2), (0, 1)]:
        ref, mine = _both(lambda lib: lib.sparse.sum(
            lib.sparse_coo_tensor(lib.tensor(IDX), lib.tensor(hybrid), (3, 3, 2)), dim))
        _close(ref.to_dense() if ref.is_sparse else ref, mine.to_dense() if mine.is_sparse else mine)


def test_errors_like_torch():
    s = _coo(mytorch)
    with pytest.raises(RuntimeError, match="same nnz"):
        mytorch.sparse_coo_tensor(mytorch.tensor(IDX), mytorch.ones(4))
    with pytest.raises(RuntimeError, match="inconsistent"):
        mytorch.sparse_coo_tensor(mytorch.tensor(IDX), mytorch.ones(5), (2, 3))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        mytorch.sparse.mm(s, mytorch.ones(2, 2))
    with pytest.raises(NotImplementedError, match="sparse"):
        s.exp()


def test_graph_network_idioms():
    """What GCN/GAT programs do: int32 edge lists, eye + adjacency, casts, transposes, scaling."""
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 1]], dtype=np.int32)
    feats = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    res = {}
    for lib in (torch, mytorch):
        adj = lib.sparse_coo_tensor(edges.T, lib.ones(4), (4, 4), dtype=lib.int64)
        assert adj._indices().dtype == lib.int64
        full = lib.eye(4) + adj                      # dense + sparse: dense, promoted
        assert full.layout == lib.strided and full.dtype == lib.float32
        norm = lib.diag(1 / lib.sqrt(full.sum(1))) @ full
        a = norm.to_sparse()
        x = lib.tensor(feats, requires_grad=True)
        y = lib.sparse.mm(a, x) + (2 * adj.float().t() @ x) - (-(adj.to(lib.float32) * 0.5)).to_dense() @ x
        both = adj.float() + adj.t().float()
        y.sum().backward()
        res[lib] = full, y, x.grad, both.to_dense(), lib.sparse.sum(both, 1).to_dense()
    for r, m in zip(res[torch], res[mytorch]):
        _close(r, m)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\)"):
        _coo(mytorch) + mytorch.ones(3, 3)


def test_on_the_simulated_gpu():
    with mytorch.cuda.simulated():
        v = mytorch.tensor(VAL, device="cuda", requires_grad=True)
        s = mytorch.sparse_coo_tensor(mytorch.tensor(IDX, device="cuda"), v, (3, 3))
        d = mytorch.randn(3, 2, device="cuda", requires_grad=True)
        (s @ d).sum().backward()
        assert {str(t.device) for t in (s, v.grad, d.grad, s.coalesce()._indices(), s.to_dense(),
                                        d.to_sparse()._indices())} == {"cuda:0"}
        assert s.cpu().device.type == "cpu"


def test_gat_example_loading_code():
    """pytorch/examples' GAT load_cora, on a small graph: a sparse diagonal scaling and eye + adj."""
    rng = np.random.default_rng(3)
    raw = (rng.random((6, 5)) > 0.5).astype(np.int32)
    raw[2] = 0                                   # a node with no features: 1/0 -> inf -> 0
    edges = np.array([[0, 1], [1, 2], [3, 4], [5, 0], [4, 4]], dtype=np.int32)
    res = {}
    for lib in (torch, mytorch):
        features = lib.FloatTensor(raw)
        scale_vector = 1 / lib.sum(features, dim=1)
        scale_vector[scale_vector == float("inf")] = 0
        scale_vector = lib.diag(scale_vector).to_sparse()
        features = scale_vector @ features
        adj_mat = lib.sparse_coo_tensor(edges.T, lib.ones(len(edges)), (6, 6), dtype=lib.int64)
        adj_mat = lib.eye(6) + adj_mat
        res[lib] = features, adj_mat, lib.where(adj_mat > 0, features @ features.T, -9e16)
    for r, m in zip(res[torch], res[mytorch]):
        _close(r, m)
