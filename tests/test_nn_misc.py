"""Activations, dropout, embedding, attention and spectral_norm against real PyTorch."""
from __future__ import annotations

import contextlib

import math

import numpy as np
import pytest
import torch
from nn_oracle import NN, F, compare_module, copy_state
from oracle import Case, check, check_raises, randn

import mytorch


def spread(*shape: int, seed: int = 0) -> np.ndarray:
    """Values over [-8, 8] without exact kinks (0, ±1, 6): activations' interesting range."""
    return (randn(*shape, seed=seed) * 3).astype(np.float32)


# ----------------------------------------------------------------------------- activations
ACT = [
    Case("leaky_relu", lambda t, x: F(t).leaky_relu(x), [spread(4, 5)]),
    Case("leaky_relu slope", lambda t, x: F(t).leaky_relu(x, 0.3), [spread(3, 4)]),
    Case("prelu shared", lambda t, x, w: F(t).prelu(x, w), [spread(2, 3, 4), np.array([0.2], np.float32)]),
    Case("prelu per channel", lambda t, x, w: F(t).prelu(x, w),
         [spread(2, 3, 4), np.array([0.1, -0.5, 2.0], np.float32)]),
    Case("elu", lambda t, x: F(t).elu(x), [spread(4, 5)]),
    Case("elu alpha", lambda t, x: F(t).elu(x, 0.5), [spread(4, 5)]),
    Case("gelu", lambda t, x: F(t).gelu(x), [spread(4, 5)]),
    Case("gelu tanh", lambda t, x: F(t).gelu(x, approximate="tanh"), [spread(4, 5)]),
    Case("gelu float64", lambda t, x: F(t).gelu(x), [spread(6).astype(np.float64)]),
    Case("silu", lambda t, x: F(t).silu(x), [spread(4, 5)]),
    Case("softplus", lambda t, x: F(t).softplus(x), [spread(4, 5) * 5]),
    Case("softplus beta", lambda t, x: F(t).softplus(x, beta=2, threshold=5), [spread(4, 5)]),
    Case("hardtanh", lambda t, x: F(t).hardtanh(x), [spread(4, 5)]),
    Case("hardtanh range", lambda t, x: F(t).hardtanh(x, -2.0, 3.0), [spread(4, 5)]),
    Case("relu6", lambda t, x: F(t).relu6(x), [spread(4, 5)]),
    Case("sigmoid", lambda t, x: F(t).sigmoid(x), [spread(4)]),
    Case("tanh", lambda t, x: F(t).tanh(x), [spread(4)]),
    Case("softmax dim 1", lambda t, x: F(t).softmax(x, 1), [spread(3, 4, 2)]),
    Case("softmax dim -1", lambda t, x: F(t).softmax(x, dim=-1), [spread(3, 4)]),
    Case("softmax huge logits", lambda t, x: F(t).softmax(x, 0), [np.array([1000., 999., -1e4], np.float32)]),
    Case("softmax dtype", lambda t, x: F(t).softmax(x, 1, dtype=t.float64), [spread(2, 3)]),
    Case("log_softmax", lambda t, x: F(t).log_softmax(x, 1), [spread(3, 4)]),
    Case("log_softmax huge logits", lambda t, x: F(t).log_softmax(x, 0),
         [np.array([1000., 0., -1e4], np.float32)]),
    Case("softmin", lambda t, x: F(t).softmin(x, 0), [spread(3, 4)]),
    Case("softmax 0-d", lambda t, x: F(t).softmax(x, 0), [np.array(2.0, np.float32)]),
]


@pytest.mark.parametrize("case", ACT, ids=str)
def test_activation_functions(case: Case) -> None:
    check(case)


def test_gelu_float32_kernel_within_torchs_rounding() -> None:
    """float32 GELU runs its own kernel (a fitted tail of Φ, the backward reusing Φ and the
    Gaussian): on a dense grid and a GPT-sized batch, forward and backward within torch's own
    rounding of ``x/2·(1 + erf(x/√2))`` (about 1e-7·|x|, which torch's 1 + erf loses for
    negative x), and close to the exact values (float64 torch)."""
    grid = np.concatenate([np.linspace(-10, 10, 20001, dtype=np.float32),
                           np.float32([0.0, -0.0, 1e-30, -1e-30, 1e-45, 20.0, -20.0, 1e4, -1e4]),
                           randn(8, 64, 32, seed=3).ravel() * 2])
    scale = np.maximum(np.abs(grid.astype(np.float64)), 1.0)
    results = {}
    for name, lib, dtype in (("mine", mytorch, np.float32), ("torch", torch, np.float32),
                             ("exact", torch, np.float64)):
        x = lib.from_numpy(grid.astype(dtype)).requires_grad_()
        y = F(lib).gelu(x)
        y.backward(lib.ones_like(y))
        results[name] = (y.detach().numpy().astype(np.float64), x.grad.numpy().astype(np.float64))
    (y, dy), (ty, tdy), (ey, edy) = results["mine"], results["torch"], results["exact"]
    assert np.all(np.abs(y - ty) <= 1e-6 * scale), np.max(np.abs(y - ty) / scale)
    assert np.all(np.abs(y - ey) <= 2e-7 * scale), np.max(np.abs(y - ey) / scale)
    assert np.all(np.abs(dy - tdy) <= 1e-6), np.max(np.abs(dy - tdy))
    assert np.all(np.abs(dy - edy) <= 4e-7), np.max(np.abs(dy - edy))
    assert np.array_equal(np.signbit(y[grid == 0]), np.signbit(grid[grid == 0]))


