"""Chapter 04 benchmark cases: recurrent layers over a whole sequence, forward + backward.

``nn.LSTM(32, 64)`` / ``nn.GRU(32, 64)`` / ``nn.RNN(32, 64)``, sequence 20, batch 16, float32, the
input requiring grad, the output's gradient given; every parameter's ``.grad`` is reset each call
(as ``zero_grad`` does). The NumPy column is the same layer written by hand: the input projection
for all steps in one product, a loop over time, and backpropagation through time on the stacked
gate matrices. Targets: LSTM ≤ 1.5× torch, GRU and RNN ≤ 1.0× torch (issue 16).
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .runner import Case

T, B, IN, H = 20, 16, 32, 64
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _rand(seed: int, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _weights(mode: str) -> list[np.ndarray]:
    g = GATES[mode] * H
    s = 1 / np.sqrt(H)
    return [_rand(1, g, IN, scale=s), _rand(2, g, H, scale=s), _rand(3, g, scale=s),
            _rand(4, g, scale=s)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _lstm_by_hand(x: np.ndarray, gout: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                  b_ih: np.ndarray, b_hh: np.ndarray) -> tuple:
    gx = (x.reshape(T * B, IN) @ w_ih.T + (b_ih + b_hh)).reshape(T, B, 4 * H)
    h, c = np.zeros((B, H), np.float32), np.zeros((B, H), np.float32)
    hs, cs, acts = [h], [c], []
    for t in range(T):
        z = gx[t] + h @ w_hh.T
        i, f, o = _sigmoid(z[:, :H]), _sigmoid(z[:, H:2 * H]), _sigmoid(z[:, 3 * H:])
        g = np.tanh(z[:, 2 * H:3 * H])
        c = f * c + i * g
        tc = np.tanh(c)
        h = o * tc
        hs.append(h)
        cs.append(c)
        acts.append((i, f, g, o, tc))
    dz = np.empty((T, B, 4 * H), np.float32)
    dh_next, dc = np.zeros((B, H), np.float32), np.zeros((B, H), np.float32)
    for t in range(T - 1, -1, -1):
        i, f, g, o, tc = acts[t]
        dh = gout[t] + dh_next
        dc = dc + dh * o * (1 - tc * tc)
        dz[t, :, :H] = dc * g * i * (1 - i)
        dz[t, :, H:2 * H] = dc * cs[t] * f * (1 - f)
        dz[t, :, 2 * H:3 * H] = dc * i * (1 - g * g)
        dz[t, :, 3 * H:] = dh * tc * o * (1 - o)
        dc = dc * f
        dh_next = dz[t] @ w_hh
    dz2 = dz.reshape(T * B, 4 * H)
    db = dz2.sum(0)
    return (dz2 @ w_ih, dz2.T @ x.reshape(T * B, IN),
            dz2.T @ np.stack(hs[:-1]).reshape(T * B, H), db, db)


def _gru_by_hand(x: np.ndarray, gout: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                 b_ih: np.ndarray, b_hh: np.ndarray) -> tuple:
    gx = (x.reshape(T * B, IN) @ w_ih.T + b_ih).reshape(T, B, 3 * H)
    h = np.zeros((B, H), np.float32)
    hs, acts = [h], []
    for t in range(T):
        gh = h @ w_hh.T + b_hh
        r = _sigmoid(gx[t, :, :H] + gh[:, :H])
        z = _sigmoid(gx[t, :, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gx[t, :, 2 * H:] + r * gh[:, 2 * H:])
        h = (1 - z) * n + z * h
        hs.append(h)
        acts.append((r, z, n, gh[:, 2 * H:]))
    dgx = np.empty((T, B, 3 * H), np.float32)
    dgh = np.empty((T, B, 3 * H), np.float32)
    dh_next = np.zeros((B, H), np.float32)
    for t in range(T - 1, -1, -1):
        r, z, n, ghn = acts[t]
        dh = gout[t] + dh_next
        dan = dh * (1 - z) * (1 - n * n)
        dgx[t, :, :H] = dgh[t, :, :H] = dan * ghn * r * (1 - r)
        dgx[t, :, H:2 * H] = dgh[t, :, H:2 * H] = dh * (hs[t] - n) * z * (1 - z)
        dgx[t, :, 2 * H:] = dan
        dgh[t, :, 2 * H:] = dan * r
        dh_next = dh * z + dgh[t] @ w_hh
    dgx2, dgh2 = dgx.reshape(T * B, 3 * H), dgh.reshape(T * B, 3 * H)
    return (dgx2 @ w_ih, dgx2.T @ x.reshape(T * B, IN),
            dgh2.T @ np.stack(hs[:-1]).reshape(T * B, H), dgx2.sum(0), dgh2.sum(0))


def _rnn_by_hand(x: np.ndarray, gout: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                 b_ih: np.ndarray, b_hh: np.ndarray) -> tuple:
    gx = (x.reshape(T * B, IN) @ w_ih.T + (b_ih + b_hh)).reshape(T, B, H)
    h = np.zeros((B, H), np.float32)
    hs = [h]
    for t in range(T):
        h = np.tanh(gx[t] + h @ w_hh.T)
        hs.append(h)
    da = np.empty((T, B, H), np.float32)
    dh_next = np.zeros((B, H), np.float32)
    for t in range(T - 1, -1, -1):
        da[t] = (gout[t] + dh_next) * (1 - hs[t + 1] * hs[t + 1])
        dh_next = da[t] @ w_hh
    da2 = da.reshape(T * B, H)
    db = da2.sum(0)
    return (da2 @ w_ih, da2.T @ x.reshape(T * B, IN),
            da2.T @ np.stack(hs[:-1]).reshape(T * B, H), db, db)


_BY_HAND = {"LSTM": _lstm_by_hand, "GRU": _gru_by_hand, "RNN": _rnn_by_hand}


def _layer(mode: str) -> Callable[[ModuleType], Callable[[], Any]]:
    def make(lib: ModuleType) -> Callable[[], Any]:
        x0, g0 = _rand(5, T, B, IN), _rand(6, T, B, H)
        ws = _weights(mode)
        if lib is np:
            return lambda: _BY_HAND[mode](x0, g0, *ws)
        layer = getattr(lib.nn, mode)(IN, H)
        params = [layer.weight_ih_l0, layer.weight_hh_l0, layer.bias_ih_l0, layer.bias_hh_l0]
        with lib.no_grad():
            for p, v in zip(params, ws):
                p.copy_(lib.from_numpy(v))
        x, g = lib.from_numpy(x0).requires_grad_(), lib.from_numpy(g0)

        def step() -> Any:
            x.grad = None
            for p in params:
                p.grad = None
            out = layer(x)[0]
            out.backward(g)
            return out
        return step
    return make


CASES = [
    Case("LSTM(32,64) fwd+bwd", f"seq {T}, batch {B}", _layer("LSTM"), target=("torch", 1.5)),
    Case("GRU(32,64) fwd+bwd", f"seq {T}, batch {B}", _layer("GRU"), target=("torch", 1.0)),
    Case("RNN(32,64) fwd+bwd", f"seq {T}, batch {B}", _layer("RNN"), target=("torch", 1.0)),
]
