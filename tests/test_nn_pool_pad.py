"""Pooling, padding, interpolation, fold/unfold and pixel shuffle against torch (values, indices,
gradients, errors and module reprs)."""
import numpy as np
import pytest
import torch
from oracle import Case, check, check_raises, randn

import mytorch
from mytorch.nn._functional import padding as PD
from mytorch.nn._functional import pooling as P
from mytorch.nn._functional import sampling as S
from mytorch.nn.modules import fold as MF
from mytorch.nn.modules import padding as MPD
from mytorch.nn.modules import pixelshuffle as MPS
from mytorch.nn.modules import pooling as MP
from mytorch.nn.modules import upsampling as MU

TF = torch.nn.functional


def F(t, mod):
    return mod if t is mytorch else TF


# ----------------------------------------------------------------------------- max pool
MAX2D = [dict(kernel_size=2), dict(kernel_size=3), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1), ceil_mode=True),
         dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2, stride=1),
         dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True),
         dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)]


@pytest.mark.parametrize("kw", MAX2D, ids=[str(k) for k in MAX2D])
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 10)], ids=["batched", "unbatched"])
def test_max_pool2d(kw, shape):
    check(Case("max_pool2d", lambda t, x: F(t, P).max_pool2d(x, **kw, return_indices=True),
               [randn(*shape)]))


def test_max_pool2d_ties_nan_and_inf():
    """Ties keep the first maximum; NaN wins; an all -inf window points at its first element."""
    x = np.zeros((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 2:, 2:] = -np.inf
    check(Case("ties", lambda t, x: F(t, P).max_pool2d(x, 2, 1, padding=1, return_indices=True),
               [x], grad=False))
    check(Case("ties2", lambda t, x: F(t, P).max_pool2d(x, 2, return_indices=True),
               [np.ones((1, 2, 4, 4), np.float32)]))


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1, return_indices=True),
                                dict(kernel_size=2, dilation=2, ceil_mode=True)], ids=str)
def test_max_pool1d_3d(kw):
    check(Case("max_pool1d", lambda t, x: F(t, P).max_pool1d(x, **kw), [randn(2, 3, 11)]))
    check(Case("max_pool3d", lambda t, x: F(t, P).max_pool3d(x, **kw), [randn(2, 2, 5, 6, 5)]))


def test_max_pool_double_backward():
    x = randn(2, 2, 6, 6)
    outs = []
    for lib, mod in ((mytorch, P), (torch, TF)):
        xt = lib.tensor(x, requires_grad=True)
        y = mod.max_pool2d(xt, 3, 2, 1)
        (g,) = lib.autograd.grad((y ** 2).sum(), xt, create_graph=True)
        (g ** 2).sum().backward()
        outs.append((g.detach().numpy(), xt.grad.numpy()))
    for a, b in zip(*outs, strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_max_unpool():
    check(Case("unpool2d", lambda t, x: F(t, P).max_unpool2d(
        *F(t, P).max_pool2d(x, 2, return_indices=True), 2), [randn(2, 3, 6, 8)]))
    check(Case("unpool2d-size", lambda t, x: F(t, P).max_unpool2d(
        *F(t, P).max_pool2d(x, 2, return_indices=True), 2, output_size=(7, 9)),
        [randn(2, 3, 7, 9)]))
    check(Case("unpool1d", lambda t, x: F(t, P).max_unpool1d(
        *F(t, P).max_pool1d(x, 3, 2, return_indices=True), 3, 2), [randn(2, 3, 9)]))


# ----------------------------------------------------------------------------- avg pool
AVG2D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
         dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
         dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
         dict(kernel_size=(3, 2), padding=(1, 1), ceil_mode=True, divisor_override=3),
         dict(kernel_size=(2, 4), stride=(3, 1), padding=(1, 2))]


@pytest.mark.parametrize("kw", AVG2D, ids=[str(k) for k in AVG2D])
def test_avg_pool2d(kw):
    check(Case("avg_pool2d", lambda t, x: F(t, P).avg_pool2d(x, **kw), [randn(2, 3, 9, 8)]))


def test_avg_pool1d_3d():
    check(Case("avg1", lambda t, x: F(t, P).avg_pool1d(x, 3, 2, 1, True, False), [randn(2, 3, 10)]))
    check(Case("avg3", lambda t, x: F(t, P).avg_pool3d(x, 2, 1, 1, count_include_pad=False),
               [randn(2, 3, 4, 5, 6)]))
    check(Case("avg3d", lambda t, x: F(t, P).avg_pool3d(x, (2, 3, 2), divisor_override=5),
               [randn(1, 2, 4, 6, 5)]))


