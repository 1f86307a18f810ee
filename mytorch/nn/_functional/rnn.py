"""Whole-sequence recurrent kernels: one graph node per layer and direction.

``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` run step by step in their readable form (``modules/rnn.py``):
every gate of every time step is a few tensor ops, each a graph node, about 700 nodes per LSTM
step. This module is what frameworks do instead (cuDNN, and torch's oneDNN path on the CPU):
the input projection ``x W_ihᵀ + b`` for all steps in one matrix product, a loop over time with a
handful of NumPy calls per step on stacked gate matrices, and a hand-written backward through
time. The loop keeps the activated gates (and the cell states) of every step: that is what its
backward needs, and all it keeps.

The layer calls :func:`rnn_layer` only while the library's own cell is in use, for float tensors in
host memory; a student's cell (or CuPy, or saved-tensor hooks) runs step by step. Under
``create_graph=True`` the node's backward re-runs the step-by-step reference under autograd and
differentiates that, so double backward works as before.

Gates are in torch's order: ``i, f, g, o`` (LSTM) and ``r, z, n`` (GRU), stacked row after row in
``W_ih`` and ``W_hh``. Sequences are packed (``batch_sizes[t]`` rows run at step ``t``, the
longest first); a padded batch has ``batch_sizes == [B] * T``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..._fp import FP_IGNORE, FP_STATE
from ..._ops._operands import host_floats_of_one_dtype
from ..._tensor import Tensor, wrap
from ...autograd.engine import run_backward
from ...autograd.grad_mode import STATE, enable_grad
from ...autograd.graph import record, record_outputs

__all__ = ["rnn_layer", "fused_rnn_ok", "lstm_cell_step"]


def fused_rnn_ok(*tensors: Tensor | None) -> bool:
    """Whether :func:`rnn_layer` can run these: float32/float64 arrays in host memory."""
    return host_floats_of_one_dtype(*tensors)


# ----------------------------------------------------------------------------- the steps
class _Steps:
    """Which rows of the packed data each step reads, in the order the direction runs them."""

    def __init__(self, batch_sizes: list[int], reverse: bool) -> None:
        starts = [0]
        for n in batch_sizes:
            starts.append(starts[-1] + n)
        order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
        #: (first row, number of rows) per step, in running order
        self.steps = [(starts[t], batch_sizes[t]) for t in order]
        self.total = starts[-1]
        self.batch = batch_sizes[0]

    def previous(self, buf: np.ndarray, init: np.ndarray, k: int, state: np.ndarray | None,
                 ) -> np.ndarray:
        """The rows step ``k`` starts from: the previous step's rows of ``buf`` (its first ``n``:
        shorter sequences have stopped), or ``init`` at the first step. Running right to left
        over packed data, more sequences join as the steps go: ``state`` then holds the
        running rows followed by the initial state of those still waiting."""
        start, n = self.steps[k]
        if k == 0:
            return init[:n]
        p_start, p_n = self.steps[k - 1]
        if p_n >= n:
            return buf[p_start:p_start + n]
        state[:p_n] = buf[p_start:p_start + p_n]  # (state[p_n:n] still holds init's rows)
        return state[:n]

    def finals(self, buf: np.ndarray, init: np.ndarray) -> np.ndarray:
        """The last state of every sequence: each row from the last step that ran it."""
        out = init.copy()
        done = 0  # rows whose final step has been seen, counted from the back
        for start, n in reversed(self.steps):
            if n > done:
                out[done:n] = buf[start + done:start + n]
                done = n
        return out

    def previous_all(self, buf: np.ndarray, init: np.ndarray) -> np.ndarray:
        """Every step's starting rows, stacked like ``buf``'s rows (for the weight gradient)."""
        prev = np.empty_like(buf)
        state = init.copy()
        for k, (start, n) in enumerate(self.steps):
            prev[start:start + n] = self.previous(buf, init, k, state)
        return prev


def _sigmoid_tanh_scale(rows: int, hidden: int, sigmoid_gates: tuple) -> tuple:
    """Per-column ``(scale, after_mul, after_add)`` vectors: a sigmoid is ``0.5 tanh(x/2) + 0.5``,
    so one ``tanh`` over all the gates computes sigmoids and tanhs at once once the sigmoid
    gates' pre-activations are halved (folded into the weights: halving is exact)."""
    scale = np.ones(rows * hidden)
    mul = np.ones(rows * hidden)
    add = np.zeros(rows * hidden)
    for k in sigmoid_gates:
        sl = slice(k * hidden, (k + 1) * hidden)
        scale[sl], mul[sl], add[sl] = 0.5, 0.5, 0.5
    return scale, mul, add


