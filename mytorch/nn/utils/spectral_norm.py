"""``spectral_norm(module)``: keep a layer's weight at spectral norm (largest singular value) 1.

``W_SN = W / σ(W)``. Computing σ exactly (an SVD) at every step would be slow, so σ is estimated
by *power iteration*: two vectors ``u`` and ``v`` are kept between calls (buffers ``weight_u``,
``weight_v``) and improved by one step per training forward::

    v = normalize(Wᵀ u),   u = normalize(W v),   σ ≈ uᵀ W v

The learnable tensor becomes the parameter ``weight_orig``; ``weight`` is recomputed from it by a
forward pre-hook before each call (power iteration only in training mode).
"""
from __future__ import annotations

from typing import Any, TypeVar

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


def _normalize_(vec: Tensor, into: Tensor | None, eps: float) -> Tensor:
    """``vec / max(‖vec‖, eps)``, written into ``into`` when given (torch's ``out=``)."""
    res = vec / vec.norm().clamp_min(eps)
    if into is None:
        return res
    into._data[...] = res._data
    into._bump()
    return into


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_orig``."""

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``dim`` first, everything else flattened: an ``(h, w)`` matrix."""
        mat = weight
        if self.dim != 0:
            mat = mat.permute(self.dim, *[d for d in range(mat.dim()) if d != self.dim])
        return mat.reshape(mat.size(0), -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = _normalize_(mat.t().mv(u), v, self.eps)
                    u = _normalize_(mat.mv(v), u, self.eps)
                # clones: the buffers change in place next time, but backward needs these values
                u, v = u.clone(), v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = _normalize_(weight.new_empty(h).normal_(0, 1), None, fn.eps)
            v = _normalize_(weight.new_empty(w).normal_(0, 1), None, fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)  # a plain attribute, overwritten by each forward
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> T_module:
    """Apply spectral normalisation to ``module.<name>``; returns ``module``.

    ``dim`` (the output dimension) defaults to 0, or 1 for transposed convolutions.
    """
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d",
                                             "ConvTranspose3d") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`spectral_norm`: ``<name>`` becomes an ordinary parameter again (W / σ)."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
