"""The Tensor class itself: attributes, conversions, the NumPy bridge, autograd flags, pickling."""
from __future__ import annotations

import copy
import operator
import pickle

import numpy as np
import pytest
import torch
from oracle import assert_same, check_raises

import mytorch


def both(fn):
    """``fn(lib)`` on both libraries; plain values must be equal."""
    mine, ref = fn(mytorch), fn(torch)
    if isinstance(ref, torch.Tensor):
        assert_same(mine, ref)
    else:
        assert mine == ref or repr(mine) == repr(ref), f"{mine!r} vs torch {ref!r}"
        assert type(mine).__name__ == type(ref).__name__ or isinstance(ref, (tuple, list))


VALUE_CASES = {
    "size": lambda t: tuple(t.ones(2, 3).size()),
    "size_dim": lambda t: t.ones(2, 3).size(1),
    "size_negative_dim": lambda t: t.ones(2, 3).size(-1),
    "shape_repr": lambda t: repr(t.ones(2, 3).shape),
    "shape_of_0d": lambda t: repr(t.tensor(1.0).shape),
    "shape_is_size": lambda t: type(t.ones(2).shape).__name__,
    "size_repr_empty": lambda t: repr(t.Size([])),
    "size_str": lambda t: str(t.Size([2, 3])),
    "size_numel": lambda t: t.Size([2, 3, 4]).numel(),
    "size_numel_empty": lambda t: t.Size([]).numel(),
    "size_slice": lambda t: repr(t.Size([2, 3, 4])[1:]),
    "size_index": lambda t: t.Size([2, 3, 4])[-1],
    "size_add": lambda t: repr(t.Size([2]) + t.Size([3])),
    "size_add_tuple": lambda t: repr(t.Size([2]) + (3,)),
    "size_radd_tuple": lambda t: repr((3,) + t.Size([2])),
    "size_mul": lambda t: repr(t.Size([2]) * 2),
    "size_eq_tuple": lambda t: t.Size([2, 3]) == (2, 3),
    "size_of_tensor_ints": lambda t: repr(t.Size([t.tensor(3), np.int64(2)])),
    "dim": lambda t: t.ones(2, 3).dim(),
    "ndim": lambda t: t.ones(2, 3, 1).ndim,
    "ndimension": lambda t: t.ones(2).ndimension(),
    "numel": lambda t: t.ones(2, 3).numel(),
    "nelement": lambda t: t.ones(0, 3).nelement(),
    "element_size_half": lambda t: t.ones(2, dtype=t.float16).element_size(),
    "element_size_cdouble": lambda t: t.ones(2, dtype=t.complex128).element_size(),
    "nbytes": lambda t: t.ones(2, 3, dtype=t.float64).nbytes,
    "itemsize": lambda t: t.ones(2, dtype=t.int16).itemsize,
    "stride": lambda t: t.ones(2, 3).stride(),
    "stride_dim": lambda t: t.ones(2, 3).stride(-2),
    "item_float": lambda t: t.tensor([2.5]).item(),
    "item_int": lambda t: t.tensor(3).item(),
    "item_bool": lambda t: t.tensor(True).item(),
    "item_nested": lambda t: t.tensor([[7]]).item(),
    "item_float32_precision": lambda t: t.tensor(0.1).item(),
    "tolist": lambda t: t.tensor([[1, 2], [3, 4]]).tolist(),
    "tolist_0d": lambda t: t.tensor(2.5).tolist(),
    "tolist_float32": lambda t: t.tensor([0.1, 1 / 3]).tolist(),
    "tolist_bool": lambda t: t.tensor([True, False]).tolist(),
    "tolist_complex": lambda t: t.tensor([1 + 2j]).tolist(),
    "tolist_empty": lambda t: t.zeros(2, 0).tolist(),
    "bool_one": lambda t: bool(t.tensor([0.0])),
    "bool_nan": lambda t: bool(t.tensor(float("nan"))),
    "bool_int": lambda t: bool(t.tensor([[3]])),
    "len": lambda t: len(t.ones(3, 2)),
    "index_int": lambda t: [10, 20, 30][t.tensor(1)],
    "index_bool": lambda t: [10, 20, 30][t.tensor(True)],
    "index_one_elem": lambda t: [10, 20, 30][t.tensor([2])],
    "operator_index": lambda t: operator.index(t.tensor(2)),
    "range_of_tensor": lambda t: list(range(t.tensor(3))),
    "int": lambda t: int(t.tensor([2.7])),
    "int_negative": lambda t: int(t.tensor(-2.7)),
    "float": lambda t: float(t.tensor([2])),
    "complex": lambda t: complex(t.tensor(2.0)),
    "format_0d": lambda t: f"{t.tensor(2.5):.2f}",
    "format_0d_int": lambda t: f"{t.tensor(7):>4}",
    "is_floating_point": lambda t: [t.ones(1, dtype=d).is_floating_point()
                                    for d in (t.float32, t.int8, t.bool, t.complex64)],
    "is_complex": lambda t: [t.ones(1, dtype=d).is_complex() for d in (t.float32, t.complex64)],
    "is_signed": lambda t: [t.ones(1, dtype=d).is_signed() for d in (t.uint8, t.int8, t.bool)],
    "layout": lambda t: str(t.ones(2).layout),
    "device": lambda t: str(t.ones(2).device),
    "is_cuda": lambda t: (t.ones(2).is_cuda, t.ones(2).is_cpu),
    "is_leaf": lambda t: [t.ones(2).is_leaf, t.ones(2, requires_grad=True).is_leaf,
                          (t.ones(2, requires_grad=True) * 2).is_leaf, (t.ones(2) * 2).is_leaf],
    "requires_grad_flags": lambda t: [t.ones(2).requires_grad, (t.ones(2, requires_grad=True) * 2)
                                      .requires_grad, (t.ones(2) * t.ones(2)).requires_grad],
    "requires_grad_": lambda t: t.ones(2).requires_grad_().requires_grad,
    "requires_grad_false": lambda t: t.ones(2, requires_grad=True).requires_grad_(False).requires_grad,
    "requires_grad_nonleaf_true_ok":
        lambda t: (t.ones(2, requires_grad=True) * 2).requires_grad_().requires_grad,
    "detach_flags": lambda t: (lambda y: (y.detach().requires_grad, y.detach().is_leaf,
                                          y.detach().grad_fn is None))(t.ones(2, requires_grad=True) * 2),
    "data_flags": lambda t: (lambda y: (y.data.requires_grad, y.data.is_leaf))(
        t.ones(2, requires_grad=True) * 2),
    "grad_fn_name": lambda t: (t.ones(2, requires_grad=True) * 2).grad_fn.name(),
    "version_add_": lambda t: (lambda x: [x._version, x.add_(1)._version, x.add_(1)._version])(t.ones(2)),
    "version_shared_with_detach": lambda t: (lambda x: (x.detach().add_(1), x._version)[1])(t.ones(2)),
    "version_not_shared_with_data": lambda t: (lambda x: (x.data.add_(1), x._version)[1])(t.ones(2)),
    "array_dtype": lambda t: str(np.asarray(t.tensor([1.0, 2])).dtype),
    "array_with_dtype": lambda t: str(np.asarray(t.tensor([1.0, 2]), dtype=np.float64).dtype),
    "hash_is_identity": lambda t: (lambda x: hash(x) == id(x))(t.ones(1)),
}


