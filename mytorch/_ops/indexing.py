"""Indexing, gathering, scattering and selection: ``x[...]``, gather/scatter, index_*, masked_*,
where, nonzero, searchsorted.

Two ideas carry the whole module:

* **Basic vs advanced indexing.** Integers, slices, ``None`` and ``...`` only move the start
  pointer and the strides, so ``x[1, ::2]`` is a *view* (same memory, same version counter).
  Index tensors and boolean masks pick arbitrary elements, so ``x[idx]`` must *copy*.
  Like torch, we apply the basic part first (a view) and then the advanced part on that view.
* **Gather and scatter are each other's gradient.** ``gather`` reads ``out[i][j] = x[i][idx[i][j]]``
  (for ``dim=1``); its backward *adds* the gradient back to where it was read from:
  ``scatter_add``. Likewise ``index_select`` ↔ ``index_add``, ``take`` ↔ ``put(accumulate=True)``,
  ``masked_select`` ↔ ``masked_scatter``, and ``x[idx]`` ↔ ``index_put(accumulate=True)``.
"""
from __future__ import annotations

import builtins
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import arange
from .._device import cuda_backend, xp_for
from .._pieces import piece, pieces
from .._tensor import Tensor, make_view, tensor_method, wrap
from ..autograd.graph import SavedOutput, check_inplace, needs_grad, record, sum_to
from ._operands import array_on, broadcast_pair, check_same_device, checked_scalar, \
    contiguous_result, check_no_overlap, pointwise_layout, warn_if_expanded, warn_once, wrap_dim
from ._variants import _cap, _inplace_version, _to_out, inplace

__all__ = ["index_select", "take", "take_along_dim", "gather", "scatter", "scatter_add",
           "scatter_reduce", "index_add", "index_copy", "index_fill", "index_put", "index_put_",
           "put", "masked_fill", "masked_select", "masked_scatter", "where", "nonzero",
           "argwhere", "searchsorted", "bucketize"]

_ALL = slice(None)
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))
_LONG = (np.dtype(np.int64),)
_MASK_DTYPES = (np.dtype(np.bool_), np.dtype(np.uint8))
_numbers = (builtins.bool, builtins.int, builtins.float, builtins.complex, np.generic)


# ============================================================================ helpers
def _ufuncs(arr: Any) -> Any:
    """The module whose ufuncs (``add.at``…) work on ``arr``: NumPy (also for simulated-CUDA
    arrays, which dispatch themselves) or CuPy."""
    return np if isinstance(arr, np.ndarray) else cuda_backend().xp


def _restride(arr: Any, strides: tuple) -> Any:
    """The same memory seen with other (byte) strides."""
    if isinstance(arr, np.ndarray):
        return np.lib.stride_tricks.as_strided(arr, arr.shape, strides, subok=True)
    return cuda_backend().xp.lib.stride_tricks.as_strided(arr, arr.shape, strides)


def _zeros(shape: tuple, t: Tensor) -> Tensor:
    """A zero tensor of ``shape`` with ``t``'s dtype and device (the canvas of a backward)."""
    return wrap(xp_for(t._device).zeros(shape, t._data.dtype), t._device)


def _index_data(index: Any, t: Tensor, message: str, exc: type = RuntimeError,
                dtypes: tuple = _INDEX_DTYPES) -> Any:
    """The array of an index tensor, on ``t``'s device; ``exc(message)`` if its dtype is wrong."""
    if not isinstance(index, Tensor):
        raise TypeError(f"index must be a Tensor, not {type(index).__name__}")
    if index._data.dtype not in dtypes:
        raise exc(message.format(dtype=_cap(index.dtype)))
    if index._device != t._device and not (index._device.type == "cpu" and index._data.ndim == 0):
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                           f"devices, {t._device} and {index._device}!")
    return array_on(index, t._device)


def _check_bounds(idx: Any, size: int, dim: int, *, exc: type = RuntimeError,
                  negative_ok: bool = False,
                  message: str = "index {i} is out of bounds for dimension {dim} with size {size}"
                  ) -> None:
    """Every index in ``[0, size)`` (or ``[-size, size)``), else torch's error."""
    if idx.size == 0:
        return
    lo, hi, low = int(idx.min()), int(idx.max()), (-size if negative_ok else 0)
    if lo < low or hi >= size:
        raise exc(message.format(i=lo if lo < low else hi, dim=dim, size=size))


