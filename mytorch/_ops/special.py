"""Special functions: ``lgamma``, ``digamma``, ``polygamma``, ``erfinv``, ``xlogy``, ``xlog1py``,
``entr``; and ``copysign``, a float op of two tensors like ``xlogy``.

NumPy has no gamma-family functions (SciPy does, but mytorch depends on NumPy only), so each is
computed here from a classic numerical recipe, in float64, with array operations only (so the
same code runs on CuPy arrays):

* ``lgamma``: the Lanczos approximation (g = 7, 9 terms) for x ≥ 1/2, the reflection formula
  Γ(x)Γ(1-x) = π / sin(πx) below that.
* ``digamma``: the recurrence ψ(x) = ψ(x+1) - 1/x up to x ≥ 10, then the asymptotic series;
  reflection ψ(1-x) - ψ(x) = π / tan(πx) for negative x.
* ``polygamma(n, x) = (-1)^(n+1) n! ζ(n+1, x)`` with the Hurwitz zeta function summed directly,
  then finished with the Euler–Maclaurin formula (as in the Cephes library).
* ``erfinv``: M. Giles' polynomial approximations ("Approximating the erfinv function", 2010).

The derivatives chain into each other: lgamma' = digamma, digamma' = polygamma(1, ·),
polygamma(n, ·)' = polygamma(n+1, ·), erfinv'(x) = √π/2 · exp(erfinv(x)²).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtype as D
from .._device import xp_for
from .._tensor import Tensor, tensor_method, wrap
from ..autograd.graph import needs_grad, record, sum_to
from ._operands import binary_float
from ._variants import _inplace_version, _to_out

__all__ = ["lgamma", "digamma", "polygamma", "erfinv", "xlogy"]


# ------------------------------------------------------------------------ float64 kernels
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)


def _nonpositive_int(xp: Any, x: Any) -> Any:
    """The poles of Γ: 0, -1, -2, …"""
    return (x <= 0) & (x == xp.floor(x))


def _lgamma64(xp: Any, x: Any) -> Any:
    """log|Γ(x)| of a float64 array."""
    reflect = x < 0.5
    z = xp.where(reflect, 1.0 - x, x) - 1.0  # Lanczos works on z = x - 1 with x ≥ 1/2
    series = xp.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series += c / (z + i)
    t = z + _LANCZOS_G + 0.5
    lg = 0.5 * math.log(2 * math.pi) + (z + 0.5) * xp.log(t) - t + xp.log(series)
    # Γ(x) = π / (sin(πx) Γ(1-x)); reduce x to [-1, 1] first so sin stays accurate.
    sin_pi_x = xp.abs(xp.sin(math.pi * (x - 2.0 * xp.round(0.5 * x))))
    res = xp.where(reflect, math.log(math.pi) - xp.log(sin_pi_x) - lg, lg)
    res = xp.where((x == 1) | (x == 2), 0.0, res)  # Γ(1) = Γ(2) = 1 exactly
    return xp.where(_nonpositive_int(xp, x) | xp.isinf(x), np.inf, res)


_PSI_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma64(xp: Any, x: Any) -> Any:
    """ψ(x) = Γ'(x)/Γ(x) of a float64 array."""
    neg = x < 0
    z = xp.where(neg, 1.0 - x, x)
    acc = xp.zeros_like(z)
    for _ in range(10):  # ψ(z) = ψ(z+1) - 1/z until z ≥ 10 (exact at z = ±0: ∓inf)
        small = z < 10
        acc -= xp.where(small, 1.0 / xp.where(small, z, 1.0), 0.0)
        z = xp.where(small, z + 1.0, z)
    inv2 = 1.0 / (z * z)
    tail, power = xp.zeros_like(z), xp.ones_like(z)
    for c in _PSI_SERIES:
        power = power * inv2
        tail += c * power
    res = acc + xp.log(z) - 0.5 / z - tail
    frac = x - xp.round(x)  # tan(πx) = tan(π·frac): accurate for large |x|
    res = xp.where(neg, res - math.pi / xp.tan(math.pi * frac), res)
    res = xp.where(neg & (frac == 0), np.nan, res)
    return xp.where(xp.isinf(x), xp.where(x > 0, np.inf, np.nan), res)


# (2k)! / B_2k: the Euler–Maclaurin coefficients of the Hurwitz zeta tail.
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
_EPS = np.finfo(np.float64).eps / 2


