"""mytorch's fast paths (issue 16) against torch, and against the general paths they bypass.

* The plain path of element-wise ops: same-shape float tensors in host memory (or a tensor and a
  Python number) skip the general argument handling, record their rule's node marked plain
  (``autograd/rules.py``) and, in a plain
  backward, run their formula on bare arrays (``_ops/pointwise.py``). Everything else must take
  the general path, with the same results: these tests compare both with torch, and check which
  path was taken.
* ``.grad`` taking a gradient's memory without a copy (``autograd/engine.py``: ``_GradMemory``),
  and copying it whenever that memory may be held elsewhere.
* ``F.linear`` as one ``AddmmBackward0`` node, and the array fast paths of the pieces it uses
  (``matmul_backward``, ``unbroadcast``).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import mytorch
import mytorch.nn.functional as F
from mytorch._pieces import REGISTRY, pieces
from mytorch.autograd.node import CLOSURE

from oracle import assert_same


def _pair(*arrays: np.ndarray, grad: bool = True) -> tuple[list, list]:
    mine = [mytorch.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    ref = [torch.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    return mine, ref


def _rand(*shape: int, seed: int = 0, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _plain(y: mytorch.Tensor) -> bool:
    """``y`` was recorded on the plain path: a rule's node whose operands its backward may use
    as bare arrays (``Node._dtype``: the result's array dtype; None on the general path)."""
    dt = y.grad_fn._dtype
    return dt is not None and dt is not CLOSURE


CHAINS = {
    "mul add tanh": lambda t, w, b: ((t * w + b).tanh() * 0.9).sum(),
    "sub div exp": lambda t, w, b: ((t - w) / (b * b + 1.0)).exp().sum(),
    "numbers first": lambda t, w, b: (2.0 - t * 3 + 1.5 / (w * w + 1) - (0.5 * b).sigmoid()).sum(),
    "unary family": lambda t, w, b: ((t * t + 1).log() + (w * w + 1).sqrt() + b.atan()
                                     + (t * 0.1).exp2() + (w * 0.1).expm1() + (b * 0.1).tan()
                                     + (t * t + 1).reciprocal() + (w * 0.5).atanh()
                                     + (b * b + 1).log2() + (b * b + 1).log10()
                                     + (t * t).log1p()).sum(),
    "same tensor twice": lambda t, w, b: (t * t + w / w - b - b).sum(),
}


@pytest.mark.parametrize("name", list(CHAINS))
def test_lean_chains_equal_torch(name):
    arrays = [_rand(4, 3, seed=i) for i in range(3)]
    mine, ref = _pair(*arrays)
    a, b = CHAINS[name](*mine), CHAINS[name](*ref)
    assert_same(a, b)
    a.backward()
    b.backward()
    for m, r in zip(mine, ref):
        assert_same(m.grad, r.grad, atol=1e-5, rtol=1e-5)


def test_lean_nodes_are_recorded_as_torch_names_them():
    (x, w), _ = _pair(_rand(3), _rand(3, seed=1))
    for y, name in [(x * w, "MulBackward0"), (x + w, "AddBackward0"), (x - w, "SubBackward0"),
                    (x / w, "DivBackward0"), (x.tanh(), "TanhBackward0"), (2.0 * x, "MulBackward0"),
                    (1 - x, "RsubBackward1"), (x.exp(), "ExpBackward0")]:
        assert _plain(y), name
        assert y.grad_fn.name() == name
    y = x * 2.0
    assert [n is None for n, _ in y.grad_fn.next_functions] == [False, True]  # like torch


def test_double_backward_through_lean_ops():
    mine, ref = _pair(_rand(5), _rand(5, seed=1))
    out = []
    for (x, w), lib in ((mine, mytorch), (ref, torch)):
        y = ((x * w).tanh() / (w * w + 1) - x.sigmoid()).sum()
        gx, = lib.autograd.grad(y, x, create_graph=True)
        gx.sum().backward()
        out.append((gx, x.grad, w.grad))
    for m, r in zip(*out):
        assert_same(m, r, atol=1e-5, rtol=1e-5)


LEAN_OPS = {
    "add": lambda x, w: x + w, "sub": lambda x, w: x - w, "mul": lambda x, w: x * w,
    "div": lambda x, w: x / (w * w + 1), "number first": lambda x, w: 3 * x - 0.5 / (w * w + 1),
    "number second": lambda x, w: (x + 2) * 1.5 - w / 4, "tanh": lambda x, w: (x * w).tanh(),
    "sigmoid": lambda x, w: x.sigmoid() + w.atanh() * 0.5,
}


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)], ids=str)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=lambda d: d.__name__)
@pytest.mark.parametrize("op", list(LEAN_OPS))
def test_lean_path_gives_the_general_paths_bits(op, dtype, shape):
    """Under saved-tensor hooks that change nothing, every op takes the general path: the lean
    path's values, gradients and node names must be the very same."""
    x0 = np.asarray(_rand(*shape, seed=3) * 0.5, dtype=dtype)
    w0 = np.asarray(_rand(*shape, seed=4) * 0.5, dtype=dtype)
    runs = []
    for general in (False, True):
        x, w = (mytorch.from_numpy(a.copy()).requires_grad_() for a in (x0, w0))
        if general:
            with mytorch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                y = LEAN_OPS[op](x, w)
            assert _general(y)
        else:
            y = LEAN_OPS[op](x, w)
            assert _plain(y)
        gy = mytorch.from_numpy(np.asarray(_rand(*shape, seed=5), dtype=dtype))
        y.backward(gy)
        runs.append((y.grad_fn.name(), y.dtype, y.detach().numpy(), x.grad.numpy(),
                     w.grad.numpy()))
    (name, dt, *arrays), (ref_name, ref_dt, *ref_arrays) = runs
    assert (name, dt) == (ref_name, ref_dt)
    for a, b in zip(arrays, ref_arrays):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_lean_nodes_under_create_graph_record_the_general_graph():
    (x, w), (tx, tw) = _pair(_rand(4), _rand(4, seed=1))
    for a, b, lib in ((x, w, mytorch), (tx, tw, torch)):
        y = (a * b).sigmoid() / (b * b + 1)
        ga, gb = lib.autograd.grad(y.sum(), (a, b), create_graph=True)
        assert ga.grad_fn is not None and gb.grad_fn is not None
        (ga * gb).sum().backward()
    assert_same(x.grad, tx.grad, atol=1e-6, rtol=1e-5)
    assert_same(w.grad, tw.grad, atol=1e-6, rtol=1e-5)