# ----------------------------------------------------------------------------- LSTM
def _lstm_forward(x: np.ndarray, steps: _Steps, h0: np.ndarray, c0: np.ndarray,
                  w_ih: np.ndarray, w_hh: np.ndarray, bias: np.ndarray | None,
                  w_hr: np.ndarray | None) -> tuple:
    H = w_hh.shape[0] // 4
    dt = x.dtype
    scale, mul, add = (v.astype(dt) for v in _sigmoid_tanh_scale(4, H, (0, 1, 3)))
    w_ihT = (w_ih * scale[:, None]).T
    w_hhT = (w_hh * scale[:, None]).T
    gates = x @ w_ihT                                     # (N, 4H): every step at once
    if bias is not None:
        gates += bias * scale
    cells = np.empty((steps.total, H), dt)                 # c of every step
    tcells = np.empty((steps.total, H), dt)                # tanh(c)
    out = np.empty((steps.total, h0.shape[1]), dt)         # h (projected) of every step
    raw = np.empty((steps.total, H), dt) if w_hr is not None else out
    w_hrT = w_hr.T if w_hr is not None else None
    h_state = h0.copy() if steps.batch > steps.steps[0][1] else None
    c_state = c0.copy() if h_state is not None else None
    tmp = np.empty((steps.batch, 4 * H), dt)
    for k, (s, n) in enumerate(steps.steps):
        h_prev = steps.previous(out, h0, k, h_state)
        c_prev = steps.previous(cells, c0, k, c_state)
        z = gates[s:s + n]
        np.matmul(h_prev, w_hhT, out=tmp[:n])
        z += tmp[:n]
        np.tanh(z, out=z)
        z *= mul
        z += add                                           # i, f, g, o activated
        c = cells[s:s + n]
        np.multiply(z[:, H:2 * H], c_prev, out=c)
        np.multiply(z[:, :H], z[:, 2 * H:3 * H], out=tmp[:n, :H])
        c += tmp[:n, :H]
        tc = tcells[s:s + n]
        np.tanh(c, out=tc)
        np.multiply(z[:, 3 * H:], tc, out=raw[s:s + n])
        if w_hr is not None:
            np.matmul(raw[s:s + n], w_hrT, out=out[s:s + n])
    return out, steps.finals(out, h0), steps.finals(cells, c0), (gates, cells, tcells, raw)


