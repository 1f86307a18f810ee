"""Reading one batch (or one sample) from a dataset, in the main process or in a worker."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class _MapDatasetFetcher:
    """``collate_fn([dataset[i] for i in indices])`` (or ``dataset.__getitems__(indices)``)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[possibly_batched_index])
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:   # a dataset that reads a whole batch at once
            data = getitems(possibly_batched_index)
        else:
            data = [self.dataset[i] for i in possibly_batched_index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    """The next ``len(index)`` items of the dataset's iterator (one item without batching).

    Raises ``StopIteration`` when the stream is exhausted (or, with ``drop_last``, when what is
    left is less than a batch).
    """

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable, drop_last: bool) -> None:
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, possibly_batched_index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in possibly_batched_index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(possibly_batched_index)):
            raise StopIteration
        return self.collate_fn(data)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind: int, dataset: Any, auto_collation: bool, collate_fn: Callable,
                       drop_last: bool) -> _MapDatasetFetcher | _IterableDatasetFetcher:
        cls = _MapDatasetFetcher if kind == _DatasetKind.Map else _IterableDatasetFetcher
        return cls(dataset, auto_collation, collate_fn, drop_last)
