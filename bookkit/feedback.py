"""Instant, bilingual feedback for the visible tests of exercise notebooks.

Each check prints a short ✓ line on success and raises AssertionError on failure, with a message
in Chinese and English that says which check failed and what was expected versus what came out.
Tensors of any library are compared through NumPy arrays of plain dtypes (duck-typed via
``.tolist()``), never through their own ``==``; torch is never imported here.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import re
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["check_equal", "check_close", "check_shape", "check_raises", "check_true", "forbid", "to_numpy",
           "autograd_routes", "reference_of"]


def to_numpy(value: Any) -> np.ndarray:
    """``value`` as a NumPy array: ndarray as is, tensors through ``.tolist()``, else ``np.asarray``."""
    if isinstance(value, np.ndarray):
        return value
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (list, tuple, dict, str, bytes)):
        try:
            return np.asarray(tolist())
        except Exception:  # a half-built tensor's tolist may fail: fall back below
            pass
    if hasattr(value, "__array__") or isinstance(value, (list, tuple, int, float, bool, complex, np.generic)):
        return np.asarray(value)
    raise TypeError(f"cannot turn a {type(value).__name__} into an array")


def _shape_of(value: Any) -> tuple[int, ...]:
    shape = getattr(value, "shape", None)
    if shape is None and callable(getattr(value, "size", None)):
        shape = value.size()
    if shape is None:
        shape = np.shape(to_numpy(value))
    return tuple(int(n) for n in shape)


def _show(value: Any) -> str:
    try:
        array = to_numpy(value)
    except TypeError:
        return repr(value)
    text = np.array2string(array, threshold=20, edgeitems=3, precision=6)
    return f"{text}  (shape={array.shape}, dtype={array.dtype})" if array.ndim else text


def _fail(check_zh: str, check_en: str, what_zh: str, what_en: str, lines: list[str]) -> None:
    body = "\n".join("  " + line for line in lines)
    raise AssertionError(
        f"\n✗ 检查未通过：{what_zh}（{check_zh}）\n✗ Check failed: {what_en} ({check_en})\n{body}"
    )


def _ok(what_zh: str, what_en: str) -> None:
    print(f"✓ {what_zh}：正确 / {what_en}: correct")


def _plain(value: Any) -> np.ndarray | None:
    """A numeric/bool/str array for ``value``, or None when it is not array-like."""
    try:
        array = to_numpy(value)
    except TypeError:
        return None
    return None if array.dtype == object else array


def check_equal(got: Any, expected: Any, what_zh: str = "结果", what_en: str = "result") -> None:
    """Exact equality of values and shape (arrays/tensors) or of plain Python values."""
    a, b = _plain(got), _plain(expected)
    if a is None or b is None:
        if type(got) is type(expected) and (type(got).__module__ == "builtins"
                                            or _is_value_type(got)) and got == expected:
            return _ok(what_zh, what_en)
        equal = False
    elif a.shape != b.shape:
        _fail("形状不同", "shapes differ", what_zh, what_en,
              [f"期望形状 / expected shape: {b.shape}", f"得到形状 / got shape:      {a.shape}"])
    else:
        numeric = a.dtype.kind in "biufc" and b.dtype.kind in "biufc"
        equal = bool(np.array_equal(a, b, equal_nan=numeric and a.dtype.kind in "fc"))
    if not equal:
        _fail("值不相等", "values differ", what_zh, what_en,
              [f"期望 / expected: {_show(expected)}", f"得到 / got:      {_show(got)}"])
    _ok(what_zh, what_en)


def _is_value_type(value: Any) -> bool:
    """A tensor's dtype, device, layout or memory format (compared by ``==``, as the grader does
    by their text)."""
    t = type(value)
    return t.__name__ in ("dtype", "device", "layout", "memory_format") \
        and t.__module__.split(".")[0] == "mytorch"


def check_close(got: Any, expected: Any, what_zh: str = "结果", what_en: str = "result",
                rtol: float = 1e-5, atol: float = 1e-8) -> None:
    """Numerical closeness (``np.allclose``, NaN equal to NaN) with matching shapes."""
    a, b = to_numpy(got).astype(float), to_numpy(expected).astype(float)
    if a.shape != b.shape:
        _fail("形状不同", "shapes differ", what_zh, what_en,
              [f"期望形状 / expected shape: {b.shape}", f"得到形状 / got shape:      {a.shape}"])
    if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        diff = np.nanmax(np.abs(a - b)) if a.size else 0.0
        _fail("数值不够接近", "values not close", what_zh, what_en,
              [f"期望 / expected: {_show(expected)}", f"得到 / got:      {_show(got)}",
               f"最大误差 / max abs diff: {diff:.3g} (rtol={rtol}, atol={atol})"])
    _ok(what_zh, what_en)


def check_shape(got: Any, expected_shape: tuple[int, ...], what_zh: str = "形状",
                what_en: str = "shape") -> None:
    """``got.shape`` (or ``got.size()``, or NumPy's shape) equals ``expected_shape``."""
    shape, expected = _shape_of(got), tuple(int(n) for n in expected_shape)
    if shape != expected:
        _fail("形状不同", "shape differs", what_zh, what_en,
              [f"期望 / expected: {expected}", f"得到 / got:      {shape}"])
    _ok(what_zh, what_en)


def check_raises(fn: Callable[[], Any], exception: type[BaseException] | tuple[type[BaseException], ...],
                 what_zh: str = "应当报错", what_en: str = "should raise", match: str | None = None
                 ) -> BaseException:
    """Calling ``fn()`` raises ``exception`` (whose message matches the regex ``match``)."""
    names = " / ".join(e.__name__ for e in (exception if isinstance(exception, tuple) else (exception,)))
    try:
        fn()
    except exception as exc:
        if match is not None and not re.search(match, str(exc)):
            _fail("错误信息不符", "error message differs", what_zh, what_en,
                  [f"期望匹配 / expected to match: {match!r}", f"得到 / got: {exc!r}"])
        _ok(what_zh, what_en)
        return exc
    except Exception as exc:
        _fail("抛出了别的异常", "raised another exception", what_zh, what_en,
              [f"期望 / expected: {names}", f"得到 / got:      {type(exc).__name__}: {exc}"])
    _fail("没有抛出异常", "nothing was raised", what_zh, what_en,
          [f"期望 / expected: {names}", "得到 / got:      (正常返回 / returned normally)"])
    raise AssertionError  # unreachable: _fail raises


def check_true(condition: Any, what_zh: str, what_en: str, hint_zh: str = "", hint_en: str = "") -> None:
    """``condition`` is truthy (a plain bool or a one-element array/tensor)."""
    value = to_numpy(condition) if not isinstance(condition, bool) else np.asarray(condition)
    if value.size != 1 or not bool(value.reshape(-1)[0]):
        _fail("条件不成立", "condition is false", what_zh, what_en,
              [line for line in (hint_zh, hint_en) if line] or [f"得到 / got: {_show(condition)}"])
    _ok(what_zh, what_en)


# ---------------------------------------------------------------- "do not use X"


@functools.cache
def _raiser(free: int, name: str) -> types.CodeType:
    """Code that raises the bilingual 'not allowed' error, with ``free`` closure variables.

    A function's code can only be replaced by code with as many free variables as its closure;
    the raiser refers to them without using them. It names builtins only: it runs with the
    replaced function's globals.
    """
    names = [f"_free{i}" for i in range(free)]
    message = (f"这道练习不许调用 {name}：请用更基本的运算自己实现 / "
               f"this exercise does not allow calling {name}: build it from simpler operations")
    source = ("def _outer():\n" + "".join(f"    {n} = None\n" for n in names)
              + "    def _forbidden(*args, **kwargs):\n"
              + (f"        ({', '.join(names)},)\n" if names else "")
              + f"        raise RuntimeError({message!r})\n    return _forbidden\n")
    scope: dict[str, Any] = {}
    exec(compile(source, "<forbid>", "exec"), scope)
    return scope["_outer"]().__code__


def _copies(function: types.FunctionType) -> list[types.FunctionType]:
    """Other function objects running the same code with the same closure values (copies)."""
    code, closure = function.__code__, function.__closure__ or ()
    contents = [_content(c) for c in closure]
    found = []
    for other in gc.get_referrers(code):
        if isinstance(other, types.FunctionType) and other is not function and other.__code__ is code:
            theirs = other.__closure__ or ()
            if len(theirs) == len(contents) and all(
                    _content(c) is v for c, v in zip(theirs, contents, strict=True)):
                found.append(other)
    return found


def _content(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _content


def _set_code(function: types.FunctionType, code: types.CodeType) -> None:
    function.__code__ = code


def _make_forbid(set_code: Callable[[types.FunctionType, types.CodeType], None]) -> Callable:
    """``forbid`` that swaps code with ``set_code`` (the grader passes one its seal allows)."""

    @contextlib.contextmanager
    def forbid(*functions: Callable) -> Iterator[None]:
        """Inside the block, calling any of ``functions`` raises a bilingual RuntimeError.

        For exercises that say "do not use X": the function's code itself is swapped (and that of
        the function it wraps, following ``__wrapped__``), so every way of reaching it
        (``F.conv2d``, ``from … import conv2d``, a method on a tensor, a library function that
        calls it) is caught; so is every copy made earlier with ``types.FunctionType`` on the same
        code and closure. Only Python functions can be forbidden. (``make grade`` enforces it
        more strictly still: every run of the forbidden code is noticed, see docs/grader.md.)
        """
        saved: list[tuple[types.FunctionType, types.CodeType]] = []
        for given in functions:
            function = getattr(given, "__func__", given)  # a bound or class method
            if not isinstance(function, types.FunctionType):
                raise TypeError(f"forbid() needs Python functions, not {given!r}")
            name = function.__qualname__
            while isinstance(function, types.FunctionType):  # a wrapper and what it wraps
                for twin in [function, *_copies(function)]:
                    if all(f is not twin for f, _ in saved):
                        saved.append((twin, twin.__code__))
                        set_code(twin, _raiser(len(twin.__code__.co_freevars), name))
                function = getattr(function, "__wrapped__", None)
        try:
            yield
        finally:
            for function, code in reversed(saved):
                set_code(function, code)

    return forbid


forbid = _make_forbid(_set_code)


def autograd_routes() -> tuple:
    """Every way into mytorch's backward pass. An exercise that asks to *derive* a gradient
    forbids them all: ``with forbid(*autograd_routes()): got = my_backward(...)``."""
    import mytorch
    from mytorch.autograd import engine

    return (mytorch.Tensor.backward, mytorch.autograd.backward, mytorch.autograd.grad,
            engine.run_backward)


def reference_of(*names: str) -> tuple:
    """The library's own implementations of the pieces ``names`` (the reference and any fast
    path): the test of a piece forbids them, so that calling mytorch's version is no answer."""
    from mytorch._pieces import REGISTRY

    out: list = []
    for name in names:
        p = REGISTRY[name]
        for fn in (p.reference, p.fast, p.default):
            fn = getattr(fn, "__wrapped__", fn)
            if isinstance(fn, types.FunctionType) and fn not in out:
                out.append(fn)
    return tuple(out)


def host_routes() -> tuple:
    """The ways from a mytorch tensor into NumPy or Python lists (``t.numpy()``, ``np.asarray(t)``,
    ``t.tolist()``). An exercise whose answer is a tensor forbids them around the student's call:
    the work is then done with tensor ops, which keep the tensor's device and its graph."""
    import mytorch

    return mytorch.Tensor.numpy, mytorch.Tensor.tolist
