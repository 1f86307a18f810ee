"""``SummaryWriter``: torch's interface, writing through tensorboard's ``EventFileWriter``."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as S

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """One event file in ``log_dir``: wraps summaries in ``Event`` protos and queues them."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: int | None = None, walltime: float | None = None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Any, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()


class SummaryWriter:
    """Writes TensorBoard event files to ``log_dir`` (default ``runs/<date>_<host><comment>``)."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self.default_bins = S.default_bins()
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The main file writer, made again after ``close()`` (as torch does)."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:  # TensorBoard drops the events from this step on
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Log one number (a Python number, a one-element tensor or array) at ``global_step``."""
        self._get_file_writer().add_summary(
            S.scalar(tag, scalar_value, new_style, double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any],
                    global_step: int | None = None, walltime: float | None = None) -> None:
        """Several curves on one chart: each goes to its own run ``<log_dir>/<main_tag>_<tag>``."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, value in tag_scalar_dict.items():
            path = base + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(path)
            if fw is None:
                fw = self.all_writers[path] = FileWriter(path, self.max_queue, self.flush_secs,
                                                         self.filename_suffix)
            fw.add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        """A histogram of ``values``; ``bins`` is NumPy's argument, or TensorFlow's default buckets."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins),
                                            global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """One image, ``dataformats`` saying its layout (CHW, HWC, HW...)."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats),
                                            global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        """A batch of images, shown as one grid of up to 8 columns."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """A matplotlib figure (or a list of them, shown as a grid), rendered to an image."""
        figures = figure if isinstance(figure, list) else [figure]
        images = []
        for fig in figures:
            fig.canvas.draw()
            w, h = fig.canvas.get_width_height(physical=True)
            rgba = np.frombuffer(fig.canvas.buffer_rgba(), dtype=np.uint8).reshape(h, w, 4)
            images.append(np.moveaxis(rgba[:, :, :3], 2, 0))
            if close:
                import matplotlib.pyplot as plt
                plt.close(fig)
        if isinstance(figure, list):
            self.add_images(tag, np.stack(images), global_step, walltime)
        else:
            self.add_image(tag, images[0], global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,
                          sum_squares: float, bucket_limits: Any, bucket_counts: Any,
                          global_step: int | None = None, walltime: float | None = None) -> None:
        """A histogram whose buckets you computed yourself (right limits and counts)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        hist = S.HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                                bucket_limit=list(bucket_limits), bucket=list(bucket_counts))
        self._get_file_writer().add_summary(S.Summary(value=[S.Summary.Value(tag=tag, histo=hist)]),
                                            global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        raise NotImplementedError(
            "SummaryWriter.add_graph is not implemented in mytorch: export the model with "
            "mytorch.onnx.export and open the .onnx file in a viewer such as Netron instead")

    def flush(self) -> None:
        """Write every pending event to disk."""
        for w in (self.all_writers or {}).values():
            w.flush()

    def close(self) -> None:
        """Flush and close every event file (a later ``add_*`` opens a new one)."""
        if self.all_writers is None:
            return
        for w in self.all_writers.values():
            w.flush()
            w.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _not_implemented(name: str) -> Any:
    def method(self: SummaryWriter, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"SummaryWriter.{name} is not implemented in mytorch "
                                  "(scalars, histograms, images, figures and text are)")
    method.__name__ = method.__qualname__ = name
    return method


for _name in ("add_hparams", "add_tensor", "add_image_with_boxes", "add_video", "add_audio",
              "add_embedding", "add_pr_curve", "add_pr_curve_raw", "add_mesh", "add_onnx_graph",
              "add_custom_scalars", "add_custom_scalars_multilinechart",
              "add_custom_scalars_marginchart"):
    setattr(SummaryWriter, _name, _not_implemented(_name))
del _name
