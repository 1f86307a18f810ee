"""nn.Transformer and its layers against torch: same weights in, same outputs and gradients out."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import mytorch

D_MODEL, NHEAD, FF = 8, 2, 16


def _copy_weights(mine, ref) -> None:
    sd = {k: mytorch.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()}
    mine.load_state_dict(sd)


def _pair(build):
    """The same module in both libraries, mytorch's weights copied from torch's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the nested-tensor notice, checked separately
        torch.manual_seed(0)
        ref = build(torch)
        mine = build(mytorch)
    _copy_weights(mine, ref)
    return mine, ref


def _run(module, lib, inputs: dict, train: bool, grad: bool = True):
    module.train(train)
    args = {k: (lib.tensor(v, requires_grad=grad and v.dtype == np.float64)
                if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    if "masks" in args:
        args.update(args.pop("masks")(lib))
    ctx = torch.no_grad() if lib is torch and not grad else (
        mytorch.no_grad() if not grad else _Null())
    with ctx:
        out = module(**args)
    if not grad:
        return out.detach().numpy(), {}
    w = np.random.default_rng(7).standard_normal(tuple(out.shape))
    (out * lib.tensor(w)).sum().backward()
    grads = {k: v.grad.numpy() for k, v in args.items()
             if isinstance(v, lib.Tensor) and v.requires_grad}
    grads.update({n: p.grad.numpy() for n, p in module.named_parameters()})
    return out.detach().numpy(), grads


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _compare(build, inputs: dict, train: bool = True, grad: bool = True) -> None:
    mine, ref = _pair(build)
    out_m, g_m = _run(mine, mytorch, inputs, train, grad)
    out_r, g_r = _run(ref, torch, inputs, train, grad)
    np.testing.assert_allclose(out_m, out_r, rtol=1e-9, atol=1e-10)
    assert sorted(g_m) == sorted(g_r)
    for k in g_r:
        np.testing.assert_allclose(g_m[k], g_r[k], rtol=1e-8, atol=1e-10, err_msg=k)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _causal(lib, n):
    return lib.nn.Transformer.generate_square_subsequent_mask(n, dtype=lib.float64)


def _padding(lib, batch, length, lengths):
    return lib.tensor([[i >= n for i in range(length)] for n in lengths])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_matches_torch(norm_first, batch_first, activation) -> None:
    def build(lib):
        return lib.nn.Transformer(D_MODEL, NHEAD, 2, 2, FF, dropout=0.0, activation=activation,
                                  batch_first=batch_first, norm_first=norm_first,
                                  dtype=lib.float64)

    s, t, n = 5, 4, 3
    shape = (lambda L: (n, L, D_MODEL)) if batch_first else (lambda L: (L, n, D_MODEL))
    _compare(build, {"src": _x(*shape(s)), "tgt": _x(*shape(t), seed=1),
                     "masks": lambda lib: {
                         "tgt_mask": _causal(lib, t),
                         "src_key_padding_mask": _padding(lib, n, s, [5, 3, 4]),
                         "memory_key_padding_mask": _padding(lib, n, s, [5, 3, 4])}})


def test_encoder_layer_masks_and_unbatched() -> None:
    def build(lib):
        return lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                              dtype=lib.float64)

    bool_mask = lambda lib: lib.tensor(np.triu(np.ones((4, 4), bool), 1))  # noqa: E731
    _compare(build, {"src": _x(4, 2, D_MODEL), "masks": lambda lib: {"src_mask": bool_mask(lib)}})
    _compare(build, {"src": _x(4, D_MODEL), "masks": lambda lib: {"src_mask": _causal(lib, 4),
                                                                   "is_causal": True}})
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and "
                                         "src_mask is deprecated"):
        _compare(build, {"src": _x(4, 2, D_MODEL), "masks": lambda lib: {
            "src_mask": _causal(lib, 4), "src_key_padding_mask": _padding(lib, 2, 4, [4, 2])}})


