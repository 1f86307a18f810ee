"""``mytorch.Tensor``: an n-dimensional array (NumPy or CuPy) plus what autograd needs.

The class itself only knows how to *hold* data: attributes (shape, dtype, device, strides),
conversions to Python and NumPy, and the autograd bookkeeping (``requires_grad``, ``grad``, the
version counter). It sits below the autograd graph and the operations in mytorch's layer stack
(docs/architecture.md) and imports neither. Operations live in ``mytorch/_ops/``; each module there
attaches its functions to ``Tensor`` as methods with :func:`tensor_method`, and so do the upper
modules whose methods need them: ``to`` (``_ops/conversions.py``), the legacy constructor
``Tensor(2, 3)`` (``_legacy.py``), ``backward`` (``autograd/api.py``).
"""
from __future__ import annotations

import builtins
import operator
import warnings
import weakref
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from . import _dtype as D
from ._device import CPU, as_device, cuda_backend, cuda_backend_or_none, device, xp_for
from ._layout import channels_last, contiguous_format, strided
from ._printing import tensor_repr
from ._storage import TypedStorage, UntypedStorage, warn_typed_storage, with_empty_strides
from ._storage import storage_offset as _storage_offset
from ._unsupported import tensor_fallback
from .autograd.grad_mode import STATE
from .utils.hooks import RemovableHandle

__all__ = ["Tensor", "Size", "tensor_method", "is_tensor", "wrap"]

_py_float, _py_int, _py_bool = builtins.float, builtins.int, builtins.bool


class Size(tuple):
    """The shape of a tensor: a tuple of ints that prints as ``torch.Size([2, 3])``."""

    def __new__(cls, sizes: Any = ()) -> "Size":
        out = []
        for i, s in enumerate(sizes):
            try:
                out.append(operator.index(s))  # ints, NumPy ints, one-element integer tensors
            except TypeError:
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(s).__name__}')") from None
        return tuple.__new__(cls, out)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):  # slicing keeps the type, like torch
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__


class _VersionCounter:
    """Shared by a tensor and all its views: bumped by every in-place change.

    ``views`` holds weak references to the views made while grad mode was on, so that an in-place
    change through one view can update the autograd history of the others (``rebase_history``).
    """

    __slots__ = ("value", "views")

    def __init__(self) -> None:
        self.value = 0
        self.views: list | None = None

    def track(self, view: "Tensor") -> None:
        views = self.views
        if views is None:
            self.views = [weakref.ref(view)]
            return
        views.append(weakref.ref(view))
        n = len(views)
        if n >= 64 and n & (n - 1) == 0:  # at each power of two, forget the views that died
            self.views = [r for r in views if r() is not None]


