"""``python -m mytorch.utils.bottleneck script.py [args]``."""
from . import main

print(main())
