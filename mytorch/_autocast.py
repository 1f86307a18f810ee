"""The ops that ``torch.autocast("cpu")`` casts, wrapped the first time an autocast region is entered.

torch's CPU autocast kernels (ATen's ``autocast_mode.cpp``) sort ops into lists: matmuls, linear,
convolutions, ``prelu`` and attention run in the autocast dtype (``lower_precision_fp``); losses,
``prod``, ``cdist``, ``trace`` and a few others run in float32 (``fp32``); every other op runs as
it is, in whatever dtype reaches it (a ReLU after a bfloat16 linear is a bfloat16 ReLU). An
autocast op casts its floating, non-float64 tensor arguments (differentiably: ``ToCopyBackward0``,
so the weights' gradients stay float32), then runs with autocast off for the ops it is made of,
as torch's kernels do.

The wrapping is ``mytorch/_bfloat16.py``'s: every reference mytorch's modules and classes hold
is rebound to the one wrapper, which keeps the op's name and its ``__wrapped_for_bfloat16__``
marker (the profiler and the ONNX tracer still see the op). The bfloat16 wrappers are installed
first, so that a cast-down op computes in float32 and rounds once, as torch's CPU kernels do.
"""
from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any

from . import _bfloat16
from . import _dtype as D
from ._tensor import Tensor
from .amp.autocast_mode import STATE

__all__ = ["install", "uninstall"]

# torch's CPU lists, as names in mytorch, Tensor and torch.nn.functional (others are skipped)
LOWER_PRECISION_FP = """conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d
linear prelu scaled_dot_product_attention matmul mm bmm addmm baddbmm addbmm __matmul__
__rmatmul__""".split()
FP32 = """mse_loss l1_loss smooth_l1_loss huber_loss cross_entropy nll_loss binary_cross_entropy
binary_cross_entropy_with_logits kl_div cosine_embedding_loss hinge_embedding_loss poisson_nll_loss
margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss multilabel_margin_loss
ctc_loss prod cdist trace quantile nanquantile avg_pool3d max_pool3d adaptive_avg_pool3d
adaptive_max_pool3d max_unpool2d max_unpool3d grid_sample polar stft inverse pinverse cholesky
cholesky_inverse cholesky_solve""".split()


def _einsum_contracts(equation: str, *operands: Any) -> bool:
    """torch's einsum contracts two operands with bmm (cast) and multiplies them otherwise."""
    ops = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
    lhs, _, rhs = equation.replace(" ", "").replace(".", "").partition("->")
    letters = lhs.replace(",", "")
    if "->" not in equation:
        rhs = "".join(c for c in letters if letters.count(c) == 1)
    return len(ops) > 1 and bool(set(letters) - set(rhs))


def _dims(*args: Any) -> list[int]:
    return [a.dim() for a in args[:2] if isinstance(a, Tensor)]


# composites that torch's CPU autocast casts only on some calls, as the kernel they reach
# underneath does (bmm, mm, reflection_pad...): the call decides, "lower", "fp32", None (run as
# it is) or "as_is" (not cast, and nor are the ops inside it)
CONDITIONAL: dict[str, Callable[..., str | None]] = {
    "einsum": lambda eq, *ops, **kw: "lower" if _einsum_contracts(eq, *ops) else None,
    "tensordot": lambda a, b, *r, **kw: None if _dims(a, b) == [1, 1] else "lower",
    "inner": lambda input, other, **kw: (None if min(_dims(input, other)) == 0
                                         or _dims(input, other) == [1, 1] else "lower"),
    "bilinear": lambda *args, **kwargs: "as_is",  # (torch's _trilinear: not cast, nor inside)
    "pad": lambda input, pad, mode="constant", value=None: (
        "fp32" if mode == "replicate" or (mode == "reflect" and input.dim() in (2, 3, 4))
        else None),
}

_installed: list[bool] = [False]
_UNDO: list[tuple[Any, str, Any]] = []


