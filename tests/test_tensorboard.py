"""mytorch.utils.tensorboard: event files that TensorBoard reads, the same as torch's SummaryWriter writes."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest
import torch

import mytorch

pytest.importorskip("tensorboard")
import torch.utils.tensorboard as ttb  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

import mytorch.utils.tensorboard as mtb  # noqa: E402


def _log(lib, tb, log_dir) -> None:
    """The same calls through either library's SummaryWriter."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=500).astype(np.float32)
    img = np.linspace(0, 1, 3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    with tb.SummaryWriter(log_dir) as w:
        for step in range(5):
            w.add_scalar("loss/train", lib.tensor(1.0 / (step + 1)), step)
            w.add_scalar("lr", 0.1 * step, global_step=step)
        w.add_scalars("acc", {"train": 0.9, "val": 0.8}, 3)
        w.add_histogram("weights", lib.from_numpy(values), 7)
        w.add_histogram("few", np.array([1.0, 2.0, 2.0, 3.0]), 0, bins=3)
        w.add_image("chw", lib.from_numpy(img), 1)
        w.add_image("hwc", lib.from_numpy(np.ascontiguousarray(img.transpose(1, 2, 0))), 2,
                    dataformats="HWC")
        w.add_image("gray", (img[0] * 255).astype(np.uint8), 3, dataformats="HW")
        w.add_text("note", "hello, 你好", 4)
        w.add_histogram_raw("raw", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 2, 1], 5)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=(1, 1), dpi=20)
        plt.plot([0, 1], [1, 0])
        w.add_figure("fig", fig, 6)


def _read(path):
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "histograms": 0, "images": 0,
                                                     "tensors": 0})
    acc.Reload()
    return acc


def _pixels(encoded: bytes) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(encoded)))


def test_event_files_read_back_like_torchs(tmp_path):
    _log(mytorch, mtb, tmp_path / "mine")
    _log(torch, ttb, tmp_path / "ref")
    mine, ref = _read(tmp_path / "mine"), _read(tmp_path / "ref")
    assert mine.Tags()["scalars"] == ref.Tags()["scalars"] == ["loss/train", "lr"]
    for tag in ("loss/train", "lr"):
        a, b = mine.Scalars(tag), ref.Scalars(tag)
        assert [(e.step, e.value) for e in a] == [(e.step, e.value) for e in b]
    for tag in ("weights", "few", "raw"):
        (a,), (b,) = mine.Histograms(tag), ref.Histograms(tag)
        assert a.step == b.step and a.histogram_value == b.histogram_value
    assert sorted(mine.Tags()["images"]) == sorted(ref.Tags()["images"]) == ["chw", "fig", "gray", "hwc"]
    for tag in ("chw", "hwc", "gray", "fig"):
        (a,), (b,) = mine.Images(tag), ref.Images(tag)
        assert (a.step, a.width, a.height) == (b.step, b.width, b.height)
        np.testing.assert_array_equal(_pixels(a.encoded_image_string), _pixels(b.encoded_image_string))
    (a,), (b,) = mine.Tensors("note/text_summary"), ref.Tensors("note/text_summary")
    assert a.tensor_proto == b.tensor_proto and a.step == b.step == 4
    # add_scalars: one run per curve, named <main_tag>_<tag>, as torch's
    dirs = [sorted(d.name for d in (tmp_path / lib).iterdir() if d.is_dir()) for lib in ("mine", "ref")]
    assert dirs[0] == dirs[1] == ["acc_train", "acc_val"]
    for run in ("acc_train", "acc_val"):
        (a,), (b,) = (_read(tmp_path / lib / run).Scalars("acc") for lib in ("mine", "ref"))
        assert (a.step, a.value) == (b.step, b.value)


def test_default_log_dir_close_and_reopen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = mtb.SummaryWriter(comment="_lr0.1")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_lr0.1")
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.close()  # a second close does nothing, as in torch
    w.add_scalar("x", 2.0, 1)  # writing after close opens a new event file
    w.flush()
    assert [e.value for e in _read(w.get_logdir()).Scalars("x")] == [1.0, 2.0]
    with pytest.raises(NotImplementedError, match="add_graph"):
        w.add_graph(mytorch.nn.Linear(2, 2), mytorch.zeros(1, 2))
    with pytest.raises(NotImplementedError, match="add_hparams"):
        w.add_hparams({"lr": 0.1}, {"loss": 1.0})
    with pytest.raises(AssertionError, match="one element"):
        w.add_scalar("bad", mytorch.zeros(2), 0)
    w.close()