def _general(y: mytorch.Tensor) -> bool:
    return y.grad_fn is not None and not _plain(y)


def test_broadcasting_and_promotion_take_the_general_path():
    (x, row, x64), (tx, trow, tx64) = _pair(_rand(3, 4), _rand(4, seed=1),
                                            _rand(3, 4, seed=2, dtype=np.float64))
    for y, ty in [(x * row, tx * trow), (x * x64, tx * tx64), (row + x, trow + tx)]:
        assert _general(y)
        assert y.dtype == getattr(mytorch, str(ty.dtype).split(".")[1])
        y.sum().backward()
        ty.sum().backward()
    for m, r in ((x, tx), (row, trow), (x64, tx64)):
        assert_same(m.grad, r.grad, atol=1e-5, rtol=1e-5)
        assert m.grad.dtype == getattr(mytorch, str(r.grad.dtype).split(".")[1])


def test_strided_views_take_the_general_path_and_keep_torch_layouts():
    (x, w), (tx, tw) = _pair(_rand(4, 3), _rand(3, 4, seed=1))
    y, ty = x.t() * w, tx.t() * tw
    assert _general(y)
    assert y.stride() == ty.stride()
    y.tanh().sum().backward()
    ty.tanh().sum().backward()
    assert_same(x.grad, tx.grad)
    assert_same(w.grad, tw.grad)
    assert x.grad.stride() == tx.grad.stride()


def test_integers_and_out_take_the_general_path():
    i = mytorch.arange(6)
    assert (i * 2).dtype == mytorch.int64 and (i / 2).dtype == mytorch.float32
    x = mytorch.ones(3, requires_grad=True)
    out = mytorch.empty(3)
    with mytorch.no_grad():
        mytorch.mul(x, 2.0, out=out)
    assert out.tolist() == [2.0, 2.0, 2.0]
    big = x * (1 << 60)  # beyond 2**53: the general path converts it as torch does
    assert _general(big) and big.tolist() == (torch.ones(3) * (1 << 60)).tolist()


