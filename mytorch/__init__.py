"""mytorch: a small, real PyTorch, built chapter by chapter on NumPy (and CuPy on a GPU).

``import mytorch as torch`` runs the book's PyTorch snippets with the same numbers.

Where things live (mirroring torch's layout where it teaches something):

* ``_tensor.py``            the Tensor class: data, shape/strides/device, conversions
* ``_dtype.py``, ``_device.py``  dtypes and type promotion; devices and their array backends
* ``_creation.py``          tensor/zeros/arange/... ; ``random.py`` random numbers
* ``_ops/``                 operations by family (pointwise, reduction, shape, indexing, linalg, ...)
* ``autograd/``             the graph (``graph.py``), the backward pass (``engine.py``), grad modes
* ``cuda/``                 GPU devices through CuPy; ``backends/`` their flags
"""
from __future__ import annotations

from . import _allocator

_allocator.keep_freed_memory()  # reuse freed CPU memory between steps (see _allocator.py)

from . import _dtype  # noqa: E402
from ._dtype import (bool, cdouble, cfloat, complex64, complex128, double, dtype, finfo,  # noqa: A004
                     float, float16, float32, float64, get_default_dtype, half, iinfo, int,
                     int8, int16, int32, int64, long, promote_types, result_type, can_cast,
                     set_default_dtype, short, uint8, uint16, uint32, uint64)
from ._device import device, get_default_device, set_default_device  # noqa: F401
from ._layout import channels_last, contiguous_format, layout, memory_format, preserve_format, strided
from ._tensor import Size, Tensor, is_tensor
from ._creation import *  # noqa: F401,F403
from ._ops.pointwise import *  # noqa: F401,F403
from ._ops.comparison import *  # noqa: F401,F403
from ._ops.reduction import *  # noqa: F401,F403
from ._ops.shape import *  # noqa: F401,F403
from ._ops.indexing import *  # noqa: F401,F403
from ._ops.linalg import *  # noqa: F401,F403
from ._ops.signal import *  # noqa: F401,F403
from .random import (Generator, default_generator, get_rng_state, initial_seed, manual_seed,  # noqa: F401
                     seed, set_rng_state)
from ._ops.random_ops import *  # noqa: F401,F403
from ._ops.special import *  # noqa: F401,F403
from ._printing import set_printoptions  # noqa: F401  (torch: _tensor_str.get_printoptions)
from . import _tensor_str  # noqa: F401
from . import autograd, cuda, distributions, linalg, return_types, special, utils  # noqa: F401
from . import nn  # noqa: F401
from . import accelerator, optim, serialization  # noqa: F401,E402
from .serialization import load, save  # noqa: F401,E402
from .linalg import _torch_svd as svd, pinverse  # noqa: F401,E402
from . import backends  # noqa: F401
from . import distributed, multiprocessing  # noqa: F401
from .backends import (are_deterministic_algorithms_enabled,  # noqa: F401
                       is_deterministic_algorithms_warn_only_enabled, use_deterministic_algorithms)
from .nn._functional.activation import log_softmax_ as log_softmax, softmax_ as softmax  # noqa: F401
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,  # noqa: F401
                       no_grad, set_grad_enabled)
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                                    set_anomaly_enabled)
from ._storage import TypedStorage, UntypedStorage  # noqa: F401
from ._legacy import CPU_TYPES as _CPU_TYPES

globals().update(_CPU_TYPES)  # FloatTensor, DoubleTensor, LongTensor, ... (legacy type objects)

__version__ = "0.1.0"


def _accept_numpy_names() -> None:
    """Like torch's native functions, the ops with a ``dim`` accept ``axis=`` (and ``keepdims=``)."""
    from ._ops._operands import numpy_names

    both = ("all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "argsort", "chunk",
            "count_nonzero", "cross", "cummax", "cummin", "cumprod", "cumsum", "gather",
            "index_add", "index_copy", "index_fill", "index_select", "kthvalue", "logsumexp",
            "max", "mean", "median", "min", "nanmean", "nansum", "narrow", "narrow_copy", "prod",
            "repeat_interleave", "scatter", "scatter_add", "scatter_reduce", "select", "sort",
            "squeeze", "std", "sum", "take_along_dim", "tensor_split", "topk", "unbind",
            "unsqueeze", "var")
    for name in both + ("cat", "concat", "stack", "std_mean", "var_mean", "unflatten"):
        if name in globals():
            globals()[name] = numpy_names(globals()[name])
    for name in both + ("index_add_", "index_copy_", "index_fill_", "scatter_", "scatter_add_",
                        "scatter_reduce_", "size", "stride", "cumsum_", "cumprod_"):
        if hasattr(Tensor, name):
            setattr(Tensor, name, numpy_names(getattr(Tensor, name)))


_accept_numpy_names()

# Your own mytorch (mytorch only, not in torch): run the library on the pieces you wrote.
from .mine import use_mine, use_reference  # noqa: E402
from . import mine as _mine  # noqa: E402

_mine._from_environment()  # MYTORCH_MINE=1 (or a folder): switch on at import
del annotations  # bound by the __future__ import: not part of torch's API
