"""mytorch.utils: hooks handles, checkpointing, benchmarking, data loading (``utils.data``).

Its modules sit in different layers of mytorch's stack (docs/architecture.md): ``hooks`` at the
very bottom (``Tensor.register_hook`` uses it), ``checkpoint`` above the autograd API,
``benchmark`` and ``data`` above ``nn``. Importing ``mytorch.utils.hooks`` runs this file first, so
it imports none of them; ``mytorch/__init__.py`` loads ``checkpoint``, ``benchmark`` (whose
``time_cuda`` piece registers at import) and ``data``, so ``torch.utils.checkpoint``,
``torch.utils.benchmark`` and ``torch.utils.data`` work without a separate import, as in torch.
"""