def _fill_value(value: Any, t: Tensor, op: str) -> Any:
    """A fill value (number or 0-dim tensor) as a scalar of ``t``'s dtype."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor "
                               f"with {value._data.ndim} dimension(s).")
        value = value.item()
    return checked_scalar(value, t.dtype)  # torch: an overflow error, never a silent wrap


def _mask_data(mask: Any, t: Tensor, message: str) -> Any:
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError(message.format(dtype=_cap(mask.dtype) if isinstance(mask, Tensor)
                                          else type(mask).__name__))
    return array_on(mask, t._device)


def _reduce_to(g: Tensor, shape: tuple) -> Tensor:
    """``sum_to`` that also accepts a target with extra leading 1s (a value written into a
    smaller slot, e.g. ``x[0] = v`` with ``v.shape == (1, 4)``)."""
    shape = tuple(shape)
    extra = len(shape) - g.ndim
    if extra > 0:
        return sum_to(g, shape[extra:]).reshape(shape)
    return sum_to(g, shape)


def _write(self: Tensor, write: Callable[[Any], None], name: str, inputs: tuple,
           backward: Callable, in_place: bool, saved: tuple = ()) -> Tensor:
    """Apply ``write(array)`` to ``self``'s memory (``in_place``) or to a fresh copy.

    Without autograd the in-place path writes straight into ``self`` (no copy). With autograd
    it writes into a copy that ``pointwise.inplace`` installs, so the graph is rebased correctly.
    ``saved``: the tensors ``backward`` reads (index and mask tensors, as torch saves them).
    """
    if in_place and not needs_grad(*inputs):
        write(self._data)
        self._bump()
        return self
    res = self._data.copy()
    write(res)
    if in_place:
        return inplace(self, res, name, inputs, backward, saved)
    out = wrap(res, self._device)
    if needs_grad(*inputs):
        record(name, out, inputs, backward, saved)
    return out


# ============================================================================ x[key]
class _Key:
    """A torch index key split in two: ``basic`` (a NumPy key giving a view) and ``adv`` (index
    arrays applied to that view, or None). ``strides`` lists ``(dim, source dim, step)`` where
    torch's stride may differ from NumPy's: dims inserted by ``None`` (step None; NumPy: 0) and
    empty stepped slices (NumPy keeps the unstepped stride). The strides are worked out from the
    array the key is applied to: a backward applies it to a fresh contiguous array whose
    strides are not the forward's (an overlapping ``unfold`` view, say)."""

    __slots__ = ("basic", "adv", "strides", "op")

    def __init__(self, basic: tuple, adv: tuple | None, strides: list, op: str | None) -> None:
        self.basic, self.adv, self.strides = basic, adv, strides
        self.op = op  # torch's last view op for the basic part ("Select"...), None if it makes none

    def view(self, arr: Any) -> Any:
        out = arr[self.basic]
        if self.strides and self.adv is None:
            strides = list(out.strides)
            for d, orig, step in self.strides:
                if step is not None:
                    strides[d] = arr.strides[orig] * step
                else:  # torch's unsqueeze: size * stride of the dim after it
                    strides[d] = arr.shape[orig] * arr.strides[orig] if orig < arr.ndim \
                        else arr.itemsize
            if tuple(strides) != out.strides:
                out = _restride(out, tuple(strides))
        return out

    def get(self, arr: Any) -> Any:
        out = self.view(arr)
        return out if self.adv is None else _numpy_index(out.__getitem__, self.adv_for(out))

    def adv_for(self, view: Any) -> tuple:
        """The advanced part to apply to ``view``. When the basic part selected nothing, torch's
        kernel runs over no element and so checks no index bound (only an index into a dim of
        size 0 is refused); NumPy checks them all, so the indices are zeroed there."""
        if view.size == 0:
            adv, dim = [], 0
            for a in self.adv:
                if isinstance(a, slice) or a.dtype == np.bool_:
                    dim += 1 if isinstance(a, slice) else a.ndim
                    adv.append(a)
                    continue
                if view.shape[dim] == 0 and a.size:
                    raise IndexError("index is out of bounds for dimension with size 0")
                adv.append(a * 0)
                dim += 1
            return tuple(adv)
        return self.adv

    def assign(self, arr: Any, value: Any) -> None:
        """``arr[key] = value`` (torch's semantics: the basic part first)."""
        view = arr[self.basic]
        try:
            if self.adv is None:
                view[...] = value
            else:
                _numpy_index(lambda k: view.__setitem__(k, value), self.adv_for(view))
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape "
                               f"{list(getattr(value, 'shape', ()))} cannot be broadcast to "
                               f"indexing result of shape {list(self.get(arr).shape)}") from None

    def accumulate(self, arr: Any, value: Any) -> None:
        """``arr[key] += value`` where repeated indices all add up (``np.add.at``)."""
        view = arr[self.basic]
        if self.adv is None:
            view += value
        else:
            _numpy_index(lambda k: _ufuncs(arr).add.at(view, k, value), self.adv_for(view))


def _numpy_index(fn: Callable, key: tuple) -> Any:
    """Run ``fn(key)``, rewording NumPy's index errors the way torch words them."""
    try:
        return fn(key)
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension").replace("arrays", "tensors")) \
            from None


def _is_tuple_like(key: list) -> bool:
    """torch reads ``x[[0, slice(None)]]`` as ``x[0, :]``: a short list holding slices, None,
    ..., tensors or sequences is a tuple of indices, not an index tensor."""
    return len(key) < 32 and any(k is None or k is Ellipsis or isinstance(k, (slice, Tensor, list,
                                                                                tuple, range,
                                                                                np.ndarray))
                                 for k in key)


def _classify(k: Any, t: Tensor) -> tuple[str, Any, int]:
    """One entry of an index key → (kind, value, number of tensor dims it consumes)."""
    if k is None:
        return "none", None, 0
    if k is Ellipsis:
        return "ellipsis", None, 0
    if isinstance(k, (builtins.bool, np.bool_)):
        return "bool", _bool_index(builtins.bool(k), t), 0
    if isinstance(k, numbers.Integral):
        return "int", int(k), 1
    if isinstance(k, slice):
        if k.step is not None and k.step.__index__() <= 0:
            raise ValueError("step must be greater than zero" if k.step.__index__() < 0
                             else "slice step cannot be zero")
        return "slice", k, 1
    if isinstance(k, (list, tuple, range, np.ndarray)):  # a sequence is an index tensor
        arr = np.asarray(k)
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int64)
        k = Tensor._wrap(arr)
    if isinstance(k, Tensor):
        dt = k._data.dtype
        if dt in _MASK_DTYPES:
            if k._data.ndim == 0:
                return "bool", _bool_index(builtins.bool(k.item()), t), 0
            arr = array_on(k, t._device)
            return "mask", arr if dt == np.bool_ else arr.astype(np.bool_), arr.ndim
        if dt in _INDEX_DTYPES:
            if k._data.ndim == 0:
                return "int", int(k.item()), 1
            return "index", array_on(k, t._device), 1
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(k).__name__})")


def _bool_index(flag: bool, t: Tensor) -> Any:
    # x[True] is x[None][[0]], x[False] is x[None][[]]: a new dim of size 1 or 0.
    return xp_for(t._device).zeros(1 if flag else 0, np.int64)


def _check_second_ellipsis(items: list, kinds: list, ndim: int) -> None:
    """torch lets every ``...`` skip the unindexed dims again: an index after a second ``...``
    then lands past the last dim (IndexError); without one, the extra ``...`` change nothing."""
    second = [i for i, kind in enumerate(kinds) if kind == "ellipsis"][1]
    for kind, v, _ in items[second + 1:]:
        if kind not in ("ellipsis", "none"):
            raise IndexError(f"index {v if kind == 'int' else 0} is out of bounds for dimension "
                             f"{ndim} with size 0")