INPLACE = ["leaky_relu", "elu", "hardtanh", "relu6", "silu"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_activation_gradients(name) -> None:
    check(Case(name + " inplace", lambda t, x: getattr(F(t), name)(x * 1, inplace=True),
               [spread(3, 4)]))


def test_inplace_really_writes_into_the_input() -> None:
    x = mytorch.from_numpy(spread(5))
    assert F(mytorch).elu(x, inplace=True) is x
    assert F(mytorch).leaky_relu(x, 0.2, True) is x


def test_implicit_softmax_dim_warns_like_torch() -> None:
    x = spread(2, 3, 4)
    for lib in (torch, mytorch):
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            out = F(lib).softmax(lib.from_numpy(x.copy()))
        np.testing.assert_allclose(out.numpy(), torch.softmax(torch.from_numpy(x), 0).numpy(),
                                   rtol=1e-6)


ACT_MODULES = [
    lambda t: NN(t).LeakyReLU(), lambda t: NN(t).LeakyReLU(0.2, inplace=True),
    lambda t: NN(t).PReLU(), lambda t: NN(t).PReLU(3, init=0.1), lambda t: NN(t).ELU(alpha=2.0),
    lambda t: NN(t).GELU(), lambda t: NN(t).GELU("tanh"), lambda t: NN(t).SiLU(),
    lambda t: NN(t).Softplus(beta=2), lambda t: NN(t).Hardtanh(-2, 2), lambda t: NN(t).ReLU6(),
    lambda t: NN(t).Softmax(dim=1), lambda t: NN(t).LogSoftmax(1), lambda t: NN(t).Softmin(-1),
]


@pytest.mark.parametrize("make", ACT_MODULES, ids=lambda m: repr(m(torch)))
def test_activation_modules(make) -> None:
    assert repr(make(mytorch)) == repr(make(torch))
    compare_module(make, [spread(2, 3, 4)], call=lambda m, lib, x: m(x * 1))


def test_prelu_init() -> None:
    assert NN(mytorch).PReLU(4).weight.tolist() == [0.25] * 4


ACT_ERRORS = [
    ("gelu approximate", lambda t: F(t).gelu(t.zeros(2), approximate="foo")),
    ("prelu channels", lambda t: F(t).prelu(t.zeros(2, 3), t.ones(2))),
    ("leaky_relu int", lambda t: F(t).leaky_relu(t.tensor([1, 2]))),
    ("softmax int", lambda t: F(t).softmax(t.tensor([1, 2]), 0)),
    ("softmax bad dim", lambda t: F(t).softmax(t.zeros(2, 3), 2)),
    ("hardtanh module range", lambda t: NN(t).Hardtanh(1.0, -1.0)),
]


@pytest.mark.parametrize("name,fn", ACT_ERRORS, ids=[e[0] for e in ACT_ERRORS])
def test_activation_errors(name, fn) -> None:
    check_raises(fn)


# ----------------------------------------------------------------------------- dropout
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_dropout_statistics_and_scaling(p) -> None:
    x = mytorch.ones(200_000)
    y = F(mytorch).dropout(x, p).numpy()
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 0.03  # expectation preserved


def test_dropout_gradient_uses_the_same_mask() -> None:
    x = mytorch.from_numpy(spread(1000)).requires_grad_()
    y = F(mytorch).dropout(x, 0.3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y.detach().numpy() != 0) / 0.7, rtol=1e-6)


def test_dropout_eval_is_identity_and_p_edges() -> None:
    x = mytorch.from_numpy(spread(10))
    d = NN(mytorch).Dropout(0.5)
    d.eval()
    assert d(x) is x
    assert F(mytorch).dropout(x, 0.0) is x
    assert not F(mytorch).dropout(x, 1.0).numpy().any()
    assert repr(NN(mytorch).Dropout2d(0.3, inplace=True)) == repr(torch.nn.Dropout2d(0.3, True))