def test_overflow_is_silent_as_in_torch():
    x = mytorch.full((3,), 3e38, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = x * 10.0
        (y / 0.0).sum().backward()
    assert np.isinf(y.detach().numpy()).all()


def test_hooks_and_retain_grad_on_lean_nodes():
    (x, w), (tx, tw) = _pair(_rand(3), _rand(3, seed=1))
    seen = []
    for (a, b), store in (((x, w), seen), ((tx, tw), [])):
        y = a * b
        y.retain_grad()
        y.register_hook(lambda g: g * 2)
        y.grad_fn.register_hook(lambda gi, go, store=store: store.append(len(gi)))
        z = y.tanh()
        z.grad_fn.register_prehook(lambda go: (go[0] * 3,))
        z.sum().backward()
    assert seen == [2]
    assert_same(x.grad, tx.grad)
    assert_same(w.grad, tw.grad)


def test_anomaly_mode_names_the_lean_node():
    x = mytorch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mytorch.autograd.detect_anomaly():
            y = (x / x).sum()  # 0/0: nan in backward
            with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan"):
                y.backward()


def test_inference_tensors_cannot_be_saved():
    with mytorch.inference_mode():
        c = mytorch.ones(3)
    x = mytorch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        x * c
    assert _plain(x + c)  # an add saves nothing: allowed, as in torch


def test_in_place_change_of_a_saved_operand_is_caught():
    (x, w), (tx, tw) = _pair(_rand(3), _rand(3, seed=1))
    msgs = []
    for a, b, lib in ((x, w, mytorch), (tx, tw, torch)):
        y = a * b
        c = b * 1.0
        z = (a * c).sum()
        with lib.no_grad():
            c.add_(1)
        with pytest.raises(RuntimeError) as e:
            z.backward()
        msgs.append(str(e.value).split(" is at version")[0])
        del y
    assert msgs[0] == msgs[1]


def test_freed_graph_and_retain_graph():
    x = mytorch.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (x + 1).sum()  # saved nothing: may run again, as in torch
    z.backward()
    z.backward()


def test_saved_tensor_hooks_take_the_general_path():
    x = mytorch.ones(3, requires_grad=True)
    with mytorch.autograd.graph.saved_tensors_hooks(lambda t: t * 0 + 5, lambda t: t):
        y = x * x
    assert _general(y)
    y.sum().backward()
    assert x.grad.tolist() == [10.0, 10.0, 10.0]  # what unpack gave, as in torch


def test_simulated_device_takes_the_general_path(sim):
    x = mytorch.ones(3, device="cuda", requires_grad=True)
    y = x * 2.0 + x
    assert _general(y) and y.device.type == "cuda"
    y.tanh().sum().backward()
    assert x.grad.device.type == "cuda"
    assert np.allclose(x.grad.cpu().numpy(), 3 * (1 - np.tanh(3.0) ** 2))


def test_relu_of_a_sum_gradient_with_inf_and_a_scale():
    for scale in (1.0, -2.5, float("inf")):
        (x,), (tx,) = _pair(_rand(6))
        for t in (x, tx):
            (t.relu().sum() * scale).backward()
        assert_same(x.grad, tx.grad)


# ------------------------------------------------------------------- .grad without a copy
def test_grad_takes_a_fresh_gradient_without_sharing_memory():
    (a, b, c), _ = _pair(_rand(4), _rand(4, seed=1), _rand(4, seed=2))
    gt = mytorch.ones(4)
    (a * b + c).backward(gt)
    arrays = [a.grad._data, b.grad._data, c.grad._data, gt._data]
    assert len({id(x) for x in arrays}) == 4
    assert all(not np.shares_memory(p, q) for i, p in enumerate(arrays) for q in arrays[i + 1:])
    gt.add_(1)  # the gradient given to backward is the user's: .grad must not follow it
    assert c.grad.tolist() == [1.0] * 4


def test_grad_shared_by_two_leaves_is_copied_once():
    (a, c), (ta, tc) = _pair(_rand(3), _rand(3, seed=1))
    (a + c).sum().backward()
    (ta + tc).sum().backward()
    assert not np.shares_memory(a.grad._data, c.grad._data)
    a.grad.add_(1)
    assert_same(c.grad, tc.grad)


def test_a_gradient_kept_by_a_hook_is_not_the_grad():
    (x, w), _ = _pair(_rand(3), _rand(3, seed=1))
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * w).sum().backward()
    before = kept[0].tolist()
    x.grad.mul_(0)  # an optimizer's zero_grad(set_to_none=False)
    (x * w).sum().backward()
    assert kept[0].tolist() == before
    assert x.grad.tolist() == w.tolist()


