"""Converters: how each operation (by name) and each fused module (by class) becomes ONNX nodes.

An operation converter is called as ``convert(graph, out, *args, **kwargs)`` with the arguments
the operation was called with and the result it computed; it adds nodes and binds ``out`` (each
tensor of it) to their outputs. Its parameters mirror torch's signature of the operation, so a
method (``x.softmax(1)``) and a function (``F.softmax(x, 1)``) share one converter. A module
converter is called as ``convert(graph, out, module, *args, **kwargs)``.

The shapes of the traced run are known, so a converter may read them (``_shape``); where a size
would change with a dynamic axis, the converters keep it symbolic: ``Reshape`` copies the
dimensions that stay in place (``0``), and the rest comes from ``-1``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from onnx import helper

from ._graph import Graph
from .errors import UnsupportedOperatorError

__all__ = ["OPS", "MODULES"]

OPS: dict[str, Callable] = {}
MODULES: dict[type, Callable] = {}
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


def op(*names: str) -> Callable:
    def register(fn: Callable) -> Callable:
        for n in names:
            OPS[n] = fn
        return fn
    return register


def _np(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy()


def _shape(t: Any) -> tuple[int, ...]:
    return tuple(t.shape)


def _dt(t: Any) -> np.dtype:
    return _np(t).dtype


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "detach")


def _dim(d: int, ndim: int) -> int:
    return d + ndim if d < 0 else d


def _dims(dim: Any, ndim: int) -> list[int] | None:
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    return [_dim(int(d), ndim) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]


def _unsupported(g: Graph, name: str, detail: str) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(name, g.opset, detail)


def _bind(g: Graph, out: Any, name: str) -> None:
    g.bind(out, name)


def _as(g: Graph, x: Any, dtype: np.dtype, like: Any = None) -> str:
    """``x`` (tensor or number) as a value of ``dtype``, cast if it is a tensor of another dtype."""
    if not _is_tensor(x):
        return g.const(np.asarray(x, dtype=dtype))
    name = g.value(x)
    return name if _dt(x) == dtype else g.cast(name, dtype)


# ------------------------------------------------------------------ element-wise
def _unary(onnx_op: str, **attrs: Any) -> Callable:
    def convert(g: Graph, out: Any, input: Any, *rest: Any, **kw: Any) -> None:
        _bind(g, out, g.op(onnx_op, _as(g, input, _dt(out)), **attrs))
    return convert


for _name, _onnx in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp",
                     "log": "Log", "sqrt": "Sqrt", "neg": "Neg", "negative": "Neg", "abs": "Abs",
                     "sin": "Sin", "cos": "Cos", "erf": "Erf", "reciprocal": "Reciprocal",
                     "floor": "Floor", "ceil": "Ceil", "sign": "Sign", "logical_not": "Not",
                     "softsign": "Softsign", "round": "Round"}.items():
    OPS[_name] = _unary(_onnx)
OPS["selu"] = _unary("Selu")


@op("detach", "contiguous", "clone", "cpu", "cuda", "to", "float", "double", "half", "long",
    "int", "short", "char", "byte", "bool", "type", "type_as", "data")
def _identity(g: Graph, out: Any, input: Any, *args: Any, **kwargs: Any) -> None:
    """Copies, device moves and casts."""
    _bind(g, out, _as(g, input, _dt(out)) if _dt(input) != _dt(out)
          else g.op("Identity", g.value(input)))


@op("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d")
def _dropout(g: Graph, out: Any, input: Any, p: float = 0.5, training: bool = True,
             inplace: bool = False) -> None:
    """Dropout in evaluation is the identity; in training it cannot be exported."""
    if training and p > 0:
        raise _unsupported(g, "dropout", "dropout in training mode (call model.eval(), or pass "
                           "training=self.training to F.dropout)")
    _bind(g, out, g.op("Identity", g.value(input)))


def _operands(g: Graph, out: Any, *xs: Any) -> list[str]:
    """The operands in the dtype the result has (torch's promotion), numbers included."""
    tensors = [x for x in xs if _is_tensor(x)]
    dtype = _dt(out) if _dt(out) != np.bool_ else np.result_type(*[_dt(t) for t in tensors])
    return [_as(g, x, dtype) for x in xs]


def _binary(onnx_op: str, swap: bool = False) -> Callable:
    def convert(g: Graph, out: Any, input: Any, other: Any, *rest: Any, alpha: Any = 1,
                **kw: Any) -> None:
        a, b = _operands(g, out, input, other)
        if alpha != 1:
            b = g.op("Mul", b, _as(g, alpha, _dt(out)))
        _bind(g, out, g.op(onnx_op, *((b, a) if swap else (a, b))))
    return convert


for _name, _onnx in {"add": "Add", "sub": "Sub", "subtract": "Sub", "mul": "Mul",
                     "multiply": "Mul", "div": "Div", "divide": "Div", "true_divide": "Div",
                     "maximum": "Max", "minimum": "Min", "eq": "Equal", "lt": "Less",
                     "gt": "Greater", "le": "LessOrEqual", "ge": "GreaterOrEqual",
                     "logical_and": "And", "logical_or": "Or", "matmul": "MatMul", "mm": "MatMul",
                     "bmm": "MatMul"}.items():
    OPS[_name] = _binary(_onnx)
OPS.update(radd=_binary("Add", swap=True), rsub=_binary("Sub", swap=True),
           rdiv=_binary("Div", swap=True), rmatmul=_binary("MatMul", swap=True))


@op("pow")
def _pow(g: Graph, out: Any, input: Any, exponent: Any) -> None:
    base = _as(g, input, _dt(out))
    _bind(g, out, g.op("Pow", base, _as(g, exponent, _dt(out))))


@op("rpow")
def _rpow(g: Graph, out: Any, input: Any, other: Any) -> None:
    _bind(g, out, g.op("Pow", _as(g, other, _dt(out)), _as(g, input, _dt(out))))


@op("ne")
def _ne(g: Graph, out: Any, input: Any, other: Any) -> None:
    _bind(g, out, g.op("Not", g.op("Equal", *_operands(g, out, input, other))))


@op("rsqrt")
def _rsqrt(g: Graph, out: Any, input: Any) -> None:
    _bind(g, out, g.op("Reciprocal", g.op("Sqrt", _as(g, input, _dt(out)))))


@op("where")
def _where(g: Graph, out: Any, condition: Any, input: Any = None, other: Any = None) -> None:
    if input is None:
        raise _unsupported(g, "where", "the one-argument form (nonzero)")
    a, b = _operands(g, out, input, other)
    _bind(g, out, g.op("Where", _as(g, condition, np.dtype(bool)), a, b))


@op("masked_fill")
def _masked_fill(g: Graph, out: Any, input: Any, mask: Any, value: Any) -> None:
    a, v = _operands(g, out, input, value)
    _bind(g, out, g.op("Where", _as(g, mask, np.dtype(bool)), v, a))


@op("clamp", "clip")
def _clamp(g: Graph, out: Any, input: Any, min: Any = None, max: Any = None) -> None:
    dt = _dt(out)
    _bind(g, out, g.op("Clip", _as(g, input, dt), "" if min is None else _as(g, min, dt),
                       "" if max is None else _as(g, max, dt)))


# ------------------------------------------------------------------ activations
@op("gelu")
def _gelu(g: Graph, out: Any, input: Any, approximate: str = "none") -> None:
    dt = _dt(out)
    x = g.value(input)
    half_x = g.op("Mul", x, g.const(np.asarray(0.5, dt)))
    if approximate == "tanh":  # 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, g.const(np.asarray(0.044715, dt))))
        t = g.op("Tanh", g.op("Mul", inner, g.const(np.asarray(math.sqrt(2 / math.pi), dt))))
    else:  # 0.5 x (1 + erf(x / √2))
        t = g.op("Erf", g.op("Div", x, g.const(np.asarray(math.sqrt(2.0), dt))))
    _bind(g, out, g.op("Mul", half_x, g.op("Add", t, g.const(np.asarray(1, dt)))))


@op("silu")
def _silu(g: Graph, out: Any, input: Any, inplace: bool = False) -> None:
    x = g.value(input)
    _bind(g, out, g.op("Mul", x, g.op("Sigmoid", x)))


@op("leaky_relu")
def _leaky_relu(g: Graph, out: Any, input: Any, negative_slope: float = 0.01,
                inplace: bool = False) -> None:
    _bind(g, out, g.op("LeakyRelu", g.value(input), alpha=float(negative_slope)))


@op("elu")
def _elu(g: Graph, out: Any, input: Any, alpha: float = 1.0, inplace: bool = False) -> None:
    _bind(g, out, g.op("Elu", g.value(input), alpha=float(alpha)))


@op("softplus")
def _softplus(g: Graph, out: Any, input: Any, beta: float = 1.0, threshold: float = 20.0) -> None:
    dt, x = _dt(out), g.value(input)
    bx = g.op("Mul", x, g.const(np.asarray(beta, dt)))
    soft = g.op("Div", g.op("Softplus", bx), g.const(np.asarray(beta, dt)))
    _bind(g, out, g.op("Where", g.op("Greater", bx, g.const(np.asarray(threshold, dt))), x, soft))


@op("logsigmoid")
def _logsigmoid(g: Graph, out: Any, input: Any) -> None:
    _bind(g, out, g.op("Neg", g.op("Softplus", g.op("Neg", g.value(input)))))


def _clip(g: Graph, out: Any, input: Any, lo: float, hi: float) -> None:
    dt = _dt(out)
    _bind(g, out, g.op("Clip", g.value(input), g.const(np.asarray(lo, dt)),
                       g.const(np.asarray(hi, dt))))


@op("hardtanh")
def _hardtanh(g: Graph, out: Any, input: Any, min_val: float = -1.0, max_val: float = 1.0,
              inplace: bool = False) -> None:
    _clip(g, out, input, min_val, max_val)


@op("relu6")
def _relu6(g: Graph, out: Any, input: Any, inplace: bool = False) -> None:
    _clip(g, out, input, 0.0, 6.0)


def _softmax_like(onnx_op: str, negate: bool = False) -> Callable:
    def convert(g: Graph, out: Any, input: Any, dim: Any = None, _stacklevel: int = 3,
                dtype: Any = None) -> None:
        if dim is None:  # torch's implicit choice for old code: 0 for 0-, 1- and 3-D, else 1
            dim = 0 if input.dim() in (0, 1, 3) else 1
        x = _as(g, input, _dt(out))
        if negate:
            x = g.op("Neg", x)
        _bind(g, out, g.op(onnx_op, x, axis=_dim(int(dim), max(input.dim(), 1))))
    return convert


OPS.update(softmax=_softmax_like("Softmax"), log_softmax=_softmax_like("LogSoftmax"),
           softmin=_softmax_like("Softmax", negate=True))


# ------------------------------------------------------------------ shapes
def _reshape_to(g: Graph, out: Any, input: Any, target: Sequence[int]) -> None:
    """Reshape keeping in-place dimensions symbolic (``0``: copy), so dynamic axes survive."""
    src = _shape(input)
    spec = [0 if i < len(src) and t == src[i] and t != 0 else int(t) for i, t in enumerate(target)]
    _bind(g, out, g.op("Reshape", g.value(input), g.ints(spec)))


@op("view", "reshape")
def _view(g: Graph, out: Any, input: Any, *shape: Any) -> None:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    if any(not isinstance(s, (int, np.integer)) for s in shape):  # view(dtype)
        raise _unsupported(g, "view", "view with a dtype")
    # a -1 keeps its place; other sizes come from the traced run
    target = [int(s) if int(s) == -1 else o for s, o in zip(shape, _shape(out))]
    _reshape_to(g, out, input, target)


@op("flatten")
def _flatten(g: Graph, out: Any, input: Any, start_dim: int = 0, end_dim: int = -1) -> None:
    n = max(input.dim(), 1)
    s, e = _dim(start_dim, n), _dim(end_dim, n)
    if e == n - 1 and s >= 1:
        _bind(g, out, g.op("Flatten", g.value(input), axis=s))
        return
    src = _shape(input)
    _reshape_to(g, out, input, list(src[:s]) + [-1] + list(src[e + 1:]))


@op("unflatten")
def _unflatten(g: Graph, out: Any, input: Any, dim: int, sizes: Sequence[int]) -> None:
    _reshape_to(g, out, input, list(_shape(out)))


@op("squeeze")
def _squeeze(g: Graph, out: Any, input: Any, dim: Any = None) -> None:
    dims = _dims(dim, input.dim())
    if dims is None:
        dims = [i for i, s in enumerate(_shape(input)) if s == 1]
    dims = [d for d in dims if _shape(input)[d] == 1]
    _bind(g, out, g.op("Squeeze", g.value(input), g.ints(dims)) if dims
          else g.op("Identity", g.value(input)))


@op("unsqueeze")
def _unsqueeze(g: Graph, out: Any, input: Any, dim: int) -> None:
    _bind(g, out, g.op("Unsqueeze", g.value(input), g.ints([_dim(dim, input.dim() + 1)])))


@op("transpose", "swapaxes", "swapdims")
def _transpose(g: Graph, out: Any, input: Any, dim0: int, dim1: int) -> None:
    n = input.dim()
    perm = list(range(n))
    a, b = _dim(dim0, n), _dim(dim1, n)
    perm[a], perm[b] = perm[b], perm[a]
    _bind(g, out, g.op("Transpose", g.value(input), perm=perm))


@op("t", "T")
def _t(g: Graph, out: Any, input: Any) -> None:
    _bind(g, out, g.op("Transpose", g.value(input), perm=list(range(input.dim()))[::-1]))


@op("mT")
def _mT(g: Graph, out: Any, input: Any) -> None:
    perm = list(range(input.dim()))
    perm[-2:] = perm[-1], perm[-2]
    _bind(g, out, g.op("Transpose", g.value(input), perm=perm))


@op("permute")
def _permute(g: Graph, out: Any, input: Any, *dims: Any) -> None:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    _bind(g, out, g.op("Transpose", g.value(input), perm=[_dim(d, input.dim()) for d in dims]))


@op("cat", "concat", "concatenate")
def _cat(g: Graph, out: Any, tensors: Sequence[Any], dim: int = 0) -> None:
    parts = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    names = _operands(g, out, *parts)
    _bind(g, out, g.op("Concat", *names, axis=_dim(dim, out.dim())))


@op("stack")
def _stack(g: Graph, out: Any, tensors: Sequence[Any], dim: int = 0) -> None:
    axis = _dim(dim, out.dim())
    names = [g.op("Unsqueeze", n, g.ints([axis])) for n in _operands(g, out, *tensors)]
    _bind(g, out, g.op("Concat", *names, axis=axis))


def _split_out(g: Graph, outs: Sequence[Any], input: Any, dim: int) -> None:
    axis = _dim(dim, input.dim())
    sizes = [o.shape[axis] for o in outs]
    names = g.op("Split", g.value(input), g.ints(sizes), axis=axis, outputs=len(outs))
    for o, n in zip(outs, names if len(outs) > 1 else [names]):
        _bind(g, o, n)


@op("split")
def _split(g: Graph, out: Any, tensor: Any, split_size_or_sections: Any, dim: int = 0) -> None:
    _split_out(g, out, tensor, dim)


@op("chunk", "tensor_split")
def _chunk(g: Graph, out: Any, input: Any, chunks: Any, dim: int = 0) -> None:
    _split_out(g, out, input, dim)


@op("unbind")
def _unbind(g: Graph, out: Any, input: Any, dim: int = 0) -> None:
    axis = _dim(dim, input.dim())
    names = g.op("Split", g.value(input), g.ints([1] * len(out)), axis=axis, outputs=len(out))
    for o, n in zip(out, names if len(out) > 1 else [names]):
        _bind(g, o, g.op("Squeeze", n, g.ints([axis])))


@op("expand")
def _expand(g: Graph, out: Any, input: Any, *sizes: Any) -> None:
    _bind(g, out, g.op("Expand", g.value(input), g.ints(_shape(out))))


@op("expand_as")
def _expand_as(g: Graph, out: Any, input: Any, other: Any) -> None:
    _bind(g, out, g.op("Expand", g.value(input), g.op("Shape", g.value(other))))


@op("getitem")
def _getitem(g: Graph, out: Any, input: Any, index: Any) -> None:
    """Basic indexing (ints, slices, None, ...) and one integer tensor index, left to right."""
    parts = list(index) if isinstance(index, tuple) else [index]
    used = sum(1 for p in parts if p is not None and p is not Ellipsis)
    x, ax, tensors = g.value(input), 0, 0
    for p in parts:
        if p is None:
            x = g.op("Unsqueeze", x, g.ints([ax]))
            ax += 1
        elif p is Ellipsis:
            ax += input.dim() - used
        elif isinstance(p, slice):
            if p != slice(None):
                step = 1 if p.step is None else int(p.step)
                start = p.start if p.start is not None else (0 if step > 0 else -1)
                stop = p.stop if p.stop is not None else (_INT64_MAX if step > 0 else _INT64_MIN)
                x = g.op("Slice", x, g.ints([int(start)]), g.ints([int(stop)]), g.ints([ax]),
                         g.ints([step]))
            ax += 1
        elif isinstance(p, (int, np.integer)):
            x = g.op("Gather", x, g.const(np.asarray(int(p), np.int64)), axis=ax)
        elif (_is_tensor(p) and _dt(p).kind in "iu" or isinstance(p, list)
              and all(isinstance(i, (int, np.integer)) for i in p)) and tensors == 0:
            idx = _as(g, p, np.dtype(np.int64)) if _is_tensor(p) else g.ints(p)
            x = g.op("Gather", x, idx, axis=ax)
            ax += p.dim() if _is_tensor(p) else 1
            tensors += 1
        else:
            raise _unsupported(g, "getitem", f"an index of type {type(p).__name__} "
                               "(boolean masks, several tensor indices)")
    _bind(g, out, x if x != g.value(input) else g.op("Identity", x))


@op("pad")
def _pad(g: Graph, out: Any, input: Any, pad: Sequence[int], mode: str = "constant",
         value: Any = None) -> None:
    """torch lists (left, right) pairs from the last dimension back; ONNX all begins, then ends."""
    n = input.dim()
    begins, ends = [0] * n, [0] * n
    for i in range(len(pad) // 2):
        begins[n - 1 - i], ends[n - 1 - i] = int(pad[2 * i]), int(pad[2 * i + 1])
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                 "circular": "wrap"}.get(mode)
    if onnx_mode is None or (onnx_mode == "wrap" and g.opset < 19) or min(begins + ends) < 0:
        raise _unsupported(g, "pad", f"mode={mode!r} (circular needs opset 19), or negative pads")
    ins = [g.value(input), g.ints(begins + ends)]
    if onnx_mode == "constant":
        ins.append(g.const(np.asarray(0 if value is None else value, _dt(out))))
    _bind(g, out, g.op("Pad", *ins, mode=onnx_mode))


# ------------------------------------------------------------------ reductions
def _reduction(onnx_op: str) -> Callable:
    def convert(g: Graph, out: Any, input: Any, dim: Any = None, keepdim: bool = False,
                *, dtype: Any = None, **kw: Any) -> None:
        if isinstance(out, tuple):  # max(dim) -> (values, indices)
            raise _unsupported(g, onnx_op, "a reduction that returns indices")
        _bind(g, out, g.reduce(onnx_op, _as(g, input, _dt(out)), _dims(dim, input.dim()), keepdim))
    return convert


OPS.update(sum=_reduction("ReduceSum"), mean=_reduction("ReduceMean"), amax=_reduction("ReduceMax"),
           amin=_reduction("ReduceMin"), prod=_reduction("ReduceProd"))


def _max_min(onnx_op: str, arg_op: str) -> Callable:
    def convert(g: Graph, out: Any, input: Any, dim: Any = None, keepdim: bool = False) -> None:
        if _is_tensor(dim):  # torch.max(a, b): element-wise
            _binary("Max" if onnx_op == "ReduceMax" else "Min")(g, out, input, dim)
            return
        if dim is None:
            _bind(g, out, g.reduce(onnx_op, g.value(input), None, False))
            return
        d = _dim(dim, input.dim())
        _bind(g, out[0], g.reduce(onnx_op, g.value(input), [d], keepdim))
        _bind(g, out[1], g.op(arg_op, g.value(input), axis=d, keepdims=int(keepdim)))
    return convert


OPS.update(max=_max_min("ReduceMax", "ArgMax"), min=_max_min("ReduceMin", "ArgMin"))


def _arg(onnx_op: str) -> Callable:
    def convert(g: Graph, out: Any, input: Any, dim: Any = None, keepdim: bool = False) -> None:
        x = g.value(input)
        if dim is None:
            x, dim = g.op("Reshape", x, g.ints([-1])), 0
        _bind(g, out, g.op(onnx_op, x, axis=_dim(dim, max(input.dim(), 1)), keepdims=int(keepdim)))
    return convert


OPS.update(argmax=_arg("ArgMax"), argmin=_arg("ArgMin"))


# ------------------------------------------------------------------ layers
@op("linear")
def _linear(g: Graph, out: Any, input: Any, weight: Any, bias: Any = None) -> None:
    x, w = g.value(input), g.value(weight)
    if input.dim() == 2 and weight.dim() == 2:
        _bind(g, out, g.op("Gemm", x, w, *([g.value(bias)] if bias is not None else []), transB=1))
        return
    y = g.op("MatMul", x, g.op("Transpose", w, perm=list(range(weight.dim()))[::-1]))
    _bind(g, out, y if bias is None else g.op("Add", y, g.value(bias)))


def _tuple(v: Any, n: int) -> list[int]:
    return [int(a) for a in v] if isinstance(v, (tuple, list)) else [int(v)] * n


def _conv(n: int) -> Callable:
    def convert(g: Graph, out: Any, input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                padding: Any = 0, dilation: Any = 1, groups: int = 1) -> None:
        kernel = list(_shape(weight)[2:])
        dil = _tuple(dilation, n)
        if padding == "same":
            total = [d * (k - 1) for d, k in zip(dil, kernel)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            p = [0] * n if padding == "valid" else _tuple(padding, n)
            pads = p + p
        ins = [g.value(input), g.value(weight)] + ([g.value(bias)] if bias is not None else [])
        _bind(g, out, g.op("Conv", *ins, kernel_shape=kernel, strides=_tuple(stride, n),
                           pads=pads, dilations=dil, group=int(groups)))
    return convert


OPS.update(conv1d=_conv(1), conv2d=_conv(2), conv3d=_conv(3))


def _conv_transpose(n: int) -> Callable:
    def convert(g: Graph, out: Any, input: Any, weight: Any, bias: Any = None, stride: Any = 1,
                padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                dilation: Any = 1) -> None:
        p = _tuple(padding, n)
        ins = [g.value(input), g.value(weight)] + ([g.value(bias)] if bias is not None else [])
        _bind(g, out, g.op("ConvTranspose", *ins, kernel_shape=list(_shape(weight)[2:]),
                           strides=_tuple(stride, n), pads=p + p, dilations=_tuple(dilation, n),
                           output_padding=_tuple(output_padding, n), group=int(groups)))
    return convert


OPS.update(conv_transpose1d=_conv_transpose(1), conv_transpose2d=_conv_transpose(2),
           conv_transpose3d=_conv_transpose(3))


def _max_pool(n: int) -> Callable:
    def convert(g: Graph, out: Any, input: Any, kernel_size: Any, stride: Any = None,
                padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                return_indices: bool = False) -> None:
        if return_indices or isinstance(out, tuple):
            raise _unsupported(g, f"max_pool{n}d", "return_indices=True")
        k = _tuple(kernel_size, n)
        s = k if stride is None or stride == [] else _tuple(stride, n)
        p = _tuple(padding, n)
        _bind(g, out, g.op("MaxPool", g.value(input), kernel_shape=k, strides=s, pads=p + p,
                           dilations=_tuple(dilation, n), ceil_mode=int(ceil_mode)))
    return convert


def _avg_pool(n: int) -> Callable:
    def convert(g: Graph, out: Any, input: Any, kernel_size: Any, stride: Any = None,
                padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                divisor_override: Any = None) -> None:
        if divisor_override is not None:
            raise _unsupported(g, f"avg_pool{n}d", "divisor_override")
        k = _tuple(kernel_size, n)
        s = k if stride is None or stride == [] else _tuple(stride, n)
        p = _tuple(padding, n)
        _bind(g, out, g.op("AveragePool", g.value(input), kernel_shape=k, strides=s, pads=p + p,
                           ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad)))
    return convert


def _adaptive_avg_pool(n: int) -> Callable:
    def convert(g: Graph, out: Any, input: Any, output_size: Any) -> None:
        src, dst = _shape(input)[-n:], _shape(out)[-n:]
        if all(d == 1 for d in dst):
            _bind(g, out, g.op("GlobalAveragePool", g.value(input)))
        elif all(s % d == 0 for s, d in zip(src, dst)):
            k = [s // d for s, d in zip(src, dst)]
            _bind(g, out, g.op("AveragePool", g.value(input), kernel_shape=k, strides=k))
        else:
            raise _unsupported(g, f"adaptive_avg_pool{n}d", "an output size that does not divide "
                               "the input size")
    return convert


for _n in (1, 2, 3):
    OPS[f"max_pool{_n}d"] = _max_pool(_n)
    OPS[f"avg_pool{_n}d"] = _avg_pool(_n)
    OPS[f"adaptive_avg_pool{_n}d"] = _adaptive_avg_pool(_n)


@op("batch_norm")
def _batch_norm(g: Graph, out: Any, input: Any, running_mean: Any, running_var: Any,
                weight: Any = None, bias: Any = None, training: bool = False,
                momentum: float = 0.1, eps: float = 1e-5) -> None:
    if training or running_mean is None:
        raise _unsupported(g, "batch_norm", "batch statistics (training mode): call model.eval()")
    c, dt = _shape(input)[1], _dt(out)
    scale = g.value(weight) if weight is not None else g.const(np.ones(c, dt))
    shift = g.value(bias) if bias is not None else g.const(np.zeros(c, dt))
    _bind(g, out, g.op("BatchNormalization", g.value(input), scale, shift, g.value(running_mean),
                       g.value(running_var), epsilon=float(eps)))


@op("layer_norm")
def _layer_norm(g: Graph, out: Any, input: Any, normalized_shape: Any, weight: Any = None,
                bias: Any = None, eps: float = 1e-5) -> None:
    shape = _tuple(normalized_shape, 1)
    dt = _dt(out)
    if g.opset < 17:
        raise _unsupported(g, "layer_norm", "LayerNormalization needs opset 17 or later")
    scale = g.value(weight) if weight is not None else g.const(np.ones(shape, dt))
    ins = [g.value(input), scale] + ([g.value(bias)] if bias is not None else [])
    _bind(g, out, g.op("LayerNormalization", *ins, axis=-len(shape), epsilon=float(eps)))


@op("instance_norm")
def _instance_norm(g: Graph, out: Any, input: Any, running_mean: Any = None, running_var: Any = None,
                   weight: Any = None, bias: Any = None, use_input_stats: bool = True,
                   momentum: float = 0.1, eps: float = 1e-5) -> None:
    if not use_input_stats:
        raise _unsupported(g, "instance_norm", "running statistics (track_running_stats in eval)")
    c, dt = _shape(input)[1], _dt(out)
    scale = g.value(weight) if weight is not None else g.const(np.ones(c, dt))
    shift = g.value(bias) if bias is not None else g.const(np.zeros(c, dt))
    _bind(g, out, g.op("InstanceNormalization", g.value(input), scale, shift, epsilon=float(eps)))


@op("group_norm")
def _group_norm(g: Graph, out: Any, input: Any, num_groups: int, weight: Any = None,
                bias: Any = None, eps: float = 1e-5) -> None:
    """Each group of channels normalised as one: InstanceNormalization over (N, groups, rest)."""
    dt, G = _dt(out), int(num_groups)
    x = g.value(input)
    grouped = g.op("Reshape", x, g.ints([0, G, -1]))
    normed = g.op("InstanceNormalization", grouped, g.const(np.ones(G, dt)),
                  g.const(np.zeros(G, dt)), epsilon=float(eps))
    y = g.op("Reshape", normed, g.op("Shape", x))
    per_channel = [_shape(input)[1]] + [1] * (input.dim() - 2)
    if weight is not None:
        y = g.op("Mul", y, g.op("Reshape", g.value(weight), g.ints(per_channel)))
    if bias is not None:
        y = g.op("Add", y, g.op("Reshape", g.value(bias), g.ints(per_channel)))
    _bind(g, out, y)


@op("interpolate", "upsample")
def _interpolate(g: Graph, out: Any, input: Any, size: Any = None, scale_factor: Any = None,
                 mode: str = "nearest", align_corners: Any = None, recompute_scale_factor: Any = None,
                 antialias: bool = False) -> None:
    """Resize: by the scale factor when given (so other input sizes scale too), else to the size."""
    modes = {"nearest": ("nearest", "asymmetric"), "linear": ("linear", None),
             "bilinear": ("linear", None), "trilinear": ("linear", None)}
    if mode not in modes or antialias:
        raise _unsupported(g, "interpolate", f"mode={mode!r} (nearest and (bi/tri)linear only)")
    onnx_mode, coords = modes[mode]
    if coords is None:
        coords = "align_corners" if align_corners else "pytorch_half_pixel"
    n = input.dim() - 2
    x = g.value(input)
    if scale_factor is not None and not recompute_scale_factor:
        scales = [1.0, 1.0] + [float(s) for s in (scale_factor if isinstance(scale_factor, (tuple, list))
                                                  else [scale_factor] * n)]
        res = g.op("Resize", x, "", g.const(np.asarray(scales, np.float32)), mode=onnx_mode,
                   coordinate_transformation_mode=coords, nearest_mode="floor")
    else:
        sizes = g.op("Concat", g.op("Slice", g.op("Shape", x), g.ints([0]), g.ints([2])),
                     g.ints(_shape(out)[2:]), axis=0)
        res = g.op("Resize", x, "", "", sizes, mode=onnx_mode,
                   coordinate_transformation_mode=coords, nearest_mode="floor")
    _bind(g, out, res)


@op("embedding")
def _embedding(g: Graph, out: Any, input: Any, weight: Any, padding_idx: Any = None,
               max_norm: Any = None, *args: Any, **kwargs: Any) -> None:
    if max_norm is not None:
        raise _unsupported(g, "embedding", "max_norm (it renormalises the weight in place)")
    _bind(g, out, g.op("Gather", g.value(weight), _as(g, input, np.dtype(np.int64))))


# ------------------------------------------------------------------ attention
def _attention(g: Graph, q: str, k: str, v: str, scale: float, dt: np.dtype,
               mask: str | None) -> tuple[str, str]:
    """softmax(q kᵀ · scale + mask) v over (B, L, E) values; returns (output, weights)."""
    scores = g.op("MatMul", g.op("Mul", q, g.const(np.asarray(scale, dt))),
                  g.op("Transpose", k, perm=[0, 2, 1]))
    if mask is not None:
        scores = g.op("Add", scores, mask)
    weights = g.op("Softmax", scores, axis=-1)
    return g.op("MatMul", weights, v), weights


def _additive_mask(g: Graph, mask: Any, dt: np.dtype, allowed_if_true: bool) -> str:
    """A float mask to add to the scores (a boolean one becomes 0 / -inf)."""
    if _dt(mask) != np.bool_:
        return _as(g, mask, dt)
    m = g.value(mask)
    zero, ninf = g.const(np.asarray(0, dt)), g.const(np.asarray(-np.inf, dt))
    return g.op("Where", m, zero, ninf) if allowed_if_true else g.op("Where", m, ninf, zero)


@op("scaled_dot_product_attention")
def _sdpa(g: Graph, out: Any, query: Any, key: Any, value: Any, attn_mask: Any = None,
          dropout_p: float = 0.0, is_causal: bool = False, scale: Any = None,
          enable_gqa: bool = False) -> None:
    if query.dim() not in (3, 4) or enable_gqa:
        raise _unsupported(g, "scaled_dot_product_attention", "inputs other than 3-D or 4-D")
    dt = _dt(out)
    L, S, E = _shape(query)[-2], _shape(key)[-2], _shape(query)[-1]
    mask = None
    if is_causal:
        mask = g.const(np.where(np.tril(np.ones((L, S), bool)), 0, -np.inf).astype(dt))
    elif attn_mask is not None:
        mask = _additive_mask(g, attn_mask, dt, allowed_if_true=True)
    perm = list(range(query.dim() - 2)) + [query.dim() - 1, query.dim() - 2]
    s = g.const(np.asarray(1 / math.sqrt(E) if scale is None else scale, dt))
    scores = g.op("MatMul", g.op("Mul", g.value(query), s), g.op("Transpose", g.value(key), perm=perm))
    if mask is not None:
        scores = g.op("Add", scores, mask)
    _bind(g, out, g.op("MatMul", g.op("Softmax", scores, axis=-1), g.value(value)))


@op("multi_head_attention_forward")
def _mha(g: Graph, out: Any, query: Any, key: Any, value: Any, embed_dim_to_check: int,
         num_heads: int, in_proj_weight: Any, in_proj_bias: Any, bias_k: Any, bias_v: Any,
         add_zero_attn: bool, dropout_p: float, out_proj_weight: Any, out_proj_bias: Any,
         training: bool = True, key_padding_mask: Any = None, need_weights: bool = True,
         attn_mask: Any = None, use_separate_proj_weight: bool = False, q_proj_weight: Any = None,
         k_proj_weight: Any = None, v_proj_weight: Any = None, static_k: Any = None,
         static_v: Any = None, average_attn_weights: bool = True, is_causal: bool = False) -> None:
    """Sequence-first (L, N, E) multi-head attention as MatMuls, Reshapes and a Softmax."""
    if query.dim() != 3 or bias_k is not None or add_zero_attn or static_k is not None:
        raise _unsupported(g, "multi_head_attention_forward",
                           "unbatched inputs, add_bias_kv, add_zero_attn or static keys")
    if training and dropout_p > 0:
        raise _unsupported(g, "multi_head_attention_forward", "attention dropout in training mode")
    dt, E, H = _dt(out[0]), _shape(query)[2], int(num_heads)
    hd = E // H
    if use_separate_proj_weight:
        ws = [_np(q_proj_weight), _np(k_proj_weight), _np(v_proj_weight)]
    else:
        ws = list(np.split(_np(in_proj_weight), 3))
    bs = list(np.split(_np(in_proj_bias), 3)) if in_proj_bias is not None else [None] * 3

    def heads(x: Any, w: np.ndarray, b: np.ndarray | None) -> str:
        y = g.op("MatMul", g.value(x), g.const(np.ascontiguousarray(w.T)))
        if b is not None:
            y = g.op("Add", y, g.const(b))
        y = g.op("Reshape", y, g.ints([0, -1, hd]))        # (L, N·H, hd)
        return g.op("Transpose", y, perm=[1, 0, 2])         # (N·H, L, hd)

    q, k, v = heads(query, ws[0], bs[0]), heads(key, ws[1], bs[1]), heads(value, ws[2], bs[2])
    mask = None
    if attn_mask is not None:
        mask = _additive_mask(g, attn_mask, dt, allowed_if_true=False)
    if key_padding_mask is not None:  # (N, S) -> (N·H, 1, S)
        kpm = _additive_mask(g, key_padding_mask, dt, allowed_if_true=False)
        kpm = g.op("Expand", g.op("Unsqueeze", kpm, g.ints([1])), g.ints([1, H, 1]))
        kpm = g.op("Reshape", kpm, g.ints([-1, 1, 0]))
        mask = kpm if mask is None else g.op("Add", mask, kpm)
    o, weights = _attention(g, q, k, v, 1 / math.sqrt(hd), dt, mask)
    o = g.op("Reshape", g.op("Transpose", o, perm=[1, 0, 2]), g.ints([0, -1, E]))  # (L, N, E)
    o = g.op("MatMul", o, g.op("Transpose", g.value(out_proj_weight), perm=[1, 0]))
    if out_proj_bias is not None:
        o = g.op("Add", o, g.value(out_proj_bias))
    _bind(g, out[0], o)
    if out[1] is not None:  # (N·H, L, S) -> (N, H, L, S), averaged over heads unless asked not to
        tail = g.op("Slice", g.op("Shape", weights), g.ints([1]), g.ints([3]))
        w4 = g.op("Reshape", weights, g.op("Concat", g.ints([-1, H]), tail, axis=0))
        _bind(g, out[1], g.reduce("ReduceMean", w4, [1], False) if average_attn_weights else w4)


# ------------------------------------------------------------------ losses
def _reduce_loss(g: Graph, loss: str, reduction: str) -> str:
    if reduction == "mean":
        return g.reduce("ReduceMean", loss, None, False)
    if reduction == "sum":
        return g.reduce("ReduceSum", loss, None, False)
    return loss


def _pointwise_loss(squared: bool) -> Callable:
    def convert(g: Graph, out: Any, input: Any, target: Any, size_average: Any = None,
                reduce: Any = None, reduction: str = "mean", weight: Any = None) -> None:
        d = g.op("Sub", *_operands(g, out, input, target))
        _bind(g, out, _reduce_loss(g, g.op("Mul", d, d) if squared else g.op("Abs", d), reduction))
    return convert


OPS.update(mse_loss=_pointwise_loss(True), l1_loss=_pointwise_loss(False))


def _smooth(g: Graph, out: Any, input: Any, target: Any, beta: float, scale: float,
            reduction: str) -> None:
    """``0.5 d²/β`` below ``β``, ``|d| - 0.5β`` above, times ``scale`` (Huber: β = δ, scale δ)."""
    dt = _dt(out)
    d = g.op("Abs", g.op("Sub", *_operands(g, out, input, target)))
    c = lambda v: g.const(np.asarray(v, dt))  # noqa: E731
    if beta == 0:
        loss = d
    else:
        quad = g.op("Div", g.op("Mul", g.op("Mul", d, d), c(0.5)), c(beta))
        loss = g.op("Where", g.op("Less", d, c(beta)), quad, g.op("Sub", d, c(0.5 * beta)))
    if scale != 1:
        loss = g.op("Mul", loss, c(scale))
    _bind(g, out, _reduce_loss(g, loss, reduction))


@op("smooth_l1_loss")
def _smooth_l1(g: Graph, out: Any, input: Any, target: Any, size_average: Any = None,
               reduce: Any = None, reduction: str = "mean", beta: float = 1.0) -> None:
    _smooth(g, out, input, target, float(beta), 1.0, reduction)


@op("huber_loss")
def _huber(g: Graph, out: Any, input: Any, target: Any, reduction: str = "mean",
           delta: float = 1.0, weight: Any = None) -> None:
    if weight is not None:
        raise _unsupported(g, "huber_loss", "weight")
    _smooth(g, out, input, target, float(delta), float(delta), reduction)


@op("kl_div")
def _kl_div(g: Graph, out: Any, input: Any, target: Any, size_average: Any = None,
            reduce: Any = None, reduction: str = "mean", log_target: bool = False) -> None:
    """``target · (log target - input)`` (``0 · log 0`` is 0), or with a log target."""
    dt = _dt(out)
    x, t = _operands(g, out, input, target)
    if log_target:
        loss = g.op("Mul", g.op("Exp", t), g.op("Sub", t, x))
    else:
        zero = g.const(np.asarray(0, dt))
        is_zero = g.op("Equal", t, zero)  # xlogy: 0 at t = 0, NaN below (as torch)
        safe_log = g.op("Log", g.op("Where", is_zero, g.const(np.asarray(1, dt)), t))
        loss = g.op("Where", is_zero, g.op("Neg", g.op("Mul", t, x)),
                    g.op("Mul", t, g.op("Sub", safe_log, x)))
    if reduction == "batchmean":
        n = g.op("Cast", g.op("Gather", g.op("Shape", x), g.ints([0])), to=_onnx_type(dt))
        _bind(g, out, g.op("Div", g.reduce("ReduceSum", loss, None, False),
                           g.op("Squeeze", n, g.ints([0]))))
        return
    _bind(g, out, _reduce_loss(g, loss, reduction))


@op("cross_entropy")
def _cross_entropy(g: Graph, out: Any, input: Any, target: Any, weight: Any = None,
                   size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                   reduction: str = "mean", label_smoothing: float = 0.0) -> None:
    if label_smoothing:
        raise _unsupported(g, "cross_entropy", "label_smoothing")
    if input.dim() < 2:
        raise _unsupported(g, "cross_entropy", "unbatched input")
    if _dt(target).kind == "f":  # class probabilities
        logp = g.op("LogSoftmax", g.value(input), axis=1)
        per = g.op("Neg", g.reduce("ReduceSum", g.op("Mul", logp, g.value(target)), [1], False))
        if reduction == "mean":
            n = g.op("Cast", g.op("Gather", g.op("Shape", g.value(input)), g.ints([0])),
                     to=_onnx_type(_dt(out)))
            _bind(g, out, g.op("Div", g.reduce("ReduceSum", per, None, False),
                               g.op("Squeeze", n, g.ints([0]))))
        else:
            _bind(g, out, _reduce_loss(g, per, reduction))
        return
    ins = [g.value(input), _as(g, target, np.dtype(np.int64))] + (
        [g.value(weight)] if weight is not None else [])
    _bind(g, out, g.op("SoftmaxCrossEntropyLoss", *ins, reduction=reduction,
                       ignore_index=int(ignore_index)))


def _onnx_type(dt: np.dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


@op("nll_loss")
def _nll_loss(g: Graph, out: Any, input: Any, target: Any, weight: Any = None,
              size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
              reduction: str = "mean") -> None:
    ins = [g.value(input), _as(g, target, np.dtype(np.int64))] + (
        [g.value(weight)] if weight is not None else [])
    _bind(g, out, g.op("NegativeLogLikelihoodLoss", *ins, reduction=reduction,
                       ignore_index=int(ignore_index)))


@op("binary_cross_entropy")
def _bce(g: Graph, out: Any, input: Any, target: Any, weight: Any = None, size_average: Any = None,
         reduce: Any = None, reduction: str = "mean") -> None:
    dt = _dt(out)
    x, t = _operands(g, out, input, target)
    one, floor = g.const(np.asarray(1, dt)), g.const(np.asarray(-100, dt))
    log_x = g.op("Max", g.op("Log", x), floor)               # torch clamps the logs at -100
    log_1x = g.op("Max", g.op("Log", g.op("Sub", one, x)), floor)
    loss = g.op("Neg", g.op("Add", g.op("Mul", t, log_x), g.op("Mul", g.op("Sub", one, t), log_1x)))
    if weight is not None:
        loss = g.op("Mul", loss, g.value(weight))
    _bind(g, out, _reduce_loss(g, loss, reduction))


@op("binary_cross_entropy_with_logits")
def _bce_logits(g: Graph, out: Any, input: Any, target: Any, weight: Any = None,
                size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                pos_weight: Any = None) -> None:
    if pos_weight is not None:
        raise _unsupported(g, "binary_cross_entropy_with_logits", "pos_weight")
    dt = _dt(out)
    x, t = _operands(g, out, input, target)
    zero = g.const(np.asarray(0, dt))
    # max(x, 0) - x t + log(1 + exp(-|x|))
    loss = g.op("Add", g.op("Sub", g.op("Max", x, zero), g.op("Mul", x, t)),
                g.op("Softplus", g.op("Neg", g.op("Abs", x))))
    if weight is not None:
        loss = g.op("Mul", loss, g.value(weight))
    _bind(g, out, _reduce_loss(g, loss, reduction))


# ------------------------------------------------------------------ recurrent layers (by module)
_GATES = {"LSTM": (4, [0, 3, 1, 2]), "GRU": (3, [1, 0, 2]), "RNN_TANH": (1, [0]), "RNN_RELU": (1, [0])}


def _rnn_module(g: Graph, out: Any, m: Any, input: Any, hx: Any = None) -> None:
    """nn.RNN / LSTM / GRU as ONNX's RNN, LSTM, GRU nodes, one per layer (both directions in one).

    ONNX orders the gates differently (LSTM: i, o, f, c; GRU: z, r, h): the weights are reordered
    once, here. torch's GRU applies the reset gate after the hidden matmul: ``linear_before_reset``.
    """
    if not _is_tensor(input):
        raise _unsupported(g, m.mode.lower(), "a PackedSequence input")
    if input.dim() != 3 or getattr(m, "proj_size", 0):
        raise _unsupported(g, m.mode.lower(), "unbatched input or proj_size")
    n_gates, order = _GATES[m.mode]
    H, D, L = m.hidden_size, 2 if m.bidirectional else 1, m.num_layers
    dt = _dt(input)
    x = g.value(input)
    if m.batch_first:
        x = g.op("Transpose", x, perm=[1, 0, 2])
    h0, c0 = (hx if m.mode == "LSTM" else (hx, None)) if hx is not None else (None, None)

    def reorder(w: np.ndarray) -> np.ndarray:
        return w.reshape(n_gates, H, -1)[order].reshape(n_gates * H, -1)

    hs, cs = [], []
    for layer in range(L):
        sfx = [f"_l{layer}", f"_l{layer}_reverse"][:D]
        W = np.stack([reorder(_np(getattr(m, "weight_ih" + s))) for s in sfx]).astype(dt)
        R = np.stack([reorder(_np(getattr(m, "weight_hh" + s))) for s in sfx]).astype(dt)
        ins = [x, g.const(W), g.const(R)]
        if m.bias:
            ins.append(g.const(np.stack([np.concatenate(
                [reorder(_np(getattr(m, "bias_ih" + s))).reshape(-1),
                 reorder(_np(getattr(m, "bias_hh" + s))).reshape(-1)]) for s in sfx]).astype(dt)))
        else:
            ins.append("")
        ins.append("")  # sequence_lens
        for state in (h0, c0) if m.mode == "LSTM" else (h0,):
            ins.append("" if state is None else g.op(
                "Slice", g.value(state), g.ints([layer * D]), g.ints([(layer + 1) * D]), g.ints([0])))
        while ins[-1] == "":
            ins.pop()
        attrs: dict[str, Any] = dict(hidden_size=H, direction="bidirectional" if D == 2 else "forward")
        if m.mode == "GRU":
            attrs["linear_before_reset"] = 1
        if m.mode.startswith("RNN"):
            attrs["activations"] = ["Tanh" if m.mode == "RNN_TANH" else "Relu"] * D
        onnx_op = {"LSTM": "LSTM", "GRU": "GRU"}.get(m.mode, "RNN")
        res = g.op(onnx_op, *ins, outputs=3 if m.mode == "LSTM" else 2, **attrs)
        y = g.op("Transpose", res[0], perm=[0, 2, 1, 3])         # (T, N, D, H)
        x = g.op("Reshape", y, g.ints([0, 0, -1]))                 # (T, N, D·H)
        hs.append(res[1])
        if m.mode == "LSTM":
            cs.append(res[2])
    y = g.op("Transpose", x, perm=[1, 0, 2]) if m.batch_first else x
    output, state = out
    _bind(g, output, y)
    h_n = hs[0] if L == 1 else g.op("Concat", *hs, axis=0)
    if m.mode == "LSTM":
        _bind(g, state[0], g.op("Identity", h_n))
        _bind(g, state[1], g.op("Identity", cs[0] if L == 1 else g.op("Concat", *cs, axis=0)))
    else:
        _bind(g, state, g.op("Identity", h_n))


def _register_modules() -> None:
    from mytorch.nn.modules.rnn import RNNBase
    MODULES[RNNBase] = _rnn_module


_register_modules()
