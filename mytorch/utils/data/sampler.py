"""Samplers: the order in which a map-style dataset is read (``torch.utils.data.sampler``).

A sampler is any iterable of dataset indices; a *batch* sampler is an iterable of lists of
indices. The DataLoader builds ``BatchSampler(SequentialSampler(ds) or RandomSampler(ds), ...)``
from ``shuffle`` and ``batch_size`` unless you pass your own::

    indices:  RandomSampler -> 3 0 4 1 2      batches: BatchSampler(..., 2) -> [3, 0] [4, 1] [2]

The random samplers draw from mytorch's generators: the same seed gives the same order, run after
run, but not the same order as PyTorch with that seed (see ``mytorch/random.py``: the bit
generators differ); the *algorithms* (how many draws, in which chunks) are torch's.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

from ..._creation import as_tensor, empty, empty_like
from ..._dtype import float64, int64
from ..._ops.indexing import searchsorted
from ..._ops.random_ops import rand, randint, randperm
from ..._ops.reduction import argsort, cumsum
from ..._pieces import piece, pieces
from ..._tensor import Tensor
from ...random import Generator

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class of samplers: subclasses define ``__iter__`` (indices, or lists of indices) and
    may define ``__len__`` (needed for ``len(loader)``)."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1, every epoch the same."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


@piece("07.2")
def random_indices(n: int, num_samples: int, replacement: bool, generator: "Generator") -> "Iterator":
    """Yield ``num_samples`` random indices in ``[0, n)`` (the draw of ``RandomSampler``).

    Without replacement: one random permutation of ``range(n)`` after another (every index once
    per round), the last round cut short. With replacement: independent uniform draws, made in
    chunks of 32 so that a long run never holds all its indices at once.
    """
    if replacement:
        for _ in range(num_samples // 32):
            yield from randint(0, n, (32,), generator=generator).tolist()
        yield from randint(0, n, (num_samples % 32,), generator=generator).tolist()
    else:
        for _ in range(num_samples // n):
            yield from randperm(n, generator=generator).tolist()
        yield from randperm(n, generator=generator).tolist()[:num_samples % n]


class RandomSampler(Sampler[int]):
    """A new random order every epoch (``shuffle=True``); with ``replacement=True`` indices may
    repeat, and ``num_samples`` sets how many are drawn (default: ``len(data_source)``).

    Without a ``generator`` each epoch seeds a private generator from one draw of the default
    generator, so ``torch.manual_seed`` makes the orders reproducible.
    """

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Any = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # A generator function, as torch's: nothing is drawn until the first index is asked for.
        generator = self.generator
        if generator is None:   # a fresh generator per epoch, seeded from the default one
            seed = int(empty((), dtype=int64).random_().item())
            generator = Generator().manual_seed(seed)
        yield from pieces.random_indices(len(self.data_source), self.num_samples, self.replacement,
                                         generator)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a new random order every epoch (e.g. a validation part of a dataset)."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


@piece("07.3")
def weighted_draw(weights: "Tensor", num_samples: int, replacement: bool, generator: "Generator") -> list:
    """Draw ``num_samples`` indices, index ``i`` with probability ``weights[i] / weights.sum()``.

    With replacement: cut ``[0, 1)`` into intervals as long as the probabilities (the running sum
    of ``p``), drop uniform random numbers on it and see which interval each lands in. Without
    replacement (every index at most once): give index ``i`` an exponentially distributed
    arrival time with rate ``p[i]``; the ``num_samples`` earliest arrivals win. (That is the same
    as drawing one index at a time by weight and removing it.)
    """
    p = weights / weights.sum()
    if replacement:
        u = rand(num_samples, dtype=float64, generator=generator)
        idx = searchsorted(cumsum(p, 0), u, right=True)
        return idx.clamp(max=len(p) - 1).tolist()   # guards u landing above a rounded-down total
    arrival = empty_like(p).exponential_(generator=generator) / p
    return argsort(arrival)[:num_samples].tolist()


class WeightedRandomSampler(Sampler[int]):
    """Indices drawn by weight (``weights[i]`` need not sum to one): e.g. to show a rare class
    as often as a common one, weight each sample by ``1 / count(its class)``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Any = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        _check_distribution(self.weights, self.num_samples, self.replacement)
        yield from pieces.weighted_draw(self.weights, self.num_samples, self.replacement,
                                        self.generator)

    def __len__(self) -> int:
        return self.num_samples


def _check_distribution(w: Tensor, num_samples: int, replacement: bool) -> None:
    """torch.multinomial's checks, with its messages (the sampler draws through it in torch)."""
    if not replacement and num_samples > w.numel():
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    arr = w.numpy()
    if bool(((arr < 0) | np.isnan(arr)).any()):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
    if bool(np.isinf(arr).any()):
        raise RuntimeError("invalid multinomial distribution (encountering probability entry = "
                           "infinity or NaN)")
    if float(w.sum()) <= 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


@piece("07.4")
def batch_indices(indices: "Iterable", batch_size: int, drop_last: bool) -> "Iterator":
    """Group a stream of indices into lists of ``batch_size`` (the grouping of ``BatchSampler``).

    The last list may be shorter; with ``drop_last`` it is left out instead.
    """
    batch = []
    for i in indices:
        batch.append(i)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


class BatchSampler(Sampler[list[int]]):
    """Wraps a sampler (any iterable of indices) to yield lists of ``batch_size`` indices::

        list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False))
        # [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        yield from pieces.batch_indices(iter(self.sampler), self.batch_size, self.drop_last)

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

