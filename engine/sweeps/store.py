"""The result store: ``DIR/sweep.json`` (the settings) and one ``DIR/cells/NAME.npz`` per finished cell.

Each cell is written the moment it is back, to a temporary file then renamed over its name
(``os.replace`` is atomic), so a sweep stopped at any instant — Ctrl-C, a killed process, a
closed GUI job — leaves only whole cells, and ``resume`` recomputes exactly the missing ones.
Arrays are stored raw (``np.savez``, never pickled), so a cell read back is bit-for-bit the one
computed, and the assembled results equal those of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.exports import json_default

FORMAT = 1  # of sweep.json and the cell files; a resume across formats is refused


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _plain(value):
    """Settings as JSON reads them back (tuples become lists), so a comparison is like with like."""
    return json.loads(json.dumps(value, default=json_default))


class CellStore:
    """One sweep's folder. ``open`` records or checks the settings; then cells come and go by name."""

    def __init__(self, out_dir):
        self.dir = Path(out_dir)
        self.cells_dir = self.dir / "cells"

    @property
    def record_path(self) -> Path:
        return self.dir / "sweep.json"

    def open(self, kind: str, settings: dict, total: int, mode: str = "new", check_only: bool = False) -> None:
        """``mode``: "new" refuses a folder that already holds a sweep; "resume" continues one with
        the same settings (and starts one where there is none); "replace" drops any old cells.
        ``check_only``: refuse as open would, but change nothing (before an executor starts)."""
        if mode not in ("new", "resume", "replace"):
            raise EngineInputError(f"store mode {mode!r} unknown")
        record = {"format": FORMAT, "kind": kind, "settings": _plain(settings), "cells": total}
        try:
            if self.dir.exists() and not self.dir.is_dir():
                raise EngineInputError(f"--out {self.dir} exists and is not a folder")
            self.dir.mkdir(parents=True, exist_ok=True)
            old = self._read_record()
            if old is not None and mode == "new":
                raise EngineInputError(
                    f"{self.dir} already holds a {old.get('kind')} sweep; "
                    "pass --resume to continue it, or choose a new --out"
                )
            if old is not None and mode == "resume" and old != record:
                raise EngineInputError(f"--resume refused: {self._difference(old, record)}")
            if check_only:
                return
            if mode == "replace" or old is None:
                shutil.rmtree(self.cells_dir, ignore_errors=True)
            self.cells_dir.mkdir(exist_ok=True)
            if old != record:
                text = json.dumps(record, indent=2).encode()
                _atomic_write(self.record_path, lambda f: f.write(text))
        except OSError as error:
            raise EngineInputError(f"cannot use the folder {str(self.dir)[:80]}: {error.strerror or error}") from None

    def _read_record(self) -> dict | None:
        if not self.record_path.exists():
            return None
        try:
            return json.loads(self.record_path.read_text())
        except (OSError, ValueError) as error:
            raise EngineInputError(f"{self.record_path} is not a sweep record: {error}") from None

    def _difference(self, old: dict, new: dict) -> str:
        where = f"the settings differ from those in {self.record_path}"
        if old.get("kind") != new["kind"] or old.get("format") != new["format"]:
            return f"{where}: it is a {old.get('kind')} sweep (format {old.get('format')})"
        a, b = old.get("settings", {}), new["settings"]
        keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        show = lambda v: json.dumps(v)[:40]
        return f"{where}: " + ", ".join(f"{k} {show(a.get(k))} -> {show(b.get(k))}" for k in keys[:4])

    def finished(self) -> set[str]:
        """Names of the cells on disk (whole files only: temporaries start with a dot)."""
        if not self.cells_dir.is_dir():
            return set()
        return {p.stem for p in self.cells_dir.glob("*.npz") if not p.name.startswith(".")}

    def write(self, name: str, arrays: dict) -> None:
        data = {k: np.asarray(v) for k, v in arrays.items()}
        _atomic_write(self.cells_dir / f"{name}.npz", lambda f: np.savez(f, **data))

    def read(self, name: str) -> dict:
        with np.load(self.cells_dir / f"{name}.npz", allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
