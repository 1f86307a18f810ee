"""``DistributedSampler``: each rank reads its own share of a data set (``torch.utils.data.distributed``).

With N ranks, rank r takes every N-th index starting at r, so the ranks' shares are disjoint and
together cover the data set. If the data set does not split evenly, indices from the start are
repeated (padding) so every rank gets the same number, or, with ``drop_last=True``, the tail is
dropped. With ``shuffle=True`` every rank draws the *same* permutation from ``seed + epoch``: call
``set_epoch(epoch)`` at the start of each epoch, or every epoch repeats the first one's order.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Any

import mytorch as torch
import mytorch.distributed as dist

from ..._pieces import piece, pieces
from .sampler import Sampler

__all__ = ["DistributedSampler", "distributed_indices"]


@piece("12.2")
def distributed_indices(n: int, num_replicas: int, rank: int, shuffle: bool, seed: int,
                        epoch: int, drop_last: bool) -> list:
    """The indices rank ``rank`` of ``num_replicas`` reads from a data set of ``n`` items.

    Order: a permutation drawn from ``seed + epoch`` (the same on every rank) or ``0 .. n-1``.
    Size it to a multiple of ``num_replicas``: drop the tail (``drop_last``) or repeat indices
    from the start. Then rank r takes positions r, r + N, r + 2N, ...
    """
    if shuffle:
        g = torch.Generator()
        g.manual_seed(seed + epoch)
        indices = torch.randperm(n, generator=g).tolist()
    else:
        indices = list(range(n))
    if drop_last and n % num_replicas:
        per_rank = math.ceil((n - num_replicas) / num_replicas)
    else:
        per_rank = math.ceil(n / num_replicas)
    total = per_rank * num_replicas
    if drop_last:
        indices = indices[:total]
    else:
        padding = total - len(indices)
        indices += (indices * math.ceil(padding / len(indices)))[:padding] if indices else []
    return indices[rank:total:num_replicas]


class DistributedSampler(Sampler):
    """Sample the share of ``dataset`` that belongs to this rank (pass it as ``sampler=``)."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size()
        if rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, "
                             f"{num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        indices = pieces.distributed_indices(len(self.dataset), self.num_replicas, self.rank,
                                             self.shuffle, self.seed, self.epoch, self.drop_last)
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use a new permutation this epoch (all ranks must pass the same epoch)."""
        self.epoch = epoch
