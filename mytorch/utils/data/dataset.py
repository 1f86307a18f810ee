"""Datasets: what a ``DataLoader`` reads from (``torch.utils.data.dataset``).

Two kinds, told apart by the type:

* **map-style** (:class:`Dataset`): ``len(ds)`` items, read by position with ``ds[i]``; a sampler
  chooses the order, so shuffling is the loader's job.
* **iterable-style** (:class:`IterableDataset`): a stream, read with ``iter(ds)``; the dataset itself
  decides the order, and with several workers each worker runs its own copy of the stream (so the
  dataset must split the work itself, see :func:`get_worker_info` and :class:`ShardedIterableDataset`).

The wrappers (:class:`TensorDataset`, :class:`ConcatDataset`, :class:`Subset`, ...) and
:func:`random_split` build new datasets from old ones without copying any data.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ..._ops.random_ops import randperm
from ..._pieces import piece, pieces
from ..._tensor import Tensor
from ... import random as _random
from ._utils.worker import get_worker_info

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split", "ShardedIterableDataset"]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    ``ds1 + ds2`` is a :class:`ConcatDataset` of both.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """An iterable-style dataset: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker process iterates its own copy: without a split (use
    :func:`get_worker_info` inside ``__iter__``) each item comes out ``num_workers`` times.
    ``ds1 + ds2`` is a :class:`ChainDataset`.
    """

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Rows of tensors that share their first dimension: ``ds[i] == (t1[i], t2[i], ...)``."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Datasets of one length side by side: ``StackDataset(a, b)[i] == (a[i], b[i])``, and
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or"
                             "``dict``- (via ``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])  # type: ignore[arg-type]
        if any(self._length != len(d) for d in parts):  # type: ignore[arg-type]
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args if args else kwargs

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """A whole batch at once (the loader prefers this): each part may batch its own reads."""
        named = isinstance(self.datasets, dict)
        parts = self.datasets.items() if named else enumerate(self.datasets)
        columns = {}
        for key, d in parts:
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch."
                                     f" Expected {len(indices)}, got {len(items)}")
            else:
                items = [d[i] for i in indices]
            columns[key] = items
        if named:
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        return [tuple(col[j] for col in columns.values()) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after the other; ``cumulative_sizes[k]`` is where part ``k`` ends."""

    @staticmethod
    def cumsum(sequence: Iterable[Dataset]) -> list[int]:
        return list(itertools.accumulate(len(d) for d in sequence))  # type: ignore[arg-type]

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        part = bisect.bisect_right(self.cumulative_sizes, idx)   # the first part ending after idx
        start = 0 if part == 0 else self.cumulative_sizes[part - 1]
        return self.datasets[part][idx - start]

    @property
    def cummulative_sizes(self) -> list[int]:
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other (lazily: nothing is read until iteration)."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The items of ``dataset`` at ``indices``, in that order (no copy)."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if (type(self).__getitem__ is not Subset.__getitem__
                and type(self).__getitems__ is Subset.__getitems__):
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        inner = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(inner)  # type: ignore[attr-defined]
        return [self.dataset[i] for i in inner]

    def __len__(self) -> int:
        return len(self.indices)


# ---------------------------------------------------------------------------------- random_split
@piece("07.1")
def split_lengths(n: int, fractions: list[float]) -> list[int]:
    """How many of ``n`` items each split gets when the splits are given as fractions summing to 1.

    Each split first gets ``floor(n * fraction)``; the few items left over by rounding down go
    one each to the splits in order, starting from the first.
    """
    lengths = [math.floor(n * f) for f in fractions]
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    return lengths


def random_split(dataset: Dataset[T], lengths: Sequence[int | float],
                 generator: Any = None) -> list[Subset[T]]:
    """Split ``dataset`` into non-overlapping random :class:`Subset` s of the given lengths.

    ``lengths`` are counts (summing to ``len(dataset)``) or fractions (summing to 1, e.g.
    ``[0.8, 0.2]``). The items are shuffled once by ``randperm(len(dataset), generator=...)``
    (the default generator when none is given: seed it, or pass your own, for the same split
    every run) and cut into consecutive pieces. The lengths are exactly torch's; the permutation
    for a given seed is mytorch's own (its generator is not torch's Mersenne Twister).
    """
    if generator is None:
        generator = _random.default_generator
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths = pieces.split_lengths(len(dataset), list(lengths))  # type: ignore[arg-type]
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):  # type: ignore[arg-type]
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(sum(lengths), generator=generator).tolist()  # type: ignore[arg-type]
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - length:end])
            for end, length in zip(ends, lengths, strict=True)]  # type: ignore[operator]


# ---------------------------------------------------------------------------------- sharding
@piece("07.6")
def shard_range(start: int, end: int, worker_id: int, num_workers: int) -> range:
    """The part of ``range(start, end)`` that worker ``worker_id`` of ``num_workers`` reads.

    The range is cut into ``num_workers`` consecutive blocks of ``ceil(size / num_workers)``
    items (the last block may be shorter, or empty); worker k reads block k. Together the
    workers read every item exactly once.
    """
    per_worker = math.ceil((end - start) / num_workers)
    lo = start + worker_id * per_worker
    hi = min(lo + per_worker, end)
    return range(lo, max(lo, hi))


class ShardedIterableDataset(IterableDataset):
    """A sequence read as a stream, split between the DataLoader's workers (mytorch's own helper).

    ``ShardedIterableDataset(source)`` yields ``source[i]`` for every ``i``; in a worker process
    it yields only that worker's block of indices (:func:`shard_range`), so ``num_workers``
    workers together yield every item exactly once instead of ``num_workers`` times. It is the
    pattern of torch's ``IterableDataset`` documentation, packaged: write your own
    ``__iter__`` the same way for a real stream (files, a database cursor, ...).
    """

    def __init__(self, source: Sequence) -> None:
        self.source = source

    def __iter__(self) -> Iterator:
        info = get_worker_info()
        # the main process (no worker info) is the only reader: worker 0 of 1, it reads everything
        worker_id, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        for i in pieces.shard_range(0, len(self.source), worker_id, num_workers):
            yield self.source[i]

    def __len__(self) -> int:
        return len(self.source)
