"""Random sampling: ``rand``, ``randn``, ``randint``, ``randperm``, ``normal``, ``multinomial``,
``bernoulli``, ``poisson``, the ``*_like`` versions and the in-place samplers (``uniform_``,
``normal_``, ``random_``, ``exponential_``, ``bernoulli_``, ``geometric_``, ``cauchy_``, ``log_normal_``).

Every draw comes from a :class:`mytorch.Generator` — the default one unless ``generator=`` is
given — as a NumPy array on the host; for a CUDA tensor it is then copied to the device and any
arithmetic with the tensor's data (``mean + std * z``, ``u < p``) happens there.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import _place, like_layout, zeros, zeros_like
from .._device import as_device, cuda_backend, device, xp_for
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.graph import needs_grad, record
from ..random import Generator, default_generator, device_generator
from ._operands import broadcast_pair, check_no_overlap, size_args, star_or_keyword
from ._variants import _cap, _to_out, inplace

__all__ = ["rand", "randn", "randint", "randperm", "normal", "multinomial", "bernoulli", "poisson",
           "rand_like", "randn_like", "randint_like"]

# C++ type names torch uses in its bounds messages ("to - 1 is out of bounds for short int").
_C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
            "int32": "int", "int64": "long int", "float16": "c10::Half", "float32": "float",
            "float64": "double"}


# ------------------------------------------------------------------------ helpers
def _rng(generator: Generator | None, dev: device) -> np.random.Generator:
    """The NumPy generator to draw from: the device's default generator (each CUDA device has its
    own), or an explicit one, which must have the tensor's device type (as in torch)."""
    if generator is None:
        return default_generator._np if dev.type == "cpu" else device_generator(dev.index or 0)._np
    g = generator
    if g.device.type != dev.type:
        raise RuntimeError(f"Expected a '{dev.type}' device type for generator but found "
                           f"'{g.device.type}'")
    return g._np


def _on(arr: np.ndarray, dev: device) -> Any:
    """A host array moved to ``dev`` (unchanged for the CPU)."""
    return arr if dev.type == "cpu" else cuda_backend().to_device(arr, dev.index)


def _num(x: float) -> str:
    """A number the way torch's C++ messages print it: ``1.5``, ``-1``, ``2``."""
    return f"{x:g}"


def _require_float(dt: D.dtype, kernel: str) -> None:
    if not (dt.is_floating_point or dt.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_cap(dt)}'")


def _float_dtype(dtype: Any) -> D.dtype:
    return D.get_default_dtype() if dtype is None else D.to_dtype(dtype)


def _sizes(size: tuple, fname: str) -> tuple[int, ...]:
    if not size:
        raise TypeError(f"{fname}() received an invalid combination of arguments - got (), but "
                        "expected one of: (tuple of ints size, *, torch.Generator generator, ...)")
    return size_args(size)


def _draw(rng: np.random.Generator, kind: str, shape: tuple, dt: D.dtype) -> np.ndarray:
    """Standard ``'uniform'`` [0, 1) or standard ``'normal'`` draws of a float/complex dtype."""
    if dt.is_complex:  # real and imaginary parts side by side; normal: each part has variance 1/2
        pairs = _draw(rng, kind, tuple(shape) + (2,), dt.to_real())
        if kind == "normal":
            pairs *= math.sqrt(0.5)
        return pairs.view(dt.np)[..., 0]
    if dt is D.float16:
        if kind == "uniform":  # 11-bit grid: exact in half precision, so never rounds up to 1.0
            return (rng.integers(0, 2 ** 11, shape) * 2.0 ** -11).astype(np.float16)
        return rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    if kind == "uniform":
        return rng.random(shape, dtype=dt.np)
    return rng.standard_normal(shape, dtype=dt.np)


def _zero_grads(*inputs: Any) -> Callable[[Tensor], tuple]:
    """Backward of a sampler: the samples do not depend smoothly on the parameters (zeros)."""
    shapes = [(tuple(x.shape), x.dtype, x.device) if isinstance(x, Tensor) else None for x in inputs]
    return lambda g: tuple(None if s is None else zeros(s[0], dtype=s[1], device=s[2])
                           for s in shapes)


