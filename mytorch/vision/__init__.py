"""``mytorch.vision``: a small torchvision — transforms, an ImageFolder dataset, make_grid/save_image.

    import mytorch.vision as torchvision
    from mytorch.vision import transforms, datasets, utils

Needs Pillow (``pip install pillow``; the ``book`` and ``dev`` extras include it). Not imported by
``import mytorch``: like torchvision, it is a separate import.
"""
from . import datasets, transforms, utils  # noqa: F401

__all__ = ["datasets", "transforms", "utils"]
