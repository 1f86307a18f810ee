"""Random number generators: ``Generator``, ``manual_seed`` and the default generator.

A ``Generator`` owns a NumPy bit generator (``PCG64``) and hands out draws to the random
operations in ``_ops/random_ops.py``. Seeding it makes every later draw reproducible::

    mytorch.manual_seed(0); a = mytorch.rand(3)
    mytorch.manual_seed(0); b = mytorch.rand(3)      # a and b are equal

**Same seed, same numbers — within mytorch only.** PyTorch's CPU generator is a Mersenne
Twister (mt19937) and its kernels turn raw bits into floats in their own order (vectorised
blocks, Box–Muller for normals...). Reproducing that bit-for-bit would mean re-implementing
those kernels in Python, slowly; the book does not need it. So ``mytorch.manual_seed(0)``
gives a different (but equally good, and equally reproducible) stream than ``torch.manual_seed(0)``.

Random numbers for CUDA tensors are drawn on the host and copied to the device, as torch does
per device: each CUDA device has its own default generator (``device_generator``), seeded by
``manual_seed`` together with the CPU's, so one seed reproduces every device's stream, and the
same seed gives the same numbers on a real GPU and on the simulated one.
"""
from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._device import device as _device
from ._tensor import Tensor, wrap

__all__ = ["Generator", "default_generator", "get_rng_state", "initial_seed", "manual_seed",
           "seed", "set_rng_state", "fork_rng"]

_INITIAL_SEED = 67280421310721  # torch's default_rng_seed_val

_U64 = 2 ** 64
# Layout of a serialized state: PCG64's 128-bit state and increment, the cached half of a
# 64-bit draw (flag + value), then the initial seed — five unsigned 64-bit words + padding.
_STATE_BYTES = 16 + 16 + 8 + 8 + 8


class Generator:
    """A source of random numbers with its own state (``torch.Generator``).

    Pass one as ``generator=`` to a random op to draw from it instead of the default
    generator — e.g. to keep data shuffling reproducible independently of weight init.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = _device("cuda", 0)
        if self.device.type not in ("cpu", "cuda"):
            raise RuntimeError(f"{self.device.type.upper()} device type not an accelerator.")
        self.manual_seed(_INITIAL_SEED)

    # ------------------------------------------------------------------ seeding
    def manual_seed(self, seed: Any) -> Generator:
        """Reset the state from ``seed`` (any int in [-2**63, 2**64)); returns ``self``."""
        seed = int(seed)
        if not -2 ** 63 <= seed < _U64:
            raise ValueError("Overflow when unpacking long long")
        self._seed = seed % _U64
        self._np = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed used."""
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    # ------------------------------------------------------------------ state
    def get_state(self) -> Any:
        """The full state as a ``uint8`` tensor; ``set_state`` of it continues the same stream."""
        st = self._np.bit_generator.state
        words = (st["state"]["state"], st["state"]["inc"])
        raw = b"".join(w.to_bytes(16, "little") for w in words)
        raw += int(st["has_uint32"]).to_bytes(8, "little")
        raw += int(st["uinteger"]).to_bytes(8, "little")
        raw += self._seed.to_bytes(8, "little")
        return wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state produced by ``get_state``; returns ``self``."""
        if not isinstance(new_state, Tensor) or new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = new_state._host().tobytes()
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size {_STATE_BYTES} but found "
                               f"the input RNG state size to be {len(raw)}")
        word = lambda a, b: int.from_bytes(raw[a:b], "little")  # noqa: E731
        bitgen = np.random.PCG64()
        bitgen.state = {"bit_generator": "PCG64",
                        "state": {"state": word(0, 16), "inc": word(16, 32)},
                        "has_uint32": word(32, 40), "uinteger": word(40, 48)}
        self._np = np.random.Generator(bitgen)
        self._seed = word(48, 56)
        return self

    def __repr__(self) -> str:
        return f"<mytorch.Generator object at {hex(id(self))}>"


default_generator = Generator()
default_generator.seed()  # like torch: a fresh, non-deterministic seed in every process

#: the default generator of each CUDA device, made on first use (``mytorch.cuda.default_generators``)
_device_generators: dict[int, Generator] = {}
#: what a device generator made later starts from: the last ``manual_seed`` / ``seed`` of all devices
_devices_seed = [_INITIAL_SEED]


def device_generator(index: int) -> Generator:
    """The default generator of ``cuda:index``: its own stream, seeded like torch's (the fixed
    initial seed, then whatever ``manual_seed`` / ``mytorch.cuda.manual_seed`` last set)."""
    g = _device_generators.get(index)
    if g is None:
        g = _device_generators[index] = Generator(f"cuda:{index}").manual_seed(_devices_seed[0])
    return g


def manual_seed(seed: Any) -> Generator:
    """Seed the default generator of the CPU and of every CUDA device; returns the CPU's."""
    default_generator.manual_seed(seed)
    _devices_seed[0] = default_generator.initial_seed()
    for g in _device_generators.values():
        g.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed every default generator non-deterministically (one new seed); returns it."""
    s = _devices_seed[0] = default_generator.seed()
    for g in _device_generators.values():
        g.manual_seed(s)
    return s


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    """The default generator's state as a ``uint8`` tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    """Restore the default generator's state from ``get_rng_state()``."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices: Any = None, enabled: bool = True, **_: Any) -> Iterator[None]:
    """Run a block with the default generator, then put its state back as it was."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
