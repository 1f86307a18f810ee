"""DataLoader against torch's: the same batches for the same datasets (0 and 2 workers), the same
errors and warnings for bad settings, and what workers do (seeds, sharding, persistence)."""
from __future__ import annotations

import math
import multiprocessing
import os
import random
import warnings
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import mytorch
import mytorch.utils.data as mdata
from tests.data_support import assert_same, same_error
from tests.test_data_sampler import _shared_draws

LIBS = {"mytorch": mytorch, "torch": torch}


def _loader(lib: Any, dataset: Any, **kw: Any) -> Any:
    return lib.utils.data.DataLoader(dataset, **kw)


def _both(make_dataset: Any, **kw: Any) -> tuple[list, list]:
    """All batches of one epoch, from mytorch's loader and from torch's, on the same dataset."""
    return [list(_loader(lib, make_dataset(lib), **kw)) for lib in (mytorch, torch)]  # type: ignore[return-value]


def _tensors(lib: Any) -> Any:
    return lib.utils.data.TensorDataset(lib.arange(20.0).reshape(10, 2), lib.arange(10))


class DictData:
    """A plain map-style dataset (no base class needed) of dicts of NumPy and Python values."""

    def __init__(self, lib: Any = None, n: int = 7) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        return {"x": np.full((2, 2), i, dtype=np.float32), "y": i, "name": f"item{i}", "w": 0.5 * i}


def _range_stream(lib: Any, start: int = 3, end: int = 20, shard: bool = True) -> Any:
    """torch's documentation example: each worker reads its own block of range(start, end)."""
    base = lib.utils.data.IterableDataset

    class Range(base):  # type: ignore[misc,valid-type]
        def __iter__(self):  # type: ignore[no-untyped-def]
            info = lib.utils.data.get_worker_info()
            if info is None or not shard:
                return iter(range(start, end))
            per = int(math.ceil((end - start) / float(info.num_workers)))
            lo = start + info.id * per
            return iter(range(lo, min(lo + per, end)))

        def __len__(self) -> int:
            return end - start

    return Range()


WORKERS = [0, 2]


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=1),
                                dict(batch_size=None), dict(batch_size=4, sampler=[9, 0, 4, 4, 2]),
                                dict(batch_sampler=[[1, 2], [0], [9, 8, 7]])],
                         ids=["bs3", "drop_last", "bs1", "no batching", "sampler", "batch_sampler"])
def test_map_batches_match_torch(workers: int, kw: dict) -> None:
    mine, theirs = _both(_tensors, num_workers=workers, **kw)
    assert_same(mine, theirs)
    mine, theirs = _both(DictData, num_workers=workers, **kw)
    assert_same(mine, theirs)


@pytest.mark.parametrize("workers", WORKERS)
def test_shuffle_matches_torch_for_the_same_permutation(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    _shared_draws(monkeypatch)
    mine, theirs = _both(_tensors, batch_size=4, shuffle=True, num_workers=workers)
    assert_same(mine, theirs)


@pytest.mark.parametrize("workers", WORKERS)
def test_collate_fn_matches_torch(workers: int) -> None:
    def collate(batch: list) -> tuple:
        return tuple(sorted(b["y"] for b in batch)), len(batch)

    mine, theirs = _both(DictData, batch_size=3, num_workers=workers, collate_fn=collate)
    assert mine == theirs == [((0, 1, 2), 3), ((3, 4, 5), 3), ((6,), 1)]


@pytest.mark.parametrize("workers", [0, 1, 2])
@pytest.mark.parametrize("kw", [dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=None)],
                         ids=["bs4", "drop_last", "no batching"])
def test_iterable_batches_match_torch(workers: int, kw: dict) -> None:
    mine, theirs = _both(_range_stream, num_workers=workers, **kw)
    assert_same(mine, theirs)


def test_iterable_without_sharding_duplicates_like_torch() -> None:
    mine, theirs = _both(lambda lib: _range_stream(lib, 0, 5, shard=False), batch_size=2, num_workers=2)
    assert_same(mine, theirs)
    assert sorted(sum((b.tolist() for b in mine), [])) == sorted(list(range(5)) * 2)


