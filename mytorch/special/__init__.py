"""torch.special: special mathematical functions (implemented in ``mytorch/_ops/special.py``)."""
from .._ops.special import digamma, erfinv, lgamma, polygamma, xlogy
from .._ops.pointwise import expm1, log1p

gammaln = lgamma
psi = digamma

__all__ = ["digamma", "erfinv", "gammaln", "polygamma", "psi", "xlogy", "expm1", "log1p"]


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
