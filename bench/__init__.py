"""Benchmarks: mytorch against raw NumPy and torch (CPU), measured in the same run."""