def _lstm_backward(x: np.ndarray, steps: _Steps, h0: np.ndarray, c0: np.ndarray,
                   w_ih: np.ndarray, w_hh: np.ndarray, w_hr: np.ndarray | None,
                   out: np.ndarray, kept: tuple, g_out: np.ndarray | None,
                   g_h: np.ndarray | None, g_c: np.ndarray | None, has_bias: bool) -> tuple:
    """Backpropagation through time: the gradients of x, W_ih, W_hh, the bias (b_ih and b_hh
    get the same), W_hr, h0 and c0, given those of the output and of the final states."""
    gates, cells, tcells, raw = kept
    H = w_hh.shape[0] // 4
    dt = x.dtype
    one = dt.type(1)
    i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
    # each gate's gradient is dh or dc times a factor known from the forward: compute them
    # for all steps at once, so that the loop over time does a few multiplications per step
    c_prev = steps.previous_all(cells, c0)
    p_c = o * (one - tcells * tcells)              # dc = dh * p_c + (dc from the next step)
    p_o = tcells * o * (one - o)                   # dZ_o = dh * p_o
    p_i = g * i * (one - i)                        # dZ_i = dc * p_i
    p_f = c_prev * f * (one - f)                   # dZ_f = dc * p_f
    p_g = i * (one - g * g)                        # dZ_g = dc * p_g
    f = f.copy()                                   # dc to the previous step = dc * f
    del c_prev
    dz = np.empty_like(gates)  # (not the gates' memory: with retain_graph, backward runs again)
    dh_state = np.zeros_like(h0) if g_h is None else g_h.copy()
    dc_state = np.zeros_like(c0) if g_c is None else g_c.copy()
    dc = np.empty((steps.batch, H), dt)
    if w_hr is not None:
        dh_all = np.empty((steps.total, w_hr.shape[0]), dt)  # dh of every step, for dW_hr
        d_raw = np.empty((steps.batch, H), dt)
    for start, n in reversed(steps.steps):
        rows = slice(start, start + n)
        dh = dh_state[:n]
        if g_out is not None:
            dh += g_out[rows]
        if w_hr is not None:
            dh_all[rows] = dh
            dh = np.matmul(dh, w_hr, out=d_raw[:n])  # through the projection
        np.multiply(dh, p_c[rows], out=dc[:n])
        dc[:n] += dc_state[:n]
        np.multiply(dh, p_o[rows], out=dz[rows, 3 * H:])
        np.multiply(dc[:n], p_i[rows], out=dz[rows, :H])
        np.multiply(dc[:n], p_f[rows], out=dz[rows, H:2 * H])
        np.multiply(dc[:n], p_g[rows], out=dz[rows, 2 * H:3 * H])
        np.multiply(dc[:n], f[rows], out=dc_state[:n])
        np.matmul(dz[rows], w_hh, out=dh_state[:n])
    g_w_hr = dh_all.T @ raw if w_hr is not None else None
    return (dz @ w_ih, dz.T @ x, dz.T @ steps.previous_all(out, h0),
            dz.sum(0) if has_bias else None, g_w_hr, dh_state, dc_state)


# ----------------------------------------------------------------------------- GRU
def _gru_forward(x: np.ndarray, steps: _Steps, h0: np.ndarray, w_ih: np.ndarray,
                 w_hh: np.ndarray, b_ih: np.ndarray | None, b_hh: np.ndarray | None) -> tuple:
    H = w_hh.shape[0] // 3
    dt = x.dtype
    half = dt.type(0.5)
    scale = np.ones(3 * H, dt)
    scale[:2 * H] = half                           # r and z are sigmoids: halved, as for LSTM
    w_hhT = (w_hh * scale[:, None]).T
    gx = x @ (w_ih * scale[:, None]).T             # (N, 3H): every step at once
    if b_ih is not None:
        gx += b_ih * scale
    b_hh = b_hh * scale if b_hh is not None else None
    rz = np.empty((steps.total, 2 * H), dt)        # r and z of every step
    new = np.empty((steps.total, H), dt)           # n of every step
    hn = np.empty((steps.total, H), dt)            # W_hn h + b_hn of every step
    out = np.empty((steps.total, H), dt)
    state = h0.copy() if steps.batch > steps.steps[0][1] else None
    gh = np.empty((steps.batch, 3 * H), dt)
    for k, (s, n) in enumerate(steps.steps):
        h_prev = steps.previous(out, h0, k, state)
        np.matmul(h_prev, w_hhT, out=gh[:n])
        if b_hh is not None:
            gh[:n] += b_hh
        a = rz[s:s + n]
        np.add(gx[s:s + n, :2 * H], gh[:n, :2 * H], out=a)
        np.tanh(a, out=a)
        a *= half
        a += half                                  # r, z
        hn[s:s + n] = gh[:n, 2 * H:]
        m = new[s:s + n]
        np.multiply(a[:, :H], gh[:n, 2 * H:], out=m)
        m += gx[s:s + n, 2 * H:]
        np.tanh(m, out=m)                          # n
        h = out[s:s + n]
        np.subtract(h_prev, m, out=h)
        h *= a[:, H:]
        h += m                                     # h = n + z (h_prev - n)
    return out, steps.finals(out, h0), (rz, new, hn)


