"""``save`` and ``load`` in PyTorch's own file format, so checkpoints move between the libraries.

A checkpoint is a zip archive (stored, not compressed) with one folder, ``<name>/``:

* ``data.pkl``   the object, pickled (protocol 2). A tensor is pickled as a call,
  ``torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, hooks)``,
  and its storage as a *persistent id* ``('storage', torch.FloatStorage, key, location, numel)``
  instead of its bytes;
* ``data/<key>`` the bytes of each storage, once, however many tensors view it (so views that
  shared memory when saved share it again when loaded), each aligned to 64 bytes in the file;
* ``version``, ``byteorder``, ``.format_version``, ``.storage_alignment``,
  ``.data/serialization_id``: what torch writes alongside.

The pickle names torch's functions and classes (``torch._utils``, ``torch.FloatStorage``,
``torch.float32``, ``torch.device``...): real ``torch.load`` opens what ``mytorch.save`` wrote, and
``mytorch.load`` maps those names back to mytorch's own objects.

Loading a pickle can run arbitrary code (a pickle may name *any* function to call). So, as in torch,
``load`` defaults to ``weights_only=True``: only an allowlist of names (tensors, storages, dtypes,
devices, containers, and what you add with :func:`add_safe_globals`) may appear in the file.

Before the zip format (torch < 1.6) a checkpoint was several pickles in a row: a magic number,
the format version (1001), a dict of system information, the object, the sorted list of storage
keys; then each storage as an int64 element count and its raw bytes.
``save(..., _use_new_zipfile_serialization=False)`` writes that legacy layout and ``load`` reads it.

Saving to a path is atomic (mytorch's behaviour: torch writes straight to the path): the archive is
written to a temporary file in the same folder, synced to disk, then renamed over the target, so a
crash mid-save leaves the previous file intact.
"""
from __future__ import annotations

import _compat_pickle
import codecs
import collections
import contextlib
import hashlib
import io
import mmap as _mmap
import os
import pickle
import secrets
import struct
import warnings
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, BinaryIO, Callable

import numpy as np

from . import _dtype as D
from . import cuda as _cuda
from ._device import cuda_backend
from ._device import device as _device
from ._pieces import piece, pieces
from ._storage import UntypedStorage, _storage_bytes
from ._tensor import Size, Tensor
from .nn.parameter import Parameter

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
           "safe_globals", "DEFAULT_PROTOCOL", "set_crc32_options", "get_crc32_options",
           "set_load_crc32_check", "get_load_crc32_check", "storage_record", "rebuild_tensor",
           "map_location_device", "find_global"]

DEFAULT_PROTOCOL = 2
# compute_crc32: write each record's CRC-32 (torch's save option; 0 is written otherwise).
# check_crc32: verify the CRC-32 of every storage record when loading (mytorch's addition: torch
# does not; it costs about as much as the rest of the load). data.pkl is always verified.
_config = {"compute_crc32": True, "check_crc32": False}
_ALIGNMENT = 64
_FORMAT_VERSION = b"3\n"         # the ``version`` record torch 2.x writes

# torch's storage class for each dtype (dtypes newer than these use UntypedStorage + v3)
_STORAGE_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
                  "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                  "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                  "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
                  "bfloat16": "BFloat16Storage"}


