"""mytorch: a small, real PyTorch, built chapter by chapter on NumPy (and CuPy on a GPU).

``import mytorch as torch`` runs the book's PyTorch snippets with the same numbers.

mytorch is a stack of layers, and this file imports them bottom to top: a module imports only
from layers below its own (docs/architecture.md has the table and the chapter that teaches each
layer; ``make lint`` and tests/test_layers.py enforce it). Where things live, mirroring torch's
layout where it teaches something:

1. base: ``_dtype.py`` (dtypes, type promotion), ``_device.py`` (devices and their array
   backends), ``_layout.py``, ``autograd/grad_mode.py`` (no_grad...), ``utils/hooks.py``,
   ``backends/`` (flags)
2. ``_storage.py``: the flat memory that views share
3. ``_tensor.py``: the Tensor class (data, shape/strides/device, conversions); ``_printing.py``
4. ``autograd/node.py`` (the nodes ops record; ``graph.py`` gathers them as torch's
   ``autograd.graph``), ``autograd/engine.py`` (the backward pass)
5. operations: ``_creation.py`` (tensor/zeros/arange...), ``_ops/`` by family (pointwise,
   reduction, shape, indexing, linalg, ...), ``random.py``, ``linalg/``, ``special/``, ``cuda/``
   (GPU devices through CuPy), ``accelerator.py``
6. the autograd API: ``autograd.backward``/``grad`` (``autograd/api.py``), ``autograd.Function``,
   ``gradcheck``; ``utils/checkpoint.py``, ``distributions/``, ``distributed/``
7. ``nn/``
8. ``optim/``, ``serialization.py`` (``save``/``load``), ``multiprocessing/``,
   ``utils/benchmark.py``; ``utils/data/``

A ``Tensor`` method that needs an upper layer (every op, ``to``, ``backward``) is attached to the
class by that layer, with ``tensor_method``.
"""
from __future__ import annotations

# ---------------------------------------------------------------- 1. base
from . import _allocator

_allocator.keep_freed_memory()  # reuse freed CPU memory between steps (see _allocator.py)

from . import _dtype  # noqa: E402
from ._dtype import (bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,  # noqa: F401
                     float8_e5m2fnuz, float8_e8m0fnu)
from ._dtype import (bool, cdouble, cfloat, complex64, complex128, double, dtype, finfo,  # noqa: A004
                     float, float16, float32, float64, get_default_dtype, half, iinfo, int,
                     int8, int16, int32, int64, long, promote_types, can_cast,
                     set_default_dtype, short, uint8, uint16, uint32, uint64)
from ._device import device, get_default_device, set_default_device  # noqa: F401
from ._layout import channels_last, contiguous_format, layout, memory_format, preserve_format, strided
from ._layout import sparse_coo  # noqa: F401  (torch.sparse_coo: mytorch/sparse/)
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,  # noqa: F401
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from . import backends  # noqa: F401
from .backends import (are_deterministic_algorithms_enabled,  # noqa: F401
                       is_deterministic_algorithms_warn_only_enabled, use_deterministic_algorithms)

# ---------------------------------------------------------------- 2. storage
from ._storage import TypedStorage, UntypedStorage  # noqa: F401

# ---------------------------------------------------------------- 3. the Tensor class, printing
from ._printing import set_printoptions  # noqa: F401  (torch: _tensor_str.get_printoptions)
from . import _tensor_str  # noqa: F401
from ._tensor import Size, Tensor, is_tensor

# ---------------------------------------------------------------- 4. the autograd graph
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                                    set_anomaly_enabled)

# ---------------------------------------------------------------- 5. operations
from ._ops._operands import numpy_names as _numpy_names
from ._ops._operands import result_type  # noqa: F401
from ._creation import *  # noqa: F401,F403
from ._ops.pointwise import *  # noqa: F401,F403
from ._ops.comparison import *  # noqa: F401,F403
from ._ops.reduction import *  # noqa: F401,F403
from ._ops.shape import *  # noqa: F401,F403
from ._ops.indexing import *  # noqa: F401,F403
from ._ops.linalg import *  # noqa: F401,F403
from ._ops.signal import *  # noqa: F401,F403
from ._ops import conversions as _conversions  # noqa: F401  (Tensor.to)
from .random import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: F401
                     manual_seed, seed, set_rng_state)
from ._ops.random_ops import *  # noqa: F401,F403
from ._ops.special import *  # noqa: F401,F403
from ._legacy import CPU_TYPES as _CPU_TYPES  # (and the legacy Tensor(2, 3))
from . import cuda, linalg, return_types, special  # noqa: F401
from .linalg import _torch_svd as svd, pinverse  # noqa: F401
from . import accelerator  # noqa: F401
from .functional import norm  # noqa: F401  (torch.norm, on top of torch.linalg)
from . import sparse  # noqa: F401  (torch.sparse.mm / sum)
from .sparse._coo import sparse_coo_tensor  # noqa: F401  (and Tensor.to_sparse / to_dense)

