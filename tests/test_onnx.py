"""mytorch.onnx.export: the book's kinds of models, checked by onnx.checker and run in onnxruntime
with the outputs mytorch computes (also at another batch size where the axis is dynamic)."""
from __future__ import annotations

import io
import math

import numpy as np
import pytest

import mytorch as torch
import mytorch.nn as nn
import mytorch.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
import mytorch.onnx  # noqa: E402


def _export(model, args, **kw):
    buf = io.BytesIO()
    torch.onnx.export(model, args, buf, **kw)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto, ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])


def _run(sess, *arrays):
    feeds = {i.name: a for i, a in zip(sess.get_inputs(), arrays)}
    return sess.run(None, feeds)


def _np(t):
    return t.detach().numpy()


def _check(model, *inputs, dynamic=None, again=None, rtol=1e-4, atol=1e-5):
    """Export ``model`` at ``inputs``; compare onnxruntime with mytorch there and at ``again``."""
    model.eval()
    names = [f"in{i}" for i in range(len(list(_flat(inputs))))]
    kw = {}
    if dynamic is not None:
        kw["dynamic_axes"] = dynamic
    _, sess = _export(model, tuple(inputs), input_names=names, **kw)
    # other values of the same shapes: a result baked into the graph as a constant shows up here
    for xs in [inputs, _perturbed(inputs)] + ([again] if again is not None else []):
        want = model(*xs)
        want = [want] if not isinstance(want, (tuple, list)) else list(_flat(want))
        got = _run(sess, *[_np(x) for x in _flat(xs)])
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, _np(w), rtol=rtol, atol=atol)


def _perturbed(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_perturbed(item) for item in x)
    if x.dtype.is_floating_point:
        return x + torch.randn(x.shape) * 0.5
    return x


def _flat(x):
    for item in x:
        if isinstance(item, (tuple, list)):
            yield from _flat(item)
        else:
            yield item


def test_mlp_names_and_dynamic_batch():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    proto, sess = _export(model, (torch.randn(5, 4),), input_names=["x"], output_names=["logits"],
                          dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=17)
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["logits"]
    assert proto.graph.node[-1].op_type == "Gemm" and proto.graph.node[-1].output[0] == "logits"
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert proto.opset_import[0].version == 17
    assert {"0.weight", "0.bias", "3.weight"} <= {i.name for i in proto.graph.initializer}
    assert model.training  # export ran in eval mode and put the mode back
    x = torch.randn(9, 4)
    np.testing.assert_allclose(sess.run(None, {"x": _np(x)})[0], _np(model.eval()(x)), rtol=1e-5,
                               atol=1e-6)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=1, padding="same", bias=False, padding_mode="reflect")
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(2, ceil_mode=True)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout2d(0.2)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.avg(self.drop(torch.tanh(self.conv2(x))))
        x = self.gap(x)
        x = x.view(x.size(0), -1)
        return F.log_softmax(self.fc(x), dim=1)


def test_cnn_with_batchnorm_in_eval_mode():
    torch.manual_seed(1)
    model = CNN()
    model.train()
    for _ in range(2):  # give the running statistics something to hold
        model(torch.randn(6, 1, 12, 12))
    _check(model, torch.randn(3, 1, 12, 12), dynamic={"in0": [0]},
           again=(torch.randn(5, 1, 12, 12),))


def test_conv1d_flatten_and_activations():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Conv1d(2, 4, 3, stride=2, dilation=1), nn.BatchNorm1d(4), nn.GELU(),
                          nn.MaxPool1d(2), nn.Flatten(), nn.Linear(16, 6), nn.Tanh(), nn.Linear(6, 6),
                          nn.Sigmoid(), nn.Linear(6, 6), nn.LeakyReLU(0.2), nn.SiLU(), nn.ELU(),
                          nn.GELU(approximate="tanh"), nn.Softplus(), nn.Hardtanh(-0.5, 0.5),
                          nn.Softmax(dim=-1))
    _check(model, torch.randn(3, 2, 18), dynamic={"in0": {0: "n"}}, again=(torch.randn(2, 2, 18),))


