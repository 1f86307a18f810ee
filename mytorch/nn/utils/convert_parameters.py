"""All parameters as one flat vector and back: for optimisers and analyses that see the model as a
single point in weight space (line searches, second-order methods, weight averaging)."""
from __future__ import annotations

from collections.abc import Iterable

from ..._ops.shape import cat
from ..._tensor import Tensor
from ..modules.module import _typename

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param: Tensor, first: int | None) -> int:
    """The device index of the first parameter (-1 for the CPU); TypeError when one differs."""
    here = param.device.index if param.device.type == "cuda" else -1
    if first is not None and here != first:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return here


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Concatenate the flattened parameters into one 1-D tensor (a copy, still in the graph)."""
    device, vec = None, []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data the next slice of ``vec`` (the inverse of
    :func:`parameters_to_vector`); the parameters then share ``vec``'s memory."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device, pointer = None, 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
