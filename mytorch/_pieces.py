"""Pieces: the small functions of mytorch that students write themselves.

Every exercise of the book is a *piece* of the library: a function that mytorch itself calls at one
point of its core (the engine's traversal, a backward formula, a convolution, an optimizer step, ...).
The reference implementation lives in the module where it belongs, marked with :func:`piece`; the
library calls it through the registry, ``pieces.<name>(...)``, never directly, so that
``mytorch.use_mine()`` can swap a student's version in (see ``mytorch/mine.py``).

This module is the bottom of the stack: it imports nothing from mytorch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Piece", "REGISTRY", "pieces", "piece", "STUB_MESSAGE"]

#: The line ``make exercises`` puts where a piece's body was; a piece still holding it is a stub.
STUB_MESSAGE = "请完成这个练习 / Complete this exercise"


@dataclass
class Piece:
    """One piece: its reference code, the exercise that asks for it, and what runs now."""

    name: str
    exercise: str                      # "02.4": chapter 02, exercise 4
    reference: Callable[..., Any]      # the readable implementation shown in the solutions
    fast: Callable[..., Any] | None = None   # a fused kernel used while the reference is active
    wrap: Callable[[Callable], Callable] | None = None  # makes another version behave as the op
    module: str = ""                   # where the reference lives, e.g. "mytorch.autograd.engine"
    status: str = "reference"          # reference | mine | stub | error
    mine: Callable[..., Any] | None = None   # the student's function, when one is switched on
    source: str = ""                   # the file the student's version came from
    note: str = ""                     # why a student's version was not used (error text)
    extra: dict = field(default_factory=dict)

    @property
    def chapter(self) -> int:
        return int(self.exercise.split(".")[0])

    def __post_init__(self) -> None:
        #: what the library runs when no student's version is switched on
        self.default = self.fast if self.fast is not None else \
            self.wrap(self.reference) if self.wrap is not None else self.reference


class _Active:
    """The implementation of every piece that runs now, as attributes: ``pieces.unbroadcast(g, s)``."""

    def __repr__(self) -> str:
        return f"<mytorch pieces: {', '.join(sorted(REGISTRY))}>"


#: name -> Piece, in the order the library defines them
REGISTRY: dict[str, Piece] = {}
pieces = _Active()


#: Student versions read before the module defining their piece was imported (name -> args).
_PENDING: dict[str, tuple] = {}
_ON_REGISTER: list[Callable[[str, tuple], None]] = []


def piece(exercise: str, *, fast: Callable[..., Any] | None = None,
          wrap: Callable[[Callable], Callable] | None = None,
          name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as the reference implementation of a piece (exercise ``"CC.N"``).

    The function is returned unchanged (it stays importable and testable as itself); the library
    calls whatever ``pieces.<name>`` holds. ``fast`` is an optional fused kernel with the same
    contract, run instead of the reference while no student's version is switched on; ``wrap``
    turns any other version (the readable reference, a student's) into something that behaves
    like the fast one (e.g. one graph node named as torch names it).
    """
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        key = name or fn.__name__
        if key in REGISTRY:
            raise ValueError(f"piece {key!r} is defined twice ({REGISTRY[key].module} and "
                             f"{fn.__module__})")
        REGISTRY[key] = Piece(key, exercise, fn, fast, wrap, fn.__module__)
        setattr(pieces, key, REGISTRY[key].default)
        if key in _PENDING:
            for hook in _ON_REGISTER:
                hook(key, _PENDING.pop(key))
        return fn
    return register


def set_pending(name: str | None, args: tuple | None) -> None:
    """Remember a student's version of a piece not registered yet (``None``: forget all)."""
    if name is None:
        _PENDING.clear()
    else:
        _PENDING[name] = args  # type: ignore[assignment]


def activate(name: str, fn: Callable[..., Any] | None) -> None:
    """Run ``fn`` for piece ``name`` from now on; ``None`` goes back to the library's own."""
    p = REGISTRY[name]
    setattr(pieces, name, p.default if fn is None else fn)
