"""gradcheck / gradgradcheck: compare autograd's Jacobian with finite differences.

For a function ``f`` of tensors, the Jacobian ``J[k, m] = d out_m / d in_k`` can be estimated
without any calculus: nudge input element ``k`` by ``±eps`` and look at how every output moves,
``(f(x + eps) - f(x - eps)) / (2 eps)`` (central differences, error ``O(eps²)``). Autograd gives
the same matrix one row per output element: backward with a one-hot ``grad_output``. In float64
both agree to about 1e-7; in float32 rounding swamps the difference quotient, hence the warning.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Sequence

import numpy as np

from .._creation import zeros
from .._dtype import float64
from .._ops.shape import cat, stack
from .._pieces import piece, pieces
from .._tensor import Tensor
from .api import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical Jacobians differ."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(out: Any) -> list:
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _host(t: Any) -> np.ndarray:
    """A float64 *copy* (outputs may be views of the very input being perturbed)."""
    return np.array(t.detach()._host(), dtype=np.float64).reshape(-1)


@piece("02.7")
def numerical_jacobian(f: "Callable", x: "Tensor", eps: float = 1e-6) -> "Tensor":
    """``d f(x) / d x`` by central differences, a float64 tensor of ``x.numel()`` rows and
    ``f(x).numel()`` columns: row ``k`` is ``(f(x + eps e_k) - f(x - eps e_k)) / (2 eps)``, where
    element ``k`` of ``x`` is nudged in place (and put back)."""
    xd = x.data      # x's memory; unlike detach(), writes here do not count as in-place changes
    rows = []
    for k in np.ndindex(*x.shape):
        old = xd[k].item()
        xd[k] = old + eps
        plus = f(x).detach().double().reshape(-1).clone()
        xd[k] = old - eps
        minus = f(x).detach().double().reshape(-1).clone()
        xd[k] = old
        rows.append((plus - minus) / (2 * eps))
    return stack(rows)


def _numerical_jacobians(func: Callable, inputs: tuple, eps: float) -> list[list[np.ndarray]]:
    """``J[j][i]``: (numel of input j) × (numel of output i), from the piece
    :func:`numerical_jacobian` applied to all outputs at once."""
    sizes = [o.numel() for o in _differentiable_outputs(func(*inputs))]

    def all_outputs(_: Any) -> "Tensor":
        outs = _differentiable_outputs(func(*inputs))
        return cat([o.detach().double().reshape(-1) for o in outs]) if outs else \
            zeros(0, dtype=float64)

    jac = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x._requires_grad):
            continue
        if x.numel() == 0 or sum(sizes) == 0:
            jac.append([np.zeros((x.numel(), n)) for n in sizes])
            continue
        full = pieces.numerical_jacobian(all_outputs, x, eps).detach().cpu().numpy()
        bounds = np.cumsum([0] + sizes)
        jac.append([full[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])])
    return jac


def analytical_jacobian(outputs: list, inputs: tuple) -> list[list[np.ndarray]]:
    """The same matrices from autograd: one backward per output element (a one-hot grad)."""
    diff = [x for x in inputs if isinstance(x, Tensor) and x._requires_grad]
    jac = [[np.zeros((x.numel(), o.numel())) for o in outputs] for x in diff]
    for i, out in enumerate(outputs):
        if not out._requires_grad:
            continue
        for m in range(out.numel()):
            onehot = zeros(tuple(out.shape), dtype=out.dtype, device=out.device)  # contiguous:
            onehot._data.reshape(-1)[m] = 1  # (the reshape is a view we can write through)
            gs = grad(out, diff, onehot, retain_graph=True, allow_unused=True)
            for j, g in enumerate(gs):
                if g is not None:
                    jac[j][i][:, m] = _host(g)
    return jac


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """True when autograd's gradients of ``func`` at ``inputs`` match finite differences.

    Use float64 inputs with ``requires_grad=True``; on a mismatch, raise :class:`GradcheckError`
    showing both Jacobians (or return False with ``raise_exception=False``).
    """
    inputs = _as_tuple(inputs)
    if not any(isinstance(x, Tensor) and x._requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x._requires_grad and x.dtype.name not in ("float64",
                                                                              "complex128"):
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are not "
                          "of double precision floating point or complex. ", UserWarning,
                          stacklevel=2)
    outputs = _differentiable_outputs(func(*inputs))
    numerical = _numerical_jacobians(func, inputs, eps)
    analytical = analytical_jacobian(outputs, inputs)
    for j, (num_j, ana_j) in enumerate(zip(numerical, analytical)):
        for i, (n, a) in enumerate(zip(num_j, ana_j)):
            if n.shape == a.shape and np.allclose(a, n, rtol=rtol, atol=atol):
                continue
            if not raise_exception:
                return False
            raise GradcheckError(f"Jacobian mismatch for output {i} with respect to input {j},\n"
                                 f"numerical:{n}\nanalytical:{a}\n")
    return True


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Sequence | None = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """gradcheck of the *backward* of ``func``: are second derivatives right too?

    The gradients of ``func`` (computed with ``create_graph=True`` for random ``grad_outputs``)
    are themselves a function of the inputs and the ``grad_outputs``; gradcheck that function.
    """
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in _differentiable_outputs(func(*inputs)):
            g = Tensor._wrap(rng.standard_normal(tuple(o.shape)).astype(o._data.dtype))
            grad_outputs.append(g.to(o.device).requires_grad_())
    grad_outputs = tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivatives(*args: Any) -> tuple:
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _differentiable_outputs(func(*ins)) if o._requires_grad]
        diff = [x for x in ins if isinstance(x, Tensor) and x._requires_grad]
        gs = grad(outs, diff, list(gos[:len(outs)]), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
