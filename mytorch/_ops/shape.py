"""Shapes and memory: view/reshape, permute/transpose, squeeze/unsqueeze, expand/repeat, cat/stack,
split/chunk, flip/roll, contiguous/clone, copy_/fill_/zero_, resize_, as_strided, …

Two kinds of operation live here (形状操作分两类):

* **views** (视图) — ``view``, ``transpose``, ``expand``, ``narrow``, ``diagonal``, ``as_strided`` …
  only change (shape, stride, storage_offset); the result shares memory *and* the version counter
  with its input (``make_view``), so writing through one is seen by the other. Their backward
  puts the gradient back where the view looked: reshape/permute it back, sum the expanded
  dimensions, or write it into zeros of the input's shape (``_grad_into_zeros``).
* **copies** (拷贝) — ``reshape`` of a non-viewable tensor, ``repeat``, ``cat``, ``flip``, ``roll``,
  ``clone`` … allocate new memory.

Strides are computed exactly as torch computes them, so ``stride()``/``storage_offset()`` of a
mytorch view equal torch's for the same sequence of operations.
"""
from __future__ import annotations

import builtins
import itertools
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import xp_for
from .._layout import channels_last, contiguous_format, preserve_format
from .._storage import extent, moved, resized, restride, storage_root, strided_view
from .._storage import storage_offset as _storage_offset
from .._tensor import _LEGACY_NAMES, Size, Tensor, make_view, tensor_method, wrap
from ..autograd.grad_mode import STATE
from ..autograd.graph import Node, needs_grad, record, record_outputs, sum_to
from ..autograd.views import check_inplace
from .._pieces import piece, pieces
from ._operands import broadcast_pair, channels_last_copy, check_no_overlap, check_same_device, \
    checked_scalar, contiguous_strides, preserve_strides, scalar_array, size_args, \
    star_or_keyword, warn_once, wrap_dim
from ._variants import _to_out, inplace

__all__ = [
    "reshape", "flatten", "unflatten", "ravel", "clone",
    "broadcast_to", "broadcast_tensors", "broadcast_shapes", "tile", "repeat_interleave",
    "permute", "transpose", "swapaxes", "swapdims", "t", "adjoint", "movedim", "moveaxis",
    "squeeze", "unsqueeze", "narrow", "narrow_copy", "select", "unbind", "split", "chunk",
    "tensor_split", "diagonal", "as_strided",
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
    "column_stack", "atleast_1d", "atleast_2d", "atleast_3d",
    "flip", "fliplr", "flipud", "roll", "rot90", "tril", "triu", "diag", "diag_embed", "diagflat",
    "meshgrid", "fill_", "zero_",
]

_int = builtins.int


# ============================================================================ helpers
def _sizes(args: tuple) -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(Size)`` → a tuple of ints (-1 allowed)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return tuple(map(operator.index, args))


def _view(input: Tensor, arr: Any, name: str, backward: Callable) -> Tensor:
    """Wrap ``arr`` (a view of ``input``'s memory) and record its backward when needed."""
    res = make_view(input, arr)
    if needs_grad(input):
        record(name, res, (input,), backward)
    return res


def _views(input: Tensor, arrays: Sequence[Any], d: int, name: str, join: Callable) -> tuple:
    """Wrap ``arrays`` (views of ``input``'s memory, its pieces along ``d``) as the outputs of
    one node called ``name``, as torch's ``split`` and ``unbind`` record them. The backward
    puts the pieces' gradients back together with ``join`` (``cat`` or ``stack`` along ``d``),
    with zeros for a piece that got none."""
    outs = [make_view(input, arr) for arr in arrays]
    if STATE.enabled:  # torch refuses in-place changes to these (autograd.views.check_inplace)
        for o in outs:
            o._view_meta = "multi_output"
    if needs_grad(input):
        shapes = [arr.shape for arr in arrays]

        def backward(grads: Any) -> tuple:
            grads = grads if isinstance(grads, list) else [grads]  # (a node of one output)
            like = next(g for g in grads if g is not None)
            return (join([like.new_zeros(shape) if g is None else g
                          for g, shape in zip(grads, shapes)], d),)

        record_outputs(name, outs, (input,), backward)
    return tuple(outs)


def _copy(input: Tensor, arr: Any, name: str, backward: Callable) -> Tensor:
    """Wrap ``arr`` (new memory computed from ``input``) and record its backward when needed."""
    res = wrap(arr, input._device)
    if needs_grad(input):
        record(name, res, (input,), backward)
    return res


def _scalar_type_name(dt: D.dtype) -> str:
    """torch's short C++ type name: Float, Double, Long, ..."""
    return _LEGACY_NAMES[dt.name][:-len("Tensor")]


def _grad_into_zeros(g: Tensor, shape: tuple, view_fn: Callable[[Tensor], Tensor], name: str,
                     overlap: bool = False) -> Tensor:
    """The backward of a view op: zeros of the input's ``shape`` with ``g`` where the view looks.

    ``view_fn`` is the forward view (``lambda t: t.narrow(1, 2, 3)``). With ``overlap`` (unfold,
    as_strided) several view elements may share one input element, so their gradients are
    *added* (``add.at``) instead of assigned. Recorded, so ``create_graph`` works: the backward of
    this function is ``view_fn`` again.
    """
    xp = xp_for(g._device)
    buf = wrap(xp.zeros(shape, g._data.dtype), g._device)
    if overlap:
        n = buf._data.size
        index = view_fn(wrap(xp.arange(n).reshape(shape), g._device))._data
        flat = buf._data.reshape(-1)
        add = np.add if isinstance(flat, np.ndarray) else xp.add  # NumPy (or simulated) vs CuPy
        add.at(flat, index, g._data)
    else:
        view_fn(buf)._data[...] = g._data
    if needs_grad(g):
        record(name, buf, (g,), lambda gg: (view_fn(gg),))
    return buf