def test_avg_pool_double_backward():
    x = randn(1, 2, 5, 5)
    outs = []
    for lib, mod in ((mytorch, P), (torch, TF)):
        xt = lib.tensor(x, requires_grad=True)
        y = mod.avg_pool2d(xt, 3, 2, 1, count_include_pad=False)
        (g,) = lib.autograd.grad((y ** 3).sum(), xt, create_graph=True)
        (g ** 2).sum().backward()
        outs.append((g.detach().numpy(), xt.grad.numpy()))
    for a, b in zip(*outs, strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- adaptive
@pytest.mark.parametrize("size", [1, 3, (4, 5), (None, 3), (9, 8), (2, 4), (6, 7), (0, 3)],
                         ids=str)
def test_adaptive_pool2d(size):
    check(Case("aavg", lambda t, x: F(t, P).adaptive_avg_pool2d(x, size), [randn(2, 3, 9, 8)],
               grad=size != (0, 3)))  # torch cannot backprop an empty output
    if size != (0, 3):
        check(Case("amax", lambda t, x: F(t, P).adaptive_max_pool2d(x, size, return_indices=True),
                   [randn(2, 3, 9, 8)]))


def test_adaptive_pool1d_3d():
    check(Case("aavg1", lambda t, x: F(t, P).adaptive_avg_pool1d(x, 4), [randn(2, 3, 10)]))
    check(Case("amax1", lambda t, x: F(t, P).adaptive_max_pool1d(x, 4, True), [randn(2, 3, 10)]))
    check(Case("aavg3", lambda t, x: F(t, P).adaptive_avg_pool3d(x, (2, 3, 4)),
               [randn(1, 2, 5, 7, 6)]))


# ----------------------------------------------------------------------------- pool errors
POOL_ERRORS = [
    ("pad-too-big", lambda t, x: F(t, P).max_pool2d(x, 3, padding=2)),
    ("avg-pad-too-big", lambda t, x: F(t, P).avg_pool2d(x, 3, padding=2)),
    ("too-small", lambda t, x: F(t, P).max_pool2d(x, 6)),
    ("avg-too-small", lambda t, x: F(t, P).avg_pool2d(x, 6)),
    ("rank", lambda t, x: F(t, P).max_pool2d(x[0, 0], 2)),
    ("rank1d", lambda t, x: F(t, P).max_pool1d(x, 2)),
    ("stride0", lambda t, x: F(t, P).max_pool2d(x, 2, stride=0)),
    ("divisor0", lambda t, x: F(t, P).avg_pool2d(x, 2, divisor_override=0)),
    ("adaptive-rank", lambda t, x: F(t, P).adaptive_avg_pool2d(x[0, 0], 3)),
]


@pytest.mark.parametrize("name,fn", POOL_ERRORS, ids=[e[0] for e in POOL_ERRORS])
def test_pool_errors(name, fn):
    check_raises(fn, randn(2, 4, 5, 5))


# ----------------------------------------------------------------------------- padding
PADS = [("constant", (1, 2)), ("constant", (2, 1, 0, 3)), ("constant", (-1, 2, 1, -2)),
        ("constant", (1, 1, 2, 2, 1, 1, 0, 1)),
        ("reflect", (1, 2)), ("reflect", (2, 1, 0, 3)), ("reflect", (-1, 2, 1, 1)),
        ("replicate", (1, 2)), ("replicate", (3, 1, 4, 0)), ("replicate", (1, 1, 2, 2, 1, 1)),
        ("circular", (1, 2)), ("circular", (2, 1, 0, 3)), ("circular", (-1, 2, 1, -1)),
        ("circular", (1, 1, 2, 2, 1, 1))]


@pytest.mark.parametrize("mode,pad", PADS, ids=[f"{m}{p}" for m, p in PADS])
def test_pad(mode, pad):
    d = len(pad) // 2
    shape = (2, 3, 5, 4, 6)[-(d + 2 if mode != "constant" else 5):]
    shape = shape if mode == "constant" or d == 3 else (2, 3, 5, 6, 7)[-(d + 2):]
    check(Case("pad", lambda t, x: F(t, PD).pad(x, pad, mode=mode), [randn(*shape)]))


def test_pad_value_and_unbatched():
    check(Case("value", lambda t, x: F(t, PD).pad(x, (1, 1, 2, 0), value=2.5), [randn(3, 4)]))
    check(Case("reflect-unbatched", lambda t, x: F(t, PD).pad(x, (2, 1), mode="reflect"),
               [randn(3, 5)]))
    check(Case("int", lambda t, x: F(t, PD).pad(x, (1, 2), value=7),
               [np.arange(6).reshape(2, 3)], grad=False))


PAD_ERRORS = [
    ("odd", lambda t, x: F(t, PD).pad(x, (1,))),
    ("too-long", lambda t, x: F(t, PD).pad(x, (1, 1) * 5)),
    ("reflect-too-big", lambda t, x: F(t, PD).pad(x, (5, 5), mode="reflect")),
    ("reflect-dims", lambda t, x: F(t, PD).pad(x, (1, 1, 1, 1, 1, 1, 1, 1), mode="reflect")),
    ("reflect-4d-2", lambda t, x: F(t, PD).pad(x, (1, 1), mode="reflect")),
    ("circular-wrap", lambda t, x: F(t, PD).pad(x, (6, 6, 0, 0), mode="circular")),
    ("mode", lambda t, x: F(t, PD).pad(x, (1, 1), mode="foo")),
    ("value", lambda t, x: F(t, PD).pad(x, (1, 1, 1, 1), mode="reflect", value=1.0)),
    ("negative", lambda t, x: F(t, PD).pad(x, (-6, 2))),
]


@pytest.mark.parametrize("name,fn", PAD_ERRORS, ids=[e[0] for e in PAD_ERRORS])
def test_pad_errors(name, fn):
    check_raises(fn, randn(2, 4, 5, 5))


MODULE_PADS = [("ZeroPad2d", (1,)), ("ZeroPad1d", ((1, 2),)), ("ZeroPad3d", (1,)),
               ("ConstantPad2d", ((1, 0, 2, 1), 3.5)), ("ConstantPad1d", (2, 1)),
               ("ConstantPad3d", (1, -1.0)), ("ReflectionPad2d", (2,)),
               ("ReflectionPad1d", ((1, 2),)), ("ReflectionPad3d", (1,)),
               ("ReplicationPad2d", ((1, 2, 0, 3),)), ("ReplicationPad1d", (2,)),
               ("ReplicationPad3d", (1,)), ("CircularPad2d", (1,)), ("CircularPad1d", ((2, 1),)),
               ("CircularPad3d", (1,))]


@pytest.mark.parametrize("name,args", MODULE_PADS, ids=[m[0] + str(m[1]) for m in MODULE_PADS])
def test_pad_modules(name, args):
    ref, mine = getattr(torch.nn, name)(*args), getattr(MPD, name)(*args)
    assert repr(mine) == repr(ref)
    d = int(name[-2])
    check(Case(name, lambda t, x: (mine if t is mytorch else ref)(x),
               [randn(*(2, 3, 4, 5, 6)[-(d + 2):])]))


# ---------------------------------------------------------------------------- interpolate
INTERP = [dict(scale_factor=2), dict(size=(3, 4)), dict(size=(11, 13)), dict(size=5),
          dict(scale_factor=(1.7, 0.6)), dict(scale_factor=0.5), dict(scale_factor=3.3),
          dict(scale_factor=2.5, mode="nearest-exact"), dict(size=(3, 11), mode="nearest-exact"),
          dict(size=(8, 9), mode="bilinear"), dict(size=(8, 9), mode="bilinear", align_corners=True),
          dict(size=(3, 2), mode="bilinear"), dict(size=(1, 1), mode="bilinear", align_corners=True),
          dict(scale_factor=1.3, mode="bilinear"), dict(scale_factor=0.4, mode="bilinear",
                                                         align_corners=True),
          dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True),
          dict(scale_factor=0.7, mode="bicubic"), dict(size=(9, 10), mode="bicubic",
                                                       align_corners=True),
          dict(scale_factor=2, mode="bicubic"), dict(size=(3, 2), mode="area"),
          dict(scale_factor=0.5, mode="area")]


