"""bfloat16 arithmetic as torch's CPU kernels do it: compute in float32, round the result back.

NumPy has no bfloat16; ml_dtypes gives it a NumPy dtype whose element-wise arithmetic already
rounds each result (``+ - * /`` match torch bit for bit), but reductions would accumulate in
bfloat16 and many float functions and kernels do not accept it at all. torch's CPU kernels
upcast: a bfloat16 sum, matmul, ``exp`` or softmax is computed in float32 and rounded to
bfloat16 once, at the end. ``install`` wraps the ops that need it so that they do exactly that
(differentiably: the casts are recorded, so gradients come back as bfloat16). It runs the first
time a bfloat16 tensor is made, so programs that never use one pay nothing.

Replacing functions that other code holds has global effects, each handled here and tested in
tests/test_bfloat16_wrapping.py: every reference mytorch's modules and classes hold is rebound
to the one wrapper of its op (``staticmethod`` attributes such as ``nn.Softmax._fn`` included),
so nothing sees two functions for one op; a wrapper keeps the op's ``__name__``, docstring and
signature (``functools.wraps``) and names the original in ``__wrapped_for_bfloat16__``, which the
ONNX tracer and the profiler read, so a reference taken before the first bfloat16 use (a model's
``activation=F.gelu``) is still the same op to them; and pickling still finds such a reference
(see ``_ORIGINAL``).
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dtype as D
from ._tensor import Tensor
from .autograd.grad_mode import no_grad
from .autograd.node import Node

__all__ = ["install", "original", "uninstall"]

# ops whose torch CPU kernel computes a bfloat16 input in float32 (as names in mytorch,
# Tensor and torch.nn.functional; a name missing from one of them is skipped there)
COMPUTE_IN_FLOAT32 = """
sum mean nansum nanmean var std var_mean std_mean prod cumsum cumprod logsumexp norm dist trace
matmul mm bmm mv dot vdot inner outer addmm addmv addbmm baddbmm einsum tensordot __matmul__
__rmatmul__
exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan tanh sinh cosh asin acos atan asinh
acosh atanh arcsin arccos arctan sigmoid logit erf erfc erfinv lgamma digamma atan2 clamp clip
lerp softmax log_softmax
gelu silu elu selu celu leaky_relu rrelu prelu softplus mish hardswish hardsigmoid logsigmoid
tanhshrink
softsign layer_norm group_norm batch_norm instance_norm rms_norm linear bilinear conv1d conv2d
conv3d conv_transpose1d conv_transpose2d conv_transpose3d max_pool1d max_pool2d avg_pool1d
avg_pool2d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_max_pool2d mse_loss l1_loss
smooth_l1_loss huber_loss cross_entropy nll_loss binary_cross_entropy
binary_cross_entropy_with_logits kl_div scaled_dot_product_attention normalize cosine_similarity
pairwise_distance dropout
rand randn rand_like randn_like normal
add sub mul div true_divide rsub pow addcmul addcdiv __add__ __radd__ __sub__ __rsub__ __mul__
__rmul__ __truediv__ __rtruediv__ __pow__ __rpow__
""".split()
# in-place arithmetic: computed on a float32 copy, then copied back (rounded), recorded as copy_;
# a Python number meets the float32 values, not a bfloat16-rounded copy of itself, as in torch
INPLACE_IN_FLOAT32 = """add_ sub_ mul_ div_ pow_ addcmul_ addcdiv_ lerp_ clamp_ clamp_min_
clamp_max_ exp_ log_ sqrt_ tanh_ sigmoid_ __iadd__ __isub__ __imul__ __itruediv__""".split()
# in-place fills that draw in float32 and store the rounded values (nn.init's calls)
FILL_IN_FLOAT32 = "uniform_ normal_ bernoulli_ exponential_ cauchy_ log_normal_ geometric_".split()

_installed: list[bool] = [False]


def _is_low(x: Any) -> bool:
    return isinstance(x, Tensor) and x.dtype is D.bfloat16  # (.dtype: sparse tensors have no _data)


def _up(x: Any) -> Any:
    if _is_low(x):
        return x.float()
    if isinstance(x, (list, tuple)) and any(_is_low(v) for v in x):
        return type(x)(_up(v) for v in x)
    return x


def _through_bfloat16(x: Any) -> Any:
    if isinstance(x, Tensor) and x.is_floating_point():
        return x.to(D.bfloat16).float()
    return x


def _down(r: Any) -> Any:
    if isinstance(r, Tensor):
        if r.dtype is not D.float32:
            return r
        # rounded in place first: a backward that reads the output (tanh, sigmoid, exp, softmax)
        # reads the bfloat16 values torch's kernel saved, not the float32 ones before rounding
        if isinstance(r._data, np.ndarray) and r._data.flags.writeable:
            r._data[...] = r._data.astype(D._load_ml_dtypes()["bfloat16"])
        out = r.to(D.bfloat16)
        made = out.grad_fn
        if r.grad_fn is not None and made is not None:  # torch's one node, called as the op's
            out.grad_fn = Node(r.grad_fn.name(), made.next_functions, made._backward)  # (Mul...)
        return out
    if isinstance(r, tuple):
        items = [_down(v) for v in r]
        if type(r) is tuple:
            return tuple(items)
        try:
            return type(r)(*items)
        except TypeError:
            return type(r)(items)
    return r


def _mixes_wider_floats(args: tuple, kwargs: dict) -> bool:
    """Another floating tensor with dims among the operands: torch's result is float32 or wider
    (bfloat16 with float16 meets in float32), so nothing is rounded back."""
    for x in (*args, *kwargs.values()):
        if isinstance(x, Tensor) and x.dim() and x.dtype in _WIDER:
            return True
    return False


_WIDER = (D.float16, D.float32, D.float64, D.complex64, D.complex128)


def _refuse_float8(name: str, args: tuple, kwargs: dict) -> None:
    """torch's CPU has no float8 kernels beyond casts and copies."""
    for x in (*args, *kwargs.values()):
        if isinstance(x, Tensor) and x.dtype in D._FLOAT8:
            raise NotImplementedError(f'"{name.strip("_")}" not implemented for '
                                      f"'{D._scalar_name(x.dtype)}'")


