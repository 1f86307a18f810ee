"""Recurrent layers (RNN, LSTM, GRU, cells) and nn.utils.rnn packing against real PyTorch.

Weights are copied from the torch layer, so outputs, final states, input gradients and every
parameter gradient must agree — for padded, unbatched and packed (sorted and unsorted) inputs.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from nn_oracle import NN, compare_module, copy_state
from oracle import Case, check, check_raises, randn

import mytorch


def pack(lib, x, lengths, batch_first=False, enforce_sorted=False):
    return NN(lib).utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                  enforce_sorted=enforce_sorted)


# ----------------------------------------------------------------------------- whole sequences
CONFIGS = [
    ("RNN", dict()),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(bias=False, batch_first=True)),
    ("RNN", dict(bidirectional=True)),
    ("LSTM", dict()),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(batch_first=True, bias=False)),
    ("LSTM", dict(proj_size=3)),
    ("LSTM", dict(proj_size=2, bidirectional=True, num_layers=2)),
    ("GRU", dict()),
    ("GRU", dict(num_layers=3, batch_first=True)),
    ("GRU", dict(bidirectional=True, bias=False)),
]
IDS = [f"{c}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}" for c, kw in CONFIGS]
IN, HID, T, B = 4, 5, 6, 3


def _make(cls: str, kw: dict):
    return lambda lib: getattr(NN(lib), cls)(IN, HID, **kw)


def _x(kw: dict, seed: int = 0) -> np.ndarray:
    return randn(B, T, IN, seed=seed) if kw.get("batch_first") else randn(T, B, IN, seed=seed)


def _h0(cls: str, kw: dict) -> list[np.ndarray]:
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    out = kw.get("proj_size") or HID
    h = [randn(layers, B, out, seed=11)]
    return h + [randn(layers, B, HID, seed=12)] if cls == "LSTM" else h


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=IDS)
def test_padded_input_default_state(cls, kw) -> None:
    compare_module(_make(cls, kw), [_x(kw)], steps=2)


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=IDS)
def test_padded_input_given_state(cls, kw) -> None:
    if cls == "LSTM":
        def call(layer, lib, x, h, c):
            return (layer(x, (h, c)))
    else:
        def call(layer, lib, x, h):
            return (layer(x, h))
    compare_module(_make(cls, kw), [_x(kw)] + _h0(cls, kw), call=call)


@pytest.mark.parametrize("cls,kw", CONFIGS, ids=IDS)
def test_unbatched_input(cls, kw) -> None:
    x = randn(T, IN, seed=3)
    compare_module(_make(cls, kw), [x])
    hs = [h[:, 0] for h in _h0(cls, kw)]
    call = (lambda layer, lib, x, h, c: layer(x, (h, c))) if cls == "LSTM" else \
        (lambda layer, lib, x, h: layer(x, h))
    compare_module(_make(cls, kw), [x] + hs, call=call)


@pytest.mark.parametrize("sorted_", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("cls,kw", CONFIGS, ids=IDS)
def test_packed_input(cls, kw, sorted_) -> None:
    lengths = [6, 4, 2] if sorted_ else [2, 6, 3]
    bf = kw.get("batch_first", False)
    def call(layer, lib, x):
        return (layer(pack(lib, x, lengths, bf, enforce_sorted=sorted_)))
    compare_module(_make(cls, kw), [_x(kw)], call=call)


@pytest.mark.parametrize("cls,kw", CONFIGS[:6:2], ids=IDS[:6:2])
def test_packed_input_with_state_and_unpacked_output(cls, kw) -> None:
    lengths = [3, 6, 1]
    bf = kw.get("batch_first", False)

    def call(layer, lib, x, *hs):
        out, state = layer(pack(lib, x, lengths, bf), tuple(hs) if len(hs) == 2 else hs[0])
        padded, lens = NN(lib).utils.rnn.pad_packed_sequence(out, total_length=T + 1)
        return padded, lens, state
    compare_module(_make(cls, kw), [_x(kw)] + _h0(cls, kw), call=call)


def test_dropout_between_layers() -> None:
    def make(lib):
        return (NN(lib).LSTM(IN, HID, num_layers=2, dropout=0.5))
    compare_module(make, [_x({})], train=False)  # eval: dropout off, same numbers as torch
    layer = make(mytorch)
    x = mytorch.from_numpy(_x({}))
    a, b = layer(x)[0], layer(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # training: random masks


# ----------------------------------------------------------------------------- cells
CELLS = [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu", bias=False)),
         ("LSTMCell", dict()), ("LSTMCell", dict(bias=False)), ("GRUCell", dict()),
         ("GRUCell", dict(bias=False))]
CELL_IDS = [f"{c}-{kw}" for c, kw in CELLS]


@pytest.mark.parametrize("cls,kw", CELLS, ids=CELL_IDS)
def test_cells(cls, kw) -> None:
    def make(lib):
        return (getattr(NN(lib), cls)(IN, HID, **kw))
    compare_module(make, [randn(B, IN)])
    compare_module(make, [randn(IN)])  # one sample, no batch dim
    hs = [randn(B, HID, seed=5)] + ([randn(B, HID, seed=6)] if cls == "LSTMCell" else [])
    call = (lambda m, lib, x, h, c: m(x, (h, c))) if cls == "LSTMCell" else \
        (lambda m, lib, x, h: m(x, h))
    compare_module(make, [randn(B, IN)] + hs, call=call, steps=2)


def test_cell_loop_equals_layer() -> None:
    """An LSTM layer is its cell applied step by step (same weights)."""
    layer = NN(mytorch).LSTM(IN, HID)
    cell = NN(mytorch).LSTMCell(IN, HID)
    with mytorch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(layer, name + "_l0"))
    x = mytorch.from_numpy(_x({}))
    out, (h, c) = layer(x)
    state = None
    for t in range(T):
        state = cell(x[t], state)
        np.testing.assert_allclose(state[0].detach().numpy(), out[t].detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(state[1].detach().numpy(), c[0].detach().numpy(), atol=1e-6)


# ----------------------------------------------------------------------------- parameters, init
@pytest.mark.parametrize("cls,kw", CONFIGS, ids=IDS)
def test_parameter_names_shapes_and_repr(cls, kw) -> None:
    m, t = _make(cls, kw)(mytorch), _make(cls, kw)(torch)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert repr(m) == repr(t)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU", "LSTMCell", "GRUCell"])
def test_init_is_uniform_over_one_over_sqrt_hidden(cls) -> None:
    hidden = 64
    layer = getattr(NN(mytorch), cls)(32, hidden)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    bound = 1 / math.sqrt(hidden)
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.95 * bound and values.max() > 0.95 * bound
    # U(-a, a): mean 0, variance a²/3 (many thousands of samples: tight tolerances)
    assert abs(values.mean()) < 0.02 * bound
    assert abs(values.var() / (bound ** 2 / 3) - 1) < 0.05


# ----------------------------------------------------------------------------- utils.rnn
def test_pad_sequence_matches_torch() -> None:
    seqs = [randn(3, 2), randn(1, 2), randn(4, 2)]
    for kw in (dict(), dict(batch_first=True, padding_value=-1.0), dict(padding_side="left")):
        check(Case(f"pad_sequence {kw}", lambda t, a, b, c, kw=kw: NN(t).utils.rnn.pad_sequence(
            [a, b, c], **kw), seqs))


def test_pack_pad_round_trip_and_gradient() -> None:
    x = randn(5, 3, 2)
    check(Case("pack then pad", lambda t, x: NN(t).utils.rnn.pad_packed_sequence(
        pack(t, x, [2, 5, 3]), total_length=6), [x]))
    check(Case("pack batch_first", lambda t, x: tuple(pack(t, x, [2, 3, 1, 3, 2], True)),
               [x]))
    check(Case("pack_sequence", lambda t, a, b: tuple(NN(t).utils.rnn.pack_sequence(
        [a, b], enforce_sorted=False)), [randn(2, 3), randn(4, 3)]))
    check(Case("pad batch_first", lambda t, x: NN(t).utils.rnn.pad_packed_sequence(
        pack(t, x, [1, 5, 2]), batch_first=True, padding_value=9.0), [x]))


def test_unpack_sequence_round_trip() -> None:
    u = NN(mytorch).utils.rnn
    seqs = [mytorch.from_numpy(randn(n, 2)) for n in (2, 4, 1)]
    back = u.unpack_sequence(u.pack_sequence(seqs, enforce_sorted=False))
    for a, b in zip(back, seqs, strict=False):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_packed_sequence_fields() -> None:
    p = pack(mytorch, mytorch.from_numpy(randn(3, 2, 1)), [2, 3])
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert p.batch_sizes.dtype is mytorch.int64 and p.batch_sizes.tolist() == [2, 2, 1]
    assert p.sorted_indices.tolist() == [1, 0] and p.unsorted_indices.tolist() == [1, 0]
    assert pack(mytorch, mytorch.zeros(3, 2, 1), [3, 2], enforce_sorted=True).sorted_indices is None


def test_lengths_on_cuda_are_refused() -> None:
    mytorch.cuda.simulate(True)
    try:
        lengths = mytorch.tensor([3, 2]).to("cuda")
        with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor"):
            pack(mytorch, mytorch.zeros(3, 2, 1), lengths)
    finally:
        mytorch.cuda.simulate(False)


# ----------------------------------------------------------------------------- errors
ERRORS = [
    ("bad nonlinearity", lambda t: NN(t).RNN(2, 3, nonlinearity="sigmoid")),
    ("proj_size for GRU", lambda t: NN(t).GRU(2, 3, proj_size=1)),
    ("proj_size too large", lambda t: NN(t).LSTM(2, 3, proj_size=3)),
    ("hidden_size 0", lambda t: NN(t).LSTM(2, 0)),
    ("num_layers 0", lambda t: NN(t).GRU(2, 3, num_layers=0)),
    ("dropout > 1", lambda t: NN(t).RNN(2, 3, dropout=1.5)),
    ("bias not bool", lambda t: NN(t).RNN(2, 3, bias=1)),
    ("input_size not int", lambda t: NN(t).RNN(2.0, 3)),
    ("4d input", lambda t: NN(t).RNN(2, 3)(t.zeros(1, 2, 3, 2))),
    ("4d input lstm", lambda t: NN(t).LSTM(2, 3)(t.zeros(1, 2, 3, 2))),
    ("4d input gru", lambda t: NN(t).GRU(2, 3)(t.zeros(1, 2, 3, 2))),
    ("wrong input size", lambda t: NN(t).LSTM(2, 3)(t.zeros(4, 1, 5))),
    ("wrong hidden size", lambda t: NN(t).GRU(2, 3)(t.zeros(4, 1, 2), t.zeros(2, 1, 3))),
    ("wrong cell size", lambda t: NN(t).LSTM(2, 3)(t.zeros(4, 1, 2),
                                                   (t.zeros(1, 1, 3), t.zeros(1, 1, 4)))),
    ("hx 2d for batched", lambda t: NN(t).RNN(2, 3)(t.zeros(4, 1, 2), t.zeros(1, 3))),
    ("hx 3d for unbatched", lambda t: NN(t).RNN(2, 3)(t.zeros(4, 2), t.zeros(1, 1, 3))),
    ("lstm hx dims", lambda t: NN(t).LSTM(2, 3)(t.zeros(4, 1, 2), (t.zeros(1, 3), t.zeros(1, 3)))),
    ("dtype mismatch", lambda t: NN(t).RNN(2, 3)(t.zeros(4, 1, 2, dtype=t.float64))),
    ("cell 3d input", lambda t: NN(t).GRUCell(2, 3)(t.zeros(1, 1, 2))),
    ("lstm cell hx 3d", lambda t: NN(t).LSTMCell(2, 3)(t.zeros(1, 2), (t.zeros(1, 1, 3),
                                                                       t.zeros(1, 3)))),
    ("unsorted lengths", lambda t: pack(t, t.zeros(3, 2, 1), [2, 3], enforce_sorted=True)),
    ("zero length", lambda t: pack(t, t.zeros(3, 2, 1), [3, 0])),
    ("total_length too small", lambda t: NN(t).utils.rnn.pad_packed_sequence(
        pack(t, t.zeros(3, 2, 1), [3, 2]), total_length=2)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, fn) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err = check_raises(fn)
        with pytest.raises(Exception) as tinfo:
            fn(torch)
    assert str(err) == str(tinfo.value)


def test_dropout_with_one_layer_warns() -> None:
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        NN(mytorch).GRU(2, 3, dropout=0.2)


def test_copy_state_checks_names() -> None:
    with pytest.raises(AssertionError):
        copy_state(NN(mytorch).GRU(2, 3), torch.nn.LSTM(2, 3))
