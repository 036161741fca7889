"""The run folder's files, and how each one is written so that a killed writer leaves it readable.

A run folder (docs/EXPORTS.md, "Training runs") holds

- ``manifest.json``: the run's settings and the complete checkpoints, replaced whole;
- ``scalars.jsonl``: one JSON object a line per recorded step, appended;
- ``sharpness.jsonl``: one line per sharpness measurement, appended;
- ``checkpoints/step_<step>.npz``: one state_dict each, the tensors' names as keys;
- ``invariants/step_<step>.npz``: the rescaling invariants of that checkpoint's hidden units;
- ``writer.lock`` while a writer holds the folder.

**Atomicity.** Every whole file is written to a temporary name in its own folder
(``.<name>.tmp-<pid>-<n>``), flushed, fsync'd and ``os.replace``d onto its name, then the folder
is fsync'd: a reader sees the old file or the new one, never part of one. The manifest is
replaced only after the files it names have landed, and a file it stops naming is deleted only
after that, so every file it names exists. The JSON-lines files are appended a line per
``os.write``: a kill leaves a last line without its newline at worst, which readers skip.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import zipfile
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.npz import read_npz

FORMAT = "landscape-lens run"
VERSION = 1
MANIFEST = "manifest.json"
SCALARS = "scalars.jsonl"
SHARPNESS = "sharpness.jsonl"
LOCK = "writer.lock"
CHECKPOINTS = "checkpoints"
INVARIANTS = "invariants"
TEMP_MARK = ".tmp-"
# the invariants' fields, each a key "<layer>/<field>" of an invariants file
INVARIANT_FIELDS = ("c", "law", "locked", "negative_share", "reason")

# torch dtypes numpy has no type for: stored as their bits, an unsigned integer of the same width
_BITS = {"bfloat16": np.uint16, "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}
_counter = itertools.count()


def checkpoint_name(step: int) -> str:
    """The checkpoint file of ``step``, relative to the run folder."""
    return f"{CHECKPOINTS}/step_{step:09d}.npz"


def invariants_name(step: int) -> str:
    """The invariants file of ``step``, relative to the run folder."""
    return f"{INVARIANTS}/step_{step:09d}.npz"


def is_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file of ``write_atomic`` (a writer's leftover when it died)."""
    return name.startswith(".") and TEMP_MARK in name


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so the names replaced in it survive a power loss (not possible everywhere)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, write) -> None:
    """Write ``path`` through ``write(file)`` to a temporary name beside it, fsync it and replace
    ``path`` with it: ``path`` is the old file or the new one whenever the writer dies."""
    path = Path(path)
    temp = path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{next(_counter)}")
    try:
        with open(temp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)


def write_json(path: Path, obj) -> None:
    """``obj`` as indented JSON at ``path``, atomically."""
    text = json.dumps(obj, indent=1, allow_nan=False) + "\n"
    write_atomic(path, lambda f: f.write(text.encode()))


def json_line(obj) -> bytes:
    """One JSON-lines record. Floats are written by ``repr`` (they read back to the same double);
    NaN and ±inf as Python's json writes them (NaN, Infinity), which ``json.loads`` reads."""
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


def read_lines(path: Path, offset: int = 0) -> tuple[list[dict], list[str], int]:
    """(records, problems, new offset) of the complete lines of a JSON-lines file from byte
    ``offset``: a last line without its newline is left for the next read (it may be a line
    being written, or one torn by a kill); a complete line that is not a JSON object is skipped
    and named in ``problems``. A missing file is no lines."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], [], offset
    end = data.rfind(b"\n") + 1
    records, problems, at = [], [], offset
    for line in data[:end].split(b"\n")[:-1]:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        elif line.strip():
            problems.append(f"{path.name}: the line at byte {at} is not a JSON record; it is skipped")
        at += len(line) + 1
    return records, problems, offset + end


def complete_length(path: Path) -> int:
    """Bytes of ``path`` up to and including its last newline (0 for a missing file)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return 0
    return data.rfind(b"\n") + 1


# ── state_dicts ──────────────────────────────────────────────────────────────────────────────


def dtype_name(t) -> str:
    """A torch dtype's name without ``torch.``: "float32", "int64", "bfloat16"."""
    return str(t.dtype).removeprefix("torch.")


def state_schema(state) -> dict[str, dict]:
    """{name: {"dtype", "shape"}} of a state_dict, in its order (the manifest's ``state``)."""
    return {name: {"dtype": dtype_name(t), "shape": list(t.shape)} for name, t in state.items()}