class _TorchName:
    """Stands for a global of torch's (``torch._utils._rebuild_tensor_v2``) in a pickle we write."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle wants a callable in a reduce tuple
        raise TypeError(f"{self.module}.{self.name} is a name for pickles, not a function")


_REBUILD_V2 = _TorchName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_V3 = _TorchName("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = _TorchName("torch._utils", "_rebuild_parameter")
_TORCH_DEVICE = _TorchName("torch", "device")
_TORCH_SIZE = _TorchName("torch", "Size")
_UNTYPED = _TorchName("torch.storage", "UntypedStorage")
_STORAGE_TYPES = {name: _TorchName("torch", cls) for name, cls in _STORAGE_NAMES.items()}


# ===================================================================================== pieces
@piece("08.1")
def storage_record(tensor: "Tensor", keys: dict) -> tuple:
    """What the file records about ``tensor``'s storage: ``('storage', dtype, key, location, numel)``.

    Each storage is written once, under a key: ``keys`` maps the storages seen so far (by device
    and address) to their key, and a storage not seen yet gets the next one, ``"0"``, ``"1"``...
    ``numel`` is the storage's length in elements of the tensor's dtype.
    """
    storage = tensor.untyped_storage()
    where = (str(tensor.device), storage.data_ptr())
    if where not in keys:
        keys[where] = str(len(keys))
    numel = storage.nbytes() // tensor.element_size()
    return ("storage", tensor.dtype, keys[where], str(tensor.device), numel)


@piece("08.2")
def rebuild_tensor(record: tuple, storage_offset: int, size: tuple, stride: tuple, loaded: dict,
                   read: "Callable[[tuple], Tensor]") -> "Tensor":
    """A saved tensor, back: a view of its storage, and each storage read from the file once.

    ``record`` is what :func:`storage_record` wrote for it, ``('storage', dtype, key, location,
    numel)``. ``loaded`` maps the keys of the storages read so far to them (whole storages, as
    flat 1-D tensors); a storage not read yet is read with ``read(record)`` and kept there. So
    tensors saved from one storage view one storage again, as they did before saving.
    """
    key = record[2]
    if key not in loaded:
        loaded[key] = read(record)
    return loaded[key].as_strided(size, stride, storage_offset)


@piece("08.6")
def map_location_device(storage: "UntypedStorage", location: str, map_location: "Any") -> str:
    """Where ``storage``, saved at ``location`` ('cpu', 'cuda:0'), is loaded to: torch's
    ``map_location`` contract.

    ``map_location`` is ``None`` (where it was saved), a device or its name (everything there), a
    dict from saved locations to new ones (locations it does not list stay where they were), or a
    function ``f(storage, location)`` that returns the storage moved where it should go, or
    ``None`` to leave it where it was saved.
    """
    if map_location is None:
        return location
    if isinstance(map_location, dict):
        return str(map_location.get(location, location))
    if callable(map_location):
        moved = map_location(storage, location)
        return location if moved is None else str(moved.device)
    return str(map_location)


@piece("08.3")
def find_global(module: str, name: str, allowed: dict, weights_only: bool) -> "Any":
    """The object a pickle's GLOBAL ``module name`` stands for; ``None`` when it is refused.

    ``allowed`` maps ``"module.name"`` to objects (torch's tensor, storage and dtype names to
    mytorch's; the safe globals you added). With ``weights_only`` nothing else is given out,
    since calling an arbitrary function is how a malicious file runs its code. Otherwise any
    importable object is, a torch module read as mytorch's (``torch.nn`` -> ``mytorch.nn``).
    """
    key = f"{module}.{name}"
    if key in allowed:
        return allowed[key]
    if weights_only:
        return None
    if module == "torch" or module.startswith("torch."):
        module = "my" + module
    obj = __import__(module, fromlist=["_"])
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# ===================================================================================== saving
class _StorageRef:
    """A storage met while pickling: its persistent id and the bytes to write under its key."""

    def __init__(self, pid: tuple, data: Any, dtype: D.dtype) -> None:
        self.pid, self.data, self.dtype = pid, data, dtype


class _Pickler(pickle._Pickler):  # the Python pickler: its save_global can write torch's names
    """Pickles tensors as torch does: a rebuild call around a persistent id for the storage."""

    def __init__(self, file: BinaryIO, protocol: int) -> None:
        super().__init__(file, protocol)
        self.keys: dict = {}                       # (device, address) -> key
        self.storages: dict[str, _StorageRef] = {}  # key -> storage, in key order
        self._refs: dict[int, _StorageRef] = {}     # one object per storage, so pickle memoizes it

    def persistent_id(self, obj: Any) -> Any:
        return obj.pid if isinstance(obj, _StorageRef) else None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            if isinstance(obj, Parameter):
                return (_REBUILD_PARAMETER, (obj.detach(), obj.requires_grad, OrderedDict()))
            return self._reduce_tensor(obj)
        if isinstance(obj, (D.dtype, _TorchName)):
            return obj.name                 # a global: save_global writes torch's name
        if isinstance(obj, _device):
            return (_TORCH_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        if isinstance(obj, Size):
            return (_TORCH_SIZE, (tuple(obj),))
        return NotImplemented

    def _reduce_tensor(self, t: Tensor) -> tuple:
        pid = list(pieces.storage_record(t, self.keys))
        key = pid[2]
        ref = self.storages.get(key)
        if ref is None:
            data = _storage_bytes(t._data)
            if t.device.type != "cpu":
                data = cuda_backend().to_host(data)
            ref = self.storages[key] = _StorageRef(None, data, t.dtype)
        elif ref.dtype is not t.dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data "
                               "as different types")
        args = (t.storage_offset(), tuple(t.shape), t.stride(), t.requires_grad, OrderedDict())
        if t.dtype.name in _STORAGE_TYPES:
            pid[1] = _STORAGE_TYPES[t.dtype.name]
            if ref.pid is None:
                ref.pid = tuple(pid)
            return (_REBUILD_V2, (ref, *args))
        pid[1], pid[4] = _UNTYPED, pid[4] * t.element_size()   # newer dtypes: bytes + a dtype
        if ref.pid is None:
            ref.pid = tuple(pid)
        return (_REBUILD_V3, (ref, *args, t.dtype))

    def save_global(self, obj: Any, name: str | None = None) -> None:
        if isinstance(obj, _TorchName):
            module, name = obj.module, obj.name
        elif isinstance(obj, D.dtype):
            module, name = "torch", obj.name
        else:
            return super().save_global(obj, name)
        if self.proto >= 4:
            self.save(module)
            self.save(name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
        self.memoize(obj)


class _ZipWriter:
    """A minimal zip writer in torch's layout: stored records, data aligned to 64 bytes.

    Offsets count from the archive's first byte, so it may be written into any stream.
    """

    def __init__(self, f: BinaryIO, prefix: str) -> None:
        self.f, self.prefix, self.pos = f, prefix, 0
        self.entries: list[tuple[bytes, int, int, int]] = []

    def _write(self, data: Any) -> None:
        self.f.write(data)
        self.pos += memoryview(data).nbytes

    def record(self, name: str, data: Any) -> None:
        view = memoryview(data) if isinstance(data, bytes) else memoryview(_as_bytes(data))
        full = f"{self.prefix}/{name}".encode()
        size = view.nbytes
        crc = zlib.crc32(view) if _config["compute_crc32"] else 0
        big = size >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, size) if big else b""
        pad = -(self.pos + 30 + len(full) + len(extra) + 4) % _ALIGNMENT
        extra += b"FB" + struct.pack("<H", pad) + b"Z" * pad
        small = 0xFFFFFFFF if big else size
        self._write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if big else 20, 0x800, 0, 0, 0,
                                crc, small, small, len(full), len(extra)) + full + extra)
        self._write(view)
        self.entries.append((full, crc, size, self.pos - size - 30 - len(full) - len(extra)))

    def finish(self) -> None:
        start = self.pos
        for full, crc, size, offset in self.entries:
            values = [v for v in (size, size, offset) if v >= 0xFFFFFFFF]
            extra = struct.pack("<HH" + "Q" * len(values), 1, 8 * len(values), *values) \
                if values else b""
            self._write(struct.pack(
                "<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45 if extra else 20, 0x800, 0, 0, 0, crc,
                min(size, 0xFFFFFFFF), min(size, 0xFFFFFFFF), len(full), len(extra), 0, 0, 0, 0,
                min(offset, 0xFFFFFFFF)) + full + extra)
        n, cd_size, eocd64 = len(self.entries), self.pos - start, self.pos
        self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, cd_size, start))
        self._write(struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1))
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                                min(cd_size, 0xFFFFFFFF), min(start, 0xFFFFFFFF), 0))


def _write_archive(f: BinaryIO, prefix: str, data_pkl: bytes,
                   storages: dict[str, _StorageRef]) -> None:
    """The records in the order torch writes them."""
    z = _ZipWriter(f, prefix)
    z.record("data.pkl", data_pkl)
    z.record(".format_version", b"1")
    z.record(".storage_alignment", str(_ALIGNMENT).encode())
    z.record("byteorder", b"little")
    for key, ref in storages.items():
        z.record(f"data/{key}", np.ascontiguousarray(ref.data))
    z.record("version", _FORMAT_VERSION)
    # 40 digits like torch's: a hash of the record names, then one of the records' CRCs
    names = "".join(e[0].decode() for e in z.entries)
    name_hash = int.from_bytes(hashlib.blake2b(names.encode(), digest_size=8).digest(), "little")
    crcs = [e[1] for e in z.entries]
    crc_hash = int.from_bytes(hashlib.blake2b(struct.pack(f"<{len(crcs)}I", *crcs),
                                              digest_size=8).digest(), "little")
    z.record(".data/serialization_id", f"{name_hash:020d}{crc_hash:020d}".encode())
    z.finish()


def set_crc32_options(compute_crc32: bool) -> None:
    """Whether :func:`save` computes each record's CRC-32 (as torch's option: on by default)."""
    _config["compute_crc32"] = bool(compute_crc32)


def get_crc32_options() -> bool:
    return _config["compute_crc32"]


def set_load_crc32_check(enabled: bool) -> None:
    """Whether :func:`load` verifies every storage's CRC-32 (off by default, as in torch).

    With it on, a flipped bit anywhere in a tensor's bytes is reported instead of loaded; it
    costs one pass over all the data (about as long as the rest of the load).
    """
    _config["check_crc32"] = bool(enabled)


def get_load_crc32_check() -> bool:
    return _config["check_crc32"]


def _archive_name(path: str) -> str:
    """torch names the archive's folder after the file, without its last extension."""
    base = os.path.basename(path)
    stem, dot, _ = base.rpartition(".")
    return (stem if dot and stem else base) or "archive"


