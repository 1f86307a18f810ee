"""The ONNX graph under construction: values named by the tensors they stand for.

Every tensor the traced forward computes from the inputs is *bound* to an ONNX value name
(``bind``). A tensor that is not bound when an operation reads it did not come from the
inputs (a parameter, a buffer, a tensor made in ``forward``): ``value`` turns it into an
initializer, named after the parameter when it is one.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

__all__ = ["Graph"]


class Graph:
    def __init__(self, opset: int, param_names: dict[int, str]) -> None:
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: dict[int, str] = {}      # id(tensor) -> value name
        self._keep: list[Any] = []            # the tensors named, kept alive so ids stay unique
        self._param_names = param_names
        self._count = 0

    # ------------------------------------------------------------------ values
    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"/{hint}_{self._count}"

    def is_traced(self, x: Any) -> bool:
        return id(x) in self._names and not self._names[id(x)].startswith("@const:")

    def bind(self, tensor: Any, name: str) -> None:
        self._names[id(tensor)] = name
        self._keep.append(tensor)

    def const(self, array: Any, name: str | None = None) -> str:
        """An initializer holding ``array`` (a NumPy array or a Python number)."""
        array = np.asarray(array)
        name = name or self.fresh("Constant")
        self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def ints(self, values: Any) -> str:
        """An int64 1-D constant (shapes, axes, indices)."""
        return self.const(np.asarray(values, dtype=np.int64).reshape(-1))

    def value(self, x: Any, like: Any = None) -> str:
        """The value name of a tensor, or a constant for an unbound tensor or a Python number
        (a number takes the dtype of ``like``, a tensor, as torch's scalars do)."""
        if x is None:
            return ""
        if hasattr(x, "_data") and hasattr(x, "detach"):
            key = id(x)
            if key not in self._names:
                array = x.detach().cpu().numpy()
                name = self._param_names.get(key) or self.fresh("Constant")
                self.initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
                self._names[key] = name
                self._keep.append(x)
            return self._names[key]
        dtype = like.detach().cpu().numpy().dtype if like is not None else None
        return self.const(np.asarray(x, dtype=dtype))

    # ------------------------------------------------------------------ nodes
    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attrs: Any) -> Any:
        """Add one node; returns its output name (or a list of names when ``outputs > 1``)."""
        outs = [self.fresh(op_type) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=outs[0].replace("/", "/n"), **attrs))
        return outs[0] if outputs == 1 else outs

    def cast(self, name: str, np_dtype: Any) -> str:
        return self.op("Cast", name, to=helper.np_dtype_to_tensor_dtype(np.dtype(np_dtype)))

    def reduce(self, op_type: str, x: str, axes: Any, keepdims: bool) -> str:
        """ReduceMean/ReduceSum/...: the axes are an attribute before opset 18 (Sum: 13), an input after."""
        keep = int(bool(keepdims))
        if axes is None:
            return self.op(op_type, x, keepdims=keep)
        if self.opset >= (13 if op_type == "ReduceSum" else 18):
            return self.op(op_type, x, self.ints(axes), keepdims=keep)
        return self.op(op_type, x, axes=[int(a) for a in np.atleast_1d(axes)], keepdims=keep)
