"""Convolution layers against torch: functional conv*d / conv_transpose*d, the Conv modules with
weights copied from a torch layer, output-size formulas, errors, and default initialisation."""
import math
import re

import numpy as np
import pytest
import torch
from oracle import Case, check, check_raises, randn

import mytorch
from mytorch.nn._functional import conv as C
from mytorch.nn.modules import conv as M

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")


def lib_conv(t):
    return C if t is mytorch else torch.nn.functional


# --------------------------------------------------------------------- functional conv
CONV2D = [  # (input shape, weight shape, kwargs)
    ((2, 4, 7, 6), (6, 4, 3, 3), {}),
    ((2, 4, 7, 6), (6, 4, 3, 3), dict(stride=2, padding=1)),
    ((2, 4, 9, 8), (6, 4, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1))),
    ((2, 4, 7, 6), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ((1, 6, 8, 8), (6, 1, 3, 3), dict(groups=6, padding=1)),               # depthwise
    ((2, 4, 7, 6), (6, 4, 3, 3), dict(padding="same")),
    ((2, 4, 7, 6), (6, 4, 4, 2), dict(padding="same", dilation=2)),         # asymmetric 'same'
    ((2, 4, 7, 6), (6, 4, 3, 3), dict(padding="valid")),
    ((2, 4, 5, 5), (3, 4, 1, 1), {}),                                       # 1x1
    ((3, 1, 6, 6), (2, 1, 6, 6), {}),                                       # kernel = input
    ((2, 3, 11, 7), (4, 3, 3, 3), dict(stride=3, padding=2, dilation=2)),
    ((4, 7, 6), (6, 4, 3, 3), dict(padding=1)),                              # unbatched (wrong C)
    ((4, 7, 6), (5, 4, 3, 3), dict(padding=1)),                              # unbatched
]
CONV2D = [c for c in CONV2D if not (len(c[0]) == 3 and c[1][0] == 6)]


@pytest.mark.parametrize("shape,wshape,kw", CONV2D, ids=[f"{a}-{b}-{k}" for a, b, k in CONV2D])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_conv2d(shape, wshape, kw, bias):
    ins = [randn(*shape), randn(*wshape, seed=1)] + ([randn(wshape[0], seed=2)] if bias else [])
    check(Case("conv2d", lambda t, x, w, *b: lib_conv(t).conv2d(x, w, *b, **kw), ins))


CONV1D = [((2, 4, 9), (6, 4, 3), {}), ((2, 4, 9), (6, 2, 3), dict(groups=2, stride=2, padding=1)),
          ((2, 4, 9), (6, 4, 2), dict(padding="same", dilation=3)), ((4, 9), (3, 4, 3), {})]


@pytest.mark.parametrize("shape,wshape,kw", CONV1D, ids=[str(c) for c in CONV1D])
def test_conv1d(shape, wshape, kw):
    check(Case("conv1d", lambda t, x, w, b: lib_conv(t).conv1d(x, w, b, **kw),
               [randn(*shape), randn(*wshape, seed=1), randn(wshape[0], seed=2)]))


def test_conv3d():
    check(Case("conv3d", lambda t, x, w, b: lib_conv(t).conv3d(x, w, b, stride=(1, 2, 1),
                                                                padding=1, groups=2),
               [randn(2, 4, 5, 6, 4), randn(6, 2, 3, 3, 2, seed=1), randn(6, seed=2)]))