def test_dropout2d_drops_whole_channels() -> None:
    y = F(mytorch).dropout2d(mytorch.ones(8, 50, 3, 3), 0.5).numpy()
    per_channel = y.reshape(8, 50, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7


def test_dropout2d_3d_input_warns_like_torch() -> None:
    for lib in (torch, mytorch):
        with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
            F(lib).dropout2d(lib.ones(2, 3, 4), 0.5)


def test_inplace_dropout() -> None:
    x = mytorch.ones(100)
    assert F(mytorch).dropout(x, 0.5, inplace=True) is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}


DROPOUT_ERRORS = [
    ("p > 1", lambda t: F(t).dropout(t.zeros(3), 1.5)),
    ("p < 0 module", lambda t: NN(t).Dropout(-0.1)),
    ("dropout2d p", lambda t: NN(t).Dropout2d(2)),
    ("dropout1d 4d", lambda t: F(t).dropout1d(t.zeros(1, 2, 3, 4))),
]


@pytest.mark.parametrize("name,fn", DROPOUT_ERRORS, ids=[e[0] for e in DROPOUT_ERRORS])
def test_dropout_errors(name, fn) -> None:
    err = check_raises(fn)
    with pytest.raises(Exception) as tinfo:
        fn(torch)
    assert str(err) == str(tinfo.value)


# ----------------------------------------------------------------------------- embedding
IDX = np.array([[0, 2, 4, 2], [1, 1, 0, 3]], dtype=np.int64)


@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=2), dict(padding_idx=-1),
                                dict(scale_grad_by_freq=True),
                                dict(padding_idx=1, scale_grad_by_freq=True)],
                         ids=str)
def test_embedding_module(kw) -> None:
    def make(lib):
        return (NN(lib).Embedding(5, 3, **kw))
    compare_module(make, [IDX], steps=2)
    assert repr(make(mytorch)) == repr(make(torch))


def test_embedding_int32_indices_and_functional() -> None:
    check(Case("embedding int32", lambda t, w: F(t).embedding(t.tensor([[1, 0], [3, 3]],
                                                                       dtype=t.int32), w),
               [randn(4, 2)]))
    check(Case("embedding padding", lambda t, w: F(t).embedding(t.tensor([1, 0, 1]), w,
                                                                padding_idx=1), [randn(4, 2)]))


def test_embedding_padding_row_is_zero_and_gets_no_gradient() -> None:
    emb = NN(mytorch).Embedding(6, 4, padding_idx=3)
    assert not emb.weight[3].detach().numpy().any()
    emb(mytorch.tensor([3, 3, 1])).sum().backward()
    assert not emb.weight.grad[3].numpy().any() and emb.weight.grad[1].numpy().all()


