"""Entry point for ``python -m bookkit``."""

import sys

from bookkit.cli import main

if __name__ == "__main__":
    sys.exit(main())