def _cast(x: Any, dtype: D.dtype) -> Any:
    """torch's ``cached_cast``: a floating CPU tensor other than float64 goes to ``dtype``; a
    float32 leaf that requires grad (a weight) is cast once per autocast region."""
    if isinstance(x, Tensor):
        if (x.device.type != "cpu" or not x.is_floating_point() or x.dtype is D.float64
                or x.dtype is dtype):
            return x
        if not (STATE.cache_enabled and dtype is STATE.dtype["cpu"] and x.dtype is D.float32
                and x.requires_grad and x.is_leaf and x._base is None):
            return x.to(dtype)
        hit = STATE.cache.get(id(x))
        if hit is not None and hit[0]() is x:
            return hit[1]
        cast = x.to(dtype)
        STATE.cache[id(x)] = (weakref.ref(x), cast)
        return cast
    if isinstance(x, (list, tuple)) and any(isinstance(v, Tensor) for v in x):
        return type(x)(_cast(v, dtype) for v in x)
    return x


def _autocasting(policy: str | Callable[..., str | None]) -> Callable[[Callable], Callable]:
    """The wrapper for ops cast by ``policy``: "lower", "fp32", or a function of the call."""
    def make(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def op(*args: Any, **kwargs: Any) -> Any:
            if not STATE.enabled["cpu"] or STATE.inside:
                return fn(*args, **kwargs)
            kind = policy if isinstance(policy, str) else policy(*args, **kwargs)
            if kind is None:
                return fn(*args, **kwargs)
            if kind != "as_is":
                dtype = STATE.dtype["cpu"] if kind == "lower" else D.float32
                args = tuple(_cast(a, dtype) for a in args)
                kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
            STATE.inside += 1
            try:
                return fn(*args, **kwargs)
            finally:
                STATE.inside -= 1

        op.__autocast_original__ = fn  # type: ignore[attr-defined]
        return op
    return make


def _wrap(holder: Any, names: list[str], make: Callable, replaced: dict) -> None:
    for name in names:
        fn = holder.__dict__.get(name)  # (a routine: not the placeholder of a name left out)
        if not inspect.isroutine(fn) or hasattr(fn, "__autocast_original__"):
            continue
        if id(fn) not in replaced:
            replaced[id(fn)] = make(fn)
        _UNDO.append((holder, name, fn))
        setattr(holder, name, replaced[id(fn)])


def install() -> None:
    """Wrap the ops of torch's CPU autocast lists (once), over the bfloat16 wrappers; again if
    ``_bfloat16.uninstall`` (tests) put the original functions back under them."""
    if _installed[0] and hasattr(vars(Tensor)["matmul"], "__autocast_original__"):
        return
    _UNDO.clear()
    D._load_ml_dtypes()  # (its hook installs the bfloat16 wrappers: they go first)
    _bfloat16.install()
    _installed[0] = True
    replaced: dict[int, Callable] = {}
    modules = _bfloat16._mytorch_modules()
    namespaces = ("mytorch", "mytorch.nn.functional", "mytorch.linalg")
    for holder in (Tensor, *(m for m in modules if m.__name__ in namespaces)):
        _wrap(holder, LOWER_PRECISION_FP, _autocasting("lower"), replaced)
        _wrap(holder, FP32, _autocasting("fp32"), replaced)
        for name, policy in CONDITIONAL.items():
            _wrap(holder, [name], _autocasting(policy), replaced)
    classes = {Tensor}
    for module in modules:
        _rebind(module, replaced)
        classes.update(v for v in vars(module).values()
                       if isinstance(v, type) and (v.__module__ or "").startswith("mytorch"))
    for cls in classes:
        _rebind(cls, replaced)


def _rebind(holder: Any, replaced: dict) -> None:
    for attr, value in list(vars(holder).items()):
        fn = value.__func__ if isinstance(value, staticmethod) else value
        if not callable(fn) or id(fn) not in replaced or fn is replaced[id(fn)]:
            continue
        _UNDO.append((holder, attr, value))
        w = replaced[id(fn)]
        setattr(holder, attr, staticmethod(w) if isinstance(value, staticmethod) else w)


def uninstall() -> None:
    """Put the wrapped ops back (tests use it); the next enabled autocast installs them again."""
    while _UNDO:
        holder, name, fn = _UNDO.pop()
        setattr(holder, name, fn)
    _installed[0] = False
