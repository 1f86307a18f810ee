"""Samplers and datasets against torch.

mytorch's generator is not torch's (``mytorch/random.py``), so the same seed gives other numbers.
To compare the *algorithms* — how many draws of which kind, how they are cut and chained — both
libraries get the same stand-in ``randperm`` / ``randint`` (fed from one NumPy stream each); then
their samplers and splits must give identical indices.
"""
from __future__ import annotations

import inspect
import warnings
from collections import Counter

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch
import mytorch.utils.data as mdata
from mytorch._pieces import pieces
from tests.data_support import same_error


def _shared_draws(monkeypatch: pytest.MonkeyPatch, seed: int = 0) -> None:
    """Make randperm/randint of both libraries return the same numbers (one stream per library)."""
    for lib in (mytorch, torch):
        rng = np.random.default_rng(seed)

        def randperm(n: int, *, generator: object = None, _rng=rng, _lib=lib, **kw: object) -> object:
            return _lib.from_numpy(_rng.permutation(n).astype(np.int64))

        def randint(*args: object, size: object = None, high: object = None, generator: object = None,
                    dtype: object = None, _rng=rng, _lib=lib, **kw: object) -> object:
            args = list(args)
            if size is None:
                size = args.pop()
            if high is None:
                high = args.pop()
            low = args.pop() if args else 0
            return _lib.from_numpy(_rng.integers(low, high, size).astype(np.int64))

        if lib is torch:   # torch's sampler calls torch.randperm; its dataset.py imported randperm
            monkeypatch.setattr(torch, "randperm", randperm)
            monkeypatch.setattr(torch, "randint", randint)
            monkeypatch.setattr(tdata.dataset, "randperm", randperm)
        else:              # mytorch's modules import the functions by name
            monkeypatch.setattr(mdata.sampler, "randperm", randperm)
            monkeypatch.setattr(mdata.sampler, "randint", randint)
            monkeypatch.setattr(mdata.dataset, "randperm", randperm)
            # a student's piece (MYTORCH_MINE) draws through the names of its own notebook
            drawing = inspect.unwrap(pieces.random_indices)
            if drawing.__globals__ is not vars(mdata.sampler):
                for name, fn in (("randperm", randperm), ("randint", randint)):
                    monkeypatch.setitem(drawing.__globals__, name, fn)
                    monkeypatch.setattr(mytorch, name, fn)


@pytest.mark.parametrize("replacement,num_samples", [(False, None), (False, 25), (False, 4),
                                                     (True, None), (True, 70), (True, 3)])
def test_random_sampler_algorithm_matches_torch(monkeypatch: pytest.MonkeyPatch, replacement: bool,
                                                num_samples: int | None) -> None:
    _shared_draws(monkeypatch)
    data = range(10)
    mine = mdata.RandomSampler(data, replacement, num_samples, generator=mytorch.Generator())
    theirs = tdata.RandomSampler(data, replacement, num_samples, generator=torch.Generator())
    assert list(mine) == list(theirs)
    assert list(mine) == list(theirs)      # a second epoch draws again, the same way
    assert len(mine) == len(theirs)


def test_random_sampler_without_generator_matches_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    _shared_draws(monkeypatch)
    assert list(mdata.RandomSampler(range(7))) == list(tdata.RandomSampler(range(7)))


def test_subset_random_sampler_matches_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    _shared_draws(monkeypatch)
    idx = [10, 3, 7, 42, 5]
    assert list(mdata.SubsetRandomSampler(idx)) == list(tdata.SubsetRandomSampler(idx))
    assert len(mdata.SubsetRandomSampler(idx)) == 5


def test_random_sampler_reproducible_with_mytorch_seeds() -> None:
    g = mytorch.Generator().manual_seed(3)
    s = mdata.RandomSampler(range(20), generator=g)
    first, second = list(s), list(s)
    assert sorted(first) == list(range(20)) and first != second   # a new order every epoch
    g.manual_seed(3)
    assert list(s) == first
    mytorch.manual_seed(5)
    a = list(mdata.RandomSampler(range(20)))
    mytorch.manual_seed(5)
    assert list(mdata.RandomSampler(range(20))) == a               # the default generator drives it


def test_random_sampler_draws_lazily() -> None:
    # Like torch's, iter() draws nothing: the seed is taken at the first index.
    g = mytorch.Generator().manual_seed(0)
    it = iter(mdata.RandomSampler(range(5), generator=g))
    state = g.get_state()
    assert mytorch.equal(g.get_state(), state)
    next(it)
    assert not mytorch.equal(g.get_state(), state)


