"""Reductions and ordering: sum, mean, var/std, max/min, argmax, prod, cumsum, norm, unique, sort, topk, …

A reduction collapses the dimensions listed in ``dim`` (all of them when ``dim`` is None) with one
NumPy/CuPy call. Its backward broadcasts the output's gradient back over the collapsed dimensions
(``_unreduce``) and multiplies it by the local derivative: 1 for ``sum``, ``1/n`` for ``mean``,
``2(x - mean)/(n - correction)`` for ``var``, a 0/1 mask of the winners for ``amax``, …

*Value-selecting* ops (``max(t, dim)``, ``sort``, ``topk``, ``kthvalue``, ``median(t, dim)``) also
return the indices they picked; their gradient is scattered back to exactly those indices.
"""
from __future__ import annotations

import builtins
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .. import return_types
from .._creation import _place, full_like
from .._device import xp_for
from .._pieces import piece, pieces
from .._tensor import Tensor, _c_name, tensor_method, wrap
from ..autograd.grad_mode import STATE
from ..autograd.graph import SavedOutput, needs_grad, record, record_outputs, sum_to
from ..autograd.piece_op import as_op
from ._operands import check_same_device, contiguous_result, preserve_layout, quiet, quietly, size_args, \
    wrap_dim, wrap_dims
from ._variants import _cap, _inplace_version, _to_out
from .shape import broadcast_tensors, cat

__all__ = [
    "sum", "nansum", "mean", "nanmean", "var", "std", "var_mean", "std_mean",
    "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "prod", "cumsum", "cumprod",
    "logsumexp", "median", "nanmedian", "quantile", "nanquantile", "mode", "kthvalue", "topk",
    "sort", "argsort", "msort",
    "unique", "unique_consecutive", "count_nonzero", "any", "all",
]

_INF = float("inf")


# ============================================================================ dims and gradients
def _axes(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``dim`` as a tuple of non-negative axes; None (= every axis) for None, ``()`` or ``[]``.

    A 0-dim tensor accepts ``dim=0`` / ``dim=-1`` like torch; there is nothing to reduce.
    """
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    axes = wrap_dims(dim, ndim)
    return axes if ndim else None


def _count(shape: tuple, axes: tuple[int, ...] | None) -> int:
    """How many elements each output element of a reduction over ``axes`` combines."""
    return math.prod(shape) if axes is None else math.prod(shape[a] for a in axes)


def _unreduce(g: Tensor, axes: tuple[int, ...] | None, keepdim: bool, ndim: int) -> Tensor:
    """Give a reduced gradient its size-1 dimensions back, so it broadcasts against the input."""
    if keepdim or ndim == 0:
        return g
    if axes is None:
        return g.reshape((1,) * ndim)
    for ax in sorted(axes):
        g = g.unsqueeze(ax)
    return g


def _keep(res: Any, axes: tuple[int, ...] | None, keepdim: bool, ndim: int) -> Any:
    """The array ``res`` of a reduction reshaped as if ``keepdim=True`` (for broadcasting)."""
    if keepdim or ndim == 0:
        return res
    shape = [1] * ndim if axes is None else list(res.shape)
    if axes is not None:
        for ax in sorted(axes):
            shape.insert(ax, 1)
    return res.reshape(shape)


def _cast_back(g: Tensor, dt: D.dtype) -> Tensor:
    """A gradient computed in an op's ``dtype=`` flows back in the input's own dtype."""
    return g if g.dtype is dt else g.to(dt)


def _tie_weights(arr: Any, best: Any, axes: tuple[int, ...] | None, nan_equal: bool = True) -> Any:
    """``mask / count``: 1/k on each of the k elements equal to the extreme, 0 elsewhere.

    This is how torch splits the gradient of ``max()``/``amax``/``median()`` among ties. For
    ``max()`` a nan extreme goes to the nan elements; ``amax``/``amin`` compare with ``==`` only
    (``nan_equal=False``), so a nan extreme matches nothing and the gradient is 0/0, nan, as torch's.
    """
    mask = arr == best
    if arr.dtype.kind == "f" and nan_equal:
        mask |= np.isnan(arr) & np.isnan(best)
    mask = mask.astype(arr.dtype)
    with quiet():
        return mask / mask.sum(axis=axes, keepdims=True)


def _scatter_along(src: Tensor, idx: Any, d: int, shape: tuple) -> Tensor:
    """``zeros(shape)`` with ``src`` put at positions ``idx`` along ``d``.

    The backward of every value-selecting op; differentiable (its backward gathers).
    """
    xp = xp_for(src._device)
    out = xp.zeros(shape, dtype=src._data.dtype)
    xp.put_along_axis(out, idx, src._data, d)
    res = wrap(out, src._device)
    if needs_grad(src):
        record("ScatterBackward0", res, (src,), lambda g: (_gather_along(g, idx, d),))
    return res


def _gather_along(src: Tensor, idx: Any, d: int) -> Tensor:
    """``src``'s values at positions ``idx`` along ``d`` (differentiable: its backward scatters)."""
    res = wrap(xp_for(src._device).take_along_axis(src._data, idx, d), src._device)
    if needs_grad(src):
        shape = tuple(src._data.shape)
        record("GatherBackward0", res, (src,), lambda g: (_scatter_along(g, idx, d, shape),))
    return res


def _select(name: str, input: Tensor, idx: Any, d: int, squeeze: bool,
            kind: type) -> Any:
    """The values of ``input`` at ``idx`` along ``d`` and the indices, as ``kind(values, indices)``.

    ``idx`` indexes ``input`` seen as at least 1-d (0-dim tensors act as one element). The gradient
    of the values goes back to the selected positions only.
    """
    arr = input._data
    src = arr.reshape(1) if arr.ndim == 0 else arr
    vals = xp_for(input._device).take_along_axis(src, idx, d)
    if arr.ndim == 0:
        out_v, out_i = vals.reshape(()), idx.reshape(())
    elif squeeze:
        out_v, out_i = vals.squeeze(d), idx.squeeze(d)
    else:
        out_v, out_i = vals, idx
    values = wrap(out_v, input._device)
    indices = wrap(out_i.astype(np.int64, copy=False), input._device)
    if needs_grad(input):
        kept, shape = tuple(idx.shape), tuple(arr.shape)
        record(name, values, (input,),
               lambda g: (_scatter_along(g.reshape(kept), idx, d, src.shape).reshape(shape),))
    return kind(values, indices)


def _along(input: Tensor, dim: int) -> tuple[Any, int]:
    """``input``'s array seen as at least 1-d and ``dim`` wrapped: for ops along one dimension."""
    arr = input._data
    d = wrap_dim(dim, arr.ndim)
    return (arr.reshape(1) if arr.ndim == 0 else arr), d


def _float_dtype(name: str, input: Tensor, dtype: Any) -> D.dtype:
    """The result dtype of ``mean``-like ops: floating (or complex) only, as torch demands."""
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if dt._cat < D._FLOAT:
            raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: {_cap(dt)}")
        return dt
    dt = input.dtype
    if dt._cat < D._FLOAT:
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_cap(dt)}")
    return dt