def test_embedding_max_norm_renormalises_in_place() -> None:
    weights = randn(5, 3) * 4
    out = {}
    for lib in (torch, mytorch):
        emb = NN(lib).Embedding.from_pretrained(lib.from_numpy(weights.copy()), max_norm=1.0)
        y = emb(lib.tensor([0, 2, 2]))
        out[lib.__name__] = (y.detach().numpy(), emb.weight.detach().numpy())
    for a, b in zip(out["mytorch"], out["torch"], strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_embedding_from_pretrained() -> None:
    w = mytorch.from_numpy(randn(4, 3))
    emb = NN(mytorch).Embedding.from_pretrained(w, padding_idx=0)
    assert emb.weight.requires_grad is False and emb.weight[0].abs().sum().item() > 0
    assert NN(mytorch).Embedding.from_pretrained(w, freeze=False).weight.requires_grad


def test_embedding_init_is_standard_normal() -> None:
    v = NN(mytorch).Embedding(2000, 50).weight.detach().numpy().ravel()
    assert abs(v.mean()) < 0.01 and abs(v.std() - 1) < 0.01


def test_one_hot() -> None:
    check(Case("one_hot", lambda t: F(t).one_hot(t.tensor([[0, 3], [1, 1]])), [], grad=False))
    check(Case("one_hot classes", lambda t: F(t).one_hot(t.tensor([2, 0]), 5), [], grad=False))


EMB_ERRORS = [
    ("float indices", lambda t: F(t).embedding(t.tensor([1.0]), t.randn(3, 2))),
    ("index out of range", lambda t: F(t).embedding(t.tensor([5]), t.randn(3, 2))),
    ("padding_idx too big", lambda t: NN(t).Embedding(3, 2, padding_idx=3)),
    ("padding_idx too small", lambda t: NN(t).Embedding(3, 2, padding_idx=-4)),
    ("pretrained 1d", lambda t: NN(t).Embedding.from_pretrained(t.randn(3))),
    ("one_hot int32", lambda t: F(t).one_hot(t.tensor([1, 2], dtype=t.int32))),
    ("one_hot negative", lambda t: F(t).one_hot(t.tensor([1, -2]))),
    ("one_hot too large", lambda t: F(t).one_hot(t.tensor([1, 5]), 3)),
    ("one_hot empty", lambda t: F(t).one_hot(t.tensor([], dtype=t.int64))),
]


@pytest.mark.parametrize("name,fn", EMB_ERRORS, ids=[e[0] for e in EMB_ERRORS])
def test_embedding_errors(name, fn) -> None:
    err = check_raises(fn)
    with pytest.raises(Exception) as tinfo:
        fn(torch)
    assert str(err) == str(tinfo.value)


# ----------------------------------------------------------------------------- attention
def _bool(*shape, seed=0):
    m = np.random.default_rng(seed).random(shape) < 0.3
    m[..., 0] = False  # every query keeps at least one key
    return m


SDPA = [
    Case("sdpa", lambda t, q, k, v: F(t).scaled_dot_product_attention(q, k, v),
         [randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 6)]),
    Case("sdpa heads causal", lambda t, q, k, v: F(t).scaled_dot_product_attention(
        q, k, v, is_causal=True), [randn(2, 2, 4, 3), randn(2, 2, 4, 3), randn(2, 2, 4, 3)]),
    Case("sdpa float mask scale", lambda t, q, k, v, m: F(t).scaled_dot_product_attention(
        q, k, v, attn_mask=m, scale=0.3), [randn(3, 4), randn(5, 4), randn(5, 2), randn(3, 5)]),
    Case("sdpa bool mask", lambda t, q, k, v: F(t).scaled_dot_product_attention(
        q, k, v, attn_mask=t.from_numpy(~_bool(3, 5))),
        [randn(2, 3, 4), randn(2, 5, 4), randn(2, 5, 4)]),
    # the fused kernel skips the row maximum while every score is inside (-64, 64): a GPT's
    # shapes, and scores far outside that range (the shifted softmax), causal or not
    Case("sdpa gpt causal", lambda t, q, k, v: F(t).scaled_dot_product_attention(
        q, k, v, is_causal=True), [randn(2, 4, 16, 8), randn(2, 4, 16, 8), randn(2, 4, 16, 8)]),
    Case("sdpa huge scores", lambda t, q, k, v: F(t).scaled_dot_product_attention(q, k, v),
         [randn(2, 6, 4) * 12, randn(2, 5, 4) * 12, randn(2, 5, 3)], rtol=1e-4, atol=1e-4),
    Case("sdpa huge scores causal", lambda t, q, k, v: F(t).scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=100.0), [randn(3, 5, 4), randn(3, 5, 4), randn(3, 5, 2)],
        rtol=1e-4, atol=1e-4),
    Case("sdpa float64 causal", lambda t, q, k, v: F(t).scaled_dot_product_attention(
        q, k, v, is_causal=True), [randn(2, 7, 3, dtype=np.float64),
                                   randn(2, 7, 3, dtype=np.float64), randn(2, 7, 5, dtype=np.float64)]),
]


@pytest.mark.parametrize("case", SDPA, ids=str)
def test_scaled_dot_product_attention(case: Case) -> None:
    check(case)


def test_scaled_dot_product_attention_output_strides_as_torch():
    """The output is laid out as torch's CPU kernel lays it out (like a 4-d query with
    contiguous rows): for a GPT's heads, ``y.transpose(1, 2).contiguous()`` is ``y``'s own
    memory, with no copy in the graph."""
    B, H, L, E = 2, 3, 5, 4
    layouts = {"contiguous": lambda t: t.randn(B, H, L, E),
               "heads of (B, L, H, E)": lambda t: t.randn(B, L, H, E).transpose(1, 2),
               "last dim strided": lambda t: t.randn(E, B, H, L).permute(1, 2, 3, 0),
               "split projection": lambda t: t.randn(B, L, 3 * H * E).split(H * E, 2)[1]
               .view(B, L, H, E).transpose(1, 2)}
    for name, make in layouts.items():
        for ev in (E, 6):
            strides = []
            for t in (mytorch, torch):
                q = make(t).requires_grad_()
                v = t.randn(B, L, H, ev).transpose(1, 2)
                strides.append(F(t).scaled_dot_product_attention(q, q, v).stride())
            assert strides[0] == strides[1], (name, ev, strides)
    q = mytorch.randn(B, L, 3 * H * E).split(H * E, 2)[0].view(B, L, H, E).transpose(1, 2)
    y = F(mytorch).scaled_dot_product_attention(q.requires_grad_(), q, q, is_causal=True)
    assert y.transpose(1, 2).contiguous().grad_fn.name() == "TransposeBackward0"