@pytest.mark.parametrize("make", [
    lambda lib: lib.utils.data.RandomSampler(range(3), replacement=1),
    lambda lib: lib.utils.data.RandomSampler(range(3), num_samples=0),
    lambda lib: lib.utils.data.RandomSampler([], num_samples=None),
    lambda lib: lib.utils.data.BatchSampler(range(3), 0, False),
    lambda lib: lib.utils.data.BatchSampler(range(3), True, False),
    lambda lib: lib.utils.data.BatchSampler(range(3), 2, 1),
    lambda lib: lib.utils.data.WeightedRandomSampler([1.0, 2.0], 0),
    lambda lib: lib.utils.data.WeightedRandomSampler([1.0, 2.0], 2, replacement=0),
    lambda lib: lib.utils.data.WeightedRandomSampler([[1.0, 2.0]], 2),
    lambda lib: list(lib.utils.data.WeightedRandomSampler([1.0, 2.0], 3, replacement=False)),
    lambda lib: list(lib.utils.data.WeightedRandomSampler([1.0, -2.0], 3)),
    lambda lib: list(lib.utils.data.WeightedRandomSampler([1.0, float("nan")], 3)),
    lambda lib: list(lib.utils.data.WeightedRandomSampler([0.0, 0.0], 3)),
    lambda lib: list(lib.utils.data.WeightedRandomSampler([1.0, float("inf")], 3)),
])
def test_sampler_errors_match_torch(make: object) -> None:
    same_error(lambda: make(mytorch), lambda: make(torch))  # type: ignore[operator]


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True), (9, 3, False),
                                                     (2, 5, False), (2, 5, True), (0, 2, False)])
def test_batch_sampler_matches_torch(n: int, batch_size: int, drop_last: bool) -> None:
    mine = mdata.BatchSampler(mdata.SequentialSampler(range(n)), batch_size, drop_last)
    theirs = tdata.BatchSampler(tdata.SequentialSampler(range(n)), batch_size, drop_last)
    assert list(mine) == list(theirs)
    assert len(mine) == len(theirs)