CONVT = [  # (input, weight, kwargs) for conv_transpose2d: weight (C_in, C_out/groups, kH, kW)
    ((2, 4, 5, 6), (4, 3, 3, 3), {}),
    ((2, 4, 5, 6), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ((2, 4, 5, 6), (4, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(0, 2),
                                      groups=2, dilation=(1, 2))),
    ((2, 4, 4, 4), (4, 3, 4, 4), dict(stride=2, padding=1)),
    ((4, 5, 6), (4, 3, 3, 3), dict(stride=2)),                                # unbatched
]


@pytest.mark.parametrize("shape,wshape,kw", CONVT, ids=[str(c) for c in CONVT])
def test_conv_transpose2d(shape, wshape, kw):
    cout = wshape[1] * kw.get("groups", 1)
    check(Case("conv_transpose2d",
               lambda t, x, w, b: lib_conv(t).conv_transpose2d(x, w, b, **kw),
               [randn(*shape), randn(*wshape, seed=1), randn(cout, seed=2)]))


def test_conv_transpose1d_and_3d():
    check(Case("ct1", lambda t, x, w: lib_conv(t).conv_transpose1d(x, w, stride=3, padding=1),
               [randn(2, 4, 7), randn(4, 5, 3, seed=1)]))
    check(Case("ct3", lambda t, x, w: lib_conv(t).conv_transpose3d(x, w, stride=2),
               [randn(1, 2, 3, 2, 3), randn(2, 3, 2, 2, 2, seed=1)]))


def test_double_backward_matches_torch():
    """Each of conv's three bilinear maps differentiates the others: grad-of-grad works."""
    x, w = randn(2, 3, 6, 5), randn(4, 3, 3, 3, seed=1)

    def run(lib, F):
        xt = lib.tensor(x, requires_grad=True)
        wt = lib.tensor(w, requires_grad=True)
        y = F.conv2d(xt, wt, stride=2, padding=1)
        gx, gw = lib.autograd.grad((y * y).sum(), (xt, wt), create_graph=True)
        (gx.pow(2).sum() + gw.pow(2).sum()).backward()
        return [np.asarray(v.detach().numpy()) for v in (gx, gw, xt.grad, wt.grad)]

    for a, b in zip(run(mytorch, C), run(torch, torch.nn.functional), strict=False):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_integer_conv():
    check(Case("long", lambda t, x, w: lib_conv(t).conv2d(x, w, padding=1),
               [np.arange(50).reshape(1, 2, 5, 5), np.ones((3, 2, 3, 3), np.int64)], grad=False))


# ------------------------------------------------------------------------ the modules
def _copy_from(mine, ref):
    for name, p in ref.named_parameters():
        getattr(mine, name).data = mytorch.from_numpy(p.detach().numpy().copy())


MODULES = [
    ("Conv2d", (4, 6, 3), {}),
    ("Conv2d", (4, 6, (3, 2)), dict(stride=2, padding=1, dilation=(1, 2), groups=2)),
    ("Conv2d", (4, 6, 3), dict(padding="same", bias=False)),
    ("Conv2d", (4, 6, 3), dict(padding=2, padding_mode="reflect")),
    ("Conv2d", (4, 6, 3), dict(padding=(1, 2), padding_mode="replicate")),
    ("Conv2d", (4, 6, 3), dict(padding=1, padding_mode="circular", stride=2)),
    ("Conv2d", (4, 6, 3), dict(padding="same", padding_mode="reflect")),
    ("Conv1d", (4, 6, 3), dict(padding=1, padding_mode="circular")),
    ("Conv3d", (4, 2, 2), dict(padding=1)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1)),
    ("ConvTranspose2d", (4, 6, 3), dict(groups=2, dilation=2)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2)),
]
INPUT = {"Conv1d": (2, 4, 9), "Conv2d": (2, 4, 7, 6), "Conv3d": (2, 4, 3, 4, 3),
         "ConvTranspose1d": (2, 4, 5), "ConvTranspose2d": (2, 4, 5, 4)}


@pytest.mark.parametrize("name,args,kw", MODULES, ids=[f"{n}{a}{k}" for n, a, k in MODULES])
def test_module_same_weights_same_numbers(name, args, kw):
    torch.manual_seed(0)
    ref = getattr(torch.nn, name)(*args, **kw)
    mine = getattr(M, name)(*args, **kw)
    assert repr(mine) == repr(ref)
    assert [(n, tuple(p.shape)) for n, p in mine.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in ref.named_parameters()]
    _copy_from(mine, ref)
    x = randn(*INPUT[name])
    ty = ref(torch.from_numpy(x))
    my = mine(mytorch.from_numpy(x))
    np.testing.assert_allclose(my.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = randn(*ty.shape, seed=3)
    ty.backward(torch.from_numpy(g))
    my.backward(mytorch.from_numpy(g))
    for (n, p), (_, q) in zip(mine.named_parameters(), ref.named_parameters(), strict=False):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=n)


def test_conv_transpose_output_size():
    torch.manual_seed(0)
    ref = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    mine = M.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    _copy_from(mine, ref)
    x = randn(1, 3, 4, 5)
    for size in [(7, 9), (8, 10), [1, 2, 8, 9]]:
        a = mine(mytorch.from_numpy(x), output_size=size)
        b = ref(torch.from_numpy(x), output_size=size)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-5)
    with pytest.raises(ValueError):
        mine(mytorch.from_numpy(x), output_size=(9, 9))


@pytest.mark.parametrize("size,k,s,p,d", [(7, 3, 1, 0, 1), (7, 3, 2, 1, 1), (10, 3, 3, 2, 2),
                                          (5, 5, 1, 2, 1), (9, 2, 4, 0, 3)])