def _is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def save(obj: Any, f: Any, pickle_module: Any = pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save ``obj`` (tensors, state dicts, checkpoint dicts, any picklable object) to ``f``.

    ``f`` is a path (written atomically: temporary file, fsync, rename; torch writes in place) or
    a binary file-like object such as ``io.BytesIO``. The file is torch's zip format, or with
    ``_use_new_zipfile_serialization=False`` its legacy pre-1.6 format: ``torch.load`` reads both.
    ``pickle_protocol`` is the protocol of the pickles inside (2 by default, as torch).
    """
    buf = io.BytesIO()
    if _use_new_zipfile_serialization:
        pickler = _Pickler(buf, pickle_protocol)
        pickler.dump(obj)
    else:
        data = _legacy_bytes(obj, pickle_protocol)
    if _is_path(f):
        path = os.fspath(f)
        if _use_new_zipfile_serialization:
            _atomic_write(path, lambda fh: _write_archive(fh, _archive_name(path), buf.getvalue(),
                                                          pickler.storages))
        else:
            _atomic_write(path, lambda fh: fh.write(data))
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                                 f"'write' attribute, got {type(f).__name__}")
        if _use_new_zipfile_serialization:
            _write_archive(f, "archive", buf.getvalue(), pickler.storages)
        else:
            f.write(data)
        if hasattr(f, "flush"):
            f.flush()


# ============================================================================ the legacy format
_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_VERSION = 1001
_SYS_INFO = {"protocol_version": _LEGACY_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 8}}


class _LegacyPickler(_Pickler):
    """The pre-1.6 persistent id has a sixth field, the view metadata (always ``None`` now)."""

    def _reduce_tensor(self, t: Tensor) -> tuple:
        out = super()._reduce_tensor(t)
        ref = out[1][0]
        if len(ref.pid) == 5:
            ref.pid = (*ref.pid, None)
        return out


def _legacy_bytes(obj: Any, protocol: int) -> bytes:
    """``obj`` in torch's legacy layout: header pickles, the object, the keys, then the storages."""
    f = io.BytesIO()
    for header in (_MAGIC_NUMBER, _LEGACY_VERSION, _SYS_INFO):
        pickle.dump(header, f, protocol=protocol)
    pickler = _LegacyPickler(f, protocol)
    pickler.dump(obj)
    keys = sorted(pickler.storages)
    pickle.dump(keys, f, protocol=protocol)
    for key in keys:
        ref = pickler.storages[key]
        raw = memoryview(np.ascontiguousarray(ref.data)).cast("B")
        f.write(struct.pack("<q", ref.pid[4]))      # elements (bytes for an untyped storage)
        f.write(raw)
    return f.getvalue()


def _atomic_write(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Write through a temporary file next to ``path``, fsync it, then rename it over ``path``.

    A rename within one file system is atomic: readers see the old file or the new one, never a
    half-written one, and a crash (or a kill) during ``write`` leaves the old file untouched.
    """
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)   # the umask applies, as usual
    try:
        with open(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):    # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


# ===================================================================================== loading
class _StorageType:
    """What torch's storage classes (``torch.FloatStorage``) turn into: their dtype."""

    def __init__(self, dtype: D.dtype | None) -> None:
        self.dtype = dtype            # None: torch.storage.UntypedStorage (raw bytes)


class _SavedStorage:
    """A storage the pickle refers to (its persistent id), not read yet: the tensor that views it
    reads it, through the loader's cache (piece 08.2)."""

    def __init__(self, record: tuple, loader: "_Loader") -> None:
        self.record, self.loader = record, loader   # ('storage', dtype or None, key, location, numel)
        self.used = False

    def rebuild(self, storage_offset: int, size: tuple, stride: tuple,
                dtype: D.dtype | None = None) -> Tensor:
        record = self.record
        if record[1] is None:           # torch.storage.UntypedStorage: bytes, typed by the tensor
            dtype = dtype or D.uint8
            tag, _, key, location, nbytes = record
            if nbytes % dtype.itemsize:
                raise RuntimeError(f"{self.loader.name}: storage '{key}' holds {nbytes} bytes, "
                                   f"not a whole number of {dtype} elements: the file is corrupt.")
            record = (tag, dtype, key, location, nbytes // dtype.itemsize)
        self.used = True
        return pieces.rebuild_tensor(record, storage_offset, tuple(size), tuple(stride),
                                     self.loader.loaded, self.loader.read)


def _rebuild_tensor_v2(storage: _SavedStorage, storage_offset: int, size: tuple, stride: tuple,
                       requires_grad: bool, backward_hooks: Any, metadata: Any = None,
                       dtype: D.dtype | None = None) -> Tensor:
    if not isinstance(storage, _SavedStorage):
        raise pickle.UnpicklingError(f"_rebuild_tensor_v2 expects a storage, got "
                                     f"{type(storage).__name__}")
    t = storage.rebuild(storage_offset, size, stride, dtype)
    t = t.detach()                   # a plain leaf, like torch's (not a view with a history)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v3(storage: _SavedStorage, storage_offset: int, size: tuple, stride: tuple,
                       requires_grad: bool, backward_hooks: Any, dtype: D.dtype,
                       metadata: Any = None) -> Tensor:
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
                              backward_hooks, dtype=dtype)


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any) -> Parameter:
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data: Tensor, requires_grad: bool, backward_hooks: Any,
                                  state: Any) -> Parameter:
    p = Parameter(data, requires_grad)
    if isinstance(state, tuple) and len(state) == 2:
        state = state[0] if state[0] else state[1]
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func: Callable, new_type: type, args: tuple, state: Any) -> Any:
    ret = func(*args)
    if state and hasattr(ret, "__dict__"):
        ret.__dict__.update(state if isinstance(state, dict) else {})
    return ret