def test_sharded_iterable_dataset_reads_everything_once() -> None:
    ds = mdata.ShardedIterableDataset(list(range(11)))
    for workers in (0, 1, 2):
        got = sum((b.tolist() for b in mdata.DataLoader(ds, batch_size=2, num_workers=workers)), [])
        assert sorted(got) == list(range(11))
    assert list(ds) == list(range(11)) and len(ds) == 11


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                                dict(batch_sampler=[[0], [1, 2]]), dict(batch_size=4, shuffle=True)])
def test_len_matches_torch(kw: dict) -> None:
    assert len(mdata.DataLoader(DictData(n=10), **kw)) == len(tdata.DataLoader(DictData(n=10), **kw))
    if "batch_sampler" not in kw and "shuffle" not in kw:
        assert len(mdata.DataLoader(_range_stream(mytorch), **kw)) == \
            len(tdata.DataLoader(_range_stream(torch), **kw))


def _warnings(fn: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("workers", [0, 2])
def test_iterable_length_warning_matches_torch(workers: int) -> None:
    # The dataset says 5 but yields 17 (no sharding: each worker yields everything): torch warns
    # once len(loader) was asked for and more samples than that came out.
    def run(lib: Any) -> list[str]:
        class Liar(lib.utils.data.IterableDataset):  # type: ignore[misc,name-defined]
            def __iter__(self):  # type: ignore[no-untyped-def]
                return iter(range(17 // max(workers, 1) + 1))

            def __len__(self) -> int:
                return 5

            def __repr__(self) -> str:
                return "Liar"

        loader = lib.utils.data.DataLoader(Liar(), batch_size=None, num_workers=workers)
        len(loader)
        return _warnings(lambda: list(loader))

    mine, theirs = run(mytorch), run(torch)
    assert mine == theirs and len(mine) > 0 and "Length of IterableDataset Liar was reported to be 5" in mine[0]


class _Stream(mdata.IterableDataset):
    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(range(3))


class _TStream(tdata.IterableDataset):
    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(range(3))


BAD = {
    "sampler and shuffle": lambda lib, ds: _loader(lib, ds, sampler=[0, 1], shuffle=True),
    "batch_sampler and batch_size": lambda lib, ds: _loader(lib, ds, batch_sampler=[[0]], batch_size=2),
    "batch_sampler and shuffle": lambda lib, ds: _loader(lib, ds, batch_sampler=[[0]], shuffle=True),
    "batch_sampler and sampler": lambda lib, ds: _loader(lib, ds, batch_sampler=[[0]], sampler=[0]),
    "batch_sampler and drop_last": lambda lib, ds: _loader(lib, ds, batch_sampler=[[0]], drop_last=True),
    "no batching and drop_last": lambda lib, ds: _loader(lib, ds, batch_size=None, drop_last=True),
    "negative workers": lambda lib, ds: _loader(lib, ds, num_workers=-1),
    "negative timeout": lambda lib, ds: _loader(lib, ds, timeout=-1),
    "prefetch without workers": lambda lib, ds: _loader(lib, ds, prefetch_factor=2),
    "negative prefetch": lambda lib, ds: _loader(lib, ds, num_workers=1, prefetch_factor=-1),
    "persistent without workers": lambda lib, ds: _loader(lib, ds, persistent_workers=True),
    "context without workers": lambda lib, ds: _loader(lib, ds, multiprocessing_context="fork"),
    "unknown start method": lambda lib, ds: _loader(lib, ds, num_workers=1, multiprocessing_context="thread"),
    "context of wrong type": lambda lib, ds: _loader(lib, ds, num_workers=1, multiprocessing_context=3),
    "set batch_size later": lambda lib, ds: setattr(_loader(lib, ds), "batch_size", 4),
    "set dataset later": lambda lib, ds: setattr(_loader(lib, ds), "dataset", ds),
    "timeout without workers": lambda lib, ds: iter(_loader(lib, ds, timeout=1)),
    "batch_size zero": lambda lib, ds: _loader(lib, ds, batch_size=0),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_settings_match_torch(name: str) -> None:
    same_error(lambda: BAD[name](mytorch, DictData()), lambda: BAD[name](torch, DictData()))


@pytest.mark.parametrize("kw", [dict(shuffle=True), dict(sampler=[0, 1]), dict(batch_sampler=[[0]])])
def test_iterable_dataset_refuses_order_options_like_torch(kw: dict) -> None:
    same_error(lambda: mdata.DataLoader(_Stream(), **kw), lambda: tdata.DataLoader(_TStream(), **kw))


def test_too_many_workers_warns_like_torch() -> None:
    n = len(os.sched_getaffinity(0)) + 1
    mine = _warnings(lambda: mdata.DataLoader(DictData(), num_workers=n))
    theirs = _warnings(lambda: tdata.DataLoader(DictData(), num_workers=n))
    assert mine == theirs and "worker processes in total" in mine[0]


def test_default_collate_choice() -> None:
    assert mdata.DataLoader(DictData()).collate_fn is mdata.default_collate
    assert mdata.DataLoader(DictData(), batch_size=None).collate_fn is mdata.default_convert


# ---------------------------------------------------------------------------------- workers
class WhoAmI(mdata.Dataset):
    """Each sample reports the worker that loaded it and draws from every random source."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> dict:
        info = mdata.get_worker_info()
        return {"i": i, "worker": -1 if info is None else info.id,
                "seed": -1 if info is None else info.seed, "pid": os.getpid(),
                "np": float(np.random.rand()), "py": random.random(), "torch": float(mytorch.rand(()))}


def _epoch(loader: Any) -> list[dict]:
    return [b for b in loader]


def test_worker_info_and_round_robin() -> None:
    batches = _epoch(mdata.DataLoader(WhoAmI(), batch_size=2, num_workers=2))
    assert [b["worker"].tolist() for b in batches] == [[0, 0], [1, 1], [0, 0], [1, 1]]
    seeds = {int(b["worker"][0]): int(b["seed"][0]) for b in batches}
    assert seeds[1] == seeds[0] + 1                                 # base_seed + worker_id
    assert mdata.get_worker_info() is None                          # in the main process


def test_workers_get_distinct_random_streams() -> None:
    # The classic bug: forked workers inherit one random state and augment identically. Every
    # source (NumPy's global RNG, random, mytorch) is reseeded per worker.
    np.random.seed(0)
    batches = _epoch(mdata.DataLoader(WhoAmI(), batch_size=2, num_workers=2))
    for key in ("np", "py", "torch"):
        values = sum((b[key].tolist() for b in batches), [])
        assert len(set(values)) == len(values), key


def test_same_seed_same_batches_new_epoch_new_numbers() -> None:
    def run(seed: int) -> list:
        g = mytorch.Generator().manual_seed(seed)
        loader = mdata.DataLoader(WhoAmI(), batch_size=2, shuffle=True, num_workers=2, generator=g)
        return [[{k: v.tolist() for k, v in b.items() if k != "pid"} for b in _epoch(loader)] for _ in range(2)]

    a, b = run(7), run(7)
    assert a == b                          # same generator seed: same order, same augmentations
    assert a[0] != a[1]                    # the next epoch draws a new order and new seeds
    assert run(8) != a


def test_base_seed_comes_from_default_generator() -> None:
    mytorch.manual_seed(11)
    a = _epoch(mdata.DataLoader(WhoAmI(), batch_size=4, num_workers=2))
    mytorch.manual_seed(11)
    b = _epoch(mdata.DataLoader(WhoAmI(), batch_size=4, num_workers=2))
    assert [x["seed"].tolist() for x in a] == [x["seed"].tolist() for x in b]
    assert [x["np"].tolist() for x in a] == [x["np"].tolist() for x in b]


def test_worker_init_fn_runs_in_each_worker() -> None:
    def init(worker_id: int) -> None:
        info = mdata.get_worker_info()
        assert info is not None and info.id == worker_id and info.num_workers == 2
        np.random.seed(100 + worker_id)      # the user's own seeding wins over the loader's
        info.dataset.tag = f"w{worker_id}"

    class Tagged(WhoAmI):
        tag = "main"

        def __getitem__(self, i: int) -> dict:
            return {"tag": self.tag, "np": float(np.random.rand())}

    batches = _epoch(mdata.DataLoader(Tagged(), batch_size=2, num_workers=2, worker_init_fn=init))
    assert [b["tag"] for b in batches] == [["w0", "w0"], ["w1", "w1"]] * 2
    np.random.seed(100)
    assert batches[0]["np"].tolist() == [np.random.rand(), np.random.rand()]


def test_persistent_workers_survive_epochs() -> None:
    loader = mdata.DataLoader(WhoAmI(), batch_size=2, num_workers=2, persistent_workers=True)
    pids = [{int(p) for b in _epoch(loader) for p in b["pid"]} for _ in range(2)]
    assert pids[0] == pids[1] and len(pids[0]) == 2
    for b in loader:          # leave an epoch half-way: the next one starts cleanly
        break
    assert [b["i"].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    it = loader._iterator
    del loader, b
    assert it is not None and it._shutdown is False   # still referenced here
    it._shutdown_workers()
    assert not multiprocessing.active_children()


def test_persistent_workers_with_iterable_dataset() -> None:
    loader = mdata.DataLoader(_range_stream(mytorch), batch_size=3, num_workers=2, persistent_workers=True)
    first = [b.tolist() for b in loader]
    assert first == [b.tolist() for b in loader]
    assert sorted(sum(first, [])) == list(range(3, 20))


def test_prefetch_factor_bounds_tasks_in_flight() -> None:
    it = iter(mdata.DataLoader(WhoAmI(), batch_size=1, num_workers=2, prefetch_factor=3))
    assert it._send_idx == 6 and it._tasks_outstanding == 6
    next(it)
    assert it._send_idx == 7
    assert len(list(it)) == 7


def test_out_of_order_delivery_keeps_every_batch() -> None:
    loader = mdata.DataLoader(WhoAmI(), batch_size=1, num_workers=2, in_order=False)
    assert sorted(int(b["i"]) for b in loader) == list(range(8))


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods(method: str) -> None:
    ds = mdata.TensorDataset(mytorch.arange(6.0), mytorch.arange(6))
    loader = mdata.DataLoader(ds, batch_size=4, num_workers=1, multiprocessing_context=method)
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5]]


def test_tensors_pickle_between_processes() -> None:
    x = mytorch.arange(12.0).reshape(3, 4).t()        # a non-contiguous view
    ds = mdata.TensorDataset(x, mytorch.tensor([1, 2, 3, 4], dtype=mytorch.int16))
    a, b = next(iter(mdata.DataLoader(ds, batch_size=4, num_workers=1)))
    assert a.tolist() == x.tolist() and b.dtype == mytorch.int16


# ---------------------------------------------------------------------------------- pin_memory
def test_pin_memory_without_accelerator_warns_like_torch(no_cuda: None) -> None:
    for workers in (0, 2):
        mine = _warnings(lambda: list(mdata.DataLoader(DictData(), pin_memory=True, num_workers=workers)))
        theirs = _warnings(lambda: list(tdata.DataLoader(DictData(), pin_memory=True, num_workers=workers)))
        assert mine == theirs == ["'pin_memory' argument is set as true but no accelerator is found, "
                                  "then device pinned memory won't be used."]


class Batch:
    """A custom batch type (torch's docs example): pin_memory() is called on it."""

    def __init__(self, data: list) -> None:
        self.inp = mytorch.stack([d[0] for d in data])
        self.pinned = False

    def pin_memory(self) -> Batch:
        self.inp = self.inp.pin_memory()
        self.pinned = True
        return self


@pytest.mark.parametrize("workers", [0, 2])
def test_pin_memory_calls_custom_pin_memory(sim: None, workers: int) -> None:
    ds = mdata.TensorDataset(mytorch.arange(10.0).reshape(5, 2))
    loader = mdata.DataLoader(ds, batch_size=2, collate_fn=Batch, pin_memory=True, num_workers=workers)
    batches = list(loader)
    assert all(b.pinned for b in batches) and len(batches) == 3
    plain = list(mdata.DataLoader(ds, batch_size=2, collate_fn=Batch, num_workers=workers))
    assert not any(b.pinned for b in plain)


def test_pin_memory_walks_structures(sim: None) -> None:
    from mytorch.utils.data._utils.pin_memory import pin_memory

    seen = []

    class Spy:
        def pin_memory(self) -> str:
            seen.append(1)
            return "pinned"

    out = pin_memory({"a": (Spy(), [Spy(), "s"]), "t": mytorch.ones(2)})
    assert out["a"] == ("pinned", ["pinned", "s"]) and len(seen) == 2
    assert out["t"].tolist() == [1.0, 1.0]
