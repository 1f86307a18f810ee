"""Random numbers on CUDA devices: one default generator per device (``torch.cuda.random``).

``mytorch.manual_seed(s)`` seeds the CPU and every device; the functions here touch only the
CUDA generators: ``manual_seed`` the current device's, ``manual_seed_all`` every device's. As in
torch, seeding without a GPU is silently accepted (torch queues it until CUDA starts), so the same
training script runs on a laptop and on a GPU machine.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import random as _random
from .._tensor import Tensor
from ._lazy import backend, backend_or_none, device_index

__all__ = ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "get_rng_state_all", "set_rng_state", "set_rng_state_all", "default_generators"]


def _all_indices() -> range:
    b = backend_or_none()
    return range(0 if b is None else b.device_count())


def default_generators() -> tuple[_random.Generator, ...]:
    """The default generator of every CUDA device (empty without one), like
    ``torch.cuda.default_generators``."""
    return tuple(_random.device_generator(i) for i in _all_indices())


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator; ignored without CUDA (as in torch)."""
    seed = int(seed)
    if backend_or_none() is not None:
        _random.device_generator(device_index(None)).manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every CUDA device; ignored without CUDA."""
    seed = int(seed)
    for i in _all_indices():
        _random.device_generator(i).manual_seed(seed)


def seed() -> None:
    """Seed the current device's generator from the OS's entropy; ignored without CUDA."""
    if backend_or_none() is not None:
        _random.device_generator(device_index(None)).seed()


def seed_all() -> None:
    """One fresh random seed for every CUDA device's generator; ignored without CUDA."""
    gens = default_generators()
    if gens:
        s = gens[0].seed()
        for g in gens[1:]:
            g.manual_seed(s)


def initial_seed() -> int:
    """The seed of the current device's generator."""
    backend()
    return _random.device_generator(device_index(None)).initial_seed()


def get_rng_state(device: Any = "cuda") -> Tensor:
    """The state of one device's generator as a ``uint8`` tensor (on the CPU, like torch)."""
    backend()
    return _random.device_generator(device_index(device)).get_state()


def get_rng_state_all() -> list[Tensor]:
    return [g.get_state() for g in default_generators()]


def set_rng_state(new_state: Tensor, device: Any = "cuda") -> None:
    """Restore one device's generator; ignored without CUDA (torch defers it)."""
    if backend_or_none() is not None:
        _random.device_generator(device_index(device)).set_state(new_state)


def set_rng_state_all(new_states: Iterable[Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
