"""mytorch.distributed: training on several processes, with torch.distributed's API on MPI.

Start N copies of a script with ``python -m mytorch.distributed.run --nproc-per-node N train.py``
(torchrun's interface; it runs ``mpiexec`` from the ``mpich`` wheel), call
``init_process_group("gloo")`` in each, and use the collectives of ``distributed_c10d.py``.
Install MPI with ``pip install -e '.[dist]'`` (``mpich`` and ``mpi4py`` from PyPI).

Layout like torch's: ``distributed_c10d.py`` (groups, collectives, point to point),
``_mpi_backend.py`` / ``_nccl_backend.py`` (the engines), ``_world.py`` (the MPI world and its
control channel: failures and timeouts), ``run.py`` (the launcher).
"""
from __future__ import annotations

from ._world import DistBackendError, DistError
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__ as _c10d_all

__all__ = ["DistError", "DistBackendError", *_c10d_all]
