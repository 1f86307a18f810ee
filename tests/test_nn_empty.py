"""Empty batches (N = 0) through every layer family, against real PyTorch.

A data loader's last batch, or a mask that selects nothing, hands a layer zero samples. torch returns
an empty result of the right shape (and ``nan`` for the mean of no losses); reshapes written with
``-1`` cannot infer a size from zero elements, so the kernels spell their sizes out.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from nn_oracle import NN, F, compare_module
from oracle import Case, check, check_raises, randn


def empty(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.float32)


def labels(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.int64)


FUNCTIONS = [
    Case("conv1d", lambda t, x, w: F(t).conv1d(x, w, padding=1), [empty(0, 2, 5), randn(3, 2, 3)]),
    Case("conv2d", lambda t, x, w: F(t).conv2d(x, w), [empty(0, 1, 5, 5), randn(2, 1, 3, 3)]),
    Case("conv2d groups stride", lambda t, x, w: F(t).conv2d(x, w, groups=2, padding=1, stride=2),
         [empty(0, 2, 5, 5), randn(4, 1, 3, 3)]),
    Case("conv3d", lambda t, x, w: F(t).conv3d(x, w), [empty(0, 1, 4, 4, 4), randn(1, 1, 3, 3, 3)]),
    Case("conv_transpose1d", lambda t, x, w: F(t).conv_transpose1d(x, w),
         [empty(0, 1, 5), randn(1, 2, 3)]),
    Case("conv_transpose2d", lambda t, x, w: F(t).conv_transpose2d(x, w, stride=2),
         [empty(0, 1, 5, 5), randn(1, 2, 3, 3)]),
    Case("max_pool2d", lambda t, x: F(t).max_pool2d(x, 2, padding=1, return_indices=True),
         [empty(0, 1, 4, 4)]),
    Case("avg_pool2d", lambda t, x: F(t).avg_pool2d(x, 3, padding=1, count_include_pad=False),
         [empty(0, 1, 4, 4)]),
    Case("adaptive_avg_pool2d", lambda t, x: F(t).adaptive_avg_pool2d(x, 3), [empty(0, 1, 4, 4)]),
    Case("adaptive_max_pool2d", lambda t, x: F(t).adaptive_max_pool2d(x, 3, True),
         [empty(0, 1, 4, 4)]),
    Case("adaptive_max_pool1d", lambda t, x: F(t).adaptive_max_pool1d(x, 3), [empty(0, 2, 4)]),
    Case("batch_norm", lambda t, x: F(t).batch_norm(x, None, None, training=True), [empty(0, 3)]),
    Case("layer_norm affine", lambda t, x, w, b: F(t).layer_norm(x, (3,), w, b),
         [empty(0, 3), randn(3), randn(3)]),
    Case("group_norm", lambda t, x, w, b: F(t).group_norm(x, 2, w, b),
         [empty(0, 4, 3), randn(4), randn(4)]),
    Case("instance_norm", lambda t, x: F(t).instance_norm(x), [empty(0, 3, 4)]),
    Case("interpolate bilinear", lambda t, x: F(t).interpolate(x, size=(5, 5), mode="bilinear"),
         [empty(0, 1, 3, 3)]),
    Case("interpolate bicubic", lambda t, x: F(t).interpolate(x, scale_factor=2, mode="bicubic"),
         [empty(0, 1, 3, 3)]),
    Case("interpolate nearest", lambda t, x: F(t).interpolate(x, scale_factor=2),
         [empty(0, 2, 3)]),
    Case("unfold", lambda t, x: F(t).unfold(x, 2), [empty(0, 1, 3, 3)]),
    Case("fold", lambda t, x: F(t).fold(x, (3, 3), 2), [empty(0, 4, 4)]),
    Case("sdpa", lambda t, q: F(t).scaled_dot_product_attention(q, q, q), [empty(0, 3, 4)]),
]


@pytest.mark.parametrize("case", FUNCTIONS, ids=str)
def test_functions_on_an_empty_batch(case: Case) -> None:
    check(case)


# The mean of no losses is 0/0 = nan (torch), the sum is 0, 'none' keeps the empty shape.
LOSSES = [
    Case(f"{name} {red}", (lambda fn, red: lambda t, *xs: fn(t, *xs, reduction=red))(fn, red), ins)
    for red in ("none", "sum", "mean")
    for name, fn, ins in [
        ("cross_entropy", lambda t, x, y, **kw: F(t).cross_entropy(x, y, **kw),
         [empty(0, 3), labels(0)]),
        ("cross_entropy 2d", lambda t, x, y, **kw: F(t).cross_entropy(x, y, **kw),
         [empty(0, 3, 2, 2), labels(0, 2, 2)]),
        ("cross_entropy probs", lambda t, x, y, **kw: F(t).cross_entropy(x, y, **kw),
         [empty(0, 3), empty(0, 3)]),
        ("cross_entropy smoothing", lambda t, x, y, **kw: F(t).cross_entropy(
            x, y, label_smoothing=0.1, **kw), [empty(0, 3), labels(0)]),
        ("nll_loss", lambda t, x, y, **kw: F(t).nll_loss(x, y, **kw), [empty(0, 3), labels(0)]),
        ("mse_loss", lambda t, x, y, **kw: F(t).mse_loss(x, y, **kw), [empty(0, 3), empty(0, 3)]),
        ("l1_loss", lambda t, x, y, **kw: F(t).l1_loss(x, y, **kw), [empty(0, 3), empty(0, 3)]),
        ("huber_loss", lambda t, x, y, **kw: F(t).huber_loss(x, y, **kw),
         [empty(0, 3), empty(0, 3)]),
        ("binary_cross_entropy", lambda t, x, y, **kw: F(t).binary_cross_entropy(
            x.sigmoid(), y, **kw), [empty(0, 3), empty(0, 3)]),
        ("bce_with_logits", lambda t, x, y, **kw: F(t).binary_cross_entropy_with_logits(
            x, y, pos_weight=t.ones(3), **kw), [empty(0, 3), empty(0, 3)]),
    ]
]


@pytest.mark.parametrize("case", LOSSES, ids=str)
def test_losses_on_an_empty_batch(case: Case) -> None:
    check(case)


MODULES = {
    "Conv2d": (lambda t: NN(t).Conv2d(2, 3, 3, padding=1), (0, 2, 4, 4)),
    "ConvTranspose2d": (lambda t: NN(t).ConvTranspose2d(2, 3, 3, stride=2), (0, 2, 4, 4)),
    "BatchNorm2d": (lambda t: NN(t).BatchNorm2d(3), (0, 3, 2, 2)),
    "LayerNorm": (lambda t: NN(t).LayerNorm(3), (0, 3)),
    "GroupNorm": (lambda t: NN(t).GroupNorm(1, 3), (0, 3, 4)),
    "Linear": (lambda t: NN(t).Linear(3, 2), (0, 3)),
    "LSTM": (lambda t: NN(t).LSTM(3, 4), (2, 0, 3)),
    "GRU batch_first": (lambda t: NN(t).GRU(3, 4, batch_first=True), (0, 2, 3)),
    "MultiheadAttention": (lambda t: NN(t).MultiheadAttention(4, 2), (3, 0, 4)),
    "MultiheadAttention batch_first": (lambda t: NN(t).MultiheadAttention(4, 2, batch_first=True),
                                       (0, 3, 4)),
}


@pytest.mark.parametrize("make,shape", MODULES.values(), ids=MODULES.keys())
def test_modules_on_an_empty_batch(make, shape) -> None:
    call = (lambda layer, lib, x: layer(x, x, x)) if "MultiheadAttention" in str(make(torch)) \
        else None
    compare_module(make, [empty(*shape)], call=call)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("shape", [(0, 2, 3), (0, 3)], ids=["batched", "unbatched"])
def test_rnn_refuses_an_empty_sequence(mode, shape) -> None:
    err = check_raises(lambda t, x: getattr(NN(t), mode)(3, 4)(x), empty(*shape))
    assert str(err) == "Expected sequence length to be larger than 0 in RNN"


def test_conv_weight_without_rows_is_torchs_error() -> None:
    err = check_raises(lambda t, x, w: F(t).conv2d(x, w), randn(2, 1, 5, 5), empty(0, 1, 3, 3))
    assert str(err) == ("Given groups=1, expected weight to be at least 1 at dimension 0, but got "
                        "weight of size [0, 1, 3, 3] instead")
