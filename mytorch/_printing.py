"""Printing tensors exactly like torch: ``repr(t)``, ``str(t)`` and ``set_printoptions``.

How torch lays out ``tensor([...])`` (the rules of its ``torch/_tensor_str.py``):

1. **One format for all elements.** A formatter looks at every *finite, non-zero* value (only
   the printed corner when the tensor is summarised) and picks one of three float styles:
   integer style ``1.`` when all of them are whole numbers; scientific ``1.0000e+05`` when
   max/min > 1000, max > 1e8 or min < 1e-4; otherwise fixed ``0.1235`` with ``precision``
   digits. Every element is right-aligned to the widest one.
2. **Summarisation.** With more than ``threshold`` elements only ``edgeitems`` entries at each
   end of every dimension are shown, with ``...`` between.
3. **Line wrapping.** A row holds as many elements as fit in ``linewidth`` after the indent.
4. **Suffixes** that ``tensor(...)`` cannot infer: ``dtype=`` (unless float32-default, int64 or
   bool), ``device=``, ``requires_grad=True`` or ``grad_fn=<...>``.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from . import _dtype as D

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTS = _PrintOptions()
_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Change how tensors print. ``profile`` ('default', 'short', 'full') sets the first four
    options at once; the others then override it. ``sci_mode`` is always reset (None = auto)."""
    if profile is not None and profile in _PROFILES:
        for key, value in _PROFILES[profile].items():
            setattr(_OPTS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(_OPTS, key, value)
    _OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(_OPTS)


class printoptions:
    """Context manager: ``with printoptions(precision=2): print(t)``."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __enter__(self) -> None:
        self.saved = get_printoptions()
        set_printoptions(**self.kwargs)

    def __exit__(self, *exc: object) -> None:
        set_printoptions(**self.saved)


# ------------------------------------------------------------------------ element formatting
class _Formatter:
    """Chooses one style and width for all the values it is shown (see the module docstring)."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        if not self.floating:
            for v in values.ravel().tolist():
                self.width = max(self.width, len(str(v)))
            return
        flat = values.ravel()
        shown = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if shown.size == 0:
            return
        magnitudes = np.abs(shown)
        lo, hi = magnitudes.min(), magnitudes.max()
        self.int_mode = bool((shown == np.ceil(shown)).all())
        auto_sci = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        self.sci_mode = auto_sci if _OPTS.sci_mode is None else _OPTS.sci_mode
        p = _OPTS.precision
        if self.sci_mode:
            strs, extra = [f"{v:.{p}e}" for v in shown.tolist()], 0
        elif self.int_mode:
            strs, extra = [f"{v:.0f}" for v in shown.tolist()], 1  # room for the trailing "."
        else:
            strs, extra = [f"{v:.{p}f}" for v in shown.tolist()], 0
        self.width = max(self.width, max(len(s) for s in strs) + extra)

    def format(self, value: Any) -> str:
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:{self.width}.{_OPTS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}"
            if math.isfinite(value):
                text += "."
        else:
            text = f"{value:.{_OPTS.precision}f}"
        return text.rjust(self.width)


class _ComplexFormatter:
    """Real and imaginary parts get a formatter each; elements print as ``1.0000+2.0000j``."""

    def __init__(self, values: np.ndarray) -> None:
        self.real, self.imag = _Formatter(values.real), _Formatter(values.imag)
        self.width = self.real.width + self.imag.width + 1

    def format(self, value: complex) -> str:
        imag = (self.imag.format(value.imag) + "j").lstrip()
        sep = "" if imag[0] in "+-" else "+"
        return self.real.format(value.real) + sep + imag


# ------------------------------------------------------------------------ layout
def _corners(arr: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows: ``edgeitems`` at each end of every dimension."""
    e = _OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        return np.concatenate((arr[:e], arr[-e:])) if arr.shape[0] > 2 * e else arr
    if not e:
        return arr[(slice(0, 0),) * arr.ndim]
    rows = list(range(e)) + list(range(arr.shape[0] - e, arr.shape[0])) \
        if arr.shape[0] > 2 * e else range(arr.shape[0])
    return np.stack([_corners(arr[i]) for i in rows])


def _vector(arr: np.ndarray, indent: int, summarize: bool, fmt: Any) -> str:
    e = _OPTS.edgeitems
    per_line = max(1, math.floor((_OPTS.linewidth - indent) / (fmt.width + 2)))
    if summarize and not e:
        items = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        items = ([fmt.format(v) for v in arr[:e].tolist()] + [" ..."]
                 + [fmt.format(v) for v in arr[-e:].tolist()])
    else:
        items = [fmt.format(v) for v in arr.tolist()]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(arr: np.ndarray, indent: int, summarize: bool, fmt: Any) -> str:
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector(arr, indent, summarize, fmt)
    e, n = _OPTS.edgeitems, arr.shape[0]
    if summarize and n > 2 * e:
        parts = ([_nested(arr[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                 + [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        parts = [_nested(arr[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _body(arr: np.ndarray, indent: int) -> str:
    """The bracketed values of a non-empty tensor."""
    summarize = arr.size > _OPTS.threshold
    if arr.dtype.kind == "V":  # bfloat16, float8 (ml_dtypes): torch prints their float32 values
        arr = arr.astype(np.float32)
    shown = _corners(arr) if summarize else arr
    fmt = _ComplexFormatter(shown) if arr.dtype.kind == "c" else _Formatter(shown)
    return _nested(arr, indent, summarize, fmt)


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, suffix`` items, moving one to a new line when it would pass ``linewidth``."""
    out = [text]
    last_line = len(text) - text.rfind("\n") + 1  # (torch's count, kept for identical output)
    for s in suffixes:
        if last_line + len(s) + 2 > _OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last_line = indent + len(s)
        else:
            out.append(", " + s)
            last_line += len(s) + 2
    return "".join(out) + ")"


def tensor_repr(t: Any) -> str:
    """``repr(t)`` exactly as torch prints it."""
    prefix = "tensor(" if type(t).__name__ in ("Tensor", "Parameter") else f"{type(t).__name__}("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = D.get_default_dtype()
    arr = t._host()
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if t.dtype is not default:
            suffixes.append(f"dtype={t.dtype}")
        body = "[]"
    else:
        if not _OPTS.edgeitems:
            suffixes.append(f"size={tuple(arr.shape)}")
        if t.dtype not in (default, default.to_complex(), D.int64, D.bool):
            suffixes.append(f"dtype={t.dtype}")
        body = _body(arr, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif getattr(t._acc_node, "version", t._version) != t._version:
        # a view made in no_grad mode whose base has changed since: torch cannot say its grad_fn
        suffixes.append("grad_fn=<Invalid>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, indent)