# ============================================================================ view / reshape
def _infer_size(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Replace a single -1 in ``shape`` by the size that keeps ``numel`` elements."""
    infer, known = None, 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s}")
        else:
            known *= s
    if infer is None:
        if known != numel:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return shape
    if known == 0:
        if numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               "because the unspecified dimension size -1 can be any value and "
                               "is ambiguous")
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    if numel % known:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape[:infer] + (numel // known,) + shape[infer + 1:]


@piece("01.3")
def view_strides(shape: tuple, stride: tuple, new_shape: tuple) -> tuple | None:
    """The strides with which ``new_shape`` reads the memory of a tensor (``shape``, ``stride``)
    in the same row-major order, or None when no strides can (only a copy will do).

    Both shapes hold the same number of elements, at least one, and ``shape`` has at least one
    dim. Read from the last dim back, the old dims fall into chunks: a dim joins the chunk after
    it when its size is 1 or its stride steps exactly over that chunk (the chunk's elements times
    its base stride). A chunk is one evenly spaced block of memory, so it can be cut into new
    dims; a new dim may not straddle two chunks.
    """
    new_stride = [0] * len(new_shape)
    j = len(new_shape) - 1                   # the new dims still to place: new_shape[:j + 1]
    chunk_numel, base = 1, stride[-1]        # the chunk grows leftwards from stride ``base``
    for d in range(len(shape) - 1, -1, -1):
        chunk_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and stride[d - 1] != chunk_numel * base):
            placed = 1                       # the chunk ends at d: cut it into new dims
            while j >= 0 and (placed < chunk_numel or new_shape[j] == 1):
                new_stride[j] = placed * base
                placed *= new_shape[j]
                j -= 1
            if placed != chunk_numel:
                return None                  # a new dim would straddle two chunks
            if d > 0:
                chunk_numel, base = 1, stride[d - 1]
    return tuple(new_stride) if j == -1 else None


def _compute_stride(old_shape: tuple, old_stride: tuple, new_shape: tuple) -> tuple | None:
    """Strides that let ``new_shape`` view memory laid out as (old_shape, old_stride), or None:
    torch's ``computeStride``. Empty and 0-d tensors are settled here; the rest is the piece
    :func:`view_strides`."""
    if not old_shape:
        return (1,) * len(new_shape)
    if 0 in old_shape:
        return tuple(old_stride) if tuple(old_shape) == tuple(new_shape) else \
            contiguous_strides(new_shape)
    out = pieces.view_strides(old_shape, old_stride, new_shape)
    return out if out is None or type(out) is tuple else tuple(out)


def _reshaped_view(input: Tensor, new: tuple) -> Any:
    """``input``'s memory seen with shape ``new`` (torch's strides), or None if that needs a copy."""
    arr = input._data
    if arr.flags.c_contiguous and arr.size and (not arr.ndim or arr.strides[-1] == arr.itemsize) \
            and (1 not in arr.shape or arr.strides == _byte_strides(arr.shape, arr.itemsize)):
        return arr.reshape(new)  # one contiguous block: torch's strides are the standard ones
    # (NumPy's flag ignores the strides of size-1 dims; torch keeps them, so odd ones go the long way)
    stride = _compute_stride(arr.shape, input.stride(), new)
    return None if stride is None else _as_shape(input, new, stride)


def _as_shape(input: Tensor, shape: tuple, stride: tuple) -> Any:
    """``input``'s array seen with a new shape and strides (NumPy's reshape when it agrees)."""
    arr = input._data
    out = None
    if type(arr) is np.ndarray:  # any layout: NumPy reshapes to a view whenever one exists
        try:
            out = arr.reshape(shape, copy=False)
        except (ValueError, TypeError):  # (no view; TypeError: NumPy 2.0 has no ``copy=``)
            pass
    elif arr.flags.c_contiguous:
        out = arr.reshape(shape)
    if out is not None and out.strides == tuple(s * arr.itemsize for s in stride):
        return out
    return restride(arr, shape, stride)


@tensor_method()
def view(self: Tensor, *shape: Any, **kwargs: Any) -> Tensor:
    """Same memory seen with a new shape (or, ``view(dtype)``, its bytes read as another dtype).

    Raises RuntimeError when the strides make that impossible without a copy (use ``reshape``).
    """
    if kwargs:
        shape = star_or_keyword(shape, kwargs, "dtype" if "dtype" in kwargs else "size", "view")
    if len(shape) == 1 and isinstance(shape[0], D.dtype):
        return _view_dtype(self, shape[0])
    arr = self._data
    out = _reshaped_view(self, _infer_size(_sizes(shape), arr.size))
    if out is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    src = arr.shape
    return _view(self, out, "ViewBackward0", lambda g: (g.reshape(src),))


def _view_dtype(self: Tensor, dt: D.dtype) -> Tensor:
    """Reinterpret the bytes (like a C cast of the pointer). Not differentiable."""
    arr = self._data
    old, new = arr.itemsize, dt.itemsize
    if old != new:
        what = f"to view {_scalar_type_name(self.dtype)} as {_scalar_type_name(dt)} " \
               "(different element sizes)"
        if arr.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if self.stride(-1) != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {self.stride(-1)}")
        if new > old:
            ratio = new // old
            if arr.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                                   f"{arr.shape[-1]}")
            for i, s in enumerate(self.stride()[:-1]):
                if s % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, "
                                       f"but got {s}")
            if self.storage_offset() % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, "
                                   f"but got {self.storage_offset()}")
    return make_view(self, arr.view(dt.np))


@tensor_method()
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.view(other.size())``."""
    return view(self, other.shape)


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """Same data, new shape: a view when the strides allow it, otherwise a (contiguous) copy."""
    arr = input._data
    new = _infer_size(_sizes((shape,)), arr.size)
    out = _reshaped_view(input, new)
    src = arr.shape
    if out is not None:
        return _view(input, out, "ViewBackward0", lambda g: (g.reshape(src),))
    return _copy(input, arr.reshape(new), "UnsafeViewBackward0", lambda g: (g.reshape(src),))


@tensor_method("reshape")
def _reshape_method(self: Tensor, *shape: Any, **kwargs: Any) -> Tensor:
    """Same data, new shape (``x.reshape(2, 3)``, ``x.reshape((2, 3))``, ``x.reshape(shape=...)``)."""
    return reshape(self, _sizes(star_or_keyword(shape, kwargs, "shape", "reshape")))


@tensor_method()
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return reshape(self, other.shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible). 0-d becomes 1-d."""
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._data.shape
    merged = 1
    for n in shape[s:e + 1]:
        merged *= n
    return reshape(input, shape[:s] + (merged,) + shape[e + 1:])


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one may be -1). Always a view."""
    shape = input._data.shape
    d = wrap_dim(dim, input._data.ndim)
    sizes = _sizes((sizes,))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if -1 not in sizes:
        n = 1
        for s in sizes:
            n *= s
        if n != shape[d]:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                               f"size of dim {dim} ({shape[d]}) in the input tensor")
    return view(input, shape[:d] + _infer_size(sizes, shape[d]) + shape[d + 1:])


def ravel(input: Tensor) -> Tensor:
    """A 1-D tensor of the elements in row-major order (a view when the tensor is contiguous)."""
    return reshape(input, (-1,))


tensor_method("flatten")(flatten)
tensor_method("unflatten")(unflatten)
tensor_method("ravel")(ravel)


