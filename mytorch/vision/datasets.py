"""Image datasets (``torchvision.datasets``): ``ImageFolder`` over ``root/<class>/<image>``, and
``Digits``, scikit-learn's bundled 8×8 handwritten digits (no download: the data ships with it)."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ..utils.data import Dataset

try:
    from PIL import Image
except ImportError:  # pragma: no cover - Pillow is in the book/dev extras
    Image = None

__all__ = ["DatasetFolder", "Digits", "IMG_EXTENSIONS", "ImageFolder", "default_loader", "pil_loader"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def pil_loader(path: str) -> Any:
    """Open an image file as an RGB PIL image (the file is closed at once)."""
    if Image is None:
        raise ImportError("mytorch.vision needs Pillow for images: pip install pillow")
    with open(path, "rb") as f:
        img = Image.open(f)
        return img.convert("RGB")


default_loader = pil_loader


def has_file_allowed_extension(filename: str, extensions: str | tuple[str, ...]) -> bool:
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def find_classes(directory: str | os.PathLike) -> tuple[list[str], dict[str, int]]:
    """The sub-folders of ``directory``, sorted, and their indices: the class of every image."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory: str | os.PathLike, class_to_idx: dict[str, int],
                 extensions: tuple[str, ...] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> list[tuple[str, int]]:
    """Every ``(path, class_index)`` under ``directory``, class by class, files sorted."""
    directory = os.path.expanduser(directory)
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if is_valid_file is None:
        def is_valid_file(path: str) -> bool:
            return has_file_allowed_extension(path, extensions)  # type: ignore[arg-type]
    instances, found = [], set()
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    found.add(target_class)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(Dataset):
    """Samples ``root/<class>/<file>`` read by ``loader``; ``targets[i]`` is sample i's class index."""

    def __init__(self, root: str | os.PathLike, loader: Callable[[str], Any],
                 extensions: tuple[str, ...] | None = None, transform: Callable | None = None,
                 target_transform: Callable | None = None,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        self.root = os.fspath(root)
        self.transform, self.target_transform = transform, target_transform
        self.classes, self.class_to_idx = find_classes(self.root)
        self.samples = make_dataset(self.root, self.class_to_idx, extensions, is_valid_file, allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.targets = [s[1] for s in self.samples]

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        return f"Dataset {self.__class__.__name__}\n    Number of datapoints: {len(self)}\n    Root location: {self.root}"


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/`` folders, read as RGB PIL images: ``(image, class_index)``."""

    def __init__(self, root: str | os.PathLike, transform: Callable | None = None,
                 target_transform: Callable | None = None, loader: Callable[[str], Any] = default_loader,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform,
                         target_transform, is_valid_file, allow_empty)
        self.imgs = self.samples


class Digits(Dataset):
    """scikit-learn's 1,797 handwritten digits, 8×8 greyscale, values 0..16, labels 0..9.

    Each sample is ``(image, label)``; the image is a PIL image (mode ``"L"``, values scaled to
    0..255) so the usual transforms apply, e.g. ``transform=ToTensor()``. ``train=True`` keeps the
    first 1,500 samples, ``train=False`` the other 297. The data ship inside scikit-learn: nothing
    is downloaded.
    """

    def __init__(self, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        try:
            from sklearn.datasets import load_digits  # noqa: PLC0415 - optional dependency
        except ImportError as e:
            raise ImportError("Digits needs scikit-learn: pip install scikit-learn "
                              "(or pip install 'mytorch[book]')") from e
        bunch = load_digits()
        images = np.round(bunch.images * (255 / 16)).astype(np.uint8)
        part = slice(0, 1500) if train else slice(1500, None)
        self.data, self.targets = images[part], bunch.target[part].astype(np.int64)
        self.transform, self.target_transform = transform, target_transform
        self.classes = [str(d) for d in range(10)]

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = Image.fromarray(self.data[index], mode="L"), int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)
