"""Data the app ships: presets (JSON), the stylesheet, example networks and data sets.

Read through ``importlib.resources``, so an installed copy finds them as a source tree does.
"""

from importlib.resources import files
from pathlib import Path


def path(*parts: str) -> Path:
    """A shipped file or folder. pip installs packages unzipped, so the resource is a real path
    (``np.load`` and ``torch.load`` need one)."""
    return Path(files(__name__).joinpath(*parts))
