"""The errors ``torch.onnx.export`` raises (``torch.onnx.errors``)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """The model could not be exported."""


class UnsupportedOperatorError(OnnxExporterError):
    """An operation on the traced values has no ONNX converter; the message names it."""

    def __init__(self, name: str, opset_version: int, detail: str = "") -> None:
        msg = (f"Exporting the operator '{name}' to ONNX opset version {opset_version} is not "
               f"supported by mytorch.onnx")
        super().__init__(msg + (f": {detail}" if detail else ""))
        self.op = name
