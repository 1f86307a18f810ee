"""torch.special: special mathematical functions (implemented in ``mytorch/_ops/special.py``)."""
from .._ops.pointwise import expm1, log1p, sigmoid
from .._ops.special import digamma, entr, erfinv, lgamma, polygamma, xlog1py, xlogy
from .._tensor import Tensor

gammaln = lgamma
psi = digamma

__all__ = ["digamma", "erfinv", "gammaln", "polygamma", "psi", "xlogy", "expm1", "log1p",
           "expit", "entr", "xlog1py"]


def expit(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (SciPy's name for it; the same op as
    ``torch.sigmoid``, with the same ``SigmoidBackward0`` node)."""
    return sigmoid(input, out=out)


def __dir__() -> list[str]:
    """``dir()`` shows the public API (as torch's module does), not the helpers imported here."""
    return sorted(__all__)
