"""The whole-sequence recurrent kernels (``nn/_functional/rnn.py``, issue 16): one graph node per
layer and direction with a hand-written backward through time.

``tests/test_nn_rnn.py`` compares ``nn.RNN``/``LSTM``/``GRU`` with torch in every configuration
(packed, bidirectional, proj_size, unbatched, given states), and those layers now run through the
kernels. Here: that the kernels are what runs (one node per layer and direction), that they give
the step-by-step path's numbers (forward, backward, double backward, dropout with one seed,
``retain_graph``), that in-place changes of what they saved are caught, and which cases still run
step by step (a student's pieces, saved-tensor hooks, float16, anomaly mode).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

import mytorch
from mytorch._pieces import REGISTRY, activate, pieces
from mytorch.mine import plugged

from oracle import assert_same

IN, HID, T, B = 3, 4, 5, 3
LENGTHS = [5, 2, 4]  # unsorted: packing sorts them


@pytest.fixture(autouse=True)
def _library_pieces():
    """The kernels run with the library's own pieces: pin them (``MYTORCH_MINE`` may have plugged
    a student's in; their step-by-step path is tested in test_nn_rnn.py and below)."""
    names = ("lstm_cell", "matmul_backward")
    before = {n: getattr(pieces, n) for n in names}
    for n in names:
        activate(n, None)
    yield
    for n, fn in before.items():
        setattr(pieces, n, fn)


def _identity_hooks() -> mytorch.autograd.graph.saved_tensors_hooks:
    """Saved-tensor hooks that change nothing: under them, the layers run step by step."""
    return mytorch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)


def _layer(mode: str, dtype=mytorch.float64, **kw):
    mytorch.manual_seed(0)
    return getattr(mytorch.nn, mode)(IN, HID, dtype=dtype, **kw)


def _run(layer, packed: bool, seed: int = 1, dtype=np.float64) -> tuple:
    """Forward and backward of a weighted sum of every output; (output, states, grads)."""
    rng = np.random.default_rng(seed)
    x = mytorch.tensor(rng.standard_normal((T, B, IN)).astype(dtype), requires_grad=True)
    inp = mytorch.nn.utils.rnn.pack_padded_sequence(x, LENGTHS, enforce_sorted=False) \
        if packed else x
    out, state = layer(inp)
    data = out.data if packed else out
    states = state if isinstance(state, tuple) else (state,)
    loss = (data * mytorch.tensor(rng.standard_normal(data.shape).astype(dtype))).sum()
    for k, s in enumerate(states):
        loss = loss + (s * (k + 1.5)).sum()
    loss.backward()
    return (data, *states), [x.grad] + [p.grad for p in layer.parameters()]


def _nodes(*outs: mytorch.Tensor) -> list[str]:
    seen, stack = set(), [o.grad_fn for o in outs]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return sorted(n.name() for n in seen)


CONFIGS = [("LSTM", {}), ("GRU", {}), ("RNN", {}), ("RNN", dict(nonlinearity="relu", bias=False)),
           ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2)),
           ("GRU", dict(num_layers=2, bidirectional=True, bias=False))]
IDS = [f"{m}-{kw}" for m, kw in CONFIGS]