def test_batch_sampler_accepts_any_iterable() -> None:
    assert list(mdata.BatchSampler(iter([5, 1, 4]), 2, False)) == [[5, 1], [4]]
    assert list(pieces.batch_indices(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]


def test_weighted_sampler_frequencies() -> None:
    g = mytorch.Generator().manual_seed(0)
    w = [1.0, 3.0, 0.0, 6.0]
    counts = Counter(mdata.WeightedRandomSampler(w, 20000, generator=g))
    assert counts[2] == 0
    for i, wi in enumerate(w):
        assert abs(counts[i] / 20000 - wi / 10) < 0.015


def test_weighted_sampler_without_replacement() -> None:
    g = mytorch.Generator().manual_seed(1)
    w = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    draws = [list(mdata.WeightedRandomSampler(w, 6, replacement=False, generator=g)) for _ in range(2000)]
    assert all(sorted(d) == list(range(6)) for d in draws)      # each index exactly once
    first = Counter(d[0] for d in draws)                          # the first pick follows the weights
    for i, wi in enumerate(w):
        assert abs(first[i] / 2000 - wi / sum(w)) < 0.04
    # second pick, given the first was 4: proportional to the remaining weights
    seconds = Counter(d[1] for d in draws if d[0] == 4)
    n = sum(seconds.values())
    assert abs(seconds[1] / n - 0.9 / (sum(w) - 3.0)) < 0.06


def test_weighted_sampler_reproducible_and_len() -> None:
    s = mdata.WeightedRandomSampler(mytorch.tensor([1.0, 2.0, 3.0]), 7,
                                    generator=mytorch.Generator().manual_seed(9))
    a = list(s)
    s.generator.manual_seed(9)
    assert list(s) == a and len(s) == 7 and s.weights.dtype == mytorch.float64


# ---------------------------------------------------------------------------------- datasets
def _tds(lib: object) -> object:
    return lib.utils.data.TensorDataset(lib.arange(6.0).reshape(3, 2), lib.tensor([0, 1, 2]))


def test_tensor_dataset() -> None:
    ds = _tds(mytorch)
    x, y = ds[1]
    assert x.tolist() == [2.0, 3.0] and int(y) == 1 and len(ds) == 3
    assert ds[[0, 2]][1].tolist() == [0, 2]
    same_error(lambda: mdata.TensorDataset(mytorch.zeros(2), mytorch.zeros(3)),
               lambda: tdata.TensorDataset(torch.zeros(2), torch.zeros(3)))


def test_concat_dataset_matches_torch() -> None:
    parts_m = [list(range(3)), list(range(10, 12)), [], list(range(20, 24))]
    mine, theirs = mdata.ConcatDataset(parts_m), tdata.ConcatDataset(parts_m)
    assert mine.cumulative_sizes == theirs.cumulative_sizes and len(mine) == len(theirs)
    assert [mine[i] for i in range(-len(mine), len(mine))] == [theirs[i] for i in range(-len(theirs), len(theirs))]
    same_error(lambda: mine[-10], lambda: theirs[-10])
    same_error(lambda: mine[9], lambda: theirs[9])
    same_error(lambda: mdata.ConcatDataset([]), lambda: tdata.ConcatDataset([]))
    with pytest.warns(FutureWarning):
        assert mine.cummulative_sizes == mine.cumulative_sizes


class _Stream(mdata.IterableDataset):
    def __init__(self, items: list) -> None:
        self.items = items

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def test_dataset_addition_and_chain() -> None:
    a, b = mdata.Subset(list("abcde"), [4, 0]), mdata.Subset(list("xyz"), [1])
    both = a + b
    assert isinstance(both, mdata.ConcatDataset) and [both[i] for i in range(3)] == ["e", "a", "y"]
    chain = _Stream([1, 2]) + _Stream([3])
    assert isinstance(chain, mdata.ChainDataset) and list(chain) == [1, 2, 3] and len(chain) == 3
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        mdata.ConcatDataset([_Stream([1])])
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(mdata.ChainDataset([[1, 2]]))
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__"):
        mdata.Dataset()[0]


def test_subset_getitems_and_subclass_check() -> None:
    class Reads(mdata.Dataset):
        def __getitem__(self, i: int) -> int:
            return i * 10

        def __getitems__(self, idx: list) -> list:
            return [("batched", i) for i in idx]

    s = mdata.Subset(Reads(), [3, 1, 2])
    assert s[0] == 30 and s.__getitems__([0, 2]) == [("batched", 3), ("batched", 2)]

    def bad_subclass(lib: object) -> type:
        class Bad(lib.utils.data.Subset):  # type: ignore[name-defined,misc]
            def __getitem__(self, i: int) -> int:
                return 0
        return Bad

    same_error(lambda: bad_subclass(mytorch)([1], [0]), lambda: bad_subclass(torch)([1], [0]))


def test_stack_dataset_matches_torch() -> None:
    a, b = [1, 2, 3], ["x", "y", "z"]
    assert mdata.StackDataset(a, b)[1] == tdata.StackDataset(a, b)[1] == (2, "y")
    assert mdata.StackDataset(n=a, s=b)[2] == {"n": 3, "s": "z"}
    assert mdata.StackDataset(a, b).__getitems__([2, 0]) == tdata.StackDataset(a, b).__getitems__([2, 0])
    assert mdata.StackDataset(n=a, s=b).__getitems__([1]) == tdata.StackDataset(n=a, s=b).__getitems__([1])
    for args, kwargs in [((a, [1]), {}), ((), {}), ((a,), {"s": b})]:
        same_error(lambda: mdata.StackDataset(*args, **kwargs),
                   lambda: tdata.StackDataset(*args, **kwargs))


@settings(max_examples=80, deadline=None)
@given(n=st.integers(0, 60), weights=st.lists(st.integers(1, 9), min_size=1, max_size=5))
def test_random_split_fraction_lengths_match_torch(n: int, weights: list[int]) -> None:
    fractions = [w / sum(weights) for w in weights]
    if not (np.isclose(sum(fractions), 1) and sum(fractions) <= 1):
        return   # both would treat them as counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = [len(s) for s in tdata.random_split(range(n), fractions)]
        mine = [len(s) for s in mdata.random_split(range(n), fractions)]
    assert mine == theirs == pieces.split_lengths(n, fractions)


def test_random_split_same_subsets_as_torch_for_the_same_permutation(monkeypatch: pytest.MonkeyPatch) -> None:
    _shared_draws(monkeypatch)
    for lengths in ([3, 4, 3], [0.5, 0.3, 0.2]):
        mine = mdata.random_split(range(10), lengths)
        theirs = tdata.random_split(range(10), lengths)
        assert [list(s) for s in mine] == [list(s) for s in theirs]


def test_random_split_generator_and_warnings() -> None:
    ds = list(range(10))
    a = [s.indices for s in mdata.random_split(ds, [0.7, 0.3], generator=mytorch.Generator().manual_seed(1))]
    b = [s.indices for s in mdata.random_split(ds, [7, 3], generator=mytorch.Generator().manual_seed(1))]
    assert a == b and sorted(a[0] + a[1]) == ds
    mytorch.manual_seed(4)
    c = [s.indices for s in mdata.random_split(ds, [5, 5])]
    mytorch.manual_seed(4)
    assert c == [s.indices for s in mdata.random_split(ds, [5, 5])]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        mdata.random_split([1, 2], [0.9, 0.1])
    same_error(lambda: mdata.random_split(ds, [3, 3]), lambda: tdata.random_split(ds, [3, 3]))
    same_error(lambda: mdata.random_split(ds, [1.5, -0.5]), lambda: tdata.random_split(ds, [1.5, -0.5]))


def test_shard_range_covers_everything_once() -> None:
    for size in range(0, 13):
        for n in range(1, 6):
            parts = [list(pieces.shard_range(5, 5 + size, k, n)) for k in range(n)]
            assert sum(parts, []) == list(range(5, 5 + size))