@pytest.mark.parametrize("fn", VALUE_CASES.values(), ids=VALUE_CASES.keys())
def test_values(fn):
    both(fn)


ERROR_CASES = {
    "size_dim_out_of_range": lambda t: t.ones(2, 3).size(2),
    "size_of_0d": lambda t: t.ones(()).size(1),
    "size_of_floats": lambda t: t.Size([2.5]),
    "item_many": lambda t: t.tensor([1, 2]).item(),
    "item_empty": lambda t: t.tensor([]).item(),
    "bool_ambiguous": lambda t: bool(t.tensor([1, 2])),
    "bool_empty": lambda t: bool(t.tensor([])),
    "len_0d": lambda t: len(t.tensor(2)),
    "iter_0d": lambda t: iter(t.tensor(2)),
    "index_float": lambda t: [1, 2][t.tensor(1.0)],
    "index_many": lambda t: [1, 2, 3][t.tensor([1, 2])],
    "float_many": lambda t: float(t.tensor([2, 3])),
    "int_many": lambda t: int(t.tensor([2, 3])),
    "complex_many": lambda t: complex(t.tensor([2, 3])),
    "format_spec_1d": lambda t: f"{t.tensor([2.5]):.2f}",
    "numpy_requires_grad": lambda t: t.ones(2, requires_grad=True).numpy(),
    "asarray_requires_grad": lambda t: np.asarray(t.ones(2, requires_grad=True)),
    "requires_grad_int": lambda t: t.ones(2, dtype=t.int64).requires_grad_(),
    "requires_grad_bool": lambda t: setattr(t.ones(2, dtype=t.bool), "requires_grad", True),
    "nonleaf_set_false": lambda t: setattr(t.ones(2, requires_grad=True) * 2, "requires_grad", False),
    "nonleaf_set_true": lambda t: setattr(t.ones(2, requires_grad=True) * 2, "requires_grad", True),
    "nonleaf_requires_grad_false": lambda t: (t.ones(2, requires_grad=True) * 2).requires_grad_(False),
    "deepcopy_nonleaf": lambda t: copy.deepcopy(t.ones(2, requires_grad=True) * 2),
    "leaf_inplace": lambda t: t.ones(2, requires_grad=True).add_(1),
}


