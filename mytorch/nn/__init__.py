"""mytorch.nn: modules (layers with parameters), ``functional`` and ``init``.

* ``parameter.py``  — ``Parameter``, the tensor type that modules register as weights
* ``modules/``      — ``Module`` (module.py), containers, and the layers
* ``functional.py`` — the stateless functions the layers call (``import mytorch.nn.functional as F``)
* ``init.py``       — weight initialisation (kaiming, xavier, ...)
"""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Parameter, UninitializedBuffer, UninitializedParameter
from . import parallel  # noqa: E402,F401
from .parallel import DataParallel  # noqa: E402,F401

__all__ = ["Parameter", "UninitializedBuffer", "UninitializedParameter", "functional", "init",
           "parallel", "DataParallel", *_modules_all]
