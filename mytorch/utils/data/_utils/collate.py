"""Turning a list of samples into one batch (``torch.utils.data._utils.collate``).

``default_collate`` is what a DataLoader with ``batch_size`` uses. Its rules, by the type of the
first sample:

* a tensor -> the samples stacked along a **new first dimension** (same shapes required);
* a NumPy array -> the same, as a tensor; NumPy scalars -> one tensor of them;
* a Python ``float`` -> a float64 tensor (not float32!); an ``int`` -> int64; a ``bool`` -> bool;
* ``str`` / ``bytes`` -> left alone: the batch is the plain list of strings;
* a dict -> a dict with the same keys, each value collated over the batch;
* a namedtuple -> the same namedtuple of collated fields;
* a list or tuple -> a **list** of collated positions (the batch is "transposed"): samples
  ``(image, label)`` become ``[images, labels]``.

The structure part is the piece :func:`collate_nested`; :func:`collate` adds the per-type leaf
functions of ``collate_fn_map`` (extendable: pass your own map to ``collate``), torch's checks and
messages, and keeps the container types (an ``OrderedDict`` stays one).

``default_convert`` is what a loader *without* batching uses: NumPy arrays become tensors,
everything else is left as it is, containers walked the same way.
"""
from __future__ import annotations

import collections.abc
import copy
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ...._creation import as_tensor, tensor
from ...._dtype import float64
from ...._ops.shape import stack
from ...._pieces import piece, pieces
from ...._tensor import Tensor

__all__ = ["collate", "collate_nested", "default_collate", "default_collate_fn_map",
           "default_convert", "collate_tensor_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn", "collate_str_fn"]

# NumPy dtype kinds that cannot become tensors: bytes (S, a), unicode (U) and Python objects (O)
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, "
    "dicts or lists; found {}")


# ---------------------------------------------------------------------------------- convert
def default_convert(data: Any) -> Any:
    """NumPy arrays and scalars (not strings) -> tensors, inside any dict/list/tuple; the rest as is."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_", "bytes_"):
        if kind.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):    # namedtuple
        return kind(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]               # a list, as torch (compatibility)
    if isinstance(data, Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


# ---------------------------------------------------------------------------------- collate
@piece("07.5")
def collate_nested(batch: list, collate: "Callable") -> "Any":
    """Collate one level of a batch of samples that are dicts, namedtuples, lists or tuples.

    All samples share one structure; the batch gets that structure once, and in each place what
    the samples hold there, in sample order, collated by ``collate`` (the level below):

    * dicts -> ``{key: collate([s[key] for s in batch])}``, keys in the first sample's order;
    * a namedtuple -> the same namedtuple type, one field at a time;
    * lists -> a list: position ``i`` collates every sample's element ``i`` ("transpose").
    """
    first = batch[0]
    if isinstance(first, dict):
        return {key: collate([sample[key] for sample in batch]) for key in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(collate(field) for field in zip(*batch)))
    return [collate(position) for position in zip(*batch)]


def collate(batch: list, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None) -> Any:
    """Collate ``batch`` (a list of samples of one structure), dispatching leaves by type.

    ``collate_fn_map`` maps a type (or a tuple of types) to a function ``f(batch, *,
    collate_fn_map)`` for batches whose first element has that type: the exact type is looked up
    first, then ``isinstance`` in the map's order. Dicts, namedtuples and sequences are walked.
    """
    elem = batch[0]
    kind = type(elem)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for leaf_type, fn in collate_fn_map.items():
            if isinstance(elem, leaf_type):
                return fn(batch, collate_fn_map=collate_fn_map)
    # What the level below receives, whatever the piece passes: torch gives a dict's values as a
    # list and a sequence's positions as tuples (``zip(*batch)``), so strings inside a tuple
    # sample come out as a tuple of strings.
    as_list = functools.partial(_collate_values, list, collate_fn_map)
    as_tuple = functools.partial(_collate_values, tuple, collate_fn_map)
    if isinstance(elem, Mapping):
        out = pieces.collate_nested([dict(sample) for sample in batch], as_list)
        return _rebuild_mapping(elem, out)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return pieces.collate_nested(batch, as_tuple)
    if isinstance(elem, Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        out = pieces.collate_nested([list(sample) for sample in batch], as_tuple)
        return out if isinstance(elem, tuple) else _rebuild_sequence(elem, out)
    raise TypeError(default_collate_err_msg_format.format(kind))


def _collate_values(kind: type, collate_fn_map: dict | None, values: Any) -> Any:
    """``collate`` of ``values`` (the samples' contents at one place) given as a ``kind``."""
    return collate(kind(values), collate_fn_map=collate_fn_map)


def _rebuild_mapping(like: Mapping, values: dict) -> Any:
    """``values`` in a mapping of ``like``'s type (an OrderedDict stays one), else a dict."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(values)
            return clone
        return type(like)(values)  # type: ignore[call-arg]
    except TypeError:   # a type that cannot be built from a dict
        return values


def _rebuild_sequence(like: Sequence, values: list) -> Any:
    """``values`` in a sequence of ``like``'s type (a list subclass stays one), else a list."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(like)(values)  # type: ignore[call-arg]
    except TypeError:
        return values


# ---------------------------------------------------------------------------------- leaves
def collate_tensor_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """Tensors -> one tensor with a new first dimension (``torch.stack``: shapes must match)."""
    return stack(batch, 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: dict | None = None) -> Any:
    """NumPy arrays -> tensors, then stacked; string/object arrays are refused."""
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """NumPy scalars (np.float32(1.5), np.int64(3), ...) -> one 1-d tensor of their dtype."""
    return as_tensor(batch)


def collate_float_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """Python floats -> float64: a Python float *is* a double."""
    return tensor(batch, dtype=float64)


def collate_int_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """Python ints -> int64 (bools -> bool)."""
    return tensor(batch)


def collate_str_fn(batch: list, *, collate_fn_map: dict | None = None) -> list:
    """Strings and bytes stay as they are: the batch is their list."""
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: list) -> Any:
    """Collate a list of samples into a batch by the rules at the top of this module::

        default_collate([(np.zeros(3), 0), (np.ones(3), 1)])
        # [tensor([[0., 0., 0.], [1., 1., 1.]], dtype=torch.float64), tensor([0, 1])]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
