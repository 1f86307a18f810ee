"""The grader's child process: run one assembled exercise notebook, isolated, and report plain data.

A zygote (``serve``) imports numpy, mytorch and the stdlib once and forks one child per job. The
child isolates itself with the operating system (``jail.py``: its own user, mount, PID, network
and IPC namespaces, a read-only view of only what it needs, an empty private /tmp and HOME, no
capabilities, a seccomp filter, rlimits), then runs the cells and answers on a private pipe, one
record per line: ``<nonce> <JSON>``.

The child only COMPUTES. Test cells reach it with their expected values cut out (``regions.py``
rewrites every ``check_*`` call of a student run so that its expected argument is never evaluated
here): a ``check_*`` call records the plain data of the value the test got from the student's
code — a NumPy array's dtype, shape and bytes, the canonical text of a builtin value, an exception's
class names and message — and the parent compares it with what the reference solution's run
recorded. Nothing this process holds decides a score, so there is nothing here worth attacking.

Second layer, inside Python (it makes attacks harder and errors clearer, but the design does not
rely on it): an audit hook refuses frames, ``gc`` introspection, ctypes, new code or function
objects, processes, signals, sockets, writes and reads outside the allowed folders; checks are
collected by a profiler that student code cannot reach (a ``check_*`` call counts only when test
code made it, with the test's own recorders); ``forbid`` is enforced by the profiler on the code
objects themselves; the library's module and class dictionaries are compared with a snapshot.
"""

from __future__ import annotations

import builtins
import copyreg
import json
import os
import sys

_BLOCKED_MODULES = frozenset({
    "torch", "torchgen", "functorch", "ctypes", "_ctypes", "_thread", "_signal", "signal",
    "subprocess", "_posixsubprocess", "multiprocessing", "_multiprocessing", "socket", "_socket",
    "ssl", "_ssl", "pty", "mmap", "resource", "fcntl", "termios", "_posixshmem", "_testcapi",
    "_testinternalcapi", "_testbuffer", "_xxsubinterpreters", "_xxinterpchannels", "concurrent",
    "asyncio", "tests", "bench", "IPython", "pyseccomp", "marshal", "bookkit.grader",
})
_DENIED_EVENTS = (
    "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty", "os.kill",
    "os.killpg", "os.setsid", "os.setpgid", "subprocess.", "pty.", "signal.", "socket.", "ctypes.",
    "os.chdir", "os.chmod", "os.chown", "os.link", "os.symlink", "os.mkdir", "os.remove", "os.rename",
    "os.rmdir", "os.truncate", "os.utime", "os.setxattr", "os.removexattr", "os.putenv",
    "os.unsetenv", "shutil.", "mmap.", "resource.", "fcntl.", "sys.setprofile", "sys.settrace",
    "sys._current_frames", "sys.addaudithook", "gc.get_", "gc.freeze", "cpython.",
    "sys.set_asyncgen_hooks", "webbrowser.", "urllib.", "ftplib.", "smtplib.", "http.",
    "code.__new__", "function.__new__", "marshal.", "os.mknod", "os.mkfifo", "os.memfd_create",
)
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_PRELOAD = ("math", "cmath", "random", "bisect", "heapq", "statistics", "datetime", "decimal",
            "fractions", "array", "struct", "collections", "collections.abc", "itertools",
            "functools", "operator", "copy", "string", "re", "typing", "dataclasses", "enum",
            "numbers", "textwrap", "pprint", "time", "unicodedata", "zlib", "binascii", "warnings",
            "contextlib", "abc", "types", "weakref", "inspect", "traceback", "json", "csv", "io",
            "hashlib", "base64", "queue", "numpy.fft", "numpy.linalg", "numpy.random", "numpy.polynomial",
            "numpy.lib.stride_tricks", "numpy.testing")
_CHECKS = ("check_equal", "check_close", "check_shape", "check_raises", "check_true")
_MAX_ARRAY_BYTES = 8 << 20
_MAX_TEXT = 2000


