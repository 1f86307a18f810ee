"""``SummaryWriter``: torch's interface, writing through tensorboard's ``EventFileWriter``."""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

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

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