@pytest.mark.parametrize("kw", INTERP, ids=[str(k) for k in INTERP])
def test_interpolate_2d(kw):
    check(Case("interpolate", lambda t, x: F(t, S).interpolate(x, **kw), [randn(2, 3, 5, 7)]))


@pytest.mark.parametrize("kw", [dict(scale_factor=1.7, mode="linear"),
                                dict(size=4, mode="linear", align_corners=True),
                                dict(size=12), dict(scale_factor=0.6, mode="nearest-exact"),
                                dict(size=4, mode="area")], ids=str)
def test_interpolate_1d(kw):
    check(Case("interpolate1d", lambda t, x: F(t, S).interpolate(x, **kw), [randn(2, 3, 9)]))


@pytest.mark.parametrize("kw", [dict(size=(3, 5, 4), mode="trilinear"),
                                dict(scale_factor=2, mode="trilinear", align_corners=True),
                                dict(scale_factor=(2, 1, 0.5))], ids=str)
def test_interpolate_3d(kw):
    check(Case("interpolate3d", lambda t, x: F(t, S).interpolate(x, **kw), [randn(1, 2, 4, 3, 5)]))


def test_interpolate_nearest_integer_input():
    check(Case("nearest-int", lambda t, x: F(t, S).interpolate(x, scale_factor=2),
               [np.arange(12.0).reshape(1, 1, 3, 4)]))


