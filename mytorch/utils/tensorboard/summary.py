"""Summary protocol buffers for each kind of value, as torch's ``tensorboard/summary.py`` builds them."""
from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

__all__ = ["make_np", "scalar", "histogram", "image", "text", "default_bins", "HistogramProto",
           "Summary"]


def make_np(x: Any) -> np.ndarray:
    """A NumPy array from a tensor (any device, detached), an array or a Python number."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a mytorch Tensor
        return x.detach().cpu().numpy()
    if isinstance(x, str):
        raise NotImplementedError("caffe2 blob names are not supported: pass a tensor or array")
    return np.asarray(x)


def default_bins() -> list[float]:
    """TensorFlow's histogram buckets: ±1e-12 growing by 10% up to 1e20, and 0."""
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0] + pos


def scalar(name: str, value: Any, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    """One number: ``simple_value`` (old style, torch's default) or a scalars-plugin tensor."""
    arr = make_np(value).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). "
                             f"Was given size: {arr.size} and {arr.ndim} dimensions.")
    v = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=v)])
    proto = (TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[v], dtype="DT_FLOAT"))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=meta)])


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    """A histogram of ``values`` in TensorBoard's form: right bucket limits, only the used range."""
    v = make_np(values).astype(float).reshape(-1)
    if v.size == 0:
        raise ValueError("The input has no element.")
    counts, limits = np.histogram(v, bins=bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbouring buckets
        k = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % k)).reshape(-1, k).sum(axis=-1)
        limits = np.concatenate([limits[:-1:k], limits[-1:]])
    used = np.cumsum(counts > 0)
    start, end = np.searchsorted(used, [0, used[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    # TensorBoard keeps right limits only: one empty bucket on the left keeps the leftmost limit
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    hist = HistogramProto(min=v.min(), max=v.max(), num=len(v), sum=v.sum(), sum_squares=v.dot(v),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def _to_hwc(arr: np.ndarray, dataformats: str) -> np.ndarray:
    """Any of CHW, HWC, HW, NCHW... as an HxWx3 (or x4) array; a batch becomes a grid of 8 columns."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {fmt}")
    if arr.ndim != len(fmt):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {arr.shape}, input_format: {fmt}")
    if len(fmt) == 4:
        nchw = arr.transpose([fmt.find(c) for c in "NCHW"])
        if nchw.shape[1] == 1:
            nchw = np.concatenate([nchw] * 3, 1)
        n, _, h, w = nchw.shape
        cols = min(n, 8)
        rows = -(-n // cols)
        grid = np.zeros((3, h * rows, w * cols), dtype=nchw.dtype)
        for i in range(n):
            grid[:, i // cols * h:(i // cols + 1) * h, i % cols * w:(i % cols + 1) * w] = nchw[i]
        return grid.transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = arr.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    return np.stack([arr.transpose([fmt.find(c) for c in "HW"])] * 3, 2)


def _png(pixels: np.ndarray) -> bytes:
    """A PNG file of an HxWxC uint8 array (C = 1, 3 or 4), written with zlib: no Pillow needed."""
    h, w, c = pixels.shape
    color = {1: 0, 3: 2, 4: 6}[c]  # grey, RGB, RGBA

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = np.concatenate([np.zeros((h, 1), np.uint8), pixels.reshape(h, w * c)], 1)  # filter 0
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes())) + chunk(b"IEND", b""))


def image(tag: str, img: Any, dataformats: str = "CHW") -> Summary:
    """An image: floats are taken in [0, 1] and uint8 in [0, 255], clipped, stored as PNG."""
    arr = _to_hwc(make_np(img), dataformats)
    scale = 1 if arr.dtype == np.uint8 else 255
    pixels = np.ascontiguousarray((arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8))
    h, w, c = pixels.shape
    proto = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=_png(pixels))
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def text(tag: str, string: str) -> Summary:
    """A string for TensorBoard's text plugin (the tag gets ``/text_summary``, as in torch)."""
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    proto = TensorProto(dtype="DT_STRING", string_val=[string.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])
