"""mytorch.utils: hooks handles, checkpointing, benchmarking; data loading in a later chapter.

Its modules sit in different layers of mytorch's stack (docs/architecture.md): ``hooks`` at the
very bottom (``Tensor.register_hook`` uses it), ``checkpoint`` above the autograd API,
``benchmark`` and ``data`` above ``nn``. Importing ``mytorch.utils.hooks`` runs this file first, so
it imports none of them; ``mytorch/__init__.py`` loads ``checkpoint`` and ``benchmark`` (whose
``time_cuda`` piece registers at import), so ``torch.utils.checkpoint`` and
``torch.utils.benchmark`` work without a separate import, as in torch.
"""
