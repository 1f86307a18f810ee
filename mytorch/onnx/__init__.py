"""``torch.onnx``: export a model to an ONNX file that onnxruntime (or any ONNX runtime) runs.

``export(model, args, f)`` runs ``model(*args)`` once in evaluation mode and *traces* it: every
public mytorch operation that reads a value computed from the inputs is converted into ONNX
nodes as it runs (``_trace.py`` says how; ``_symbolic.py`` holds the converters, one per
operation name, and whole-module converters for the recurrent layers). The graph is built
with the ``onnx`` package's helpers and checked with ``onnx.checker`` before it is written.

Needs ``pip install onnx`` (and ``onnxruntime`` to run the file), or ``pip install 'mytorch[onnx]'``.
Like torch's tracer, the graph records what this one run did: Python control flow is unrolled,
and sizes read in Python (``x.size(0)``) become constants unless a ``Reshape`` can keep them
(dimensions that stay in place are copied, so a dynamic batch axis survives ``x.view(n, -1)``).
"""
from __future__ import annotations

import inspect
import io
import os
from collections.abc import Mapping, Sequence
from typing import Any

from . import errors
from .errors import OnnxExporterError

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError", "errors",
           "TrainingMode"]

_EXPORTING = [False]


class TrainingMode:
    """The mode the model is exported in (torch's enum): evaluation unless asked otherwise."""
    EVAL = "EVAL"
    PRESERVE = "PRESERVE"
    TRAINING = "TRAINING"


def is_in_onnx_export() -> bool:
    """True while :func:`export` runs the model."""
    return _EXPORTING[0]


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:
        raise ImportError("mytorch.onnx.export needs the onnx package: pip install onnx "
                          "(to run the exported file too: pip install onnxruntime), or "
                          "pip install 'mytorch[onnx]'") from e
    return onnx


def _value_info(name: str, tensor: Any, dynamic: Any) -> Any:
    from onnx import helper
    axes = dynamic.get(name, {}) if dynamic else {}
    if isinstance(axes, (list, tuple)):
        axes = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
    dims = [axes.get(i, s) for i, s in enumerate(tensor.shape)]
    elem = helper.np_dtype_to_tensor_dtype(tensor.detach().cpu().numpy().dtype)
    return helper.make_tensor_value_info(name, elem, dims)


def _name_outputs(g: Any, values: list[str], names: list[str], inputs: set[str]) -> None:
    """Give the graph's outputs their names: a node's output is renamed (its readers follow);
    an input, a constant or a value returned twice goes through an Identity node."""
    made = {o: node for node in g.nodes for o in node.output}
    renamed: dict[str, str] = {}
    for value, name in zip(values, names):
        if value in made and value not in renamed and value not in inputs:
            renamed[value] = name
        else:
            from onnx import helper
            g.nodes.append(helper.make_node("Identity", [renamed.get(value, value)], [name],
                                            name=f"/output/{name}"))
    for node in g.nodes:
        for field in (node.input, node.output):
            for i, v in enumerate(field):
                if v in renamed:
                    field[i] = renamed[v]


def export(model: Any, args: Any = (), f: Any = None, export_params: bool = True,
           verbose: bool = False, training: Any = TrainingMode.EVAL,
           input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           operator_export_type: Any = None, opset_version: int | None = None,
           do_constant_folding: bool = True,
           dynamic_axes: Mapping[str, Any] | None = None,
           keep_initializers_as_inputs: bool | None = None, custom_opsets: Any = None,
           export_modules_as_functions: Any = False, autograd_inlining: bool = True, *,
           kwargs: dict | None = None, dynamo: bool = False, **unused: Any) -> None:
    """Trace ``model(*args, **kwargs)`` and write it to ``f`` (a path or a binary file) as ONNX.

    ``input_names`` / ``output_names`` name the graph's inputs and outputs (in the order of the
    tensors in ``args`` and in the flattened output); ``dynamic_axes`` maps a name to the axes
    that may change size (a list, or a dict ``{axis: name}``), as in torch. ``opset_version``
    defaults to 17 (13 at least). An operation with no converter raises
    :class:`UnsupportedOperatorError` naming it.
    """
    onnx = _onnx()
    from onnx import helper

    import mytorch
    from mytorch.nn import Module

    from ._graph import Graph
    from ._trace import Tracer, flatten

    opset = 17 if opset_version is None else int(opset_version)
    if opset < 13:
        raise ValueError(f"mytorch.onnx.export supports opset_version 13 or later, got {opset}")
    if f is None:
        raise TypeError("export() missing the file to write: f (a path or a binary file)")
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):  # torch's convention: a trailing dict holds keyword args
        kwargs.update(args[-1])
        args = args[:-1]

    param_names: dict[int, str] = {}
    if isinstance(model, Module):
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            param_names.setdefault(id(t), name)
    g = Graph(opset, param_names)

    arg_tensors = flatten(list(args) + list(kwargs.values()))
    if input_names is None:
        try:
            params = [p for p in inspect.signature(model.forward if isinstance(model, Module)
                                                   else model).parameters]
        except (TypeError, ValueError):
            params = []
        input_names = params[:len(arg_tensors)] if len(params) >= len(arg_tensors) and not kwargs \
            else []
    names_in = list(input_names)[:len(arg_tensors)]
    names_in += [f"input_{i}" for i in range(len(names_in), len(arg_tensors))]
    for t, n in zip(arg_tensors, names_in):
        g.bind(t, n)

    modes = {}
    if isinstance(model, Module) and training != TrainingMode.PRESERVE:
        modes = {m: m.training for m in model.modules()}
        model.train(training == TrainingMode.TRAINING)
    _EXPORTING[0] = True
    try:
        with mytorch.no_grad(), Tracer(g, model):
            result = model(*args, **kwargs)
    finally:
        _EXPORTING[0] = False
        for m, mode in modes.items():
            m.training = mode

    outs = flatten(result)
    if not outs:
        raise OnnxExporterError("the model returned no tensor to export")
    names_out = list(output_names or [])[:len(outs)]
    names_out += [("output" if len(outs) == 1 else f"output_{i}")
                  for i in range(len(names_out), len(outs))]
    _name_outputs(g, [g.value(t) for t in outs], names_out, set(names_in))

    inputs = [_value_info(n, t, dynamic_axes) for t, n in zip(arg_tensors, names_in)]
    outputs = [_value_info(n, t, dynamic_axes) for t, n in zip(outs, names_out)]
    inits = g.initializers
    if not export_params:  # the parameters become inputs the caller feeds
        params = set(param_names.values())
        inputs += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                   for i in inits if i.name in params]
        inits = [i for i in inits if i.name not in params]
    elif keep_initializers_as_inputs:
        inputs += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in inits]
    graph = helper.make_graph(g.nodes, "main_graph", inputs, outputs, inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="mytorch", producer_version=mytorch.__version__)
    # the IR version of the onnx package may be newer than the runtimes read: the opset's own
    proto.ir_version = min(proto.ir_version, 8 if opset <= 18 else 10)
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if isinstance(f, (str, os.PathLike)):
        onnx.save(proto, os.fspath(f))
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(proto.SerializeToString())
    else:
        raise TypeError(f"f must be a path or a binary file, not {type(f).__name__}")