def _zeta64(xp: Any, s: float, q: Any) -> Any:
    """Hurwitz zeta ζ(s, q) = Σ_k (q+k)^-s for an integer s ≥ 2 and a float64 array q."""
    total = q ** -s
    a = q.copy()
    finite = q[xp.isfinite(q)]  # (inf and nan give nan by themselves, and no step count)
    steps = max(9, int(math.ceil(9 - float(finite.min())))) if finite.size else 9
    steps = min(steps, 100_000)  # very negative q: not supported (the sum would be huge)
    b = total
    for i in range(steps):  # direct sum until a > 9 (and at least 9 terms)
        need = (i < 9) | (a <= 9)
        a = xp.where(need, a + 1.0, a)
        b = xp.where(need, a ** -s, b)
        total = xp.where(need, total + b, total)
    w = a
    total = total + b * w / (s - 1.0) - 0.5 * b
    fact, k = xp.ones_like(q), 0.0
    done = xp.zeros(q.shape, dtype=bool)
    for coef in _ZETA_A:  # Euler–Maclaurin correction, term by term until negligible
        fact = fact * (s + k)
        b = b / w
        term = fact * b / coef
        total = xp.where(done, total, total + term)
        done |= xp.abs(term / total) < _EPS
        k += 1.0
        fact = fact * (s + k)
        b = b / w
        k += 1.0
    return xp.where(_nonpositive_int(xp, q), np.inf, total)


def _polygamma64(xp: Any, n: int, x: Any) -> Any:
    if n == 0:
        return _digamma64(xp, x)
    sign = 1.0 if n % 2 else -1.0
    res = sign * math.factorial(n) * _zeta64(xp, n + 1.0, x)
    if n == 1:  # torch's trigamma (digamma's derivative): 0 at +inf, nan at -inf
        res = xp.where(x == np.inf, 0.0, xp.where(x == -np.inf, np.nan, res))
    return res


_GILES = (
    (6.25, 3.125, False, (
        -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
        1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
        6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
        2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
        4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
        0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
        0.24015818242558961693, 1.6536545626831027356)),
    (16.0, 3.25, True, (
        2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
        1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
        2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
        6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
        0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
        -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
        3.0838856104922207635)),
    (np.inf, 5.0, True, (
        -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
        -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
        2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
        -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
        7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
        1.0103004648645343977, 4.8499064014085844221)),
)


def _erfinv64(xp: Any, x: Any) -> Any:
    """erf⁻¹(x) for a float64 array: Giles' three polynomial pieces in w = -log(1 - x²)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -xp.log((1.0 - x) * (1.0 + x))  # this product, not 1 - x*x: exact near ±1
    res = xp.zeros_like(x)
    lower = -np.inf
    for upper, shift, use_sqrt, coefs in _GILES:
        piece = (w >= lower) & (w < upper)
        v = (xp.sqrt(xp.where(piece, w, 0.0)) if use_sqrt else w) - shift
        p = xp.zeros_like(x)
        for c in coefs:
            p = p * v + c
        res = xp.where(piece, p * x, res)
        lower = upper
    res = xp.where(xp.abs(x) == 1, xp.copysign(np.inf, x), res)
    return xp.where((xp.abs(x) > 1) | xp.isnan(x), np.nan, res)


# ------------------------------------------------------------------------ the ops
def _float_dtype(input: Tensor) -> D.dtype:
    """Integer and bool inputs give the default float dtype, like torch's unary float ops."""
    dt = input.dtype
    return dt if dt.is_floating_point else D.get_default_dtype()


def _unary(input: Tensor, kernel: Any, *args: Any) -> Tensor:
    """Evaluate a float64 ``kernel`` on ``input``'s data; the result has the op's float dtype."""
    dev = input._device
    xp = xp_for(dev)
    with np.errstate(all="ignore"):
        res = kernel(xp, *args, input._data.astype(np.float64))
        return wrap(res.astype(_float_dtype(input).np, copy=False), dev)


def lgamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``log|Γ(x)|``; Γ(n) = (n-1)! so ``lgamma(n+1) = log(n!)`` without overflow."""
    res = _unary(input, _lgamma64)
    if needs_grad(input):
        record("LgammaBackward0", res, (input,), lambda g: (g * digamma(input),), saved=(input,))
    return _to_out(res, out)


def digamma(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``ψ(x) = d/dx log Γ(x)``."""
    res = _unary(input, _digamma64)
    if needs_grad(input):
        record("DigammaBackward0", res, (input,), lambda g: (g * polygamma(1, input),),
               saved=(input,))
    return _to_out(res, out)


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of ψ: ``polygamma(0, x) = digamma(x)``."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    res = _unary(input, _polygamma64, int(n))
    if needs_grad(input):
        record("PolygammaBackward0", res, (input,), lambda g: (g * polygamma(n + 1, input),),
               saved=(input,))
    return _to_out(res, out)


