"""``mytorch.vision.transforms`` (torchvision.transforms): transform classes and ``functional``."""
from . import functional  # noqa: F401
from .functional import InterpolationMode  # noqa: F401
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _all

__all__ = ["InterpolationMode", "functional", *_all]