# ============================================================================ memory layout
def _looks_channels_last(shape: Sequence[int], stride: Sequence[int]) -> bool:
    """torch's ``is_channels_last_strides_2d``: strides ordered C < W < H < N."""
    if len(shape) != 4 or stride[1] == 0:
        return False
    lowest = 0
    for d in (1, 3, 2, 0):
        if shape[d] == 0 or stride[d] < lowest or (d == 0 and lowest == stride[1]):
            return False
        lowest = stride[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def _byte_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    return tuple(s * itemsize for s in contiguous_strides(shape))


def _empty_preserving(t: Tensor) -> Any:
    """New memory laid out like ``t`` (torch's ``preserve_format``): a dense tensor keeps its exact
    strides (a transposed tensor stays transposed); others get dense strides in the same order
    (``_operands.preserve_strides``)."""
    arr = t._data
    return restride(xp_for(t._device).empty(arr.size, arr.dtype), arr.shape, preserve_strides(t))


def clone(input: Tensor, *, memory_format: Any = preserve_format) -> Tensor:
    """A copy with its own memory; the gradient passes straight through.

    ``preserve_format`` (default) keeps the strides of a dense tensor (a transposed tensor stays
    transposed); other tensors become contiguous (or channels_last when they look like it).
    """
    arr = input._data
    if memory_format is channels_last:
        out = channels_last_copy(arr)
    elif memory_format is contiguous_format or memory_format is None:
        out = arr.copy()
    elif memory_format is preserve_format:
        if arr.flags.c_contiguous and arr.strides == _byte_strides(arr.shape, arr.itemsize):
            out = arr.copy()
        else:
            out = _empty_preserving(input)
            out[...] = arr
    else:
        raise RuntimeError(f"unsupported memory format {memory_format}")
    return _copy(input, out, "CloneBackward0", lambda g: (g,))


tensor_method("clone")(clone)


def to_memory_format(t: Tensor, memory_format: Any) -> Tensor:
    """``t.to(memory_format=...)``: ``t`` if its strides already suggest that format, else a copy.

    Unlike ``contiguous``, an ambiguous tensor (e.g. C == 1) is re-laid out with the format's
    canonical strides, as torch does.
    """
    arr = t._data
    suggested = channels_last if _looks_channels_last(arr.shape, t.stride()) else contiguous_format
    if memory_format is suggested and t.is_contiguous(memory_format):
        return t
    return clone(t, memory_format=memory_format)


@tensor_method()
def contiguous(self: Tensor, memory_format: Any = contiguous_format) -> Tensor:
    """``self`` when already laid out as ``memory_format``, else a copy that is."""
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if self.is_contiguous(memory_format):
        return self
    return clone(self, memory_format=memory_format)


# ============================================================================ broadcasting
def _expand_geometry(t: Tensor, sizes: tuple) -> tuple[tuple, tuple]:
    """Shape and strides of ``t.expand(sizes)``: broadcast dims get stride 0 (torch's algorithm)."""
    shape, stride = t._data.shape, t.stride()
    nd, n = len(shape), len(sizes)
    if n < nd:
        raise RuntimeError(f"expand({t.type()}{{{list(shape)}}}, size={list(sizes)}): the number "
                           f"of sizes provided ({n}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({nd})")
    out_shape, out_stride = [0] * n, [0] * n
    for i in range(n - 1, -1, -1):
        d = i - (n - nd)
        size = shape[d] if d >= 0 else 1
        st = stride[d] if d >= 0 else (out_shape[i + 1] * out_stride[i + 1] if i < n - 1 else 0)
        target = sizes[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            target = size
        if size != target:
            if size != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the "
                                   f"existing size ({size}) at non-singleton dimension {i}.  "
                                   f"Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}")
            if target < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {target}: "
                                   f"{list(sizes)}")
            size, st = target, 0
        out_shape[i], out_stride[i] = size, st
    return tuple(out_shape), tuple(out_stride)


@tensor_method()
def expand(self: Tensor, *sizes: Any, **kwargs: Any) -> Tensor:
    """A view that repeats size-1 dimensions without copying: their stride becomes 0.

    -1 keeps a dimension's size; new leading dimensions may be added.
    """
    sizes = _sizes(star_or_keyword(sizes, kwargs, "size", "expand"))
    shape, stride = _expand_geometry(self, sizes)
    arr = self._data
    out = arr if shape == arr.shape and stride == self.stride() else restride(arr, shape, stride)
    src = arr.shape
    return _view(self, out, "ExpandBackward0", lambda g: (sum_to(g, src),))


@tensor_method()
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    return expand(self, other.shape)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """``input.expand(size)``."""
    return expand(input, _sizes((size,)))


tensor_method("broadcast_to")(broadcast_to)


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape all ``shapes`` broadcast to (align right, 1 stretches): the piece
    :func:`broadcast_shape` folded over the shapes, with torch's messages."""
    result: tuple = ()
    for idx, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, _int) else tuple(shape)
        for s in shape:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(shape)}")
        out = pieces.broadcast_shape(result, shape) if result else shape
        if out is None:
            full = [1] * (len(shape) - len(result)) + list(result)
            k = next(k for k in range(1, len(shape) + 1)
                     if shape[-k] not in (1, full[-k]) and full[-k] != 1)
            for j in range(1, k):  # torch reports the dims it has merged so far
                full[-j] = shape[-j] if full[-j] == 1 else full[-j]
            raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[-k]} at "
                               f"{-k}! Mismatching argument at index {idx} had {shape}; but "
                               f"expected shape should be broadcastable to {full}")
        result = tuple(out)
    return Size(result)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Expanded views of ``tensors`` that all have the broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape: tuple = ()
    for t in tensors:
        shape = broadcast_pair(shape, t._data.shape)
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