def _gru_backward(x: np.ndarray, steps: _Steps, h0: np.ndarray, w_ih: np.ndarray,
                  w_hh: np.ndarray, out: np.ndarray, kept: tuple, g_out: np.ndarray | None,
                  g_h: np.ndarray | None, has_bias: bool) -> tuple:
    rz, new, hn = kept
    H = w_hh.shape[0] // 3
    dt = x.dtype
    one = dt.type(1)
    r, z = rz[:, :H], rz[:, H:]
    h_prev = steps.previous_all(out, h0)
    p_n = (one - z) * (one - new * new)            # d(pre-activation of n) = dh * p_n
    p_r = hn * r * (one - r)                       # dZ_r = d_n * p_r
    p_z = (h_prev - new) * z * (one - z)           # dZ_z = dh * p_z
    d_gx = np.empty((steps.total, 3 * H), dt)
    d_gh = np.empty((steps.total, 3 * H), dt)
    dh_state = np.zeros_like(h0) if g_h is None else g_h.copy()
    tmp = np.empty((steps.batch, H), dt)
    for start, n in reversed(steps.steps):
        rows = slice(start, start + n)
        dh = dh_state[:n]
        if g_out is not None:
            dh += g_out[rows]
        dn = d_gx[rows, 2 * H:]
        np.multiply(dh, p_n[rows], out=dn)
        np.multiply(dn, p_r[rows], out=d_gx[rows, :H])
        np.multiply(dh, p_z[rows], out=d_gx[rows, H:2 * H])
        d_gh[rows, :2 * H] = d_gx[rows, :2 * H]
        np.multiply(dn, r[rows], out=d_gh[rows, 2 * H:])
        np.multiply(dh, z[rows], out=tmp[:n])      # straight through z
        np.matmul(d_gh[rows], w_hh, out=dh_state[:n])
        dh_state[:n] += tmp[:n]
    return (d_gx @ w_ih, d_gx.T @ x, d_gh.T @ h_prev, d_gx.sum(0) if has_bias else None,
            d_gh.sum(0) if has_bias else None, dh_state)


# ----------------------------------------------------------------------------- RNN
def _rnn_forward(x: np.ndarray, steps: _Steps, h0: np.ndarray, w_ih: np.ndarray,
                 w_hh: np.ndarray, bias: np.ndarray | None, relu: bool) -> tuple:
    dt = x.dtype
    w_hhT = w_hh.T
    out = x @ w_ih.T                               # pre-activations, then h, in place
    if bias is not None:
        out += bias
    state = h0.copy() if steps.batch > steps.steps[0][1] else None
    tmp = np.empty((steps.batch, w_hh.shape[0]), dt)
    zero = dt.type(0)
    for k, (s, n) in enumerate(steps.steps):
        h_prev = steps.previous(out, h0, k, state)
        h = out[s:s + n]
        h += np.matmul(h_prev, w_hhT, out=tmp[:n])
        if relu:
            np.maximum(h, zero, out=h)
        else:
            np.tanh(h, out=h)
    return out, steps.finals(out, h0), ()


def _rnn_backward(x: np.ndarray, steps: _Steps, h0: np.ndarray, w_ih: np.ndarray,
                  w_hh: np.ndarray, out: np.ndarray, g_out: np.ndarray | None,
                  g_h: np.ndarray | None, has_bias: bool, relu: bool) -> tuple:
    dt = x.dtype
    deriv = (out > 0).astype(dt) if relu else dt.type(1) - out * out
    da = np.empty_like(out)
    dh_state = np.zeros_like(h0) if g_h is None else g_h.copy()
    for start, n in reversed(steps.steps):
        rows = slice(start, start + n)
        dh = dh_state[:n]
        if g_out is not None:
            dh += g_out[rows]
        np.multiply(dh, deriv[rows], out=da[rows])
        np.matmul(da[rows], w_hh, out=dh_state[:n])
    g_b = da.sum(0) if has_bias else None
    return (da @ w_ih, da.T @ x, da.T @ steps.previous_all(out, h0), g_b, None,
            dh_state)


