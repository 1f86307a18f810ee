"""Tensor operations, one module per family; each attaches its functions to ``Tensor``."""