def _torch_names() -> dict[str, Any]:
    """torch's names as a checkpoint spells them -> mytorch's objects (the default allowlist)."""
    names: dict[str, Any] = {
        "collections.OrderedDict": OrderedDict, "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter, "torch.Size": Size, "torch.Tensor": Tensor,
        "torch.device": _device, "_codecs.encode": codecs.encode, "builtins.bytearray": bytearray,
        "builtins.set": set, "builtins.complex": complex,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.storage.UntypedStorage": _StorageType(None),
    }
    for dt in D._BY_NAME.values():
        names[f"torch.{dt.name}"] = dt
    for name, cls in _STORAGE_NAMES.items():
        names[f"torch.{cls}"] = _StorageType(D._BY_NAME[name])
    return names


_DEFAULT_SAFE = _torch_names()
_user_safe: dict[str, Any] = {}


def _global_name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', obj.__name__)}"


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow these classes/functions in ``load(weights_only=True)`` (for every later load).

    Entries are objects, or ``(object, "module.name")`` when the file spells the name differently.
    Only add what you trust: each one may be called with arguments the file chooses.
    """
    for g in safe_globals:
        if isinstance(g, tuple):
            obj, name = g
            _user_safe[name] = obj
        else:
            _user_safe[_global_name(g)] = g


def clear_safe_globals() -> None:
    """Forget every global added with :func:`add_safe_globals`."""
    _user_safe.clear()


def get_safe_globals() -> list[Any]:
    """The globals added with :func:`add_safe_globals`."""
    return [obj if _global_name(obj) == name else (obj, name) for name, obj in _user_safe.items()]


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """``with safe_globals([MyClass]): load(...)``: allow them only inside the block."""
    before = dict(_user_safe)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_safe.clear()
        _user_safe.update(before)


class _Blocked(pickle.UnpicklingError):
    """A global outside the allowlist (weights_only)."""


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: BinaryIO, loader: "_Loader", weights_only: bool, **kwargs: Any):
        super().__init__(file, **kwargs)
        self._loader = loader
        self._weights_only = weights_only
        self._allowed = {**_DEFAULT_SAFE, **_user_safe}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _compat_pickle.NAME_MAPPING:   # Python 2 names (protocol 2)
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        obj = pieces.find_global(module, name, self._allowed, self._weights_only)
        if obj is None:
            full = f"{module}.{name}"
            raise _Blocked(f"Unsupported global: GLOBAL {full} was not an allowed global by "
                           f"default. Please use `torch.serialization.add_safe_globals([{full}])`"
                           f" or the `torch.serialization.safe_globals([{full}])` context manager "
                           "to allowlist this global if you trust this class/function.")
        return obj

    def persistent_load(self, pid: Any) -> Any:
        return self._loader.record(pid)


class _Loader:
    """Reads one archive: the pickle, then each storage record the pickle asks for."""

    def __init__(self, f: Any, name: str, map_location: Any, use_mmap: bool) -> None:
        self.f, self.name, self.map_location = f, name, map_location
        self.loaded: dict[str, Tensor] = {}      # key -> storage read (filled by rebuild_tensor)
        self.records: list[_SavedStorage] = []   # every storage the pickle referred to
        self.mm = None
        if use_mmap:
            self.mm = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_COPY)
        try:
            self.zip = zipfile.ZipFile(f)
        except zipfile.BadZipFile as e:
            raise RuntimeError(self._not_a_zip(str(e))) from None
        names = self.zip.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            raise RuntimeError(f"{name}: this zip archive is not a PyTorch checkpoint (it has no "
                               f"'<name>/data.pkl' record; its records: {names[:5]}...)")
        self.prefix = pkl[0][:-len("data.pkl")]

    def _not_a_zip(self, why: str) -> str:
        head, size = _peek(self.f)
        what = "PytorchStreamReader failed reading zip archive: failed finding central directory"
        if size == 0:
            return f"{self.name}: the file is empty (0 bytes): {what}"
        if head.startswith(b"PK\x03\x04"):
            return (f"{self.name}: {what}. The file ({size} bytes) starts like a checkpoint but "
                    "its end is missing: it was truncated, probably cut off while being written "
                    "or copied. Save it again, or restore it from a backup.")
        return (f"{self.name}: {what}: the file is not a zip archive, so not a checkpoint written "
                f"by torch.save or mytorch.save (it starts with {head[:8]!r}).")

    def read_pickle(self) -> bytes:
        return self._record_bytes("data.pkl")

    def _info(self, record: str) -> zipfile.ZipInfo:
        try:
            return self.zip.getinfo(self.prefix + record)
        except KeyError:
            raise RuntimeError(f"{self.name}: the checkpoint has no record '{record}' (the pickle "
                               "refers to it): the file is damaged or incomplete.") from None

    def _record_bytes(self, record: str) -> bytes:
        info = self._info(record)
        try:
            if info.CRC:          # zipfile checks the CRC-32 (torch writes 0 when told not to)
                return self.zip.read(info)
            self.f.seek(_data_start(self.f, info))
            return self.f.read(info.file_size)
        except zipfile.BadZipFile as e:
            raise RuntimeError(f"{self.name}: record '{record}' is corrupt ({e}).") from None

    def _record_array(self, record: str, dtype: np.dtype, count: int) -> np.ndarray:
        info = self._info(record)
        want = count * dtype.itemsize
        if info.file_size != want:
            raise RuntimeError(f"{self.name}: record '{record}' holds {info.file_size} bytes but "
                               f"the pickle describes a storage of {count} x {dtype} "
                               f"({want} bytes): the file is corrupt.")
        if info.compress_type != zipfile.ZIP_STORED:    # someone re-zipped it: slow path
            return np.frombuffer(bytearray(self._record_bytes(record)), dtype)
        start = _data_start(self.f, info)
        if self.mm is not None:
            if start + want > len(self.mm):
                raise RuntimeError(f"{self.name}: record '{record}' runs past the end of the file.")
            return np.frombuffer(self.mm, dtype, count, start)
        arr = np.empty(count, dtype)
        self.f.seek(start)
        got = self.f.readinto(memoryview(_as_bytes(arr)))
        if got != want:
            raise RuntimeError(f"{self.name}: record '{record}' is truncated ({got} of {want} "
                               "bytes): the file was cut off.")
        if _config["check_crc32"] and info.CRC and \
                zlib.crc32(memoryview(_as_bytes(arr))) != info.CRC:
            raise RuntimeError(f"{self.name}: record '{record}' is corrupt: its bytes do not "
                               "match the CRC-32 checksum stored in the archive.")
        return arr

    def record(self, pid: Any) -> _SavedStorage:
        """A persistent id ``('storage', torch.FloatStorage, key, location, numel)``, checked, as
        the record :func:`storage_record` made (a mytorch dtype; ``None`` for untyped bytes)."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"{self.name}: unknown persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"{self.name}: unknown storage type {storage_type!r}")
        saved = _SavedStorage(("storage", storage_type.dtype, str(key), location, numel), self)
        self.records.append(saved)
        return saved

    def read(self, record: tuple) -> Tensor:
        """The storage ``record`` names, read from the file: a flat tensor of ``numel`` elements
        of ``dtype``, on the device ``map_location`` sends it to. (Reading it once per key is the
        job of the piece that calls this, ``rebuild_tensor``.)"""
        _, dtype, key, location, numel = record
        flat = Tensor._wrap(self._record_array(f"data/{key}", dtype.np, numel))
        target = self._target(location, flat)
        if target != "cpu":
            flat = flat.to(target)
        return flat

    def storages_left(self, obj: Any) -> Any:
        """``obj`` with any storage the pickle holds outside a tensor (a bare ``torch.save(t.
        untyped_storage())``) read, as a flat tensor of its bytes."""
        if isinstance(obj, _SavedStorage):
            return obj.rebuild(0, (obj.record[4],), (1,))
        if type(obj) in (list, tuple):
            return type(obj)(self.storages_left(x) for x in obj)
        if type(obj) in (dict, OrderedDict):
            return type(obj)((k, self.storages_left(v)) for k, v in obj.items())
        return obj

    def _target(self, location: str, flat: Tensor) -> str:
        target = pieces.map_location_device(UntypedStorage._of(flat), location, self.map_location)
        dev = _device(target)
        if dev.type == "cuda":
            if not _cuda.is_available():
                raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                                   "torch.cuda.is_available() is False. If you are running on a "
                                   "CPU-only machine, please use torch.load with "
                                   "map_location=torch.device('cpu') to map your storages to the "
                                   "CPU.")
            if (dev.index or 0) >= _cuda.device_count():
                raise RuntimeError(f"Attempting to deserialize object on CUDA device {dev.index} "
                                   f"but torch.cuda.device_count() is {_cuda.device_count()}. "
                                   "Please use torch.load with map_location to map your storages "
                                   "to an existing device.")
        return str(dev)


