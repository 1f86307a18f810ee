"""``mytorch.utils.data``: datasets, samplers and the DataLoader (``torch.utils.data``).

* ``dataset.py``     Dataset / IterableDataset and the wrappers, ``random_split``
* ``sampler.py``     the order of reading: Sequential, Random, SubsetRandom, WeightedRandom, Batch
* ``dataloader.py``  DataLoader: batching, worker processes, pinning
* ``distributed.py`` DistributedSampler: each rank of a distributed job reads its own share (ch. 12)
* ``_utils/``        collate (samples -> batch), fetch, the worker loop, pin_memory
"""
from ._utils.collate import default_collate, default_convert
from ._utils.worker import get_worker_info
from .dataloader import DataLoader, _DatasetKind
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, ShardedIterableDataset,
                      StackDataset, Subset, TensorDataset, random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from .distributed import DistributedSampler  # noqa: E402  (chapter 12: needs Sampler above)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "ShardedIterableDataset", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "default_collate", "default_convert", "get_worker_info", "random_split"]