def test_decoder_layer_and_stacks() -> None:
    def dec(lib):
        layer = lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, norm_first=True,
                                               batch_first=True, dtype=lib.float64)
        return lib.nn.TransformerDecoder(layer, 2, lib.nn.LayerNorm(D_MODEL,
                                                                    dtype=lib.float64))

    _compare(dec, {"tgt": _x(2, 3, D_MODEL), "memory": _x(2, 5, D_MODEL, seed=2),
                   "masks": lambda lib: {"tgt_mask": _causal(lib, 3)}})

    def enc(lib):
        layer = lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=True,
                                               activation=lib.nn.GELU(), dtype=lib.float64)
        return lib.nn.TransformerEncoder(layer, 3)

    _compare(enc, {"src": _x(2, 4, D_MODEL), "masks": lambda lib: {"mask": _causal(lib, 4)}})


def test_eval_with_padding_uses_torch_nested_path() -> None:
    """In inference torch packs padded batches and pads the output with zeros: so do we."""
    def build(lib):
        layer = lib.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, batch_first=True,
                                               dtype=lib.float64)
        return lib.nn.TransformerEncoder(layer, 2, lib.nn.LayerNorm(D_MODEL, dtype=lib.float64))

    inputs = {"src": _x(3, 5, D_MODEL),
              "masks": lambda lib: {"src_key_padding_mask": _padding(lib, 3, 5, [5, 2, 4])}}
    _compare(build, inputs, train=False, grad=False)   # the nested path
    _compare(build, inputs, train=False, grad=True)    # grad on: the ordinary path


def test_dropout_in_training_changes_outputs() -> None:
    layer = mytorch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.5)
    x = mytorch.randn(4, 2, D_MODEL)
    assert not layer(x).equal(layer(x))
    layer.eval()
    assert layer(x).equal(layer(x))


def test_structure_mask_and_errors() -> None:
    m = mytorch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    r = torch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in r.named_parameters()]
    assert [tuple(p.shape) for p in m.parameters()] == [tuple(p.shape) for p in r.parameters()]
    assert repr(m) == repr(r)
    mask = mytorch.nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(mask.numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        mytorch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="tanh")
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        m(mytorch.randn(3, 2, D_MODEL), mytorch.randn(3, 4, D_MODEL))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to "
                                           "d_model"):
        m(mytorch.randn(3, 2, 4), mytorch.randn(3, 2, 4))
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but "
                                         "self.use_nested_tensor is False because encoder_layer."
                                         "norm_first was True"):
        mytorch.nn.TransformerEncoder(
            mytorch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, norm_first=True), 1)
    with pytest.raises(AssertionError, match="only bool and floating types of src_mask"):
        layer = mytorch.nn.TransformerEncoderLayer(D_MODEL, NHEAD)
        layer(mytorch.randn(3, 1, D_MODEL), src_mask=mytorch.zeros(3, 3, dtype=mytorch.int64))


def test_attention_without_weights_runs_fused_and_differentiates_twice_as_the_composed_path():
    """need_weights=False runs multi-head attention's core as one op (a float mask added, rows
    with every key masked give zeros); its gradients, second ones included, equal the
    composed path's (need_weights=True)."""
    x = np.random.default_rng(0).standard_normal((5, 2, 8))
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    results = []
    for need_weights in (False, True):
        mytorch.manual_seed(0)
        m = mytorch.nn.MultiheadAttention(8, 2, dtype=mytorch.float64)
        xs = mytorch.tensor(x, requires_grad=True)
        out, _ = m(xs, xs, xs, attn_mask=mytorch.tensor(mask),
                   key_padding_mask=mytorch.tensor(kpm), need_weights=need_weights)
        grads = mytorch.autograd.grad(out.pow(2).sum(), [xs, *m.parameters()], create_graph=True)
        sum(g.pow(2).sum() for g in grads).backward()
        results.append([out, xs.grad, *(p.grad for p in m.parameters())])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    dead = np.ones((2, 5), bool)  # every key masked: zeros, as torch's fast path gives
    out, _ = m(xs, xs, xs, key_padding_mask=mytorch.tensor(dead), need_weights=False)
    assert not np.isnan(out.detach().numpy()).any()
