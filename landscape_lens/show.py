"""``ll.show(result)``: the window, opened on a result, in a process of its own.

The window is a separate process (``landscape-lens show FILE``), so a notebook or a training
script goes on while it is open, and closing it ends nothing else. The result is handed over as
the file its ``save`` writes, the same file the command line writes.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from landscape_lens.inputs import APIInputError


def show(result, *, wait: bool = False) -> subprocess.Popen:
    """Open the window's toolkit tab on ``result``.

    Parameters
    ----------
    result : Plane, Interpolation, Hessian, TrajectoryPlane, or a path
        What the API returned, or a file a ``save`` (or ``main.py landscape``) wrote.
    wait : bool
        Block until the window is closed.

    Returns
    -------
    subprocess.Popen
        The window's process.

    Raises
    ------
    APIInputError
        For anything that is neither a result nor an existing file.
    """
    if isinstance(result, (str, Path)):
        path = Path(result)
        if not path.is_file():
            raise APIInputError(f"result: {path}: no such file")
    elif callable(getattr(result, "save", None)):
        path = result.save(Path(tempfile.mkdtemp(prefix="landscape-lens-")) / "result.npz")
    else:
        raise APIInputError(f"result: a {type(result).__name__}; expected an API result or the file it saved")
    window = subprocess.Popen([sys.executable, "-m", "landscape_lens", "show", str(path)])
    if wait:
        window.wait()
    return window