def test_scaled_dot_product_attention_saves_its_output():
    """The fused kernel's backward reads its output (as torch's): changing the output in place
    before backward is torch's error, word for word."""
    def run(t, q):
        y = F(t).scaled_dot_product_attention(q, q, q, is_causal=True)
        y.add_(1)
        y.sum().backward()

    err = check_raises(lambda t, q: run(t, q.requires_grad_()), randn(2, 2, 4, 3))
    with pytest.raises(RuntimeError) as ref:
        run(torch, torch.from_numpy(randn(2, 2, 4, 3)).requires_grad_())
    assert str(err) == str(ref.value)


def test_scaled_dot_product_attention_double_backward_as_torch_math():
    """The fused kernel's backward under ``create_graph`` (torch's CPU flash kernel has none:
    its math kernel is the reference)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    arrays = [np.random.default_rng(i).standard_normal((2, 2, 4, 3)) for i in range(3)]
    grads = []
    for t in (mytorch, torch):
        xs = [t.tensor(a, requires_grad=True) for a in arrays]
        with sdpa_kernel(SDPBackend.MATH) if t is torch else contextlib.nullcontext():
            out = t.nn.functional.scaled_dot_product_attention(*xs, is_causal=True)
            first = t.autograd.grad(out.pow(2).sum(), xs, create_graph=True)
            sum(g.pow(2).sum() for g in first).backward()
        grads.append([x.grad.detach().numpy() for x in xs])
    for mine, ref in zip(*grads, strict=True):
        np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-12)


MHA = [
    ("default", dict(), {}),
    ("batch_first", dict(batch_first=True), {}),
    ("no bias", dict(bias=False), dict(need_weights=False)),
    ("kdim vdim", dict(kdim=3, vdim=5), {}),
    ("per-head weights", dict(), dict(average_attn_weights=False)),
    ("add_bias_kv zero_attn", dict(add_bias_kv=True, add_zero_attn=True), {}),
]
E, H, L, S, N = 8, 2, 3, 4, 2


@pytest.mark.parametrize("name,kw,call_kw", MHA, ids=[m[0] for m in MHA])
def test_multihead_attention(name, kw, call_kw) -> None:
    def make(lib):
        return (NN(lib).MultiheadAttention(E, H, **kw))
    bf = kw.get("batch_first", False)
    def shape(n, e):
        return ((N, n, e) if bf else (n, N, e))
    q, k, v = randn(*shape(L, E)), randn(*shape(S, kw.get("kdim", E))), \
        randn(*shape(S, kw.get("vdim", E)))
    compare_module(make, [q, k, v], call=lambda m, lib, *xs: m(*xs, **call_kw))
    m, t = make(mytorch), make(torch)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]


SELF_MHA = [m for m in MHA if "kdim" not in m[1]]  # (one tensor needs one width)


@pytest.mark.parametrize("name,kw,call_kw", SELF_MHA, ids=[m[0] for m in SELF_MHA])
def test_multihead_self_attention(name, kw, call_kw) -> None:
    """Self-attention (one tensor as query, key and value) projects once with the packed
    weight, as torch does: outputs and every gradient as torch's."""
    x = randn(N, L, E) if kw.get("batch_first") else randn(L, N, E)
    compare_module(lambda lib: NN(lib).MultiheadAttention(E, H, **kw), [x],
                   call=lambda m, lib, x: m(x, x, x, **call_kw))


def test_multihead_attention_masks_and_self_attention() -> None:
    x = randn(L, N, E)
    kpm = _bool(N, L, seed=1)
    am = _bool(L, L, seed=2)
    def call(m, lib, x):
        return (m(x, x, x, key_padding_mask=lib.from_numpy(kpm),
                                    attn_mask=lib.from_numpy(am)))
    compare_module(lambda lib: NN(lib).MultiheadAttention(E, H), [x], call=call)
    float_mask = randn(N * H, L, L)
    def call(m, lib, x, fm):
        return (m(x, x, x, attn_mask=fm))
    compare_module(lambda lib: NN(lib).MultiheadAttention(E, H), [x, float_mask], call=call)


def test_multihead_attention_unbatched() -> None:
    compare_module(lambda lib: NN(lib).MultiheadAttention(E, H), [randn(L, E), randn(S, E),
                                                                  randn(S, E)])


def test_multihead_attention_init() -> None:
    mha = NN(mytorch).MultiheadAttention(64, 4)
    w = mha.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (64 + 3 * 64))  # xavier_uniform_ over a (3E, E) matrix
    assert w.min() >= -bound and w.max() <= bound and abs(w.var() / (bound ** 2 / 3) - 1) < 0.05
    assert not mha.in_proj_bias.detach().numpy().any()
    assert not mha.out_proj.bias.detach().numpy().any()
    assert repr(mha) == repr(torch.nn.MultiheadAttention(64, 4))


