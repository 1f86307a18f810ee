"""Chapter 04's pieces: the readable references agree with the fused kernels they stand behind
(values, gradients, second derivatives, node names, running statistics), and the public
functions around them keep torch's errors."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch
from oracle import randn

import mytorch
from mytorch._pieces import REGISTRY
from mytorch.mine import plugged
from mytorch.nn._functional import conv as C
from mytorch.nn._functional import normalization as N
from mytorch.nn._functional import pooling as P

F = mytorch.nn.functional


def readable(name: str):
    """The piece's readable reference, plugged in as a student's version would be."""
    return plugged(**{name: REGISTRY[name].reference})


def run(fn, *arrays, create_graph: bool = False):
    """``fn`` on fresh leaves: its output, the gradients of every input (of a loss quadratic in
    the output, so that they depend on the inputs), and (with ``create_graph``) the gradient of
    the sum of squared gradients."""
    xs = [mytorch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    first = out[0] if isinstance(out, tuple) else out
    w = mytorch.from_numpy(np.random.default_rng(1).standard_normal(first.shape).astype(arrays[0].dtype))
    grads = mytorch.autograd.grad((first * first * w).sum(), xs, create_graph=create_graph)
    second = None
    if create_graph:
        second = mytorch.autograd.grad(sum((g * g).sum() for g in grads), xs, allow_unused=True)
    return out, grads, second, first.grad_fn.name()


def same(a, b, atol=1e-5, rtol=1e-5):
    for x, y in zip(a if isinstance(a, (tuple, list)) else [a], b if isinstance(b, (tuple, list)) else [b]):
        if x is None or y is None:
            assert x is None and y is None
            continue
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=rtol, atol=atol)


CONV = [dict(), dict(stride=2, padding=1), dict(padding=(2, 1), dilation=(1, 2), groups=2),
        dict(stride=(1, 3), padding="same"), dict(padding="same")]


@pytest.mark.parametrize("kw", CONV, ids=str)
@pytest.mark.parametrize("kernel", [(3, 3), (2, 3)], ids=["3x3", "2x3"])
def test_conv2d_reference_matches_fused(kw, kernel):
    if kw.get("padding") == "same" and kw.get("stride", 1) != 1:
        kw = {**kw, "stride": 1}
    x, w, b = randn(2, 4, 7, 8), randn(6, 4 // kw.get("groups", 1), *kernel, seed=1), randn(6, seed=2)
    fn = lambda x, w, b: F.conv2d(x, w, b, **kw)  # noqa: E731
    fast = run(fn, x, w, b, create_graph=True)
    with readable("conv2d_unfold"):
        slow = run(fn, x, w, b, create_graph=True)
    same(fast[0], slow[0])
    same(fast[1], slow[1], atol=1e-4)
    same(fast[2], slow[2], atol=1e-3, rtol=1e-4)   # float32 sums of ~1e4: a few ulps apart
    assert fast[3] == slow[3] == "ConvolutionBackward0"


POOL = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True),
        dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)]


@pytest.mark.parametrize("kw", POOL, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 10)], ids=["batched", "unbatched"])
def test_max_pool2d_reference_matches_fused(kw, shape):
    fn = lambda x: F.max_pool2d(x, **kw, return_indices=True)  # noqa: E731
    x = randn(*shape)
    fast = run(fn, x, create_graph=True)
    with readable("max_pool2d_windows"):
        slow = run(fn, x, create_graph=True)
    same(fast[0], slow[0])
    same(fast[1], slow[1])
    same(fast[2], slow[2])
    assert fast[3] == slow[3] == "MaxPool2DWithIndicesBackward0"
    assert not slow[0][1].requires_grad and slow[0][1].dtype == mytorch.int64


def test_max_pool2d_reference_keeps_torchs_index_rules():
    """NaN and all -inf windows: the shell gives torch's indices whatever the piece picked."""
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = x[0, 0, 0, 1] = np.nan
    x[0, 0, 2:, 2:] = -np.inf
    want = torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, 1, padding=1, return_indices=True)
    with readable("max_pool2d_windows"):
        got = F.max_pool2d(mytorch.from_numpy(x), 2, 1, padding=1, return_indices=True)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    ints = mytorch.tensor([[[[3, -7, 2], [5, 1, 0], [-2, 8, 4]]]])
    with readable("max_pool2d_windows"):
        got = F.max_pool2d(ints, 2, padding=1, ceil_mode=True)
    np.testing.assert_array_equal(got.numpy(), F.max_pool2d(ints, 2, padding=1, ceil_mode=True).numpy())


@pytest.mark.parametrize("shape, affine, track", [((8, 3), True, True), ((4, 5, 3, 2), False, True),
                                                  ((3, 2, 5), True, False)], ids=str)
def test_batch_norm_reference_matches_fused(shape, affine, track):
    c = shape[1]
    params = [randn(c, seed=3), randn(c, seed=4)] if affine else []

    def one(ctx):
        stats = (mytorch.zeros(c), mytorch.ones(c)) if track else (None, None)

        def fn(x, *wb):
            return F.batch_norm(x, *stats, *(wb or (None, None)), training=True, momentum=0.3)

        with ctx:
            return run(fn, randn(*shape) * 2 + 1, *params, create_graph=True), stats

    (fo, fg, fs, fname), fstats = one(contextlib.nullcontext())
    (so, sg, ss, sname), sstats = one(readable("batch_norm_train"))
    same(fo, so)
    same(fg, sg, atol=1e-4)
    same(fs, ss, atol=1e-3, rtol=1e-4)
    assert fname == sname == "NativeBatchNormBackward0"
    if track:  # updated once each, although the readable piece ran again in backward
        same(fstats, sstats)