# normalizations whose CPU kernels take a bfloat16 input with float32 parameters (running stats,
# weight, bias) and return bfloat16 ("mixed dtype"): the other mix is refused
MIXED_DTYPE_NORMS = {"layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm"}


def _mixed_norm_input(fn_name: str, args: tuple, kwargs: dict) -> bool:
    """A norm's bfloat16 input with float32 parameters: True (its result is rounded back)."""
    x = args[0] if args else kwargs.get("input")
    params = [v for v in (*args[1:], *kwargs.values())
              if isinstance(v, Tensor) and v is not x and v.is_floating_point()]
    if all(p.dtype is x.dtype for p in params):
        return False
    if fn_name == "rms_norm":  # a composite in torch: its result is cast to the input's dtype
        return _is_low(x)
    if not (_is_low(x) and all(p.dtype is D.float32 for p in params)):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    return True


def _float32_compute(fn: Callable) -> Callable:
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _refuse_float8(name, args, kwargs)
        if name in MIXED_DTYPE_NORMS and _mixed_norm_input(name, args, kwargs):
            return _down(fn(*[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()}))
        asked = kwargs.get("dtype") is D.bfloat16
        if not asked and not any(_is_low(x) or (isinstance(x, (list, tuple)) and x and
                                                any(_is_low(v) for v in x))
                                 for x in (*args, *kwargs.values())):
            return fn(*args, **kwargs)
        if kwargs.get("out") is not None or (not asked and _mixes_wider_floats(args, kwargs)):
            return fn(*[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()})
        requires_grad = kwargs.pop("requires_grad", False) if asked else False
        up = _up
        if asked:  # dtype=torch.bfloat16: the inputs are cast to it first (then computed in float32)
            kwargs["dtype"] = D.float32
            up = _through_bfloat16
        res = _down(fn(*[up(a) for a in args], **{k: up(v) for k, v in kwargs.items()}))
        if requires_grad:
            res.requires_grad_()
        return res

    wrapper.__wrapped_for_bfloat16__ = fn  # type: ignore[attr-defined]
    return wrapper