# ============================================================================ repeating (copies)
@tensor_method()
def repeat(self: Tensor, *sizes: Any, **kwargs: Any) -> Tensor:
    """Tile the tensor ``sizes[i]`` times along each dim (new memory, unlike ``expand``)."""
    reps = _sizes(star_or_keyword(sizes, kwargs, "repeats", "repeat"))
    arr = self._data
    if len(reps) < arr.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    padded = (1,) * (len(reps) - arr.ndim) + arr.shape
    out_shape = tuple(r * s for r, s in zip(reps, padded, strict=False))
    if any(s < 0 for s in out_shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(out_shape)}: {list(out_shape)}")
    # Interleave (r0, s0, r1, s1, ...): broadcasting the input over the r axes is the tiling.
    pairs = tuple(x for rs in zip(reps, padded, strict=False) for x in rs)
    ones = tuple(x for s in padded for x in (1, s))
    out = xp_for(self._device).empty(out_shape, arr.dtype)
    out.reshape(pairs)[...] = arr.reshape(ones)
    src = arr.shape

    def backward(g: Tensor) -> tuple:
        return (g.reshape(pairs).sum(tuple(range(0, len(pairs), 2))).reshape(src),)

    return _copy(self, out, "RepeatBackward0", backward)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``repeat``, but ``dims`` may be shorter than ``input.ndim`` (ones are prepended)."""
    dims = _sizes((dims,))
    return repeat(input, (1,) * (input._data.ndim - len(dims)) + dims)


tensor_method("tile")(tile)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int, or one count per element along ``dim``).

    Without ``dim`` the input is flattened first. ``torch.repeat_interleave(counts)`` alone
    repeats the indices ``0..len(counts)-1``.
    """
    if repeats is None:  # repeat_interleave(repeats_tensor)
        counts = input
        idx = wrap(xp_for(counts._device).arange(counts._data.shape[0]), counts._device)
        return repeat_interleave(idx, counts, 0)
    if dim is None:
        flat = flatten(input)
        res = repeat_interleave(flat, repeats, 0)
        return res
    arr = input._data
    d = wrap_dim(dim, arr.ndim)
    n = arr.shape[d] if arr.ndim else 1
    if isinstance(repeats, Tensor):
        if repeats._data.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        counts = repeats.tolist()
        if repeats._data.ndim == 0 or len(counts) == 1:
            repeats = _int(counts if repeats._data.ndim == 0 else counts[0])
    else:
        counts = repeats
    if isinstance(repeats, _int):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        out = arr.repeat(repeats, axis=d) if arr.ndim else arr.reshape(1).repeat(repeats)
        r = repeats

        def backward(g: Tensor) -> tuple:
            return (g.unflatten(d, (n, r)).sum(d + 1).reshape(arr.shape),)
    else:
        counts = [_int(c) for c in counts]
        if len(counts) != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {len(counts)} and input.size({d}) = {n}")
        if any(c < 0 for c in counts):
            raise RuntimeError("repeats can not be negative")
        out = arr.repeat(counts, axis=d)

        def backward(g: Tensor) -> tuple:  # a segment sum: one sum per original element
            return (cat([p.sum(d, keepdim=True) for p in split(g, counts, d)], d),)
    return _copy(input, out, "RepeatInterleaveBackward0", backward)


tensor_method("repeat_interleave")(repeat_interleave)


