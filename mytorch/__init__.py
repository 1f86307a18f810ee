"""mytorch: a small, real PyTorch, built chapter by chapter on NumPy (and CuPy on a GPU).

``import mytorch as torch`` runs the book's PyTorch snippets with the same numbers.

Where things live (mirroring torch's layout where it teaches something):

* ``_tensor.py``            the Tensor class: data, shape/strides/device, conversions
* ``_dtype.py``, ``_device.py``  dtypes and type promotion; devices and their array backends
* ``_creation.py``          tensor/zeros/arange/... ; ``random.py`` random numbers
* ``_ops/``                 operations by family (pointwise, reduction, shape, indexing, linalg, ...)
* ``autograd/``             the graph (``graph.py``), the backward pass (``engine.py``), grad modes
* ``cuda/``                 GPU devices through CuPy
"""
from __future__ import annotations

from . import _allocator

_allocator.keep_freed_memory()  # reuse freed CPU memory between steps (see _allocator.py)

from . import _dtype  # noqa: E402
from ._dtype import (bool, cdouble, cfloat, complex64, complex128, double, dtype, finfo,  # noqa: A004
                     float, float16, float32, float64, get_default_dtype, half, iinfo, int,
                     int8, int16, int32, int64, long, promote_types, result_type, can_cast,
                     set_default_dtype, short, uint8)
from ._device import device
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
from ._printing import set_printoptions, get_printoptions  # noqa: F401
from . import autograd, cuda, distributions, linalg, return_types, special, utils  # noqa: F401
from . import nn  # noqa: F401
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,  # noqa: F401
                       no_grad, set_grad_enabled)
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled, is_anomaly_enabled,  # noqa: F401
                                    set_anomaly_enabled)
from ._storage import TypedStorage, UntypedStorage  # noqa: F401

__version__ = "0.1.0"