def _parse_key(t: Tensor, key: Any) -> _Key:
    """Translate a torch index key into a :class:`_Key` for ``t``; raise torch's errors."""
    if type(key) is int and t._data.ndim and -t._data.shape[0] <= key < t._data.shape[0]:
        return _Key((key, Ellipsis), None, [], "Select")  # the commonest key, x[i]: no walk
    if not isinstance(key, tuple):
        key = tuple(key) if isinstance(key, list) and _is_tuple_like(key) else (key,)
    arr = t._data
    shape, strides, ndim = arr.shape, arr.strides, arr.ndim
    items = [_classify(k, t) for k in key]
    specified = builtins.sum(n for _, _, n in items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    kinds = [kind for kind, _, _ in items]
    if kinds.count("ellipsis") > 1 and ndim > specified:
        _check_second_ellipsis(items, kinds, ndim)
    basic: list = []
    adv: list = []
    fixes: list = []
    orig = 0            # next dim of the original tensor
    rdim = 0            # next dim of the basic view
    seen_ellipsis = False
    op = None           # torch's last view op: it selects, slices, unsqueezes in key order
    for kind, v, n in items:
        if kind == "int":
            size = shape[orig]
            if not -size <= v < size:
                raise IndexError(f"index {v} is out of bounds for dimension {orig} with size {size}")
            basic.append(v)
            orig, op = orig + 1, "Select"
        elif kind == "slice":
            if v.step is not None and v.step != 1:
                fixes.append((rdim, orig, v.step.__index__()))
            if not _whole(v, shape[orig]):  # torch skips a slice that keeps the whole dim
                op = "Slice"
            basic.append(v)
            adv.append(_ALL)
            orig, rdim = orig + 1, rdim + 1
        elif kind == "none":
            # torch's unsqueeze gives the new dim the stride size*stride of the dim after it.
            fixes.append((rdim, orig, None))
            basic.append(None)
            adv.append(_ALL)
            rdim, op = rdim + 1, "Unsqueeze"
        elif kind == "ellipsis":
            k = 0 if seen_ellipsis else ndim - specified
            seen_ellipsis = True
            basic.extend([_ALL] * k)
            adv.extend([_ALL] * k)
            orig, rdim = orig + k, rdim + k
        elif kind == "bool":
            basic.append(None)
            adv.append(v)
            rdim, op = rdim + 1, "Unsqueeze"
        elif kind == "index":
            basic.append(_ALL)
            adv.append(v)
            orig, rdim = orig + 1, rdim + 1
        else:  # mask
            for i, m in enumerate(v.shape):
                if m != shape[orig + i]:
                    raise IndexError(f"The shape of the mask {list(v.shape)} at index {i} does not "
                                     f"match the shape of the indexed tensor {list(shape)} at "
                                     f"index {orig + i}")
            basic.extend([_ALL] * n)
            adv.append(v)
            orig, rdim = orig + n, rdim + n
    basic.append(Ellipsis)  # keeps a full integer index a 0-dim *view*, not a NumPy scalar
    has_adv = any(a is not _ALL for a in adv)
    return _Key(tuple(basic), tuple(adv) if has_adv else None, fixes, op)


def _whole(s: slice, size: int) -> bool:
    """Does ``s`` keep a whole dim of ``size`` as it is (``:``, ``0:``, ``0:size``)? torch's
    indexing then makes no slice."""
    return (s.start is None or s.start.__index__() == 0) and (s.step is None or s.step == 1) \
        and (s.stop is None or s.stop.__index__() >= size)


def _index_with(t: Tensor, k: _Key) -> Tensor:
    """``t[k]``: a view for basic keys, a copy for advanced ones; differentiable."""
    arr = t._data
    if k.adv is None:
        res = make_view(t, k.view(arr))
    else:
        res = wrap(k.get(arr), t._device)
    if needs_grad(t):
        shape = arr.shape
        if k.adv is not None:
            name = "IndexBackward0"
        else:  # torch names the node after its last view op: x[0] selects, x[1:] slices
            name = f"{k.op}Backward0" if k.op else "AliasBackward0"
        record(name, res, (t,),
               lambda g: (_index_backward(g, k, shape),))
    return res


def _index_backward(g: Tensor, k: _Key, shape: tuple) -> Tensor:
    """Zeros of the input's shape with ``g`` added where ``t[k]`` read (repeats accumulate)."""
    z = xp_for(g._device).zeros(shape, g._data.dtype)
    if k.adv is None:
        k.view(z)[...] = g._data
    else:
        k.accumulate(z, g._data)
    res = wrap(z, g._device)
    if needs_grad(g):
        record("IndexPutBackward0", res, (g,), lambda gg: (_index_with(gg, k),))
    return res


def _zero_slot(g: Tensor, k: _Key) -> Tensor:
    """``g`` with the region ``k`` set to zero (the gradient of an overwritten input)."""
    out = g._data.copy()
    k.assign(out, 0)
    res = wrap(out, g._device)
    if needs_grad(g):
        record("IndexPutBackward0", res, (g,), lambda gg: (_zero_slot(gg, k),))
    return res


def _getitem(self: Tensor, key: Any) -> Tensor:
    """``x[key]`` like torch: ints, slices (step > 0), None, ..., bools, index tensors, masks."""
    k = _parse_key(self, key)
    if key.__class__ is slice:  # torch's x[a:b] slices even a whole dim (x[a:b, ...] does not)
        k.op = "Slice"
    return _index_with(self, k)


def _setitem(self: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: write in place (value broadcast and cast to ``x``'s dtype)."""
    k = _parse_key(self, key)
    if k.op and self._view_meta and needs_grad(self, value):
        # torch writes through the view x[key]: its message names it if autograd recorded it
        check_inplace(self, k.op if self._requires_grad else None)
    if 0 in self._data.strides:  # an expanded tensor: is the written-to part overlapping?
        if k.adv is None:
            check_no_overlap(_index_with(self.detach(), k))
        else:
            warn_if_expanded(self, "index_put_", "tensor[indices] = tensor")
    if isinstance(value, Tensor):
        varr = array_on(value, self._device)
    elif isinstance(value, _numbers):
        varr = checked_scalar(value, self.dtype)  # u8[0] = 300 is an overflow error in torch
    elif isinstance(value, (list, tuple, np.ndarray)):
        varr = array_on(Tensor._wrap(np.asarray(value)), self._device)
    else:
        raise TypeError(f"can't assign a {type(value).__name__} to a {self.type()}")
    vshape = tuple(getattr(varr, "shape", ()))

    def backward(g: Tensor) -> tuple:
        gv = None
        if isinstance(value, Tensor) and value._requires_grad:  # back to value's shape and dtype
            gv = _reduce_to(_index_with(g, k), vshape).to(value.dtype)
        return _zero_slot(g, k), gv

    _write(self, lambda arr: k.assign(arr, varr),
           "torch::autograd::CopySlices" if k.adv is None else "IndexPutBackward0", (self, value),
           backward, True)


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem


# ============================================================================ index_put / put / take
def _index_put(self: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool,
               in_place: bool) -> Tensor:
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")
    for i, ix in enumerate(indices):
        if not isinstance(ix, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(ix).__name__}")
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_cap(self.dtype)} for the destination and {_cap(values.dtype)} for "
                           "the source.")
    k = _parse_key(self, tuple(indices))
    varr = array_on(values, self._device)
    vshape = tuple(varr.shape)

    def write(arr: Any) -> None:
        (k.accumulate if accumulate else k.assign)(arr, varr)

    def backward(g: Tensor) -> tuple:
        return (g if accumulate else _zero_slot(g, k),
                _reduce_to(_index_with(g, k), vshape) if values._requires_grad else None)

    return _write(self, write, "IndexPutBackward0", (self, values), backward, in_place,
                  tuple(indices))


def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor,
              accumulate: bool = False) -> Tensor:
    """Out-of-place ``input[indices] = values`` (``+=`` with every repeat counted if accumulate)."""
    return _index_put(input, indices, values, accumulate, False)


