"""``nn.EmbeddingBag`` / ``F.embedding_bag`` against torch: every mode, offsets and 2-D bags,
empty bags, padding, per-sample weights, forward and the weight's gradient."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import mytorch


def _run(lib, inp, offsets, weight, **kw):
    w = lib.from_numpy(weight.copy()).requires_grad_()
    off = None if offsets is None else lib.tensor(offsets)
    psw = kw.pop("per_sample_weights", None)
    if psw is not None:
        psw = lib.from_numpy(psw)
    out = lib.nn.functional.embedding_bag(lib.tensor(inp), w, off, per_sample_weights=psw, **kw)
    (out * lib.from_numpy(np.linspace(-1, 2, out.numel(), dtype=np.float32).reshape(out.shape))).sum().backward()
    return out.detach().numpy(), w.grad.numpy()


WEIGHT = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
FLAT = [1, 2, 4, 4, 3, 0, 2, 5]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets,padding_idx,include_last", [
    ([0, 2, 2, 5], None, False), ([0, 2, 2, 5], 2, False), ([0, 3, 8], 4, True), ([0], None, False)])
def test_embedding_bag_matches_torch(mode, offsets, padding_idx, include_last):
    kw = dict(mode=mode, padding_idx=padding_idx, include_last_offset=include_last)
    mine = _run(mytorch, FLAT, offsets, WEIGHT, **kw)
    ref = _run(torch, FLAT, offsets, WEIGHT, **kw)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input(mode):
    inp = [[1, 2, 3], [0, 0, 5]]
    mine = _run(mytorch, inp, None, WEIGHT, mode=mode, padding_idx=0)
    ref = _run(torch, inp, None, WEIGHT, mode=mode, padding_idx=0)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_per_sample_weights_and_errors():
    psw = np.linspace(0.5, 2, len(FLAT), dtype=np.float32)
    mine = _run(mytorch, FLAT, [0, 4], WEIGHT, mode="sum", per_sample_weights=psw)
    ref = _run(torch, FLAT, [0, 4], WEIGHT, mode="sum", per_sample_weights=psw)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    for lib in (mytorch, torch):
        with pytest.raises(ValueError, match="offsets has to be None"):
            lib.nn.functional.embedding_bag(lib.tensor([[1, 2]]), lib.ones(6, 4), lib.tensor([0]))
        with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
            lib.nn.functional.embedding_bag(lib.tensor([1, 2]), lib.ones(6, 4), lib.tensor([0]),
                                            per_sample_weights=lib.ones(2))


def test_module_like_torch():
    for lib in (mytorch, torch):
        bag = lib.nn.EmbeddingBag(6, 4, mode="sum", padding_idx=1)
        assert repr(bag) == "EmbeddingBag(6, 4, mode='sum', padding_idx=1)"
        assert bag.weight[1].abs().sum().item() == 0
        assert tuple(bag(lib.tensor([0, 1, 2]), lib.tensor([0, 1])).shape) == (2, 4)
        pre = lib.nn.EmbeddingBag.from_pretrained(lib.ones(3, 2))
        assert not pre.weight.requires_grad and pre.mode == "mean"


@pytest.mark.parametrize("kw", [{}, {"max_norm": 1.5, "norm_type": 3.0, "scale_grad_by_freq": True},
                                {"padding_idx": 0, "max_norm": 2.0}])
def test_embedding_reprs_match_torch(kw: dict) -> None:
    """Embedding and EmbeddingBag print their non-default options in torch's order."""
    assert repr(mytorch.nn.Embedding(5, 3, sparse=True, **kw)) == repr(torch.nn.Embedding(5, 3, sparse=True, **kw))
    assert repr(mytorch.nn.EmbeddingBag(5, 3, mode="max", **kw)) == \
        repr(torch.nn.EmbeddingBag(5, 3, mode="max", **kw))
