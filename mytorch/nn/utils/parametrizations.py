"""``nn.utils.parametrizations``: ready-made parametrizations (:mod:`.parametrize`).

``weight_norm(module)`` stores ``g`` and ``v`` (``original0``, ``original1``) and computes
``w = g · v / ‖v‖`` on each read: the current form of :mod:`.weight_norm`.

``spectral_norm(module)`` is the current form of spectral normalisation; the older
``nn.utils.spectral_norm`` (a forward pre-hook and ``weight_orig``/``weight_u``/``weight_v``
attributes) is kept by torch for old code only.

The weight is divided by an estimate of its largest singular value σ, kept up to date by one
step of *power iteration* per read in training mode (vectors ``_u``, ``_v`` stored as buffers)::

    u = normalize(W v),   v = normalize(Wᵀ u),   σ ≈ uᵀ W v
"""
from __future__ import annotations

from typing import Any, TypeVar

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .._functional.normalization import normalize
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["spectral_norm", "weight_norm"]

T_module = TypeVar("T_module", bound=Module)


class _SpectralNorm(Module):
    """``W / σ(W)``, with σ estimated by power iteration (``W`` flattened to a matrix with
    ``dim`` as its rows)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)  # start from a good estimate

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Improve ``_u`` and ``_v`` in place (no graph: they are estimates, not functions of W)."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u = normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                self._v = normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:  # a vector: its spectral norm is its length
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # backward needs these values, not later ones
        sigma = u.vdot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        """Any ``W`` is a fine stored value (assigning a weight stores it as it is)."""
        return value


def spectral_norm(module: T_module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> T_module:
    """Parametrize ``module.<name>`` as ``W / σ(W)``; returns ``module``.

    The trained tensor is ``module.parametrizations.<name>.original``; ``dim`` (the output
    dimension) defaults to 0, or 1 for transposed convolutions. Undo it with
    ``nn.utils.parametrize.remove_parametrizations(module, name)``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _WeightNorm(Module):
    """``g · v / ‖v‖`` from the two stored tensors; assigning ``w`` stores ``(‖w‖, w)``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Parametrize ``module.<name>`` as ``g · v / ‖v‖`` (``parametrizations.<name>.original0``
    is ``g``, ``original1`` is ``v``); returns ``module``. A state dict saved with the older
    ``weight_g``/``weight_v`` names still loads."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict: dict, prefix: str, local_metadata: Any, strict: bool,
                                 missing_keys: list, unexpected_keys: list,
                                 error_msgs: list) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module
