"""``.npz`` archives read with every member's ``.npy`` header checked before its data.

A header may claim an 8 TB array, which must be refused by reading a few bytes, not by running
out of memory. ``read_npz`` reads an archive that way; ``check_npy_header`` is the check of one
member, for other zip formats (sessions). Everything that reads user arrays (data sets, network
files, sessions) goes through here, always with ``allow_pickle=False``.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError

# One array's declared size, and all of one archive's arrays together: a header may claim terabytes.
MAX_ARRAY_BYTES = 2_000_000_000
MAX_ARCHIVE_BYTES = 4_000_000_000
# dtype kinds an archive may hold: booleans, integers, floats, complex (refused later where a
# network or data is read), text. Not objects, datetimes, timedeltas or structured records.
PLAIN_KINDS = "biufcUS"
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def check_npy_header(stream, name: str, where: str = "", limit: int = MAX_ARRAY_BYTES):
    """(shape, fortran_order, dtype) from the ``.npy`` header at the start of ``stream``, or
    EngineInputError when the version is unknown, the dtype is not plain numbers or text, or the
    declared size passes ``limit`` bytes. Reads the header only."""
    at = f"{where}: " if where else ""
    try:
        version = np.lib.format.read_magic(stream)
    except ValueError:
        raise EngineInputError(f"{at}{name} is not an .npy array") from None
    read_header = _HEADER_READERS.get(version)
    if read_header is None:
        raise EngineInputError(
            f"{at}{name} is .npy format version {version[0]}.{version[1]}; this app reads 1.0 and 2.0"
        )
    shape, fortran, dtype = read_header(stream)
    if dtype.hasobject or dtype.kind not in PLAIN_KINDS or dtype.fields is not None:
        raise EngineInputError(f"{at}{name} has dtype {dtype}, which is not plain numbers or text")
    size = math.prod(shape) * dtype.itemsize
    if size > limit:
        raise EngineInputError(
            f"{at}{name} declares shape {shape} of {dtype} ({size:.3g} bytes); the limit is {limit:.3g} bytes per array"
        )
    return shape, fortran, dtype


def npz_names(path) -> list[str]:
    """The array names of an ``.npz``, as ``np.load`` shows them (no data read)."""
    with zipfile.ZipFile(path) as z:
        return [n[:-4] if n.endswith(".npy") else n for n in z.namelist()]


def read_npz(path, keys=None) -> dict[str, np.ndarray]:
    """{name: array} of the ``.npz`` at ``path`` (only ``keys`` when given), every member's header
    checked before any data is read. Limits and dtypes raise EngineInputError naming the array and
    the limit; a damaged zip raises what zipfile / numpy raise (BadZipFile, OSError, ValueError,
    EOFError), for the caller to word; a missing file raises FileNotFoundError."""
    path = Path(path)
    with open(path, "rb") as f:
        if f.read(6) == b"\x93NUMPY":
            raise EngineInputError(f"{path}: a single .npy array, not an .npz archive of named arrays")
    with zipfile.ZipFile(path) as z:
        members = {(n[:-4] if n.endswith(".npy") else n): n for n in z.namelist()}
        wanted = [k for k in members if keys is None or k in keys]
        total = 0
        for key in wanted:
            with z.open(members[key]) as raw:
                shape, _, dtype = check_npy_header(raw, key, str(path))
            total += math.prod(shape) * dtype.itemsize
            if total > MAX_ARCHIVE_BYTES:
                raise EngineInputError(
                    f"{path}: the arrays declare {total:.3g} bytes together; the limit is {MAX_ARCHIVE_BYTES:.3g} bytes"
                )
        arrays = {}
        for key in wanted:
            with z.open(members[key]) as raw:
                arrays[key] = np.lib.format.read_array(raw, allow_pickle=False)
        return arrays


def read_xy(path) -> tuple[np.ndarray, np.ndarray]:
    """The arrays X and Y of a data ``.npz``, headers checked first, as stored; EngineInputError for
    a missing file, a damaged archive, or X or Y missing (naming what the archive holds)."""
    path = Path(path)
    if not path.is_file():
        raise EngineInputError(f"{path}: no such data file")
    try:
        arrays = read_npz(path, keys=("X", "Y"))
    except EngineInputError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise EngineInputError(f"{path}: not a readable .npz archive: {e}") from None
    if set(arrays) != {"X", "Y"}:
        raise EngineInputError(
            f"{path}: a data .npz needs arrays 'X' (inputs, batch first) and 'Y' (labels or targets); "
            f"it holds {', '.join(npz_names(path)) or 'none'}"
        )
    return arrays["X"], arrays["Y"]
