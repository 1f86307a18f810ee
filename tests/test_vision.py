"""mytorch.vision against torchvision's recorded outputs (tests/fixtures/vision_golden.npz).

torchvision pins another torch than the project's oracle, so CI cannot install it; its outputs
were recorded once by tests/fixtures/make_vision_golden.py, which also holds the cases. The same
cases run live against torchvision in tests/test_vision_live.py when torchvision is importable.
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

import mytorch
import mytorch.vision as vision
from mytorch._pieces import pieces
from mytorch.vision import transforms as T
from mytorch.vision.transforms import functional as F

_spec = importlib.util.spec_from_file_location("make_vision_golden",
                                               Path(__file__).parent / "fixtures" / "make_vision_golden.py")
golden = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(golden)  # type: ignore[union-attr]

EXPECTED = np.load(golden.GOLDEN)


@pytest.fixture(scope="module")
def images() -> dict:
    return golden.images(mytorch, vision)


def compare(name: str, mine: np.ndarray, theirs: np.ndarray, atol: float) -> None:
    assert mine.shape == theirs.shape, f"{name}: shape {mine.shape} != torchvision's {theirs.shape}"
    assert mine.dtype == theirs.dtype, f"{name}: dtype {mine.dtype} != torchvision's {theirs.dtype}"
    diff = np.abs(mine.astype(np.float64) - theirs.astype(np.float64))
    assert diff.max(initial=0) <= atol, f"{name}: max difference {diff.max()} > {atol}"


@pytest.mark.parametrize("name", list(golden.CASES))
def test_matches_torchvision_golden(name: str, images: dict) -> None:
    fn, atol = golden.CASES[name]
    compare(name, golden.to_numpy(fn(mytorch, vision, images)), EXPECTED[name], atol)


def test_golden_covers_every_case() -> None:
    assert set(golden.CASES) == set(EXPECTED.files) - {"__versions__"}


def test_seeded_random_transforms_repeat() -> None:
    img = F.to_pil_image(golden.rgb_array())
    tf = T.Compose([T.RandomResizedCrop(12), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                    T.ToTensor()])
    mytorch.manual_seed(0)
    a = [tf(img) for _ in range(4)]
    mytorch.manual_seed(0)
    b = [tf(img) for _ in range(4)]
    assert all(mytorch.equal(x, y) for x, y in zip(a, b, strict=True))
    assert not mytorch.equal(a[0], a[1])


def test_normalize_errors_and_inplace() -> None:
    t = mytorch.rand(3, 4, 4)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got torch.uint8."):
        F.normalize(mytorch.zeros(3, 2, 2, dtype=mytorch.uint8), [0.0], [1.0])
    with pytest.raises(ValueError, match="std evaluated to zero after conversion to torch.float32"):
        F.normalize(t, [0.0] * 3, [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"Expected tensor to be a tensor image of size \(..., C, H, W\)"):
        F.normalize(mytorch.rand(4, 4), [0.0], [1.0])
    out = F.normalize(t, [0.5] * 3, [0.5] * 3, inplace=True)
    assert out is t
    ref = pieces.normalize_channels(mytorch.ones(2, 1, 1), [0.5, 1.0], [0.25, 2.0])
    assert ref.flatten().tolist() == [2.0, 0.0]


def test_transform_errors() -> None:
    img = F.to_pil_image(golden.rgb_array())
    with pytest.raises(ValueError, match=r"Required crop size \(40, 40\) is larger than input image size \(29, 37\)"):
        T.RandomCrop(40)(img)
    with pytest.raises(ValueError, match="hue values should be between"):
        T.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non negative."):
        T.ColorJitter(brightness=-1)
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        F.to_tensor([1, 2])
    with pytest.raises(ValueError, match=r"hue_factor \(0.6\) is not in \[-0.5, 0.5\]"):
        F.adjust_hue(img, 0.6)
    assert T.ColorJitter().brightness is None        # 0 means: leave brightness alone


def test_image_folder(tmp_path: Path) -> None:
    from PIL import Image

    for cls, n in (("cat", 2), ("dog", 3)):
        (tmp_path / cls).mkdir()
        for i in range(n):
            Image.fromarray(np.full((4, 5, 3), 40 * i, np.uint8)).save(tmp_path / cls / f"{i}.png")
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    ds = vision.datasets.ImageFolder(str(tmp_path), transform=T.ToTensor())
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    assert ds.targets == [0, 0, 1, 1, 1] and len(ds) == 5
    x, y = ds[3]
    assert x.shape == (3, 4, 5) and y == 1 and abs(float(x.max()) - 40 / 255) < 1e-6
    batches = list(mytorch.utils.data.DataLoader(ds, batch_size=2, num_workers=2))
    assert [b[1].tolist() for b in batches] == [[0, 0], [1, 1], [1]]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty"):
        vision.datasets.ImageFolder(str(tmp_path))
    assert len(vision.datasets.ImageFolder(str(tmp_path), allow_empty=True)) == 5
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        vision.datasets.ImageFolder(str(tmp_path / "cat"))


def test_digits_ship_offline() -> None:
    train, test = vision.datasets.Digits(train=True), vision.datasets.Digits(train=False)
    assert len(train) == 1500 and len(test) == 297
    img, label = train[0]
    assert img.size == (8, 8) and img.mode == "L" and label == 0
    x, y = next(iter(mytorch.utils.data.DataLoader(
        vision.datasets.Digits(transform=T.ToTensor()), batch_size=16, shuffle=True)))
    assert x.shape == (16, 1, 8, 8) and y.dtype == mytorch.int64 and float(x.max()) <= 1.0


def test_save_image_roundtrip(tmp_path: Path) -> None:
    from PIL import Image

    path = os.fspath(tmp_path / "grid.png")
    vision.utils.save_image(mytorch.ones(2, 3, 4, 4) * 0.5, path, nrow=2, padding=0)
    arr = np.asarray(Image.open(path))
    assert arr.shape == (4, 8, 3) and (arr == 128).all()