INTERP_ERRORS = [
    ("align-nearest", lambda t, x: F(t, S).interpolate(x, scale_factor=2, align_corners=True)),
    ("both", lambda t, x: F(t, S).interpolate(x, size=3, scale_factor=2)),
    ("neither", lambda t, x: F(t, S).interpolate(x)),
    ("linear-4d", lambda t, x: F(t, S).interpolate(x, size=3, mode="linear")),
    ("trilinear-4d", lambda t, x: F(t, S).interpolate(x, size=3, mode="trilinear")),
    ("mode", lambda t, x: F(t, S).interpolate(x, size=3, mode="foo")),
    ("size-len", lambda t, x: F(t, S).interpolate(x, size=(3, 4, 5))),
    ("scale-len", lambda t, x: F(t, S).interpolate(x, scale_factor=(2, 2, 2))),
]


@pytest.mark.parametrize("name,fn", INTERP_ERRORS, ids=[e[0] for e in INTERP_ERRORS])
def test_interpolate_errors(name, fn):
    check_raises(fn, randn(2, 4, 5, 5))


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(3, 4), mode="bilinear",
                                                            align_corners=True),
                                dict(scale_factor=(2, 3), mode="bicubic")], ids=str)
def test_upsample_module(kw):
    ref, mine = torch.nn.Upsample(**kw), MU.Upsample(**kw)
    assert repr(mine) == repr(ref)
    check(Case("Upsample", lambda t, x: (mine if t is mytorch else ref)(x), [randn(1, 2, 4, 5)]))


def test_upsampling_legacy_modules():
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        ref, mine = getattr(torch.nn, name)(scale_factor=2), getattr(MU, name)(scale_factor=2)
        assert repr(mine) == repr(ref)
        check(Case(name, lambda t, x, mine=mine, ref=ref: (mine if t is mytorch else ref)(x),
                   [randn(1, 2, 3, 4)]))


# ---------------------------------------------------------------------------- fold/unfold
UNFOLD = [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
          dict(kernel_size=3, stride=2, padding=1)]


@pytest.mark.parametrize("kw", UNFOLD, ids=[str(k) for k in UNFOLD])
def test_unfold_fold(kw):
    check(Case("unfold", lambda t, x: F(t, S).unfold(x, **kw), [randn(2, 3, 5, 7)]))
    cols = TF.unfold(torch.zeros(2, 3, 5, 7), **kw)
    check(Case("fold", lambda t, c: F(t, S).fold(c, (5, 7), **kw),
               [randn(*cols.shape)]))
    ref, mine = torch.nn.Unfold(**kw), MF.Unfold(**kw)
    assert repr(mine) == repr(ref)
    assert repr(MF.Fold((5, 7), **kw)) == repr(torch.nn.Fold((5, 7), **kw))


def test_unfold_matches_conv():
    """A convolution is unfold + matmul: the textbook identity holds for our ops too."""
    x, w = mytorch.from_numpy(randn(2, 3, 6, 5)), mytorch.from_numpy(randn(4, 3, 3, 3, seed=1))
    from mytorch.nn._functional.conv import conv2d
    cols = S.unfold(x, 3, padding=1)                                   # (2, 27, 30)
    y = (w.reshape(4, -1) @ cols).reshape(2, 4, 6, 5)
    np.testing.assert_allclose(y.numpy(), conv2d(x, w, padding=1).numpy(), rtol=1e-5, atol=1e-5)


