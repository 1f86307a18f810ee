"""``nn.utils``: helpers around layers (``rnn`` packing, ``parametrize`` and
``parametrizations.spectral_norm``/``weight_norm``, the legacy ``spectral_norm`` and
``weight_norm``, gradient clipping, …)."""
from . import parametrizations, parametrize, rnn  # noqa: F401
from .clip_grad import (clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,  # noqa: F401
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
