"""Variable-length sequences for recurrent layers: padding and *packing*.

A batch of sequences of different lengths can be stored *padded*, ``(T, B, *)`` with filler after
each sequence's end, or *packed*: sorted by length (longest first), the time steps laid one after
another, step ``t`` holding only the ``batch_sizes[t]`` sequences still running::

    lengths 3, 2, 1:   a1 b1 c1 | a2 b2 | a3        batch_sizes = [3, 2, 1]

An RNN fed a ``PackedSequence`` never processes padding, and its final hidden state for each
sequence is the one at that sequence's real last step.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ... import _dtype as D
from ..._creation import full, tensor
from ..._ops.shape import cat, stack
from ..._tensor import Tensor, wrap

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``: made by
    :func:`pack_padded_sequence` / :func:`pack_sequence`, never by hand.

    ``sorted_indices[i]`` is the original batch position of the i-th longest sequence;
    ``unsorted_indices`` is its inverse permutation (both ``None`` when the input was sorted).
    """

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), ...)
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence "
                             "should never be created manually. They should be instantiated by "
                             "functions like pack_sequence and pack_padded_sequences in "
                             "nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn."
                             "utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """Move/cast ``data`` (and the index tensors to ``data``'s device); batch_sizes stay on CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to(self.data.cuda(*args, **kwargs).device)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation``."""
    if permutation is None:
        return None
    inv = np.empty(permutation.numel(), dtype=np.int64)
    inv[permutation.cpu().numpy()] = np.arange(permutation.numel())
    return tensor(inv, device=permutation.device)


def _lengths_array(lengths: Any) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.device.type != "cpu" or lengths.dim() != 1:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device} Long tensor")
        return lengths.numpy().astype(np.int64)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def _packed_positions(batch_sizes: np.ndarray, batch: int) -> np.ndarray:
    """Row ``t * batch + b`` of the flattened ``(T, B)`` padded tensor for each packed element."""
    return np.concatenate([t * batch + np.arange(n) for t, n in enumerate(batch_sizes)])


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` batch (``(B, T, *)`` with ``batch_first``) given each length.

    ``enforce_sorted=False`` sorts the batch by decreasing length first (and remembers how to
    undo it); with ``True`` the lengths must already be decreasing.
    """
    lens = _lengths_array(lengths)
    sorted_indices = None
    if enforce_sorted:
        if np.any(lens[:-1] < lens[1:]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = tensor(order, device=input.device)
    if lens.size and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    if sorted_indices is not None:
        input = input.index_select(1, sorted_indices)
    steps, batch = input.shape[0], input.shape[1]
    batch_sizes = (lens[None, :] > np.arange(min(int(lens[0]), steps))[:, None]).sum(1)
    rows = _packed_positions(batch_sizes, batch)
    flat = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    data = flat.index_select(0, tensor(rows, device=input.device))
    return PackedSequence(data, tensor(batch_sizes.astype(np.int64)), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """Undo :func:`pack_padded_sequence`: ``(padded, lengths)`` in the original batch order."""
    batch_sizes = sequence.batch_sizes.numpy()
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    data = sequence.data
    batch = int(batch_sizes[0])
    rest = tuple(data.shape[1:])
    rows = tensor(_packed_positions(batch_sizes, batch), device=data.device)
    padded = full((steps * batch,) + rest, padding_value, dtype=data.dtype, device=data.device)
    padded = padded.index_copy(0, rows, data).reshape((steps, batch) + rest)
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1).astype(np.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu().numpy()]
    return padded, wrap(lengths)


def pad_sequence(sequences: Iterable[Tensor] | Tensor, batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack sequences ``(L_i, *)`` into ``(T, B, *)`` (or ``(B, T, *)``), padding to the longest."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    elif not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = full((missing,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                       device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False
                   ) -> list[Tensor]:
    """Split a padded batch back into its sequences (the inverse of :func:`pad_sequence`)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths, strict=False)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_i, *)`` tensors (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = tensor([v.shape[0] for v in sequences], dtype=D.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a :class:`PackedSequence` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