FOLD_ERRORS = [
    ("unfold-too-big", lambda t, x: F(t, S).unfold(x, 6)),
    ("fold-divisible", lambda t, x: F(t, S).fold(x.reshape(2, 10, 10)[:, :9], (4, 4), 2)),
    ("fold-blocks", lambda t, x: F(t, S).fold(x.reshape(2, 4, 25), (4, 4), 2)),
]


@pytest.mark.parametrize("name,fn", FOLD_ERRORS, ids=[e[0] for e in FOLD_ERRORS])
def test_fold_errors(name, fn):
    check_raises(fn, randn(2, 4, 5, 5))


def test_pixel_shuffle():
    check(Case("ps", lambda t, x: F(t, S).pixel_shuffle(x, 2), [randn(2, 8, 3, 4)]))
    check(Case("pus", lambda t, x: F(t, S).pixel_unshuffle(x, 3), [randn(2, 2, 6, 9)]))
    assert repr(MPS.PixelShuffle(2)) == repr(torch.nn.PixelShuffle(2))
    check_raises(lambda t, x: F(t, S).pixel_shuffle(x, 3), randn(2, 8, 3, 4))


# ------------------------------------------------------------------------- pool modules
POOL_MODULES = [("MaxPool2d", (2,), {}),
                ("MaxPool2d", ((2, 3),), dict(stride=1, padding=1, dilation=2,
                                             return_indices=True, ceil_mode=True)),
                ("MaxPool1d", (3,), {}), ("MaxPool3d", (2,), {}), ("AvgPool2d", (2,), {}),
                ("AvgPool1d", (3,), dict(stride=2, padding=1)),
                ("AvgPool3d", (2,), dict(divisor_override=3)),
                ("AvgPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False)),
                ("AdaptiveAvgPool2d", ((3, None),), {}), ("AdaptiveAvgPool1d", (3,), {}),
                ("AdaptiveAvgPool3d", (2,), {}), ("AdaptiveMaxPool2d", (2,), {}),
                ("AdaptiveMaxPool1d", (3,), dict(return_indices=True))]
POOL_INPUT = {"1d": (2, 3, 9), "2d": (2, 3, 7, 8), "3d": (1, 2, 4, 5, 6)}


@pytest.mark.parametrize("name,args,kw", POOL_MODULES, ids=[f"{n}{a}{k}" for n, a, k in POOL_MODULES])
def test_pool_modules(name, args, kw):
    ref, mine = getattr(torch.nn, name)(*args, **kw), getattr(MP, name)(*args, **kw)
    assert repr(mine) == repr(ref)
    check(Case(name, lambda t, x: (mine if t is mytorch else ref)(x),
               [randn(*POOL_INPUT[name[-2:]])]))


def test_max_unpool_module():
    pool, unpool = MP.MaxPool2d(2, return_indices=True), MP.MaxUnpool2d(2)
    assert repr(unpool) == repr(torch.nn.MaxUnpool2d(2))
    x = mytorch.from_numpy(randn(1, 1, 4, 4))
    y = unpool(*pool(x))
    ref = torch.nn.MaxUnpool2d(2)(*torch.nn.MaxPool2d(2, return_indices=True)(
        torch.from_numpy(x.numpy())))
    np.testing.assert_array_equal(y.numpy(), ref.numpy())



def _tiling_pool_results(lib, d, x, g, kernel):
    t = lib.tensor(x, requires_grad=True)
    out, idx = getattr(lib.nn.functional, f"max_pool{d}d")(t, kernel, return_indices=True)
    out.backward(lib.tensor(g[tuple(slice(0, n) for n in out.shape)]))
    return out.detach().numpy(), idx.numpy(), t.grad.numpy()


@pytest.mark.parametrize("d,shape,kernel", [(1, (2, 3, 9), 3), (2, (2, 3, 7, 6), 2), (2, (1, 2, 8, 8), 4),
                                            (3, (1, 2, 4, 5, 4), 2), (2, (3, 6, 5), (2, 1))])
@pytest.mark.parametrize("values", ["ties", "-inf", "nan", "random"])
def test_max_pool_tiling_windows_match_torch(d, shape, kernel, values):
    """stride = kernel, no padding (the common MaxPool2d(2)): ties pick the first tap, an all -inf
    window its first element, a NaN the last NaN, an input not divisible by the kernel drops its
    last rows, and the gradient lands where torch's."""
    from mytorch._pieces import activate, pieces

    rng = np.random.default_rng(len(shape) * 10 + d)
    x = rng.integers(0, 3, shape).astype(np.float32) if values != "random" else \
        rng.standard_normal(shape).astype(np.float32)
    if values == "-inf":
        x[..., :2] = -np.inf
    if values == "nan":
        x.reshape(-1)[::7] = np.nan
    g = rng.standard_normal(shape).astype(np.float32)
    before = pieces.max_pool2d_windows
    if values == "nan":  # torch's last-NaN rule is the library's fidelity, not exercise 04.4's
        activate("max_pool2d_windows", None)  # concept: pin the library's own piece (MYTORCH_MINE)
    try:
        mine = _tiling_pool_results(mytorch, d, x, g, kernel)
    finally:
        pieces.max_pool2d_windows = before
    for a, b in zip(mine, _tiling_pool_results(torch, d, x, g, kernel), strict=True):
        np.testing.assert_array_equal(a, b)


def _tiling_grad(lib, d, x, g, kernel, inplace, double):
    t = lib.tensor(x, requires_grad=True)
    out = getattr(lib.nn.functional, f"max_pool{d}d")(t, kernel)
    if inplace:  # the output changed in place after pooling: the backward must not read it
        out.mul_(-1)
    gt = lib.tensor(g[tuple(slice(0, n) for n in out.shape)], requires_grad=double)
    (grad,) = lib.autograd.grad(out, t, gt, create_graph=double)
    if double:  # second order: d(sum(grad * w))/d gt is grad's pattern
        (gg,) = lib.autograd.grad((grad * lib.tensor(g)).sum(), gt)
        return out.detach().numpy(), grad.detach().numpy(), gg.numpy()
    return out.detach().numpy(), grad.numpy()


@pytest.mark.parametrize("d,shape,kernel", [(1, (2, 3, 8), 2), (2, (2, 3, 8, 6), 2), (2, (1, 2, 8, 8), 4),
                                            (3, (1, 2, 4, 6, 4), 2), (2, (3, 6, 4), (3, 1))])
@pytest.mark.parametrize("values", ["ties", "-inf", "nan", "random", "inf-grad", "in-place", "double"])
def test_max_pool_tiling_gradient_without_indices_matches_torch(d, shape, kernel, values):
    """Windows that tile the input and no return_indices (the CNN's MaxPool2d(2)) take a path of
    their own in backward: ties (ReLU's zeros) go to the first tap, all -inf windows to their first
    element, a NaN maximum to the last NaN, an inf gradient stays where it belongs, an output
    changed in place does not change the gradient, and the gradient is differentiable again."""
    rng = np.random.default_rng(len(shape) * 10 + d)
    x = rng.integers(0, 3, shape).astype(np.float32) if values in ("ties", "-inf", "nan", "in-place") \
        else rng.standard_normal(shape).astype(np.float32)
    if values == "-inf":
        x[..., :2] = -np.inf
    if values == "nan":
        x.reshape(-1)[::7] = np.nan
    g = rng.standard_normal(shape).astype(np.float32)
    if values == "inf-grad":
        g.reshape(-1)[::5] = np.inf
    args = (d, x, g, kernel, values == "in-place", values == "double")
    from mytorch._pieces import activate, pieces

    before = pieces.max_pool2d_windows
    if values == "nan":  # torch's last-NaN rule is the library's fidelity, not exercise 04.4's
        activate("max_pool2d_windows", None)  # concept: pin the library's own piece (MYTORCH_MINE)
    try:
        mine = _tiling_grad(mytorch, *args)
    finally:
        pieces.max_pool2d_windows = before
    for a, b in zip(mine, _tiling_grad(torch, *args), strict=True):
        np.testing.assert_array_equal(a, b)


def test_max_pool_tiling_gradient_sees_an_input_changed_in_place():
    for lib in (mytorch, torch):
        t = lib.ones(1, 1, 4, 4, requires_grad=True)
        x = t * 1
        out = lib.nn.functional.max_pool2d(x, 2)
        x.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.sum().backward()