@pytest.mark.parametrize("fn", ERROR_CASES.values(), ids=ERROR_CASES.keys())
def test_errors(fn):
    check_raises(fn)


def test_iteration_yields_rows():
    if not hasattr(mytorch.Tensor, "__getitem__"):
        pytest.skip("indexing (Tensor.__getitem__) is not implemented yet")
    rows = list(mytorch.tensor([[1, 2], [3, 4]]))
    ref = list(torch.tensor([[1, 2], [3, 4]]))
    assert len(rows) == 2
    for m, r in zip(rows, ref, strict=False):
        assert_same(m, r)


def test_numpy_shares_memory_both_ways():
    t = mytorch.zeros(2, 3)
    a = t.numpy()
    a[0, 0] = 4
    assert t.tolist()[0][0] == 4
    t.add_(1)
    assert a[0, 0] == 5 and a[1, 2] == 1
    assert np.shares_memory(np.asarray(t), a)
    assert a.flags.writeable


def test_numpy_force_copies_requires_grad_tensor():
    t = mytorch.ones(2, requires_grad=True)
    assert t.numpy(force=True).tolist() == [1.0, 1.0]


def test_detach_shares_memory_and_version():
    x = mytorch.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    d.add_(1)
    assert y.tolist() == [3.0, 3.0, 3.0]
    assert y._version == 1


def test_data_shares_memory_but_hides_the_change():
    x = mytorch.ones(3, requires_grad=True)
    x.data.mul_(5)
    assert x.tolist() == [5.0, 5.0, 5.0] and x._version == 0
    x.data = mytorch.zeros(3)
    assert x.tolist() == [0.0, 0.0, 0.0] and x.requires_grad


def test_modified_saved_tensor_is_detected():
    for lib in (mytorch, torch):
        a = lib.ones(2, requires_grad=True)
        b = a * 1
        c = b * b
        b.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            c.sum().backward()


PICKLE_CASES = {
    "float": lambda t: t.tensor([[1.0, 2], [3, 4]]),
    "int_0d": lambda t: t.tensor(5),
    "bool": lambda t: t.tensor([True, False]),
    "complex": lambda t: t.tensor([1j]),
    "requires_grad": lambda t: t.tensor([1.0, 2], requires_grad=True),
    "nonleaf": lambda t: t.tensor([1.0, 2], requires_grad=True) * 2,
    "non_contiguous": lambda t: t.from_numpy(np.arange(6.0).reshape(2, 3).T.copy().T),
}


@pytest.mark.parametrize("fn", PICKLE_CASES.values(), ids=PICKLE_CASES.keys())
def test_pickle_round_trip(fn):
    m, r = fn(mytorch), fn(torch)
    m2, r2 = pickle.loads(pickle.dumps(m)), pickle.loads(pickle.dumps(r))
    assert_same(m2, r2)
    assert m2.requires_grad == r2.requires_grad and m2.is_leaf == r2.is_leaf
    assert m2.data_ptr() != m.data_ptr()


def test_deepcopy_copies_data_grad_and_flag():
    x = mytorch.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.is_leaf
    assert y.tolist() == [1.0, 2.0] and y.grad.tolist() == [3.0, 3.0]
    y.data.add_(1)
    assert x.tolist() == [1.0, 2.0]
    both_shared = copy.deepcopy([x, x])
    assert both_shared[0] is both_shared[1]


def test_dtype_and_device_pickle():
    assert pickle.loads(pickle.dumps(mytorch.float16)) is mytorch.float16
    assert pickle.loads(pickle.dumps(mytorch.device("cuda:1"))) == mytorch.device("cuda:1")


def test_shape_is_cheap_and_a_tuple():
    s = mytorch.ones(2, 3).shape
    assert isinstance(s, tuple) and s == (2, 3) and isinstance(s, mytorch.Size)
    assert mytorch.Size((2, 3)) == torch.Size((2, 3))
