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
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from bookkit import verdict

__all__ = ["check_equal", "check_close", "check_shape", "check_raises", "check_true", "forbid", "to_numpy",
           "autograd_routes", "reference_of", "rules_of", "chapter_rules", "host_routes", "ROUTES",
           "forbidden_message"]


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


def _value(value: Any) -> object:
    """A non-array value as the judge compares it: its exact type with the value (builtins and a
    tensor's dtype/device/layout), or None."""
    return (type(value).__name__, value) if type(value).__module__ == "builtins" or _is_value_type(value) \
        else None


def check_equal(got: Any, expected: Any, what_zh: str = "结果", what_en: str = "result") -> None:
    """Exact equality of values and shape (arrays/tensors) or of plain Python values."""
    a, b = _plain(got), _plain(expected)
    ok, why = verdict.equal(a, b, _value(got), _value(expected))
    if not ok and why == "shapes differ":
        _fail(verdict.reason_zh(why), why, what_zh, what_en,
              [f"期望形状 / expected shape: {b.shape}", f"得到形状 / got shape:      {a.shape}"])
    if not ok:
        _fail(verdict.reason_zh(why), why, what_zh, what_en,
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
    a, b = _plain(got), _plain(expected)
    ok, why = verdict.close(a, b, rtol, atol)
    if not ok and why == "shapes differ":
        _fail(verdict.reason_zh(why), why, what_zh, what_en,
              [f"期望形状 / expected shape: {b.shape}", f"得到形状 / got shape:      {a.shape}"])
    if not ok:
        lines = [f"期望 / expected: {_show(expected)}", f"得到 / got:      {_show(got)}"]
        if why == "values not close":
            lines.append(f"最大误差 / max abs diff: {verdict.max_diff(a, b):.3g} (rtol={rtol}, atol={atol})")
        _fail(verdict.reason_zh(why), why, what_zh, what_en, lines)
    _ok(what_zh, what_en)


def check_shape(got: Any, expected_shape: tuple[int, ...], what_zh: str = "形状",
                what_en: str = "shape") -> None:
    """``got.shape`` (or ``got.size()``, or NumPy's shape) equals ``expected_shape``."""
    shape, expected = _shape_of(got), tuple(int(n) for n in expected_shape)
    ok, why = verdict.same_shape(shape, expected)
    if not ok:
        _fail(verdict.reason_zh(why), why, what_zh, what_en,
              [f"期望 / expected: {expected}", f"得到 / got:      {shape}"])
    _ok(what_zh, what_en)


def check_raises(fn: Callable[[], Any], exception: type[BaseException] | tuple[type[BaseException], ...],
                 what_zh: str = "应当报错", what_en: str = "should raise", match: str | None = None
                 ) -> BaseException | None:
    """Calling ``fn()`` raises ``exception`` (whose message matches the regex ``match``)."""
    classes = exception if isinstance(exception, tuple) else (exception,)
    expected = [e.__name__ for e in classes]
    caught: BaseException | None = None
    try:
        fn()
    except (*classes, Exception) as exc:
        caught = exc
    names = None if caught is None else [c.__name__ for c in type(caught).__mro__]
    ok, why = verdict.raised(names, "" if caught is None else str(caught), expected, match)
    if not ok:
        got = "(正常返回 / returned normally)" if caught is None else f"{type(caught).__name__}: {caught}"
        want = f"期望匹配 / expected to match: {match!r}" if why == "error message differs" \
            else f"期望 / expected: {' / '.join(expected)}"
        _fail(verdict.reason_zh(why), why, what_zh, what_en, [want, f"得到 / got:      {got}"])
    _ok(what_zh, what_en)
    return caught


def check_true(condition: Any, what_zh: str, what_en: str, hint_zh: str = "", hint_en: str = "") -> None:
    """``condition`` is truthy (a plain bool or a one-element array/tensor)."""
    value = to_numpy(condition) if not isinstance(condition, bool) else np.asarray(condition)
    ok, why = verdict.true(value)
    if not ok:
        _fail(verdict.reason_zh(why), why, what_zh, what_en,
              [line for line in (hint_zh, hint_en) if line] or [f"得到 / got: {_show(condition)}"])
    _ok(what_zh, what_en)


# ---------------------------------------------------------------- "do not use X"


@functools.cache
def _raiser(free: int, message: str) -> types.CodeType:
    """Code that raises ``message`` (see :func:`forbidden_message`) as a RuntimeError, with
    ``free`` closure variables.

    A function's code can only be replaced by code with as many free variables as its closure;
    the raiser refers to them without using them. It names builtins only: it runs with the
    replaced function's globals.
    """
    names = [f"_free{i}" for i in range(free)]
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
            message = forbidden_message(function)
            while isinstance(function, types.FunctionType):  # a wrapper and what it wraps
                for twin in [function, *_copies(function)]:
                    if all(f is not twin for f, _ in saved):
                        saved.append((twin, twin.__code__))
                        set_code(twin, _raiser(len(twin.__code__.co_freevars), message))
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
            # a class (an autograd Function) is forbidden by the methods it defines
            methods = [getattr(m, "__func__", m) for m in vars(fn).values()] if isinstance(fn, type) else [fn]
            for method in methods:
                method = getattr(method, "__wrapped__", method)
                if isinstance(method, types.FunctionType) and method not in out:
                    out.append(method)
    return tuple(out)


# ---------------------------------------------------------------- the rules of the exercises
#: The routes each exercise's prompt rules out besides mytorch's own piece (``reference_of``):
#: the ready-made functions that compute the same thing. Dotted paths, looked up when used;
#: ``@host`` stands for :func:`host_routes`, ``@autograd`` for :func:`autograd_routes`. The
#: check cells and the hidden tests both forbid ``rules_of(piece)``, so a student sees the same
#: rules as the grader applies.
ROUTES: dict[str, tuple[str, ...]] = {
    "contiguous_strides": ("mytorch.Tensor.stride",),
    "view_strides": ("mytorch._ops.shape._reshaped_view", "mytorch.Tensor.view", "mytorch.reshape",
                     "mytorch.as_strided", "numpy.lib.stride_tricks.as_strided"),
    "window_view": ("mytorch.Tensor.unfold", "mytorch.as_strided", "numpy.lib.stride_tricks.as_strided",
                    "numpy.lib.stride_tricks.sliding_window_view"),
    "gather_index": ("mytorch.gather", "mytorch.take_along_dim", "mytorch.from_numpy",
                     "mytorch.as_tensor", "mytorch.asarray", "@host"),
    "encode_one_hot": ("mytorch.nn.functional.one_hot", "mytorch.eye", "mytorch.from_numpy",
                       "mytorch.as_tensor", "@host"),
    "broadcast_shape": ("mytorch.broadcast_shapes", "mytorch.broadcast_tensors", "mytorch.broadcast_to",
                        "mytorch.Tensor.expand", "numpy.broadcast_shapes"),
    "unique_sorted": ("mytorch.unique", "mytorch.unique_consecutive", "mytorch.bincount", "numpy.unique",
                      "mytorch.from_numpy", "mytorch.as_tensor", "@host"),
    "unbroadcast": ("mytorch.Tensor.sum_to_size", "@autograd"),
    "fan_in_and_fan_out": ("mytorch.nn.init._calculate_fan_in_and_fan_out",),
    "nearest_source_index": ("mytorch.nn.functional.interpolate", "mytorch.nn.Upsample.forward"),
    "max_pool2d_windows": ("mytorch.nn.functional.max_pool2d",
                           "mytorch.nn.functional.max_pool2d_with_indices",
                           "mytorch.nn.functional.adaptive_max_pool2d", "mytorch.nn.MaxPool2d.forward"),
    "conv2d_unfold": ("mytorch.nn.functional.conv2d", "mytorch.nn.functional.conv_transpose2d",
                      "mytorch.nn.Conv2d.forward"),
    "batch_norm_train": ("mytorch.nn.functional.batch_norm", "mytorch.nn.functional.instance_norm",
                         "mytorch.nn.functional.layer_norm", "mytorch.nn.functional.group_norm"),
    "lstm_cell": ("mytorch.nn.LSTMCell.forward", "mytorch.nn.LSTM.forward"),
    "huber": ("mytorch.nn.functional.huber_loss", "mytorch.nn.functional.smooth_l1_loss"),
    "nll_loss_nd": ("mytorch.nn.functional.nll_loss", "mytorch.nn.functional.cross_entropy"),
    "log_sum_exp": ("mytorch.logsumexp", "mytorch.Tensor.logsumexp", "mytorch.nn.functional.log_softmax",
                    "mytorch.nn.functional.softmax", "mytorch.nn.functional.softplus"),
    "cross_entropy_loss": ("mytorch.nn.functional.cross_entropy",),
    "bce_with_logits": ("mytorch.nn.functional.binary_cross_entropy_with_logits",
                        "mytorch.nn.functional.binary_cross_entropy", "mytorch.sigmoid",
                        "mytorch.Tensor.sigmoid",
                        "mytorch.nn.functional.logsigmoid", "mytorch.nn.functional.softplus"),
    "kl_div_loss": ("mytorch.nn.functional.kl_div", "mytorch.nn.functional.cross_entropy"),
    "split_lengths": ("mytorch.utils.data.random_split",),
    "random_indices": ("mytorch.utils.data.RandomSampler.__iter__",),
    "weighted_draw": ("mytorch.multinomial", "mytorch.Tensor.multinomial",
                      "mytorch.utils.data.WeightedRandomSampler.__iter__"),
    "batch_indices": ("mytorch.utils.data.BatchSampler.__iter__",),
    "collate_nested": ("mytorch.utils.data.default_collate", "mytorch.utils.data._utils.collate.collate"),
    "shard_range": ("mytorch.utils.data.ShardedIterableDataset.__iter__",),
    "image_to_tensor": ("mytorch.vision.transforms.ToTensor.__call__",
                        "mytorch.vision.transforms.functional.to_tensor"),
    "normalize_channels": ("mytorch.vision.transforms.Normalize.__call__",
                           "mytorch.vision.transforms.functional.normalize"),
    "scatter_batch": ("mytorch.chunk", "mytorch.Tensor.chunk", "mytorch.split", "mytorch.Tensor.split",
                      "mytorch.tensor_split", "mytorch.Tensor.tensor_split", "mytorch.unbind",
                      "mytorch.Tensor.unbind"),
    "gather_outputs": ("mytorch.cat", "mytorch.concat", "mytorch.concatenate", "mytorch.stack",
                       "mytorch.hstack", "mytorch.vstack", "mytorch.dstack", "mytorch.column_stack"),
    "confusion_matrix": ("mytorch.bincount", "@host"),
}


def _resolve(path: str) -> tuple:
    """The Python functions a ``ROUTES`` entry names (none when it does not exist here)."""
    if path == "@host":
        return host_routes()
    if path == "@autograd":
        return autograd_routes()
    import importlib

    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return ()
        obj = getattr(obj, "__func__", obj)
        while not isinstance(obj, types.FunctionType) and hasattr(obj, "__wrapped__"):
            obj = obj.__wrapped__  # a functools.cache or other wrapper object
        return (obj,) if isinstance(obj, types.FunctionType) else ()
    return ()


def rules_of(*names: str) -> tuple:
    """Everything the exercises of the pieces ``names`` rule out: mytorch's own implementation
    of each piece (:func:`reference_of`) and the ready-made routes its prompt forbids
    (``ROUTES``). The check cells call a piece inside ``with forbid(*rules_of(name)):``, and so
    does the grader: calling mytorch's own version, by whatever route, fails visibly."""
    out = list(reference_of(*names))
    for name in names:
        for path in ROUTES.get(name, ()):
            out += [fn for fn in _resolve(path) if fn not in out]
    return tuple(out)


def chapter_rules(chapter: int) -> tuple:
    """mytorch's own implementation of every piece of ``chapter``: the integration check runs
    the chapter with all of a student's pieces plugged in and forbids these, so a piece that is
    missing, or that hands the work back to the library, earns no integration points."""
    from mytorch._pieces import REGISTRY

    return reference_of(*[name for name, p in REGISTRY.items() if p.chapter == chapter])


def forbidden_message(function: Callable) -> str:
    """The bilingual sentence a call of the forbidden ``function`` fails with, in a check cell
    and in the grader alike: which call, and why it is ruled out (mytorch's own version of the
    piece asked for, or a ready-made route the exercise rules out)."""
    function = getattr(function, "__func__", function)
    where = f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', '?')}"
    try:
        from mytorch._pieces import REGISTRY

        for name, p in REGISTRY.items():
            if function in reference_of(name):
                return (f"练习 {p.exercise} 要你自己写 `{name}`，你的代码却调用了 mytorch 自己的实现 / "
                        f"exercise {p.exercise} asks you to write `{name}`; your code calls mytorch's "
                        f"own: {where}")
    except Exception:  # a half-imported library: the plain sentence below still says which call
        pass
    name = getattr(function, "__qualname__", where)
    return (f"这道练习不许调用 {name}：请用更基本的运算自己实现 / "
            f"this exercise does not allow calling {name}: build it from simpler operations")


def host_routes() -> tuple:
    """The ways from a mytorch tensor into NumPy or Python lists (``t.numpy()``, ``np.asarray(t)``,
    ``t.tolist()``). An exercise whose answer is a tensor forbids them around the student's call:
    the work is then done with tensor ops, which keep the tensor's device and its graph."""
    import mytorch

    return mytorch.Tensor.numpy, mytorch.Tensor.tolist


# ---------------------------------------------------------------- several ranks in one process


class _Blocked(BaseException):
    """A pretend rank must wait for a message (or a matching receive) that is not there yet.

    A BaseException, so that a student's ``except Exception`` cannot swallow it."""


class _PretendWork:
    """What ``isend``/``irecv`` return inside :func:`run_ranks`: ``wait()`` and ``is_completed()``."""

    def __init__(self, finish: Callable[[], None], source: int | None = None) -> None:
        self._finish, self._done, self._source = finish, False, source

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            self._finish()  # raises _Blocked while the other side is not there yet
            self._done = True
        return True

    def is_completed(self) -> bool:
        return self.wait()  # a rank polling for a message it cannot get yet is waiting for it

    def source_rank(self) -> int | None:
        return self._source


class _World:
    """The messages of a pretend job: what each channel (src, dst, tag) carried, in order, and
    how many receives each channel's receiver has posted so far."""

    def __init__(self, size: int, collectives: bool = False) -> None:
        self.size, self.collectives = size, collectives
        self.messages: dict[tuple, list] = {}
        self.posted: dict[tuple, int] = {}
        self.events = 0  # grows with every new message or newly posted receive: progress

    def run(self, rank: int, body: Callable[[int], Any], stats: dict) -> Any:
        """``body(rank)`` from the start, with mytorch.distributed's point-to-point calls
        answered from the messages known so far; raises _Blocked where it must wait."""

        import mytorch
        import mytorch.distributed as dist

        world: _World = self
        sent_k: dict[tuple, int] = {}
        recv_k: dict[tuple, int] = {}

        def peer(given: Any, group_peer: Any, what: str) -> int:
            r = given if group_peer is None else group_peer
            if r is None:
                raise NotImplementedError(
                    f"run_ranks: {what} 必须写明对方的 rank / name the other rank ({what}=...)")
            r = int(r)
            if not 0 <= r < world.size or r == rank:
                raise ValueError(f"Invalid {what} rank {r} for rank {rank} of {world.size}")
            return r

        def isend(tensor: Any, dst: Any = None, group: Any = None, tag: int = 0,
                  group_dst: Any = None) -> _PretendWork:
            ch = (rank, peer(dst, group_dst, "dst"), tag)
            k = sent_k.get(ch, 0)
            sent_k[ch] = k + 1
            box = world.messages.setdefault(ch, [])
            if k == len(box):
                box.append((np.array(tensor.detach().cpu().numpy(), copy=True), stats["hops"]))
                world.events += 1
            stats["sent"] += tensor.numel()
            stats["messages"] += 1

            def delivered() -> None:  # a send completes once its receive is posted (MPI_Ssend)
                if world.posted.get(ch, 0) <= k:
                    stats["waiting"] = f"send #{k + 1} to rank {ch[1]} (tag {tag})"
                    raise _Blocked
            return _PretendWork(delivered)

        def irecv(tensor: Any, src: Any = None, group: Any = None, tag: int = 0,
                  group_src: Any = None) -> _PretendWork:
            ch = (peer(src, group_src, "src"), rank, tag)
            k = recv_k.get(ch, 0)
            recv_k[ch] = k + 1
            if world.posted.get(ch, 0) <= k:
                world.posted[ch] = k + 1
                world.events += 1

            def arrived() -> None:
                box = world.messages.get(ch, [])
                if k >= len(box):
                    stats["waiting"] = f"receive #{k + 1} from rank {ch[0]} (tag {tag})"
                    raise _Blocked
                data, hops = box[k]
                if data.size != tensor.numel() or str(data.dtype) != str(tensor.dtype)[6:]:
                    raise RuntimeError(
                        f"rank {rank}: 收到 {data.size} 个 {data.dtype}，接收的张量是 "
                        f"{tensor.numel()} 个 {tensor.dtype} / received {data.size} {data.dtype} "
                        f"elements into a tensor of {tensor.numel()} {tensor.dtype}")
                with mytorch.no_grad():
                    tensor.copy_(mytorch.from_numpy(data.copy()).reshape(tensor.shape))
                stats["hops"] = max(stats["hops"], hops + 1)
            return _PretendWork(arrived, ch[0])

        def send(tensor: Any, dst: Any = None, group: Any = None, tag: int = 0,
                 group_dst: Any = None) -> None:
            isend(tensor, dst, group, tag, group_dst).wait()

        def recv(tensor: Any, src: Any = None, group: Any = None, tag: int = 0,
                 group_src: Any = None) -> Any:
            work = irecv(tensor, src, group, tag, group_src)
            work.wait()
            return work.source_rank()

        fakes = {"isend": isend, "irecv": irecv, "send": send, "recv": recv,
                 "get_rank": lambda group=None: rank,
                 "get_world_size": lambda group=None: world.size}
        if world.collectives:
            fakes.update(self._collectives(rank, isend, recv))
        saved = {name: getattr(dist, name) for name in fakes}
        for name, fn in fakes.items():
            setattr(dist, name, fn)
        try:
            return body(rank)
        finally:
            for name, fn in saved.items():
                setattr(dist, name, fn)


    def _collectives(self, rank: int, isend: Callable, recv: Callable) -> dict:
        """``all_reduce``, ``broadcast`` and ``barrier`` made of plain messages (every rank sends
        its tensor to every other one: simple, not fast), for code such as DDP that needs them.
        As in mytorch.distributed, a sum or mean goes through the ``ring_all_reduce`` piece and a
        broadcast through ``tree_broadcast`` while another version than the library's fast path
        (a student's, or the readable reference) is switched on for them."""
        import mytorch
        from mytorch._pieces import REGISTRY, pieces

        size, tag = self.size, "collective"
        combine = {"SUM": lambda parts: sum(parts[1:], parts[0]),
                   "AVG": lambda parts: sum(parts[1:], parts[0]) / size,
                   "MAX": lambda parts: mytorch.stack(parts).amax(0),
                   "MIN": lambda parts: mytorch.stack(parts).amin(0)}

        def finish(async_op: bool) -> Any:
            return _PretendWork(lambda: None) if async_op else None

        def all_reduce(tensor: Any, op: Any = "SUM", group: Any = None,
                       async_op: bool = False) -> Any:
            name = str(getattr(op, "name", op)).split(".")[-1].upper()  # ReduceOp.MAX, "max"
            if name not in combine:
                raise NotImplementedError(f"run_ranks: all_reduce with op {op}")
            ring = pieces.ring_all_reduce
            if name in ("SUM", "AVG") and ring is not REGISTRY["ring_all_reduce"].default:
                flat = tensor.detach().reshape(-1).clone()
                ring(flat, rank, size)
                with mytorch.no_grad():
                    tensor.copy_((flat / size if name == "AVG" else flat).reshape(tensor.shape))
                return finish(async_op)
            mine = tensor.detach().clone()
            sends = [isend(mine, dst, tag=tag) for dst in range(size) if dst != rank]
            parts = []
            for src in range(size):  # the same order on every rank: the same bits everywhere
                if src == rank:
                    parts.append(mine)
                else:
                    parts.append(mytorch.empty_like(mine))
                    recv(parts[-1], src, tag=tag)
            for work in sends:
                work.wait()
            with mytorch.no_grad():
                tensor.copy_(combine[name](parts))
            return finish(async_op)

        def broadcast(tensor: Any, src: Any = None, group: Any = None, async_op: bool = False,
                      group_src: Any = None) -> Any:
            root = int(src if group_src is None else group_src)
            tree = pieces.tree_broadcast
            if tree is not REGISTRY["tree_broadcast"].default:
                tree(tensor, root, rank, size)
                return finish(async_op)
            if rank == root:
                for work in [isend(tensor, dst, tag=tag) for dst in range(size) if dst != rank]:
                    work.wait()
            else:
                recv(tensor, root, tag=tag)
            return finish(async_op)

        def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None,
                    timeout: Any = None) -> Any:
            return all_reduce(mytorch.zeros(1), async_op=async_op)

        return {"all_reduce": all_reduce, "broadcast": broadcast, "barrier": barrier,
                "is_initialized": lambda: True}