def index_put_(input: Tensor, indices: Sequence[Tensor], values: Tensor,
               accumulate: bool = False) -> Tensor:
    """In-place ``input[indices] = values``; ``accumulate=True`` adds, counting repeated indices."""
    warn_if_expanded(input, "index_put_", "tensor[indices] = tensor")
    return _index_put(input, indices, values, accumulate, True)


def _flat_index(index: Any, t: Tensor, op: str, check: bool = True) -> Any:
    idx = _index_data(index, t, op + "(): Expected a long tensor for index, but got {dtype}",
                      dtypes=_LONG)
    if check:
        _check_bounds(idx, t._data.size, 0, exc=IndexError, negative_ok=True,
                      message="out of range: tried to access index {i} on a tensor of {size} "
                              "elements.")
    return idx


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of ``input`` seen as 1-D, at ``index`` (negative counts from the end)."""
    idx = _flat_index(index, input, "take", check=False)
    try:  # NumPy's take checks the bounds itself; only on failure do we look for the culprit
        res = wrap(input._data.reshape(-1).take(idx), input._device)
    except IndexError:
        _flat_index(index, input, "take")
        raise
    if needs_grad(input):
        shape = input._data.shape
        record("TakeBackward0", res, (input,),
               lambda g: (put(_zeros(shape, g), index, g, accumulate=True),), saved=(index,))
    return res


def _put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool, in_place: bool) -> Tensor:
    idx = _flat_index(index, self, "put_")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_cap(self.dtype)} and source.dtype = "
                           f"{_cap(source.dtype)}")
    if source._data.size != idx.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, "
                         f"but got source.numel() = {source._data.size}, index.numel() = "
                         f"{idx.size}")
    src = array_on(source, self._device).reshape(-1)
    flat_idx = idx.reshape(-1)

    def write(arr: Any) -> None:
        flat = arr.reshape(-1) if arr.flags.c_contiguous else arr.ravel()
        if accumulate:
            _ufuncs(arr).add.at(flat, flat_idx, src)
        else:
            flat[flat_idx] = src
        if not arr.flags.c_contiguous:  # ravel() copied: write the result back
            arr[...] = flat.reshape(arr.shape)

    sshape = tuple(source._data.shape)

    def backward(g: Tensor) -> tuple:
        gs = take(g, index).reshape(sshape) if source._requires_grad else None
        return (g if accumulate else put(g, index, _zeros(sshape, g)), gs)

    return _write(self, write, "PutBackward0", (self, source), backward, in_place, (index,))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Out-of-place ``put_``: ``input`` seen as 1-D gets ``source`` at ``index``."""
    return _put(input, index, source, accumulate, False)


@tensor_method()
def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """Write ``source`` into ``self`` seen as 1-D, at ``index`` (add instead if accumulate)."""
    check_no_overlap(self)
    return _put(self, index, source, accumulate, True)


# ============================================================================ gather / scatter
def _positions_key(idx: Any, dim: int, xp: Any) -> tuple:
    """The key of :func:`gather_index` as arrays: ``idx`` at ``dim``, ``arange`` elsewhere."""
    nd = idx.ndim
    return tuple(idx if d == dim else xp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - 1 - d))
                 for d, n in enumerate(idx.shape))


def _gather_index_fast(index: Tensor, dim: int) -> tuple:
    """:func:`gather_index` with the positions made by the array library directly (a tensor op
    per dim costs more than the gather itself on small tensors)."""
    key = _positions_key(index._data, dim, xp_for(index._device))
    return tuple(index if d == dim else wrap(k, index._device) for d, k in enumerate(key))


@piece("01.5", fast=_gather_index_fast)
def gather_index(index: "Tensor", dim: int) -> tuple:
    """The key of advanced indexing that reads what ``gather(input, dim, index)`` reads:
    ``input[key]`` has ``index``'s shape, and (2-D, dim=1) ``out[i][j] = input[i][index[i][j]]``.

    One index tensor per dim of ``index``: ``index`` itself at ``dim``; at each other dim ``d``
    the positions ``0 … index.shape[d]-1`` laid along dim ``d`` (size 1 in the other dims), so
    that broadcasting pairs every element of ``index`` with its own position. (``input`` is cut
    to ``index``'s size in the other dims first, so the key fits it.)
    """
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.dim()
            shape[d] = n
            key.append(arange(n, device=index.device).reshape(shape))
    return tuple(key)


def _along_key(idx: Any, dim: int, dev: Any) -> tuple:
    """The NumPy/CuPy key that reads ``arr[i][idx[i][j]]`` (for dim=1): the piece
    :func:`gather_index`, its tensors turned into arrays on ``dev``."""
    if pieces.gather_index is _gather_index_fast:  # the library's own: no tensors in between
        return _positions_key(idx, dim, xp_for(dev))
    key = pieces.gather_index(wrap(idx, dev), dim)
    return tuple(array_on(k, dev) if isinstance(k, Tensor) else k for k in key)


def _leading(arr: Any, shape: tuple, skip: int | None = None) -> Any:
    """The leading ``shape`` block of ``arr`` (all of dim ``skip``): torch's gather/scatter
    only touch the part of ``input``/``src`` that the index covers."""
    if arr.shape == shape:
        return arr
    return arr[tuple(_ALL if d == skip else slice(0, n) for d, n in enumerate(shape))]


