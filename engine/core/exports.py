"""What ``reproduce`` writes: metrics.json and the .npz arrays behind every number in it.

Every experiment writes through these two functions, so the files always have the same form
(documented, array by array, in docs/EXPORTS.md) and an outside script can recompute each
metric from the arrays without importing ``engine``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def json_default(value):
    """json.dumps's fallback: numpy scalars and arrays as Python numbers and lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "value"):  # enums
        return value.value
    raise TypeError(f"{type(value).__name__} is not JSON data")


def fields(obj, *names: str, prefix: str = "") -> dict:
    """``{prefix + name: obj.name}`` for each name: a result's arrays under their own names."""
    return {prefix + name: getattr(obj, name) for name in names}


def grid_to_json(a) -> list:
    """A 2-D map as nested lists, NaN and inf as null: JSON has no non-finite numbers."""
    return [[None if not np.isfinite(x) else float(x) for x in row] for row in np.asarray(a)]


def write_metrics(out_dir: Path, metrics: dict) -> dict:
    """Write ``metrics.json`` in ``out_dir`` and return ``metrics`` unchanged."""
    (Path(out_dir) / "metrics.json").write_text(json.dumps(metrics, indent=2, default=json_default))
    return metrics


def save_arrays(out_dir: Path, name: str, **arrays) -> Path:
    """``name``.npz of plain numeric arrays (never pickled objects), compressed."""
    path = Path(out_dir) / name
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    return path
