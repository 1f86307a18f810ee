"""mytorch.utils: hooks handles now; data loading and checkpointing in later chapters."""
