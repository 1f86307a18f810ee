"""The grader's child process: run one assembled exercise notebook, sealed, and report plain data.

The parent starts it as ``python -I -S runner.py`` (see ``sandbox.py``) and writes one JSON job to
its stdin: the cells to run, the seed, the allowed paths and a nonce. The child answers on a private
pipe (file descriptor ``job["fd"]``), one record per line, each line ``<nonce> <repr of a dict of
plain builtins>``. The parent trusts nothing else the child says: it never reads stdout, it parses
records with ``ast.literal_eval``, and it decides every verdict itself.

What runs here, in order:

1. trusted set-up: import numpy, mytorch and the stdlib modules students may use; seed the RNGs;
   snapshot the library state that tests depend on (module and class dictionaries);
2. the seal: an audit hook (no frames, no gc introspection, no processes, signals, sockets, ctypes,
   no writes, reads only below the allowed folders, no import of real torch), no threads, and a
   profiler that re-checks the library snapshot whenever test code calls anything;
3. the cells: setup and solution cells in the notebook namespace ``S``; test cells in a separate
   namespace ``T`` whose ``check_*`` helpers are recorders and whose builtins are a private copy,
   so student code (which only ever sees ``S``) cannot reach the tests' variables or helpers.

Everything secret (the nonce, the recorders, the test code) lives only in local variables and
closures of ``main``: student code can reach none of them without frames or ``gc``, which the seal
denies. Student code can still fake its own outputs — which is the same as computing them.
"""

from __future__ import annotations

import builtins
import json
import os
import sys

_BLOCKED_MODULES = frozenset({
    "torch", "torchgen", "functorch", "ctypes", "_ctypes", "_thread", "_signal", "signal",
    "subprocess", "_posixsubprocess", "multiprocessing", "_multiprocessing", "socket", "_socket",
    "ssl", "_ssl", "pty", "mmap", "resource", "fcntl", "termios", "_posixshmem", "_testcapi",
    "_testinternalcapi", "_testbuffer", "_xxsubinterpreters", "_xxinterpchannels", "concurrent",
    "asyncio", "tests", "bench", "IPython",
})
_DENIED_EVENTS = (
    "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty", "os.kill",
    "os.killpg", "os.setsid", "os.setpgid", "subprocess.", "pty.", "signal.", "socket.", "ctypes.",
    "os.chdir", "os.chmod", "os.chown", "os.link", "os.symlink", "os.mkdir", "os.remove", "os.rename",
    "os.rmdir", "os.truncate", "os.utime", "os.setxattr", "os.removexattr", "os.putenv",
    "os.unsetenv", "shutil.", "mmap.", "resource.", "fcntl.", "sys.setprofile", "sys.settrace",
    "sys._current_frames", "sys.addaudithook", "gc.get_", "gc.freeze", "cpython.",
    "sys.set_asyncgen_hooks", "webbrowser.", "urllib.", "ftplib.", "smtplib.", "http.",
)
_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})
_CODE_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_PRELOAD = ("math", "cmath", "random", "bisect", "heapq", "statistics", "datetime", "decimal",
            "fractions", "array", "struct", "collections", "collections.abc", "itertools",
            "functools", "operator", "copy", "string", "re", "typing", "dataclasses", "enum",
            "numbers", "textwrap", "pprint", "time", "unicodedata", "zlib", "binascii", "warnings",
            "contextlib", "abc", "types", "weakref", "inspect", "traceback")
_MAX_ARRAY_BYTES = 8 << 20
_MAX_TEXT = 2000


def _version_probes(mappings: list) -> list | None:
    """Readers of each dict's version tag (PEP 509; CPython bumps it on every change), or None.

    They make the tamper check a few microseconds instead of comparing every entry; they are made
    before the seal, from ctypes objects that student code can never reach. Where the layout does
    not match (another Python), the grader falls back to comparing entries.
    """
    try:
        import ctypes
        import gc

        offset = 2 * ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_ssize_t)

        def probe(d: dict):
            return ctypes.c_uint64.from_address(id(d) + offset)

        scratch: dict = {}
        test = probe(scratch)
        before = test.value
        scratch["x"] = 1
        if test.value == before or sys.implementation.name != "cpython":
            return None
        probes = []
        for mapping in mappings:
            real = mapping if type(mapping) is dict else next(
                (r for r in gc.get_referents(mapping) if type(r) is dict), None)
            if real is None:
                return None
            probes.append(probe(real))
        return probes
    except Exception:
        return None