def test_dcgan_style_generator_and_vision_layers():
    torch.manual_seed(11)
    gen = nn.Sequential(nn.ConvTranspose2d(4, 6, 4, 1, 0, bias=False), nn.BatchNorm2d(6), nn.ReLU(True),
                        nn.ConvTranspose2d(6, 3, 4, 2, 1, output_padding=1),
                        nn.InstanceNorm2d(3, affine=True), nn.GroupNorm(1, 3), nn.Upsample(scale_factor=2), nn.Conv2d(3, 2, 3),
                        nn.Upsample(size=(9, 9), mode="bilinear"), nn.Tanh())
    _check(gen, torch.randn(2, 4, 1, 1), dynamic={"in0": [0]}, again=(torch.randn(3, 4, 1, 1),))


class TextRNN(nn.Module):
    def __init__(self, kind, **kw):
        super().__init__()
        self.emb = nn.Embedding(20, 6)
        self.rnn = getattr(nn, kind)(6, 5, **kw)
        d = 2 if kw.get("bidirectional") else 1
        self.head = nn.Linear(5 * d, 4)
        self.batch_first = kw.get("batch_first", False)

    def forward(self, tokens):
        out, _ = self.rnn(self.emb(tokens))
        last = out[:, -1] if self.batch_first else out[-1]
        return self.head(last)


@pytest.mark.parametrize("kind,kw", [
    ("LSTM", dict(batch_first=True, num_layers=2)),
    ("LSTM", dict(bidirectional=True)),
    ("GRU", dict(batch_first=True, bidirectional=True, num_layers=2)),
    ("GRU", dict()),
    ("RNN", dict(nonlinearity="relu", batch_first=True)),
    ("RNN", dict(num_layers=2, bias=False)),
])
def test_embedding_and_recurrent_layers(kind, kw):
    torch.manual_seed(3)
    model = TextRNN(kind, **kw)
    tokens = torch.randint(0, 20, (3, 7))
    again = torch.randint(0, 20, (2, 7) if kw.get("batch_first") else (3, 4))
    _check(model, tokens if kw.get("batch_first") else tokens.t(), dynamic={"in0": [0, 1]},
           again=(again,))  # another batch size and another length


def test_lstm_states_in_and_out():
    torch.manual_seed(4)
    lstm = nn.LSTM(3, 4, num_layers=2)
    x, h, c = torch.randn(5, 2, 3), torch.randn(2, 2, 4), torch.randn(2, 2, 4)
    _check(lstm, x, (h, c))


@pytest.mark.parametrize("batch_first,norm_first,activation", [
    (True, False, "relu"), (False, True, "gelu")])
def test_transformer_encoder(batch_first, norm_first, activation):
    torch.manual_seed(5)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=batch_first,
                                       norm_first=norm_first, activation=activation)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    x = torch.randn(2, 5, 8) if batch_first else torch.randn(5, 2, 8)
    again = torch.randn(3, 5, 8) if batch_first else torch.randn(5, 3, 8)
    _check(model, x, dynamic={"in0": [0 if batch_first else 1]}, again=(again,))


def test_attention_with_masks_and_weights():
    torch.manual_seed(6)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    q, kv = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    pad = torch.tensor([[False, False, True, False], [False, False, False, True]])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, q, kv, pad):
            return self.mha(q, kv, kv, key_padding_mask=pad)

    _check(M(), q, kv, pad)
    causal = nn.Transformer.generate_square_subsequent_mask(3)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)

    class Causal(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x):
            return self.layer(x, src_mask=causal, is_causal=True)

    _check(Causal(), torch.randn(2, 3, 8))