def _fill_in_float32(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not _is_low(self):
            return fn(self, *args, **kwargs)
        tmp = self.detach().float()
        fn(tmp, *args, **kwargs)
        with no_grad():
            self.copy_(tmp)
        return self

    wrapper.__wrapped_for_bfloat16__ = fn  # type: ignore[attr-defined]
    return wrapper


def _inplace_in_float32(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not _is_low(self):
            return fn(self, *args, **kwargs)
        tmp = self.float()
        fn(tmp, *[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()})
        self.copy_(tmp)
        return self

    wrapper.__wrapped_for_bfloat16__ = fn  # type: ignore[attr-defined]
    return wrapper


_UNDO: list[tuple[Any, str, Any]] = []  # (holder, name, original) for uninstall


def _wrap_in(holder: Any, names: list[str], make: Callable, replaced: dict) -> None:
    for name in names:
        fn = holder.__dict__.get(name)
        if fn is None or not callable(fn) or hasattr(fn, "__wrapped_for_bfloat16__"):
            continue
        if id(fn) not in replaced:
            replaced[id(fn)] = make(fn)
        _UNDO.append((holder, name, fn))
        setattr(holder, name, replaced[id(fn)])


def original(fn: Any) -> Any:
    """The library's own function behind a bfloat16 wrapper (``fn`` itself when it is none).

    The wrappers keep the op's identity visible: ``__wrapped__`` (so ``inspect.signature``
    and ``__name__`` are the op's) and this marker, which the ONNX tracer and the profiler read
    so that a wrapper and the function it wraps count as one operation, wherever a reference
    to either is held (a module attribute, a class's ``staticmethod``, a model's attribute).
    """
    return getattr(fn, "__wrapped_for_bfloat16__", fn)


def _mytorch_modules() -> list[Any]:
    return [m for n, m in list(sys.modules.items())
            if m is not None and (n == "mytorch" or n.startswith("mytorch."))]


def _rebind(holder: Any, replaced: dict) -> None:
    """Point every attribute of ``holder`` that holds a wrapped function at its wrapper: a
    plain function, or one held as a ``staticmethod`` (nn.Softmax's ``_fn``)."""
    for attr, value in list(vars(holder).items()):
        fn = value.__func__ if isinstance(value, staticmethod) else value
        if not callable(fn) or id(fn) not in replaced or fn is replaced[id(fn)]:
            continue
        _UNDO.append((holder, attr, value))
        w = replaced[id(fn)]
        setattr(holder, attr, staticmethod(w) if isinstance(value, staticmethod) else w)


# Pickling. ``pickle`` saves a function as a reference, ``module.qualname``, and refuses one that
# the reference does not find again: a model that took ``F.gelu`` as an attribute before the
# first bfloat16 use holds the original, while ``activation.gelu`` is now the wrapper. So, while
# installed, an original's ``__qualname__`` is ``gelu.__bfloat16_original__``, which leads from
# the wrapper back to it; and every op names itself by that attribute for good (set below, at
# import), so such a file loads in a process that never used bfloat16 as well.
_ORIGINAL = "__bfloat16_original__"
_RENAMED: list[tuple[Callable, str]] = []  # (original, its own __qualname__) for uninstall


def _mark_originals() -> None:
    from .nn import functional as F  # (mytorch is imported by now: this runs at its end)

    names = COMPUTE_IN_FLOAT32 + FILL_IN_FLOAT32 + INPLACE_IN_FLOAT32
    for holder in (Tensor, sys.modules["mytorch"], F):
        for name in names:
            fn = vars(holder).get(name)
            if callable(fn) and not hasattr(fn, "__wrapped_for_bfloat16__"):
                try:
                    setattr(fn, _ORIGINAL, fn)
                except (AttributeError, TypeError):  # (a builtin: nothing to mark)
                    pass


def _rename_originals(replaced: dict) -> None:
    for w in replaced.values():
        fn = w.__wrapped_for_bfloat16__
        if isinstance(getattr(fn, "__qualname__", None), str):
            _RENAMED.append((fn, fn.__qualname__))
            fn.__qualname__ = f"{fn.__qualname__}.{_ORIGINAL}"
            setattr(fn, _ORIGINAL, fn)
        w.__dict__[_ORIGINAL] = fn


def install() -> None:
    """Wrap the float32-computing ops in ``mytorch``, ``Tensor`` and ``nn.functional`` (once),
    and rebind every reference to them that mytorch's modules and classes hold."""
    if _installed[0]:
        return
    _installed[0] = True
    replaced: dict[int, Callable] = {}  # one wrapper per function, wherever it is bound
    _wrap_in(Tensor, COMPUTE_IN_FLOAT32, _float32_compute, replaced)
    _wrap_in(Tensor, FILL_IN_FLOAT32, _fill_in_float32, replaced)
    _wrap_in(Tensor, INPLACE_IN_FLOAT32, _inplace_in_float32, replaced)
    modules = _mytorch_modules()
    for module in modules:
        _wrap_in(module, COMPUTE_IN_FLOAT32, _float32_compute, replaced)
    # every mytorch module and class that bound one of these functions (mytorch.exp, F.gelu,
    # the modules nn.GELU & co. call them from, nn.Softmax's staticmethod) gets the same
    # wrapper: one function per op, so that nothing that looks ops up by identity (the ONNX
    # tracer, the profiler) sees two
    classes = {Tensor}
    for module in modules:
        _rebind(module, replaced)
        classes.update(v for v in vars(module).values()
                       if isinstance(v, type) and (v.__module__ or "").startswith("mytorch"))
    for cls in classes:
        _rebind(cls, replaced)
    _rename_originals(replaced)


def uninstall() -> None:
    """Put the original functions back (tests use it to leave no global change behind); the
    next bfloat16 tensor installs the wrappers again."""
    while _UNDO:
        holder, name, fn = _UNDO.pop()
        setattr(holder, name, fn)
    while _RENAMED:
        fn, qualname = _RENAMED.pop()
        fn.__qualname__ = qualname
    _installed[0] = False
    D._EXTENSION_NP.clear()  # so that the next use of a bfloat16 dtype runs the hooks again
