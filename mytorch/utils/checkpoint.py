"""Gradient checkpointing: trade compute for memory.

``checkpoint(f, x)`` keeps none of the intermediate tensors of ``f``: during backward, ``f`` runs a
second time, and its fresh graph is back-propagated. The block's activations then take memory only
while its backward runs; the price is one more forward pass. The random-number state is saved and
restored so that random ops (dropout) draw the same numbers both times. The inputs are kept.

Two variants, as in torch:

* ``use_reentrant=False`` (recommended): ``f`` runs with autograd on and records its normal graph
  (the output's ``grad_fn`` is, say, ``ExpBackward0``), but inside ``saved_tensors_hooks`` whose
  pack hook keeps only a handle of every tensor an op saves for backward. The first node whose
  backward needs a saved tensor unpacks it: that runs ``f`` again, collecting the tensors saved
  this time in the same order. So it works inside ``autograd.grad``, ``backward(inputs=...)`` and
  ``create_graph=True``, like any graph.
* ``use_reentrant=True``: an ``autograd.Function`` that runs ``f`` under ``no_grad``; its backward
  calls ``backward()`` again (re-entering the engine), which accumulates straight into the
  parameters' ``.grad``. If no input requires grad, the output does not either.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

from .._pieces import piece, pieces
from .._tensor import Tensor, is_tensor
from ..autograd.engine import is_checkpoint_valid
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad
from ..autograd.graph import saved_tensors_hooks
from ..random import get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation did not produce what the forward pass produced."""


def noop_context_fn() -> tuple:
    return contextlib.nullcontext(), contextlib.nullcontext()


_WARN_DEFAULT = ("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                 "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
                 "exception. use_reentrant=False is recommended, but if you need to preserve the "
                 "current default behavior, you can pass use_reentrant=True. Refer to docs for "
                 "more details on the differences between the two variants.")


# ============================================================================ use_reentrant=True
def _checked(cls: type) -> type:
    """A CheckpointFunction that refuses to run inside ``autograd.grad`` (as torch's does)."""
    def backward(ctx: Any, *grads: Any) -> tuple:
        if not is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible "
                               "with .grad() or passing an `inputs` parameter to .backward(). To "
                               "resolve this error, you can either set use_reentrant=False, or "
                               "call .backward() without passing the `inputs` argument.")
        return cls.backward(ctx, *grads)

    return type(cls)(cls.__name__, (cls,), {"backward": staticmethod(backward),
                                            "__doc__": cls.__doc__})


@piece("02.6", wrap=_checked)
class CheckpointFunction(Function):
    """Run ``run_function(*args)`` without recording a graph; in backward, run it again with
    recording and back-propagate through that fresh graph: memory traded for compute."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.save_for_backward(*[a for a in args if is_tensor(a)])
        ctx.args = [None if is_tensor(a) else a for a in args]  # the others, as they are
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        saved = iter(ctx.saved_tensors)
        inputs = [a for a in ctx.args]
        for i, a in enumerate(inputs):
            if a is None:                      # a tensor: a fresh leaf with the same values
                t = next(saved)
                inputs[i] = t.detach().requires_grad_(t.requires_grad)
        now = get_rng_state()
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)       # draw the same random numbers as forward did
        with enable_grad():
            outputs = ctx.run_function(*inputs)
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            pairs = [(o, g) for o, g in zip(outputs, grads) if is_tensor(o) and o.requires_grad]
            if not pairs:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                                   "not necessary")
            total = sum((o * g).sum() for o, g in pairs)  # its backward = backward(outputs, grads)
        set_rng_state(now)
        total.backward()
        return (None, None) + tuple(a.grad if is_tensor(a) else None for a in inputs)


# ============================================================================ use_reentrant=False
class _Recompute:
    """One checkpointed call: the handles its saved tensors were packed into, and (after the first
    backward that needs one) the tensors recomputed for them, matched by order of saving."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict, rng_state: Any,
                 context: Any) -> None:
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng_state, self.context = rng_state, context
        self.count = 0
        self.tensors: list | None = None

    def pack(self, t: Any) -> int:
        self.count += 1
        return self.count - 1  # a handle: nothing of the tensor is kept

    def unpack(self, index: int) -> Any:
        if self.tensors is None:
            self.tensors = self._rerun()
        return self.tensors[index]

    def _rerun(self) -> list:
        """Run the function again, recording, and keep (in order) every tensor its ops save."""
        saved: list = []

        def keep(t: Any) -> Any:
            saved.append(t.detach())
            return None

        args = [a.detach().requires_grad_(a.requires_grad) if _is_tensor(a) else a
                for a in self.args]
        with _rng_restored(self.rng_state), enable_grad(), self.context, \
                saved_tensors_hooks(keep, lambda _: None):
            self.function(*args, **self.kwargs)
        if len(saved) != self.count:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {self.count}\n"
                f"Number of tensors saved during recomputation: {len(saved)}")
        return saved


def _checkpoint_without_reentrant(function: Callable, preserve_rng_state: bool,
                                  context_fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Run ``function`` with its normal graph, but pack every tensor its ops save into a handle:
    nothing is kept, and the first backward that needs a saved tensor recomputes them all."""
    forward_ctx, recompute_ctx = context_fn()
    rng_state = get_rng_state() if preserve_rng_state else None
    frame = _Recompute(function, args, kwargs, rng_state, recompute_ctx)
    with forward_ctx, saved_tensors_hooks(frame.pack, frame.unpack):
        return function(*args, **kwargs)


# ============================================================================ shared helpers
@contextlib.contextmanager
def _rng_restored(state: Any) -> Any:
    """Run a block with the random-number state of the forward pass, then put the current back."""
    if state is None:
        yield
        return
    now = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(now)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


# ============================================================================ the public API
def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args, **kwargs)`` without keeping its activations; recompute them in
    backward. ``use_reentrant=False`` is the variant to use (see the module's docstring)."""
    if use_reentrant is None:
        warnings.warn(_WARN_DEFAULT, UserWarning, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return pieces.CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Split a sequence of functions (modules) into ``segments`` checkpointed chunks; the last
    chunk runs normally (its activations are needed right away by backward)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter "
                      "should be passed explicitly. In version 2.9 we will raise an exception if "
                      "use_reentrant is not passed. use_reentrant=False is recommended, but if "
                      "you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences "
                      "between the two variants.", UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start:end + 1]

        def run(x: Any, chunk: list = chunk) -> Any:
            for f in chunk:
                x = f(x)
            return x

        input = checkpoint(run, input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    for f in functions[end + 1:]:
        input = f(input)
    return input