def _prepare(sys_path: list[str]) -> dict:
    """Trusted set-up, once per zygote: import numpy, mytorch (every submodule), the stdlib modules
    students may use and the feedback helpers, so that each forked child starts with them loaded.

    NumPy and mytorch are imported while ``ctypes`` cannot be imported, so no module a student can
    reach holds it; only then is the jail (which needs ctypes) loaded, privately.
    """
    sys.path[:] = sys_path
    import importlib
    import pkgutil

    sys.modules["ctypes"] = None  # type: ignore[assignment]
    import numpy  # noqa: F401

    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    try:  # a broken mytorch fails the cells that import it, not the whole child
        import mytorch
    except Exception:
        mytorch = None
    for info in pkgutil.walk_packages(mytorch.__path__, "mytorch.") if mytorch else ():
        try:
            importlib.import_module(info.name)
        except Exception:  # optional back-ends (CuPy) may be absent
            pass
    import gc

    import bookkit.feedback  # noqa: F401  (setup cells import it: load it while reads are open)

    snapshot = _snapshot()
    gc.collect()
    gc.freeze()  # what every child inherits is never scanned again: a child's collection takes 1 ms
    del sys.modules["ctypes"]
    before = set(sys.modules)
    from bookkit.grader import jail

    private = {name: sys.modules.pop(name) for name in set(sys.modules) - before}
    sys.modules["ctypes"] = None  # type: ignore[assignment]
    return {"jail": jail, "modules": private, "snapshot": snapshot}


def _snapshot() -> tuple[list[str], tuple]:
    """The library state tests depend on (module dicts and the classes defined in mytorch), taken
    once in the zygote: every child compares its own state with it."""
    getattr_, list_, str_, tuple_ = getattr, list, str, tuple
    # Lazy caches the library fills on first use are filled now, so that a test which merely
    # asks whether a GPU is there (cuda.is_available, map_location) is not seen as a change.
    device_module = sys.modules.get("mytorch._device")
    if device_module is not None:
        device_module.cuda_backend_or_none()
    # Pickling an object (torch.save, deepcopy) makes copyreg cache its class's slot names on the
    # class itself (``__slotnames__``): filled now for every mytorch class, so saving a model is
    # not seen as a change to ``Linear``.
    for modname in [m for m in sys.modules if m == "mytorch" or m.startswith("mytorch.")]:
        for value in list_(getattr_(sys.modules[modname], "__dict__", {}).values()):
            if isinstance(value, type) and str_(getattr_(value, "__module__", "")).startswith("mytorch"):
                copyreg._slotnames(value)
    labels: list[str] = []
    mappings: list = []
    seen_ids: set[int] = set()

    def watch(label: str, owner: object, mapping) -> None:
        if id(owner) not in seen_ids:
            seen_ids.add(id(owner))
            labels.append(label)
            mappings.append(mapping)

    watch("builtins", builtins, builtins.__dict__)
    for modname in sorted(m for m in sys.modules if m == "mytorch" or m.startswith("mytorch.")):
        module = sys.modules[modname]
        if module is None:
            continue
        watch(modname, module, module.__dict__)
        for value in list_(module.__dict__.values()):
            if isinstance(value, type) and str_(getattr_(value, "__module__", "")).startswith("mytorch"):
                watch(f"{value.__module__}.{value.__qualname__}", value, value.__dict__)
    for modname in ("numpy", "numpy.linalg", "numpy.random", "random", "math", "bookkit.feedback"):
        if sys.modules.get(modname) is not None:
            watch(modname, sys.modules[modname], sys.modules[modname].__dict__)
    return labels, tuple_((m, tuple_(m.keys()), tuple_(m.values())) for m in mappings)


