"""``nn.utils``: helpers around layers (``rnn`` packing, ``spectral_norm``, …)."""
from . import rnn  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
