"""Benchmarks: mytorch against raw NumPy and torch CPU, measured in the same run (``make bench``).

Every library runs on ONE thread (NumPy's BLAS here, torch in runner.py), so a ratio compares
implementations rather than how many cores each library grabbed on a shared 2-core machine.
Set MYTORCH_BENCH_THREADS to another number to compare multi-threaded runs instead.
"""
import os

_threads = os.environ.get("MYTORCH_BENCH_THREADS", "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, _threads)
