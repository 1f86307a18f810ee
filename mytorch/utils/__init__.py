"""mytorch.utils: hooks handles now; data loading and checkpointing in later chapters.

Its modules sit in different layers of mytorch's stack (docs/architecture.md): ``hooks`` at the
very bottom (``Tensor.register_hook`` uses it), ``checkpoint`` above the autograd API. Importing
``mytorch.utils.hooks`` runs this file first, so it imports none of them; ``mytorch/__init__.py``
loads ``checkpoint``, so ``torch.utils.checkpoint`` works without a separate import, as in torch.
"""