def run_ranks(world_size: int, body: Callable[[int], Any], max_runs: int = 5000,
              collectives: bool = False) -> list[dict]:
    """Run ``body(rank)`` for every rank of a pretend job of ``world_size`` processes, inside this
    one process, and return one dict per rank: ``result`` (what ``body`` returned), ``sent``
    (tensor elements it sent), ``messages`` (how many), ``hops`` (the longest chain of messages
    that led to it: how many rounds the data needed to reach it).

    ``body`` may talk to the other ranks with ``mytorch.distributed``'s ``send``, ``recv``,
    ``isend`` and ``irecv`` (naming the other rank). There are no threads or processes (the
    grader allows neither): a rank runs until it has to wait for a message that does not exist
    yet, and is started again from the beginning once more messages exist, so ``body`` must
    build its inputs afresh and do the same thing every time. A send completes only once the
    receiver has posted its receive, as with MPI's synchronous send: code that passes here does
    not deadlock on MPI with large messages either. When no rank can go on, the error says what
    each one waits for. With ``collectives=True`` the ranks also have ``all_reduce``,
    ``broadcast``, ``barrier`` and ``is_initialized`` (made of such messages, and counted in
    ``sent``), enough for ``DistributedDataParallel``.
    """
    world = _World(world_size, collectives)
    done: dict[int, tuple[Any, dict]] = {}
    runs = 0
    while len(done) < world_size:
        before, finished, waits = world.events, len(done), {}
        for rank in range(world_size):
            if rank in done:
                continue
            runs += 1
            if runs > max_runs:
                raise RuntimeError(f"run_ranks: 重跑超过 {max_runs} 次 / more than {max_runs} "
                                   "re-runs: does every rank do the same thing each time?")
            stats = {"sent": 0, "messages": 0, "hops": 0, "waiting": "?"}
            try:
                done[rank] = (world.run(rank, body, stats), stats)
            except _Blocked:
                waits[rank] = stats["waiting"]
        if world.events == before and len(done) == finished:
            raise RuntimeError("死锁：没有一个 rank 能继续 / deadlock: no rank can go on\n  "
                               + "\n  ".join(f"rank {r} waits for its {w}"
                                             for r, w in sorted(waits.items())))
    return [{"result": done[r][0], "sent": done[r][1]["sent"], "messages": done[r][1]["messages"],
             "hops": done[r][1]["hops"]} for r in range(world_size)]