def test_small_gpt_block_with_sdpa():
    torch.manual_seed(7)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(8)
            self.qkv = nn.Linear(8, 24)
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln(x)).split(8, dim=2)
            q, k, v = (t.view(B, T, 2, 4).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return x + self.proj(y) * 0.5

    _check(Block(), torch.randn(2, 4, 8), dynamic={"in0": [0]}, again=(torch.randn(3, 4, 8),))


@pytest.mark.parametrize("loss,target", [
    (nn.CrossEntropyLoss(), lambda: torch.tensor([1, 0, 3])),
    (nn.CrossEntropyLoss(reduction="sum"), lambda: torch.softmax(torch.randn(3, 4), 1)),
    (nn.CrossEntropyLoss(ignore_index=0, weight=torch.rand(4)), lambda: torch.tensor([1, 0, 3])),
    (nn.NLLLoss(reduction="none"), lambda: torch.tensor([2, 2, 1])),
    (nn.MSELoss(), lambda: torch.randn(3, 4)),
    (nn.L1Loss(reduction="sum"), lambda: torch.randn(3, 4)),
    (nn.BCEWithLogitsLoss(), lambda: torch.rand(3, 4)),
    (nn.SmoothL1Loss(beta=0.5), lambda: torch.randn(3, 4)),
    (nn.HuberLoss(reduction="sum", delta=0.7), lambda: torch.randn(3, 4)),
    (nn.KLDivLoss(reduction="batchmean"), lambda: torch.softmax(torch.randn(3, 4), 1)),
    (nn.KLDivLoss(reduction="sum", log_target=True), lambda: torch.log_softmax(torch.randn(3, 4), 1)),
])
def test_losses_forward(loss, target):
    torch.manual_seed(8)
    x = torch.randn(3, 4)
    if isinstance(loss, (nn.NLLLoss, nn.KLDivLoss)):
        x = torch.log_softmax(x, 1)
    _check(loss, x, target())


def test_binary_cross_entropy_and_operators():
    torch.manual_seed(9)

    class M(nn.Module):
        def forward(self, x, y):
            p = torch.sigmoid(x * 2 - 1) / 1.5 + 0.1
            z = (p ** 2).mean(dim=1, keepdim=True) + torch.cat([x, y], dim=1).sum(1, keepdim=True)
            z = z.unsqueeze(0).squeeze(0) @ torch.ones(1, 3) - x.max(dim=1).values[:, None]
            w = (x.T @ y.data).mT + x[:1].T
            v = x[:, :1].expand(2, 3) + x.unsqueeze(0).transpose(0, 1)[:, 0] + x[[-1], :]
            v = F.pad(v, (1, 2)) + F.pad(v[None], (1, 2, 0, 0), mode="reflect")[0] \
                + F.pad(v[None], (1, 2), mode="replicate")[0]
            return F.binary_cross_entropy(p, (y > 0).float()), z.permute(1, 0), x[:, 1:3].flatten(), w, v

    _check(M(), torch.randn(2, 3), torch.randn(2, 3))


def test_unsupported_operation_is_named():
    class M(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 0)

    with pytest.raises(mytorch.onnx.errors.UnsupportedOperatorError, match="'cumsum'"):
        _export(M(), (torch.randn(3),))

    class Train(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.5)  # training=True by default

    with pytest.raises(mytorch.onnx.errors.UnsupportedOperatorError, match="dropout"):
        _export(Train(), (torch.randn(3),))


def test_file_path_export_params_false_and_verbose(tmp_path, capsys):
    model = nn.Linear(3, 2)
    path = tmp_path / "m.onnx"
    torch.onnx.export(model, torch.randn(1, 3), str(path), verbose=True)
    assert "Gemm" in capsys.readouterr().out
    onnx.checker.check_model(onnx.load(str(path)))
    proto, _ = _export(model, (torch.randn(1, 3),), export_params=False)
    assert {i.name for i in proto.graph.input} == {"input", "weight", "bias"}
    assert not proto.graph.initializer
    assert not mytorch.onnx.is_in_onnx_export()


def test_nanogpt_style_model():
    """A causal mask buffer with masked_fill, positions from arange, the last position's logits."""
    torch.manual_seed(10)

    class GPT(nn.Module):
        def __init__(self, vocab=11, t=6, c=8):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, c), nn.Embedding(t, c)
            self.ln = nn.LayerNorm(c)
            self.attn, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
            self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c), nn.Dropout(0.1))
            self.head = nn.Linear(c, vocab, bias=False)
            self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

        def forward(self, idx):
            b, t = idx.size()
            x = self.wte(idx) + self.wpe(torch.arange(0, t, dtype=torch.long))
            q, k, v = self.attn(self.ln(x)).split(8, dim=2)
            q, k, v = (z.view(b, t, 2, 4).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ v
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, 8))
            x = x + self.mlp(self.ln(x))
            return self.head(x[:, [-1], :])

    model = GPT()
    _check(model, torch.randint(0, 11, (2, 6)), dynamic={"in0": [0]},
           again=(torch.randint(0, 11, (3, 6)),))