def test_accumulating_into_an_adopted_grad():
    (x, w), (tx, tw) = _pair(_rand(3), _rand(3, seed=1))
    for a, b in ((x, w), (tx, tw)):
        y = a * b
        (y * a + a).sum().backward()  # three gradients reach a in one pass
        (a * 2).sum().backward()      # and one more in the next
    assert_same(x.grad, tx.grad)
    assert_same(w.grad, tw.grad)


def _twice(step):
    """Two backward passes of ``step``; the second accumulates into the ``.grad`` of the first."""
    step().backward()
    step().backward()


@pytest.mark.parametrize("where", ["tensor hook", "node hook", "node prehook"])
def test_a_gradient_a_hook_keeps_on_its_way_to_a_leaf_is_not_changed(where):
    # y = x + c passes y's gradient on to x unchanged: x.grad would take the very memory the
    # hook kept, and the second pass (adding in place into x.grad) would change what it kept
    results = []
    for lib, (x, c, v) in (("mine", _pair(_rand(3), _rand(3, seed=1), _rand(3, seed=2))[0]),
                           ("torch", _pair(_rand(3), _rand(3, seed=1), _rand(3, seed=2))[1])):
        kept = []

        def step():
            y = x + c
            if where == "tensor hook":
                y.register_hook(lambda g: kept.append(g))
            elif where == "node hook":
                y.grad_fn.register_hook(lambda gi, go: kept.append(gi[0]))
            else:
                y.grad_fn.register_prehook(lambda go: kept.append(go[0]))
            return (y * v.detach()).sum()

        _twice(step)
        results.append(([k.tolist() for k in kept], x.grad.tolist()))
    assert results[0] == results[1]


def test_a_retained_grad_and_the_leaf_grad_do_not_share_memory():
    grads = []
    for x, c, v in _pair(_rand(3), _rand(3, seed=1), _rand(3, seed=2)):
        y = x + c.detach()  # (c takes no gradient: x's is y's own memory)
        y.retain_grad()
        (y * v.detach()).sum().backward(retain_graph=True)
        x.grad.add_(1)  # an optimizer changing x.grad must leave y.grad alone
        (y * v.detach()).sum().backward()
        grads.append((x.grad.tolist(), y.grad.tolist()))
    assert grads[0] == grads[1]


def _custom(lib, keep_input: bool):
    class Pass(lib.autograd.Function):
        kept: list = []

        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            if keep_input:  # the user's code keeps the gradient it was given, and passes it on
                Pass.kept.append(g)
                return g
            return Pass.kept[0]  # or hands out memory of its own

    return Pass


@pytest.mark.parametrize("keep_input", [True, False], ids=["keeps its input", "own memory"])
def test_a_custom_backward_s_memory_is_not_the_grad(keep_input):
    seen = []
    for lib, (x, v) in ((mytorch, _pair(_rand(3), _rand(3, seed=1))[0]),
                        (torch, _pair(_rand(3), _rand(3, seed=1))[1])):
        Pass = _custom(lib, keep_input)
        if not keep_input:
            Pass.kept.append(lib.ones(3))
        _twice(lambda: (Pass.apply(x) * v.detach()).sum())
        seen.append((x.grad.tolist(), Pass.kept[0].tolist()))
    assert seen[0] == seen[1]


