"""``make_grid`` and ``save_image`` (torchvision.utils): many images as one picture."""
from __future__ import annotations

import math
from typing import Any

import mytorch as torch

from .._tensor import Tensor
from .transforms.functional import to_pil_image

__all__ = ["make_grid", "save_image"]


def make_grid(tensor: Tensor | list[Tensor], nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: tuple[float, float] | None = None, scale_each: bool = False,
              pad_value: float = 0.0) -> Tensor:
    """Tile a batch ``(B, C, H, W)`` (or a list of ``(C, H, W)``) into one ``(3 or C, H', W')`` image,
    ``nrow`` images per row with ``padding`` pixels of ``pad_value`` between them.

    ``normalize=True`` shifts and scales to [0, 1] using ``value_range`` (default: min and max of
    the whole batch, or of each image with ``scale_each``). Grey images get 3 channels.
    """
    if not isinstance(tensor, Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = torch.stack(tensor, dim=0)
    if tensor.dim() == 2:                     # one grey image (H, W)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:                     # one image (C, H, W)
        if tensor.size(0) == 1:
            tensor = torch.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = torch.cat((tensor, tensor, tensor), 1)
    if normalize:
        tensor = tensor.clone()
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm_ip(img: Tensor, low: float, high: float) -> None:
            img.clamp_(min=low, max=high)
            img.sub_(low).div_(max(high - low, 1e-5))

        def norm_range(t: Tensor, rng: tuple | None) -> None:
            if rng is not None:
                norm_ip(t, rng[0], rng[1])
            else:
                norm_ip(t, float(t.min()), float(t.max()))

        if scale_each:
            for t in tensor:
                norm_range(t, value_range)
        else:
            norm_range(tensor, value_range)
    if not isinstance(tensor, Tensor):
        raise TypeError("tensor should be of type torch.Tensor")
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    nmaps = tensor.size(0)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.size(2) + padding), int(tensor.size(3) + padding)
    grid = tensor.new_full((tensor.size(1), height * ymaps + padding, width * xmaps + padding), pad_value)
    k = 0
    for y in range(ymaps):
        for x in range(xmaps):
            if k >= nmaps:
                break
            grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = tensor[k]
            k += 1
    return grid


def save_image(tensor: Tensor | list[Tensor], fp: Any, format: str | None = None, **kwargs: Any) -> None:
    """``make_grid(tensor, **kwargs)`` written as an image file (values in [0, 1], rounded to 0..255)."""
    grid = make_grid(tensor, **kwargs)
    arr = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", torch.uint8).numpy()
    to_pil_image(arr).save(fp, format=format)