def test_multihead_attention_errors() -> None:
    check_raises(lambda t: NN(t).MultiheadAttention(5, 2))
    check_raises(lambda t: NN(t).MultiheadAttention(0, 2))
    err = check_raises(lambda t: NN(t).MultiheadAttention(4, 2)(t.zeros(3, 1, 4), t.zeros(3, 1, 4),
                                                                 t.zeros(3, 1, 4),
                                                                 attn_mask=t.zeros(2, 2)))
    assert "The shape of the 2D attn_mask is" in str(err)


# ----------------------------------------------------------------------------- spectral_norm
def test_spectral_norm_matches_torch_over_training_steps() -> None:
    tl = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4))
    ml = NN(mytorch).utils.spectral_norm(NN(mytorch).Linear(5, 4))
    assert sorted(ml.state_dict()) == sorted(tl.state_dict())
    with mytorch.no_grad():
        for k, v in tl.state_dict().items():
            dict(list(ml.named_parameters()) + list(ml.named_buffers()))[k].copy_(
                mytorch.from_numpy(v.numpy().copy()))
    for step in range(3):
        x = randn(2, 5, seed=step)
        yt, ym = tl(torch.from_numpy(x)), ml(mytorch.from_numpy(x))
        np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
        for name in ("weight_u", "weight_v", "weight"):
            np.testing.assert_allclose(getattr(ml, name).detach().numpy(),
                                       getattr(tl, name).detach().numpy(), rtol=1e-5, atol=1e-6)
        yt.sum().backward()
        ym.sum().backward()
        np.testing.assert_allclose(ml.weight_orig.grad.numpy(), tl.weight_orig.grad.numpy(),
                                   rtol=1e-4, atol=1e-5)
    # eval: no power iteration, u and v stay put
    ml.eval()
    u = ml.weight_u.numpy().copy()
    ml(mytorch.from_numpy(randn(2, 5)))
    np.testing.assert_array_equal(ml.weight_u.numpy(), u)


def test_spectral_norm_converges_to_unit_norm_and_removes() -> None:
    # Power iteration converges like (σ2/σ1)^k: a random weight can have σ1 ≈ σ2, and then 20
    # iterations are not enough. A weight with singular values 3, 1, 0.5, 0.25 (and a seeded
    # start for u, v) converges to ~1e-19 in 20 iterations, every time.
    mytorch.manual_seed(0)
    rng = np.random.default_rng(0)
    left = np.linalg.qr(rng.standard_normal((4, 4)))[0]
    right = np.linalg.qr(rng.standard_normal((6, 4)))[0]
    lin = NN(mytorch).Linear(6, 4)
    with mytorch.no_grad():
        lin.weight.copy_(mytorch.tensor(left @ np.diag([3.0, 1.0, 0.5, 0.25]) @ right.T,
                                        dtype=mytorch.float32))
    layer = NN(mytorch).utils.spectral_norm(lin, n_power_iterations=20)
    layer(mytorch.zeros(1, 6))
    sv = np.linalg.svd(layer.weight.detach().numpy(), compute_uv=False)
    assert abs(sv[0] - 1) < 1e-3
    NN(mytorch).utils.remove_spectral_norm(layer)
    assert [n for n, _ in layer.named_parameters()] == ["bias", "weight"]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        NN(mytorch).utils.remove_spectral_norm(layer)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        lin = NN(mytorch).utils.spectral_norm(NN(mytorch).Linear(2, 2))
        NN(mytorch).utils.spectral_norm(lin)


def test_copy_state_is_exact() -> None:
    t = torch.nn.GRU(2, 3)
    m = NN(mytorch).GRU(2, 3)
    copy_state(m, t)
    for (_, a), (_, b) in zip(m.named_parameters(), t.named_parameters(), strict=False):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# ----------------------------------------------------------------- parametrizations.spectral_norm
def _load(module, state) -> None:
    """Copy torch's state (parameters and buffers, by name) into a mytorch module, in place."""
    mine = dict(list(module.named_parameters()) + list(module.named_buffers()))
    assert sorted(mine) == sorted(state)
    with mytorch.no_grad():
        for k, v in state.items():
            mine[k].copy_(mytorch.from_numpy(v.detach().numpy().copy()))


@pytest.mark.parametrize("make", [lambda nn: nn.Linear(5, 4), lambda nn: nn.Conv2d(2, 3, 3),
                                  lambda nn: nn.ConvTranspose2d(3, 2, 2)],
                         ids=["linear", "conv", "conv_transpose"])