class _TensorMeta(type):
    """``torch.Tensor.<name>`` on the class: a torch name mytorch leaves out reports itself."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"type object '{cls.__name__}' has no attribute '{name}'")
        try:
            return tensor_fallback(cls.__name__, name)
        except AttributeError:
            raise AttributeError(f"type object '{cls.__name__}' has no attribute '{name}'") from None


class Tensor(metaclass=_TensorMeta):
    """A multi-dimensional array that can record operations for automatic differentiation."""

    __slots__ = ("_data", "_device", "_requires_grad", "_grad", "grad_fn", "_vc", "_base",
                 "_acc_node", "_leaf_hooks", "_retains_grad", "_inference", "__weakref__",
                 "__dict__")
    # Which output of its ``grad_fn`` this tensor is: always 0 except for the outputs of a custom
    # ``autograd.Function`` that returns several tensors (set per instance there).
    _output_nr = 0
    # How a view was made, for torch's refusals of in-place changes (``autograd.views``): "" (an
    # ordinary view), "multi_output" (an output of split/chunk/unbind made in grad mode),
    # "no_grad" or "inference" (made in that mode), "custom_function" (made by a custom
    # Function's forward, one of its outputs); a view of such a view inherits it.
    _view_meta = ""
    # NumPy must hand mixed expressions (ndarray * Tensor) to our reflected operators.
    __array_ufunc__ = None

    def __new__(cls, *args: Any, **kwargs: Any) -> "Tensor":
        return object.__new__(cls)

    # __init__, the legacy constructor (Tensor(2, 3), Tensor([1, 2]), Tensor(t)), is attached by
    # _legacy.py: it needs the creation functions. Operations make tensors with wrap() instead.

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def _wrap(cls, arr: Any, dev: device = CPU) -> "Tensor":
        t = object.__new__(cls)
        _init(t, arr, dev)
        return t

    # ------------------------------------------------------------------ basic attributes
    @property
    def shape(self) -> Size:
        return tuple.__new__(Size, self._data.shape)  # skips Size's checks: already ints

    def size(self, dim: int | None = None) -> Any:
        """The shape (a ``Size``), or the length of one dimension."""
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> D.dtype:
        return D._BY_NP[self._data.dtype]

    @property
    def device(self) -> device:
        return self._device

    def get_device(self) -> int:
        """The CUDA device index of this tensor, or -1 on the CPU."""
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    # Devices, layouts and tensor kinds mytorch never makes: torch's flags, all False here.
    is_xpu = is_mps = is_mtia = is_maia = is_ipu = is_xla = is_vulkan = property(
        lambda self: False, doc="False: mytorch has no tensors on this device")
    is_sparse = is_sparse_csr = is_mkldnn = is_quantized = is_nested = property(
        lambda self: False, doc="False: mytorch tensors are dense, strided and not quantized")

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is."""
        return self._output_nr

    @property
    def name(self) -> None:
        """None: mytorch tensors have no name (torch's is None too unless set by internals)."""
        return None

    @property
    def volatile(self) -> bool:
        """Always False (a removed Variable flag), with torch's warning."""
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    @property
    def grad_dtype(self) -> D.dtype:
        """The dtype a gradient of this (leaf) tensor has: its own."""
        if self.grad_fn is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
        return self.dtype

    def is_distributed(self) -> bool:
        """False: no tensor is split over processes."""
        return False

    def is_conj(self) -> bool:
        """False: mytorch conjugates at once, never lazily."""
        return False

    def is_neg(self) -> bool:
        """False: mytorch negates at once, never lazily."""
        return False

    def resolve_conj(self) -> "Tensor":
        """The tensor itself (no conjugation is pending)."""
        return self

    def resolve_neg(self) -> "Tensor":
        """The tensor itself (no negation is pending)."""
        return self

    def is_same_size(self, other: "Tensor") -> bool:
        """Whether both tensors have the same shape."""
        return self._data.shape == other._data.shape

    @property
    def layout(self) -> Any:
        return strided

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def type(self, dtype: Any = None) -> Any:
        """Without an argument, the legacy type name (``'torch.FloatTensor'``); else cast."""
        if dtype is None:
            base = _LEGACY_NAMES[self.dtype.name]
            return f"torch.cuda.{base}" if self.is_cuda else f"torch.{base}"
        if isinstance(getattr(dtype, "_legacy_dtype", None), D.dtype):  # torch.DoubleTensor
            dev = as_device("cuda") if dtype.is_cuda else (CPU if self.is_cuda else self._device)
            return self.to(dev, dtype._legacy_dtype)
        if isinstance(dtype, str):
            prefix, _, name = dtype.rpartition(".")
            inv = {v: k for k, v in _LEGACY_NAMES.items()}
            if prefix not in ("torch", "torch.cuda") or name not in inv:
                raise ValueError(f"invalid type: '{dtype}'")
            dev = as_device("cuda") if prefix == "torch.cuda" else (
                CPU if self.is_cuda else self._device)
            return self.to(dev, D._BY_NAME[inv[name]])
        return self.to(D.to_dtype(dtype))

    # ------------------------------------------------------------------ memory layout
    def stride(self, dim: int | None = None) -> Any:
        """Steps (in elements, not bytes) to move one index along each dimension."""
        item = self._data.itemsize
        st = tuple(s // item for s in self._data.strides)
        if dim is None:
            return st
        return st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        return _storage_offset(self)

    def data_ptr(self) -> int:
        arr = self._data
        if hasattr(arr, "data") and hasattr(arr.data, "ptr"):  # cupy
            return int(arr.data.ptr)
        return int(arr.__array_interface__["data"][0])

    def untyped_storage(self) -> Any:
        return UntypedStorage._of(self)

    def storage(self) -> Any:
        """The storage as elements of this dtype (deprecated in torch, like its TypedStorage:
        the first call of a process warns, as torch's does)."""
        warn_typed_storage(stacklevel=3)
        return TypedStorage._of(self)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        if memory_format in (None, contiguous_format):
            return _is_c_contiguous(self)
        if memory_format is channels_last:
            if self._data.ndim != 4:
                return False
            n, c, h, w = self._data.shape
            want = (h * w * c, 1, w * c, c)
            st = self.stride()
            return all(s == w_ or dim == 1 for s, w_, dim in zip(st, want, self._data.shape))
        raise RuntimeError(f"unsupported memory format {memory_format}")

    def is_set_to(self, other: "Tensor") -> bool:
        return (self.data_ptr() == other.data_ptr() and self.shape == other.shape
                and self.stride() == other.stride())

    # ------------------------------------------------------------------ conversion
    def item(self) -> Any:
        """The single value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._host().reshape(()).item()

    def tolist(self) -> Any:
        """Nested Python lists of Python numbers (a copy)."""
        return self._host().tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array **sharing memory** with this CPU tensor."""
        if self._data.dtype.kind == "V":  # bfloat16, float8: NumPy has no such dtype (as torch)
            raise TypeError(f"Got unsupported ScalarType {D._scalar_name(self.dtype)}")
        if not force:
            if self._requires_grad:
                raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                                   "Use tensor.detach().numpy() instead.")
            if self._device.type != "cpu":
                raise TypeError(f"can't convert {self._device} device type tensor to numpy. Use "
                                "Tensor.cpu() to copy the tensor to host memory first.")
            return self._data
        return self._host()

    def _host(self) -> np.ndarray:
        if self._device.type == "cpu":
            return self._data
        return cuda_backend().to_host(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(t)``: the same rules (and shared memory) as ``t.numpy()``."""
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator["Tensor"]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))  # as torch: rows are the outputs of one UnbindBackward0

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return _py_bool(self.item())

    def __float__(self) -> float:
        return _py_float(self._scalar())

    def __int__(self) -> int:
        return _py_int(self._scalar())

    def __complex__(self) -> complex:
        return complex(self._scalar())

    def _scalar(self) -> Any:
        """The value for float()/int()/complex(): Python's protocols raise ValueError, not item's."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __index__(self) -> int:
        if self._data.size != 1 or self.dtype._cat != D._INT and self.dtype is not D.bool:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return _py_int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)  # TypeError for a spec, like torch

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild, (self._host().copy(), str(self._device), self._requires_grad))

    def __deepcopy__(self, memo: dict) -> "Tensor":
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        new = type(self)._wrap(self._data.copy(), self._device) if type(self) is Tensor else \
            _rebuild_subclass(self)
        new._requires_grad = self._requires_grad
        if self.grad is not None:
            new.grad = self.grad.clone()
        memo[id(self)] = new
        return new

    # ------------------------------------------------------------------ devices and dtypes
    # All of these call ``to``, attached by _ops/conversions.py (it records ToCopyBackward0).
    def cuda(self, device: Any = None, non_blocking: bool = False) -> "Tensor":
        """Copy to a CUDA device (``cuda:device``, or the current one); ``self`` if already there."""
        return self.to(as_device("cuda" if device is None else device), non_blocking=non_blocking)

    def cpu(self) -> "Tensor":
        return self.to(CPU)

    def pin_memory(self) -> "Tensor":
        """A copy in page-locked (pinned) host memory, which the GPU copies from faster and
        asynchronously (``.to('cuda', non_blocking=True)``); ``self`` if already pinned."""
        if self._device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
        backend = cuda_backend_or_none()
        if backend is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if backend.is_pinned(self._data):
            return self
        return Tensor._wrap(backend.pin(self._data), CPU)

    def is_pinned(self) -> bool:
        backend = cuda_backend_or_none()
        return self._device.type == "cpu" and backend is not None and backend.is_pinned(self._data)

    def float(self) -> "Tensor":
        return self.to(D.float32)

    def double(self) -> "Tensor":
        return self.to(D.float64)

    def bfloat16(self) -> "Tensor":
        return self.to(D.bfloat16)

    def half(self) -> "Tensor":
        return self.to(D.float16)

    def long(self) -> "Tensor":
        return self.to(D.int64)

    def int(self) -> "Tensor":
        return self.to(D.int32)

    def short(self) -> "Tensor":
        return self.to(D.int16)

    def char(self) -> "Tensor":
        return self.to(D.int8)

    def byte(self) -> "Tensor":
        return self.to(D.uint8)

    def bool(self) -> "Tensor":
        return self.to(D.bool)

    def cfloat(self) -> "Tensor":
        return self.to(D.complex64)

    def cdouble(self) -> "Tensor":
        return self.to(D.complex128)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            raise RuntimeError(_NON_LEAF_FLAG + ("" if value else _NON_LEAF_HINT))
        if value and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if value and self._inference and not STATE.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if self._acc_node.__class__ is NoAccumulator:  # it requires grad through its base
            if value:  # now of its own: its gradient goes to its .grad
                self._acc_node = None
            return
        self._requires_grad = _py_bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place; a no-op for non-leaves asked to keep requiring grad."""
        if self.grad_fn is not None and requires_grad:
            return self
        if requires_grad and not self.dtype.is_floating_point:  # torch's wording differs here
            if not self.dtype.is_complex:
                raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> "Tensor | None":
        """The gradient accumulated by ``backward`` (leaves, and non-leaves after retain_grad)."""
        g = self._grad
        if g is None and self.grad_fn is not None and not self._retains_grad:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: "Tensor | None") -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_c_name(value.dtype)}' to a "
                    f"tensor with grad_dtype '{_cap_name(self.dtype)}'. The gradient must match "
                    "the tensor's grad_dtype (defaults to the tensor's dtype).")
            if value._device != self._device:
                raise RuntimeError(
                    f"attempting to assign a gradient with device type '{value._device.type}' to "
                    f"a tensor with device type '{self._device.type}'. Please ensure that the "
                    "gradient and the tensor are on the same device")
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                    f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor "
                    "are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    def is_inference(self) -> bool:
        """True for tensors created under ``inference_mode``: they cannot be saved for backward,
        nor changed in place outside inference mode."""
        return self._inference

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded operation (the graph's inputs)."""
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc.value

    def _bump(self) -> None:
        """Record an in-place modification (checked by backward for saved tensors)."""
        if self._inference and not STATE.inference:
            raise RuntimeError(_INFERENCE_INPLACE)
        self._vc.value += 1

    @property
    def data(self) -> "Tensor":
        """The same storage without autograd history (changes are invisible to autograd)."""
        t = Tensor._wrap(self._data, self._device)
        t._vc = _VersionCounter()
        return t

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data
        self._device = value._device

    def detach(self) -> "Tensor":
        """A new tensor sharing storage, cut off from the graph (``requires_grad=False``)."""
        t = Tensor._wrap(self._data, self._device)
        t._vc = self._vc
        t._inference = self._inference
        return t

    def detach_(self) -> "Tensor":
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are "
                               "using DistributedDataParallel (DDP) for training, and "
                               "gradient_as_bucket_view is set as True, gradients are views of "
                               "DDP buckets, and hence detach_() cannot be called on these "
                               "gradients. To fix this error, please refer to the "
                               "Optimizer.zero_grad() function in torch/optim/optimizer.py as "
                               "the solution.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        self._retains_grad = True
        self.grad_fn._retain(self._output_nr, self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook: Callable[["Tensor"], "Tensor | None"]) -> Any:
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._leaf_hooks is None:
                self._leaf_hooks = []
            return RemovableHandle(self._leaf_hooks, hook)
        return self.grad_fn._add_tensor_hook(self._output_nr, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[["Tensor"], None]) -> Any:
        """Call ``hook(self)`` after a backward pass has added into this leaf's ``.grad`` (how
        ``DistributedDataParallel`` learns that a gradient is ready to be all-reduced)."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        hooks = self.__dict__.setdefault("_post_acc_hooks", [])
        return RemovableHandle(hooks, hook)

    def __getattr__(self, name: str) -> Any:
        # A torch.Tensor name mytorch leaves out (mytorch/_unsupported.py) says so; others are typos.
        if name.startswith("_"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return tensor_fallback(type(self).__name__, name)


# Attributes whose value is read on every tensor; set once so __getattr__ is never needed.
def _init(t: Tensor, arr: Any, dev: device) -> None:
    if type(arr) is not np.ndarray and dev.type == "cpu":
        arr = np.asarray(arr)
    if not arr.size and arr.ndim and not any(arr.strides):  # NumPy zeroes an empty's strides
        arr = with_empty_strides(arr)
    t._data = arr
    t._device = dev
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._vc = _VersionCounter()
    t._base = None
    t._acc_node = None
    t._leaf_hooks = None
    t._retains_grad = False
    t._inference = STATE.inference


def wrap(arr: Any, dev: device = CPU, vc: "_VersionCounter | None" = None) -> Tensor:
    """Fast constructor used by operations: a Tensor over ``arr`` (0-d results become arrays);
    ``vc``: the version counter it shares (a view's), else a new one."""
    t = _new(Tensor)
    if type(arr) is not np.ndarray and dev.type == "cpu":
        arr = np.asarray(arr)
    if not arr.size and arr.ndim and not any(arr.strides):  # NumPy zeroes an empty's strides
        arr = with_empty_strides(arr)
    t._data = arr
    t._device = dev
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._vc = _VersionCounter() if vc is None else vc
    t._base = None
    t._acc_node = None
    t._leaf_hooks = None
    t._retains_grad = False
    t._inference = STATE.inference
    return t


_new = object.__new__


def make_view(base: Tensor, arr: Any) -> Tensor:
    """A tensor over ``arr``, a view of ``base``'s memory: shares its version counter."""
    t = wrap(arr, base._device, base._vc)
    if not t._data.size:  # an empty view keeps the strides NumPy derived from its base's
        t._data = arr if type(arr) is type(t._data) else t._data
    t._base = base if base._base is None else base._base
    t._inference = base._inference
    if STATE.enabled:
        t._vc.track(t)
        if base._view_meta:
            t._view_meta = base._view_meta
    else:
        t._view_meta = "inference" if STATE.inference else "no_grad"
        if t._base._requires_grad:  # torch: it requires grad, through its base (see NoAccumulator)
            t._requires_grad = True
            t._acc_node = NoAccumulator(t._vc.value)
    return t


class NoAccumulator:
    """The ``_acc_node`` of a view made in no_grad (or inference) mode of a base that requires
    grad. torch says such a view requires grad (its base does), yet it is a leaf with no
    ``AccumulateGrad``: the gradients that reach it go nowhere. ``version`` is its memory's
    version when it was made: once the base or a view of it has changed in place, using the view
    in a recorded op is an error (``autograd.node.accumulate_node``)."""

    __slots__ = ("version",)

    def __init__(self, version: int) -> None:
        self.version = version

    def __call__(self) -> None:  # read like the weak reference to an AccumulateGrad it stands for
        return None


def _rebuild(arr: np.ndarray, dev: str, requires_grad: bool) -> Tensor:
    t = Tensor._wrap(arr, CPU)
    if dev != "cpu":
        t = t.to(dev)
    t._requires_grad = requires_grad
    return t


def _rebuild_subclass(t: Tensor) -> Tensor:
    new = object.__new__(type(t))
    _init(new, t._data.copy(), t._device)
    if hasattr(t, "__dict__"):
        new.__dict__.update({k: v for k, v in t.__dict__.items()})
    return new


def _is_c_contiguous(t: Tensor) -> bool:
    # Like torch, dimensions of size 1 may have any stride.
    arr = t._data
    if arr.flags.c_contiguous:
        return True
    expected = arr.itemsize
    for n, s in zip(reversed(arr.shape), reversed(arr.strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _c_name(dt: D.dtype) -> str:
    """torch's lower-case C type name of a dtype (``float``, ``double``, ``long``...)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}.get(dt.name, dt.name)


def _cap_name(dt: D.dtype) -> str:
    """torch's ScalarType name of a dtype (``Float``, ``Double``...)."""
    return _LEGACY_NAMES[dt.name][:-len("Tensor")]


_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information.")
_INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
    "to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")
_NON_LEAF_FLAG = "you can only change requires_grad flags of leaf variables."
_NON_LEAF_HINT = (" If you want to use a computed variable in a subgraph that doesn't require "
                  "differentiation use var_no_grad = var.detach().")

_LEGACY_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
    "uint8": "ByteTensor", "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor", "uint16": "UInt16Tensor", "uint32": "UInt32Tensor",
    "uint64": "UInt64Tensor", "bfloat16": "BFloat16Tensor",
}


def tensor_method(name: str | None = None, *, also: Sequence[str] = ()) -> Callable:
    """Decorator for op modules: attach ``fn`` to Tensor as method ``name`` (and aliases)."""

    def deco(fn: Callable) -> Callable:
        setattr(Tensor, name or fn.__name__, fn)
        for alias in also:
            setattr(Tensor, alias, fn)
        return fn

    return deco


def is_tensor(obj: Any) -> bool:
    """True when ``obj`` is a mytorch Tensor (or a subclass such as Parameter)."""
    return isinstance(obj, Tensor)


warnings.filterwarnings("default", category=UserWarning, module="mytorch")
