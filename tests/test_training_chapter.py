"""Chapter 10's targets (issue 15): the digits CNN reaches >= 97% test accuracy in mytorch and in
torch, within 1 point of each other, and the character-level GRU language model's validation loss
is within 2% of torch's, both libraries starting from the same weights and seeing the same batches."""
from __future__ import annotations

from importlib.resources import files

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

import mytorch
from bookkit.torch_bridge import load_numpy_state_dict, state_dict_to_numpy
from mytorch.utils import training

pytestmark = pytest.mark.slow


def twin(build):
    """The same model in mytorch and torch, torch's weights copied from mytorch's."""
    mytorch.manual_seed(0)
    mine, theirs = build(mytorch), build(torch)
    load_numpy_state_dict(theirs, state_dict_to_numpy(mine.state_dict()))
    return mine, theirs


class Shuffle:
    """The chapter's sampler: a NumPy permutation per epoch, the same for both libraries."""

    def __init__(self, n, seed):
        self.n, self.seed, self.epoch = n, seed, 0

    def __iter__(self):
        order = np.random.default_rng([self.seed, self.epoch]).permutation(self.n)
        self.epoch += 1
        return iter(order.tolist())

    def __len__(self):
        return self.n


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 2 * 2, 10))


def digits_accuracy(lib, model, epochs=10):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(images))
    n_train, n_val = int(0.7 * len(images)), int(0.1 * len(images))
    train, test = order[:n_train], order[n_train + n_val:]
    ds = lib.utils.data.TensorDataset(lib.from_numpy(images[train]), lib.from_numpy(labels[train]))
    loader = lib.utils.data.DataLoader(ds, batch_size=32, sampler=Shuffle(len(train), 1))
    opt = lib.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(epochs):
        training.train_epoch(model, loader, lib.nn.CrossEntropyLoss(), opt)
    model.eval()
    with lib.no_grad():
        pred = model(lib.from_numpy(images[test])).argmax(dim=1)
    return float((pred == lib.from_numpy(labels[test])).double().mean())


def test_digits_cnn_reaches_97_percent_like_torch():
    torch.set_num_threads(1)
    mine, theirs = twin(cnn)
    acc_mine, acc_torch = digits_accuracy(mytorch, mine), digits_accuracy(torch, theirs)
    assert acc_mine >= 0.97 and acc_torch >= 0.97, (acc_mine, acc_torch)
    assert abs(acc_mine - acc_torch) <= 0.01, (acc_mine, acc_torch)


def char_lm(vocab):
    def build(lib):
        nn = lib.nn

        class CharLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(vocab, 32)
                self.rnn = nn.GRU(32, 96, batch_first=True)
                self.head = nn.Linear(96, vocab)

            def forward(self, x):
                return self.head(self.rnn(self.embed(x))[0])

        return CharLM()
    return build


def lm_validation_loss(lib, model, train_x, train_y, val_x, val_y, epochs):
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    vocab = model.head.out_features
    for epoch in range(epochs):
        order = np.random.default_rng([2, epoch]).permutation(len(train_x))
        for batch in np.array_split(order, len(train_x) // 8):
            opt.zero_grad()
            scores = model(lib.from_numpy(train_x[batch]))
            loss = lib.nn.functional.cross_entropy(scores.reshape(-1, vocab),
                                                   lib.from_numpy(train_y[batch]).reshape(-1))
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    with lib.no_grad():
        scores = model(lib.from_numpy(val_x))
        return lib.nn.functional.cross_entropy(scores.reshape(-1, vocab),
                                               lib.from_numpy(val_y).reshape(-1)).item()


def test_char_lm_validation_loss_within_2_percent_of_torch():
    torch.set_num_threads(1)
    text = (files("bookkit") / "data" / "lighthouse.txt").read_text(encoding="utf-8")
    alphabet = sorted(set(text))
    codes = np.array([alphabet.index(c) for c in text], dtype=np.int64)

    def pieces(a, seq=48):
        n = (len(a) - 1) // seq
        return a[:n * seq].reshape(n, seq), a[1:n * seq + 1].reshape(n, seq)

    cut = int(0.9 * len(codes))
    data = (*pieces(codes[:cut]), *pieces(codes[cut:]))
    mine, theirs = twin(char_lm(len(alphabet)))
    loss_mine = lm_validation_loss(mytorch, mine, *data, epochs=5)
    loss_torch = lm_validation_loss(torch, theirs, *data, epochs=5)
    assert loss_mine < 0.7 * np.log(len(alphabet))        # it learnt something
    assert abs(loss_mine - loss_torch) <= 0.02 * loss_torch, (loss_mine, loss_torch)