class _Anything:
    """Whatever a pickle names, while skimming a legacy file: builds nothing, imports nothing."""

    qualname = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> "_Anything":
        return object.__new__(cls)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass


class _Skimmer(pickle.Unpickler):
    """Reads past one pickle of a legacy file, noting each storage's type name by key."""

    def __init__(self, file: BinaryIO) -> None:
        super().__init__(file, encoding="utf-8")
        self.types: dict[str, str] = {}

    def find_class(self, module: str, name: str) -> Any:
        return type(name, (_Anything,), {"qualname": f"{module}.{name}"})

    def persistent_load(self, pid: Any) -> Any:
        if isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage":
            self.types[pid[2]] = getattr(pid[1], "qualname", "")
        return None


class _LegacyLoader(_Loader):
    """Reads torch's pre-1.6 format: the storages follow the object, so find them first."""

    def __init__(self, f: BinaryIO, name: str, map_location: Any) -> None:
        self.f, self.name, self.map_location = f, name, map_location
        self.loaded: dict[str, Tensor] = {}
        self.records: list[_SavedStorage] = []
        self.mm = None
        f.seek(0)
        try:
            if _Skimmer(f).load() != _MAGIC_NUMBER:
                raise RuntimeError(f"{name}: Invalid magic number; corrupt file?")
            version = _Skimmer(f).load()
            if version != _LEGACY_VERSION:
                raise RuntimeError(f"{name}: Invalid protocol version: {version}")
            _Skimmer(f).load()                                   # system information
            self.object_span = (f.tell(), 0)
            skim = _Skimmer(f)
            skim.load()
            self.object_span = (self.object_span[0], f.tell())
            keys = _Skimmer(f).load()
        except (EOFError, pickle.UnpicklingError, struct.error, ValueError) as e:
            raise RuntimeError(f"{name}: the legacy-format checkpoint is corrupt ({e}).") from None
        self.where: dict[str, tuple[int, int]] = {}              # key -> (offset, count)
        for key in keys:
            count = struct.unpack("<q", f.read(8))[0]
            size = _STORAGE_SIZES.get(skim.types.get(key, ""), 1)
            self.where[key] = (f.tell(), count)
            f.seek(count * size, os.SEEK_CUR)

    def read_pickle(self) -> bytes:
        start, end = self.object_span
        self.f.seek(start)
        return self.f.read(end - start)

    def record(self, pid: Any) -> _SavedStorage:
        if isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage":
            if pid[5] is not None:
                raise RuntimeError(f"{self.name}: storage views of the legacy format (torch < "
                                   "0.4) are not supported")
            pid = pid[:5]
        return super().record(pid)

    def _record_array(self, record: str, dtype: np.dtype, count: int) -> np.ndarray:
        key = record[len("data/"):]
        if key not in self.where:
            raise RuntimeError(f"{self.name}: the checkpoint has no storage '{key}' (the pickle "
                               "refers to it): the file is damaged or incomplete.")
        start, _ = self.where[key]
        arr = np.empty(count, dtype)
        self.f.seek(start)
        got = self.f.readinto(memoryview(arr).cast("B"))
        if got != count * dtype.itemsize:
            raise RuntimeError(f"{self.name}: storage '{key}' is truncated: the file was cut off.")
        return arr