def erfinv(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The inverse error function on (-1, 1): ``erf(erfinv(y)) = y``."""
    res = _unary(input, _erfinv64)
    if needs_grad(input):
        # d/dx erfinv(x) = sqrt(pi)/2 * exp(erfinv(x)²). Like torch, backward recomputes erfinv
        # from the saved input (a differentiable op), so it keeps nothing of the output.
        record("ErfinvBackward0", res, (input,),
               lambda g: (g * (erfinv(input).square().exp() * (math.sqrt(math.pi) / 2)),),
               saved=(input,))
    return _to_out(res, out)


def xlogy(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``input * log(other)``, defined as 0 where ``input == 0`` (even if ``other`` is 0 or inf).

    That convention is what entropy-like sums need: 0·log 0 = 0.
    """
    a, b, dev, dt = binary_float(input, other)  # integers and bools: in the default float dtype
    xp = xp_for(dev)
    with np.errstate(all="ignore"):
        val = xp.where(xp.isnan(b), np.nan, xp.where(a == 0, 0, a * xp.log(b)))
    res = wrap(val.astype(dt.np, copy=False), dev)
    if needs_grad(input, other):
        sa, sb = tuple(np.shape(a)), tuple(np.shape(b))
        # torch: d/dinput = xlogy(g, other), set to 0 where input == 0 and other <= 0 (so
        # log(other) where input == 0 < other); xlogy(0, other) is that 0 (other is not nan there)
        keep = wrap(~((a == 0) & (b <= 0)), dev)

        def backward(g: Tensor) -> tuple:
            ga = sum_to(xlogy(g * keep, other), sa) if _rg(input) else None
            gb = sum_to(g * input / other, sb) if _rg(other) else None
            return ga, gb

        record("XlogyBackward0", res, (input, other), backward,
               saved=tuple(x for x in (input, other) if isinstance(x, Tensor)))
    return _to_out(res, out)


def _rg(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


tensor_method("lgamma")(lgamma)
tensor_method("digamma")(digamma)
tensor_method("erfinv")(erfinv)
tensor_method("xlogy")(xlogy)


@tensor_method("polygamma")
def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)`` (note: the Tensor method takes ``n`` after ``self``)."""
    return polygamma(n, self)


# ------------------------------------------------------------------------ entr, xlog1py, copysign
def entr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Elementwise entropy ``-x * log(x)``: 0 at ``x = 0``, ``-inf`` for ``x < 0``."""
    dev = input._device
    xp = xp_for(dev)
    x = input._data.astype(_float_dtype(input).np, copy=False)
    with np.errstate(all="ignore"):
        val = xp.where(x > 0, -x * xp.log(x), xp.where(x == 0, x.dtype.type(0), -np.inf))
        val = xp.where(xp.isnan(x), x, val).astype(x.dtype, copy=False)
    res = wrap(val, dev)
    if needs_grad(input):
        record("SpecialEntrBackward0", res, (input,), lambda g: (g * -(1 + input.log()),),
               saved=(input,))
    return _to_out(res, out)


def xlog1py(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` (as :func:`xlogy`, with ``log(1 + y)``)."""
    a, b, dev, dt = binary_float(input, other)
    xp = xp_for(dev)
    with np.errstate(all="ignore"):
        val = xp.where(xp.isnan(b), np.nan, xp.where(a == 0, 0, a * xp.log1p(b)))
    res = wrap(val.astype(dt.np, copy=False), dev)
    if needs_grad(input, other):
        sa, sb = tuple(np.shape(a)), tuple(np.shape(b))

        def backward(g: Tensor) -> tuple:  # torch's formulas: log1p(y) even where x == 0
            ga = sum_to(g * _log1p_of(other), sa) if _rg(input) else None
            gb = sum_to(g * input / (other + 1), sb) if _rg(other) else None
            return ga, gb

        node = ("SpecialXlog1PyBackward1" if not isinstance(input, Tensor) else
                "SpecialXlog1PyBackward2" if not isinstance(other, Tensor) else
                "SpecialXlog1PyBackward0")  # torch's names: which operand is a number
        record(node, res, (input, other), backward,
               saved=tuple(x for x in (input, other) if isinstance(x, Tensor)))
    return _to_out(res, out)


def _log1p_of(v: Any) -> Any:
    """``log1p`` of a tensor or of a Python number (-inf at -1, nan below, without warnings)."""
    if isinstance(v, Tensor):
        return v.log1p()
    with np.errstate(all="ignore"):
        return float(np.log1p(np.float64(v)))


def copysign(input: Tensor, other: Any, *, out: Tensor | None = None) -> Tensor:
    """``|input|`` with the sign of ``other`` (its sign bit: ``-0.0`` counts as negative)."""
    a, b, dev, dt = binary_float(input, other)
    xp = xp_for(dev)
    with np.errstate(all="ignore"):
        val = xp.copysign(a, b).astype(dt.np, copy=False)
    res = wrap(val, dev)
    if needs_grad(input, other):
        # d/dx copysign(x, y) = copysign(x, y) / x (±1; torch's formula, nan at ±inf), 0 at x = 0;
        # the sign of ``other`` is a step: its gradient is 0
        with np.errstate(all="ignore"):
            ratio = wrap(xp.where(a == 0, 0, val / a).astype(dt.np, copy=False), dev)
        sa = tuple(np.shape(a))

        def backward(g: Tensor) -> tuple:
            ga = sum_to(g * ratio, sa) if _rg(input) else None
            gb = other.new_zeros(tuple(other.shape)) if _rg(other) else None
            return ga, gb

        node = "CopysignBackward0" if isinstance(other, Tensor) else "CopysignBackward1"
        record(node, res, (input, other), backward, saved=(input,))
    return _to_out(res, out)


tensor_method("copysign")(copysign)
tensor_method("copysign_")(_inplace_version(copysign))
__all__ += ["copysign"]