@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("mode,kw", CONFIGS, ids=IDS)
def test_kernel_equals_the_step_by_step_path(mode, kw, packed):
    layer = _layer(mode, **kw)
    outs, grads = _run(layer, packed)
    layer.zero_grad()
    with _identity_hooks():
        ref_outs, ref_grads = _run(layer, packed)
    for a, b in zip(outs + tuple(grads), ref_outs + tuple(ref_grads)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_one_node_per_layer_and_direction(mode):
    layer = _layer(mode, num_layers=2, bidirectional=True)
    x = mytorch.randn(T, B, IN, dtype=mytorch.float64, requires_grad=True)
    out, state = layer(x)
    names = _nodes(out, *(state if isinstance(state, tuple) else (state,)))
    assert names.count("CatBackward0") == 4 + 2  # 4 kernels, the 2 concatenations of directions
    assert len(names) < 30  # (step by step: hundreds)
    with _identity_hooks():
        out, _ = layer(x)
    assert len(_nodes(out)) > 100


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_float32_gradients_equal_torch(mode):
    torch.manual_seed(0)
    ref = getattr(torch.nn, mode)(IN, HID, num_layers=2)
    mine = getattr(mytorch.nn, mode)(IN, HID, num_layers=2)
    mine.load_state_dict({k: mytorch.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((T, B, IN)).astype(np.float32)
    for lib, layer in ((torch, ref), (mytorch, mine)):
        out, _ = layer(lib.tensor(x))
        (out * out).sum().backward()
    for (name, p), q in zip(ref.named_parameters(), mine.parameters()):
        assert_same(q.grad, p.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_double_backward_differentiates_the_step_by_step_path(mode):
    layer = _layer(mode)
    results = []
    for hooks in (False, True):
        x = mytorch.tensor(np.random.default_rng(2).standard_normal((T, B, IN)), requires_grad=True)
        layer.zero_grad()
        with (_identity_hooks() if hooks else contextlib.nullcontext()):
            out, _ = layer(x)
            gx, = mytorch.autograd.grad(out.tanh().sum(), x, create_graph=True)
        (gx * gx).sum().backward()
        results.append([gx] + [p.grad for p in layer.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_between_layers_draws_the_same_masks():
    layer = _layer("LSTM", num_layers=3, dropout=0.5)
    results = []
    for hooks in (False, True):
        layer.zero_grad()
        mytorch.manual_seed(7)
        with (_identity_hooks() if hooks else contextlib.nullcontext()):
            results.append(_run(layer, packed=True))
    (outs, grads), (ref_outs, ref_grads) = results
    for a, b in zip(outs + tuple(grads), ref_outs + tuple(ref_grads)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_retain_graph_runs_the_backward_again():
    layer = _layer("LSTM", proj_size=2)
    x = mytorch.randn(T, B, IN, dtype=mytorch.float64)
    out, (h, c) = layer(x)
    loss = out.sum() + c.sum()
    loss.backward(retain_graph=True)
    first = [p.grad.clone() for p in layer.parameters()]
    loss.backward()
    for p, g in zip(layer.parameters(), first):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_changing_a_weight_in_place_before_backward_is_caught():
    layer = _layer("GRU")
    out, _ = layer(mytorch.randn(T, B, IN, dtype=mytorch.float64))
    with mytorch.no_grad():
        layer.weight_hh_l0.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_changing_the_output_in_place_leaves_the_backward_right():
    layer = _layer("RNN")
    x = mytorch.randn(T, B, IN, dtype=mytorch.float64)
    out, _ = layer(x)
    out.sum().backward()
    expected = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    out, _ = layer(x)
    y = out * 1.0
    out.detach().zero_()  # (the kernel keeps its own copy of what its backward reads)
    y.sum().backward()
    for p, g in zip(layer.parameters(), expected):
        np.testing.assert_allclose(p.grad.numpy(), g.numpy(), rtol=1e-12)


def test_students_pieces_run_step_by_step():
    layer = _layer("LSTM")
    x = mytorch.randn(T, B, IN, dtype=mytorch.float64)
    calls = []

    def cell(*args):
        calls.append(1)
        return REGISTRY["lstm_cell"].reference(*args)

    with plugged(lstm_cell=cell):
        out, _ = layer(x)
    assert len(calls) == T and len(_nodes(out)) > 30
    gru = _layer("GRU")
    with plugged(matmul_backward=REGISTRY["matmul_backward"].reference):
        out, _ = gru(x)
    assert len(_nodes(out)) > 30


def test_half_precision_and_anomaly_mode_run_step_by_step():
    layer = _layer("GRU", dtype=mytorch.float16)
    out, _ = layer(mytorch.randn(T, B, IN, dtype=mytorch.float16))
    assert len(_nodes(out)) > 30
    layer = _layer("GRU")
    with pytest.warns(UserWarning, match="Anomaly Detection"), mytorch.autograd.detect_anomaly():
        out, _ = layer(mytorch.randn(T, B, IN, dtype=mytorch.float64))
    assert len(_nodes(out)) > 30


def test_no_grad_records_nothing():
    layer = _layer("LSTM")
    with mytorch.no_grad():
        out, (h, c) = layer(mytorch.randn(T, B, IN, dtype=mytorch.float64))
    assert out.grad_fn is None and h.grad_fn is None and not out.requires_grad


def test_lstm_cell_is_one_node_equal_to_the_readable_cell_and_twice_differentiable():
    """LSTMCell's fast path (one node on arrays): the readable cell's values and gradients,
    and under create_graph the readable cell's second derivatives."""
    mytorch.manual_seed(0)
    cell = mytorch.nn.LSTMCell(IN, HID, dtype=mytorch.float64)
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((B, IN)), rng.standard_normal((B, HID)),
              rng.standard_normal((B, HID))]
    results = []
    for hooks in (False, True):  # saved-tensor hooks: the readable cell, node by node
        xs = [mytorch.tensor(a, requires_grad=True) for a in arrays]
        cell.zero_grad()
        with _identity_hooks() if hooks else contextlib.nullcontext():
            h, c = cell(xs[0], (xs[1], xs[2]))
            if not hooks:  # the kernel's node, and h's node in front of it
                assert [n for n in _nodes(h, c) if "Accumulate" not in n] == \
                    ["AddBackward0", "MulBackward0"]
            grads = mytorch.autograd.grad((h * c).sum(), xs + list(cell.parameters()),
                                          create_graph=True)
            sum(g.pow(2).sum() for g in grads).backward()
        results.append([h, c, *grads, *(x.grad for x in xs), *(p.grad for p in cell.parameters())])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_lstm_cell_nodes_are_named_as_torch():
    """h' = o * tanh(c') is MulBackward0 and c' = f * c + i * g is AddBackward0, as in torch;
    h''s node leads to c''s. Each output alone back-propagates as the readable cell."""
    torch = pytest.importorskip("torch")
    tcell = torch.nn.LSTMCell(IN, HID)
    cell = mytorch.nn.LSTMCell(IN, HID)
    x = np.random.default_rng(2).standard_normal((B, IN)).astype(np.float32)
    th, tc = tcell(torch.from_numpy(x))
    h, c = cell(mytorch.from_numpy(x))
    assert (h.grad_fn.name(), c.grad_fn.name()) == (th.grad_fn.name(), tc.grad_fn.name())
    assert c.grad_fn in [n for n, _ in h.grad_fn.next_functions]
    for pick in (0, 1):
        grads = []
        for fast in (True, False):
            xt = mytorch.tensor(x, requires_grad=True)
            with contextlib.nullcontext() if fast else plugged(
                    lstm_cell=REGISTRY["lstm_cell"].reference):
                out = cell(xt)[pick]
            grads.append(mytorch.autograd.grad(out.pow(2).sum(), [xt, *cell.parameters()]))
        for a, b in zip(*grads, strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
