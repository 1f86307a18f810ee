"""Parsing Python source in a process that has threads: :func:`parse_python`.

CPython 3.11 (gh-106905) keeps the recursion depth of its AST conversion in state that all
threads share: two threads that parse at once (the grader's calibration and grading threads, a
stub tree being built beside them) can fail with ``SystemError: AST constructor recursion depth
mismatch``. Every parse in bookkit goes through this one lock; the retry covers a thread of the
process that parses without it (a library's own ``ast.parse``).
"""
from __future__ import annotations

import ast
import threading

__all__ = ["parse_python"]

_AST_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """``ast.parse(source)``, never two at once in this process, retried once on ``SystemError``."""
    with _AST_LOCK:
        try:
            return ast.parse(source)
        except SystemError:
            return ast.parse(source)
