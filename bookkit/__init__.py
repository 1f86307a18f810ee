"""bookkit: the tooling of the mytorch book (checks, build, Colab notebooks, exercises, feedback).

Run ``python -m bookkit --help`` for the command-line interface.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