# ============================================================================ reordering dims
def _dims_arg(dims: tuple) -> tuple:
    return tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    """A view with the dims reordered: output dim i is input dim ``dims[i]``."""
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = "
                           f"{nd} is not equal to len(dims) = {len(dims)}")
    order = tuple(wrap_dim(operator.index(d), nd) for d in dims)
    if len(set(order)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = tuple(sorted(range(nd), key=order.__getitem__))
    return _view(input, input._data.transpose(order), "PermuteBackward0",
                 lambda g: (g.permute(inverse),))


@tensor_method("permute")
def _permute_method(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """``x.permute(1, 0)``, ``x.permute((1, 0))`` or ``x.permute(dims=(1, 0))``."""
    return permute(self, _dims_arg(star_or_keyword(dims, kwargs, "dims", "permute")))


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view with ``dim0`` and ``dim1`` swapped (their strides swap too)."""
    nd = input._data.ndim
    a, b = wrap_dim(dim0, nd), wrap_dim(dim1, nd)
    arr = input._data.swapaxes(a, b) if nd else input._data[...]
    return _view(input, arr, "TransposeBackward0", lambda g: (g.transpose(a, b),))


swapaxes = swapdims = transpose
tensor_method("transpose", also=("swapaxes", "swapdims"))(transpose)


def t(input: Tensor) -> Tensor:
    """Transpose a matrix; 0-d and 1-d tensors are returned as they are (as views)."""
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return _view(input, input._data.T, "TBackward0", lambda g: (g.t(),))


tensor_method("t")(t)


def _mT(self: Tensor) -> Tensor:
    if self._data.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self._data.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _T(self: Tensor) -> Tensor:
    """``x.T``: the dims reversed (a permute, as in torch); deprecated unless ``x`` is 2-D."""
    nd = self._data.ndim
    if nd != 2:  # once per process, as torch warns
        warn_once("The use of `x.T` on tensors of dimension other than 2 to reverse their shape "
                  "is deprecated and it will throw an error in a future release. Consider `x.mT` "
                  "to transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, "
                  "-1))` to reverse the dimensions of a tensor." if nd else "Tensor.T is "
                  "deprecated on 0-D tensors. This function is the identity in these cases.")
    return permute(self, tuple(range(nd - 1, -1, -1)))


def adjoint(input: Tensor) -> Tensor:
    """Conjugate transpose of the last two dims (``mH``)."""
    res = _mT(input)
    return res.conj() if input.is_complex() else res


Tensor.T = property(_T, doc="The tensor with its dims reversed (a matrix's transpose).")
Tensor.mT = property(_mT, doc="Transpose of the last two dims (batches of matrices).")
Tensor.H = property(lambda self: _T(self).conj() if self.is_complex() else _T(self),
                    doc="Conjugate transpose of a matrix.")
Tensor.mH = property(adjoint, doc="Conjugate transpose of the last two dims.")
tensor_method("adjoint")(adjoint)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Move dims ``source`` to positions ``destination``; the others keep their order."""
    nd = input._data.ndim
    src = (source,) if isinstance(source, _int) else tuple(source)
    dst = (destination,) if isinstance(destination, _int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    ws = [wrap_dim(d, nd) for d in src]
    wd = [wrap_dim(d, nd) for d in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    order = [-1] * nd
    for s, d in zip(ws, wd, strict=False):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in ws)
    order = [o if o != -1 else next(rest) for o in order]
    return permute(input, order)


moveaxis = movedim
tensor_method("movedim", also=("moveaxis",))(movedim)


# ============================================================================ adding/removing 1s
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove size-1 dims (all of them, or those of ``dim`` — an int or a tuple — that are 1)."""
    arr = input._data
    nd = arr.ndim
    if dim is None:
        axes, name = tuple(i for i, s in enumerate(arr.shape) if s == 1), "SqueezeBackward0"
    else:
        dims, name = ((dim,), "SqueezeBackward1") if isinstance(dim, _int) else \
            (tuple(dim), "SqueezeBackward2")
        wrapped = tuple(wrap_dim(d, nd) for d in dims)
        axes = tuple(d for d in wrapped if nd and arr.shape[d] == 1)
    out = arr.squeeze(axis=axes) if axes else arr[...]
    src = arr.shape
    return _view(input, out, name, lambda g: (g.reshape(src),))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (a view; its stride is torch's: size*stride of the next)."""
    arr = input._data
    d = wrap_dim(dim, arr.ndim + 1)
    stride = input.stride()
    new_st = stride[d] * arr.shape[d] if d < arr.ndim else 1
    shape = arr.shape[:d] + (1,) + arr.shape[d:]
    strides = stride[:d] + (new_st,) + stride[d:]
    return _view(input, _as_shape(input, shape, strides), "UnsqueezeBackward0",
                 lambda g: (g.squeeze(d),))


tensor_method("squeeze")(squeeze)
tensor_method("unsqueeze")(unsqueeze)


def atleast_1d(*tensors: Any) -> Any:
    """Views with at least 1 dim (0-d → shape (1,)); one tensor in, one out."""
    return _atleast(tensors, lambda x: reshape(x, (1,)) if x.ndim == 0 else x)


def atleast_2d(*tensors: Any) -> Any:
    """At least 2 dims: a scalar becomes (1, 1), a vector (n,) becomes (1, n)."""
    return _atleast(tensors, lambda x: unsqueeze(atleast_1d(x), 0) if x.ndim < 2 else x)


def atleast_3d(*tensors: Any) -> Any:
    """At least 3 dims: (n,) → (1, n, 1); (m, n) → (m, n, 1)."""
    def up(x: Tensor) -> Tensor:
        if x.ndim == 0:
            return reshape(x, (1, 1, 1))
        if x.ndim == 1:
            return unsqueeze(unsqueeze(x, 0), -1)
        return unsqueeze(x, -1) if x.ndim == 2 else x
    return _atleast(tensors, up)


def _atleast(tensors: tuple, fn: Callable) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return fn(tensors[0])
    seq = tensors[0] if len(tensors) == 1 else tensors
    return tuple(fn(x) for x in seq)


# ============================================================================ slicing views
def _slice_key(d: int, index: Any) -> tuple:
    """``arr[key]`` indexes dim ``d`` only (Ellipsis keeps a 0-d result an array view)."""
    return (slice(None),) * d + (index, Ellipsis)


def _narrowed(input: Tensor, d: int, start: int, length: int) -> Any:
    """The array of ``length`` elements of dim ``d`` from ``start``: a view of ``input``'s."""
    arr = input._data
    if length:
        return arr[_slice_key(d, slice(start, start + length))]
    # NumPy does not move the pointer of an empty slice; torch's storage_offset moves
    src, stride = arr.shape, input.stride()
    return restride(arr, src[:d] + (0,) + src[d + 1:], stride, start * stride[d])


def _narrow(input: Tensor, d: int, start: int, length: int, name: str) -> Tensor:
    src = input._data.shape
    return _view(input, _narrowed(input, d, start, length), name, lambda g: (_grad_into_zeros(
        g, src, lambda z: z.narrow(d, start, length), "SliceBackwardBackward0"),))


def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """A view of ``length`` elements of dim ``dim`` from ``start`` (which may be negative)."""
    arr = input._data
    if arr.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim(dim, arr.ndim)
    n = arr.shape[d]
    start = operator.index(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _narrow(input, d, start, length, "SliceBackward0")


def narrow_copy(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """``narrow`` followed by a contiguous copy."""
    return clone(narrow(input, dim, start, length), memory_format=contiguous_format)


tensor_method("narrow")(narrow)
tensor_method("narrow_copy")(narrow_copy)


def select(input: Tensor, dim: int, index: Any) -> Tensor:
    """The view ``input[..., index, ...]`` at ``dim``: that dim disappears."""
    arr = input._data
    if arr.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, arr.ndim)
    n = arr.shape[d]
    index = operator.index(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(arr.shape)} at dimension {dim}")
    if index < 0:
        index += n
    src = arr.shape
    return _view(input, arr[_slice_key(d, index)], "SelectBackward0", lambda g: (
        _grad_into_zeros(g, src, lambda z: z.select(d, index), "SelectBackwardBackward0"),))


tensor_method("select")(select)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """All the slices along ``dim``, as a tuple of views."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, nd)
    arr = input._data
    return _views(input, [arr[_slice_key(d, i)] for i in range(arr.shape[d])], d,
                  "UnbindBackward0", stack)


tensor_method("unbind")(unbind)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces along ``dim``: of size ``split_size`` (the last may be
    smaller), or of the listed sizes, which must add up to the dim's size."""
    arr = tensor._data
    d = wrap_dim(dim, arr.ndim)
    n = arr.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [operator.index(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    else:
        size = operator.index(split_size_or_sections)
        if size < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={size}")
        if size == 0:
            if n != 0:
                raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                                   f"dimension size of {n}")
            sizes = [0]
        else:
            sizes = [min(size, n - s) for s in range(0, n, size)] or [0]
        return _pieces(tensor, d, sizes)
    return _pieces(tensor, d, sizes, "SplitWithSizesBackward0")


def _pieces(tensor: Tensor, d: int, sizes: Sequence[int],
            name: str = "SplitBackward0") -> tuple[Tensor, ...]:
    """Consecutive pieces of ``sizes`` along ``d``: views, outputs of one node."""
    arrays, start = [], 0
    for s in sizes:
        arrays.append(_narrowed(tensor, d, start, s))
        start += s
    return _views(tensor, arrays, d, name, cat)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of size ceil(n / chunks) (so there may be fewer pieces)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    size = -(-n // chunks)
    if size == 0:  # an empty dim: `chunks` empty pieces
        return _pieces(input, d, [0] * chunks)
    return split(input, size, d)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Like NumPy's array_split: ``sections`` near-equal pieces, or cut before each index."""
    d = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = ios.tolist()
    if isinstance(ios, _int):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        q, r = divmod(n, ios)
        bounds = [0] + list(itertools.accumulate([q + 1] * r + [q] * (ios - r)))
    else:
        bounds = [0] + [min(max(i + n if i < 0 else i, 0), n) for i in ios] + [n]
    out = []  # (torch: a slice each, not the outputs of one node as split's)
    for a, b in zip(bounds[:-1], bounds[1:], strict=False):
        out.append(_narrow(input, d, a, max(b - a, 0), "SliceBackward0"))
    return tuple(out)


@tensor_method("split")
def _split_method(self: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return split(self, split_size, dim)


tensor_method("chunk")(chunk)
tensor_method("tensor_split")(tensor_split)


def _diagonal_geometry(t: Tensor, offset: int, d1: int, d2: int) -> tuple[tuple, tuple, int]:
    shape, stride = t._data.shape, t.stride()
    n1, n2 = shape[d1], shape[d2]
    length = max(min(n1, n2 - offset), 0) if offset >= 0 else max(min(n1 + offset, n2), 0)
    shift = 0 if length == 0 else (offset * stride[d2] if offset >= 0 else -offset * stride[d1])
    keep = [i for i in range(len(shape)) if i not in (d1, d2)]
    return (tuple(shape[i] for i in keep) + (length,),
            tuple(stride[i] for i in keep) + (stride[d1] + stride[d2],), shift)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal of the (dim1, dim2) planes, appended as the last dim.

    Its stride is ``stride[dim1] + stride[dim2]``: one step down *and* one step right.
    """
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shape, stride, shift = _diagonal_geometry(input, offset, d1, d2)
    src = input._data.shape
    return _view(input, restride(input._data, shape, stride, shift), "DiagonalBackward0",
                 lambda g: (_grad_into_zeros(g, src, lambda z: z.diagonal(offset, d1, d2),
                                             "DiagonalBackwardBackward0"),))


tensor_method("diagonal")(diagonal)


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view with any size/stride/offset **into the storage** (not just into ``input``).

    Powerful and unchecked beyond the storage bounds: overlapping strides make several elements
    share memory. The gradient is summed into a zero buffer shaped like the storage, then read
    back with ``input``'s own geometry.
    """
    size, stride = _sizes((size,)), _sizes((stride,))
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    off = _storage_offset(input) if storage_offset is None else operator.index(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    res = make_view(input, strided_view(input._data, size, stride, off))
    if needs_grad(input):
        geometry = (input._data.shape, input.stride(), _storage_offset(input))
        n = max(extent(size, stride, off), extent(*geometry))

        def backward(g: Tensor) -> tuple:
            storage = _grad_into_zeros(g, (n,), lambda z: as_strided(z, size, stride, off),
                                       "AsStridedBackwardBackward0", overlap=True)
            return (as_strided(storage, *geometry),)

        record("AsStridedBackward0", res, (input,), backward)
    return res


tensor_method("as_strided")(as_strided)


@piece("01.4")
def window_view(shape: tuple, stride: tuple, dim: int, size: int, step: int) -> tuple:
    """The (shape, stride) of ``unfold(dim, size, step)`` on a tensor (``shape``, ``stride``):
    every window of ``size`` elements along ``dim``, ``step`` apart (a short tail is dropped),
    the windows along ``dim`` and the elements of a window along a new last dim. No copy:
    windows that overlap share memory."""
    count = (shape[dim] - size) // step + 1
    new_shape = shape[:dim] + (count,) + shape[dim + 1:] + (size,)
    new_stride = stride[:dim] + (step * stride[dim],) + stride[dim + 1:] + (stride[dim],)
    return new_shape, new_stride


@tensor_method()
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of all windows of ``size`` along ``dimension``, ``step`` apart, as a new last dim
    (the piece :func:`window_view`). Windows overlap when ``step < size``: they share memory."""
    arr = self._data
    nd = arr.ndim
    d = wrap_dim(dimension, nd)
    n = arr.shape[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if nd == 0:
        shape, stride = (size,), (1,)
    else:
        shape, stride = pieces.window_view(tuple(arr.shape), self.stride(), d, size, step)
    src = arr.shape
    return _view(self, restride(arr, tuple(shape), tuple(stride)), "UnfoldBackward0", lambda g: (
        _grad_into_zeros(g, src, lambda z: z.unfold(d, size, step), "UnfoldBackwardBackward0",
                         overlap=True),))


# ============================================================================ joining (copies)
def _result_dtype(tensors: Sequence[Tensor]) -> D.dtype:
    dt = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dt:
            dt = D.promote_types(dt, t.dtype)
    return dt


def _check_tensor_list(tensors: Any, fn: str) -> list:
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(x).__name__}")
    return list(tensors)


def cat(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Join tensors along an existing dim; the other sizes must match. Dtypes are promoted.

    (Legacy rule kept by torch: 1-D empty tensors are skipped.)
    """
    tensors = _check_tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, x in enumerate(tensors):
        if x._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    dev = check_same_device(*tensors)
    dt = _result_dtype(tensors)
    parts = [(i, x) for i, x in enumerate(tensors) if x._data.shape != (0,)]
    if not parts:
        res = wrap(xp_for(dev).empty((0,), dt.np), dev)
        return _to_out(res, out)
    ref = parts[0][1]._data.shape
    d = wrap_dim(dim, len(ref))
    for i, x in parts:
        shape = x._data.shape
        if len(shape) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} "
                               f"and {len(shape)}")
        for k, (a, b) in enumerate(zip(ref, shape, strict=False)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {a} but got size {b} for tensor number {i} "
                                   "in the list.")
    xp = xp_for(dev)
    shape = list(ref)
    shape[d] = builtins.sum(x._data.shape[d] for _, x in parts)
    arr = xp.empty(tuple(shape), dt.np)  # row-major result, whatever the inputs' layouts
    xp.concatenate([x._data for _, x in parts], axis=d, out=arr)
    res = wrap(arr, dev)
    if needs_grad(*tensors):
        sizes = [x._data.shape[d] for _, x in parts]
        dtypes = [x.dtype for _, x in parts]

        def backward(g: Tensor) -> tuple:
            grads: list = [_zeros_like(x) if x._requires_grad else None for x in tensors]
            start = 0
            for (i, x), n, xdt in zip(parts, sizes, dtypes, strict=False):
                if x._requires_grad:
                    piece = narrow(g, d, start, n)
                    grads[i] = piece if xdt is dt else piece.to(xdt)
                start += n
            return tuple(grads)

        record("CatBackward0", res, tensors, backward)
    return _to_out(res, out)


def concatenate(tensors: Sequence[Tensor], axis: int = 0, out: Tensor | None = None) -> Tensor:
    """``cat`` with NumPy's argument name."""
    return cat(tensors, axis, out=out)


concat = cat


def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Join equally-shaped tensors along a **new** dim ``dim``."""
    tensors = _check_tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]._data.shape
    for i, x in enumerate(tensors):
        if x._data.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref)} "
                               f"at entry 0 and {list(x._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(ref) + 1)
    dev = check_same_device(*tensors)
    dt = _result_dtype(tensors)
    xp = xp_for(dev)
    arr = xp.empty(ref[:d] + (len(tensors),) + ref[d:], dt.np)
    xp.stack([x._data for x in tensors], axis=d, out=arr)
    res = wrap(arr, dev)
    if needs_grad(*tensors):
        def backward(g: Tensor) -> tuple:
            return tuple((select(g, d, i) if x.dtype is dt else select(g, d, i).to(x.dtype))
                         if x._requires_grad else None for i, x in enumerate(tensors))

        record("StackBackward0", res, tensors, backward)
    return _to_out(res, out)


def hstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Join horizontally: along dim 0 for 1-D tensors, dim 1 otherwise."""
    ts = atleast_1d(*_check_tensor_list(tensors, "hstack"))
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Join vertically (dim 0) after making every tensor at least 2-D."""
    return cat(atleast_2d(*_check_tensor_list(tensors, "vstack")), 0, out=out)


row_stack = vstack


def dstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Join depth-wise (dim 2) after making every tensor at least 3-D."""
    return cat(atleast_3d(*_check_tensor_list(tensors, "dstack")), 2, out=out)


def column_stack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Vectors become columns (n, 1), then ``hstack``."""
    ts = [reshape(x, (-1, 1)) if x.ndim <= 1 else x
          for x in _check_tensor_list(tensors, "column_stack")]
    return cat(ts, 1, out=out)


# ============================================================================ reordering (copies)
def _flip_dims(dims: Any, nd: int) -> tuple[int, ...]:
    dims = (dims,) if isinstance(dims, _int) else tuple(dims)
    out = tuple(wrap_dim(d, nd) for d in dims)
    for d in out:
        if out.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return out


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy: torch has no negative strides)."""
    if not isinstance(dims, (tuple, list)):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not "
                        f"{type(dims).__name__}")
    arr = input._data
    axes = _flip_dims(dims, arr.ndim)
    key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(arr.ndim))
    out = _empty_preserving(input)  # like torch, the result keeps the input's memory layout
    out[...] = arr[key]
    return _copy(input, out, "FlipBackward0", lambda g: (flip(g, axes),))


@tensor_method("flip")
def _flip_method(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """``x.flip(0)``, ``x.flip((0, 1))`` or ``x.flip(dims=(0,))``."""
    return flip(self, tuple(_dims_arg(star_or_keyword(dims, kwargs, "dims", "flip"))))


def fliplr(input: Tensor) -> Tensor:
    """Flip left/right (dim 1)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:
    """Flip up/down (dim 0)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


tensor_method("fliplr")(fliplr)
tensor_method("flipud")(flipud)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically along ``dims`` (the tensor is flattened when ``dims`` is None)."""
    shifts_t = (shifts,) if isinstance(shifts, _int) else tuple(shifts)
    dims_t = () if dims is None else (dims,) if isinstance(dims, _int) else tuple(dims)
    xp = xp_for(input._device)
    arr = input._data if input._data.flags.c_contiguous else xp.ascontiguousarray(input._data)
    if not dims_t:
        if len(shifts_t) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts_t)}, "
                               f"dims:{len(dims_t)}")
        out = xp.roll(arr, shifts_t[0])
    else:
        if len(shifts_t) != len(dims_t):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts_t)}, "
                               f"dims:{len(dims_t)}")
        axes = tuple(wrap_dim(d, arr.ndim) for d in dims_t)
        out = xp.roll(arr, shifts_t, axis=axes)
    back = tuple(-s for s in shifts_t)
    return _copy(input, out, "RollBackward0",
                 lambda g: (roll(g, back if dims is not None else back[0], dims),))


tensor_method("roll")(roll)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90° ``k`` times in the plane ``dims`` (from the first dim towards the second)."""
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    if dims[0] == dims[1] or (dims[0] - dims[1]) % nd == 0:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    for name, d in (("dim0", dims[0]), ("dim1", dims[1])):
        if not -nd <= d < nd:
            raise RuntimeError(f"Rotation {name} out of range, {name} = {d}")
    a, b = dims[0] % nd, dims[1] % nd
    k %= 4
    if k == 1:
        return transpose(flip(input, (b,)), a, b)
    if k == 2:
        return flip(input, (a, b))
    if k == 3:
        return transpose(flip(input, (a,)), a, b)
    return clone(input, memory_format=contiguous_format)


tensor_method("rot90")(rot90)


# ============================================================================ triangles, diagonals
def _c_order(t: Tensor) -> Any:
    """``t``'s array in row-major order (so NumPy's layout-following results are contiguous)."""
    arr = t._data
    return arr if arr.flags.c_contiguous else xp_for(t._device).ascontiguousarray(arr)


def _check_matrix(input: Tensor, fn: str) -> None:
    if input._data.ndim < 2:
        raise RuntimeError(f"{fn}: input tensor must have at least 2 dimensions")


def tril(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Lower triangle of the last two dims (elements with col - row <= diagonal); rest zero."""
    _check_matrix(input, "tril")
    res = _copy(input, xp_for(input._device).tril(_c_order(input), diagonal), "TrilBackward0",
                lambda g: (tril(g, diagonal),))
    return _to_out(res, out)


def triu(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """Upper triangle of the last two dims (elements with col - row >= diagonal); rest zero."""
    _check_matrix(input, "triu")
    res = _copy(input, xp_for(input._device).triu(_c_order(input), diagonal), "TriuBackward0",
                lambda g: (triu(g, diagonal),))
    return _to_out(res, out)


tensor_method("tril")(tril)
tensor_method("triu")(triu)


@tensor_method()
def tril_(self: Tensor, diagonal: int = 0) -> Tensor:
    _check_matrix(self, "tril")
    return inplace(self, xp_for(self._device).tril(self._data, diagonal), "TrilBackward0",
                   (self,), lambda g: (tril(g, diagonal),))


@tensor_method()
def triu_(self: Tensor, diagonal: int = 0) -> Tensor:
    _check_matrix(self, "triu")
    return inplace(self, xp_for(self._device).triu(self._data, diagonal), "TriuBackward0",
                   (self,), lambda g: (triu(g, diagonal),))


def diag(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """1-D → a square matrix with ``input`` on a diagonal; 2-D → a copy of that diagonal."""
    nd = input._data.ndim
    if nd == 1:
        res = diag_embed(input, diagonal, 0, 1)
    elif nd == 2:
        shape, stride, shift = _diagonal_geometry(input, diagonal, 0, 1)
        values = restride(input._data, shape, stride, shift).copy()
        src = input._data.shape
        res = _copy(input, values, "DiagonalBackward0_copy", lambda g: (_grad_into_zeros(
            g, src, lambda z: z.diagonal(diagonal), "DiagonalBackwardBackward0"),))
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    return _to_out(res, out)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last dim of ``input`` on their (offset) diagonal in dims (dim1, dim2)."""
    arr = input._data
    nd = arr.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (arr.shape[-1] if arr.ndim else 1) + abs(offset)
    shape = list(arr.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    res = wrap(xp_for(input._device).zeros(tuple(shape), arr.dtype), input._device)
    diagonal(res, offset, d1, d2)._data[...] = arr
    if needs_grad(input):
        record("DiagEmbedBackward0", res, (input,),
               lambda g: (diagonal(g, offset, d1, d2),))
    return res


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with the flattened input on its ``offset`` diagonal."""
    return diag_embed(flatten(input), offset, 0, 1)


tensor_method("diag")(diag)
tensor_method("diag_embed")(diag_embed)
tensor_method("diagflat")(diagflat)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (expanded views: stride 0 along the other dims).

    ``indexing='ij'`` (matrix, the default) or ``'xy'`` (Cartesian: first two dims swapped).
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for x in tensors:
        if x._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {x}")
        if x.dtype is not tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    check_same_device(*tensors)
    swap = indexing == "xy" and len(tensors) >= 2
    ts = list(tensors)
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(x.numel() for x in ts)
    grids = []
    for i, x in enumerate(ts):
        view_shape = [1] * len(ts)
        view_shape[i] = -1
        grids.append(expand(view(x, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# ============================================================================ in-place memory ops
@tensor_method()
def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give the tensor a new shape *in place*, keeping its storage and storage offset.

    The elements are the first ones of the storage in row-major order, not a reshape of the old
    values. When the storage is too small it grows (new memory, the old bytes copied over) and,
    as in torch, the tensors that share it (its base and its views) move to the grown storage.
    (NumPy arrays cannot grow in place: mytorch finds those tensors through the version counter
    they share, which knows the views made while grad mode was on.) A storage borrowed from
    NumPy (``from_numpy``) cannot grow: RuntimeError, as in torch.
    """
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = size_args(sizes)
    if memory_format is channels_last:
        if len(shape) != 4:
            raise RuntimeError("required rank 4 tensor to use channels_last format")
        n, c, h, w = shape
        stride = (h * w * c, 1, w * c, c)
    else:
        stride = contiguous_strides(shape)
    old = storage_root(self._data)
    self._data = resized(self._data, shape, stride)
    new = storage_root(self._data)
    if new is not old:  # the storage grew: everything on it follows
        views = self._vc.views or ()
        for t in (self._base, *(r() for r in views)):
            if t is not None and t is not self:
                t._data = moved(t._data, old, new)
    return self


@tensor_method()
def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    return resize_(self, the_template.shape, memory_format=memory_format)


@tensor_method()
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src``'s values into ``self``'s memory: broadcast, cast to ``self.dtype``, move
    across devices. Views of ``self`` see the new values."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not "
                        f"{type(src).__name__}")
    check_no_overlap(self)  # an expanded tensor: torch refuses to write into it
    shape = self._data.shape
    if broadcast_pair(shape, src._data.shape) != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(broadcast_pair(shape, src._data.shape))}")
    arr = src.detach().to(self._device, self.dtype)._data
    if arr.shape != shape:
        arr = xp_for(self._device).broadcast_to(arr, shape)
    src_shape, src_dt, src_dev = src._data.shape, src.dtype, src._device

    def backward(g: Tensor) -> tuple:
        return _zeros_like(g), sum_to(g, src_shape).to(src_dev, src_dt)

    return inplace(self, arr, "torch::autograd::CopyBackwards", (self, src), backward)


def _zeros_like(g: Tensor) -> Tensor:
    return wrap(xp_for(g._device).zeros(g._data.shape, g._data.dtype), g._device)


def fill_(input: Tensor, value: Any) -> Tensor:
    """Set every element to ``value`` (a number or a 0-d tensor, cast to the tensor's dtype)."""
    inputs: tuple = (input,)
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value._data.ndim} dimensions.")
        inputs = (input, value)
        v = scalar_array(value.item(), input.dtype)  # a tensor value is cast (and may wrap)
    else:
        v = checked_scalar(value, input.dtype)  # a number must fit: fill_(300) on uint8 raises
    return inplace(input, _full_array(input, v), "FillBackward0", inputs,
                   lambda g: (_zeros_like(g), g.sum()) if len(inputs) == 2 else (_zeros_like(g),))


def zero_(input: Tensor) -> Tensor:
    """Set every element to 0."""
    return inplace(input, _full_array(input, input._data.dtype.type(0)), "ZeroBackward0",
                   (input,), lambda g: (_zeros_like(g),))


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Set the main diagonal (``input[i, i, ...]``) to ``fill_value``; a tall matrix with
    ``wrap=True`` starts the diagonal again every ``width + 1`` rows. Written as torch writes it:
    ``fill_`` on ``as_strided`` views of ``input``, so autograd sees a ``CopySlices``."""
    shape, strides = tuple(input.shape), input.stride()
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and any(n != shape[0] for n in shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()  # a Scalar argument: the value, never its graph
    height, width, offset = shape[0], shape[1], input.storage_offset()
    size, step = min(height, width), sum(strides)
    input.as_strided((size,), (step,), offset).fill_(fill_value)
    if wrap and len(shape) == 2 and height > width + 1:
        wrap_size = (input.numel() + width) // (width + 1) - size
        input.as_strided((wrap_size,), (step,), offset + strides[0] * (width + 1)).fill_(fill_value)
    return input


def _full_array(t: Tensor, v: Any) -> Any:
    """``v`` seen as an array of ``t``'s shape on ``t``'s device (a stride-0 view: no copy)."""
    xp = xp_for(t._device)
    return xp.broadcast_to(xp.asarray(v, dtype=t._data.dtype), t._data.shape)


tensor_method("fill_")(fill_)
tensor_method("zero_")(zero_)
tensor_method("fill_diagonal_")(fill_diagonal_)


# ============================================================================ in-place view ops
def _inplace_view(fn: Callable, node: Callable[..., str], name: str) -> Callable:
    """``Tensor.t_``-style methods: ``self`` itself takes the geometry (shape, strides) of the view
    ``fn(self, ...)`` would return, and that view's autograd history, as in torch.

    Only the metadata changes: no element moves, and other views of the same memory are
    untouched. ``node(*args)`` names the recorded backward node (torch's in-place variants).
    """
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if needs_grad(self):  # torch's refusals: a view of split/a leaf, made in no_grad, a leaf
            check_inplace(self)
            if self.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
        view = fn(self, *args, **kwargs)
        self._data = view._data
        self._bump()
        made = view.grad_fn
        if made is not None:  # the view's edges and backward, in a node of the in-place op's name
            self.grad_fn = Node(node(*args, **kwargs), made.next_functions, made._backward)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place version of :meth:`Tensor.{name[:-1]}` (changes shape and strides)."
    return method


def _squeeze_node(dim: Any = None) -> str:
    return "SqueezeBackward3" if dim is None else (
        "SqueezeBackward4" if isinstance(dim, _int) else "SqueezeBackward5")


for _name, _fn, _node in (
        ("t_", t, lambda: "TBackward1"),
        ("transpose_", transpose, lambda *a, **k: "TransposeBackward1"),
        ("swapaxes_", transpose, lambda *a, **k: "TransposeBackward1"),
        ("swapdims_", transpose, lambda *a, **k: "TransposeBackward1"),
        ("squeeze_", squeeze, _squeeze_node),
        ("unsqueeze_", unsqueeze, lambda *a, **k: "UnsqueezeBackward1"),
        ("as_strided_", as_strided, lambda *a, **k: "AsStridedBackward1")):
    tensor_method(_name)(_inplace_view(_fn, _node, _name))