# (the dtype's own itemsize: reading .np would import ml_dtypes for BFloat16Storage at import)
_STORAGE_SIZES = {f"torch.{cls}": D._BY_NAME[name].itemsize for name, cls in _STORAGE_NAMES.items()}


def _peek(f: Any) -> tuple[bytes, int]:
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    return f.read(16), size


def _data_start(f: Any, info: zipfile.ZipInfo) -> int:
    """Where a stored record's bytes begin: after its local header (name and extra included)."""
    f.seek(info.header_offset)
    head = f.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise RuntimeError(f"bad local header for record '{info.filename}': the file is corrupt")
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _weights_only_message(name: str, err: Exception) -> str:
    return ("Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint. \n\t(1) In "
            "PyTorch 2.6, we changed the default value of the `weights_only` argument in "
            "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set "
            "to `False` will likely succeed, but it can result in arbitrary code execution. Do "
            "it only if you got the file from a trusted source.\n\t(2) Alternatively, to load "
            "with `weights_only=True` please check the recommended steps in the following error "
            f"message.\n\tWeightsUnpickler error: {err}\n\n(file: {name})")


def _as_bytes(arr: Any) -> Any:
    """A flat uint8 view of a C-contiguous array: also for bfloat16/float8 (ml_dtypes) arrays,
    which the buffer protocol (``memoryview``) does not describe."""
    if isinstance(arr, np.ndarray):
        return arr.reshape(-1).view(np.uint8)
    return memoryview(arr).cast("B")