def _check_gather(arr: Any, idx: Any, d: int) -> None:
    if idx.ndim != arr.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for i, (n, m) in enumerate(zip(idx.shape, arr.shape, strict=True)):
        if i != d and n > m:
            raise RuntimeError(f"Size does not match at dimension {i} expected index "
                               f"{list(idx.shape)} to be no larger than self {list(arr.shape)} "
                               f"apart from dimension {d}")
    _check_bounds(idx, arr.shape[d], d)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,
           out: Tensor | None = None) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for dim=1 (``input[index[i][j]][j]`` for dim=0).

    ``index`` has ``input``'s number of dims; the output has ``index``'s shape.
    """
    arr = input._data
    d = wrap_dim(dim, arr.ndim)
    idx = _index_data(index, input, "gather(): Expected dtype int32/int64 for index")
    _check_gather(arr, idx, d)
    res = wrap(_leading(arr, idx.shape, d)[_along_key(idx, d, input._device)],
               input._device)
    if needs_grad(input):
        shape = arr.shape
        record("GatherBackward0", res, (input,),
               lambda g: (scatter_add(_zeros(shape, g), d, index, g),), saved=(index,))
    return _to_out(res, out)


def _check_scatter(self: Tensor, d: int, idx: Any, src: Any) -> None:
    shape = self._data.shape
    if idx.ndim != len(shape):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and src.ndim != idx.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for i, n in enumerate(idx.shape):
        if (i != d and n > shape[i]) or (src is not None and n > src.shape[i]):
            what = f" and to be no larger size than src {list(src.shape)}" if src is not None \
                else ""
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self "
                               f"{list(shape)} apart from dimension {d}{what}")
    _check_bounds(idx, shape[d], d)


def _scatter_args(self: Tensor, dim: int, index: Tensor, src: Any, op: str = "scatter"
                  ) -> tuple[int, Any, Any]:
    """Checked (dim, index array, src array or fill scalar) for the scatter family."""
    d = wrap_dim(dim, self._data.ndim)
    idx = _index_data(index, self, op + "(): Expected dtype int32/int64 for index")
    if isinstance(src, Tensor):
        if src.dtype is not self.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        sarr = array_on(src, self._device)
        _check_scatter(self, d, idx, sarr)
        return d, idx, _leading(sarr, idx.shape)
    _check_scatter(self, d, idx, None)
    return d, idx, checked_scalar(src, self.dtype)


def _scatter(self: Tensor, dim: int, index: Tensor, src: Any, value: Any, reduce: str | None,
             in_place: bool) -> Tensor:
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing required argument 'src' (or 'value')")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and isinstance(src, Tensor):  # once per process, as in torch
        warn_once("The reduce argument of torch.scatter with Tensor src is deprecated and will be "
                  "removed in a future PyTorch release. Use torch.scatter_reduce instead for more "
                  "reduction options.", stacklevel=4)
    d, idx, s = _scatter_args(self, dim, index, src)

    def write(arr: Any) -> None:
        view, key = _leading(arr, idx.shape, d), _along_key(idx, d, self._device)
        if reduce is None:
            view[key] = s
        else:
            getattr(_ufuncs(arr), "add" if reduce == "add" else "multiply").at(view, key, s)

    def backward(g: Tensor) -> tuple:
        if reduce is not None:
            raise RuntimeError("derivative for aten::scatter is not implemented")
        gs = None
        if isinstance(src, Tensor) and src._requires_grad:
            gs = _pad_like(gather(g, d, index), tuple(src._data.shape))
        return scatter(g, d, index, 0), gs

    return _write(self, write, "ScatterBackward0" if isinstance(src, Tensor) else
                  "ScatterBackward1", (self, src), backward, in_place, (index,))


def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """Out-of-place ``scatter_``: a copy of ``input`` with ``src`` (or ``value``) written at
    ``index`` along ``dim``."""
    return _scatter(input, dim, index, src, value, reduce, False)


@tensor_method()
def scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
             reduce: str | None = None) -> Tensor:
    """``self[index[i][j]][j] = src[i][j]`` for dim=0 (``self[i][index[i][j]]`` for dim=1).

    ``reduce='add'``/``'multiply'`` combine with the existing value instead of overwriting.
    """
    check_no_overlap(self)
    return _scatter(self, dim, index, src, value, reduce, True)


def _scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor, in_place: bool) -> Tensor:
    d, idx, s = _scatter_args(self, dim, index, src, "scatter")

    def write(arr: Any) -> None:
        _ufuncs(arr).add.at(_leading(arr, idx.shape, d), _along_key(idx, d, self._device), s)

    def backward(g: Tensor) -> tuple:
        return g, _pad_like(gather(g, d, index), tuple(src._data.shape)) if src._requires_grad \
            else None

    return _write(self, write, "ScatterAddBackward0", (self, src), backward, in_place, (index,))


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Out-of-place ``scatter_add_``."""
    return _scatter_add(input, dim, index, src, False)


