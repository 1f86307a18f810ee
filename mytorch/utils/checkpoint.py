"""Gradient checkpointing: trade compute for memory.

``checkpoint(f, x)`` runs ``f`` *without* recording a graph, so none of its intermediate tensors are
kept. During backward it runs ``f`` again, this time recording, and back-propagates through that
fresh graph. Memory for the block's activations is paid only while its backward runs, at the price
of a second forward pass. The random-number state is saved and restored so that random ops
(dropout) draw the same numbers both times.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad

__all__ = ["checkpoint", "checkpoint_sequential"]


def noop_context_fn() -> tuple:
    return contextlib.nullcontext(), contextlib.nullcontext()


class CheckpointFunction(Function):
    """Forward without a graph; backward = recompute with a graph, then back-propagate."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        from ..random import get_rng_state

        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.save_for_backward(*(a for a in args if _is_tensor(a)))
        ctx.args = [None if _is_tensor(a) else a for a in args]
        return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        from .. import autograd
        from ..random import get_rng_state, set_rng_state

        saved = iter(ctx.saved_tensors)
        inputs = []
        for a in ctx.args:
            if a is None:
                t = next(saved)
                a = t.detach().requires_grad_(t.requires_grad)
            inputs.append(a)
        now = get_rng_state()
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)
        try:
            with enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            set_rng_state(now)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads)
                 if _is_tensor(o) and o.requires_grad and g is not None]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if _is_tensor(a) else None for a in inputs)


def _is_tensor(x: Any) -> bool:
    from .._tensor import Tensor

    return isinstance(x, Tensor)


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """Run ``function(*args)`` without keeping its activations; recompute them in backward."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is recommended, "
                      "but if you need to preserve the current default behavior, you can pass "
                      "use_reentrant=True. Refer to docs for more details on the differences "
                      "between the two variants.", UserWarning, stacklevel=2)
    if kwargs:
        if use_reentrant is not False:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(lambda *a: function(*a, **kwargs), preserve_rng_state,
                                        *args)
    return CheckpointFunction.apply(function, preserve_rng_state, *args)


def checkpoint_sequential(functions: Any, segments: int, input: Any, use_reentrant: bool | None = None,
                          **kwargs: Any) -> Any:
    """Split a sequence of functions (modules) into ``segments`` checkpointed chunks."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = max(1, len(functions) // segments)
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start:end + 1]

        def run(x: Any, chunk: list = chunk) -> Any:
            for f in chunk:
                x = f(x)
            return x

        input = checkpoint(run, input, use_reentrant=True if use_reentrant is None else
                           use_reentrant, **kwargs)
    for f in functions[end + 1:]:
        input = f(input)
    return input
