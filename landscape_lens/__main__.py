"""``python -m landscape_lens``: the same as ``landscape-lens``."""

import sys

from .cli import main

sys.exit(main())
