"""Lookup tables: ``embedding`` (row ``i`` of a weight matrix for each index ``i``) and
``one_hot``.

``embedding`` is indexing, ``weight[input]``; its gradient *adds* ``grad`` into the rows that
were looked up (an index used twice receives two contributions). The ``padding_idx`` row gets
no gradient at all, so a padding token's vector stays what it was (zeros, by default).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ... import _dtype as D
from ..._device import xp_for
from ..._ops._operands import check_same_device, quietly
from ..._pieces import piece, pieces
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import STATE, no_grad
from ...autograd.graph import needs_grad, record

__all__ = ["embedding", "embedding_bag", "one_hot"]

_INDEX_KINDS = (np.dtype(np.int64), np.dtype(np.int32))


def _padding_index(padding_idx: int | None, num: int) -> int | None:
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num


@quietly
def _renorm_(weight: Tensor, idx: Any, max_norm: float, norm_type: float) -> None:
    """Shrink (in place, without autograd) every looked-up row whose norm exceeds ``max_norm``."""
    xp = xp_for(weight._device)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    sel = w[rows]
    norms = (xp.abs(sel) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    with no_grad():
        w[rows] = sel * scale[:, None]
        weight._bump()


def _rows_summed(flat: np.ndarray, rows: np.ndarray, num: int) -> np.ndarray:
    """``zeros((num, D)).index_add(0, flat, rows)`` on arrays: the rows sorted by index (stably)
    and summed per run with ``add.reduceat``, several times faster than ``add.at``."""
    out = np.zeros((num, rows.shape[1]), dtype=rows.dtype)
    if not flat.size:
        return out
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    out[ordered[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    return out


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]``: one row of ``weight`` (``(num_embeddings, embedding_dim)``) per index."""
    check_same_device(weight, input)  # torch indexes the weight: its device comes first
    idx = input._data
    if idx.dtype not in _INDEX_KINDS:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.type()} instead (while "
                           "checking arguments for embedding)")
    num = weight.shape[0]
    pad = _padding_index(padding_idx, num)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_(weight, idx, max_norm, norm_type)
    res = wrap(weight._data[idx], weight._device)
    if needs_grad(weight):
        def backward(g: Tensor) -> tuple:
            flat = idx.reshape(-1)
            if (not STATE.enabled and not scale_grad_by_freq and pad is None
                    and type(g._data) is np.ndarray and type(flat) is np.ndarray
                    and g._data.dtype.kind == "f"):
                return (wrap(_rows_summed(flat, g._data.reshape(-1, weight.shape[1]), num),
                             g._device),)
            rows = g.reshape(-1, weight.shape[1])
            factor = None
            if scale_grad_by_freq:
                counts = xp_for(weight._device).bincount(flat, minlength=num)[flat]
                factor = 1.0 / counts
            if pad is not None:
                factor = (flat != pad) * (1.0 if factor is None else factor)
            if factor is not None:
                rows = rows * wrap(factor.astype(weight._data.dtype)[:, None], weight._device)
            return (g.new_zeros(weight.shape).index_add(0, wrap(flat, weight._device), rows),)

        # like torch, the indices are saved (backward reads them), not the weight
        record("EmbeddingBackward0", res, (weight,), backward, saved=(input,))
    return res


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings, without building the ``(bags, len, dim)``
    tensor of ``embedding`` first: one row per bag.

    A 2-D ``input`` is a batch of equal-length bags; a 1-D ``input`` is all bags one after the
    other, ``offsets`` saying where each starts. Entries equal to ``padding_idx`` are left out of
    their bag (a bag with nothing left gives zeros). ``per_sample_weights`` scales each entry
    (``mode="sum"`` only).
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a "
                             "mini-batch of fixed length sequences. However, found offsets of type "
                             f"{type(offsets)}")
        bags, length = input.shape
        offsets = input.new_tensor(list(range(0, bags * length, length)) if bags else [])
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                      "per_sample_weights is only supported for mode='sum' "
                                      f"(got mode='{mode}'). Please open a feature request on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) "
                             f"is not None, then it must have the same shape as the input "
                             f"({tuple(input.shape)})")
    xp = xp_for(weight._device)
    starts = xp.asarray(offsets._data).astype(np.int64)
    if include_last_offset:
        starts = starts[:-1]
    n_bags, n = int(starts.shape[0]), int(input.shape[0])
    pad = _padding_index(padding_idx, weight.shape[0])
    rows = embedding(input, weight, None, max_norm, norm_type, scale_grad_by_freq)   # (n, dim)
    bag = xp.searchsorted(starts, xp.arange(n), side="right") - 1      # which bag each entry is in
    keep = xp.ones(n, dtype=bool) if pad is None else (xp.asarray(input._data) != pad)
    kept = wrap(keep.astype(weight._data.dtype)[:, None], weight._device)
    bag_t = wrap(bag.astype(np.int64), weight._device)
    out = weight.new_zeros((n_bags, weight.shape[1]))
    if mode == "max":
        spread = wrap(xp.broadcast_to(bag[:, None], (n, weight.shape[1])).astype(np.int64),
                      weight._device)
        masked = rows.masked_fill(~wrap(keep[:, None], weight._device), float("-inf"))
        # start from -inf, not zeros: a zero start would tie with a row of zeros and take half
        # its gradient (scatter_reduce's rule for ties), where the bag's maximum takes it all
        start = weight.new_full((n_bags, weight.shape[1]), float("-inf"))
        out = start.scatter_reduce(0, spread, masked, reduce="amax", include_self=False)
        counts = xp.bincount(bag[keep], minlength=n_bags) if n else xp.zeros(n_bags, np.int64)
        empty_bag = wrap((counts == 0)[:, None], weight._device)
        return out.masked_fill(empty_bag, 0.0)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.unsqueeze(1)
    out = out.index_add(0, bag_t, rows * kept)
    if mode == "mean":
        counts = xp.bincount(bag[keep], minlength=n_bags) if n else xp.zeros(n_bags, np.int64)
        scale = 1.0 / xp.maximum(counts, 1).astype(weight._data.dtype)
        out = out * wrap(scale[:, None], weight._device)
    return out


def _one_hot_fast(labels: Tensor, num_classes: int) -> Tensor:
    """:func:`encode_one_hot` as one comparison: each label against ``0 … num_classes-1``."""
    x = labels._data
    out = (x[..., None] == xp_for(labels._device).arange(num_classes)).astype(x.dtype)
    return wrap(out, labels._device)


@piece("01.6", fast=_one_hot_fast)
def encode_one_hot(labels: "Tensor", num_classes: int) -> "Tensor":
    """The one-hot encoding of ``labels`` (int64, any shape, each in ``0 … num_classes-1``):
    a tensor of shape ``(*labels.shape, num_classes)`` and ``labels``' dtype and device, 1 at
    position ``labels[...]`` of the new last dim and 0 elsewhere. Written with ``scatter_``."""
    out = labels.new_zeros((*labels.shape, num_classes))
    return out.scatter_(-1, labels.unsqueeze(-1), 1)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """``(…, num_classes)`` int64 tensor with a 1 at each index; ``-1`` infers ``max + 1``.

    Checks the labels as torch does, then calls the piece :func:`encode_one_hot`.
    """
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    x = tensor._data
    if num_classes == -1:
        if x.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max()) + 1
    if x.size:
        if int(x.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(x.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return pieces.encode_one_hot(tensor, num_classes)
