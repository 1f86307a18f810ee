"""torch's top-level spellings of operations mytorch has under another name, and a few small
functions composed from existing ops.

torch exposes many Tensor methods as functions too (``torch.relu_(x)``, ``torch.detach(x)``) and
many ``torch.nn.functional`` ops at the top level (``torch.conv2d``, ``torch.layer_norm``).
``bind_torch_functions`` adds those spellings to the ``mytorch`` namespace from the one
implementation each already has, instead of a second copy. ``diff``, ``deg2rad``, ``logaddexp``,
``cdist``, ``isin``, ``cartesian_prod`` and ``block_diag`` are written with public ops, so their
gradients come from those ops' rules.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mytorch as torch

from . import _creation, _dtype
from ._storage import TypedStorage, UntypedStorage
from ._tensor import Tensor
from .nn import functional as F
from .nn._functional import activation as _act
from .nn.utils.weight_norm import _weight_norm, norm_except_dim

__all__ = ["bind_torch_functions"]

# torch.<name>(input, *args) is input.<name>(*args) for these
_METHOD_FUNCTIONS = """abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_
as_strided_ asin_ asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ detach
detach_ erf_ exp2_ exp_ expm1_ fix_ floor_ frac_ is_inference is_signed log10_ log1p_ log2_ log_
logit_ nan_to_num_ neg_ negative_ reciprocal_ resize_as_ round_ rsqrt_ sigmoid_ sin_ sinh_ sqrt_
square_ tan_ tanh_ trunc_ is_conj is_neg resolve_conj resolve_neg is_same_size""".split()

# torch.<name> is torch.nn.functional.<name> (same parameters in the same order)
_FUNCTIONAL = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d avg_pool1d
adaptive_avg_pool1d max_pool1d max_pool2d max_pool3d max_pool1d_with_indices pixel_shuffle
pixel_unshuffle prelu cosine_similarity pairwise_distance layer_norm rms_norm group_norm""".split()


def _method_as_function(name: str) -> Callable:
    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)``: the same as ``input.{name}(...)``."
    return fn


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """torch.dropout: ``nn.functional.dropout`` with torch's positional ``train`` flag."""
    return F.dropout(input, p, train)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """torch.embedding: the rows of ``weight`` at ``indices`` (weight first, as aten has it)."""
    return F.embedding(indices, weight, padding_idx=None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _directional_split(name: str, dim: int, min_dims: int) -> Callable:
    def split(input: Tensor, indices_or_sections: Any) -> tuple:
        if input.dim() < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, "
                               f"but got a tensor with {input.dim()} dimensions!")
        d = 0 if name == "hsplit" and input.dim() == 1 else dim
        if isinstance(indices_or_sections, int) and input.shape[d] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size "
                               f"of the dimension {input.shape[d]} is not divisible by the "
                               f"split_size {indices_or_sections}!")
        return input.tensor_split(indices_or_sections, d)

    split.__name__ = split.__qualname__ = name
    split.__doc__ = f"torch.{name}: ``tensor_split`` along dimension {dim} (NumPy's {name})."
    return split


def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:
    """Split into pieces of the given sizes, which must add up to the size of ``dim``."""
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != input.size(dim):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {input.size(dim)}"
                           f" (input tensor's size at dimension {dim}), but got split_sizes={sizes}")
    return input.split(sizes, dim)


def positive(input: Tensor) -> Tensor:
    """The tensor itself (unary plus); an error on bool tensors, as in torch."""
    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def typename(obj: Any) -> str:
    """A tensor's type name (``torch.FloatTensor``), or an object's qualified class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module, qualname = getattr(obj, "__module__", "") or "", getattr(obj, "__qualname__", None)
    if qualname is None:
        module, qualname = type(obj).__module__, type(obj).__qualname__
    module = module.replace("mytorch", "torch", 1) if module.startswith("mytorch") else module
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage (typed or untyped)."""
    return isinstance(obj, (TypedStorage, UntypedStorage))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``!=`` for bool tensors), as torch.diff."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if prepend is not None or append is not None:
        parts = [t if t.dim() else t.expand(*input.shape[:dim % input.dim()], 1)
                 for t in (prepend, input, append) if t is not None]
        input = torch.cat(parts, dim)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        hi, lo = input.narrow(dim, 1, length - 1), input.narrow(dim, 0, length - 1)
        input = hi != lo if input.dtype is _dtype.bool else hi - lo
    return input


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians: ``input * (pi / 180)`` (integers give the default float dtype)."""
    return input * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees: ``input * (180 / pi)``."""
    return input * (180.0 / math.pi)