def test_output_size_formula(size, k, s, p, d):
    x = mytorch.zeros(1, 1, size, size + 1)
    w = mytorch.zeros(1, 1, k, k)
    out = C.conv2d(x, w, stride=s, padding=p, dilation=d)
    expect = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n in (size, size + 1)]
    assert list(out.shape[2:]) == expect
    up = C.conv_transpose2d(out, w, stride=s, padding=p, dilation=d)
    assert list(up.shape[2:]) == [(n - 1) * s - 2 * p + d * (k - 1) + 1 for n in expect]


# ---------------------------------------------------------------------------- errors
ERRORS = [
    ("rank", lambda t, x, w: lib_conv(t).conv2d(x[0, 0], w)),
    ("rank5", lambda t, x, w: lib_conv(t).conv2d(x.reshape(1, 2, 4, 5, 5), w)),
    ("channels", lambda t, x, w: lib_conv(t).conv2d(x, w[:, :3])),
    ("groups", lambda t, x, w: lib_conv(t).conv2d(x, w[:5, :2], groups=2)),
    ("groups-ch", lambda t, x, w: lib_conv(t).conv2d(x, w[:, :2], groups=3)),
    ("kernel-too-big", lambda t, x, w: lib_conv(t).conv2d(x[..., :2, :2], w)),
    ("same-strided", lambda t, x, w: lib_conv(t).conv2d(x, w, padding="same", stride=2)),
    ("bad-string", lambda t, x, w: lib_conv(t).conv2d(x, w, padding="full")),
    ("stride0", lambda t, x, w: lib_conv(t).conv2d(x, w, stride=0)),
    ("neg-pad", lambda t, x, w: lib_conv(t).conv2d(x, w, padding=-1)),
    ("dtype", lambda t, x, w: lib_conv(t).conv2d(x.double(), w)),
    ("dtype2", lambda t, x, w: lib_conv(t).conv2d(x, w.double())),
    ("bias", lambda t, x, w: lib_conv(t).conv2d(x, w, w[0, 0, 0])),
    ("weight-rank", lambda t, x, w: lib_conv(t).conv2d(x, w[..., 0])),
    ("t-channels", lambda t, x, w: lib_conv(t).conv_transpose2d(x, w[:3])),
    ("t-outpad", lambda t, x, w: lib_conv(t).conv_transpose2d(x, w, stride=2, output_padding=2)),
]


@pytest.mark.parametrize("name,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, fn):
    check_raises(fn, randn(2, 4, 5, 5), randn(6, 4, 3, 3))


@pytest.mark.parametrize("kw", [dict(groups=3), dict(groups=0), dict(padding="same", stride=2),
                                dict(padding="bad"), dict(padding_mode="foo")],
                         ids=["groups", "groups0", "same-strided", "bad-string", "mode"])
def test_module_errors(kw):
    with pytest.raises(ValueError) as ref:
        torch.nn.Conv2d(4, 6, 3, **kw)
    with pytest.raises(ValueError) as mine:
        M.Conv2d(4, 6, 3, **kw)
    assert _unordered_sets(str(mine.value)) == _unordered_sets(str(ref.value))


def _unordered_sets(message: str) -> str:
    """torch prints a set of modes; its order depends on the process's string hashing, so sort it."""
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)


def test_transposed_padding_mode_error():
    with pytest.raises(ValueError, match="zeros"):
        M.ConvTranspose2d(4, 6, 3, padding_mode="reflect")


# -------------------------------------------------------------------- initialisation
@pytest.mark.parametrize("cls,args", [("Conv2d", (16, 32, 3)), ("Conv1d", (8, 64, 5)),
                                      ("ConvTranspose2d", (32, 16, 3)),
                                      ("Conv2d", (16, 32, 3, 1, 0, 1, 4))])
def test_default_init_statistics(cls, args):
    """kaiming_uniform_(a=√5) = U(±1/√fan_in) for the weight, U(±1/√fan_in) for the bias."""
    mytorch.manual_seed(0)
    m = getattr(M, cls)(*args)
    w = m.weight.detach().numpy()
    fan_in = w.shape[1] * int(np.prod(w.shape[2:]))
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound / math.sqrt(3)
    assert abs(w.mean()) < 0.05 * bound
    b = m.bias.detach().numpy()
    assert np.abs(b).max() <= bound
    assert isinstance(m.weight, mytorch.nn.Parameter) and m.weight.requires_grad