@tensor_method()
def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Like ``scatter_`` but *adds* ``src`` at ``index``; repeated indices all count (the
    backward of ``gather``)."""
    check_no_overlap(self)
    return _scatter_add(self, dim, index, src, True)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce: str, dtype: np.dtype) -> Any:
    """The value that does not change the reduction: 0 for sum, 1 for prod, -inf for amax…"""
    if reduce in ("sum", "mean", "prod"):
        return int(reduce == "prod")
    if dtype.kind == "b":
        return reduce == "amin"
    lo, hi = (-np.inf, np.inf) if dtype.kind in "fc" else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    return lo if reduce == "amax" else hi


def _scatter_reduce_into(arr: Any, d: int, idx: Any, s: Any, reduce: str, include_self: bool,
                         dev: Any) -> None:
    """Reduce ``s`` into ``arr`` at ``idx`` along ``d`` (the work of ``scatter_reduce_``)."""
    xp = xp_for(dev)
    view, key = _leading(arr, idx.shape, d), _along_key(idx, d, dev)
    uf = _ufuncs(arr)
    if not include_self:  # start the touched positions from the reduction's identity
        view[key] = _identity(reduce, arr.dtype)
    if reduce == "mean":
        count = xp.zeros(view.shape, np.int64)
        uf.add.at(count, key, 1)
        uf.add.at(view, key, s)
        touched = count > 0
        count += include_self
        count[~touched] = 1
        if arr.dtype.kind in "iub":
            view[...] = view // count
        else:
            view /= count
    else:
        ufunc = {"sum": uf.add, "prod": uf.multiply, "amax": uf.maximum, "amin": uf.minimum}[reduce]
        ufunc.at(view, key, s)


def _scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                    include_self: bool, in_place: bool) -> Tensor:
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if in_place and needs_grad(self, src):
        # the out-of-place op on a snapshot of self (its old value, history included)
        return _scatter_reduce_inplace(self, dim, index, src, reduce, include_self=include_self)
    d, idx, s = _scatter_args(self, dim, index, src, "scatter_reduce")
    xp = xp_for(self._device)

    def write(arr: Any) -> None:
        _scatter_reduce_into(arr, d, idx, s, reduce, include_self, self._device)

    if in_place or not needs_grad(self, src):
        return _write(self, write, "ScatterReduceBackward0", (self, src), None, in_place)
    arr = self._data.copy()
    write(arr)
    res = wrap(arr, self._device)
    out = SavedOutput(res)
    record("ScatterReduceBackward0", res, (self, src),
           lambda g: _scatter_reduce_backward(g, self, src, out(), d, index, idx, reduce,
                                              include_self, xp), saved=(self, src, out))
    return res


def _scatter_reduce_backward(g: Tensor, input: Tensor, src: Tensor, result: Tensor, d: int,
                             index: Tensor, idx: Any, reduce: str, include_self: bool,
                             xp: Any) -> tuple:
    """Gradients of ``scatter_reduce`` (torch's formulas). For sum, mean, amax and amin the
    factors that depend on the values (counts, which element won) are constants; prod is written
    with differentiable ops, so its gradient can be differentiated again."""
    dev = g._device
    const = lambda a: wrap(a.astype(g._data.dtype, copy=False), dev)  # noqa: E731
    key = _along_key(idx, d, dev)
    old, res_arr = input._data, result._data
    s = _leading(array_on(src, dev), idx.shape)
    if reduce == "sum":
        gself, gsrc = g, gather(g, d, index)
    elif reduce == "mean":
        n = xp.full(old.shape, 1 if include_self else 0, old.dtype)
        _ufuncs(n).add.at(_leading(n, idx.shape, d), key, 1)
        n[n == 0] = 1
        gself = g * const(1 / n)
        gsrc = gather(gself, d, index)
    elif reduce in ("amax", "amin"):
        self_is = (old == res_arr).astype(old.dtype)
        value = _leading(res_arr, idx.shape, d)[key]
        src_is = (s == value).astype(old.dtype)
        n = self_is.copy()
        _ufuncs(n).add.at(_leading(n, idx.shape, d), key, src_is)
        gdist = g * const(1 / n)
        gself = gdist * const(self_is)
        gsrc = gather(gdist, d, index) * const(src_is)
    else:  # prod: the product of the others, = result / x where x != 0 (careful with zeros)
        src_l = src[tuple(slice(0, k) for k in idx.shape)] if src.shape != idx.shape else src
        masked_self = input.masked_fill(input == 0, 1)
        gself = g * scatter_reduce(masked_self, d, index, src_l, "prod",
                                   include_self=include_self) / masked_self
        src_zero = src_l == 0
        zeros_in = wrap(xp.zeros(old.shape, old.dtype), dev).scatter_add(
            d, index, src_zero.to(input.dtype)).gather(d, index)
        single = src_zero & (zeros_in == 1)
        masked_src_result = scatter_reduce(input, d, index, src_l.masked_fill(single, 1), "prod",
                                           include_self=include_self)
        gsrc = where(single, gather(g * masked_src_result, d, index),
                     gather(g * result, d, index) / src_l.masked_fill(src_zero, 1))
    if not include_self:
        gself = scatter(gself, d, index, 0)
    gsrc = _pad_like(gsrc, tuple(src._data.shape)) if src._requires_grad else None
    return (gself if input._requires_grad else None), gsrc


def _pad_like(g: Tensor, shape: tuple) -> Tensor:
    """``g`` placed in the leading corner of zeros of ``shape``: ``src`` may be larger than the
    index, and its elements the index does not reach get no gradient. (torch 2.13 raises
    "invalid gradient" there instead.)"""
    if tuple(g.shape) == shape:
        return g
    corner = _Key(tuple(slice(0, n) for n in g.shape) + (Ellipsis,), None, [], "Slice")
    return _index_backward(g, corner, shape)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Reduce ``src`` into a copy of ``input`` at ``index``: 'sum', 'prod', 'mean', 'amax',
    'amin'; ``include_self=False`` ignores the original values at the touched positions."""
    return _scatter_reduce(input, dim, index, src, reduce, include_self, False)


@tensor_method()
def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place ``scatter_reduce``."""
    check_no_overlap(self)
    return _scatter_reduce(self, dim, index, src, reduce, include_self, True)


_scatter_reduce_inplace = _inplace_version(scatter_reduce)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *,
                   out: Tensor | None = None) -> Tensor:
    """``gather`` after broadcasting ``input`` and ``indices`` (except along ``dim``); with no
    dim, both are flattened first."""
    _index_data(indices, input, "torch.take_along_dim(): dtype of indices should be Long but "
                                "got {dtype}", dtypes=_LONG)
    if dim is None:
        return _to_out(gather(input.reshape(-1), 0, indices.reshape(-1)), out)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = wrap_dim(dim, input.ndim)
    a, i = list(input.shape), list(indices.shape)
    a[d] = i[d] = 1
    common = list(broadcast_pair(tuple(a), tuple(i)))
    ishape, xshape = list(common), list(common)
    ishape[d], xshape[d] = indices.shape[d], input.shape[d]
    x = input if list(input.shape) == xshape else input.expand(*xshape)
    ix = indices if list(indices.shape) == ishape else indices.expand(*ishape)
    return _to_out(gather(x, d, ix), out)


# ============================================================================ index_* along a dim
def _dim_key(d: int, idx: Any) -> tuple:
    """The NumPy key ``[:, :, idx]`` that picks ``idx`` along dim ``d``."""
    return (_ALL,) * d + (idx,)


def index_select(input: Tensor, dim: int, index: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The slices ``index`` (a vector) along ``dim``, in that order (a copy)."""
    idx = _index_data(index, input, "index_select(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    arr = input._data
    d = wrap_dim(dim, arr.ndim)
    if d == 0:  # torch's two kernels word (and classify) the same error differently
        _check_bounds(idx, arr.shape[d], d, exc=IndexError, message="index out of range in self")
    else:
        _check_bounds(idx, arr.shape[d], d, message="INDICES element is out of DATA bounds, "
                                                    "id={i} axis_dim={size}")
    res = wrap(arr.take(idx.reshape(-1), axis=d), input._device)
    if needs_grad(input):
        shape = arr.shape
        record("IndexSelectBackward0", res, (input,),
               lambda g: (index_add(_zeros(shape, g), d, index, g),), saved=(index,))
    return _to_out(res, out)


def _index_vector(index: Tensor, self: Tensor, op: str, dtypes: tuple = _INDEX_DTYPES,
                  exc: type = RuntimeError) -> Any:
    if dtypes is _LONG:
        message = op + "(): Expected a long tensor for index, but got {dtype}"
    else:
        message = op + "(): Expected dtype int32/int64 for index but got: {dtype}"
    idx = _index_data(index, self, message, exc, dtypes)
    if idx.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {idx.ndim} with "
                         f"type: {_cap(index.dtype)} and size: {list(idx.shape)}")
    return idx.reshape(-1)


def _check_source(self: Tensor, d: int, idx: Any, source: Tensor, op: str) -> Any:
    shape, sshape = self._data.shape, source._data.shape
    if source.dtype is not self.dtype:
        raise RuntimeError(f"{op}(): self ({_cap(self.dtype)}) and source ({_cap(source.dtype)}) "
                           "must have the same scalar type")
    if len(sshape) != len(shape) or any(a != b for i, (a, b) in enumerate(zip(shape, sshape, strict=True))
                                        if i != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(shape)} source.shape = "
                           f"{list(sshape)}")
    if sshape[d] != idx.size:
        raise RuntimeError(f"{op}(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({sshape[d]}), for dim: {d}")
    return array_on(source, self._device)