def _logaddexp(name: str, input: Tensor, other: Tensor, base2: bool) -> Tensor:
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{_dtype._scalar_name(input.dtype)}'")
    big = torch.maximum(input, other)
    gap = -(input - other).abs()
    rest = torch.log1p(torch.exp2(gap)) / math.log(2.0) if base2 else torch.log1p(torch.exp(gap))
    # both -inf (or both +inf): the gap is NaN, and the answer is that infinity
    return torch.where(torch.isinf(big) & (input == other), big, big + rest)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow: ``max + log1p(exp(-|input - other|))``."""
    return _logaddexp("logaddexp", input, other, base2=False)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow."""
    return _logaddexp("logaddexp2", input, other, base2=True)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` and each row of ``x2`` (batched)."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    return torch.linalg.vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), ord=p, dim=-1)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """For each element, whether it occurs in ``test_elements`` (a bool tensor of its shape)."""
    el = elements if isinstance(elements, Tensor) else torch.tensor(elements)
    test = test_elements if isinstance(test_elements, Tensor) else torch.tensor(test_elements)
    found = (el.unsqueeze(-1) == test.reshape(-1)).any(-1) if test.numel() else \
        torch.zeros(el.shape, dtype=torch.bool)
    return ~found if invert else found


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """All combinations of one element from each 1-D tensor, as rows (one tensor: itself)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = torch.meshgrid(*tensors, indexing="ij")
    return torch.stack([g.reshape(-1) for g in grids], dim=1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-D) placed along the diagonal of a zero matrix."""
    mats = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    for i, t in enumerate(mats):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
    dt = mats[0].dtype if mats else torch.float32
    for t in mats[1:]:
        dt = torch.promote_types(dt, t.dtype)
    rows, cols = sum(t.shape[0] for t in mats), sum(t.shape[1] for t in mats)
    out = torch.zeros(rows, cols, dtype=dt, device=mats[0].device if mats else None)
    r = c = 0
    for t in mats:
        out[r:r + t.shape[0], c:c + t.shape[1]] = t
        r, c = r + t.shape[0], c + t.shape[1]
    return out


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator: Any = None) -> Tensor:
    """``torch.rrelu``: ``nn.functional.rrelu`` with a ``generator=`` for the training slopes."""
    return _act._rrelu(input, lower, upper, training, generator)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Any = None) -> Tensor:
    """``torch.rrelu_``: in-place :func:`rrelu`."""
    return _act._rrelu_inplace(input, lower, upper, training, generator,
                               node="RreluWithNoiseBackward1")


_TENSOR_AND_TORCH = {
    "hsplit": _directional_split("hsplit", 1, 1), "vsplit": _directional_split("vsplit", 0, 2),
    "dsplit": _directional_split("dsplit", 2, 3), "split_with_sizes": split_with_sizes,
    "unsafe_split": lambda input, split_size, dim=0: input.split(split_size, dim),
    "unsafe_split_with_sizes": split_with_sizes,
    "unsafe_chunk": lambda input, chunks, dim=0: input.chunk(chunks, dim),
    "positive": positive, "is_nonzero": _creation.is_nonzero, "prelu": F.prelu,
    "diff": diff, "deg2rad": deg2rad, "rad2deg": rad2deg, "logaddexp": logaddexp,
    "logaddexp2": logaddexp2,
}
def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """torch.spmm: the older name of ``torch.mm`` for a sparse matrix times a dense one (pygcn's
    ``torch.spmm(adj, support)``); a dense ``input`` works too."""
    return torch.mm(input, mat2)


_TORCH_ONLY = {"cdist": cdist, "isin": isin, "cartesian_prod": cartesian_prod,
               "block_diag": block_diag, "rrelu": rrelu, "rrelu_": rrelu_, "spmm": spmm,
               "norm_except_dim": norm_except_dim, "_weight_norm": _weight_norm}


def bind_torch_functions(namespace: dict) -> None:
    """Add torch's other spellings of existing operations to ``namespace`` (mytorch's globals)."""
    for name in _METHOD_FUNCTIONS:
        if name not in namespace:
            namespace[name] = _method_as_function(name)
    for name in _FUNCTIONAL:
        namespace.setdefault(name, getattr(F, name))
    namespace.setdefault("dropout", dropout)
    namespace.setdefault("embedding", embedding)
    for name, fn in _TORCH_ONLY.items():
        namespace.setdefault(name, fn)
    namespace.setdefault("typename", typename)
    namespace.setdefault("is_storage", is_storage)
    for name, fn in _TENSOR_AND_TORCH.items():  # both spellings: torch.hsplit(x, 2), x.hsplit(2)
        if fn.__name__ == "<lambda>":
            fn.__name__ = fn.__qualname__ = name
        namespace.setdefault(name, fn)
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
