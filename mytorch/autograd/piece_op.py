"""Running a piece written with tensor ops as if it were the library's fused op.

Some pieces (a convolution, a batch normalisation) have a fast fused kernel in the library with
one graph node named as torch names it (``ConvolutionBackward0``). A student's version — or the
readable reference — is written with ordinary tensor ops, which would leave a chain of small
nodes instead. :func:`as_op` makes such a version behave like the op it replaces: the forward
value comes from the piece run without recording, and one node called ``name`` takes the
gradient by running the piece again under autograd during backward (what checkpointing does).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from .._tensor import Tensor
from .._tensor import wrap as tensor_of
from .engine import run_backward
from .grad_mode import STATE, enable_grad, no_grad
from .graph import SavedOutput, depends_on, record, record_outputs

__all__ = ["as_op"]


def _differentiable(t: Any) -> bool:
    """An output that can carry a gradient (integer outputs, such as max-pool indices, cannot)."""
    return isinstance(t, Tensor) and (t.is_floating_point() or t.is_complex())


def as_op(name: str, state: Sequence[int] = (),
          saves_output: bool = False) -> Callable[[Callable], Callable]:
    """A ``wrap`` for :func:`mytorch._pieces.piece`: one node called ``name`` per call.

    ``state``: positions of tensor arguments the piece only *updates* in place (a batch norm's
    running statistics). The output's gradient does not depend on them, so the node neither
    saves them (a later in-place update before backward is no error, as in torch) nor lets the
    backward's re-run of the piece touch them: it gets copies.

    ``saves_output``: torch's node keeps the op's result for its backward (``logsumexp``), so
    changing the result in place before backward is an error there; the node checks it too.
    """
    second = name.replace("Backward0", "BackwardBackward0")

    def wrap(fn: Callable) -> Callable:
        def op(*args: Any, **kwargs: Any) -> Any:
            diff = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a._requires_grad]
            if not STATE.enabled or not diff:
                return fn(*args, **kwargs)
            with no_grad():
                out = fn(*args, **kwargs)
            several = isinstance(out, (tuple, list))
            outs = list(out) if several else [out]
            keep = [k for k, o in enumerate(outs) if _differentiable(o)]
            if any(outs[k]._base is not None for k in keep):
                # a view the piece returned (``squeeze`` at its end), made under no_grad: the op's
                # output is a tensor of its own, as torch's is, not a view an in-place change of
                # which torch would refuse as "created in no_grad mode"
                for k in keep:
                    if outs[k]._base is not None:
                        outs[k] = tensor_of(outs[k]._data, outs[k]._device)
                out = (type(out)(*outs) if hasattr(out, "_fields") else type(out)(outs)) if several \
                    else outs[0]
            multi = len(keep) > 1  # the node has several outputs (else its grad comes alone)
            tensors = tuple(a for i, a in enumerate(args) if isinstance(a, Tensor) and i not in state)
            if saves_output:
                tensors += tuple(SavedOutput(outs[k], j) for j, k in enumerate(keep))

            def backward(grads: Any) -> tuple:
                grads = list(grads) if multi else [grads]
                create = STATE.enabled
                # Differentiable inputs are re-run as fresh leaves (or as themselves, to build a
                # graph for create_graph); other tensors as copies, so in-place updates inside
                # the piece (running statistics) do not happen twice.
                again = list(args)
                for i, a in enumerate(args):
                    if isinstance(a, Tensor):
                        again[i] = a if (create and i in diff) else \
                            (a.detach().requires_grad_() if i in diff else a.detach().clone())
                with enable_grad():
                    ys = fn(*again, **kwargs)
                ys = list(ys) if several else [ys]
                ys = [ys[k] for k in keep]
                pairs = [(y, g if g is not None else y.new_zeros(y.shape))
                         for y, g in zip(ys, grads) if isinstance(y, Tensor) and y._requires_grad]
                res = run_backward([y for y, _ in pairs], [g for _, g in pairs], create, create,
                                   inputs=[again[i] for i in diff], allow_unused=True) \
                    if pairs else (None,) * len(diff)
                full: list = [None] * len(args)
                for i, g in zip(diff, res):
                    # torch's fused backward ops read their inputs: under create_graph a gradient
                    # stays a function of them (derivative zero where it does not really depend)
                    full[i] = depends_on(g, args[i], second) if create and g is not None \
                        and not g._requires_grad else g
                return tuple(full)

            if multi:
                record_outputs(name, [outs[k] for k in keep], args, backward, saved=tensors)
            elif keep:
                record(name, outs[keep[0]], args, backward, saved=tensors)
            return out

        op.__wrapped__ = fn  # type: ignore[attr-defined]
        op.__name__ = getattr(fn, "__name__", name)
        return op
    return wrap
