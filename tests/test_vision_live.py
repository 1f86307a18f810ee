"""mytorch.vision against torchvision itself, when it is importable (skipped otherwise).

The project's .venv pins torch 2.13 (the oracle), and torchvision 0.29 needs torch 2.14, so this
runs in a separate environment::

    python3.11 -m venv /work/venv-vision
    /work/venv-vision/bin/pip install torch==2.14.1 torchvision==0.29.1 pytest hypothesis pillow scikit-learn
    PYTHONPATH=. /work/venv-vision/bin/python -m pytest -q tests/test_vision_live.py

It re-runs every golden case live and adds random image sizes and resize targets.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torchvision = pytest.importorskip("torchvision", reason="torchvision is not installed: see this file's "
                                  "docstring for the separate environment that runs it")
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mytorch  # noqa: E402
import mytorch.vision as vision  # noqa: E402

_spec = importlib.util.spec_from_file_location("make_vision_golden",
                                               Path(__file__).parent / "fixtures" / "make_vision_golden.py")
golden = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(golden)  # type: ignore[union-attr]


def _compare(mine: np.ndarray, theirs: np.ndarray, atol: float) -> None:
    assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
    assert np.abs(mine.astype(np.float64) - theirs.astype(np.float64)).max(initial=0) <= atol


@pytest.mark.parametrize("name", list(golden.CASES))
def test_case_live(name: str) -> None:
    fn, atol = golden.CASES[name]
    mine = golden.to_numpy(fn(mytorch, vision, golden.images(mytorch, vision)))
    theirs = golden.to_numpy(fn(torch, torchvision, golden.images(torch, torchvision)))
    _compare(mine, theirs, atol)


@settings(max_examples=40, deadline=None)
# Output sides of at least 2: torch 2.14's antialiased CPU kernel repeats the first row when the
# other output side is 1 (3x3 -> 2x1 gives [2.125, 2.125] on arange(9); PIL and mytorch give
# [2.125, 5.875]).
@given(h=st.integers(3, 40), w=st.integers(3, 40), oh=st.integers(2, 50), ow=st.integers(2, 50),
       mode=st.sampled_from(["BILINEAR", "BICUBIC", "NEAREST"]), aa=st.booleans(), seed=st.integers(0, 99))
def test_resize_any_size(h: int, w: int, oh: int, ow: int, mode: str, aa: bool, seed: int) -> None:
    from PIL import Image

    arr = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    outs = []
    for v in (vision, torchvision):
        m = getattr(v.transforms.InterpolationMode, mode)
        tf = v.transforms.Resize((oh, ow), m, antialias=aa)
        t = v.transforms.functional.to_tensor(arr)
        outs.append((golden.to_numpy(tf(t)), np.asarray(tf(Image.fromarray(arr)))))
    _compare(outs[0][0], outs[1][0], 3e-5)
    _compare(outs[0][1], outs[1][1], 0)