# ------------------------------------------------------------------------ factories
def rand(*size: Any, generator: Generator | None = None, out: Tensor | None = None,
         dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False,
         pin_memory: bool = False, **kwargs: Any) -> Tensor:
    """Uniform samples on [0, 1) with the given shape."""
    size = star_or_keyword(size, kwargs, "size", "rand")
    shape, dt, dev = _sizes(size, "rand"), _float_dtype(dtype), as_device(device)
    _require_float(dt, "check_uniform_bounds")
    res = _place(_draw(_rng(generator, dev), "uniform", shape, dt), dev, requires_grad)
    return _to_out(res, out)


def randn(*size: Any, generator: Generator | None = None, out: Tensor | None = None,
          dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False,
          pin_memory: bool = False, **kwargs: Any) -> Tensor:
    """Standard normal samples (mean 0, variance 1) with the given shape."""
    size = star_or_keyword(size, kwargs, "size", "randn")
    shape, dt, dev = _sizes(size, "randn"), _float_dtype(dtype), as_device(device)
    _require_float(dt, "normal_kernel_cpu")
    res = _place(_draw(_rng(generator, dev), "normal", shape, dt), dev, requires_grad)
    return _to_out(res, out)


def randint(*args: Any, size: Any = None, generator: Generator | None = None,
            out: Tensor | None = None, dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False, pin_memory: bool = False, **bounds: Any) -> Tensor:
    """Integers drawn uniformly from [low, high): ``randint(high, size)`` or ``randint(low, high, size)``
    (the bounds may be named too: ``randint(low=0, high=5, size=(3,))``)."""
    for k in bounds:
        if k not in ("low", "high"):
            raise TypeError(f"randint() got an unexpected keyword argument '{k}'")
    if "high" in bounds:
        args = (*args, *(() if "low" not in bounds else (bounds["low"],)), bounds["high"])
    elif "low" in bounds:
        raise TypeError("randint() missing required argument 'high'")
    if size is None and args:
        *args, size = args
    if not 1 <= len(args) <= 2 or not isinstance(size, (tuple, list)) or \
            not all(isinstance(a, numbers.Integral) for a in args):
        got = ", ".join(type(a).__name__ for a in (*args, size))
        raise TypeError(f"randint() received an invalid combination of arguments - got ({got}), but "
                        "expected (int low, int high, tuple of ints size, *, ...) or (int high, "
                        "tuple of ints size, *, ...)")
    low, high = (0, args[0]) if len(args) == 1 else args
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    _check_int_range(int(low), int(high), dt)
    dev = as_device(device)
    arr = _rng(generator, dev).integers(low, high, size_args((size,)), dtype=np.int64)
    res = _place(arr if dt is D.int64 else arr.astype(dt.np), dev, requires_grad)
    return _to_out(res, out)


def _check_int_range(low: int, high: int, dt: D.dtype) -> None:
    """torch's checks for drawing integers from [low, high) into dtype ``dt``."""
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    if dt.is_floating_point or dt.is_complex:
        return
    lo, hi = (0, 1) if dt is D.bool else (D.iinfo(dt).min, D.iinfo(dt).max)
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {_C_NAMES[dt.name]}")
    if not lo <= high - 1 <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {_C_NAMES[dt.name]}")