def main(box: list, out_fd: int) -> None:  # noqa: C901 - one closure on purpose: its locals are the child's secrets
    """Run the job in ``box`` (taken out: no other frame keeps it) in this forked, isolated child;
    report on ``out_fd``; never returns."""
    job = box.pop()
    nonce = job["nonce"]
    write = os.write  # captured before student code can rebind it
    dumps = json.dumps

    # ---------------------------------------------------------------- 1. trusted set-up
    import random

    import numpy as np

    import bookkit.feedback

    mytorch = sys.modules.get("mytorch")

    def reseed(seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed % (2 ** 32))
        if mytorch is not None and hasattr(mytorch, "manual_seed"):
            mytorch.manual_seed(seed)

    reseed(int(job["seed"]))

    ndarray, generic, asarray, ascontiguousarray = np.ndarray, np.generic, np.asarray, np.ascontiguousarray
    from binascii import b2a_base64 as b64
    from operator import is_

    issub, typeof, getattr_, callable_ = issubclass, type, getattr, callable
    len_, tuple_, list_, int_, float_, str_, repr_ = len, tuple, list, int, float, str, repr
    exc_types = (BaseException,)

    labels, snapshot = box.pop()  # the library state tests depend on, snapshot by the zygote

    import gc

    gc.collect()
    gc.disable()
    get_stats = gc.get_stats
    gc_runs = sum(s["collections"] for s in get_stats())
    flags: list[str] = []

    def verify() -> None:
        """Record the first change to the watched library state (or a garbage collection)."""
        if flags:
            return
        if sum(s["collections"] for s in get_stats()) != gc_runs:
            flags.append("gc (the garbage collector was run or re-enabled)")
            return
        for index, (mapping, keys, values) in enumerate(snapshot):
            if len_(mapping) != len_(values) or not all(map(is_, mapping.values(), values)):
                before = dict(zip(keys, values, strict=True))
                bad = [k for k in keys if mapping.get(k, verify) is not before[k]]
                bad += [k for k in mapping if k not in before]
                flags.append(f"{labels[index]}.{bad[0] if bad else '?'}")
                return

    # ---------------------------------------------------------------- plain data out
    def text(value: object) -> str:
        try:
            s = value if typeof(value) is str_ else str_(value)
            s = str_.__getitem__(s, slice(0, _MAX_TEXT)) if isinstance(s, str_) else "?"
            return str_.__str__(s)
        except BaseException:
            return "?"

    _mytorch = sys.modules.get("mytorch")
    # mytorch's small value types (a tensor's dtype, device, layout): compared by their text,
    # recognised by the classes themselves (captured here, before any student code runs)
    value_types = tuple_(getattr_(_mytorch, n) for n in ("dtype", "device", "layout", "memory_format")
                         if _mytorch is not None and hasattr(_mytorch, n))

    def canon(value: object, depth: int = 0) -> str | None:
        """A canonical text for builtin values (exact types only), or None."""
        t = typeof(value)
        if depth > 20:
            return None
        if value is None or t is bool or t is int_ or t is complex:
            return repr_(value)
        if t in value_types:
            return str_.__str__(t.__str__(value))[:100]
        if t is float_:
            return float_.hex(value) if value == value else "nan"
        if t is str_:
            return repr_(value)
        if t is tuple_ or t is list_:
            parts = [canon(v, depth + 1) for v in value]
            if None in parts:
                return None
            return "(" + ",".join(parts) + ")" if t is tuple_ else "[" + ",".join(parts) + "]"
        if t is dict:
            items = [(canon(k, depth + 1), canon(v, depth + 1)) for k, v in dict.items(value)]
            if any(k is None or v is None for k, v in items):
                return None
            return "{" + ",".join(sorted(f"{k}:{v}" for k, v in items)) + "}"
        if t is set or t is frozenset:
            parts = [canon(v, depth + 1) for v in value]
            return None if None in parts else "set{" + ",".join(sorted(parts)) + "}"
        return None

    def to_array(value: object):
        """Mirror of ``bookkit.feedback.to_numpy`` that never trusts the value's own type claims."""
        t = typeof(value)
        if issub(t, ndarray):
            return asarray(value)
        if not issub(t, (list_, tuple_, dict, str_, bytes)) and callable_(getattr_(value, "tolist", None)):
            try:
                return asarray(value.tolist())
            except Exception:
                pass
        if hasattr(value, "__array__") or issub(t, (list_, tuple_, int_, float_, bool, complex, generic)):
            return asarray(value)
        return None

    def enc(value: object) -> list:
        """``["v", builtin type name or None, canonical text or None, [dtype, shape, base64] or None]``."""
        try:
            t = typeof(value)
            py = canon(value)
            pytype = t.__name__ if py is not None else None
            array = to_array(value)
            arr = None
            if array is not None and typeof(array) is ndarray and array.dtype.kind in "biufcUS":
                if array.nbytes > _MAX_ARRAY_BYTES:
                    return ["opaque", "array too large"]
                arr = [str_(array.dtype.str), [int_(n) for n in array.shape],
                       str_(b64(ascontiguousarray(array).tobytes(), newline=False), "ascii")]
            return ["v", pytype, py, arr]
        except BaseException as exc:
            return ["opaque", text(typeof(exc).__name__)]

    def shape_of(value: object) -> list:
        try:
            shape = getattr_(value, "shape", None)
            if shape is None and callable_(getattr_(value, "size", None)):
                shape = value.size()
            if shape is None:
                array = to_array(value)
                shape = array.shape if array is not None else None
            if shape is None:
                return ["opaque", "no shape"]
            dims = [int_(n) for n in shape]
            return ["shape", dims] if all(typeof(d) is int_ for d in dims) else ["opaque", "odd shape"]
        except BaseException as exc:
            return ["opaque", text(typeof(exc).__name__)]

    def class_names(cls: object) -> list:
        try:
            return [text(getattr_(c, "__name__", "?")) for c in typeof.__dict__["__mro__"].__get__(cls)]
        except BaseException:
            return ["?"]

    def emit(record: dict) -> None:
        data = (nonce + " " + dumps(record, allow_nan=True) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[write(out_fd, view):]

    # ---------------------------------------------------------------- recorders (tests only)
    # A recorder only turns its arguments into plain data, in its local ``rec``; the profiler (which
    # student code cannot reach) collects ``rec`` when the recorder returns to test code. So a
    # recorder called by student code, or a record forged in a list, counts for nothing.
    hold: list[object] = []  # keeps every value a test looked at alive: no finaliser runs mid-test

    def check_equal(got, expected=None, what_zh="结果", what_en="result", *, _site=-1, _cut=False):
        hold.append((got, expected))
        rec = ["equal",  # noqa: F841 (read by the profiler)
               _site, text(what_zh), text(what_en), enc(got), None if _cut else enc(expected), []]
        return None  # the profiler reads `rec` when this returns

    def check_close(got, expected=None, what_zh="结果", what_en="result", rtol=1e-5, atol=1e-8, *,
                    _site=-1, _cut=False):
        hold.append((got, expected))
        rec = ["close",  # noqa: F841 (read by the profiler)
               _site, text(what_zh), text(what_en), enc(got), None if _cut else enc(expected),
               [float_(rtol) if typeof(rtol) in (int_, float_) else 1e-5,
                float_(atol) if typeof(atol) in (int_, float_) else 1e-8]]
        return None  # the profiler reads `rec` when this returns

    def check_shape(got, expected_shape=None, what_zh="形状", what_en="shape", *, _site=-1, _cut=False):
        hold.append((got, expected_shape))
        exp = None
        if not _cut:
            try:
                exp = ["shape", [int_(n) for n in expected_shape]]
            except BaseException:
                exp = ["opaque", "odd shape"]
        rec = ["shape",  # noqa: F841 (read by the profiler)
               _site, text(what_zh), text(what_en), shape_of(got), exp, []]
        return None  # the profiler reads `rec` when this returns

    def check_raises(fn, exception=None, what_zh="应当报错", what_en="should raise", match=None, *,
                     _site=-1, _cut=False):
        hold.append(fn)
        exp, opts = None, []
        if not _cut:
            classes = exception if isinstance(exception, tuple_) else (exception,)
            exp = ["names", [text(getattr_(c, "__name__", "?")) for c in classes]]
            opts = [None if match is None else text(match)]
        caught = None
        try:
            fn()
            got = ["returned"]
        except exc_types as exc:
            caught = exc
            hold.append(exc)
            got = ["raised", class_names(typeof(exc)), text(exc)]
        rec = ["raises",  # noqa: F841 (read by the profiler)
               _site, text(what_zh), text(what_en), got, exp, opts]
        return caught  # the profiler reads `rec` when this returns

    def check_true(condition, what_zh="条件", what_en="condition", hint_zh="", hint_en="", *, _site=-1,
                   _cut=False):
        hold.append(condition)
        rec = ["true",  # noqa: F841 (read by the profiler)
               _site, text(what_zh), text(what_en), enc(condition), None, []]
        return None  # the profiler reads `rec` when this returns

    class _Forbid:
        """The context manager ``forbid(...)`` returns; the profiler does the enforcing."""

        __slots__ = ("functions",)

        def __init__(self, functions):
            self.functions = functions

        def __enter__(self):
            return None

        def __exit__(self, *exc):
            return False

    def forbid(*functions):
        """Inside the block, the student's code may not run any of ``functions`` (see docs/grader.md)."""
        for given in functions:
            if not isinstance(getattr_(given, "__func__", given), type(forbid)):
                raise TypeError(f"forbid() needs Python functions, not {given!r}")
        return _Forbid(functions)

    recorders = {"check_equal": check_equal, "check_close": check_close, "check_shape": check_shape,
                 "check_raises": check_raises, "check_true": check_true, "forbid": forbid}
    recorder_codes = {f.__code__: name for name, f in recorders.items() if name != "forbid"}
    enter_code, exit_code = _Forbid.__enter__.__code__, _Forbid.__exit__.__code__
    forbid_code = forbid.__code__
    feedback_view = type(sys)("bookkit.feedback")
    feedback_view.__dict__.update(recorders)
    for name in ("to_numpy", "reference_of", "autograd_routes", "host_routes", "rules_of",
                 "chapter_rules"):  # plain helpers of the tests
        if hasattr(bookkit.feedback, name):
            setattr(feedback_view, name, getattr(bookkit.feedback, name))
    package_view = type(sys)("bookkit")
    package_view.feedback = feedback_view
    real_import = builtins.__import__

    def test_import(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "bookkit.feedback" and fromlist:
            return feedback_view
        if name in ("bookkit", "bookkit.feedback"):
            return package_view
        return real_import(name, globals, locals, fromlist, level)

    # Everything test code (and so, through a lambda's __globals__, student code) can reach runs
    # in a globals dict of its own: the runner's namespace, which the seal looks names up in,
    # stays out of reach.
    runner_globals = globals()
    exposed_globals = {"__builtins__": dict(builtins.__dict__), "__name__": "bookkit.feedback",
                       "_MAX_TEXT": _MAX_TEXT, "_MAX_ARRAY_BYTES": _MAX_ARRAY_BYTES}
    function_type = type(main)

    def rehome(function):
        if typeof(function) is not function_type or function.__globals__ is not runner_globals:
            return function
        moved = function_type(function.__code__, exposed_globals, function.__name__,
                              function.__defaults__, function.__closure__)
        moved.__kwdefaults__, moved.__qualname__ = function.__kwdefaults__, function.__qualname__
        return moved

    todo = [*recorders.values(), test_import, _Forbid.__init__, _Forbid.__enter__, _Forbid.__exit__]
    done_ids: set[int] = set()
    while todo:
        function = todo.pop()
        if id(function) in done_ids or typeof(function) is not function_type:
            continue
        done_ids.add(id(function))
        for cell in function.__closure__ or ():
            value = cell.cell_contents
            if typeof(value) is function_type and value.__globals__ is runner_globals:
                cell.cell_contents = rehome(value)
                todo.append(cell.cell_contents)
    for name in list_(recorders):
        recorders[name] = rehome(recorders[name])
    for name in ("__init__", "__enter__", "__exit__"):
        setattr(_Forbid, name, rehome(_Forbid.__dict__[name]))
    test_import = rehome(test_import)
    feedback_view.__dict__.update(recorders)
    del todo, done_ids, function

    test_builtins = dict(builtins.__dict__)
    test_builtins["__import__"] = test_import
    raiser = bookkit.feedback._raiser
    # the sentence a forbidden call fails with (which call, and why): the same in a check cell
    message_of = bookkit.feedback.forbidden_message

    # ---------------------------------------------------------------- 2. the seal
    allowed = tuple_(job["read_ok"])
    cwd = str_(job["cwd"])
    denied = tuple_(job["read_denied"])
    startswith = str_.startswith

    def normal(path: object) -> str | None:
        """Absolute, lexically normalised ``path`` (exact str/bytes only), or None."""
        if typeof(path) is bytes:
            path = bytes.decode(path, "utf-8", "replace")
        if typeof(path) is not str_:
            return None
        if not startswith(path, "/"):
            path = cwd + "/" + path
        parts: list[str] = []
        for part in str_.split(path, "/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    def readable(path: object) -> bool:
        full = normal(path)
        if full is None:
            return False
        if any(full == d or startswith(full, d + "/") for d in denied):
            return False
        return full in ("/dev/null", "/dev/urandom") or any(
            full == a or startswith(full, a + "/") for a in allowed)

    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    trusted = [False]  # True only while the profiler swaps code for forbid; student code never sees it

    def deny(why: str):
        raise PermissionError(f"not allowed while grading: {why}")

    def audit(event: str, args: tuple) -> None:
        if trusted[0]:
            return
        if event == "object.__getattr__":  # the most frequent event: decided first
            if len_(args) > 1 and args[1] in _FRAME_ATTRS:
                deny(f"reading {text(args[1])}")
            return
        if event == "open":
            path, mode, flags_ = (tuple_(args) + (None, None, 0))[:3]
            if typeof(path) is int_:
                return  # an already open descriptor (os.fdopen): opening it was checked
            if (typeof(mode) is str_ and any(c in mode for c in "wax+")) or (
                    typeof(flags_) is int_ and flags_ & write_flags):
                deny("writing files")
            if not readable(path):
                deny(f"reading {text(path)}")
        elif event in ("os.listdir", "os.scandir", "glob.glob", "os.walk"):
            if args and args[0] is not None and not readable(args[0]):
                deny(f"listing {text(args[0])}")
        elif event == "import":
            name = text(args[0]) if args else ""
            top = str_.split(name, ".")[0]
            if top in _BLOCKED_MODULES or name in _BLOCKED_MODULES or startswith(name, "bookkit.grader."):
                if top in ("torch", "torchgen", "functorch"):
                    raise ImportError("real PyTorch is not available while grading: "
                                      "implement the exercise with mytorch")
                deny(f"importing {name}")
        elif event == "object.__setattr__":
            if len_(args) > 1 and args[1] in ("__class__", "__bases__", "__dict__", "__code__",
                                              "__defaults__", "__kwdefaults__", "__globals__"):
                deny(f"setting {text(args[1])}")
        elif event == "sys._getframe":  # ValueError: what namedtuple, enum and typing expect
            raise ValueError("frame access is not allowed while grading")
        elif any(startswith(event, p) for p in _DENIED_EVENTS):
            deny(event)

    # ---------------------------------------------------------------- the profiler
    collected: list[list] = []  # the checks of the running test cell, as test code made them
    test_codes: set = set()  # code objects of the test cells (and what they define): identity
    forbidden: dict = {}  # code object → the name of the forbidden function it belongs to
    forbidden_keys: dict = {}  # (file, qualified name) of each: a recompiled copy is caught too
    stack: list[list] = []  # one entry per open forbid block: its (function, original code) pairs
    state = {"part": "visible", "violation": None}
    T: dict = {}

    def watch_code(function, code, name: str) -> None:
        """Watch every run of ``code``. A closure's code is shared by every function its factory
        made (``sigmoid`` and ``exp`` alike): then only runs with this function's closure values
        count, which a copy made with ``types.FunctionType`` shares too."""
        closure = function.__closure__
        contents = None if not closure else tuple_(c.cell_contents for c in closure)
        forbidden.setdefault(code, []).append((name, contents))
        if contents is None:  # a recompiled copy of a plain function: same file, same name
            forbidden_keys[(code.co_filename, code.co_qualname)] = name

    def forbidden_run(frame, code) -> str | None:
        """The forbidden function ``frame`` runs, or None."""
        entries = forbidden.get(code)
        if entries:
            local = frame.f_locals
            for name, contents in entries:
                if contents is None or all(local.get(v, verify) is c
                                           for v, c in zip(code.co_freevars, contents, strict=False)):
                    return name
        return forbidden_keys.get((code.co_filename, code.co_qualname))

    def set_code(function, code) -> None:
        trusted[0] = True
        try:
            function.__code__ = code
        finally:
            trusted[0] = False

    def open_block(functions) -> None:
        saved = []
        trusted[0] = True
        try:
            for given in functions:
                function = getattr_(given, "__func__", given)
                name = text(message_of(function))
                while typeof(function) is typeof(open_block):  # a wrapper and what it wraps
                    if all(f is not function for f, _ in saved):
                        code = function.__code__
                        saved.append((function, code))
                        if getattr_(function, "__wrapped__", None) is None:
                            watch_code(function, code, name)
                        function.__code__ = raiser(len_(code.co_freevars), name)
                    function = getattr_(function, "__wrapped__", None)
        finally:
            trusted[0] = False
        stack.append(saved)

    def close_block() -> None:
        if not stack:
            return
        saved = stack.pop()
        for function, code in reversed(saved):
            set_code(function, code)
        forbidden.clear()
        forbidden_keys.clear()
        trusted[0] = True
        try:
            for block in stack:
                for function, code in block:
                    if getattr_(function, "__wrapped__", None) is None:
                        watch_code(function, code, text(message_of(function)))
        finally:
            trusted[0] = False

    def violate(why: str) -> None:
        if state["violation"] is None:
            state["violation"] = why

    check_names = _CHECKS

    def profile(frame, event, arg):
        """Collect checks made by test code; enforce forbid; notice recorders called by anyone else.

        Called for every call and return: it reads ``f_globals`` (no audit event) and looks any
        further only at the runner's own functions, or at every call while a forbid block is open.
        """
        if event == "call":
            if frame.f_globals is not exposed_globals:
                if forbidden:
                    name = forbidden_run(frame, frame.f_code)
                    if name is not None:
                        violate(name)
                return
            code = frame.f_code
            if code is enter_code or code is exit_code:
                back = frame.f_back
                if back is not None and back.f_code in test_codes:
                    if code is enter_code:
                        open_block(frame.f_locals["self"].functions)
                    else:
                        close_block()
            elif code in recorder_codes or code is forbid_code:
                back = frame.f_back
                if back is None or back.f_code not in test_codes:
                    violate("a check of the test was called from outside the test")
        elif event == "return" and frame.f_globals is exposed_globals:
            code = frame.f_code
            if code in recorder_codes:
                back = frame.f_back
                if back is not None and back.f_code in test_codes:
                    rec = frame.f_locals.get("rec")
                    if typeof(rec) is list_ and len_(rec) == 7:
                        rec.insert(2, state["part"])
                        collected.append(rec)
                    for name in check_names:
                        if (name in T and T[name] is not recorders[name]) or \
                                feedback_view.__dict__.get(name) is not recorders[name]:
                            violate(f"the test's {name} was replaced")
                    if rec[0] == "true":  # a condition computed here: the library must be intact
                        verify()

    import _imp
    import _thread
    import threading

    for module, names in ((_thread, ("start_new_thread", "start_new")),
                          (threading, ("_start_new_thread",)),
                          (sys.modules.get("signal"), ("signal", "setitimer", "alarm")),
                          (sys.modules.get("_signal"), ("signal", "setitimer", "alarm")),
                          (_imp, ("create_builtin", "create_dynamic", "exec_dynamic", "exec_builtin")),
                          (sys, ("getprofile", "gettrace"))):
        for name in names:
            if module is not None and hasattr(module, name):
                delattr(module, name)
    sys.pycache_prefix = "/nonexistent-pycache"  # imports compile from source: no marshal of a .pyc
    for name in list(sys.modules):  # a blocked module someone imported must be imported anew
        if name.split(".")[0] in _BLOCKED_MODULES or name.startswith("bookkit.grader"):
            del sys.modules[name]
    sys.modules["ctypes"] = None  # type: ignore[assignment]
    sys.modules["_ctypes"] = None  # type: ignore[assignment]
    sys.setprofile(profile)
    if job.get("audit", True):  # tests switch it off to show what the OS layers stop on their own
        sys.addaudithook(audit)

    # ---------------------------------------------------------------- 3. the cells
    cells = job["cells"]
    skip, hidden, order = frozenset(job["skip"]), bool(job["hidden"]), job["order"]
    S: dict = {"__name__": "__main__", "__builtins__": builtins}
    stubs = sys.modules.get("mytorch._grader_stub")  # a stub tree: its pieces are the notebook's
    if stubs is not None:
        stubs.bind(S)
    del job, stubs

    def codes_in(code) -> None:
        test_codes.add(code)
        for const in code.co_consts:
            if typeof(const) is typeof(code):
                codes_in(const)

    for index in order:
        cell = cells[index]
        cells[index] = None  # forget test code once it has run
        is_test = cell["kind"] == "test"
        if index in skip:
            continue
        emit({"ev": "begin", "cell": index})
        collected.clear()
        state["violation"] = None
        error, part = None, "code"
        if not is_test:
            try:
                exec(compile(cell["source"], f"<cell-{index}>", "exec"), S)
            except exc_types as exc:
                error = [text(typeof(exc).__name__), text(exc)]
        else:
            reseed(int(cell.get("seed", 0)))
            T.update(S)
            T["__builtins__"] = test_builtins
            T.update(recorders)
            for part, source in cell["parts"]:
                if part == "hidden" and not hidden:
                    continue
                state["part"] = part
                try:
                    code = compile(source, f"<test-{index}>", "exec")
                    codes_in(code)
                    source = None
                    exec(code, T)
                except exc_types as exc:
                    error = [text(typeof(exc).__name__), text(exc)]
                    break
                finally:
                    while stack:  # a block left open by an exception
                        close_block()
            verify()
        emit({"ev": "end", "cell": index, "checks": list_(collected), "error": error,
              "part": part if error else None, "tamper": flags[0] if flags else None,
              "violation": state["violation"]})
    emit({"ev": "done"})
    os._exit(0)  # no atexit handlers, no finalisers: nothing student-defined runs after "done"


def serve(control_fd: int, sys_path: list[str], jail_spec: dict) -> None:
    """The zygote: import everything once, then fork one fresh child per job, forever.

    A fork of this process is as clean as a new interpreter that ran the same trusted imports (no
    student code ever runs here), and costs milliseconds instead of the ~0.25 s of starting Python
    and importing numpy and mytorch again. Protocol on the control socket, one job at a time:

    * zygote → parent, once: ``READY <JSON>``: which isolation layers work here;
    * parent → zygote: a 16-byte length header carrying two file descriptors (the write ends of
      the records pipe and of the stderr pipe), then the job's JSON;
    * zygote → parent: ``PID <pid>`` once forked, ``EXIT <pid> <code>`` once the child is reaped
      (negative: killed by that signal).

    The job is not even parsed here: the raw bytes are handed to the child and wiped. When the
    parent goes away (end of file on the socket) the zygote kills its running child and exits.
    """
    import select
    import socket

    private = _prepare(sys_path)
    jail_spec = dict(jail_spec, binds=_needed_paths(jail_spec["binds"]))
    os.makedirs(jail_spec["base"], exist_ok=True)
    layers = private["jail"].probe(jail_spec)
    sock = socket.socket(fileno=control_fd)
    reply = sock.sendall
    reply(("READY " + json.dumps(layers) + "\n").encode())
    jail_spec = dict(jail_spec, namespaces=layers["namespaces"], seccomp=layers["seccomp"])
    while True:
        header, fds, _, _ = socket.recv_fds(sock, 16, 2)
        while header and len(header) < 16:
            more = sock.recv(16 - len(header))
            if not more:
                break
            header += more
        if len(header) < 16 or len(fds) != 2:
            os._exit(0)  # the parent closed the socket (or broke the protocol): no more jobs
        raw = bytearray(int(header))
        view, got = memoryview(raw), 0
        while got < len(raw):
            n = sock.recv_into(view[got:])
            if not n:
                os._exit(0)
            got += n
        del view
        ready_r, ready_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in (*fds, ready_r, ready_w):
                os.close(fd)
            reply(f"ERR {exc.strerror}\n".encode())
            continue
        if pid == 0:
            try:
                os.close(ready_r)
                _child(sock, raw, fds, ready_w, private, jail_spec)
            except BaseException:  # a grader bug, not the student's: leave a trace for the instructor
                import traceback

                traceback.print_exc()
            finally:
                os._exit(70)
        for fd in (*fds, ready_w):
            os.close(fd)
        raw[:] = bytes(len(raw))  # forget this student's job before the next fork
        del raw
        os.read(ready_r, 1)  # the child leads its own process group now: killpg(pid) reaches it
        os.close(ready_r)
        reply(f"PID {pid}\n".encode())
        try:
            watch = os.pidfd_open(pid)
        except (AttributeError, OSError):
            watch = None
        while watch is not None:
            ready, _, _ = select.select([sock, watch], [], [])
            if watch in ready:
                break
            if sock in ready:  # the parent is gone (there is no other reason to write now)
                _killpg(pid)
                os._exit(0)
        if watch is not None:
            os.close(watch)
        _, status = os.waitpid(pid, 0)
        _killpg(pid)  # anything the child left in its process group
        reply(f"EXIT {pid} {os.waitstatus_to_exitcode(status)}\n".encode())


def _needed_paths(fixed: list[str]) -> list[str]:
    """What a child must see: ``fixed`` folders (stdlib, ``mytorch/``, ``bookkit/``) and, from
    site-packages, only the packages this zygote imported (NumPy and its libraries, nothing else)."""
    sites = [p for p in sys.path if p.endswith("site-packages")]
    needed = set(fixed)
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        for site in sites:
            if isinstance(file, str) and file.startswith(site + "/"):
                top = file[len(site) + 1:].split("/")[0]
                needed.add(f"{site}/{top}")
                libs = f"{site}/{top.split('.')[0]}.libs"
                if os.path.isdir(libs):
                    needed.add(libs)
    for path in list(needed):
        needed.add(os.path.realpath(path))
    return sorted(p for p in needed if os.path.exists(p))


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, 9)
    except OSError:
        pass


def _child(sock, raw: bytearray, fds: list[int], ready: int, private: dict, jail_spec: dict) -> None:
    """In the forked child, before any untrusted code: own session, pipes, jail, limits."""
    import resource

    records, stderr = fds
    sock.close()
    os.setsid()  # its own session and process group: the parent kills the whole group
    os.write(ready, b"1")
    os.close(ready)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # stdout is never read: printing fake results reaches nobody
    os.dup2(stderr, 2)
    job = json.loads(bytes(raw))
    raw[:] = bytes(len(raw))
    os.closerange(3, records)  # keep 0, 1, 2 and the records pipe; nothing of the zygote
    os.closerange(records + 1, 1 << 16)
    spec = jail_spec
    jail = private.pop("jail")

    def limit(limits: dict = job["limits"], module=resource) -> None:
        """Set the rlimits: after the jail's fork, before seccomp (which refuses setting them)."""
        for name, value in limits.items():  # hard = soft: the child cannot raise them again
            try:
                module.setrlimit(getattr(module, name), (value, value))
            except ValueError:  # the hard limit is lower already: keep it
                pass

    jail.enter(spec, limit)  # raises (and the child ends) rather than run half-isolated
    stubs = sys.modules.get("mytorch._grader_stub")  # the pieces this child's tests are not about
    if stubs is not None:
        stubs.give(job.pop("references", None) or {})
    job.pop("references", None)
    if spec.get("namespaces"):
        job["cwd"] = "/tmp"
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(HOME=job["cwd"], TMPDIR=job["cwd"], PATH="/nonexistent", LANG="C.UTF-8",
                      LC_ALL="C.UTF-8")
    del jail, resource, limit
    box = [private.pop("snapshot"), job]
    private.clear()  # the jail's modules (ctypes, pyseccomp): nothing may keep them alive
    del job
    main(box, records)


def _serve_privately(control_fd: int, sys_path: list[str], jail_spec: dict) -> None:
    """Run the zygote from a private copy of this module, with a private copy of builtins.

    Every name the seal's functions look up (``any``, ``len``, ``_DENIED_EVENTS``…) then resolves in
    dictionaries no student code can reach: patching ``builtins`` or ``sys.modules["__main__"]``
    cannot weaken the audit hook, the recorders or the tamper check.
    """
    private = {"__builtins__": dict(builtins.__dict__), "__name__": "_grader_runner", "__file__": __file__}
    with open(__file__, encoding="utf-8") as source:
        code = compile(source.read(), __file__, "exec")
    exec(code, private)
    private["serve"](control_fd, sys_path, jail_spec)


if __name__ == "__main__":
    _serve_privately(int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3]))