_TRUE_VALUES = ("1", "y", "yes", "true")


def _weights_only_from_environment(weights_only: bool | None, pickle_module: Any) -> bool:
    """``load``'s ``weights_only`` after torch's two environment overrides.

    ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces ``weights_only=True`` even when the call says
    False; ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` turns the *default* (an unset argument) to
    False, with a warning, but never overrides an explicit ``weights_only=True``. Setting both is
    an error. Values count as set when they are 1, y, yes or true (any case), as in torch."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE_VALUES
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force:
        return True
    if force_no and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the"
                      "`weights_only` argument was not explicitly passed to `torch.load`, forcing "
                      "weights_only=False.", UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args: Any) -> Any:
    """Load what :func:`save` (or ``torch.save``) wrote.

    ``map_location`` moves storages: a device or its name, a dict ``{"cuda:1": "cuda:0"}``, or a
    function ``f(storage, location)``. ``weights_only=True`` (the default) refuses any class or
    function outside the allowlist; ``False`` loads whole pickled objects (only for files you
    trust). ``mmap=True`` maps the file into memory instead of reading it (copy-on-write).
    """
    weights_only = _weights_only_from_environment(weights_only, pickle_module)
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if _is_path(f):
        name = os.fspath(f)
        if not os.path.exists(name):
            raise FileNotFoundError(2, "No such file or directory", name)
        use_mmap: Any = ("str" if isinstance(f, str) else True) if mmap else False
        with open(name, "rb") as fh:
            return _load(fh, name, map_location, weights_only, use_mmap, pickle_load_args)
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if not (hasattr(f, "read") and hasattr(f, "seek")):
        raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a "
                             f"'read' and a 'seek' attribute, got {type(f).__name__}")
    return _load(f, getattr(f, "name", type(f).__name__), map_location, weights_only, False,
                 pickle_load_args)


def _load(fh: BinaryIO, name: str, map_location: Any, weights_only: bool, use_mmap: Any,
          pickle_load_args: dict) -> Any:
    """``use_mmap``: False, True, or ``"str"`` when ``f`` was given as a str (torch's messages
    name the file then)."""
    pickle_load_args.setdefault("encoding", "utf-8")
    head, _ = _peek(fh)
    if head[:1] == b"\x80" and not zipfile.is_zipfile(fh):   # a pickle, not a zip: the legacy format
        if use_mmap:
            shown = f"{name}, " if use_mmap == "str" else ""    # torch names only a str path
            raise RuntimeError(f"mmap can only be used with files saved with `torch.save({shown}"
                               "_use_new_zipfile_serialization=True), please torch.save your "
                               "checkpoint with this option in order to use mmap.")
        loader: _Loader = _LegacyLoader(fh, name, map_location)
    else:
        loader = _Loader(fh, name, map_location, use_mmap)
    unpickler = _Unpickler(io.BytesIO(loader.read_pickle()), loader, weights_only,
                           **pickle_load_args)
    try:
        obj = unpickler.load()
    except _Blocked as e:
        raise pickle.UnpicklingError(_weights_only_message(name, e)) from None
    except (EOFError, pickle.UnpicklingError, struct.error) as e:
        raise RuntimeError(f"{name}: the pickle inside the checkpoint is corrupt ({e}).") from None
    if not all(saved.used for saved in loader.records):
        obj = loader.storages_left(obj)
    return obj
