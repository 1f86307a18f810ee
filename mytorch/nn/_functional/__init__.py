"""The implementation of ``nn.functional``, one module per family of functions.

``nn/functional.py`` re-exports their public functions (``import mytorch.nn.functional as F``).
"""