def _index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Any,
               in_place: bool) -> Tensor:
    d = wrap_dim(dim, self._data.ndim)
    idx = _index_vector(index, self, "index_add_")
    src = _check_source(self, d, idx, source, "index_add_")
    _check_bounds(idx, self._data.shape[d], d)
    if alpha != 1:
        src = src * checked_scalar(alpha, self.dtype)

    def write(arr: Any) -> None:
        _ufuncs(arr).add.at(arr, _dim_key(d, idx), src)

    def backward(g: Tensor) -> tuple:
        gs = index_select(g, d, index) if source._requires_grad else None
        return g, (gs * alpha if alpha != 1 and gs is not None else gs)

    return _write(self, write, "IndexAddBackward0", (self, source), backward, in_place, (index,))


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1
              ) -> Tensor:
    """Out-of-place ``index_add_``."""
    return _index_add(input, dim, index, source, alpha, False)


@tensor_method()
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1
               ) -> Tensor:
    """``self[:, index[i]] += alpha * source[:, i]`` (dim=1); repeated indices all add up."""
    check_no_overlap(self)
    return _index_add(self, dim, index, source, alpha, True)


def _index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor, in_place: bool) -> Tensor:
    d = wrap_dim(dim, self._data.ndim)
    idx = _index_vector(index, self, "index_copy_", dtypes=_LONG)
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but "
                           f"got (self) {_cap(self.dtype)} and (source) {_cap(source.dtype)}")
    if source._data.ndim != self._data.ndim or source._data.shape[d] != idx.size:
        n = source._data.shape[d] if d < source._data.ndim else source._data.size
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({n})")
    src = _check_source(self, d, idx, source, "index_copy_")
    _check_bounds(idx, self._data.shape[d], d, exc=IndexError,
                  message="index_copy_(): index {i} is out of bounds for dimension {dim} with "
                          "size {size}")

    def write(arr: Any) -> None:
        arr[_dim_key(d, idx)] = src

    def backward(g: Tensor) -> tuple:
        gs = index_select(g, d, index) if source._requires_grad else None
        return index_fill(g, d, index, 0), gs

    return _write(self, write, "IndexCopyBackward0", (self, source), backward, in_place,
                  (index,))


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """Out-of-place ``index_copy_``."""
    return _index_copy(input, dim, index, source, False)


@tensor_method()
def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """``self[:, index[i]] = source[:, i]`` (dim=1)."""
    check_no_overlap(self)
    return _index_copy(self, dim, index, source, True)


def _index_fill(self: Tensor, dim: int, index: Tensor, value: Any, in_place: bool) -> Tensor:
    d = wrap_dim(dim, self._data.ndim)
    idx = _index_data(index, self, "index_fill_(): Expected dtype int64 for index.", IndexError,
                      _LONG)
    if idx.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    idx = idx.reshape(-1)
    v = _fill_value(value, self, "index_fill_")
    size = self._data.shape[d] if self._data.ndim else 1
    _check_bounds(idx, size, d, exc=IndexError, negative_ok=True)

    def write(arr: Any) -> None:
        arr[_dim_key(d, idx)] = v

    def backward(g: Tensor) -> tuple:
        gv = index_select(g, d, index).sum() if isinstance(value, Tensor) and \
            value._requires_grad else None
        return index_fill(g, d, index, 0), gv

    return _write(self, write, "IndexFillBackward0", (self, value), backward, in_place, (index,))


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """Out-of-place ``index_fill_``."""
    return _index_fill(input, dim, index, value, False)