def _require_float(name: str, input: Tensor) -> None:
    if input.dtype._cat < D._FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_cap(input.dtype)}")


def _accumulating_dtype(input: Tensor, dtype: Any) -> D.dtype:
    """``sum``/``prod``/``cumsum``: bool and integers accumulate in int64 unless ``dtype=`` says."""
    if dtype is not None:
        return D.to_dtype(dtype)
    dt = input.dtype
    return D.int64 if dt._cat <= D._INT else dt


def _check_nonempty(name: str, input: Tensor, axes: tuple[int, ...] | None,
                    exc: type = RuntimeError) -> None:
    """max/min/amax/argmax have no identity: torch refuses to reduce over nothing."""
    shape = input._data.shape
    if input._data.size:
        return
    if axes is None:
        raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
                  + (" Specify the reduction dim with the 'dim' argument." if exc is RuntimeError
                     else ""))
    for a in axes:
        if shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


# ============================================================================ sums and means
@quietly  # an overflowing sum is inf, silently as in torch
def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum of all elements, or over ``dim``; bool and integer inputs sum to int64 like torch."""
    arr = input._data
    dt = _accumulating_dtype(input, dtype)
    axes = _axes(dim, arr.ndim)
    res = wrap(contiguous_result(arr.sum(axis=axes, dtype=dt.np, keepdims=keepdim)), input._device)
    if needs_grad(input):
        shape, src_dt = tuple(arr.shape), input.dtype
        record("SumBackward0" if dim is None else "SumBackward1", res, (input,),
               lambda g: (_cast_back(_unreduce(g, axes, keepdim, len(shape)).expand(shape),
                                     src_dt),))
    return res


@tensor_method()
def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sum ``self`` down to ``size``, a shape it can be broadcast from: the reverse of ``expand``.

    Leading dimensions are summed away, dimensions of size 1 in ``size`` are summed and kept.
    That is what the gradient of a broadcast input needs (``autograd.graph.sum_to``).
    """
    shape = tuple(size_args(size))
    have = tuple(self._data.shape)
    lead = len(have) - len(shape)
    if lead < 0 or builtins.any(n != 1 and n != have[lead + i] for i, n in enumerate(shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    return sum_to(self, shape)


@quietly  # inf + -inf and overflow: nan and inf silently, as in torch
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """``sum`` that treats NaN as zero."""
    arr = input._data
    if arr.dtype.kind != "f":
        return sum(input, dim, keepdim, dtype=dtype)
    dt = _accumulating_dtype(input, dtype)
    axes = _axes(dim, arr.ndim)
    nan = np.isnan(arr)
    res = wrap(contiguous_result(np.where(nan, 0, arr).sum(axis=axes, dtype=dt.np, keepdims=keepdim)),
               input._device)
    if needs_grad(input):
        keep = wrap(~nan, input._device)
        src_dt, nd = input.dtype, arr.ndim
        record("NansumBackward0", res, (input,),
               lambda g: (_cast_back(_unreduce(g, axes, keepdim, nd) * keep, src_dt),))
    return res


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Arithmetic mean; torch refuses integer inputs (pass ``dtype=torch.float32``)."""
    dt = _float_dtype("mean", input, dtype)
    arr = input._data if dtype is None else input._data.astype(dt.np, copy=False)
    axes = _axes(dim, arr.ndim)
    n = _count(arr.shape, axes)
    with quiet():  # the mean of nothing is nan, an overflowing one inf: silently, as in torch
        res = wrap(contiguous_result(arr.sum(axis=axes, keepdims=keepdim) / n), input._device)
    if needs_grad(input):
        shape, src_dt = tuple(arr.shape), input.dtype
        record("MeanBackward0" if dim is None else "MeanBackward1", res, (input,),
               lambda g: (_cast_back(_unreduce(g, axes, keepdim, len(shape)).expand(shape)
                                     * (1.0 / n if n else math.nan), src_dt),))
    return res


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *,
            dtype: Any = None) -> Tensor:
    """Mean of the non-NaN elements."""
    if input.dtype._cat < D._FLOAT:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but "
                           f"got {_cap(input.dtype)}")
    axes = _axes(dim, input._data.ndim)
    count = (~np.isnan(input._data)).sum(axis=axes, keepdims=keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) * wrap(1.0 / count, input._device).to(
        _float_dtype("nanmean", input, dtype))


# ============================================================================ variance
def _correction(fname: str, dim: Any, unbiased: Any, correction: Any) -> tuple[Any, float]:
    """Untangle torch's var/std overloads: ``(x, dim, unbiased, keepdim)``, ``(x, unbiased)``,
    ``(x, dim, *, correction=, keepdim=)``. Returns ``(dim, correction)``."""
    if isinstance(dim, builtins.bool):  # var(x, True): the legacy (input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{fname}() received an invalid combination of arguments: pass either "
                        "unbiased= or correction=, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


# torch's CPU kernels of running sums and products (cumsum, cumprod) and of var/std accumulate
# in double for float (in float for half) and round once: long float32 sums agree with torch's,
# and a partial product that overflows float32 but comes back (1e30 * 1e30 * 1e-30) is finite.
_CPU_ACCUMULATOR = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float32}


def _moments(fname: str, input: Tensor, dim: Any, unbiased: Any, keepdim: bool,
             correction: Any) -> tuple[Tensor, Tensor]:
    """(variance or standard deviation, mean) of ``input`` over ``dim`` with ``correction``
    (1 = Bessel's, unbiased), for ``fname`` var, std, var_mean or std_mean: one node as in
    torch (``VarBackward0``, ``StdBackward0``; ``VarMeanBackward0``... with two outputs).

    torch's CPU kernel sums float32 (half) data in double (float) and rounds the result once.
    The same sums in float32 differ from it by a rounding, except where a squared deviation
    overflows or underflows: then (a variance that is not finite or below the smallest normal
    number) the sums are done again in double, and the deviation of [1e30, -1e30, 0] is 1e30.
    A complex input has a real variance (of ``|x - mean|``) and a complex mean."""
    if input.dtype._cat < D._FLOAT:
        raise RuntimeError(f"{'std and var' if fname in ('var', 'std') else fname} only support "
                           "floating point and complex dtypes")
    root, with_mean = fname.startswith("std"), fname.endswith("_mean")
    dim, c = _correction(fname, dim, unbiased, correction)
    arr = input._data
    axes = _axes(dim, arr.ndim)
    n = _count(arr.shape, axes)
    dof = builtins.max(0, n - c)

    def spread(x: Any, m: Any) -> Any:
        dev = x - m
        if dev.dtype.kind == "c":  # |dev|**2
            dev = dev.real * dev.real + dev.imag * dev.imag
        else:
            np.multiply(dev, dev, out=dev)  # in place: one temporary array, like np.var
        return dev.sum(axis=axes, keepdims=keepdim) / dof

    with quiet():  # no warning for 0/0 or overflow: torch answers nan / inf silently
        m = arr.sum(axis=axes, keepdims=True)
        m /= n
        var = spread(arr, m)
        acc = _CPU_ACCUMULATOR.get(arr.dtype) if type(arr) is np.ndarray else None
        info = np.finfo(arr.dtype)
        if acc is not None and var.size and not ((var >= info.tiny) & (var <= info.max)).all():
            wide = arr.astype(acc)
            # (a one-element result: torch's mean is the input dtype's, which may overflow)
            wm = m.astype(acc) if n == arr.size else wide.sum(axis=axes, keepdims=True) / n
            var = spread(wide, wm)
        if root:
            var = np.sqrt(var)
        var = var.astype(info.dtype, copy=False)  # (complex: the real dtype of its parts)
    if (n if var.size else 0) - c <= 0:  # torch: input numel / output numel, 0 for no output
        warnings.warn(f"{fname}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      stacklevel=4)  # (the user, numpy_names, var)
    v = wrap(contiguous_result(var), input._device)
    mean_ = wrap(contiguous_result(m if keepdim or arr.ndim == 0 else m.reshape(var.shape)),
                 input._device)
    if not needs_grad(input):
        return v, mean_
    nd, shape, src_dt = arr.ndim, tuple(arr.shape), input.dtype

    def d_var(g: Tensor) -> Tensor:
        centred = input - input.mean(axes, keepdim=True)
        return _unreduce(g, axes, keepdim, nd) * centred * (2.0 / dof if dof else math.inf)

    out = SavedOutput(v)

    def d_std(g: Tensor) -> Tensor:  # d std = d var / (2 std), 0 where std is 0 (masked_fill)
        zero = wrap((out.data == 0).astype(out.data.dtype), input._device)
        return d_var(g / (out() * 2 + zero) * (1 - zero))  # (torch's order)

    d_spread = d_std if root else d_var
    saved = (input, out) if root else (input,)
    if not with_mean:
        record("StdBackward0" if root else "VarBackward0", v, (input,),
               lambda g: (d_spread(g),), saved=saved)
        return v, mean_

    def backward(grads: list) -> tuple:  # torch's var_mean_backward: the spread's part first
        g_spread, g_mean = grads
        gx = None if g_spread is None else d_spread(g_spread)
        if g_mean is not None:
            gm = _cast_back(_unreduce(g_mean, axes, keepdim, nd).expand(shape)
                            * (1.0 / n if n else math.nan), src_dt)
            gx = gm if gx is None else gx + gm
        return (gx,)

    record_outputs("StdMeanBackward0" if root else "VarMeanBackward0", (v, mean_), (input,),
                   backward, saved=saved)
    return v, mean_


def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Variance: ``sum((x - mean)**2) / (n - correction)``; ``correction=1`` (unbiased) by default."""
    return _moments("var", input, dim, unbiased, keepdim, correction)[0]


def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """Standard deviation: the square root of :func:`var`."""
    return _moments("std", input, dim, unbiased, keepdim, correction)[0]


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` in one pass (one node with two outputs, ``VarMeanBackward0``)."""
    return _moments("var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` in one pass (one node with two outputs, ``StdMeanBackward0``)."""
    return _moments("std_mean", input, dim, unbiased, keepdim, correction)


# ============================================================================ max / min
def _extreme(input: Tensor, axes: tuple[int, ...] | None, keepdim: bool, largest: bool,
             grad_name: str) -> Tensor:
    """max or min over ``axes`` (NaN wins, like torch); the gradient is split evenly among ties."""
    arr = input._data
    res_arr = arr.max(axis=axes, keepdims=keepdim) if largest else \
        arr.min(axis=axes, keepdims=keepdim)
    res = wrap(contiguous_result(res_arr), input._device)
    if needs_grad(input):
        nd = arr.ndim
        out = SavedOutput(res)

        def backward(g: Tensor) -> tuple:
            weights = _tie_weights(input._data, _keep(out.data, axes, keepdim, nd), axes,
                                   nan_equal=grad_name not in ("AmaxBackward0", "AminBackward0"))
            return (_unreduce(g, axes, keepdim, nd) * wrap(weights, input._device),)

        record(grad_name, res, (input,), backward, saved=(input, out))
    return res


def _extreme_dim(name: str, input: Tensor, dim: int, keepdim: bool) -> Any:
    """``max(t, dim)`` / ``min(t, dim)``: values and (first) indices of the extremes along ``dim``."""
    arr, d = _along(input, dim)
    _check_nonempty(name, input, (d,) if input._data.ndim else None)
    idx = arr.argmax(axis=d, keepdims=True) if name == "max" else arr.argmin(axis=d, keepdims=True)
    return _select(f"{name.title()}Backward0", input, idx, d, not keepdim,
                   getattr(return_types, name))


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Three ops in one, as in torch: ``max(t)`` → the largest value (0-dim);
    ``max(t, dim, keepdim=False)`` → ``(values, indices)``; ``max(a, b)`` → ``maximum(a, b)``."""
    if isinstance(dim, Tensor):
        return input.maximum(dim)
    if dim is None:
        _check_nonempty("max", input, None)
        return _extreme(input, None, False, True, "MaxBackward1")
    return _extreme_dim("max", input, dim, keepdim)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """``min(t)``, ``min(t, dim, keepdim=False)`` → ``(values, indices)``, or ``minimum(a, b)``."""
    if isinstance(dim, Tensor):
        return input.minimum(dim)
    if dim is None:
        _check_nonempty("min", input, None)
        return _extreme(input, None, False, False, "MinBackward1")
    return _extreme_dim("min", input, dim, keepdim)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Largest value over ``dim`` (all dims by default); ties share the gradient evenly."""
    axes = _axes(dim, input._data.ndim)
    _check_nonempty("amax", input, axes)
    return _extreme(input, axes, keepdim, True, "AmaxBackward0")


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Smallest value over ``dim`` (all dims by default); ties share the gradient evenly."""
    axes = _axes(dim, input._data.ndim)
    _check_nonempty("amin", input, axes)
    return _extreme(input, axes, keepdim, False, "AminBackward0")


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """``(min, max)`` together."""
    return return_types.aminmax(amin(input, () if dim is None else dim, keepdim),
                                amax(input, () if dim is None else dim, keepdim))


def _arg_extreme(name: str, input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    if input.dtype is D.bool:
        raise RuntimeError(f"{name}(): does not support bool input")
    arr = input._data
    pick = arr.argmax if name == "argmax" else arr.argmin
    if dim is None:
        _check_nonempty(name, input, None, IndexError)
        res = pick()
        if keepdim:
            res = res.reshape((1,) * arr.ndim)
    else:
        d = wrap_dim(dim, arr.ndim)
        _check_nonempty(name, input, (d,) if arr.ndim else None, IndexError)
        res = pick(axis=d, keepdims=keepdim) if arr.ndim else pick()
    return wrap(xp_for(input._device).asarray(res, dtype=np.int64), input._device)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value along ``dim``; of the flattened tensor when ``dim`` is None."""
    return _arg_extreme("argmax", input, dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value along ``dim``; of the flattened tensor when ``dim`` is None."""
    return _arg_extreme("argmin", input, dim, keepdim)


# ============================================================================ products, scans
def _product_of_others(x: Tensor, d: int) -> Tensor:
    """``prod(x[j] for j != i)`` at each position ``i`` along ``d``, without dividing by ``x[i]``
    (so zeros are fine): the product of everything before ``i`` times everything after it.

    Written with differentiable ops (exclusive cumulative products from both ends), so the
    gradient of ``prod`` can be differentiated again even where the input has zeros.
    """
    n = x.shape[d]
    one = _ones_slice(x, d)
    before = cat([one, x.narrow(d, 0, n - 1)], d).cumprod(d)
    after = cat([one, x.narrow(d, 1, n - 1).flip((d,))], d).cumprod(d).flip((d,))
    return before * after


def _ones_slice(x: Tensor, d: int) -> Tensor:
    """Ones shaped like one slice of ``x`` along ``d`` (a constant)."""
    shape = list(x._data.shape)
    shape[d] = 1
    return wrap(xp_for(x._device).ones(shape, dtype=x._data.dtype), x._device)


@quietly
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """Product of all elements, or along one ``dim``; integers multiply in int64."""
    if dim is not None and not isinstance(dim, (builtins.int, np.integer)):
        raise TypeError(f"prod(): argument 'dim' must be int, not {type(dim).__name__}")
    arr = input._data
    dt = _accumulating_dtype(input, dtype)
    axes = _axes(dim, arr.ndim)
    res = wrap(contiguous_result(arr.prod(axis=axes, dtype=dt.np, keepdims=keepdim)), input._device)
    if needs_grad(input):
        nd, src_dt = arr.ndim, input.dtype
        out = SavedOutput(res)

        def backward(g: Tensor) -> tuple:
            g = _cast_back(_unreduce(g, axes, keepdim, nd), src_dt)
            if (input._data != 0).all():  # d(prod)/dx_i = prod / x_i
                return (g * _cast_back(_unreduce(out(), axes, keepdim, nd), src_dt) / input,)
            if nd == 0:
                return (g,)
            # With zeros we cannot divide: use the product of all the *other* elements.
            if axes is None:
                return (g * _product_of_others(input.reshape(-1), 0).reshape(input.shape),)
            return (g * _product_of_others(input, axes[0]),)

        record("ProdBackward0" if dim is None else "ProdBackward1", res, (input,), backward,
               saved=(input, out))
    return res


def _reverse_cumsum(g: Tensor, d: int) -> Tensor:
    """``out[i] = sum(g[i:])`` along ``d``: the backward of cumsum, written with differentiable ops.
    A cumsum of the flipped gradient, as torch's: ``sum - cumsum + g`` cancels (1e8 + 1 + 1
    loses the ones in float32) and turns an infinite gradient into nan everywhere."""
    return cumsum(g.flip(d), d).flip(d)


def _running(arr: Any, d: int, dt: D.dtype, method: str) -> Any:
    """``arr.cumsum``/``arr.cumprod`` along ``d`` in torch's accumulating precision, as ``dt``."""
    acc = _CPU_ACCUMULATOR.get(np.dtype(dt.np), dt.np) if type(arr) is np.ndarray else dt.np
    res = getattr(arr, method)(axis=d, dtype=acc)
    if method == "cumsum" and res.dtype.kind in "fc":
        res += 0  # torch's sum starts from 0, and 0 + -0.0 is 0.0: no -0.0 comes out
    return res.astype(dt.np, copy=False)


@quietly
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along ``dim``; integers accumulate in int64."""
    arr, d = _along(input, dim)
    dt = _accumulating_dtype(input, dtype)
    res = wrap(contiguous_result(_running(arr, d, dt, "cumsum").reshape(input._data.shape)),
               input._device)
    if needs_grad(input):
        src_dt, nd = input.dtype, input._data.ndim
        record("CumsumBackward0", res, (input,),
               lambda g: (_cast_back(_reverse_cumsum(g, d) if nd else g, src_dt),))
    return res


@quietly
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along ``dim``; integers accumulate in int64."""
    arr, d = _along(input, dim)
    dt = _accumulating_dtype(input, dtype)
    res = wrap(contiguous_result(_running(arr, d, dt, "cumprod").reshape(input._data.shape)),
               input._device)
    if needs_grad(input):
        src_dt, nd = input.dtype, input._data.ndim
        out = SavedOutput(res)
        record("CumprodBackward0", res, (input,),
               lambda g: (_cast_back(_cumprod_backward(input, _cast_back(out(), src_dt), g, d)
                                     if nd else g, src_dt),), saved=(input, out))
    return res


def _cumprod_backward(input: Tensor, res: Tensor, g: Tensor, d: int) -> Tensor:
    """``grad[i] = sum_{k>=i} g[k] * prod_{j<=k, j!=i} x[j]``.

    Without zeros that is ``reverse_cumsum(g * out) / x``. With zeros: before the first zero the
    same formula holds; at the first zero ``z`` it is ``reverse_cumsum(g * P)`` where ``P`` is the
    cumprod with ``x[z]`` replaced by 1; after it the gradient is 0.
    """
    x = input._data
    zero = x == 0
    if not zero.any():
        return _reverse_cumsum(g * res, d) / input
    if STATE.enabled:  # create_graph: a formula that stays differentiable with zeros
        return _cumprod_backward_scan(input, g, d)
    seen = zero.cumsum(axis=d)
    before = seen == 0
    first = zero & (seen == 1)
    p = np.where(first, 1, x).cumprod(axis=d)
    dev = input._device
    # divided by x (not times 1/x, which overflows for a subnormal x), where x is before the zero
    return (_reverse_cumsum(g * res, d) / wrap(np.where(before, x, 1), dev)
            * wrap(before.astype(x.dtype), dev)
            + _reverse_cumsum(g * wrap(p, dev), d) * wrap(first.astype(x.dtype), dev))


def _cumprod_backward_scan(input: Tensor, g: Tensor, d: int) -> Tensor:
    """The gradient of cumprod with differentiable ops only (used under ``create_graph``).

    ``grad[i] = E[i] * S[i]`` where ``E[i] = x[0] ... x[i-1]`` (an exclusive cumprod) and
    ``S[i] = g[i] + x[i+1] * S[i+1]`` (the sum over k >= i of g[k] times x[i+1] ... x[k]): no
    division anywhere, so zeros are fine. One small op per position along ``d``.
    """
    n = input.shape[d]
    before = cat([_ones_slice(input, d), input.narrow(d, 0, n - 1)], d).cumprod(d)
    s = [g.narrow(d, n - 1, 1)]
    for i in range(n - 2, -1, -1):
        s.append(g.narrow(d, i, 1) + input.narrow(d, i + 1, 1) * s[-1])
    return before * cat(s[::-1], d)


def logsumexp(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim`` without overflow: the piece :func:`log_sum_exp`."""
    x = input if input.dtype._cat >= D._FLOAT else input.to(D.get_default_dtype())
    axes = _axes(dim, x.ndim)
    if x.ndim == 0 or x.numel() == 0:  # nothing to shift (a sum of nothing is 0: -inf)
        return _logsumexp_fused(x, axes, keepdim)
    return pieces.log_sum_exp(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)


def _logsumexp_fused(input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """The fast path of :func:`log_sum_exp`: the forward on the arrays, one recorded node."""
    arr = input._data
    axes = _axes(dim, arr.ndim)
    xp = xp_for(input._device)
    # Any finite shift m gives the same result; the max keeps exp() from overflowing.
    m = arr.max(axis=axes, keepdims=True) if arr.size else xp.zeros((), arr.dtype)
    m = xp.where(np.isfinite(m), m, 0)  # an infinite max would give inf - inf = nan
    with quiet():
        out = np.log(np.exp(arr - m).sum(axis=axes, keepdims=True)) + m
    res = wrap(contiguous_result(out if keepdim or arr.ndim == 0 else out.squeeze(axes)),
               input._device)
    if needs_grad(input):
        nd = arr.ndim
        out = SavedOutput(res)
        record("LogsumexpBackward0", res, (input,),
               lambda g: (_unreduce(g, axes, keepdim, nd)
                          * (input - _unreduce(out(), axes, keepdim, nd)).exp(),),
               saved=(input, out))
    return res


@piece("05.3", fast=_logsumexp_fused, wrap=as_op("LogsumexpBackward0", saves_output=True))
def log_sum_exp(x, dim, keepdim):
    """``log(Σ exp(x))`` over the dimensions ``dim`` (a tuple), computed so that no ``exp``
    overflows or underflows to nothing: finite wherever the answer is finite, and ``-inf`` or
    ``+inf`` where the answer is (a slice of ``-inf`` only, or one holding ``+inf``). The
    reduced dimensions stay, with size 1, only when ``keepdim``."""
    m = x.amax(dim, keepdim=True).detach()       # a shift: any constant gives the same result
    m = m.masked_fill(m.isinf(), 0)              # ... but an infinite one gives inf - inf = nan
    out = (x - m).exp().sum(dim, keepdim=True).log() + m
    return out if keepdim else out.squeeze(dim)


# ============================================================================ norms
def vector_norm(input: Tensor, p: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """Vector p-norm ``sum(|x|**p) ** (1/p)`` over ``dim`` (all elements by default).

    ``p`` may be any number, ``inf``/``-inf`` (largest/smallest ``|x|``), 0 (count of non-zeros)
    or ``'fro'`` (= 2). The kernel of ``torch.linalg.vector_norm`` and of ``torch.norm``
    (``mytorch/functional.py``), which also handles the matrix norms.
    """
    if p == "fro" or p is None:
        p = 2
    _require_float("linalg.vector_norm", input)
    x = input if dtype is None else input.to(D.to_dtype(dtype))
    arr = x._data
    axes = _axes(dim, arr.ndim)
    if p in (_INF, -_INF):  # max/min of nothing: torch refuses
        _check_inf_norm(arr.shape, axes, p)
    res = wrap(contiguous_result(_vector_norm(arr, p, axes, keepdim)), x._device)
    if needs_grad(x):
        nd = arr.ndim
        out = SavedOutput(res)
        record("LinalgVectorNormBackward0", res, (x,),
               lambda g: (_norm_backward(x, out(), p, _unreduce(g, axes, keepdim, nd), axes,
                                         keepdim),), saved=(x, out))
    return res


def _check_inf_norm(shape: tuple, axes: tuple[int, ...] | None, p: float) -> None:
    """The inf-norm of an empty tensor (or over an empty dim) has no value: RuntimeError."""
    name = "inf" if p > 0 else "-inf"
    if axes is None:
        if 0 in shape:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty "
                               "tensor because the operation does not have an identity")
        return
    for d in axes:
        if shape[d] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the "
                               f"dimension {d}because this dimension is empty and the operation "
                               "does not have an identity")


@quietly
def _vector_norm(arr: Any, p: float, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
    if p == 2:
        if axes is None and not keepdim:  # a dot product: one fast BLAS call
            flat = arr.reshape(-1)
            return np.sqrt(flat.dot(flat))
        return np.sqrt((arr * arr).sum(axis=axes, keepdims=keepdim))
    if p == 0:
        return (arr != 0).sum(axis=axes, keepdims=keepdim, dtype=arr.dtype)
    a = np.abs(arr)
    if p == _INF:
        return a.max(axis=axes, keepdims=keepdim)
    if p == -_INF:
        return a.min(axis=axes, keepdims=keepdim)
    if p == 1:
        return a.sum(axis=axes, keepdims=keepdim)
    return (a ** p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)


def _norm_backward(x: Tensor, res: Tensor, p: float, g: Tensor, axes: Any,
                   keepdim: bool) -> Tensor:
    """torch's subgradients: 0 where the norm is 0; ties of the inf-norm share evenly."""
    nd = x._data.ndim
    if p == 0:
        return g.expand(tuple(x.shape)) * 0.0
    if p == 1:
        return g * x.sign()
    r = _unreduce(res, axes, keepdim, nd)
    if p in (_INF, -_INF):
        weights = _tie_weights(np.abs(x._data), _keep(res._data, axes, keepdim, nd), axes)
        return g * x.sign() * wrap(weights, x._device)
    zero = wrap((r._data == 0).astype(r._data.dtype), x._device)  # avoid 0/0 at the origin
    if p == 2:
        return g * x / (r + zero)
    return g * x.sign() * x.abs().pow(p - 1) / (r + zero).pow(p - 1) * (1 - zero)


# ============================================================================ ordering
def _argsort(arr: Any, d: int, descending: bool) -> Any:
    """Stable argsort along ``d``; NaN counts as the largest value, like torch."""
    if not descending:
        return arr.argsort(axis=d, kind="stable")
    # Sort the reversed array ascending, then reverse the result: descending order, ties kept in
    # their original order, and NaN first.
    flip = tuple(slice(None, None, -1) if i == d else slice(None) for i in range(arr.ndim))
    return (arr.shape[d] - 1) - arr[flip].argsort(axis=d, kind="stable")[flip]


def sort(input: Tensor, dim: int = -1, descending: bool = False, *,
         stable: bool = False) -> Any:
    """Sorted values along ``dim`` and where each came from: ``(values, indices)``.

    mytorch always sorts stably (equal elements keep their order), which ``stable=False`` allows.
    """
    arr, d = _along(input, dim)
    idx = _argsort(arr, d, descending)
    if arr.ndim > 1:  # like torch, the results are laid out like the input (empty_like)
        idx = preserve_layout(idx, input)
    return _select("SortBackward0", input, idx, d, False, return_types.sort)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable=stable).indices


def msort(input: Tensor) -> Tensor:
    """Values sorted along the first dimension."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``."""
    arr, d = _along(input, dim)
    if not 0 <= k <= arr.shape[d]:
        raise RuntimeError("selected index k out of range")
    idx = _argsort(arr, d, largest).take(range(k), axis=d)
    return _select("TopkBackward0", input, idx, d, False, return_types.topk)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``."""
    arr, d = _along(input, dim)
    if not 1 <= k <= arr.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    idx = _argsort(arr, d, False).take([k - 1], axis=d)
    return _select("KthvalueBackward0", input, idx, d, not keepdim, return_types.kthvalue)


def _median_of_all(input: Tensor, along: Callable, name: str) -> Tensor:
    """``median``/``nanmedian`` of every element: ``along`` dim 0 of the flattened values, with
    one node on ``input`` whose ties share the gradient evenly (as for max())."""
    flat = input._data.reshape(-1)
    if flat.size == 0:
        return wrap(xp_for(input._device).full((), math.nan, dtype=flat.dtype), input._device)
    res = along(wrap(flat, input._device), 0).values  # a fresh tensor: nothing recorded
    if needs_grad(input):
        out = SavedOutput(res)
        record(name, res, (input,),
               lambda g: (g * wrap(_tie_weights(input._data, out.data, None), input._device),),
               saved=(input, out))
    return res


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median; NaN if there is one. With ``dim``: ``(values, indices)``."""
    if dim is None:
        return _median_of_all(input, median, "MedianBackward0")
    arr, d = _along(input, dim)
    idx = _argsort(arr, d, False).take([(arr.shape[d] - 1) // 2], axis=d)
    if arr.dtype.kind == "f":  # a NaN anywhere in a slice makes its median NaN
        nan = np.isnan(arr)
        idx = np.where(nan.any(axis=d, keepdims=True), nan.argmax(axis=d, keepdims=True), idx)
    return _select("MedianBackward1", input, idx, d, not keepdim, return_types.median)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along ``dim`` (ties: the smallest; NaN never repeats) and the index
    of its last occurrence: ``(values, indices)``."""
    arr, d = _along(input, dim)
    host = np.moveaxis(arr.get() if hasattr(arr, "get") else arr, d, -1)
    rows = host.reshape(-1, host.shape[-1])
    order = rows.argsort(axis=1, kind="stable")  # equal values keep their order: the run's last
    picked = np.zeros(len(rows), np.int64)       # element is the value's last occurrence
    for r, (row, o) in enumerate(zip(rows, order, strict=True)):
        s = row[o]
        starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
        lengths = np.diff(np.append(starts, len(s)))
        k = int(lengths.argmax())                # the first longest run: the smallest value
        picked[r] = o[starts[k] + lengths[k] - 1]
    idx = np.moveaxis(picked.reshape(host.shape[:-1] + (1,)), -1, d)
    idx = xp_for(input._device).asarray(idx)
    return _select("ModeBackward0", input, idx, d, not keepdim, return_types.mode)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """:func:`median` of the values that are not NaN (NaN only where every value is NaN)."""
    if dim is None:
        return _median_of_all(input, nanmedian, "NanmedianBackward0")
    arr, d = _along(input, dim)
    if arr.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    order = _argsort(arr, d, False)  # NaN sorts last
    count = (~np.isnan(arr)).sum(axis=d, keepdims=True) if arr.dtype.kind == "f" else arr.shape[d]
    k = np.maximum(count - 1, 0) // 2  # an all-NaN slice picks its first NaN
    idx = np.take_along_axis(order, np.broadcast_to(k, order.shape[:d] + (1,) + order.shape[d + 1:]),
                             axis=d)
    return _select("NanmedianBackward1", input, idx, d, not keepdim, return_types.nanmedian)


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    """torch's ``quantile_compute``: sort, turn each q into a rank, gather the values around it
    and ``lerp`` between them — ops with gradients, so the result is differentiable."""
    if not isinstance(q, Tensor):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        q = input.new_tensor(q) if input.dtype.is_floating_point else input.new_tensor(float(q))
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    ndim = input.dim()
    wdim = wrap_dim(0 if dim is None else dim, ndim)
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.dim() > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    check_same_device(input, q)
    if not bool(((q >= 0) & (q <= 1)).all()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if dim is not None and ndim > 0:
        out_shape = list(input.shape)
        if keepdim:
            out_shape[wdim] = 1
        else:
            del out_shape[wdim]
    else:
        out_shape = [1] * ndim if keepdim else []
    out_shape.insert(0, q.numel())  # q as 1-d; a scalar q's dimension is squeezed at the end
    if dim is None:
        sorted_ = input.flatten().sort().values
    elif wdim == ndim - 1:
        sorted_ = input.sort().values
    else:
        sorted_ = input.unsqueeze(-1).transpose(wdim, -1).sort().values
    sorted_ = sorted_.view(out_shape[1:] + [sorted_.size(-1)])  # (*out_shape without q, n)
    if sorted_.size(-1) > 2 ** 24:
        raise RuntimeError("quantile() input tensor is too large")
    if ignore_nan:  # ranks among the values that are not NaN; all NaN: rank 0, a NaN result
        ranks = q * (sorted_.isnan().logical_not_().sum(-1, True) - 1)
        ranks.masked_fill_(ranks < 0, 0)
    else:  # a NaN in the slice: the last rank, which holds it (NaN sorts last)
        last = sorted_.size(-1) - 1
        scaled, has_nan = broadcast_tensors(q * last, sorted_.isnan().any(-1, True))
        ranks = scaled.masked_fill(has_nan, last)
    if interpolation == "lower":
        ranks.floor_()
    elif interpolation == "higher":
        ranks.ceil_()
    elif interpolation == "nearest":
        ranks.round_()
    ranks_below = ranks.long()
    values = sorted_.gather(-1, ranks_below)
    if interpolation in ("linear", "midpoint"):
        weights = (full_like(ranks, 0.5).masked_fill_(ranks.eq(ranks_below), 0)
                   if interpolation == "midpoint" else ranks - ranks_below)
        values_above = sorted_.gather(-1, ranks.ceil_().long())
        values.lerp_(values_above, weights)
    if q.dim() == 0:
        values.squeeze_(-1)
    else:
        values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)
    return values


def quantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """The ``q``-th quantiles (``q`` a number or a 1-d tensor in [0, 1]) over ``dim`` (all
    elements by default), interpolating between the two nearest ranks; NaN if a slice holds NaN.
    A 1-d ``q`` puts one result per ``q`` along a new first dimension."""
    return _to_out(_quantile(input, q, dim, keepdim, interpolation, False), out)


def nanquantile(input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """:func:`quantile` of the values that are not NaN (NaN only where every value is NaN)."""
    return _to_out(_quantile(input, q, dim, keepdim, interpolation, True), out)


# ============================================================================ unique and counting
def _unique_sorted_fast(x: Tensor) -> tuple:
    """:func:`unique_sorted` by the array library's ``unique`` (the same sort, in one call;
    ``unique`` makes that call itself while this is the active piece)."""
    vals, inverse, counts = xp_for(x._device).unique(x._data, return_inverse=True,
                                                     return_counts=True, equal_nan=False)
    return (wrap(vals, x._device), wrap(inverse.astype(np.int64, copy=False), x._device),
            wrap(counts.astype(np.int64, copy=False), x._device))


@piece("01.8", fast=_unique_sorted_fast)
def unique_sorted(x: "Tensor") -> tuple:
    """``(values, inverse, counts)`` of a non-empty 1-D tensor ``x``: its distinct values in
    ascending order, for each element of ``x`` the position of its value (``values[inverse]``
    equals ``x``), and how often each value occurs; ``inverse`` and ``counts`` are int64.
    As in torch, NaN never equals NaN: every NaN is a distinct value."""
    s, order = x.sort()
    change = s[1:] != s[:-1]                     # True where a new value begins...
    starts = cat([change.new_ones(1), change])   # ...and the first element begins one
    values = s[starts]
    run = starts.long().cumsum(0) - 1            # the value each sorted element belongs to
    inverse = run.new_empty(run.shape)
    inverse[order] = run                         # back to the elements' own places
    first = starts.nonzero().reshape(-1)         # where each run of equal values begins
    ends = cat([first[1:], first.new_tensor([len(s)])])
    return values, inverse, ends - first


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct values (sorted); optionally where each input came from and how often.

    As in torch, NaN never equals NaN: every NaN is a distinct value (``[1, nan, nan]`` stays
    ``[1, nan, nan]``; NumPy would merge them), and so is every slice (``dim``) that holds one.
    Without ``dim`` this is the piece :func:`unique_sorted` on the flattened input.
    """
    xp = xp_for(input._device)
    arr = input._data
    if dim is None and arr.size and pieces.unique_sorted is not _unique_sorted_fast:
        vals, inverse, counts = (t._data for t in
                                 pieces.unique_sorted(wrap(arr.reshape(-1), input._device)))
        return _pack(input, vals, inverse.reshape(arr.shape), counts, return_inverse,
                     return_counts)
    axis = None if dim is None else wrap_dim(dim, arr.ndim)  # the fast path, in one call
    vals, inverse, counts = xp.unique(arr, return_inverse=True, return_counts=True, axis=axis,
                                      equal_nan=False)
    inverse = inverse.reshape(arr.shape if axis is None else (arr.shape[axis],))
    return _pack(input, vals, inverse, counts, return_inverse, return_counts)


def _pack(input: Tensor, vals: Any, inverse: Any, counts: Any, return_inverse: bool,
          return_counts: bool) -> Any:
    dev = input._device
    out = [wrap(vals, dev)]
    if return_inverse:
        out.append(wrap(inverse.astype(np.int64, copy=False), dev))
    if return_counts:
        out.append(wrap(counts.astype(np.int64, copy=False), dev))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Collapse each run of equal consecutive values (or slices along ``dim``) to one."""
    xp = xp_for(input._device)
    arr = input._data
    if dim is None:
        seq, shape = arr.reshape(-1), arr.shape
    else:
        d = wrap_dim(dim, arr.ndim)
        seq, shape = xp.moveaxis(arr, d, 0), (arr.shape[d],)
    n = seq.shape[0]
    change = (seq[1:] != seq[:-1]).reshape(builtins.max(n - 1, 0), -1).any(axis=1)
    starts = xp.concatenate([xp.ones(builtins.min(n, 1), dtype=bool), change])
    vals = seq[starts]
    if dim is not None:
        vals = xp.moveaxis(vals, 0, d)
    inverse = (starts.cumsum() - 1).reshape(shape)
    bounds = xp.concatenate([xp.flatnonzero(starts), xp.asarray([n])])
    return _pack(input, vals, inverse, bounds[1:] - bounds[:-1], return_inverse, return_counts)


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    """How many elements are not zero (over ``dim``), as int64."""
    arr = input._data
    axes = _axes(dim, arr.ndim)
    xp = xp_for(input._device)
    return wrap(xp.asarray(xp.count_nonzero(arr, axis=axes), dtype=np.int64), input._device)


def _logical(name: str, input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    arr = input._data
    axes = _axes(dim, arr.ndim)
    res = arr.any(axis=axes, keepdims=keepdim) if name == "any" else \
        arr.all(axis=axes, keepdims=keepdim)
    return wrap(contiguous_result(res.astype(np.uint8) if arr.dtype == np.uint8 else res),
                input._device)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True if any element (over ``dim``) is non-zero; bool result (uint8 for uint8 input)."""
    return _logical("any", input, dim, keepdim)


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True if every element (over ``dim``) is non-zero; bool result (uint8 for uint8 input)."""
    return _logical("all", input, dim, keepdim)


# ============================================================================ Tensor methods
for _fn in (sum, nansum, mean, nanmean, var, std, max, min, amax, amin, aminmax, argmax, argmin,
            prod, cumsum, cumprod, logsumexp, median, nanmedian, quantile, nanquantile, mode,
            kthvalue, topk, sort, argsort, msort, unique, unique_consecutive, count_nonzero, any,
            all):
    tensor_method(_fn.__name__)(_fn)
del _fn


# ============================================================================ in-place scans
def _scan_inplace(fn: Any) -> Any:
    """``cumsum_``/``cumprod_``: the scan in self's own dtype, written into self."""
    def scan(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
        if dtype is not None and D.to_dtype(dtype) is not input.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_c_type(input.dtype)} and "
                               f"output tensor dtype {_c_type(D.to_dtype(dtype))} should match")
        return fn(input, dim, dtype=input.dtype)

    scan.__name__ = scan.__qualname__ = fn.__name__
    return _inplace_version(scan)


def _c_type(dt: D.dtype) -> str:
    return _c_name(dt)


tensor_method("cumsum_")(_scan_inplace(cumsum))
tensor_method("cumprod_")(_scan_inplace(cumprod))


# ============================================================================ running extremes
def _cum_extreme(name: str, input: Tensor, dim: int) -> Any:
    """``cummax``/``cummin``: the running max (min) along ``dim`` and where it was last seen.

    As in torch, an equal value takes over the index (``[1, 3, 3]`` gives indices ``[0, 1, 2]``)
    and NaN, once met, stays the answer (each new NaN takes over the index).
    """
    arr, d = _along(input, dim)
    xp = xp_for(input._device)
    if arr.dtype.kind == "c":
        raise _not_implemented_for(name, input.dtype)
    acc = (np.maximum if name == "cummax" else np.minimum).accumulate(arr, axis=d) \
        if arr.size else arr.copy()
    hit = arr == acc
    if arr.dtype.kind == "f":
        hit |= np.isnan(arr) & np.isnan(acc)
    pos = xp.arange(arr.shape[d]).reshape((-1,) + (1,) * (arr.ndim - d - 1)) if arr.ndim else \
        xp.zeros(1, dtype=np.int64)
    idx = np.maximum.accumulate(xp.where(hit, pos, 0), axis=d) if arr.size else \
        xp.zeros(arr.shape, dtype=np.int64)
    shape = input._data.shape
    values = wrap(contiguous_result(acc.reshape(shape)), input._device)
    indices = wrap(contiguous_result(idx.astype(np.int64, copy=False).reshape(shape)),
                   input._device)
    if needs_grad(input):
        index = indices

        def backward(g: Tensor) -> tuple:  # each output's gradient goes to the element it copied
            if not g.ndim:
                return (g,)
            return (g.new_zeros(g.shape).scatter_add(d, index, g),)

        record("CummaxBackward0" if name == "cummax" else "CumminBackward0", values, (input,),
               backward, saved=(indices,))
    return getattr(return_types, name)(values, indices)


def _not_implemented_for(name: str, dt: D.dtype) -> NotImplementedError:
    return NotImplementedError(f'"{name}_cpu" not implemented for \'{_cap(dt)}\'')


def cummax(input: Tensor, dim: int) -> Any:
    """Running maximum along ``dim``: ``(values, indices)``; the gradient goes to the index."""
    return _cum_extreme("cummax", input, dim)


def cummin(input: Tensor, dim: int) -> Any:
    """Running minimum along ``dim``: ``(values, indices)``; the gradient goes to the index."""
    return _cum_extreme("cummin", input, dim)


# ============================================================================ counting
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, 2, ... occurs in a 1-D tensor of non-negative integers.

    With ``weights``, each occurrence adds its weight instead of 1 (float32 weights give a
    float32 result, any other weights float64, as in torch). At least ``minlength`` bins.
    """
    if input.dtype._cat != D._INT:
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{_cap(input.dtype)}\'')
    arr = input._host()
    if arr.ndim != 1 or (arr.size and arr.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    w = None
    if weights is not None:
        if weights._data.ndim != 1 or weights._data.shape[0] != arr.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
        w = weights._host().astype(np.float32 if weights.dtype is D.float32 else np.float64)
    counts = np.bincount(arr.astype(np.int64), weights=w, minlength=minlength)
    if w is None:
        counts = counts.astype(np.int64, copy=False)
    else:
        counts = counts.astype(w.dtype, copy=False)
    return _place(counts, input._device)


tensor_method("cummax")(cummax)
tensor_method("cummin")(cummin)
tensor_method("bincount")(bincount)
__all__ += ["cummax", "cummin", "bincount"]
