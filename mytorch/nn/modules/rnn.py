"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` (whole sequences, stacked and bidirectional) and
the single-step cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

One time step, gates in torch's order (``W_ih`` rows stacked gate after gate)::

    RNN   h' = tanh(W_ih x + b_ih + W_hh h + b_hh)                      (or relu)
    LSTM  i, f, g, o = σ, σ, tanh, σ  of  (W_ih x + b_ih + W_hh h + b_hh)   split in 4
          c' = f * c + i * g,     h' = o * tanh(c')                     (h' = W_hr h' with proj_size)
    GRU   r, z = σ(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z})
          n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),   h' = (1 - z) * n + z * h

The input projection ``W_ih x + b_ih`` does not depend on ``h``, so it is computed for all time
steps in one matrix product; only ``W_hh h`` stays inside the loop over time.

Sequences are processed in *packed* form (see ``nn.utils.rnn``): at step ``t`` only the first
``batch_sizes[t]`` sequences are still running. A padded input is the special case where every
step has the whole batch.
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable
from typing import Any

from ..._creation import empty, zeros
from ..._pieces import REGISTRY, piece, pieces
from ..._ops.shape import cat, stack
from ..._tensor import Tensor
from .. import init
from ...autograd.anomaly_mode import _anomaly
from ...autograd.node import _SAVED_HOOKS
from .._functional.dropout import dropout as _dropout
from .._functional.rnn import fused_rnn_ok, lstm_cell_step, rnn_layer
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

State = tuple[Tensor, Tensor | None]  # (h, c); c is None except for LSTM


# ----------------------------------------------------------------------------- one time step
def _hidden_part(h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    out = h.matmul(w_hh.t())
    return out if b_hh is None else out + b_hh


def _rnn_step(nonlinearity: str) -> Callable:
    def step(gx: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None,
             w_hr: Tensor | None) -> State:
        pre = gx + _hidden_part(state[0], w_hh, b_hh)
        return (pre.tanh() if nonlinearity == "tanh" else pre.relu()), None
    return step


def _lstm_cell_fast(x: Tensor, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor,
                    b_ih: Tensor | None, b_hh: Tensor | None) -> tuple:
    """:func:`lstm_cell` as one node on arrays (``_functional/rnn.py``) when the layer kernels
    would run (float host arrays, the library's own ``matmul_backward``, no saved-tensor hooks or
    anomaly mode); the readable cell otherwise."""
    if (not _SAVED_HOOKS and not _anomaly.enabled and x.dim() == 2 and h.dim() == 2
            and 4 * h.shape[1] == w_hh.shape[0]  # (an LSTM layer with proj_size: readable)
            and pieces.matmul_backward is REGISTRY["matmul_backward"].default
            and fused_rnn_ok(x, h, c, w_ih, w_hh, b_ih, b_hh)):
        return lstm_cell_step(x, h, c, w_ih, w_hh, b_ih, b_hh, lstm_cell)
    return lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh)


