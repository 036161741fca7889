"""``.npz`` archives read with every member's ``.npy`` header checked before its data.

A header may claim an 8 TB array, which must be refused by reading a few bytes, not by running
out of memory. ``read_npz`` reads an archive that way; ``check_npy_header`` is the check of one
member, for other zip formats (sessions). Everything that reads user arrays (data sets, network
files, sessions) goes through here, always with ``allow_pickle=False``.
"""

from __future__ import annotations

import math
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
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
# What opening and reading one damaged member of a zip raises: a local header or CRC that does not
# match (BadZipFile), a corrupt deflate stream (zlib.error), one that ends early (EOFError), or a
# flag, version or compression method zipfile does not implement (NotImplementedError).
DAMAGED_MEMBER = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError)


@contextmanager
def member_read(where: str, what: str) -> Iterator[None]:
    """Around the opening and reading of one archive member: what a damaged member raises becomes
    one EngineInputError naming the file (``where``) and the member (``what``, e.g. "array W1")."""
    try:
        yield
    except DAMAGED_MEMBER as error:
        kind = (
            type(error).__name__
            if type(error).__module__ == "builtins"
            else type(error).__module__ + "." + type(error).__name__
        )
        cause = "uses a zip feature this app does not read" if isinstance(error, NotImplementedError) else "is damaged"
        message = f"{where}: cannot read {what}: the file {cause} ({kind}: {error})"
        # one line, whatever bytes a damaged name holds (a flipped byte may be a newline)
        raise EngineInputError("".join(c if c.isprintable() else repr(c)[1:-1] for c in message)) from None


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


def open_zip(path) -> zipfile.ZipFile:
    """``zipfile.ZipFile(path)``; a central directory asking for what zipfile does not implement
    (a damaged version or flag field) raises the BadZipFile that callers word for any damage."""
    try:
        return zipfile.ZipFile(path)
    except NotImplementedError as error:
        raise zipfile.BadZipFile(f"{error}") from None


def npz_names(path) -> list[str]:
    """The array names of an ``.npz``, as ``np.load`` shows them (no data read)."""
    with zipfile.ZipFile(path) as z:
        return [n[:-4] if n.endswith(".npy") else n for n in z.namelist()]


def read_npz(path, keys=None) -> dict[str, np.ndarray]:
    """{name: array} of the ``.npz`` at ``path`` (only ``keys`` when given), every member's header
    checked before any data is read. Limits and dtypes raise EngineInputError naming the array and
    the limit, and so does a damaged member (``member_read``); a damaged archive raises what
    zipfile / numpy raise (BadZipFile, OSError, ValueError), for the caller to word; a missing
    file raises FileNotFoundError."""
    path = Path(path)
    with open(path, "rb") as f:
        if f.read(6) == b"\x93NUMPY":
            raise EngineInputError(f"{path}: a single .npy array, not an .npz archive of named arrays")
    with open_zip(path) as z:
        members = {(n[:-4] if n.endswith(".npy") else n): n for n in z.namelist()}
        wanted = [k for k in members if keys is None or k in keys]
        total = 0
        for key in wanted:
            with member_read(str(path), f"array {key}"), z.open(members[key]) as raw:
                shape, _, dtype = check_npy_header(raw, key, str(path))
            total += math.prod(shape) * dtype.itemsize
            if total > MAX_ARCHIVE_BYTES:
                raise EngineInputError(
                    f"{path}: the arrays declare {total:.3g} bytes together; the limit is {MAX_ARCHIVE_BYTES:.3g} bytes"
                )
        arrays = {}
        for key in wanted:
            with member_read(str(path), f"array {key}"), z.open(members[key]) as raw:
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