def _value(probe) -> int:
    return probe.value


def _prepare(sys_path: list[str]) -> None:
    """Trusted set-up, once per zygote: import numpy, mytorch (every submodule), the stdlib modules
    students may use and the feedback helpers, so that each forked child starts with them loaded."""
    sys.path[:] = sys_path
    import importlib
    import pkgutil

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
    import bookkit.feedback  # noqa: F401  (setup cells import it: load it while reads are open)


def main(box: list, out_fd: int) -> None:  # noqa: C901 - one closure on purpose: its locals are the child's secrets
    """Run the job in ``box`` (taken out: no other frame keeps it) in this forked, not yet sealed
    child; report on ``out_fd``; never returns."""
    job = box.pop()
    nonce = job["nonce"]
    write = os.write  # captured before student code can rebind it

    # ---------------------------------------------------------------- 1. trusted set-up
    import random

    import numpy as np

    import bookkit.feedback

    mytorch = sys.modules.get("mytorch")

    seed = int(job["seed"])
    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    if mytorch is not None and hasattr(mytorch, "manual_seed"):
        mytorch.manual_seed(seed)

    ndarray, generic, asarray, ascontiguousarray = np.ndarray, np.generic, np.asarray, np.ascontiguousarray
    from binascii import b2a_base64 as b64  # arrays travel as base64 text: 3x faster to parse
    from operator import is_

    issub, typeof, getattr_, callable_ = issubclass, type, getattr, callable
    len_, tuple_, list_, int_, float_, str_, repr_ = len, tuple, list, int, float, str, repr
    exc_types = (BaseException,)

    # the library state tests depend on: module dicts and the classes defined in mytorch
    labels: list[str] = []
    mappings: list[object] = []
    seen_ids: set[int] = set()

    def watch(label: str, owner: object, mapping) -> None:
        if id(owner) not in seen_ids:
            seen_ids.add(id(owner))
            labels.append(label)
            mappings.append(mapping)

    watch("builtins", builtins, builtins.__dict__)
    for modname in sorted(m for m in sys.modules if m == "mytorch" or m.startswith("mytorch.")):
        module = sys.modules[modname]
        watch(modname, module, module.__dict__)
        for value in list_(module.__dict__.values()):
            if isinstance(value, type) and str_(getattr_(value, "__module__", "")).startswith("mytorch"):
                watch(f"{value.__module__}.{value.__qualname__}", value, value.__dict__)
    for modname in ("numpy", "numpy.linalg", "numpy.random", "random", "math", "bookkit.feedback"):
        if modname in sys.modules:
            watch(modname, sys.modules[modname], sys.modules[modname].__dict__)
    # one flat list of (mapping, key, value) triples: verify() is then three C-level passes
    flat_maps = tuple_(m for m in mappings for _ in tuple_(m.keys()))
    flat_keys = tuple_(k for m in mappings for k in tuple_(m.keys()))
    flat_values = tuple_(m[k] for m, k in zip(flat_maps, flat_keys, strict=True))
    sizes = tuple_(map(len, mappings))
    probes = _version_probes(mappings)
    baseline = [tuple_(map(_value, probes)) if probes else None]

    def lookup(mapping, key):
        return mapping.get(key, lookup)

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
        if probes and tuple_(map(_value, probes)) == baseline[0]:  # fast path: no dict changed
            if sum(s["collections"] for s in get_stats()) != gc_runs:
                flags.append("gc (the garbage collector was run or re-enabled)")
            return
        if tuple_(map(len_, mappings)) == sizes and all(
                map(is_, map(lookup, flat_maps, flat_keys), flat_values)):
            if probes:  # a value was stored again, unchanged: harmless
                baseline[0] = tuple_(map(_value, probes))
            if sum(s["collections"] for s in get_stats()) != gc_runs:
                flags.append("gc (the garbage collector was run or re-enabled)")
            return
        for label, mapping in zip(labels, mappings, strict=True):  # slow path: name what changed
            keys = [k for m, k in zip(flat_maps, flat_keys, strict=True) if m is mapping]
            bad = [k for m, k, v in zip(flat_maps, flat_keys, flat_values, strict=True)
                   if m is mapping and lookup(m, k) is not v] + [k for k in mapping if k not in keys]
            if bad:
                flags.append(f"{label}.{bad[0]}")
                return

    # ---------------------------------------------------------------- plain data out
    def text(value: object) -> str:
        try:
            s = value if typeof(value) is str_ else str_(value)
            s = str_.__getitem__(s, slice(0, _MAX_TEXT)) if isinstance(s, str_) else "?"
            return str_.__str__(s)
        except BaseException:
            return "?"

    def canon(value: object, depth: int = 0) -> str | None:
        """A canonical text for builtin values (exact types only), or None."""
        t = typeof(value)
        if depth > 20:
            return None
        if value is None or t is bool or t is int_ or t is complex:
            return repr_(value)
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

    def enc(value: object) -> tuple:
        """``("v", builtin type name or None, canonical text or None, array or None)``."""
        try:
            t = typeof(value)
            py = canon(value)
            pytype = t.__name__ if py is not None else None
            array = to_array(value)
            arr = None
            if array is not None and typeof(array) is ndarray and array.dtype.kind in "biufcUS":
                if array.nbytes > _MAX_ARRAY_BYTES:
                    return ("opaque", "array too large")
                arr = (str_(array.dtype.str), tuple_(int_(n) for n in array.shape),
                       str_(b64(ascontiguousarray(array).tobytes(), newline=False), "ascii"))
            return ("v", pytype, py, arr)
        except BaseException as exc:
            return ("opaque", text(typeof(exc).__name__))

    def shape_of(value: object) -> tuple:
        try:
            shape = getattr_(value, "shape", None)
            if shape is None and callable_(getattr_(value, "size", None)):
                shape = value.size()
            if shape is None:
                array = to_array(value)
                shape = array.shape if array is not None else None
            if shape is None:
                return ("opaque", "no shape")
            dims = tuple_(int_(n) for n in shape)
            return ("shape", dims) if all(typeof(d) is int_ for d in dims) else ("opaque", "odd shape")
        except BaseException as exc:
            return ("opaque", text(typeof(exc).__name__))

    def emit(record: dict) -> None:
        data = (nonce + " " + repr_(record) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[write(out_fd, view):]

    # ---------------------------------------------------------------- recorders (tests only)
    checks: list[tuple] = []
    where = ["visible"]  # the part of the test cell that is running: "visible" or "hidden"
    hold: list[object] = []  # keeps every value a test looked at alive: no finaliser runs mid-test

    def record(kind: str, what_zh: object, what_en: object, got: tuple, exp: tuple, opts: tuple) -> None:
        checks.append((kind, where[0], text(what_zh), text(what_en), got, exp, opts))

    def check_equal(got, expected, what_zh="结果", what_en="result"):
        hold.append((got, expected))
        verify()
        g = enc(got)
        verify()
        e = enc(expected)
        record("equal", what_zh, what_en, g, e, ())

    def check_close(got, expected, what_zh="结果", what_en="result", rtol=1e-5, atol=1e-8):
        hold.append((got, expected))
        verify()
        g = enc(got)
        verify()
        e = enc(expected)
        record("close", what_zh, what_en, g, e, (float_(rtol), float_(atol)))

    def check_shape(got, expected_shape, what_zh="形状", what_en="shape"):
        hold.append((got, expected_shape))
        verify()
        g = shape_of(got)
        verify()
        e = ("shape", tuple_(int_(n) for n in expected_shape))
        record("shape", what_zh, what_en, g, e, ())

    def check_raises(fn, exception, what_zh="应当报错", what_en="should raise", match=None):
        hold.append(fn)
        classes = exception if isinstance(exception, tuple_) else (exception,)
        names = tuple_(text(getattr_(c, "__name__", "?")) for c in classes)
        verify()
        caught = None
        try:
            fn()
            g = ("returned",)
        except exc_types as exc:
            caught = exc
            hold.append(exc)
            g = ("raised", bool(isinstance(exc, exception)), text(typeof(exc).__name__), text(exc))
        verify()
        record("raises", what_zh, what_en, g, ("names", names),
               (None if match is None else text(match),))
        return caught

    def check_true(condition, what_zh, what_en, hint_zh="", hint_en=""):
        hold.append(condition)
        verify()
        g = enc(condition)
        verify()
        record("true", what_zh, what_en, g, ("none",), ())

    recorders = {"check_equal": check_equal, "check_close": check_close, "check_shape": check_shape,
                 "check_raises": check_raises, "check_true": check_true}
    swapping = [False]  # True only while the trusted forbid() swaps a function's code

    def set_code(function, code) -> None:
        swapping[0] = True
        try:
            function.__code__ = code
        finally:
            swapping[0] = False

    recorders["forbid"] = bookkit.feedback._make_forbid(set_code)
    feedback_view = type(sys)("bookkit.feedback")
    feedback_view.__dict__.update(recorders)
    feedback_view.to_numpy = bookkit.feedback.to_numpy
    package_view = type(sys)("bookkit")
    package_view.feedback = feedback_view
    real_import = builtins.__import__

    def test_import(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "bookkit.feedback" and fromlist:
            return feedback_view
        if name in ("bookkit", "bookkit.feedback"):
            return package_view
        return real_import(name, globals, locals, fromlist, level)

    test_builtins = dict(builtins.__dict__)
    test_builtins["__import__"] = test_import

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

    def deny(why: str):
        raise PermissionError(f"not allowed while grading: {why}")

    def audit(event: str, args: tuple) -> None:
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
            top = str_.split(text(args[0]), ".")[0] if args else ""
            if top in _BLOCKED_MODULES:
                if top in ("torch", "torchgen", "functorch"):
                    raise ImportError("real PyTorch is not available while grading: "
                                      "implement the exercise with mytorch")
                deny(f"importing {top}")
        elif event == "object.__getattr__":
            if len_(args) > 1 and args[1] in _FRAME_ATTRS:
                deny("frame access")
        elif event == "object.__setattr__":
            if len_(args) > 1 and args[1] in ("__class__", "__bases__", "__dict__"):
                deny(f"setting {text(args[1])}")
            if len_(args) > 1 and args[1] in _CODE_ATTRS and not swapping[0]:
                deny(f"setting {text(args[1])}")  # a function's code: invisible to the tamper check
        elif event == "sys._getframe":
            raise ValueError("frame access is not allowed while grading")
        elif any(startswith(event, p) for p in _DENIED_EVENTS):
            deny(event)

    cell_names = frozenset(f"<test-{i}>" for i in range(len_(job["cells"])))

    recorder_codes = frozenset(f.__code__ for f in recorders.values())

    def profile(frame, event, arg):
        """Re-check the library snapshot whenever test code calls a Python function.

        (Calls of C functions cannot be patched; Python code they call back is a "call" too.)
        """
        if event == "call":
            back = frame.f_back
            if back is not None and back.f_code.co_filename in cell_names and \
                    frame.f_code not in recorder_codes:
                verify()

    import _imp
    import _thread
    import threading

    for module, names in ((_thread, ("start_new_thread", "start_new")),
                          (threading, ("_start_new_thread",)),
                          (sys.modules.get("signal"), ("signal", "setitimer", "alarm")),
                          (sys.modules.get("_signal"), ("signal", "setitimer", "alarm")),
                          (_imp, ("create_builtin", "create_dynamic")),
                          (sys, ("getprofile", "gettrace"))):
        for name in names:
            if module is not None and hasattr(module, name):
                delattr(module, name)
    sys.setprofile(profile)
    sys.addaudithook(audit)
    for name in list(sys.modules):  # a blocked module someone imported must be imported anew
        if name.split(".")[0] in _BLOCKED_MODULES:
            del sys.modules[name]

    # ---------------------------------------------------------------- 3. the cells
    cells = job["cells"]
    start, skip, hidden = int(job["start"]), frozenset(job["skip"]), bool(job["hidden"])
    S: dict = {"__name__": "__main__", "__builtins__": builtins}
    T: dict = {}
    del job
    for index in range(len_(cells)):
        cell = cells[index]
        cells[index] = None  # forget test code once it has run
        is_test = cell["kind"] == "test"
        if index in skip or (is_test and index < start):
            continue
        emit({"ev": "begin", "cell": index})
        checks.clear()
        error, part = None, "code"
        if not is_test:
            try:
                exec(compile(cell["source"], f"<cell-{index}>", "exec"), S)
            except exc_types as exc:
                error = (text(typeof(exc).__name__), text(exc))
        else:
            T.update(S)
            T["__builtins__"] = test_builtins
            T.update(recorders)
            for part, source in cell["parts"]:
                if part == "hidden" and not hidden:
                    continue
                where[0] = part
                try:
                    code = compile(source, f"<test-{index}>", "exec")
                    source = None
                    exec(code, T)
                except exc_types as exc:
                    error = (text(typeof(exc).__name__), text(exc))
                    break
            verify()
        emit({"ev": "end", "cell": index, "checks": list_(checks), "error": error,
              "part": part if error else None, "tamper": flags[0] if flags else None})
    emit({"ev": "done"})
    os._exit(0)  # no atexit handlers, no finalisers: nothing student-defined runs after "done"


def serve(control_fd: int, sys_path: list[str]) -> None:
    """The zygote: import everything once, then fork one fresh child per job, forever.

    A fork of this process is as clean as a new interpreter that ran the same trusted imports (no
    student code ever runs here), and costs milliseconds instead of the ~0.25 s of starting Python
    and importing numpy and mytorch again. Protocol on the control socket, one job at a time:

    * parent → zygote: a 16-byte length header carrying two file descriptors (the write ends of
      the records pipe and of the stderr pipe), then the job's JSON;
    * zygote → parent: ``PID <pid>`` once forked, ``EXIT <pid> <code>`` once the child is reaped
      (negative: killed by that signal).

    The job is not even parsed here: the raw bytes are handed to the child and wiped. When the
    parent goes away (end of file on the socket) the zygote kills its running child and exits.
    """
    import select
    import socket

    _prepare(sys_path)
    sock = socket.socket(fileno=control_fd)
    reply = sock.sendall
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
                _child(sock, raw, fds, ready_w)
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


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, 9)
    except OSError:
        pass


def _child(sock, raw: bytearray, fds: list[int], ready: int) -> None:
    """In the forked child, before any untrusted code: own session, pipes, folder, limits."""
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
    os.chdir(job["cwd"])
    os.environ.update(HOME=job["cwd"], TMPDIR=job["cwd"])
    for name, value in job["limits"].items():  # hard = soft: the child cannot raise them again
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
        except (ValueError, OSError):
            pass
    box = [job]
    del job
    main(box, records)


def _serve_privately(control_fd: int, sys_path: list[str]) -> None:
    """Run the zygote from a private copy of this module, with a private copy of builtins.

    Every name the seal's functions look up (``any``, ``len``, ``_DENIED_EVENTS``…) then resolves in
    dictionaries no student code can reach: patching ``builtins`` or ``sys.modules["__main__"]``
    cannot weaken the audit hook, the recorders or the tamper check.
    """
    private = {"__builtins__": dict(builtins.__dict__), "__name__": "_grader_runner", "__file__": __file__}
    with open(__file__, encoding="utf-8") as source:
        code = compile(source.read(), __file__, "exec")
    exec(code, private)
    private["serve"](control_fd, sys_path)


if __name__ == "__main__":
    _serve_privately(int(sys.argv[1]), json.loads(sys.argv[2]))