@piece("04.7", fast=_lstm_cell_fast)
def lstm_cell(x: "Tensor", h: "Tensor", c: "Tensor", w_ih: "Tensor", w_hh: "Tensor",
              b_ih: "Tensor | None", b_hh: "Tensor | None") -> tuple:
    """One LSTM step for a batch: input ``x`` ``(N, H_in)``, state ``h`` and ``c`` ``(N, H)``;
    ``w_ih`` ``(4H, H_in)`` and ``w_hh`` ``(4H, H)`` hold the rows of the gates i, f, g, o one
    after another (biases ``(4H,)``, or both None). Returns the new ``(h, c)``."""
    gates = x @ w_ih.t() + h @ w_hh.t()               # (N, 4H): all four gates at once
    if b_ih is not None:
        gates = gates + (b_ih + b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()      # forget some memory, write some new
    h = o.sigmoid() * c.tanh()                        # show some of it
    return h, c


def _lstm_cell_step(x: Tensor, state: State, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                    b_hh: Tensor | None, w_hr: Tensor | None) -> State:
    """One step of ``nn.LSTM`` through the piece :func:`lstm_cell` (then the projection)."""
    h, c = pieces.lstm_cell(x, state[0], state[1], w_ih, w_hh, b_ih, b_hh)
    return (h if w_hr is None else h.matmul(w_hr.t())), c


def _lstm_step(gx: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None,
               w_hr: Tensor | None) -> State:
    """One step of ``nn.LSTM`` whose input part ``gx = x W_ihᵀ + b_ih`` was computed for every
    step at once (the library's own path; a student's :func:`lstm_cell` runs step by step)."""
    h, c = state
    i, f, g, o = (gx + _hidden_part(h, w_hh, b_hh)).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = h.matmul(w_hr.t())
    return h, c


def _gru_step(gx: Tensor, state: State, w_hh: Tensor, b_hh: Tensor | None,
              w_hr: Tensor | None) -> State:
    h = state[0]
    x_r, x_z, x_n = gx.chunk(3, 1)
    h_r, h_z, h_n = _hidden_part(h, w_hh, b_hh).chunk(3, 1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * h, None


_STEPS = {"RNN_TANH": _rnn_step("tanh"), "RNN_RELU": _rnn_step("relu"), "LSTM": _lstm_step,
          "GRU": _gru_step}


# ----------------------------------------------------------------------------- over time
def _rows(state: State, start: int, stop: int) -> State:
    h, c = state
    return h[start:stop], (None if c is None else c[start:stop])


def _cat_states(parts: list[State]) -> State:
    h = cat([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
    if parts[0][1] is None:
        return h, None
    return h, (cat([p[1] for p in parts]) if len(parts) > 1 else parts[0][1])


def _run_forward(step: Callable, gx: Tensor, batch_sizes: list[int], state: State,
                 weights: tuple) -> tuple[Tensor, State]:
    """Left to right. Shorter sequences stop early: their final state is set aside."""
    outputs, finished, offset = [], [], 0
    for n in batch_sizes:
        running = state[0].shape[0]
        if n < running:
            finished.append(_rows(state, n, running))
            state = _rows(state, 0, n)
        state = step(gx[offset:offset + n], state, *weights)
        outputs.append(state[0])
        offset += n
    final = _cat_states([state] + finished[::-1])  # sequence order: longest first
    return cat(outputs), final


def _run_reverse(step: Callable, gx: Tensor, batch_sizes: list[int], state0: State,
                 weights: tuple) -> tuple[Tensor, State]:
    """Right to left. Shorter sequences *start* later, from their own initial state."""
    offsets = [0]
    for n in batch_sizes:
        offsets.append(offsets[-1] + n)
    outputs: list[Tensor] = [None] * len(batch_sizes)  # type: ignore[list-item]
    state = _rows(state0, 0, batch_sizes[-1])
    for t in range(len(batch_sizes) - 1, -1, -1):
        n = batch_sizes[t]
        running = state[0].shape[0]
        if n > running:
            state = _cat_states([state, _rows(state0, running, n)])
        state = step(gx[offsets[t]:offsets[t + 1]], state, *weights)
        outputs[t] = state[0]
    return cat(outputs), state


def _layer_reference(mode: str, batch_sizes: list[int], reverse: bool) -> Callable:
    """One layer and direction step by step (the readable path), as a function of the inputs of
    :func:`rnn_layer`'s node: what that node differentiates under ``create_graph=True``."""
    step = _STEPS[mode]
    run = _run_reverse if reverse else _run_forward

    def reference(x: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                  b_hh: Tensor | None, h0: Tensor, c0: Tensor | None, w_hr: Tensor | None
                  ) -> tuple:
        gx = x.matmul(w_ih.t())
        if b_ih is not None:
            gx = gx + b_ih
        out, (h, c) = run(step, gx, batch_sizes, (h0, c0), (w_hh, b_hh, w_hr))
        return out, h, c

    return reference


# ----------------------------------------------------------------------------- RNN, LSTM, GRU
class RNNBase(Module):
    """What RNN, LSTM and GRU share: parameters per layer and direction, checks, the loop."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first",
                     "dropout", "bidirectional", "proj_size"]

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_rnn_args(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size *= hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, real_hidden)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **factory_kwargs)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Only meaningful for cuDNN; a no-op here, as in torch on the CPU."""

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/√hidden_size, 1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # ---------------------------------------------------------------- checks
    def _out_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def check_input(self, input: Tensor, batch_sizes: Tensor | None) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Tensor | None
                                 ) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        return (self.num_layers * directions, mini_batch, self._out_size())

    @staticmethod
    def check_hidden_size(hx: Tensor, expected: tuple, msg: str = "Expected hidden size {}, got {}"
                          ) -> None:
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(expected, list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Any, batch_sizes: Tensor | None) -> None:
        self.check_input(input, batch_sizes)
        expected = self.get_expected_hidden_size(input, batch_sizes)
        if self.mode == "LSTM":
            self.check_hidden_size(hidden[0], expected, "Expected hidden[0] size {}, got {}")
            cell = (expected[0], expected[1], self.hidden_size)
            self.check_hidden_size(hidden[1], cell, "Expected hidden[1] size {}, got {}")
        else:
            self.check_hidden_size(hidden, expected)

    @staticmethod
    def permute_hidden(hx: Any, permutation: Tensor | None) -> Any:
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    # ---------------------------------------------------------------- forward
    def _zero_state(self, batch: int, like: Tensor) -> Any:
        directions = 2 if self.bidirectional else 1
        h = zeros(self.num_layers * directions, batch, self._out_size(), dtype=like.dtype,
                  device=like.device)
        if self.mode != "LSTM":
            return h
        return h, zeros(self.num_layers * directions, batch, self.hidden_size, dtype=like.dtype,
                        device=like.device)

    def _check_hx_dims(self, hx: Any, batched: bool) -> Any:
        """torch's dimension checks for a user-given ``hx``; unsqueezes an unbatched one."""
        want = 3 if batched else 2
        kind = "batched 3-D" if batched else "unbatched 2-D"
        if self.mode == "LSTM":
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            return hx if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        if hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{hx.dim()}-D tensor")
        return hx if batched else hx.unsqueeze(1)

    def forward(self, input: Any, hx: Any = None) -> tuple[Any, Any]:
        if isinstance(input, PackedSequence):
            data, batch_sizes_t, sorted_indices, unsorted_indices = input
            hx = self._zero_state(int(batch_sizes_t[0]), data) if hx is None else \
                self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, hx, batch_sizes_t)
            out, h_n = self._run(data, batch_sizes_t.tolist(), hx)
            return (PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices),
                    self.permute_hidden(h_n, unsorted_indices))
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        if input.dim() not in (2, 3):
            what = "tensor " if name == "RNN" else ""
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{what}instead")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        hx = self._zero_state(input.size(batch_dim), input) if hx is None else \
            self._check_hx_dims(hx, batched)
        self.check_forward_args(input, hx, None)
        seq = input.transpose(0, 1) if self.batch_first else input
        steps, batch = seq.shape[0], seq.shape[1]
        if steps == 0:  # nothing to run over: no output step, no final state to speak of
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        out, h_n = self._run(seq.reshape(steps * batch, seq.shape[2]), [batch] * steps, hx)
        out = out.reshape(steps, batch, out.shape[-1])
        if self.batch_first:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(batch_dim)
            h_n = tuple(h.squeeze(1) for h in h_n) if isinstance(h_n, tuple) else h_n.squeeze(1)
        return out, h_n

    def _run(self, data: Tensor, batch_sizes: list[int], hx: Any) -> tuple[Tensor, Any]:
        """All layers and directions over packed ``data``; returns (output data, final state)."""
        step = _STEPS[self.mode]
        h0, c0 = (hx if self.mode == "LSTM" else (hx, None))
        directions = 2 if self.bidirectional else 1
        finals: list[State] = []
        x = data
        fused = self._fused(data, h0, c0)
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                w = dict(zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"),
                             self._layer_weights(layer, direction), strict=False))
                state0 = (h0[k], None if c0 is None else c0[k])
                if fused:  # the whole sequence as one node (see _functional/rnn.py)
                    out, h, c = rnn_layer(self.mode, x, batch_sizes, state0[0], state0[1],
                                          *w.values(), reverse=direction == 1,
                                          reference=_layer_reference(self.mode, batch_sizes,
                                                                     direction == 1))
                    outs.append(out)
                    finals.append((h, c))
                    continue
                if self.mode == "LSTM" and pieces.lstm_cell is not REGISTRY["lstm_cell"].default:
                    # A student's cell: nn.LSTM runs step by step through it, as a loop over
                    # nn.LSTMCell would (the library's own path computes x W_ihᵀ at once).
                    this_step, gx = _lstm_cell_step, x
                    weights = (w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"],
                               w["weight_hr"])
                else:
                    this_step, gx = step, x.matmul(w["weight_ih"].t())
                    if w["bias_ih"] is not None:
                        gx = gx + w["bias_ih"]
                    weights = (w["weight_hh"], w["bias_hh"], w["weight_hr"])
                run = _run_reverse if direction == 1 else _run_forward
                out, final = run(this_step, gx, batch_sizes, state0, weights)
                outs.append(out)
                finals.append(final)
            x = cat(outs, 1) if directions == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, True)
        h_n = stack([f[0] for f in finals])
        if self.mode != "LSTM":
            return x, h_n
        return x, (h_n, stack([f[1] for f in finals]))

    def _fused(self, data: Tensor, h0: Tensor, c0: Tensor | None) -> bool:
        """Whether the layers run as whole-sequence kernels (``_functional/rnn.py``): float32 or
        float64 arrays in host memory, the library's own pieces (a student's ``lstm_cell`` or
        ``matmul_backward`` runs step by step, as the readable path), no saved-tensor hooks and
        no anomaly mode (both see the step-by-step graph)."""
        if _SAVED_HOOKS or _anomaly.enabled:
            return False
        if self.mode == "LSTM" and pieces.lstm_cell is not REGISTRY["lstm_cell"].default:
            return False
        if pieces.matmul_backward is not REGISTRY["matmul_backward"].default:
            return False
        return fused_rnn_ok(data, h0, c0, *self._flat_weights)

    def _layer_weights(self, layer: int, direction: int) -> tuple:
        suffix = "_reverse" if direction == 1 else ""

        def get(kind: str) -> Parameter | None:
            return getattr(self, f"{kind}_l{layer}{suffix}", None)

        return (get("weight_ih"), get("weight_hh"), get("bias_ih") if self.bias else None,
                get("bias_hh") if self.bias else None,
                get("weight_hr") if self.proj_size > 0 else None)


