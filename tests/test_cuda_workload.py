"""Layers on a CUDA device give the CPU's numbers: forward, loss, every gradient.

Each model is built once on the CPU, copied to ``cuda`` (a real GPU where CuPy sees one, else the
simulated device), and both copies run the same batch. Besides checking the device path of the
layers, this is the layer workload that ``test_cupy_compat.py`` records.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import has_cuda
from test_device import assert_on_device

import mytorch
import mytorch.nn as nn
import mytorch.nn.functional as F


@pytest.fixture
def cuda():
    """A CUDA device: the GPU when there is one, otherwise the simulated device."""
    if has_cuda():
        yield "cuda:0"
        return
    was = mytorch.cuda.is_simulated()
    mytorch.cuda.simulate(True)
    yield "cuda:0"
    mytorch.cuda.simulate(was)


def _device_data(t: mytorch.Tensor) -> None:
    if not has_cuda():
        assert_on_device(t)


class Conv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.pool(F.relu(self.bn(self.conv(x))))
        return self.fc(self.avg(h).flatten(1))


class Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.lstm = nn.LSTM(6, 5, batch_first=True)
        self.gru = nn.GRU(5, 5, batch_first=True)
        self.norm = nn.LayerNorm(5)
        self.out = nn.Linear(5, 3)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens))
        h, _ = self.gru(h)
        return self.out(F.gelu(self.norm(h[:, -1])))


def _inputs(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if kind == "mlp":
        x = rng.standard_normal((8, 5)).astype(np.float32)
    elif kind == "conv":
        x = rng.standard_normal((4, 2, 6, 6)).astype(np.float32)
    else:
        x = rng.integers(0, 10, (4, 7))
    return x, rng.integers(0, 3, len(x))


MODELS = {
    "mlp": lambda: nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Dropout(0.0), nn.Linear(16, 3)),
    "conv": Conv,
    "seq": Seq,
}
LOSSES = {
    "cross_entropy": lambda out, y: F.cross_entropy(out, y, label_smoothing=0.1),
    "nll": lambda out, y: F.nll_loss(F.log_softmax(out, 1), y),
    "mse": lambda out, y: F.mse_loss(out.softmax(1), F.one_hot(y, 3).float()),
    "bce": lambda out, y: F.binary_cross_entropy_with_logits(out, F.one_hot(y, 3).float()),
}


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("kind", MODELS)
def test_layers_match_the_cpu(cuda, kind, loss):
    mytorch.manual_seed(0)
    cpu_model = MODELS[kind]()
    dev_model = copy.deepcopy(cpu_model).to(cuda)
    x, y = _inputs(kind, np.random.default_rng(1))
    results = []
    for model, dev in ((cpu_model, "cpu"), (dev_model, cuda)):
        xt, yt = mytorch.from_numpy(x).to(dev), mytorch.from_numpy(y).to(dev)
        out = model(xt)
        value = LOSSES[loss](out, yt)
        value.backward()
        results.append((out, value, [p.grad for p in model.parameters()]))
    (out_c, loss_c, grads_c), (out_d, loss_d, grads_d) = results
    _device_data(out_d)
    np.testing.assert_allclose(out_d.cpu().detach().numpy(), out_c.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert abs(loss_d.item() - loss_c.item()) < 1e-5
    for gd, gc in zip(grads_d, grads_c):
        _device_data(gd)
        np.testing.assert_allclose(gd.cpu().numpy(), gc.numpy(), rtol=1e-4, atol=1e-5)


def test_a_training_step_on_the_device(cuda):
    mytorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(cuda)
    x = mytorch.randn(16, 4, device=cuda)
    y = x.sum(1, keepdim=True)
    losses = []
    for _ in range(5):
        model.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        with mytorch.no_grad():
            for p in model.parameters():
                p -= 0.05 * p.grad
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    _device_data(next(model.parameters()))


OPTIMIZERS = {
    "sgd_momentum": lambda ps: mytorch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda ps: mytorch.optim.Adam(ps, lr=0.01, amsgrad=True),
    "adamw": lambda ps: mytorch.optim.AdamW(ps, lr=0.01),
    "rmsprop": lambda ps: mytorch.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    "adagrad": lambda ps: mytorch.optim.Adagrad(ps, lr=0.1),
    "adadelta": lambda ps: mytorch.optim.Adadelta(ps),
    "adamax": lambda ps: mytorch.optim.Adamax(ps, lr=0.01),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizers_step_on_the_device_like_on_the_cpu(cuda, name):
    mytorch.manual_seed(0)
    cpu_model = nn.Linear(4, 3)
    dev_model = copy.deepcopy(cpu_model).to(cuda)
    x = mytorch.randn(6, 4)
    for model, dev in ((cpu_model, "cpu"), (dev_model, cuda)):
        opt = OPTIMIZERS[name](model.parameters())
        for _ in range(3):
            opt.zero_grad()
            model(x.to(dev)).pow(2).mean().backward()
            opt.step()
    for pd, pc in zip(dev_model.parameters(), cpu_model.parameters()):
        _device_data(pd)
        np.testing.assert_allclose(pd.detach().cpu().numpy(), pc.detach().numpy(), rtol=1e-5, atol=1e-6)
    state = next(iter(opt.state.values()))
    for v in state.values():
        if isinstance(v, mytorch.Tensor) and v.dim() > 0:
            _device_data(v)