# ----------------------------------------------------------------------------- one node
def rnn_layer(mode: str, x: Tensor, batch_sizes: list[int] | None, h0: Tensor, c0: Tensor | None,
              w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
              w_hr: Tensor | None, reverse: bool, reference: Callable) -> tuple:
    """One layer in one direction of ``mode`` (``LSTM``, ``GRU``, ``RNN_TANH``, ``RNN_RELU``) over
    the whole sequence, as one graph node: ``(output, h_n, c_n)`` (``c_n`` None but for LSTM).

    ``x`` is ``(T, B, I)`` (``batch_sizes`` None) or packed ``(N, I)``; ``h0``/``c0`` are ``(B, ·)``.
    ``reference(x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr)`` computes the same step by step with
    tensor ops: the node's backward differentiates it when ``create_graph=True``.
    """
    packed = batch_sizes is not None
    xa = np.ascontiguousarray(x._data)
    if not packed:
        T, B = xa.shape[:2]
        batch_sizes = [B] * T
        xa = xa.reshape(T * B, xa.shape[2])
    steps = _Steps(batch_sizes, reverse)
    h0a, c0a = h0._data, None if c0 is None else c0._data
    wi, wh = w_ih._data, w_hh._data
    bi, bh = (None if b is None else b._data for b in (b_ih, b_hh))
    token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch
    try:
        if mode == "LSTM":
            bias = None if bi is None else bi + bh
            out, h_n, c_n, kept = _lstm_forward(xa, steps, h0a, c0a, wi, wh, bias,
                                                None if w_hr is None else w_hr._data)
        elif mode == "GRU":
            (out, h_n, kept), c_n = _gru_forward(xa, steps, h0a, wi, wh, bi, bh), None
        else:
            bias = None if bi is None else bi + bh
            (out, h_n, kept), c_n = _rnn_forward(xa, steps, h0a, wi, wh, bias,
                                                 mode == "RNN_RELU"), None
    finally:
        FP_STATE.reset(token)
    dev = x._device
    # the output's own memory: the backward reads ``out``, which the caller may change in place
    out_t = wrap(out.copy() if packed else out.reshape(T, B, out.shape[1]).copy(), dev)
    h_t = wrap(h_n, dev)
    c_t = None if c_n is None else wrap(c_n, dev)
    inputs = (x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr)
    tensors = [t for t in inputs if isinstance(t, Tensor)]
    if not STATE.enabled or not any(t._requires_grad for t in tensors):
        return out_t, h_t, c_t
    outs = [out_t, h_t] + ([c_t] if c_t is not None else [])
    x_shape = x._data.shape

    def backward(grads: list) -> tuple:
        if STATE.enabled or any(g is not None and g._data.dtype != out.dtype for g in grads):
            return _differentiate(reference, inputs, grads)
        g_out, g_h = (None if g is None else np.ascontiguousarray(g._data) for g in grads[:2])
        g_c = None if len(grads) < 3 or grads[2] is None else np.ascontiguousarray(grads[2]._data)
        if g_out is not None:
            g_out = g_out.reshape(steps.total, out.shape[1])
        xb = np.ascontiguousarray(x._data).reshape(steps.total, x_shape[-1])
        token = FP_STATE.set(FP_IGNORE)
        try:
            if mode == "LSTM":
                dx, dwi, dwh, db, dwr, dh0, dc0 = _lstm_backward(
                    xb, steps, h0._data, c0._data, w_ih._data, w_hh._data,
                    None if w_hr is None else w_hr._data, out, kept, g_out, g_h, g_c,
                    b_ih is not None)
                dbi, dbh = db, None if db is None else db.copy()  # (two .grad, two arrays)
            elif mode == "GRU":
                dx, dwi, dwh, dbi, dbh, dh0 = _gru_backward(
                    xb, steps, h0._data, w_ih._data, w_hh._data, out, kept, g_out, g_h,
                    b_ih is not None)
                dwr = dc0 = None
            else:
                dx, dwi, dwh, dbi, dwr, dh0 = _rnn_backward(
                    xb, steps, h0._data, w_ih._data, w_hh._data, out, g_out, g_h,
                    b_ih is not None, mode == "RNN_RELU")
                dbh, dc0 = None if dbi is None else dbi.copy(), None
        finally:
            FP_STATE.reset(token)
        res = (dx.reshape(x_shape), dwi, dwh, dbi, dbh, dh0, dc0, dwr)
        return tuple(None if a is None or not (isinstance(t, Tensor) and t._requires_grad)
                     else wrap(a, dev) for a, t in zip(res, inputs))

    record_outputs("CatBackward0" if packed else "StackBackward0", outs, inputs, backward,
                   saved=tuple(tensors))
    return out_t, h_t, c_t


