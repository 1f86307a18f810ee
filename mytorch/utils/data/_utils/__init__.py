"""The DataLoader's machinery: collation, fetching, worker processes and memory pinning.

``MP_STATUS_CHECK_INTERVAL`` is how often (seconds) a waiting worker checks that its parent is
still alive, and a waiting main process that its workers are.
"""
from __future__ import annotations

import atexit

MP_STATUS_CHECK_INTERVAL = 5.0   # worker side: how long one wait for an index lasts
WORKER_CHECK_INTERVAL = 0.1      # main side: how often a waiting loader looks for dead workers
SHUTDOWN_JOIN_TIMEOUT = 1.0      # how long a stopping loader waits for a worker before killing it

python_exit_status = False
"""True once the interpreter is exiting: loaders then leave their (daemonic) workers to
multiprocessing's own exit handler instead of stopping them from half-torn-down modules."""


def _set_python_exit_flag() -> None:
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)

from . import collate, fetch, pin_memory, worker  # noqa: E402,F401
