"""Image transforms as objects (``torchvision.transforms``): build a pipeline once, call it on
every sample, e.g. in a Dataset's ``__getitem__``::

    tf = Compose([RandomResizedCrop(24), RandomHorizontalFlip(), ToTensor(),
                  Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])])
    x = tf(pil_image)          # (3, 24, 24) float tensor

The random ones draw from mytorch's default generator exactly where torchvision draws from
torch's (``torch.randint``, ``uniform_``, ``randperm``), so ``mytorch.manual_seed`` makes them
repeatable; in DataLoader workers every worker has its own seed (see ``utils/data``).
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import mytorch as torch

from . import functional as F
from .functional import InterpolationMode

__all__ = ["CenterCrop", "ColorJitter", "Compose", "Grayscale", "Lambda", "Normalize", "PILToTensor", "Pad",
           "RandomCrop", "RandomHorizontalFlip", "RandomResizedCrop", "RandomVerticalFlip", "Resize",
           "ToPILImage", "ToTensor"]


def _setup_size(size: Any, error_msg: str) -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size[0], size[1]


class Compose:
    """Apply transforms one after the other."""

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """PIL image / ndarray ``(H, W, C)`` -> float tensor ``(C, H, W)``; uint8 scaled to [0, 1]."""

    def __call__(self, pic: Any) -> Any:
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """PIL image -> tensor ``(C, H, W)`` of the image's dtype, values unchanged."""

    def __call__(self, pic: Any) -> Any:
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class ToPILImage:
    """Tensor ``(C, H, W)`` / ndarray ``(H, W, C)`` -> PIL image (float data: ×255, truncated)."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode

    def __call__(self, pic: Any) -> Any:
        return F.to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({'' if self.mode is None else f'mode={self.mode}'})"


class Normalize:
    """``(x - mean[c]) / std[c]`` per channel, on a float tensor image."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, tensor: Any) -> Any:
        return F.normalize(tensor, self.mean, self.std, self.inplace)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize:
    """Resize to ``(h, w)``, or the shorter edge to ``size`` (aspect ratio kept)."""

    def __init__(self, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        self.interpolation = F._interpolation(interpolation)
        self.antialias = antialias

    def __call__(self, img: Any) -> Any:
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop:
    """The central ``size`` window."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def __call__(self, img: Any) -> Any:
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size})"


class Pad:
    """Pad the borders (see ``functional.pad``)."""

    def __init__(self, padding: int | Sequence[int], fill: Any = 0, padding_mode: str = "constant") -> None:
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, img: Any) -> Any:
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class Lambda:
    """Your own function as a transform."""

    def __init__(self, lambd: Callable) -> None:
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)


class Grayscale:
    """Convert to grey (1 or 3 output channels)."""

    def __init__(self, num_output_channels: int = 1) -> None:
        self.num_output_channels = num_output_channels

    def __call__(self, img: Any) -> Any:
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomCrop:
    """A ``size`` window at a random place (optionally padding the image first)."""

    def __init__(self, size: int | Sequence[int], padding: Any = None, pad_if_needed: bool = False,
                 fill: Any = 0, padding_mode: str = "constant") -> None:
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img: Any, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """A random ``(top, left, height, width)`` window of ``output_size``."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = torch.randint(0, h - th + 1, size=(1,)).item()
        j = torch.randint(0, w - tw + 1, size=(1,)).item()
        return i, j, th, tw

    def __call__(self, img: Any) -> Any:
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomResizedCrop:
    """A random window (``scale`` of the area, aspect ``ratio``) resized to ``size``: the classic
    ImageNet training augmentation."""

    def __init__(self, size: int | Sequence[int], scale: Sequence[float] = (0.08, 1.0),
                 ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> None:
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        self.interpolation = F._interpolation(interpolation)
        self.antialias = antialias
        self.scale = scale
        self.ratio = ratio

    @staticmethod
    def get_params(img: Any, scale: Sequence[float], ratio: Sequence[float]) -> tuple[int, int, int, int]:
        """Up to 10 tries at a random area and (log-uniform) aspect ratio; else a central crop."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = torch.log(torch.tensor(ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
            aspect_ratio = torch.exp(torch.empty(1).uniform_(float(log_ratio[0]), float(log_ratio[1]))).item()
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = torch.randint(0, height - h + 1, size=(1,)).item()
                j = torch.randint(0, width - w + 1, size=(1,)).item()
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img: Any) -> Any:
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class RandomHorizontalFlip:
    """Mirror left-right with probability ``p``."""

    def __init__(self, p: float = 0.5) -> None:
        self.p = p

    def __call__(self, img: Any) -> Any:
        if torch.rand(1) < self.p:
            return F.hflip(img)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomVerticalFlip(RandomHorizontalFlip):
    """Mirror top-bottom with probability ``p``."""

    def __call__(self, img: Any) -> Any:
        if torch.rand(1) < self.p:
            return F.vflip(img)
        return img


class ColorJitter:
    """Random brightness, contrast, saturation and hue changes, applied in a random order.

    A number ``b`` means a factor drawn from ``[max(0, 1 - b), 1 + b]`` (hue: ``[-h, h]``, at most
    0.5); a pair gives the range itself.
    """

    def __init__(self, brightness: Any = 0, contrast: Any = 0, saturation: Any = 0, hue: Any = 0) -> None:
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value: Any, name: str, center: float = 1, bound: tuple = (0, float("inf")),
                     clip_first_on_zero: bool = True) -> tuple[float, float] | None:
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)  # type: ignore[return-value]

    @staticmethod
    def get_params(brightness: Any, contrast: Any, saturation: Any, hue: Any) -> tuple:
        """The order of the four adjustments and one factor for each (None: left out)."""
        fn_idx = torch.randperm(4)
        b = None if brightness is None else float(torch.empty(1).uniform_(brightness[0], brightness[1]))
        c = None if contrast is None else float(torch.empty(1).uniform_(contrast[0], contrast[1]))
        s = None if saturation is None else float(torch.empty(1).uniform_(saturation[0], saturation[1]))
        h = None if hue is None else float(torch.empty(1).uniform_(hue[0], hue[1]))
        return fn_idx, b, c, s, h

    def __call__(self, img: Any) -> Any:
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in fn_idx.tolist():
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")