def test_parametrized_spectral_norm_matches_torch(make) -> None:
    tl = torch.nn.utils.parametrizations.spectral_norm(make(torch.nn))
    ml = mytorch.nn.utils.parametrizations.spectral_norm(make(mytorch.nn))
    assert type(ml).__name__ == type(tl).__name__          # ParametrizedLinear, …
    assert [n for n, _ in ml.named_parameters()] == [n for n, _ in tl.named_parameters()]
    assert [n for n, _ in ml.named_buffers()] == [n for n, _ in tl.named_buffers()]
    assert repr(ml) == repr(tl)
    _load(ml, tl.state_dict())
    shape = (2, 5) if isinstance(tl, torch.nn.Linear) else (2, tl.in_channels, 5, 5)
    for step in range(3):
        x = randn(*shape, seed=step)
        yt, ym = tl(torch.from_numpy(x)), ml(mytorch.from_numpy(x))
        np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        (yt * yt).sum().backward()
        (ym * ym).sum().backward()
    for (name, p), (_, q) in zip(ml.named_parameters(), tl.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)
    for (name, b), (_, c) in zip(ml.named_buffers(), tl.named_buffers()):
        np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    ml.eval()                                                # eval: no power iteration
    u = ml.parametrizations.weight[0]._u.numpy().copy()
    ml(mytorch.from_numpy(randn(*shape)))
    np.testing.assert_array_equal(ml.parametrizations.weight[0]._u.numpy(), u)


