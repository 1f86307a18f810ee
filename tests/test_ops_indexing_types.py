"""Every kind of index torch accepts, in every form it accepts it: ``range``, lists of ints,
bools or tensors, NumPy integer and bool arrays, NumPy integer scalars, 0-d tensors, ``...`` and
``None``; read (``x[key]``) and written (``x[key] = v``), values and gradients, torch as oracle."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch


@st.composite
def index_keys(draw):
    """(shape, entries): each entry is (kind, form, payload) for one position of the key."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    entries, dims = [], list(shape)
    ellipsis = False
    while dims and len(entries) < 5:
        kind = draw(st.sampled_from(["int", "slice", "index", "mask", "none", "ellipsis", "stop"]))
        if kind == "stop" and entries:
            break
        if kind == "none":
            entries.append(("none", "none", None))
            continue
        if kind == "ellipsis":
            if not ellipsis:
                ellipsis = True
                entries.append(("ellipsis", "ellipsis", None))
            continue
        n = dims.pop(0)
        if kind == "int":
            form = draw(st.sampled_from(["int", "np.int64", "np.int32", "tensor0d"]))
            entries.append(("int", form, draw(st.integers(-n, n - 1))))
        elif kind == "slice":
            entries.append(("slice", "slice", slice(draw(st.integers(0, n - 1)), None,
                                                    draw(st.integers(1, 2)))))
        elif kind == "index":
            form = draw(st.sampled_from(["range", "list", "numpy", "tensor", "np.int32"]))
            if form == "range":
                start = draw(st.integers(0, n - 1))
                entries.append(("index", form, range(start, n, draw(st.integers(1, 2)))))
            else:
                size = draw(st.integers(1, 3))
                entries.append(("index", form, [draw(st.integers(-n, n - 1)) for _ in range(size)]))
        else:
            form = draw(st.sampled_from(["list", "numpy", "tensor"]))
            entries.append(("mask", form, [draw(st.booleans()) for _ in range(n)]))
    bare = len(entries) == 1 and draw(st.booleans())  # x[k] as well as x[(k,)]
    return shape, entries, bare


def build_key(lib, entries, bare):
    key = []
    for kind, form, v in entries:
        if kind == "none":
            key.append(None)
        elif kind == "ellipsis":
            key.append(Ellipsis)
        elif kind == "slice":
            key.append(v)
        elif form == "int":
            key.append(v)
        elif form == "np.int64":
            key.append(np.int64(v))
        elif form == "np.int32":
            key.append(np.int32(v) if kind == "int" else np.array(v, dtype=np.int32))
        elif form == "tensor0d":
            key.append(lib.tensor(v))
        elif form == "range":
            key.append(v)
        elif form == "list":
            key.append(list(v))
        elif form == "numpy":
            key.append(np.array(v, dtype=np.int64 if kind == "index" else bool))
        else:  # tensor
            key.append(lib.tensor(v, dtype=lib.int64 if kind == "index" else lib.bool))
    return key[0] if bare else tuple(key)


def _run(lib, shape, entries, bare, mode):
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 7
    x = lib.tensor(base, requires_grad=True)
    key = build_key(lib, entries, bare)
    if mode == "get":
        y = x[key]
        w = lib.arange(y.numel(), dtype=lib.float32).reshape(y.shape) + 1
        (y * w).sum().backward()
        return y.detach().numpy(), x.grad.numpy(), None
    v = lib.tensor([2.5], requires_grad=True)
    y = x * 1
    y[key] = v if mode == "set_tensor" else 2.5
    (y * y).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), None if mode == "set_scalar" else v.grad.numpy()


@pytest.mark.parametrize("mode", ["get", "set_scalar", "set_tensor"])
@settings(max_examples=60, deadline=None)
@given(case=index_keys())
def test_index_forms_match_torch_values_and_gradients(mode, case):
    shape, entries, bare = case
    try:
        ref = _run(torch, shape, entries, bare, mode)
    except (IndexError, RuntimeError) as e:  # e.g. index tensors that do not broadcast
        with pytest.raises(type(e)):
            _run(mytorch, shape, entries, bare, mode)
        return
    mine = _run(mytorch, shape, entries, bare, mode)
    for m, r in zip(mine, ref, strict=True):
        if r is None:
            assert m is None
        else:
            assert m.shape == r.shape and m.dtype == r.dtype
            np.testing.assert_allclose(m, r, rtol=1e-6)


def test_forward_forward_overlay():
    """The forward-forward program writes labels into images with ``x[range(n), y] = v``."""
    out = []
    for lib in (torch, mytorch):
        x = lib.zeros(4, 10)
        y = lib.tensor([3, 1, 4, 1])
        x_ = x.clone()
        x_[:, :5] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        out.append(x_.numpy())
    np.testing.assert_array_equal(out[1], out[0])


@pytest.mark.parametrize("key", [range(0), (range(1, 3), range(2)), [range(2)], (Ellipsis, range(2))],
                         ids=str)
def test_ranges_as_torch(key):
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(mytorch.tensor(x)[key].numpy(), torch.tensor(x)[key].numpy())


EMPTY_SELECTIONS = [
    ((1, 3, 2, 1), (0, Ellipsis, slice(2, None), None, range(0, 2))),
    ((2, 1, 2, 1), (None, Ellipsis, slice(1, None), 0, range(0, 2))),
    ((0, 3), (slice(None), [5])),
    ((2, 3), (slice(0, 0), [7])),
    ((2, 3), ([],)),
    ((2, 3), (slice(None), [[]])),
    ((2, 0), (slice(None), [0])),   # an index into a dim of size 0: torch refuses
    ((0, 3), ([0],)),
]


@pytest.mark.parametrize("shape,key", EMPTY_SELECTIONS, ids=str)
@pytest.mark.parametrize("mode", ["get", "set", "backward"])
def test_an_empty_selection_checks_no_index_bound_like_torch(shape, key, mode):
    """Found by the property test above: when the basic part selects nothing, torch's kernel runs
    over no element and checks no advanced index (NumPy would raise); an index into a dim of size
    0 is still refused."""
    results = []
    for lib in (torch, mytorch):
        x = lib.zeros(*shape, requires_grad=mode == "backward")
        try:
            if mode == "set":
                x[key] = lib.ones(1)
                results.append(("ok", float(x.sum())))
            else:
                y = x[key]
                if mode == "backward":
                    (y * 2).sum().backward()
                    results.append(("ok", tuple(y.shape), x.grad.numpy().tolist()))
                else:
                    results.append(("ok", tuple(y.shape)))
        except IndexError as e:
            results.append(("IndexError", str(e)))
    assert results[1] == results[0]
