"""Memory semantics against torch: views share memory and version counters, strides and storage
offsets equal torch's, copies are copies, storages, channels_last, resize_, copy_ across devices."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import randn

import mytorch
from mytorch import _device

LIBS = (mytorch, torch)


def both(arr: np.ndarray) -> tuple[Any, Any]:
    """The same data as a mytorch and a torch tensor (each owning a copy)."""
    return mytorch.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


def layout(x: Any) -> tuple:
    return tuple(x.shape), tuple(x.stride()), x.storage_offset(), x.is_contiguous()


def assert_same_layout(m: Any, t: Any) -> None:
    assert layout(m) == layout(t), f"mytorch {layout(m)} vs torch {layout(t)}"
    # (torch's .numpy() would pin the storage and forbid a later resize_: read a copy)
    np.testing.assert_array_equal(np.asarray(m.numpy()), t.detach().clone().numpy())


# ---------------------------------------------------------------------------- views share memory
VIEWS: dict[str, Callable] = {
    "view": lambda x: x.view(4, 6),
    "view_after_permute": lambda x: x.permute(1, 0, 2).view(3, 2, 2, 2),
    "reshape_contiguous": lambda x: x.reshape(2, 12),
    "flatten": lambda x: x.flatten(1),
    "unflatten": lambda x: x.unflatten(2, (2, 2)),
    "t_of_slice": lambda x: x.select(0, 1).t(),
    "transpose": lambda x: x.transpose(0, 2),
    "permute": lambda x: x.permute(2, 0, 1),
    "movedim": lambda x: x.movedim(0, -1),
    "mT": lambda x: x.mT,
    "narrow": lambda x: x.narrow(2, 1, 2),
    "select": lambda x: x.select(1, -1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x.narrow(1, 0, 1).squeeze(1),
    "diagonal": lambda x: x.diagonal(1, 1, 2),
    "split_piece": lambda x: x.split(2, 2)[1],
    "chunk_piece": lambda x: x.chunk(3, 1)[2],
    "unbind_piece": lambda x: x.unbind(2)[3],
    "as_strided": lambda x: x.as_strided((3, 3), (4, 5), 2),
    "unfold": lambda x: x.unfold(2, 2, 2),
    "view_dtype": lambda x: x.view(x.dtype),
    "detach": lambda x: x.detach(),
    "T_2d": lambda x: x.select(0, 0).T,
}


@pytest.mark.parametrize("name", VIEWS, ids=str)
def test_writes_through_a_view_reach_the_base(name: str) -> None:
    arr = randn(2, 3, 4)
    (mb, tb) = both(arr)
    mv, tv = VIEWS[name](mb), VIEWS[name](tb)
    assert_same_layout(mv, tv)
    assert mv.data_ptr() - mb.data_ptr() == tv.data_ptr() - tb.data_ptr()
    assert mv._version == mb._version
    mv.fill_(7.0), tv.fill_(7.0)                      # write through the view ...
    np.testing.assert_array_equal(mb.numpy(), tb.numpy())   # ... the base sees it
    assert mv._version == mb._version == 1
    mb.zero_(), tb.zero_()                              # write the base ...
    np.testing.assert_array_equal(mv.numpy(), tv.numpy())   # ... the view sees it


def test_expand_has_zero_strides_and_shares_memory() -> None:
    mb, tb = both(randn(3, 1))
    me, te = mb.expand(2, 3, 4), tb.expand(2, 3, 4)
    assert me.stride() == te.stride() == (0, 1, 0)
    assert_same_layout(me, te)
    mb.fill_(2.0), tb.fill_(2.0)
    np.testing.assert_array_equal(me.numpy(), te.numpy())
    assert mytorch.zeros(3).expand(2, 3).stride() == (0, 1)


def test_repeat_copies() -> None:
    x = mytorch.arange(6.0).reshape(2, 3)
    r = x.repeat(2, 1)
    assert r.data_ptr() != x.data_ptr() and r.is_contiguous()
    x.fill_(0.0)
    assert r.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] * 2


@pytest.mark.parametrize("op", ["cat", "flip", "roll", "clone", "tril", "reshape_copy"])
def test_copying_ops_do_not_share_memory(op: str) -> None:
    ops = {"cat": lambda L, x: L.cat([x, x]), "flip": lambda L, x: x.flip(0),
           "roll": lambda L, x: x.roll(1), "clone": lambda L, x: x.clone(),
           "tril": lambda L, x: x.tril(), "reshape_copy": lambda L, x: x.t().reshape(-1)}
    x = mytorch.ones(3, 3)
    y = ops[op](mytorch, x)
    x.fill_(5.0)
    assert float(y.numpy().max()) == 1.0


def test_view_on_non_contiguous_raises_and_reshape_copies() -> None:
    mx, tx = both(randn(3, 4))
    for x in (mx, tx):
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            x.t().view(12)
    assert_same_layout(mx.t().reshape(12), tx.t().reshape(12))
    assert mx.t().reshape(12).data_ptr() != mx.data_ptr()


def test_version_counter_is_shared_and_saved_views_are_checked() -> None:
    x = mytorch.ones(2, 3, requires_grad=True)
    y = x * 2
    v = y.t()
    z = (v * v).sum()           # saves v
    y.narrow(0, 0, 1).zero_()    # an in-place write through another view of y
    assert v._version == y._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# ---------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 1, 5), (1, 1, 2, 2), (2, 1, 3, 3)])
def test_channels_last(shape: tuple) -> None:
    mx, tx = both(randn(*shape))
    for fmt in ("contiguous", "to"):
        if fmt == "contiguous":
            m = mx.contiguous(memory_format=mytorch.channels_last)
            t = tx.contiguous(memory_format=torch.channels_last)
        else:
            m = mx.to(memory_format=mytorch.channels_last)
            t = tx.to(memory_format=torch.channels_last)
        assert m.stride() == t.stride()
        assert m.is_contiguous() == t.is_contiguous()
        assert m.is_contiguous(memory_format=mytorch.channels_last) is True
        np.testing.assert_array_equal(m.numpy(), t.numpy())
        assert m.clone().stride() == t.clone().stride()           # preserve_format keeps NHWC
        assert m.contiguous().stride() == t.contiguous().stride()
    m2 = mx.to(mytorch.float64, memory_format=mytorch.channels_last)
    assert m2.dtype is mytorch.float64 and m2.stride() == t.stride()


@pytest.mark.parametrize("op", [
    lambda x: x.t(), lambda x: x.narrow(1, 0, 2), lambda x: x.unsqueeze(0).expand(2, 3, 4),
    lambda x: x.permute(1, 0).unsqueeze(1), lambda x: x.narrow(0, 1, 1).t(),
])
def test_clone_preserves_strides_like_torch(op: Callable) -> None:
    mx, tx = both(randn(3, 4))
    assert op(mx).clone().stride() == op(tx).clone().stride()
    assert op(mx).contiguous().stride() == op(tx).contiguous().stride()
    assert op(mx).contiguous().is_contiguous()


def test_contiguous_returns_self_when_already_contiguous() -> None:
    x = mytorch.ones(2, 3)
    assert x.contiguous() is x
    assert x.t().contiguous() is not x


# ---------------------------------------------------------------------------- storages
@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_offset_data_ptr_and_storage_of_views() -> None:
    mx, tx = both(randn(4, 5))
    mv, tv = mx.narrow(0, 1, 2).narrow(1, 2, 3), tx.narrow(0, 1, 2).narrow(1, 2, 3)
    assert mv.storage_offset() == tv.storage_offset() == 7
    assert mv.untyped_storage().data_ptr() == mx.untyped_storage().data_ptr()
    assert mv.untyped_storage().nbytes() == tv.untyped_storage().nbytes() == 80
    assert len(mv.storage()) == len(tv.storage()) == 20
    assert mv.storage().tolist() == pytest.approx(tv.storage().tolist())
    assert mv.data_ptr() == mx.data_ptr() + 7 * 4


def test_view_dtype_reinterprets_bytes_like_torch() -> None:
    mx, tx = both(randn(3, 4))
    for dt in ("int32", "int16", "uint8", "float16"):
        m, t = mx.view(getattr(mytorch, dt)), tx.view(getattr(torch, dt))
        assert_same_layout(m, t)
    m, t = mx.narrow(1, 2, 2).view(mytorch.int16), tx.narrow(1, 2, 2).view(torch.int16)
    assert_same_layout(m, t)                      # storage_offset scales with the element size
    m, t = mx.view(mytorch.uint8).view(mytorch.float64), tx.view(torch.uint8).view(torch.float64)
    assert_same_layout(m, t)


def test_from_numpy_shares_and_tensor_copies() -> None:
    a = np.zeros(4, np.float32)
    shared, copied = mytorch.from_numpy(a), mytorch.tensor(a)
    a[0] = 3.0
    assert shared.tolist()[0] == 3.0 and copied.tolist()[0] == 0.0
    assert shared.data_ptr() == a.ctypes.data and copied.data_ptr() != a.ctypes.data
    assert shared.storage_offset() == 0


def test_as_strided_reaches_the_whole_storage() -> None:
    mx, tx = both(np.arange(10, dtype=np.float32))
    mv, tv = mx.narrow(0, 5, 2), tx.narrow(0, 5, 2)
    m, t = mv.as_strided((3,), (2,), 0), tv.as_strided((3,), (2,), 0)  # before the view's start
    assert_same_layout(m, t)
    m, t = mv.as_strided((2, 2), (1, 1)), tv.as_strided((2, 2), (1, 1))  # default: view's offset
    assert_same_layout(m, t)


def test_resize_keeps_storage_and_grows_by_reallocation() -> None:
    mx, tx = mytorch.arange(12.0), torch.arange(12.0)   # from_numpy storages can't grow in torch
    ptr = mx.data_ptr()
    for x in (mx, tx):
        x.resize_(2, 3)
    assert_same_layout(mx, tx)
    assert mx.data_ptr() == ptr                                        # shrinking: same memory
    mv, tv = mx.narrow(0, 1, 1), tx.narrow(0, 1, 1)
    for v in (mv, tv):
        v.resize_(2, 2)                                                # keeps storage_offset 3
    assert_same_layout(mv, tv)
    for x in (mx, tx):
        x.resize_(4, 5)                                                # grows: reallocates
    assert mx.shape == (4, 5) and mx.stride() == (5, 1)
    np.testing.assert_array_equal(mx.numpy().reshape(-1)[:12], np.arange(12))
    mx.resize_as_(mytorch.zeros(3, 2))
    assert mx.shape == (3, 2)


def test_copy_broadcasts_casts_and_crosses_devices() -> None:
    x = mytorch.zeros(2, 3, dtype=mytorch.int64)
    x.copy_(mytorch.tensor([1.7, 2.2, -3.9]))
    assert x.tolist() == [[1, 2, -3]] * 2
    saved = (_device._CUDA.backend, _device._CUDA.probed)
    try:
        mytorch.cuda.simulate()
        g = mytorch.zeros(2, 3, device="cuda")
        g.copy_(mytorch.arange(3.0))                                  # cpu -> cuda
        assert g.device.type == "cuda" and g.tolist() == [[0.0, 1.0, 2.0]] * 2
        h = mytorch.zeros(2, 3)
        h.copy_(g.t().t())                                            # cuda -> cpu
        assert h.device.type == "cpu" and h.tolist() == g.tolist()
        v = g.t().narrow(0, 1, 2)                                     # views on the device
        v.fill_(9.0)
        assert g.tolist() == [[0.0, 9.0, 9.0]] * 2
        assert v.stride() == (1, 3) and v.storage_offset() == 1
    finally:
        _device._CUDA.backend, _device._CUDA.probed = saved


# ---------------------------------------------------------------------------- hypothesis: layouts
_OPS = ["permute", "transpose", "narrow", "select", "unsqueeze", "squeeze", "expand", "view",
        "flatten", "diagonal", "t", "unfold", "movedim", "contiguous", "reshape"]


@st.composite
def op_chains(draw: Any) -> tuple:
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    steps = draw(st.lists(st.tuples(st.sampled_from(_OPS), st.randoms(use_true_random=False)),
                          max_size=5))
    return shape, steps


def _apply(op: str, x: Any, rnd: Any) -> Any:
    """One random view op with arguments drawn from ``rnd`` (same draws for both libraries)."""
    nd, shape = x.dim(), tuple(x.shape)
    if op == "permute" and nd:
        p = list(range(nd))
        rnd.shuffle(p)
        return x.permute(*p)
    if op == "transpose" and nd:
        return x.transpose(rnd.randrange(-nd, nd), rnd.randrange(-nd, nd))
    if op in ("narrow", "select", "unfold") and nd:
        d = rnd.randrange(nd)
        n = shape[d]
        if n == 0:
            return x
        if op == "select":
            return x.select(d, rnd.randrange(-n, n))
        if op == "unfold":
            return x.unfold(d, rnd.randint(0, n), rnd.randint(1, 3))
        start = rnd.randrange(n)
        return x.narrow(d, start, rnd.randint(0, n - start))
    if op == "unsqueeze":
        return x.unsqueeze(rnd.randrange(-nd - 1, nd + 1))
    if op == "squeeze":
        return x.squeeze(rnd.randrange(nd)) if nd and rnd.random() < 0.5 else x.squeeze()
    if op == "expand":
        return x.expand(*([rnd.randint(1, 2)] + [s if s != 1 else rnd.randint(1, 3) for s in shape]))
    if op in ("view", "reshape", "flatten") and nd >= 2:
        d = rnd.randrange(nd - 1)
        if op == "flatten":
            return x.flatten(d, d + 1)
        merged = shape[:d] + (shape[d] * shape[d + 1] if 0 in shape else -1,) + shape[d + 2:]
        try:
            return x.view(merged) if op == "view" else x.reshape(merged)
        except RuntimeError:
            return x.reshape(merged)
    if op == "diagonal" and nd >= 2:
        return x.diagonal(rnd.randint(-2, 2), 0, nd - 1)
    if op == "t" and nd <= 2:
        return x.t()
    if op == "movedim" and nd:
        return x.movedim(rnd.randrange(nd), rnd.randrange(nd))
    if op == "contiguous":
        return x.contiguous()
    return x


@settings(max_examples=150, deadline=None)
@given(op_chains())
def test_random_view_chains_match_torch_layout(chain: tuple) -> None:
    shape, steps = chain
    mx, tx = both(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    for op, rnd in steps:
        state = rnd.getstate()
        mx = _apply(op, mx, rnd)
        rnd.setstate(state)
        tx = _apply(op, tx, rnd)
        assert_same_layout(mx, tx)
        assert mx.is_contiguous(memory_format=mytorch.channels_last) == \
            tx.is_contiguous(memory_format=torch.channels_last)
        try:
            tv = tx.view(-1)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                mx.view(-1)
        else:
            assert_same_layout(mx.view(-1), tv)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=4), st.data())
def test_cat_split_stack_unbind_round_trip(shape: list, data: Any) -> None:
    nd = len(shape)
    d = data.draw(st.integers(-nd, nd - 1))
    x = mytorch.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    extra = x.shape[d] - sum(sizes)
    if extra >= 0:
        sizes = sizes + [extra]
        parts = x.split(sizes, d)
        assert [p.shape[d] for p in parts] == sizes
        assert mytorch.cat(parts, d).tolist() == x.tolist()
    k = data.draw(st.integers(1, 4))
    assert mytorch.cat(x.chunk(k, d), d).tolist() == x.tolist()
    if x.shape[d]:
        assert mytorch.stack(x.unbind(d), d).tolist() == x.tolist()
    sd = data.draw(st.integers(-nd - 1, nd))
    s = mytorch.stack([x, x + 1], sd)
    a, b = s.unbind(sd)
    assert a.tolist() == x.tolist() and b.tolist() == (x + 1).tolist()
    assert mytorch.cat([a, b], d).shape[d] == 2 * x.shape[d]