def _check_rnn_args(input_size: Any, hidden_size: Any, num_layers: int, bias: Any,
                    batch_first: Any, dropout: Any, proj_size: int) -> None:
    """torch's constructor checks, in torch's order."""
    if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
            or isinstance(dropout, bool)):
        raise ValueError("dropout should be a number in range [0, 1] representing the probability "
                         "of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}", stacklevel=4)
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` (``nonlinearity='relu'`` too).

    ``forward(input, h_0=None) -> (output, h_n)``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory: ``forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit: ``forward(input, h_0=None) -> (output, h_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ----------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """One time step: parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **factory_kwargs))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **factory_kwargs))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **factory_kwargs))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/√hidden_size, 1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _input_part(self, input: Tensor) -> Tensor:
        out = input.matmul(self.weight_ih.t())
        return out if self.bias_ih is None else out + self.bias_ih

    def _prepare(self, name: str, input: Tensor, hx: Any, n_states: int) -> tuple[Tensor, list, bool]:
        """Check dims, add a batch dim to a single sample, default the state to zeros."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = [] if hx is None else (list(hx) if n_states == 2 else [hx])
        for i, s in enumerate(states):
            if s.dim() not in (1, 2):
                what = f"hx[{i}]" if n_states == 2 else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = [s.unsqueeze(0) for s in states]
        if not states:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            states = [z] * n_states
        return input, states, batched


class RNNCell(RNNCellBase):
    """``h' = tanh(W_ih x + b_ih + W_hh h + b_hh)`` for one step."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), batched = self._prepare("RNNCell", input, hx, 1)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h, _ = _STEPS["RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"](
            self._input_part(input), (h, None), self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``forward(input, (h, c)) -> (h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        input, (h, c), batched = self._prepare("LSTMCell", input, hx, 2)
        h, c = pieces.lstm_cell(input, h, c, self.weight_ih, self.weight_hh, self.bias_ih,
                                self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, h) -> h'``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        input, (h,), batched = self._prepare("GRUCell", input, hx, 1)
        h, _ = _gru_step(self._input_part(input), (h, None), self.weight_hh, self.bias_hh, None)
        return h if batched else h.squeeze(0)
