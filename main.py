"""Landscape Lens from a source tree: ``python3 main.py`` is ``landscape-lens`` (landscape_lens.cli)."""

import sys

from landscape_lens.cli import main as _main


def main(argv=None) -> int:
    return _main(argv, prog="main.py")


if __name__ == "__main__":
    sys.exit(main())