def lstm_cell_step(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
                   b_ih: Tensor | None, b_hh: Tensor | None, reference: Callable) -> tuple:
    """One ``LSTMCell`` step, ``(h', c')``, as one graph node: the LSTM kernel above run for a
    single step (one matrix product per weight, one ``tanh`` over the four gates), instead of
    the fifteen or so nodes of the readable cell. ``reference`` (the readable cell, same
    arguments) is differentiated under ``create_graph=True``. Nodes named as torch's last two of
    the cell: the kernel's node is ``c'``'s ``AddBackward0`` (``c' = f * c + i * g``), with the
    kernel's ``h'`` as its second output; ``h'`` itself is ``MulBackward0`` (``h' = o * tanh(c')``),
    a node that hands its gradient on to that second output, so ``h'``'s node leads to ``c'``'s,
    as in torch's graph."""
    xa = np.ascontiguousarray(x._data)
    steps = _Steps([xa.shape[0]], False)
    bias = None if b_ih is None else b_ih._data + b_hh._data
    token = FP_STATE.set(FP_IGNORE)  # inf and nan silently, as in torch
    try:
        out, _, c_n, kept = _lstm_forward(xa, steps, h._data, c._data, w_ih._data, w_hh._data,
                                          bias, None)
    finally:
        FP_STATE.reset(token)
    dev = x._device
    h_t, c_t = wrap(out.copy(), dev), wrap(c_n.copy(), dev)  # (the kernel's own arrays stay put)
    h_k = wrap(out, dev)  # the cell node's second output, which only h_t's node sees
    inputs = (x, h, c, w_ih, w_hh, b_ih, b_hh)
    tensors = [t for t in inputs if isinstance(t, Tensor)]
    if not STATE.enabled or not any(t._requires_grad for t in tensors):
        return h_t, c_t

    def backward(grads: list) -> tuple:  # grads: (c', h')'s, the node's outputs
        if STATE.enabled or any(g is not None and g._data.dtype != out.dtype for g in grads):
            return _differentiate(reference, inputs, grads[::-1])
        g_c, g_h = (None if g is None else np.ascontiguousarray(g._data) for g in grads)
        token = FP_STATE.set(FP_IGNORE)
        try:
            dx, dwi, dwh, db, _, dh, dc = _lstm_backward(
                xa, steps, h._data, c._data, w_ih._data, w_hh._data, None, out, kept, g_h, None,
                g_c, b_ih is not None)
        finally:
            FP_STATE.reset(token)
        res = (dx, dh, dc, dwi, dwh, db, None if db is None else db.copy())
        return tuple(None if a is None or not (isinstance(t, Tensor) and t._requires_grad)
                     else wrap(a, dev) for a, t in zip(res, inputs, strict=True))

    record_outputs("AddBackward0", [c_t, h_k], inputs, backward, saved=tuple(tensors))
    record("MulBackward0", h_t, (h_k,), _pass_on)
    return h_t, c_t


def _pass_on(g: Tensor) -> tuple:
    """The backward of a node whose output is its input's value: the gradient, unchanged."""
    return (g,)


def _differentiate(reference: Callable, inputs: tuple, grads: list) -> tuple:
    """``create_graph=True``: run the layer again step by step under autograd (the readable
    path, from the saved inputs) and differentiate that, so the gradients can be
    differentiated again."""
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    with enable_grad():
        ys = [y for y in reference(*inputs) if y is not None]
    pairs = [(y, g) for y, g in zip(ys, grads) if g is not None and y._requires_grad]
    res = run_backward([y for y, _ in pairs], [g for _, g in pairs], True, STATE.enabled,
                       inputs=[inputs[i] for i in diff], allow_unused=True) if pairs else ()
    full: list = [None] * len(inputs)
    for i, g in zip(diff, res):
        full[i] = g
    return tuple(full)
