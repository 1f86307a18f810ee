"""Attention: ``scaled_dot_product_attention`` and the multi-head wrapper behind
``nn.MultiheadAttention``.

``softmax(Q Kᵀ / √d + bias) V``: each query takes a weighted average of the values, weighted by
how well it matches each key. Masks enter as ``bias``: ``-inf`` where attention is forbidden.

Beware of the two mask conventions torch uses (a classic bug):

* ``scaled_dot_product_attention(attn_mask=bool)``: ``True`` means *may attend*;
* ``MultiheadAttention(attn_mask=bool, key_padding_mask=bool)``: ``True`` means *masked out*.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..._creation import ones, zeros
from ..._ops.indexing import where
from ..._ops.pointwise import _quiet
from ..._ops.shape import cat
from ..._pieces import pieces
from ..._tensor import Tensor, wrap
from ...autograd.grad_mode import STATE
from ...autograd.graph import SavedOutput, needs_grad, record
from .activation import _row_max, _row_sum, softmax
from .dropout import dropout
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _safe_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim that gives 0 (not nan) for rows where every score is -inf."""
    out = softmax(scores, -1)
    dead = (scores == _NEG_INF).all(-1, keepdim=True)
    return where(dead, 0.0, out) if bool(dead.any()) else out


@functools.lru_cache(maxsize=32)
def _causal_block(L: int, S: int, device: Any) -> Tensor:
    """The positions ``is_causal`` forbids: key ``j`` after query ``i`` (a constant, cached)."""
    return ones(L, S, dtype=bool, device=device).triu(1)