def randperm(n: int, *, generator: Generator | None = None, out: Tensor | None = None,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of ``0 … n-1`` (int64 by default)."""
    dt = D.int64 if dtype is None else D.to_dtype(dtype)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dt is D.bool:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if dt._cat == D._INT and n > 0 and n - 1 > D.iinfo(dt).max:
        raise RuntimeError(f"value cannot be converted to type {dt.name}_t without overflow")
    dev = as_device(device)
    arr = _rng(generator, dev).permutation(n)
    return _to_out(_place(arr.astype(dt.np, copy=False), dev, requires_grad), out)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           out: Tensor | None = None, dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """Normal samples ``mean + std * z``; ``mean`` and/or ``std`` may be tensors (broadcast).

    With two numbers a ``size`` is required. The samples carry a zero gradient for tensor
    parameters (like torch: use ``distributions.Normal.rsample`` for reparameterised samples).
    """
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mt or st):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, "
                            "float), but expected one of: (Tensor mean, Tensor std, ...), (Tensor "
                            "mean, float std = 1, ...), (float mean, Tensor std, ...), (float mean, "
                            "float std, tuple of ints size, ...)")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
        z = randn(size_args((size,)), generator=generator, dtype=dtype, device=device)
        z._data *= std
        z._data += mean
        if requires_grad:
            z.requires_grad_(True)
        return _to_out(z, out)
    like = mean if mt else std
    _require_float(like.dtype, "normal_kernel_cpu")
    dev, xp = like._device, xp_for(like._device)
    m = mean._data if mt else mean
    s = std._data if st else std
    if st:
        if bool((s < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    shape = broadcast_pair(np.shape(m), np.shape(s))
    z = _on(_draw(_rng(generator, dev), "normal", shape, like.dtype), dev)
    res = wrap(xp.asarray(z * s + m).astype(like.dtype.np, copy=False), dev)
    if needs_grad(mean, std):
        name = "NormalBackward3" if mt and st else ("NormalBackward1" if mt else "NormalBackward2")
        inputs = tuple(x for x in (mean, std) if isinstance(x, Tensor))
        record(name, res, inputs, _zero_grads(*inputs))
    return _to_out(res, out)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out: Tensor | None = None) -> Tensor:
    """Indices drawn from each row of ``input`` (unnormalised probabilities): int64.

    Without replacement the first pick follows ``input``; each later pick renormalises over the
    categories left. Implemented as a race: each category gets the key ``p / E`` with E ~ Exp(1),
    and the ``num_samples`` largest keys win, in order (the "exponential / Gumbel top-k" trick).
    """
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_cap(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n_cat = input.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    dev, xp = input._device, xp_for(input._device)
    p = input._data.reshape(-1, n_cat).astype(np.float64)
    if bool(((p < 0) | ~xp.isfinite(p)).any()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if bool((p.sum(axis=-1) <= 0).any()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng, rows = _rng(generator, dev), p.shape[0]
    if replacement:
        # Inverse-CDF sampling for every row at once: shift row r's CDF (in [0, 1]) and its
        # uniforms by r, so one sorted search over the flattened CDFs serves all rows.
        cdf = p.cumsum(axis=-1)
        cdf /= cdf[:, -1:]
        offset = xp.arange(rows, dtype=np.float64)[:, None]
        u = _on(rng.random((rows, num_samples)), dev) + offset
        flat = xp.searchsorted((cdf + offset).ravel(), u.ravel(), side="right")
        idx = flat.reshape(rows, num_samples) - (offset * n_cat).astype(np.int64)
        idx = idx.clip(0, n_cat - 1)
    else:
        keys = p / _on(rng.standard_exponential((rows, n_cat)), dev)
        idx = (-keys).argsort(axis=-1, kind="stable")[:, :num_samples]
    idx = idx.astype(np.int64, copy=False)
    res = wrap(idx.reshape(num_samples) if input.ndim == 1 else idx, dev)
    return _to_out(res, out)


def bernoulli(input: Tensor, p: float | None = None, *, generator: Generator | None = None,
              out: Tensor | None = None) -> Tensor:
    """1 with probability ``input`` (or the number ``p``), else 0; same dtype as ``input``."""
    _require_float(input.dtype, "bernoulli_tensor_cpu_p_")
    dev = input._device
    probs = input._data if p is None else _check_p(p)
    if p is None and bool((~((probs >= 0) & (probs <= 1))).any()):
        raise RuntimeError(_P_IN_MESSAGE)
    u = _on(_rng(generator, dev).random(input._data.shape), dev)
    res = wrap((u < probs).astype(input.dtype.np), dev)
    if needs_grad(input):
        record("BernoulliBackward0" if p is None else "BernoulliBackward1", res, (input,),
               _zero_grads(input))
    return _to_out(res, out)


_P_IN_MESSAGE = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                 "message be improved?  If so, please report an enhancement request to PyTorch.)")


def _check_p(p: float) -> float:
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(p)}")
    return p


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson samples with rates ``input`` (floating dtype kept).

    NumPy's sampler needs the rates on the host, so CUDA rates are copied there and back.
    """
    _require_float(input.dtype, "poisson_cpu")
    lam = input._host()
    if bool((lam < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = _rng(generator, input._device).poisson(lam).astype(input.dtype.np)
    res = wrap(_on(draws, input._device), input._device)
    if needs_grad(input):
        record("PoissonBackward0", res, (input,), _zero_grads(input))
    return res


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
              layout: Any = None, device: Any = None, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    """``rand`` with ``input``'s shape, dtype, device and memory layout (unless overridden)."""
    return like_layout(rand(input.shape, generator=generator, dtype=dtype or input.dtype,
                            device=device or input.device, requires_grad=requires_grad),
                       input, memory_format)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None,
               layout: Any = None, device: Any = None, requires_grad: bool = False,
               memory_format: Any = None) -> Tensor:
    """``randn`` with ``input``'s shape, dtype, device and memory layout (unless overridden)."""
    return like_layout(randn(input.shape, generator=generator, dtype=dtype or input.dtype,
                             device=device or input.device, requires_grad=requires_grad),
                       input, memory_format)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,
                 generator: Generator | None = None, dtype: Any = None, layout: Any = None,
                 device: Any = None, requires_grad: bool = False,
                 memory_format: Any = None) -> Tensor:
    """``randint`` with ``input``'s shape, dtype and device: ``(x, high)`` or ``(x, low, high)``."""
    if high is None:
        low, high = 0, low
    return like_layout(randint(low, high, tuple(input.shape), generator=generator,
                               dtype=dtype or input.dtype, device=device or input.device,
                               requires_grad=requires_grad), input, memory_format)


# ------------------------------------------------------------------------ in-place samplers
def _fill(self: Tensor, values: np.ndarray, name: str) -> Tensor:
    """Write host ``values`` into ``self`` (any layout, any device) as an in-place op."""
    check_no_overlap(self)
    values = _on(values.astype(self.dtype.np, copy=False), self._device)
    return inplace(self, values, name, (self,), lambda g: (zeros_like(g),))


def _fast_target(self: Tensor) -> bool:
    """True when NumPy can draw straight into ``self``'s memory (saves a copy)."""
    arr = self._data
    return (type(arr) is np.ndarray and arr.flags.c_contiguous and arr.dtype in _DIRECT
            and not needs_grad(self))


_DIRECT = (np.dtype(np.float32), np.dtype(np.float64))


@tensor_method()
def uniform_(self: Tensor, from_: float = 0, to: float = 1, *,
             generator: Generator | None = None) -> Tensor:
    """Fill with uniform samples on [from, to)."""
    check_no_overlap(self)
    _require_float(self.dtype, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(from_)} > to={_num(to)}")
    rng = _rng(generator, self._device)
    if _fast_target(self):
        arr = self._data
        rng.random(out=arr, dtype=arr.dtype)
        if (from_, to) != (0, 1):
            arr *= to - from_
            arr += from_
        self._bump()
        return self
    u = _draw(rng, "uniform", self._data.shape, self.dtype)
    return _fill(self, u * (to - from_) + from_ if (from_, to) != (0, 1) else u, "UniformBackward0")


@tensor_method()
def normal_(self: Tensor, mean: float = 0, std: float = 1, *,
            generator: Generator | None = None) -> Tensor:
    """Fill with normal samples ``N(mean, std**2)``."""
    check_no_overlap(self)
    _require_float(self.dtype, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    rng = _rng(generator, self._device)
    if _fast_target(self):
        arr = self._data
        rng.standard_normal(out=arr, dtype=arr.dtype)
        if (mean, std) != (0, 1):
            arr *= std
            arr += mean
        self._bump()
        return self
    z = _draw(rng, "normal", self._data.shape, self.dtype)
    return _fill(self, z * std + mean if (mean, std) != (0, 1) else z, "NormalBackward0")


@tensor_method()
def random_(self: Tensor, *args: int | None, generator: Generator | None = None,
            **bounds: int | None) -> Tensor:
    """Fill with integers: ``random_()`` over the dtype's exact-integer range, ``random_(to)``
    from [0, to), ``random_(from, to)`` from [from, to) (``to=None``: up to that range's top).

    Like torch, the bounds may be given by name: ``random_(to=5)``, ``random_(**{"from": 1})``.
    """
    unknown = set(bounds) - {"from", "to"}
    if unknown:
        raise TypeError(f"random_() got an unexpected keyword argument '{unknown.pop()}'")
    if "from" in bounds or "to" in bounds:
        if len(args) + len(bounds) > 2 or (len(args) == 1 and "from" in bounds):
            raise TypeError("random_() got multiple values for argument 'from'")
        args = (bounds.get("from", args[0] if args else 0), bounds.get("to"))
    low, high = (0, args[0]) if len(args) == 1 else (args + (0, None))[:2]
    if high is None:  # inclusive top: the largest integer the dtype represents exactly
        mantissa = {"float16": 11, "float32": 24, "float64": 53}
        if self.dtype.name in mantissa:
            top = 2 ** mantissa[self.dtype.name]
        else:
            top = 1 if self.dtype is D.bool else D.iinfo(self.dtype).max
        _check_int_range(int(low), top + 1, self.dtype)
        draws = _rng(generator, self._device).integers(low, top, self._data.shape,
                                                       dtype=np.int64, endpoint=True)
    else:
        _check_int_range(int(low), int(high), self.dtype)
        draws = _rng(generator, self._device).integers(low, high, self._data.shape, dtype=np.int64)
    return _fill(self, draws, "RandomBackward0")


def _require_continuous(self: Tensor, what: str, type_name: str) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{what} distribution is a continuous probability distribution. dtype "
                           f"must be a floating point but you specified {type_name}")


@tensor_method()
def exponential_(self: Tensor, lambd: float = 1, *, generator: Generator | None = None) -> Tensor:
    """Fill with exponential samples of rate ``lambd`` (mean ``1/lambd``)."""
    _require_continuous(self, "Exponential", _cap(self.dtype))
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    draws = _rng(generator, self._device).exponential(1 / lambd, self._data.shape)
    return _fill(self, draws, "ExponentialBackward0")


@tensor_method()
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 1 (probability ``p``, a number or a broadcastable tensor) or 0."""
    rng = _rng(generator, self._device)
    if isinstance(p, Tensor):
        probs = p._data
        if bool((~((probs >= 0) & (probs <= 1))).any()):
            raise RuntimeError(_P_IN_MESSAGE)
        try:
            probs = xp_for(p._device).broadcast_to(probs, self._data.shape)
        except ValueError:
            raise RuntimeError(f"The expanded size of the tensor ({self.shape[-1]}) must match the "
                               f"existing size ({p.shape[-1]}) at non-singleton dimension "
                               f"{self.ndim - 1}.  Target sizes: {list(self.shape)}.  Tensor "
                               f"sizes: {list(p.shape)}") from None
        u = _on(rng.random(self._data.shape), self._device)
        check_no_overlap(self)
        return inplace(self, (u < probs).astype(self.dtype.np), "BernoulliBackward0", (self,),
                       lambda g: (zeros_like(g),))
    return _fill(self, rng.random(self._data.shape) < _check_p(p), "BernoulliBackward1")


@tensor_method()
def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, …)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    draws = _rng(generator, self._device).geometric(p, self._data.shape)
    return _fill(self, draws, "GeometricBackward0")


@tensor_method()
def cauchy_(self: Tensor, median: float = 0, sigma: float = 1, *,
            generator: Generator | None = None) -> Tensor:
    """Fill with Cauchy samples (heavy tails: no mean, no variance)."""
    _require_continuous(self, "Cauchy", _C_NAMES.get(self.dtype.name, self.dtype.name))
    draws = _rng(generator, self._device).standard_cauchy(self._data.shape)
    return _fill(self, median + sigma * draws, "CauchyBackward0")


@tensor_method()
def log_normal_(self: Tensor, mean: float = 1, std: float = 2, *,
                generator: Generator | None = None) -> Tensor:
    """Fill with ``exp(N(mean, std**2))`` samples."""
    _require_float(self.dtype, "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    draws = _rng(generator, self._device).lognormal(mean, std, self._data.shape)
    return _fill(self, draws, "LogNormalBackward0")


tensor_method("multinomial")(multinomial)
tensor_method("bernoulli")(bernoulli)