def test_grads_of_two_leaves_from_one_full_size_view_are_copied_once():
    # b's gradient is a reshape (a view) of the memory a's gradient is: both cannot keep it
    grads = []
    for a, b, v in _pair(_rand(2, 3), _rand(3, 2, seed=1), _rand(2, 3, seed=2)):
        ((a + b.reshape(2, 3)) * v.detach()).sum().backward()
        a.grad.add_(1)
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1]


# ------------------------------------------------------------------- F.linear, one node
LINEAR_SHAPES = [(3,), (2, 3), (0, 3), (5, 2, 3), (2, 2, 2, 3)]


def _names(t: object) -> list:
    return [None if n is None else n.name() for n, _ in t.grad_fn.next_functions]


@pytest.mark.parametrize("shape", LINEAR_SHAPES, ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_graph_and_gradients_equal_torch(shape, bias):
    (x, w, b), (tx, tw, tb) = _pair(_rand(*shape), _rand(4, 3, seed=1), _rand(4, seed=2))
    y = F.linear(x, w, b if bias else None)
    ty = torch.nn.functional.linear(tx, tw, tb if bias else None)
    assert_same(y, ty)
    assert y.stride() == ty.stride()
    assert y.grad_fn.name() == ty.grad_fn.name()
    if bias:  # 1-D and N-D: viewed as a matrix, addmm, viewed back (as torch does)
        node, tnode = (y.grad_fn, ty.grad_fn) if len(shape) == 2 else \
            (y.grad_fn.next_functions[0][0], ty.grad_fn.next_functions[0][0])
        assert node.name() == tnode.name() == "AddmmBackward0"
        assert [n and n.name() for n, _ in node.next_functions] == \
            [n and n.name() for n, _ in tnode.next_functions]
    g = _rand(*ty.shape, seed=3)
    y.backward(mytorch.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    for m, r in ((x, tx), (w, tw), (b, tb)):
        if r.grad is None:
            assert m.grad is None
        else:
            assert_same(m.grad, r.grad, atol=1e-5, rtol=1e-5)
            assert m.grad.stride() == r.grad.stride()


def test_linear_on_a_strided_input_and_without_grads():
    (x, w, b), (tx, tw, tb) = _pair(_rand(5, 3, 2), _rand(4, 3, seed=1), _rand(4, seed=2))
    y = F.linear(x.transpose(1, 2), w, b)
    ty = torch.nn.functional.linear(tx.transpose(1, 2), tw, tb)
    assert y.grad_fn.name() == ty.grad_fn.name() == "AddBackward0"  # torch: matmul, then add_
    y.sum().backward()
    ty.sum().backward()
    assert_same(x.grad, tx.grad, atol=1e-5, rtol=1e-5)
    with mytorch.no_grad():
        assert F.linear(x.transpose(1, 2), w, b).grad_fn is None
    assert _names(F.linear(x.detach().transpose(1, 2)[0], w, b)) == [
        "torch::autograd::AccumulateGrad", None, "TBackward0"]


def test_linear_runs_a_students_matmul_backward():
    calls = []

    def mine(a, b, grad, needs_input_grad=(True, True)):
        calls.append(tuple(a.shape))
        return REGISTRY["matmul_backward"].reference(a, b, grad, needs_input_grad)

    (x, w, b), _ = _pair(_rand(2, 3), _rand(4, 3, seed=1), _rand(4, seed=2))
    before = pieces.matmul_backward  # (the library's, or one plugged in by MYTORCH_MINE)
    with mytorch.mine.plugged(matmul_backward=mine):
        F.linear(x, w, b).sum().backward()
    assert calls == [(2, 3)]
    assert pieces.matmul_backward is before


def test_linear_double_backward():
    (x, w, b), (tx, tw, tb) = _pair(_rand(2, 3), _rand(4, 3, seed=1), _rand(4, seed=2))
    res = []
    for args, lib in (((x, w, b), mytorch), ((tx, tw, tb), torch)):
        y = (lib.nn.functional.linear(*args) ** 2).sum()
        gw, = lib.autograd.grad(y, args[1], create_graph=True)
        gw.sum().backward()
        res.append((gw, args[0].grad, args[2].grad))
    for m, r in zip(*res):
        assert_same(m, r, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("transposed", [(False, False), (True, False), (False, True)])
def test_matmul_backward_fast_path_equals_the_piece(transposed):
    p = REGISTRY["matmul_backward"]
    a0, b0, g0 = _rand(5, 3), _rand(3, 4, seed=1), _rand(5, 4, seed=2)
    a = mytorch.from_numpy(a0.T.copy()).t() if transposed[0] else mytorch.from_numpy(a0)
    b = mytorch.from_numpy(b0.T.copy()).t() if transposed[1] else mytorch.from_numpy(b0)
    g = mytorch.from_numpy(g0)
    with mytorch.no_grad():
        ref, fast = p.reference(a, b, g), p.fast(a, b, g)
        assert p.fast(a, b, g, (False, True))[0] is None
    for r, f, x in zip(ref, fast, (a, b)):
        np.testing.assert_allclose(f.numpy(), r.numpy(), rtol=1e-6, atol=1e-6)
        assert f.stride() == x.stride()  # torch's mm backward: the operand's own layout


@pytest.mark.parametrize("shapes", [((2, 5, 3), (2, 3, 4)), ((2, 2, 5, 3), (2, 2, 3, 4)),
                                    ((2, 5, 3), (3, 4)), ((2, 0, 3), (3, 4)),
                                    ((2, 5, 3), (1, 3, 4)), ((5, 3), (2, 3, 4))], ids=str)
def test_matmul_backward_fast_path_of_batches_equals_the_piece(shapes):
    """Batches of matrices (and a batch times one matrix) on arrays; broadcast batch dims go
    to the piece itself."""
    p = REGISTRY["matmul_backward"]
    a, b = mytorch.from_numpy(_rand(*shapes[0])), mytorch.from_numpy(_rand(*shapes[1], seed=1))
    with mytorch.no_grad():
        g = mytorch.from_numpy(_rand(*(a @ b).shape, seed=2))
        ref, fast = p.reference(a, b, g), p.fast(a, b, g)
    for r, f, x in zip(ref, fast, (a, b)):
        assert f.shape == x.shape
        np.testing.assert_allclose(f.numpy(), r.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shapes", [((4, 3), (3,)), ((2, 4, 3), (4, 1)), ((4, 3), (4, 3)),
                                    ((2, 1, 3), (1, 3))], ids=str)
def test_unbroadcast_fast_path_equals_the_piece(shapes):
    p = REGISTRY["unbroadcast"]
    g = mytorch.from_numpy(_rand(*shapes[0]))
    with mytorch.no_grad():
        ref, fast = p.reference(g, shapes[1]), p.fast(g, shapes[1])
    assert ref.shape == fast.shape == shapes[1]
    np.testing.assert_allclose(fast.numpy(), ref.numpy(), rtol=1e-6)
    with mytorch.enable_grad():  # create_graph: the piece itself, differentiable
        x = mytorch.from_numpy(_rand(*shapes[0])).requires_grad_()
        assert p.fast(x * 2, shapes[1]).grad_fn is not None or shapes[0] == shapes[1]


def test_leaf_hooks_fire_in_torchs_order_through_addmm():
    """A leaf's gradient is accumulated as soon as it is ready, as in torch's engine: the last
    layer's bias before the layers below it (DDP launches its buckets from these hooks)."""
    orders = []
    for lib in (mytorch, torch):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        seen: list = []
        for name, p in model.named_parameters():
            p.register_post_accumulate_grad_hook(lambda p, name=name: seen.append(name))
        model(lib.ones(5, 3)).sum().backward()
        orders.append(seen)
    assert orders[0] == orders[1]


SUMS = {  # gradients that meet at one node: same dtype and shape (summed on the arrays), or not
    "shared weight": lambda t, w, b: ((t * w + b).tanh() * w).sum(),
    "broadcast": lambda t, w, b: (t * w[:1] + w.sum() + b).sum(),
    "strided": lambda t, w, b: (t.reshape(2, 3).t() * w.reshape(2, 3).t() + t.reshape(2, 3).t()).sum() + b.sum(),
    "float64 meets float32": lambda t, w, b: (t.double() * w + t * b).sum(),
    "overflow": lambda t, w, b: (t * 3e38 + t * 3e38 + w * b).sum(),
}


@pytest.mark.parametrize("name", SUMS)
def test_backpropagate_fast_path_equals_the_piece_and_torch(name):
    """``backpropagate``'s fast path adds two plain gradients on their arrays: the reference
    (the readable piece, ``+``) and torch give the same gradients, bit for bit."""
    from mytorch._pieces import activate

    arrays = [_rand(6, seed=1), _rand(6, seed=2), _rand(6, seed=3)]
    results = {}
    before = pieces.backpropagate  # (a student's, in the library leg: put back afterwards)
    for label, fn in (("fast", REGISTRY["backpropagate"].fast),
                      ("reference", REGISTRY["backpropagate"].reference)):
        activate("backpropagate", fn)
        try:
            mine, _ = _pair(*arrays)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # the overflow is silent, as in torch
                SUMS[name](*mine).backward()
            results[label] = [t.grad.numpy() for t in mine]
        finally:
            pieces.backpropagate = before
    _, ref = _pair(*arrays)
    SUMS[name](*ref).backward()
    for f, r, t in zip(results["fast"], results["reference"], ref, strict=True):
        np.testing.assert_array_equal(f, r)
        assert_same(mytorch.from_numpy(f), t.grad)
    assert REGISTRY["backpropagate"].fast is not None and REGISTRY["backpropagate"].default is \
        REGISTRY["backpropagate"].fast


def _branches(lib, seen):
    x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    a, b = x * 2, x * 3
    c, d = a.exp(), b.sin()
    e = c * d + a
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d), ("e", e)):
        t.register_hook(lambda g, name=name: seen.append(name))
    return e.sum()


