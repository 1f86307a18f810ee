"""Small pieces of torch's API that real programs hit: distances, SVD and pseudo-inverse,
autograd.Variable, the default device, torch.accelerator, Tensor.get_device."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mytorch


def _both(fn, *arrays, grad=True):
    """``fn(lib, *tensors)`` in both libraries; returns (outputs, input grads) per library."""
    res = []
    for lib in (mytorch, torch):
        ts = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *ts)
        outs = list(out) if isinstance(out, tuple) else [out]
        grads = []
        if grad:
            total = sum((o * lib.tensor(np.random.default_rng(i).standard_normal(tuple(o.shape))))
                        .sum() for i, o in enumerate(outs) if o.requires_grad)
            total.backward()
            grads = [t.grad.numpy() for t in ts if t.requires_grad]
        res.append(([o.detach().numpy() for o in outs], grads))
    return res


def _assert_close(mine, ref, rtol=1e-10, atol=1e-12):
    for a, b in zip(mine[0] + mine[1], ref[0] + ref[1]):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("case", [
    lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b),
    lambda lib, a, b: lib.nn.functional.cosine_similarity(a, b[:1], dim=-1),    # broadcast
    lambda lib, a, b: lib.nn.CosineSimilarity(dim=0, eps=1e-3)(a, b),
    lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b),
    lambda lib, a, b: lib.nn.functional.pairwise_distance(a, b, p=1, keepdim=True),
    lambda lib, a, b: lib.nn.PairwiseDistance(p=3.0, eps=1e-3)(a, b[0]),
])
def test_distances_match_torch(case) -> None:
    mine, ref = _both(case, _x(4, 5), _x(4, 5, seed=1))
    _assert_close(mine, ref)


def test_cosine_similarity_near_zero_and_ints() -> None:
    a = np.array([[1e-9, 0.0, 0.0], [1.0, 2.0, 3.0]])
    b = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    mine, ref = _both(lambda lib, x, y: lib.nn.functional.cosine_similarity(x, y), a, b)
    _assert_close(mine, ref, rtol=1e-7, atol=1e-3)   # gradients of size 1e8 at the clamp
    for lib in (mytorch, torch):
        with pytest.raises(RuntimeError, match="expected common dtype to be floating point, "
                                               "yet common dtype is Long"):
            lib.nn.functional.cosine_similarity(lib.tensor([1, 2]), lib.tensor([2, 3]), dim=0)


def _svd_invariants(lib, a, full=False):
    U, S, Vh = lib.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    # singular vectors have arbitrary signs: compare sign-free quantities
    return S, U[..., :k] @ Vh[..., :k, :], (U[..., :k] * U[..., :k]).sum(-2)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_torch(shape, full) -> None:
    mine, ref = _both(lambda lib, a: _svd_invariants(lib, a, full), _x(*shape))
    _assert_close(mine, ref, rtol=1e-8, atol=1e-10)
    a = mytorch.tensor(_x(*shape))
    U, S, Vh = mytorch.linalg.svd(a, full_matrices=full)
    m, n = shape[-2:]
    assert U.shape[-2:] == ((m, m) if full else (m, min(m, n)))
    assert Vh.shape[-2:] == ((n, n) if full else (min(m, n), n))
    k = min(m, n)
    np.testing.assert_allclose((U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :], a, atol=1e-12)


def test_svdvals_svd_and_pinverse_match_torch() -> None:
    a = _x(5, 3)
    for fn in (lambda lib, x: lib.linalg.svdvals(x),
               lambda lib, x: lib.linalg.pinv(x),
               lambda lib, x: lib.linalg.pinv(x.T @ x, hermitian=True),
               lambda lib, x: lib.linalg.pinv(x, rtol=0.5),
               lambda lib, x: lib.linalg.pinv(x.T, atol=1.0),
               lambda lib, x: lib.pinverse(x),
               lambda lib, x: x.pinverse(rcond=0.3),
               lambda lib, x: lib.svd(x).S,
               lambda lib, x: lib.svd(x)[0] @ lib.diag_embed(lib.svd(x)[1]) @ lib.svd(x).V.T):
        mine, ref = _both(fn, a)
        _assert_close(mine, ref, rtol=1e-8, atol=1e-10)
    batched = _x(2, 3, 4)
    mine, ref = _both(lambda lib, x: lib.linalg.pinv(x, rtol=lib.tensor([0.0, 0.6])), batched)
    _assert_close(mine, ref, rtol=1e-8, atol=1e-10)


def test_svd_names_and_errors() -> None:
    a = mytorch.tensor(_x(4, 3), requires_grad=True)
    res = mytorch.linalg.svd(a)
    assert type(res).__name__ == "linalg_svd" and res.Vh is res[2]
    assert res.U.grad_fn.name() == "LinalgSvdBackward0"
    assert mytorch.linalg.pinv(a).grad_fn.name() == "LinalgPinvBackward0"
    U, S, V = mytorch.svd(a, compute_uv=False)
    assert U.shape == (4, 4) and V.shape == (3, 3) and not U.any()
    for bad in (lambda lib: lib.linalg.svd(lib.ones(3)),
                lambda lib: lib.linalg.svd(lib.ones(2, 2, dtype=lib.int64)),
                lambda lib: lib.linalg.svdvals(lib.ones(3)),
                lambda lib: lib.linalg.pinv(lib.ones(3)),
                lambda lib: lib.linalg.pinv(lib.ones(2, 2, dtype=lib.int64)),
                lambda lib: lib.linalg.svd(lib.ones(2, 2), driver="gesvd")):
        msgs = []
        for lib in (mytorch, torch):
            with pytest.raises(RuntimeError) as e:
                bad(lib)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_variable_returns_a_tensor() -> None:
    from mytorch.autograd import Variable

    t = mytorch.ones(2)
    v = Variable(t, requires_grad=True)
    assert type(v) is mytorch.Tensor and v.requires_grad and v.is_leaf
    assert v.data_ptr() == t.data_ptr() and v is not t
    assert isinstance(t, Variable) and not isinstance(3, Variable)
    y = (v * 3).sum()
    y.backward()
    assert v.grad.tolist() == [3.0, 3.0]
    assert Variable(y).grad_fn is None
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        Variable(3)
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)


def test_default_device(sim) -> None:
    assert mytorch.get_default_device() == mytorch.device("cpu")
    mytorch.set_default_device("cuda")
    try:
        assert mytorch.get_default_device() == mytorch.device("cuda:0")
        for t in (mytorch.zeros(2), mytorch.tensor([1.0]), mytorch.randn(2), mytorch.arange(3),
                  mytorch.nn.Linear(2, 2).weight):
            assert t.device == mytorch.device("cuda:0")
        assert mytorch.from_numpy(np.ones(1)).device.type == "cpu"   # shares NumPy memory
        assert mytorch.zeros(2, device="cpu").device.type == "cpu"
    finally:
        mytorch.set_default_device(None)
    assert mytorch.zeros(1).device.type == "cpu"


def test_accelerator_and_get_device(sim) -> None:
    acc = mytorch.accelerator
    assert acc.current_accelerator() == mytorch.device("cuda") and acc.is_available()
    assert acc.device_count() == 2 and acc.current_device_index() == 0
    with acc.device_index(1):
        assert acc.current_device_index() == 1
    assert acc.current_device_index() == 0
    acc.synchronize()
    assert mytorch.ones(1, device="cuda:1").get_device() == 1
    assert mytorch.ones(1).get_device() == -1 == torch.ones(1).get_device()


def test_accelerator_without_one(no_cuda) -> None:
    assert mytorch.accelerator.current_accelerator() is None
    assert torch.accelerator.current_accelerator() is None
    assert not mytorch.accelerator.is_available() and mytorch.accelerator.device_count() == 0
    dev = mytorch.accelerator.current_accelerator() or mytorch.device("cpu")
    assert mytorch.zeros(1, device=dev).device.type == "cpu"
    for name, args in [("synchronize", ()), ("current_device_index", ()),
                       ("set_device_index", (0,))]:
        with pytest.raises(RuntimeError) as mine:
            getattr(mytorch.accelerator, name)(*args)
        with pytest.raises(RuntimeError) as ref:
            getattr(torch.accelerator, name)(*args)
        assert str(mine.value) == str(ref.value)
    with mytorch.accelerator.device_index(None), torch.accelerator.device_index(None):
        pass  # None: nothing to switch, no error
