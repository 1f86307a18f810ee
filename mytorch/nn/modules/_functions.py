"""How ``register_full_backward_hook`` sees a module's input and output gradients.

A module's ``forward`` is a whole sub-graph of operations, so no single autograd node holds "the
gradient w.r.t. the module's inputs". Like torch's ``BackwardHook``, we wrap the tensors going in
and coming out in *identity* operations: their backward passes the gradient through unchanged, but
lets us catch it on the way.

mytorch's nodes have one output each, so each group of tensors (all inputs, or all outputs) is
wrapped as::

    x₁ ─┐                       ┌─ identity ─→ x₁'   (what forward sees)
    x₂ ─┼─→ hub (one node) ←────┼─ identity ─→ x₂'
        ┘                       └─ ...

Backward reaches every identity node before the hub (the engine runs a node only after all nodes
that feed it), so when the hub runs it holds every gradient of the group at once: it calls the
user's hooks with the whole tuple and hands the (possibly replaced) gradients on to ``x₁, x₂, …``.

An output that received no gradient (GRU's ``h_n`` when only ``out`` is used) reaches the hooks as
``None``, as in torch; an *input* without one reaches them as zeros (torch's hooks see inputs'
gradients after its identity function has filled the gaps). Zeros are handed on in both cases.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from ..._tensor import Tensor, make_view, wrap
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.graph import record

NAME = "BackwardHookFunctionBackward"


def _zeros_for_none(grads: Sequence[Any], tensors: Sequence[Tensor]) -> tuple:
    return tuple(t.new_zeros(t.shape) if g is None else g for g, t in zip(grads, tensors))


def _identity_group(tensors: Sequence[Tensor], on_grads: Callable[[tuple], tuple],
                    none_to_hooks: bool) -> list[Tensor]:
    """Aliases of ``tensors`` whose gradients reach ``on_grads`` together, as one tuple.

    ``on_grads(grads)`` receives one gradient per tensor and returns the gradients to pass on.
    A tensor that received none is ``None`` there when ``none_to_hooks`` (outputs), else zeros
    (inputs); whatever is handed on is a tensor (zeros for ``None``).
    """
    grads: list[Any] = [None] * len(tensors)
    zero = wrap(np.zeros((), dtype=np.float32))

    def hub_backward(_: Tensor) -> tuple:
        got = tuple(grads) if none_to_hooks else _zeros_for_none(grads, tensors)
        grads[:] = [None] * len(tensors)
        return _zeros_for_none(on_grads(got), tensors)

    hub = record(NAME, wrap(np.zeros((), dtype=np.float32)), tuple(tensors), hub_backward)
    out = []
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            out.append(t)
            continue

        def catch(g: Tensor, i: int = i) -> tuple:
            grads[i] = g
            return (zero,)

        out.append(record(NAME, make_view(t, t._data), (hub,), catch))
    return out


class BackwardHook:
    """Set up on each call of a module that has full backward (pre-)hooks."""

    def __init__(self, module: Any, user_hooks: list, user_pre_hooks: list) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = -1
        self.input_tensors_index: list[int] | None = None
        self.n_outputs = -1
        self.output_tensors_index: list[int] | None = None

    @staticmethod
    def _pack_with_none(indices: list[int], values: Sequence, size: int) -> tuple:
        res: list[Any] = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _apply_on_tensors(on_grads: Callable, args: tuple,
                          outputs: bool) -> tuple[tuple, list[int] | None]:
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = _identity_group(tensors, on_grads, none_to_hooks=outputs)
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return tuple(out), idx

    def setup_input_hook(self, args: tuple) -> tuple:
        """Wrap the tensor arguments; the user hooks run when their gradients are complete."""
        res, idx = self._apply_on_tensors(self._input_grads, args, outputs=False)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result: Any) -> Any:
        """Wrap the output tensor(s); their gradients become ``grad_output``."""
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(self._output_grads, args, outputs=True)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]

    def _input_grads(self, grads: tuple) -> tuple:
        if self.grad_outputs is None:  # the gradient did not come through the module's outputs
            return grads
        res = self._pack_with_none(self.input_tensors_index or [], grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_tensors_index or [])

    def _output_grads(self, grads: tuple) -> tuple:
        self.grad_outputs = self._pack_with_none(self.output_tensors_index or [], grads,
                                                 self.n_outputs)
        for pre_hook in self.user_pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(new)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = tuple(new)
        local = self.grad_outputs
        if self.input_tensors_index is None:  # no input requires grad: fire now
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_tensors_index or [])
