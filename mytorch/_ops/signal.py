"""Signal helpers: window functions (hann, hamming, blackman, bartlett, kaiser) and histograms.

A window of length ``N`` tapers a signal's ends before an FFT. torch's windows are *periodic*
by default: the symmetric window of length ``N + 1`` with its last (repeated) value dropped,
which is what ``stft`` wants. The arithmetic below follows torch's kernels step by step (in
the requested dtype) so that the numbers match to the last bit.
"""
from __future__ import annotations

import builtins
import collections
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .._creation import _place
from .._device import as_device, xp_for
from .._tensor import Tensor, tensor_method, wrap
from ._variants import _cap, _to_out
from .linalg import _C_NAMES

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "histc", "histogram"]


# ------------------------------------------------------------------------ windows
def _window(name: str, window_length: Any, periodic: bool, dtype: Any, device: Any,
            requires_grad: bool, formula: Callable[[int, np.dtype], np.ndarray]) -> Tensor:
    """Check the arguments, then build ``formula(N, dtype)`` (symmetric, length ``N``)."""
    if not isinstance(window_length, numbers.Integral) or isinstance(window_length, builtins.bool):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_C_NAMES[dt.name]}, device=cpu, layout=Strided (default))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        arr = np.ones(window_length, dtype=dt.np)
    else:
        n = window_length + 1 if periodic else window_length
        arr = formula(n, dt.np)[:window_length]
    return _place(np.ascontiguousarray(arr), as_device(device), requires_grad)


def _steps(dt: np.dtype) -> tuple[Callable, Callable]:
    """How torch's kernels round: every Python number becomes a ``dt`` scalar first, and half
    precision is computed in float32 but rounded back to half after every op.

    Returns ``(scalar, rounded)``: ``scalar(x)`` for constants, ``rounded(arr)`` after each op.
    """
    if dt == np.float16:
        return (lambda x: np.float32(np.float16(x)),
                lambda x: x.astype(np.float16).astype(np.float32))
    return dt.type, lambda x: x


def _ramp(n: int, dt: np.dtype, step: float) -> np.ndarray:
    """``k * step`` for ``k = 0 .. n-1``, rounded like torch's ``arange(n).mul_(step)``."""
    f, r = _steps(dt)
    return r(np.arange(n, dtype=np.float32 if dt == np.float16 else dt) * f(step))


def _cosine_sum(n: int, dt: np.dtype, alpha: float, beta: float) -> np.ndarray:
    """``alpha - beta · cos(2πk / (n-1))`` (hamming; hann is alpha = beta = 0.5)."""
    f, r = _steps(dt)
    w = r(np.cos(_ramp(n, dt, math.pi * 2.0 / (n - 1))))
    return r(r(w * f(-beta)) + f(alpha)).astype(dt)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, pin_memory: bool = False,
                requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2πk / (N-1))``: the raised cosine, zero at both ends."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, dt: _cosine_sum(n, dt, 0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, pin_memory: bool = False,
                   requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2πk / (N-1))``: like hann, but the ends stay at ``alpha - beta``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, dt: _cosine_sum(n, dt, alpha, beta))


def _blackman(n: int, dt: np.dtype) -> np.ndarray:
    f, r = _steps(dt)
    w = _ramp(n, dt, math.pi / (n - 1))
    big = r(r(np.cos(r(w * f(4)))) * f(0.08))
    small = r(r(np.cos(r(w * f(2)))) * f(0.5))
    return r(r(big - small) + f(0.42)).astype(dt)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2πk/(N-1)) + 0.08 cos(4πk/(N-1))``: lower side lobes than hann."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _blackman)


def _bartlett(n: int, dt: np.dtype) -> np.ndarray:
    f, r = _steps(dt)
    w = _ramp(n, dt, 2.0 / (n - 1))
    half = (n - 1) // 2 + 1
    w[half:] = r(r(w[half:] * f(-1)) + f(2))
    return w.astype(dt)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, pin_memory: bool = False,
                    requires_grad: bool = False) -> Tensor:
    """The triangle ``1 - |2k/(N-1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   _bartlett)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """``I0(β √(1 - ((k - a)/a)²)) / I0(β)`` with ``a = (N-1)/2`` and ``I0`` the modified
    Bessel function; larger ``beta`` gives a narrower window."""

    def formula(n: int, dt: np.dtype) -> np.ndarray:
        a = (n - 1) / 2.0
        k = np.arange(n, dtype=np.float64)
        w = np.i0(beta * np.sqrt(np.abs(1 - ((k - a) / a) ** 2))) / np.i0(beta)
        return w.astype(np.float32 if dt == np.float16 else dt).astype(dt)

    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   formula)


# ------------------------------------------------------------------------ histograms
def histc(input: Tensor, bins: int = 100, min: Any = 0, max: Any = 0, *,  # noqa: A002
          out: Tensor | None = None) -> Tensor:
    """Counts of ``input``'s elements in ``bins`` equal-width bins spanning ``[min, max]``.

    With ``min == max`` (the default 0, 0) the data's own minimum and maximum are used.
    Elements outside the range are ignored; the last bin includes its right edge. The result
    has ``input``'s (floating) dtype. Not differentiable (counts have no gradient).
    """
    if not isinstance(bins, numbers.Integral) or isinstance(bins, builtins.bool):
        raise TypeError(f"histc(): argument 'bins' must be int, not {type(bins).__name__}")
    if not input.dtype.is_floating_point:
        kernel = "linspace_cpu" if input.dtype is D.bool else "histogram_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_cap(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input._data.reshape(-1)
    lo, hi = float(min), float(max)
    from_data = lo == hi and x.size > 0
    if from_data:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    f = x.dtype.type
    lo_t, hi_t = f(lo), f(hi)  # torch's outer bin edges, in the input's dtype
    if not from_data:  # every element is inside a range taken from the data
        x = x[(x >= lo_t) & (x <= hi_t)]
    pos = x - lo_t  # bin = (x - lo) * bins / (hi - lo), in torch's order, in place
    pos *= bins
    pos /= hi_t - lo_t
    idx = pos.astype(np.int64)
    idx.clip(0, bins - 1, out=idx)  # x == hi lands in the last bin
    counts = xp_for(input._device).bincount(idx, minlength=bins)
    return _to_out(wrap(counts.astype(x.dtype), input._device), out)


_Histogram = collections.namedtuple("histogram", ["hist", "bin_edges"])


def histogram(input: Tensor, bins: Any, *, range: Any = None, weight: Tensor | None = None,  # noqa: A002
              density: bool = False, out: Any = None) -> Any:
    """``(hist, bin_edges)``: ``bins`` an int (equal widths over ``range`` or the data's span)
    or a 1-D tensor of increasing edges; ``weight`` per element; ``density`` normalises."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_cap(input.dtype)}'")
    x = input._host().reshape(-1)
    edges = bins._host() if isinstance(bins, Tensor) else bins
    w = None if weight is None else weight._host().reshape(-1)
    hist, edges = np.histogram(x, edges, range=range, weights=w, density=density)
    dev = input._device
    return _Histogram(_place(hist.astype(x.dtype), dev), _place(edges.astype(x.dtype), dev))


tensor_method("histc")(histc)
tensor_method("histogram")(histogram)
