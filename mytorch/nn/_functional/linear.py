"""``linear``: the affine map behind ``nn.Linear`` (and the projections of attention).

Its own module so that the layer families under ``nn/_functional/`` (attention's projections)
can call it without importing ``nn.functional``, which imports them.
"""
from __future__ import annotations

from ..._fp import FP_IGNORE, FP_STATE
from ..._ops import pointwise as _pw
from ..._ops.linalg import einsum
from ..._ops._operands import check_same_device
from ..._pieces import pieces
from ..._tensor import Tensor, wrap
from ...autograd.graph import needs_grad, record, sum_to

__all__ = ["bilinear", "linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x Wᵀ + b`` over the last dimension of ``input``; ``weight`` is ``(out, in)``.

    As in torch, with a bias this is ``addmm(b, x, Wᵀ)``: one graph node, ``AddmmBackward0``
    (a 1-D or N-D contiguous ``input`` is viewed as a matrix first and the result viewed back).
    """
    if bias is not None:  # torch computes this case as addmm(bias, x, Wᵀ): its dtype checks
        if input.dtype != weight.dtype:
            raise RuntimeError("mat1 and mat2 must have the same dtype, but got "
                               f"{_pw._cap(input.dtype)} and {_pw._cap(weight.dtype)}")
        if bias.dtype != weight.dtype:
            raise RuntimeError("self and mat2 must have the same dtype, but got "
                               f"{_pw._cap(bias.dtype)} and {_pw._cap(weight.dtype)}")
        if not input._device == weight._device == bias._device:
            check_same_device(bias, input, weight)  # addmm's order: the bias's device first
        x = input._data
        if (weight._data.ndim == 2 and bias._data.shape == weight._data.shape[:1]
                and x.ndim >= 1 and x.shape[-1] == weight._data.shape[1]):
            if x.ndim == 2:
                return _addmm(bias, input, weight.t())
            if input.is_contiguous():
                flat = _addmm(bias, input.view(-1, x.shape[-1]), weight.t())
                return flat.view(*x.shape[:-1], weight._data.shape[0])
    out = input.matmul(weight.t())
    if bias is not None:
        out = out + bias
    return out


def _addmm(bias: Tensor, x: Tensor, wt: Tensor) -> Tensor:
    """``bias + x @ wt`` for a matrix ``x``, as one node (torch's ``AddmmBackward0``). Its
    backward is the piece ``matmul_backward`` for ``x`` and ``wt``, and the bias's gradient is
    ``g`` summed over the batch (``sum_to``)."""
    token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch
    try:
        out = x._data @ wt._data
        out += bias._data
    finally:
        FP_STATE.reset(token)
    res = wrap(out, x._device)
    if needs_grad(bias, x, wt):
        rg_b, rg_x, rg_w = bias._requires_grad, x._requires_grad, wt._requires_grad

        def backward(g: Tensor) -> tuple:
            gx, gw = pieces.matmul_backward(x, wt, g, (rg_x, rg_w)) if rg_x or rg_w else \
                (None, None)
            return (sum_to(g, bias._data.shape) if rg_b else None), gx, gw

        record("AddmmBackward0", res, (bias, x, wt), backward, saved=_pw._crossed(x, wt))
    return res


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1ᵀ A_k x2 + b_k`` over the last dimension of both inputs; ``weight`` is
    ``(out, in1, in2)``. Like torch's ``_trilinear``, one contraction viewed back to the batch
    shape (``ViewBackward0``), then the bias added (``AddBackward0``)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and "
                           f"{input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and bias.shape[-1] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1]} but expected {weight.shape[0]}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