@tensor_method()
def index_fill_(self: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """Fill the slices ``index`` along ``dim`` with ``value`` (a number or 0-dim tensor)."""
    warn_if_expanded(self, "index_fill_")
    return _index_fill(self, dim, index, value, True)


# ============================================================================ masks
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` is True, ``input`` elsewhere (``input`` and ``mask`` broadcast)."""
    m = _mask_data(mask, input, "masked_fill_ only supports boolean masks, but got mask with "
                                "dtype {dtype}")
    v = _fill_value(value, input, "masked_fill_")
    arr = input._data
    broadcast_pair(m.shape, arr.shape)  # torch's error names the mask "tensor a"
    res = wrap(contiguous_result(xp_for(input._device).where(m, v, arr)), input._device)
    if needs_grad(input, value):
        shape = arr.shape
        record("MaskedFillBackward0" if not isinstance(value, Tensor) else "MaskedFillBackward1",
               res, (input, value),
               lambda g: (sum_to(masked_fill(g, mask, 0), shape) if input._requires_grad else None,
                          masked_select(g, mask).sum() if isinstance(value, Tensor) and
                          value._requires_grad else None), saved=(mask,))
    return res


@tensor_method()
def masked_fill_(self: Tensor, mask: Tensor, value: Any) -> Tensor:
    """In-place ``masked_fill``; ``mask`` must broadcast to ``self``'s shape."""
    warn_if_expanded(self, "masked_fill_")
    m = _mask_data(mask, self, "masked_fill_ only supports boolean masks, but got mask with "
                               "dtype {dtype}")
    v = _fill_value(value, self, "masked_fill_")
    shape = self._data.shape
    if broadcast_pair(shape, m.shape) != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(broadcast_pair(shape, m.shape))}")
    xp = xp_for(self._device)

    def backward(g: Tensor) -> tuple:
        return masked_fill(g, mask, 0), (masked_select(g, mask).sum() if isinstance(
            value, Tensor) and value._requires_grad else None)

    return _write(self, lambda arr: xp.copyto(arr, v, where=m), "MaskedFillBackward0",
                  (self, value), backward, True, (mask,))


def masked_select(input: Tensor, mask: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elements where ``mask`` is True, as a 1-D tensor (``input``/``mask`` broadcast)."""
    m = _mask_data(mask, input, "masked_select: expected BoolTensor for mask")
    arr = input._data
    shape = broadcast_pair(arr.shape, m.shape)
    xp = xp_for(input._device)
    a = arr if arr.shape == shape else xp.broadcast_to(arr, shape)
    mb = m if m.shape == shape else xp.broadcast_to(m, shape)
    res = wrap(a[mb], input._device)
    if needs_grad(input):
        src_shape = arr.shape
        record("MaskedSelectBackward0", res, (input,),
               lambda g: (sum_to(masked_scatter(_zeros(shape, g), mask, g), src_shape),),
               saved=(mask,))
    return _to_out(res, out)


def _masked_scatter(self: Tensor, mask: Tensor, source: Tensor, in_place: bool) -> Tensor:
    m = _mask_data(mask, self, "masked_scatter_ only supports boolean masks, but got mask with "
                               "dtype {dtype}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got "
                           f"{_cap(self.dtype)} and {_cap(source.dtype)}")
    shape = self._data.shape
    bshape = broadcast_pair(shape, m.shape)
    if bshape != shape:
        if in_place:
            raise RuntimeError(f"masked_scatter_: expected mask to be broadcastable to self "
                               f"{list(shape)}, got mask {list(m.shape)}")
        return _masked_scatter(self.expand(*bshape), mask, source, False)
    mb = m if m.shape == shape else xp_for(self._device).broadcast_to(m, shape)
    count = int(mb.sum())
    if source._data.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    src = array_on(source, self._device).reshape(-1)[:count]

    def write(arr: Any) -> None:
        arr[mb] = src

    def backward(g: Tensor) -> tuple:
        gs = None
        if source._requires_grad:
            sel = masked_select(g, mask)
            flat = _zeros((source._data.size,), g)
            gs = put(flat, wrap(xp_for(g._device).arange(count), g._device), sel) \
                .reshape(tuple(source._data.shape))
        return masked_fill(g, mask, 0), gs

    return _write(self, write, "MaskedScatterBackward0", (self, source), backward, in_place,
                  (mask,))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Out-of-place ``masked_scatter_``."""
    return _masked_scatter(input, mask, source, False)


@tensor_method()
def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """Copy ``source``'s elements, in order, into the positions where ``mask`` is True."""
    check_no_overlap(self)
    return _masked_scatter(self, mask, source, True)


# ============================================================================ where / nonzero
def where(condition: Tensor, input: Any = None, other: Any = None, *,
          out: Tensor | None = None) -> Any:
    """``input`` where ``condition`` else ``other`` (broadcast, torch's type promotion).

    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``.
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if condition.dtype is not D.bool and condition.dtype is not D.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_cap(condition.dtype)}")
    tensors = [t for t in (condition, input, other) if isinstance(t, Tensor)]
    dev = check_same_device(*tensors)
    dt = D.result_type_key(tuple((2 if x._data.ndim else 1, x.dtype) if isinstance(x, Tensor)
                                 else (0, D.scalar_dtype(x)) for x in (input, other)))
    a, b = _as_array(input, dt, dev), _as_array(other, dt, dev)
    c = array_on(condition, dev)
    broadcast_pair(broadcast_pair(c.shape, getattr(a, "shape", ())), getattr(b, "shape", ()))
    if c.dtype != np.bool_:
        c = c.astype(np.bool_)
    res = wrap(pointwise_layout(xp_for(dev).where(c, a, b), c, a, b), dev)
    if needs_grad(input, other):
        cond = wrap(c, dev)
        sa, sb = tuple(getattr(a, "shape", ())), tuple(getattr(b, "shape", ()))
        record("WhereBackward0", res, (input, other),
               lambda g: (sum_to(where(cond, g, 0), sa) if _rg(input) else None,
                          sum_to(where(cond, 0, g), sb) if _rg(other) else None),
               saved=(condition,))
    return _to_out(res, out)


def _rg(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def _as_array(x: Any, dt: D.dtype, dev: Any) -> Any:
    if isinstance(x, Tensor):
        arr = array_on(x, dev)
        return arr if arr.dtype == dt.np else arr.astype(dt.np)
    return checked_scalar(x, dt)  # where(c, u8, 300): an overflow error in torch


@tensor_method("where")
def _where_method(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """``x.where(cond, y)`` is ``where(cond, x, y)``."""
    return where(condition, self, other)


def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    arr, dev = input._data, input._device
    if arr.ndim == 0:
        if as_tuple:
            return (wrap(arr.reshape(1).nonzero()[0].astype(np.int64, copy=False), dev),)
        return _to_out(wrap(xp_for(dev).zeros((int(builtins.bool(arr)), 0), np.int64), dev), out)
    idx = arr.nonzero()
    if as_tuple:
        return tuple(wrap(i.astype(np.int64, copy=False), dev) for i in idx)
    return _to_out(wrap(xp_for(dev).stack(idx, axis=1).astype(np.int64, copy=False), dev), out)


@tensor_method("nonzero")
def _nonzero_method(self: Tensor, *, as_tuple: bool = False) -> Any:
    return nonzero(self, as_tuple=as_tuple)


def argwhere(input: Tensor) -> Tensor:
    """Same as ``nonzero(input)``: one row of indices per non-zero element."""
    return nonzero(input)


tensor_method("argwhere")(argwhere)


# ============================================================================ searchsorted / bucketize
def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, out: Tensor | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """Where each value would be inserted to keep the innermost dim of ``sorted_sequence``
    sorted (``right``/``side='right'``: after equal elements)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got "
                               f"{side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got "
                               "side of left while right was True")
        right = side == "right"
    dev = sorted_sequence._device
    xp = xp_for(dev)
    seq = sorted_sequence._data
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, "
                           "but got 0 dimension")
    vals = array_on(input, dev) if isinstance(input, Tensor) else xp.asarray(input)
    if sorter is not None:
        seq = seq[_along_key(array_on(sorter, dev), seq.ndim - 1, dev)]
    how = "right" if right else "left"
    if seq.ndim == 1:
        res = xp.searchsorted(seq, vals, side=how)
    else:
        if seq.shape[:-1] != vals.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                               f"the first N-1 dimensions of boundaries tensor and input value "
                               f"tensor must match, but we got boundaries tensor "
                               f"{list(seq.shape)} and input value tensor {list(vals.shape)}")
        rows = seq.reshape(-1, seq.shape[-1])
        vrows = vals.reshape(-1, vals.shape[-1])
        res = xp.stack([xp.searchsorted(r, v, side=how) for r, v in zip(rows, vrows, strict=True)]) \
            .reshape(vals.shape)
    return _to_out(wrap(xp.asarray(res).astype(np.int32 if out_int32 else np.int64), dev), out)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False,
              out: Tensor | None = None) -> Tensor:
    """The bucket of each value of ``input`` given sorted 1-D ``boundaries``."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# ============================================================================ methods
tensor_method("index_select")(index_select)
tensor_method("take")(take)
tensor_method("take_along_dim")(take_along_dim)
tensor_method("gather")(gather)
tensor_method("scatter")(scatter)
tensor_method("scatter_add")(scatter_add)
tensor_method("scatter_reduce")(scatter_reduce)
tensor_method("index_add")(index_add)
tensor_method("index_copy")(index_copy)
tensor_method("index_fill")(index_fill)
tensor_method("index_put")(index_put)
tensor_method("index_put_")(index_put_)
tensor_method("put")(put)
tensor_method("masked_fill")(masked_fill)
tensor_method("masked_select")(masked_select)
tensor_method("masked_scatter")(masked_scatter)