# ------------------------------------------------ 6. the autograd API; distributions, distributed
from . import autograd, distributed, distributions, utils  # noqa: F401
from .utils import checkpoint as _checkpoint  # noqa: F401  (torch.utils.checkpoint works at once)

# ---------------------------------------------------------------- 7. neural networks
from . import nn  # noqa: F401
from .nn._functional.activation import log_softmax_ as log_softmax, softmax_ as softmax  # noqa: F401
from .nn._functional.activation_more import (celu, celu_, hardshrink, selu, selu_,  # noqa: F401
                                           threshold, threshold_)

# ---------------------------------------------------------------- 8. training: optimizers, saving
from . import multiprocessing, optim, serialization  # noqa: F401
from .serialization import load, save  # noqa: F401
from .utils import benchmark as _benchmark  # noqa: F401  (its time_cuda piece registers)
from .utils import data as _data  # noqa: F401  (torch.utils.data works at once)
from .utils import training as _training  # noqa: F401  (mytorch only: chapter 10's pieces register)

# ---------------------------------------------------------------- 9. tools: the profiler
from . import profiler  # noqa: F401  (and torch.autograd.profiler, which it builds on)
from . import onnx  # noqa: F401  (torch.onnx.export; the onnx package is imported when it runs)

# ---------------------------------------------------------------- 10. the rest of torch's surface
from ._runtime import AcceleratorError, OutOfMemoryError  # noqa: F401,E402
from ._runtime import (compile, get_float32_matmul_precision, get_num_interop_threads,  # noqa: F401,A004
                       get_num_threads, set_float32_matmul_precision, set_num_interop_threads,
                       set_num_threads)
from . import amp  # noqa: E402  (GradScaler; torch.cuda.amp below)
from .amp import autocast  # noqa: E402
from .amp.autocast_mode import get_autocast_dtype, is_autocast_enabled  # noqa: E402
from .cuda import amp as _cuda_amp  # noqa: E402,F401
from ._devices_absent import cpu, mps, xpu  # noqa: F401,E402  (mps/xpu: is_available() is False)
from . import _unsupported  # noqa: E402
from ._surface import bind_torch_functions as _bind_torch_functions  # noqa: E402

_bind_torch_functions(globals())
from . import _bfloat16  # noqa: E402

_bfloat16._mark_originals()  # (pickled references to an op stay valid once wrapped)
_dtype.ON_EXTENSION_LOAD.append(_bfloat16.install)  # bfloat16 ops compute in float32, as torch's
if _dtype._EXTENSION_NP:  # (a bfloat16 dtype was already used while mytorch was importing)
    _bfloat16.install()
from . import _autocast  # noqa: E402

amp.autocast_mode.ON_ENABLE.append(_autocast.install)  # autocast's ops, wrapped when first on
import math as _math  # noqa: E402

e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan
newaxis = None
del _math


def __getattr__(name: str):
    """A torch name mytorch leaves out is a placeholder that raises NotImplementedError when used
    (mytorch/_unsupported.py lists them, with the reason); any other name is an AttributeError."""
    return _unsupported.module_getattr(__name__, name)


globals().update(_CPU_TYPES)  # FloatTensor, DoubleTensor, LongTensor, ... (legacy type objects)
for _name in autograd.__all__:  # autograd names its API lazily (its graph sits below the ops)
    getattr(autograd, _name)
del _name, _conversions, _checkpoint, _benchmark, _data, _training, _CPU_TYPES

__version__ = "0.1.0"


def _accept_numpy_names() -> None:
    """Like torch's native functions, the ops with a ``dim`` accept ``axis=`` (and ``keepdims=``)."""
    both = ("all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "argsort", "chunk",
            "count_nonzero", "cross", "cummax", "cummin", "cumprod", "cumsum", "gather",
            "index_add", "index_copy", "index_fill", "index_select", "kthvalue", "logsumexp",
            "max", "mean", "median", "min", "mode", "nanmean", "nansum", "narrow", "narrow_copy", "prod",
            "repeat_interleave", "scatter", "scatter_add", "scatter_reduce", "select", "sort",
            "squeeze", "std", "sum", "take_along_dim", "tensor_split", "topk", "unbind",
            "unsqueeze", "var")
    for name in both + ("cat", "concat", "stack", "std_mean", "var_mean", "unflatten"):
        if name in globals():
            globals()[name] = _numpy_names(globals()[name])
    for name in both + ("index_add_", "index_copy_", "index_fill_", "scatter_", "scatter_add_",
                        "scatter_reduce_", "size", "stride", "cumsum_", "cumprod_"):
        if hasattr(Tensor, name):
            setattr(Tensor, name, _numpy_names(getattr(Tensor, name)))


_accept_numpy_names()

# Your own mytorch (mytorch only, not in torch): run the library on the pieces you wrote.
from .mine import use_mine, use_reference  # noqa: E402
from . import mine as _mine  # noqa: E402

_mine._from_environment()  # MYTORCH_MINE=1 (or a folder): switch on at import
del annotations  # bound by the __future__ import: not part of torch's API
