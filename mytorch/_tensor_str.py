"""``torch._tensor_str``: where torch keeps its print options (``PRINT_OPTS``).

torch has no public ``get_printoptions``; code that needs the current options reads
``torch._tensor_str.PRINT_OPTS`` (or calls ``torch._tensor_str.get_printoptions()``).
"""
from __future__ import annotations

from ._printing import _OPTS as PRINT_OPTS
from ._printing import get_printoptions

__all__ = ["PRINT_OPTS", "get_printoptions"]