def test_batch_norm_running_stats_may_change_before_backward():
    """The node does not save the running statistics: a second training step before backward
    (two forward passes, one loss) is fine, as in torch."""
    bn = mytorch.nn.BatchNorm1d(3)
    x = mytorch.tensor(randn(5, 3), requires_grad=True)
    with readable("batch_norm_train"):
        (bn(x) * bn(x * 2)).sum().backward()
    ref = torch.nn.BatchNorm1d(3)
    xt = torch.tensor(randn(5, 3), requires_grad=True)
    (ref(xt) * ref(xt * 2)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), ref.running_var.detach().numpy(), rtol=1e-5)


@pytest.mark.parametrize("kw", [dict(num_layers=2, bidirectional=True), dict(proj_size=3),
                                dict(bias=False, batch_first=True)], ids=str)
def test_lstm_runs_a_students_cell_step_by_step(kw):
    m = mytorch.nn.LSTM(4, 6, **kw)
    x = randn(5, 3, 4)
    calls = []

    def cell(*args):
        calls.append(1)
        return REGISTRY["lstm_cell"].reference(*args)

    fast = run(lambda x: m(x)[0], x)
    with plugged(lstm_cell=cell):
        slow = run(lambda x: m(x)[0], x)
    same(fast[0], slow[0])
    same(fast[1], slow[1])
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    steps = 3 if kw.get("batch_first") else 5
    assert len(calls) == steps * layers
    calls.clear()
    packed = mytorch.nn.utils.rnn.pack_sequence([mytorch.tensor(randn(n, 4)) for n in (4, 2, 1)])
    with plugged(lstm_cell=cell):
        got = m(packed)[0].data
    same(got, m(packed)[0].data)
    assert len(calls) == 4 * layers


@pytest.mark.parametrize("kw", [dict(scale_factor=1.1), dict(scale_factor=2.1), dict(scale_factor=2),
                                dict(scale_factor=0.5), dict(scale_factor=(0.4, 3)), dict(size=(5, 13)),
                                dict(size=(9, 9)), dict(scale_factor=1 / 3)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 5, 9), (1, 2, 5, 4, 3)], ids=["1d", "2d", "3d"])
def test_interpolate_nearest_matches_torch_with_either_version(kw, shape):
    """torch's 2-D kernel copies a kept size and halves indices for a doubled one whatever the
    scale factor; in 1-D and 3-D it computes floor(i * scale) (scale_factor=1.1 keeps 5 as 5,
    2.1 turns 5 into 10, and the indices differ)."""
    d = len(shape) - 2
    kw = {k: (v[:d] + (v[-1],) * (d - len(v)) if isinstance(v, tuple) else v) for k, v in kw.items()}
    x = randn(*shape)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), **kw).numpy()
    np.testing.assert_array_equal(F.interpolate(mytorch.from_numpy(x), **kw).numpy(), want)
    with readable("nearest_source_index"):
        np.testing.assert_array_equal(F.interpolate(mytorch.from_numpy(x), **kw).numpy(), want)


def test_the_shells_keep_torchs_errors():
    """A piece returns a size of zero or less when nothing fits; the shells raise torch's errors."""
    for fn in (lambda t: t.nn.functional.conv2d(t.zeros(1, 1, 2, 2), t.zeros(1, 1, 3, 3)),
               lambda t: t.nn.functional.max_pool2d(t.zeros(1, 1, 1, 1), 2),
               lambda t: t.nn.functional.unfold(t.zeros(1, 1, 2, 2), 3)):
        with pytest.raises(RuntimeError) as mine:
            fn(mytorch)
        with pytest.raises(RuntimeError) as theirs:
            fn(torch)
        assert str(mine.value) == str(theirs.value)


def test_pieces_are_called_where_the_book_says():
    """A student's version of each piece is what the library runs (counted by mytorch.mine)."""
    from mytorch.mine import CALLS

    x = mytorch.randn(1, 2, 6, 6, requires_grad=True)
    uses = {
        "conv_output_size": lambda: mytorch.nn.Conv2d(2, 2, 3)(x),
        "nearest_source_index": lambda: F.interpolate(x, scale_factor=0.5),
        "fan_in_and_fan_out": lambda: mytorch.nn.init.xavier_normal_(mytorch.empty(3, 4)),
        "max_pool2d_windows": lambda: mytorch.nn.MaxPool2d(2)(x),
        "conv2d_unfold": lambda: mytorch.nn.Conv2d(2, 3, 3)(x),
        "batch_norm_train": lambda: mytorch.nn.BatchNorm2d(2)(x),
        "lstm_cell": lambda: mytorch.nn.LSTMCell(3, 2)(mytorch.randn(1, 3)),
    }
    for name, use in uses.items():
        before = CALLS[name]
        with readable(name):
            use()
        assert CALLS[name] > before, name