def test_parametrize_register_remove_and_errors() -> None:
    P = mytorch.nn.utils.parametrize
    lin = mytorch.nn.Linear(6, 4)
    original = lin.weight
    mytorch.nn.utils.parametrizations.spectral_norm(lin, n_power_iterations=50)
    assert P.is_parametrized(lin) and P.is_parametrized(lin, "weight")
    assert not P.is_parametrized(lin, "bias")
    assert lin.parametrizations.weight.original is original   # optimizers keep their parameter
    assert P.type_before_parametrizations(lin) is mytorch.nn.Linear
    with P.cached():
        assert lin.weight is lin.weight                      # computed once inside cached()
    assert lin.weight is not lin.weight
    sigma = np.linalg.svd(lin.weight.detach().numpy(), compute_uv=False)[0]
    assert abs(sigma - 1) < 1e-3
    value = lin.weight.detach().clone()
    P.remove_parametrizations(lin, "weight")
    assert type(lin) is mytorch.nn.Linear and lin.weight is original
    assert [n for n, _ in lin.named_parameters()] == ["bias", "weight"]   # as torch: re-added
    np.testing.assert_allclose(lin.weight.detach().numpy(), value.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(lin, "weight")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        mytorch.nn.utils.parametrizations.spectral_norm(lin, "kernel")
    t = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        torch.nn.utils.parametrizations.spectral_norm(t, "kernel")


def test_parametrize_assignment_goes_through_right_inverse() -> None:
    class Double(mytorch.nn.Module):
        def forward(self, x):
            return 2 * x

        def right_inverse(self, y):
            return y / 2

    lin = mytorch.nn.Linear(2, 2)
    mytorch.nn.utils.parametrize.register_parametrization(lin, "weight", Double())
    lin.weight = mytorch.ones(2, 2)
    np.testing.assert_array_equal(lin.parametrizations.weight.original.detach().numpy(),
                                  np.full((2, 2), 0.5, np.float32))
    np.testing.assert_array_equal(lin.weight.detach().numpy(), np.ones((2, 2), np.float32))


def _bilinear_run(lib):
    F = lib.nn.functional
    rng = np.random.default_rng(0)

    def t(*shape):
        return lib.from_numpy(rng.standard_normal(shape).astype(np.float32)).requires_grad_()

    x1, x2, w, b = t(5, 3), t(5, 4), t(2, 3, 4), t(2)
    y, y_nobias = F.bilinear(x1, x2, w, b), F.bilinear(x1, x2, w)
    (y.sum() + (y_nobias ** 2).sum()).backward()
    errors = []
    for args in [(x1, x2[:4], w), (x1, x2[:, :3], w), (x1[:, :2], x2, w), (x1, x2, w, t(3)),
                 (t(5, 1, 3), x2, w)]:
        with pytest.raises(RuntimeError) as e:
            F.bilinear(*args)
        errors.append(str(e.value))
    layer = lib.nn.Bilinear(3, 4, 2, bias=False)
    return {"y": y, "x1.grad": x1.grad, "x2.grad": x2.grad, "w.grad": w.grad, "b.grad": b.grad,
            "names": [y.grad_fn.name(), y_nobias.grad_fn.name()], "errors": errors,
            "layer": [repr(layer), list(layer.weight.shape), layer.bias,
                      list(layer(x1, x2).shape), list(F.bilinear(x1[0], x2[0], w, b).shape)],
            "bound": bool(lib.nn.Bilinear(3, 4, 2).weight.abs().max() <= 1 / 3 ** 0.5)}


def test_bilinear_matches_torch():
    mine, ref = _bilinear_run(mytorch), _bilinear_run(torch)
    for k in ref:
        if isinstance(ref[k], torch.Tensor):
            np.testing.assert_allclose(mine[k].detach().numpy(), ref[k].detach().numpy(),
                                       rtol=1e-5, atol=1e-5, err_msg=k)
        else:
            assert mine[k] == ref[k], k
# ---------------------------------------------------------------- weight_norm (hook and parametrization)
def _weight_norm_run(t, kind, make, dim):
    import warnings
    rng = np.random.default_rng(0)
    m = make(t)
    with t.no_grad():
        for p in m.parameters():
            p.copy_(t.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "hook":
            t.nn.utils.weight_norm(m, dim=dim)
        else:
            t.nn.utils.parametrizations.weight_norm(m, dim=dim)
    x = t.from_numpy(rng.standard_normal((2, 4) if isinstance(m, t.nn.Linear) else (2, 2, 5))
                     .astype(np.float32))
    y = m(x)
    (y * y).sum().backward()
    node = m.weight.grad_fn
    res = {"warnings": [(w.category.__name__, str(w.message)) for w in caught],
           "names": [n for n, _ in m.named_parameters()],
           "node": node.name() if t is not torch else type(node).__name__,
           "y": y.detach().numpy(), "grads": [p.grad.numpy() for p in m.parameters()]}
    if kind == "hook":
        t.nn.utils.remove_weight_norm(m)
    else:
        res["keys"] = sorted(m.state_dict())
        t.nn.utils.parametrize.remove_parametrizations(m, "weight")
    res["after"] = [n for n, _ in m.named_parameters()]
    res["weight_after"] = m.weight.detach().numpy()
    return res


@pytest.mark.parametrize("kind", ["hook", "parametrization"])
@pytest.mark.parametrize("make,dim", [(lambda t: t.nn.Linear(4, 3), 0), (lambda t: t.nn.Conv1d(2, 3, 3), None),
                                      (lambda t: t.nn.Conv1d(2, 3, 3), 1), (lambda t: t.nn.Conv1d(2, 3, 3), 2)],
                         ids=["linear", "conv-whole", "conv-dim1", "conv-last"])
def test_weight_norm_matches_torch(kind, make, dim):
    """Same parameters, warning, graph node (torch's fused WeightNormInterfaceBackward0 for the
    first or last dim), outputs, gradients, and the same weight after removing it."""
    mine, ref = _weight_norm_run(mytorch, kind, make, dim), _weight_norm_run(torch, kind, make, dim)
    for k in ref:
        if isinstance(ref[k], list) and ref[k] and isinstance(ref[k][0], np.ndarray):
            for a, b in zip(mine[k], ref[k]):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=k)
        elif isinstance(ref[k], np.ndarray):
            np.testing.assert_allclose(mine[k], ref[k], rtol=1e-5, atol=1e-6, err_msg=k)
        else:
            assert mine[k] == ref[k], k


def test_weight_norm_double_backward_and_old_checkpoints():
    import warnings
    # (torch's own fused node gives another second derivative for v than its composition
    # v * (g / ||v||); mytorch's fused node agrees with the composition, which is compared here)
    grads = []
    for t in (mytorch, torch):
        v = t.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
        g = t.tensor(np.random.default_rng(2).standard_normal((3, 1)), requires_grad=True)
        w = t._weight_norm(v, g, 0) if t is mytorch else v * (g / v.norm(dim=1, keepdim=True))
        (gv,) = t.autograd.grad((w ** 3).sum(), v, create_graph=True)
        gv.sum().backward()
        grads.append((v.grad.numpy(), g.grad.numpy()))
        # a state dict saved with weight_g / weight_v loads into the parametrization
        old = t.nn.Linear(4, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t.nn.utils.weight_norm(old)
        new = t.nn.utils.parametrizations.weight_norm(t.nn.Linear(4, 3))
        new.load_state_dict(old.state_dict())
        np.testing.assert_allclose(new.weight.detach().numpy(), old.weight.detach().numpy(), rtol=1e-6)
        assert repr(new).startswith("ParametrizedLinear(")
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("fn", [
    lambda t: t.nn.utils.weight_norm(t.nn.utils.weight_norm(t.nn.Linear(2, 2))),
    lambda t: t.nn.utils.remove_weight_norm(t.nn.Linear(2, 2)),
    lambda t: t.nn.utils.parametrize.remove_parametrizations(
        t.nn.utils.parametrizations.weight_norm(t.nn.Linear(2, 2)), "weight", leave_parametrized=False),
], ids=["twice", "remove-missing", "leave-unparametrized"])
def test_weight_norm_errors_match_torch(fn):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as ref:
            fn(torch)
        with pytest.raises(type(ref.value)) as mine:
            fn(mytorch)
    assert str(mine.value).replace("mytorch", "torch") == str(ref.value)