def _mask_to_bias(mask: Tensor, like: Tensor, true_means_masked: bool) -> Tensor:
    """A float additive mask: boolean masks become 0 / -inf, float masks pass through."""
    if mask.dtype.is_floating_point:
        return mask
    blocked = mask if true_means_masked else ~mask
    return zeros(mask.shape, dtype=like.dtype, device=like.device).masked_fill(blocked, _NEG_INF)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(Q Kᵀ · scale + mask) V`` over the last two dims (``(…, L, E)``, ``(…, S, E)``).

    A boolean ``attn_mask`` says where a query *may* attend; a float one is added to the scores.
    ``is_causal`` forbids attending to later positions. ``scale`` defaults to ``1/√E``.
    """
    L, S = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if attn_mask is None and dropout_p == 0.0 and not enable_gqa:
        fused = _attention_arrays(query, key, value, is_causal, factor)
        if fused is not None:
            return fused
    scores = query.matmul(key.transpose(-2, -1)) * factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        scores = scores.masked_fill(_causal_block(L, S, query.device), _NEG_INF)
        if attn_mask is None and not enable_gqa:  # (every row keeps its first key: none dies)
            weights = softmax(scores, -1)
            return (dropout(weights, dropout_p, True) if dropout_p > 0.0 else weights).matmul(value)
    if attn_mask is not None:
        scores = scores + _mask_to_bias(attn_mask, query, true_means_masked=False)
    if enable_gqa:
        groups = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
        scores = query.matmul(key.transpose(-2, -1)) * factor
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


@functools.lru_cache(maxsize=32)
def _causal_bias(L: int, S: int, dtype: Any) -> np.ndarray:
    """``-inf`` where ``is_causal`` forbids key ``j`` to query ``i`` (``j > i``), else 0: a
    constant added to the scores (cached, read-only)."""
    bias = np.where(np.triu(np.ones((L, S), dtype=bool), 1), -np.inf, 0).astype(dtype)
    bias.flags.writeable = False
    return bias


def _output_like(query: Tensor, shape: tuple) -> np.ndarray:
    """New memory for the attention's output, laid out as torch's CPU kernel lays it out: like a
    4-d ``query`` whose rows are contiguous (dense, in the order of its strides: the heads of a
    split ``(B, T, 3C)`` projection give ``(B, T, H, E)`` memory, so ``y.transpose(1, 2)`` is
    contiguous), else contiguous."""
    q = query._data
    if q.ndim != 4 or shape != q.shape or q.strides[-1] != q.itemsize or q.flags.c_contiguous:
        return np.empty(shape, q.dtype)
    order = sorted(range(4), key=lambda d: -q.strides[d])  # outer to inner, as q's memory
    return np.empty([shape[d] for d in order], q.dtype).transpose(np.argsort(order))


# Scores inside (-64, 64) need no row maximum subtracted before ``exp``: exp(±64) is far from
# float32's overflow (exp(89)) and underflow (exp(-87)), and ``exp(s) / Σ exp(s)`` is the same
# softmax as ``exp(s - max) / Σ exp(s - max)`` to rounding. The maximum of short rows is one of
# NumPy's slowest reductions; two whole-array reductions check the range instead.
_EXP_SAFE = 64.0


def _attention_arrays(query: Tensor, key: Tensor, value: Tensor, is_causal: bool,
                      factor: float, bias: Tensor | None = None) -> Tensor | None:
    """The attention of :func:`scaled_dot_product_attention` without a mask or dropout (causal
    or not) as one op on NumPy arrays, as torch's CPU kernel is one op, one node (torch's
    ``ScaledDotProductFlashAttentionForCpuBackward0``, which saves the inputs and the output).

    As torch's flash kernel, the forward divides by the softmax's row sums at the end, on the
    weighted values (``(e V) / Σe`` with ``e = exp(scores)``) rather than on the weights; the
    backward is four matrix products and the softmax gradient, whose row term
    ``Σ_j p_ij (g_i · v_j)`` is ``g_i · out_i`` (FlashAttention's trick: no pass over the
    weights for it). None when the operands are not float32/float64 host arrays of one dtype
    with equal batch dimensions (the composed path handles every case). ``bias``, a constant
    float mask added to the scores (multi-head attention's), may leave a row with every key
    masked: its weights are 0, as :func:`_safe_softmax` gives."""
    q, k, v = query._data, key._data, value._data
    b = None if bias is None else bias._data
    if b is not None and (bias._requires_grad or type(b) is not np.ndarray or b.dtype != q.dtype):
        return None
    if not (type(q) is np.ndarray and type(k) is np.ndarray and type(v) is np.ndarray
            and q.dtype in (np.float32, np.float64) and q.dtype == k.dtype == v.dtype
            and q.ndim >= 2 and q.ndim == k.ndim == v.ndim and q.shape[:-2] == k.shape[:-2]
            == v.shape[:-2] and q.shape[-1] == k.shape[-1] and k.shape[-2] == v.shape[-2]
            and q.size and k.size and v.size):
        return None
    dev = query._device
    with _quiet():
        e = q @ np.swapaxes(k, -1, -2)  # the scores, then exp(scores - shift) in place
        e *= e.dtype.type(factor)
        shift = b is not None or not -_EXP_SAFE < e.min() <= e.max() < _EXP_SAFE
        if is_causal:  # (row i keeps key 0 at least: no row is all -inf)
            e += _causal_bias(e.shape[-2], e.shape[-1], e.dtype)
        if b is not None:
            e += b
        if shift:
            top = _row_max(e, -1)
            if b is not None:
                top[top == _NEG_INF] = 0  # a row with every key masked: exp gives zeros ...
            e -= top
        np.exp(e, out=e)
        total = _row_sum(e, -1)
        if b is not None:
            total[total == 0] = 1         # ... and stays zeros
        out = np.matmul(e, v, out=_output_like(query, e.shape[:-1] + v.shape[-1:]))
        out /= total
    res = wrap(out, dev)
    if needs_grad(query, key, value):
        rq, rk, rv = query._requires_grad, key._requires_grad, value._requires_grad
        saved_out = SavedOutput(res)

        def backward(g: Tensor) -> tuple:
            if STATE.enabled or type(g._data) is not np.ndarray or g._data.dtype != e.dtype:
                return _attention_grads_graph(g, query, key, value, is_causal, factor, (rq, rk, rv),
                                              bias)
            ga = g._data
            with _quiet():
                g_e = ga / total                         # the gradient of e's rows' shares
                dv = wrap(np.swapaxes(e, -1, -2) @ g_e, dev) if rv else None
                ds = g_e @ np.swapaxes(v, -1, -2)        # d weights, times the row sums
                ds -= _row_sum(ga * saved_out.data, -1) / total
                ds *= e
                ds *= ds.dtype.type(factor)              # d scores (before the scale)
                dq = wrap(ds @ k, dev) if rq else None
                dk = wrap(np.swapaxes(ds, -1, -2) @ q, dev) if rk else None
            return dq, dk, dv

        record("ScaledDotProductFlashAttentionForCpuBackward0", res, (query, key, value),
               backward, saved=(query, key, value, saved_out))
    return res


def _attention_grads_graph(g: Tensor, query: Tensor, key: Tensor, value: Tensor, is_causal: bool,
                           factor: float, needs: tuple, bias: Tensor | None = None) -> tuple:
    """The gradients of :func:`_attention_arrays` from differentiable ops (``create_graph``)."""
    scores = query.matmul(key.transpose(-2, -1)) * factor
    if is_causal:
        scores = scores.masked_fill(_causal_block(scores.shape[-2], scores.shape[-1],
                                                  query.device), _NEG_INF)
    w = softmax(scores, -1) if bias is None else _safe_softmax(scores + bias)
    ds = pieces.softmax_backward(w, g.matmul(value.transpose(-2, -1)), -1) * factor
    return (ds.matmul(key) if needs[0] else None,
            ds.transpose(-2, -1).matmul(query) if needs[1] else None,
            w.transpose(-2, -1).matmul(g) if needs[2] else None)


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """``F.linear`` (torch's multi-head attention projects with it: one ``addmm`` node)."""
    return linear(x, w, b)


def _in_projection(query: Tensor, key: Tensor, value: Tensor, in_proj_weight: Tensor | None,
                   in_proj_bias: Tensor | None, separate: tuple) -> tuple:
    """Project queries, keys and values: rows ``[0:E]``, ``[E:2E]``, ``[2E:3E]`` of the packed
    ``in_proj_weight`` (or three separate matrices when key/value sizes differ). Self-attention
    (one tensor for all three) projects once with the packed matrix and splits the result, as
    torch's ``_in_projection_packed`` does."""
    if separate[0] is not None:
        ws = separate
    elif query is key and key is value:
        return _linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    else:
        ws = in_proj_weight.chunk(3)
    bs = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    return tuple(_linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs, strict=False))


def _check_attn_mask(attn_mask: Tensor, tgt: int, src: int, bsz_heads: int) -> Tensor:
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt, src):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape!r}, but should "
                               f"be {(tgt, src)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bsz_heads, tgt, src):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape!r}, but should "
                               f"be {(bsz_heads, tgt, src)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Any = None, static_v: Any = None,
        average_attn_weights: bool = True, is_causal: bool = False) -> tuple:
    """Multi-head attention on sequence-first inputs ``(L, N, E)`` (or unbatched ``(L, E)``).

    Returns ``(output, weights)``; ``weights`` is ``(N, L, S)`` averaged over heads (or
    ``(N, heads, L, S)``), or ``None`` when ``need_weights=False``.
    """
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    head_dim = embed_dim // num_heads
    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight \
        else (None, None, None)
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, separate)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(_mask_to_bias(attn_mask, q, True), tgt, key.shape[0],
                                     bsz * num_heads)
    if key_padding_mask is not None:
        key_padding_mask = _mask_to_bias(key_padding_mask, q, True)
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    q = q.reshape(tgt, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        z = zeros(bsz * num_heads, 1, head_dim, dtype=q.dtype, device=q.device)
        k, v = cat([k, z], dim=1), cat([v, z], dim=1)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src = k.shape[1]
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(bsz, 1, 1, src).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if not need_weights and dropout_p == 0.0:  # one op, as torch's fast path
        fused = _attention_arrays(q, k, v, False, math.sqrt(1.0 / head_dim), attn_mask)
        if fused is not None:
            out = fused.transpose(0, 1).reshape(tgt * bsz, embed_dim)
            out = _linear(out, out_proj_weight, out_proj_bias).reshape(
                tgt, bsz, out_proj_weight.shape[0])
            return (out if batched else out.squeeze(1)), None
    scores = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
    if attn_mask is not None:
        scores = scores + attn_mask
    weights = softmax(scores, -1) if need_weights else _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    out = weights.matmul(v).transpose(0, 1).reshape(tgt * bsz, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(tgt, bsz, out_proj_weight.shape[0])
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt, src)
    if average_attn_weights:
        weights = weights.mean(1)
    return out, (weights if batched else weights.squeeze(0))


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """Append one zero column (the extra key from ``bias_k`` / ``add_zero_attn``)."""
    if mask is None:
        return None
    return cat([mask, zeros(mask.shape[:-1] + (1,), dtype=mask.dtype, device=mask.device)], -1)