def as_array(name: str, t) -> np.ndarray:
    """A state_dict tensor as the numpy array stored for it: the same values and dtype; for the
    dtypes numpy lacks (bfloat16, float8), the same bits as an unsigned integer."""
    if not isinstance(t, torch.Tensor):
        raise EngineInputError(f"state_dict entry {name!r} is {type(t).__name__}, not a tensor")
    if t.is_quantized or t.is_sparse or t.layout != torch.strided:
        raise EngineInputError(f"state_dict entry {name!r} is a {t.layout} tensor; only dense tensors are recorded")
    t = t.detach().cpu()
    bits = _BITS.get(dtype_name(t))
    if bits is not None:
        return t.contiguous().view(getattr(torch, f"uint{8 * np.dtype(bits).itemsize}")).numpy()
    return t.numpy()


def as_tensor(array: np.ndarray, dtype: str):
    """The tensor ``as_array`` stored as ``array``, in torch dtype ``dtype``."""
    t = torch.from_numpy(array if array.flags.c_contiguous else array.copy())
    if dtype in _BITS:
        return t.view(getattr(torch, dtype))
    return t


def stored_dtype(name: str) -> np.dtype | None:
    """The numpy dtype ``as_array`` stores a tensor of torch dtype ``name`` as; None for a name it never writes."""
    if name in _BITS:
        return np.dtype(_BITS[name])
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError):
        return None
    return dtype if dtype.kind in "biufc" and str(dtype) == name else None


def write_state(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """The arrays as an uncompressed ``.npz`` keyed by the state_dict's names, atomically."""
    write_atomic(path, lambda f: np.savez(f, **arrays))


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` of the folder, headers checked first; EngineInputError, one line,
    for a missing or damaged file."""
    try:
        return read_npz(path)
    except FileNotFoundError:
        raise EngineInputError(f"{path}: missing") from None
    except EngineInputError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise EngineInputError(f"{path}: not a readable .npz archive: {e}") from None


def step_of(name: str) -> int | None:
    """The step in a file name ``step_<digits>.npz``, or None."""
    found = re.fullmatch(r"step_(\d+)\.npz", name)
    return int(found.group(1)) if found else None


def finite_or_none(x: float) -> float | None:
    """A float for the manifest's strict JSON: None for NaN and ±inf."""
    return x if math.isfinite(x) else None


def is_step(value) -> bool:
    """Whether ``value`` is a step a run records: an int (not a bool) that fits int64."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def _is_shape(value) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value)


def read_manifest(path: Path) -> dict:
    """The manifest at ``path``, its structure checked; EngineInputError, one line, when the folder
    has none, or it is damaged, or it is not a run's."""
    path = Path(path)
    try:
        manifest = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise EngineInputError(f"{path.parent}: not a run folder (no {MANIFEST})") from None
    except (OSError, ValueError) as e:
        raise EngineInputError(f"{path}: damaged, not readable JSON ({type(e).__name__})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise EngineInputError(f'{path}: not the manifest of a Landscape Lens run (no "format": "{FORMAT}")')
    if not isinstance(manifest.get("version"), int) or manifest["version"] > VERSION:
        raise EngineInputError(f"{path}: format version {manifest.get('version')!r}; this app reads up to {VERSION}")
    entries, state, layers = manifest.get("checkpoints"), manifest.get("state"), manifest.get("layers")
    ok = (
        isinstance(entries, list)
        and all(
            isinstance(e, dict)
            and is_step(e.get("step"))
            and e.get("state") == checkpoint_name(e["step"])  # never a file outside the folder's own
            and e.get("invariants") in (None, invariants_name(e["step"]))
            for e in entries
        )
        and isinstance(state, dict)
        and all(
            isinstance(v, dict) and isinstance(v.get("dtype"), str) and _is_shape(v.get("shape"))
            for v in state.values()
        )
        and isinstance(layers, list)
        and all(isinstance(name, str) for name in layers)
    )
    if not ok:
        raise EngineInputError(f"{path}: damaged, its checkpoints, state or layers are not as a run writes them")
    return manifest


def schema_difference(run: dict, other: dict, what: str) -> str | None:
    """One line saying how ``what``'s state_dict schema ``other`` differs from the run's, or None."""
    missing, extra = [k for k in run if k not in other], [k for k in other if k not in run]
    if missing:
        return f"{what} has no {missing[0]!r}, which the run's checkpoints hold"
    if extra:
        return f"{what} has {extra[0]!r}, which the run's checkpoints lack"
    for k in run:
        if run[k] != other[k]:
            return (
                f"{k!r} is {other[k]['dtype']} {tuple(other[k]['shape'])} in {what}, "
                f"{run[k]['dtype']} {tuple(run[k]['shape'])} in the run"
            )
    return None