def test_backward_order_fast_path_runs_nodes_in_torchs_order():
    """The fast ``backward_order`` lists nodes newest first: a topological order, the one torch's
    engine follows (hooks on branches fire in the same sequence), and the same nodes as the piece."""
    from mytorch.autograd.engine import backward_order

    from mytorch._pieces import activate

    mine, ref = [], []
    loss = _branches(mytorch, mine)
    fast = REGISTRY["backward_order"].fast([loss.grad_fn])
    assert set(fast) == set(backward_order([loss.grad_fn]))
    position = {node: i for i, node in enumerate(fast)}
    assert all(position[node] < position[nxt] for node in fast for nxt, _ in node.next_functions
               if nxt is not None)
    before = pieces.backward_order  # (a student's, in the library leg: put back afterwards)
    activate("backward_order", REGISTRY["backward_order"].fast)
    try:
        loss.backward()
    finally:
        pieces.backward_order = before
    _branches(torch, ref).backward()
    assert mine == ref


def test_backward_order_fast_path_falls_back_when_an_edge_points_at_a_newer_node():
    from mytorch.autograd.engine import backward_order

    x = mytorch.ones(3, requires_grad=True)
    y = (x * 2).exp()
    mul = y.grad_fn.next_functions[0][0]
    y.grad_fn._seq, mul._seq = mul._seq, y.grad_fn._seq  # as if exp's node were the older one
    fast = REGISTRY["backward_order"].fast([y.grad_fn])
    assert fast == backward_order([y.grad_fn]) and fast.index(y.grad_fn) < fast.index(mul)


def test_gradients_summed_in_place_are_never_seen_half_done():
    """A sum the engine made is added into in place by the next gradient to arrive; hooks,
    retain_grad, autograd.grad and .grad only ever see the finished sum."""
    results = {}
    for lib in (mytorch, torch):
        w = lib.tensor([0.5, -1.5, 2.0], requires_grad=True)
        h = w * 2
        h.retain_grad()
        seen = []
        h.register_hook(lambda g: seen.append(g))
        loss = (h * 3).sum() + (h * h).sum() + h.tanh().sum() + (w * w).sum() + w.sum()
        (gw,) = lib.autograd.grad(loss, w, retain_graph=True)
        loss.backward()
        results[lib] = [gw.detach().numpy(), h.grad.numpy(), w.grad.numpy(),
                        *[s.detach().numpy() for s in seen]]
    for a, b in zip(results[mytorch], results[torch], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
