"""``open_run``: a run folder read while its writer is alive, after it finished, or after it died.

What the manifest lists is complete (``engine.runs.format``), so a reader trusts it and reads only
that; the scalars are every complete line. Damage that a kill cannot cause but a disk or a hand
can (a manifest that is not JSON, a listed file gone, a damaged line) is reported in
``Run.problems``, one line each, and what precedes it still opens.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

import engine.runs.format as fmt
import engine.runs.lock as lock
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.runs.measures import LayerRecord, records_of


def open_run(run_dir) -> Run:
    """The run recorded in ``run_dir``.

    Parameters
    ----------
    run_dir : str or Path
        A folder written by ``Recorder``.

    Returns
    -------
    Run
        Its scalars, checkpoints, invariants and sharpness as they stand; ``refresh()`` reads
        what was added since.

    Raises
    ------
    EngineInputError
        The folder is missing or is not a run folder.
    """
    return Run(run_dir)


class Run:
    """A recorded run (see ``open_run``).

    Attributes
    ----------
    steps, loss, lr : np.ndarray
        One entry per recorded step: the step (int64) and its loss and learning rate (float64;
        NaN where none was given).
    checkpoint_steps : np.ndarray
        int64, ascending: the steps with a checkpoint (``checkpoint(step)``).
    sharpness_steps, sharpness, sharpness_error : np.ndarray
        The steps where the sharpness was measured, the loss Hessian's top eigenvalue there and
        the residual of its Ritz pair (an eigenvalue of the Hessian lies within it).
    layer_names : list[str]
        The layers whose hidden units' invariants are recorded ([] when none are).
    problems : list[str]
        One line for each thing found damaged; what precedes it is read.
    manifest : dict
        The manifest as last read.
    """

    def __init__(self, run_dir):
        if not isinstance(run_dir, (str, os.PathLike)) or "\0" in str(run_dir):
            raise EngineInputError(f"run_dir: {run_dir!r:.80}; expected the path of a run folder")
        self.folder = Path(run_dir)
        if not self.folder.is_dir():
            raise EngineInputError(f"{self.folder}: no such run folder")
        if not (self.folder / fmt.MANIFEST).exists() and not (self.folder / fmt.SCALARS).exists():
            raise EngineInputError(f"{self.folder}: not a run folder (no {fmt.MANIFEST})")
        self.steps = np.zeros(0, np.int64)
        self.loss = np.zeros(0)
        self.lr = np.zeros(0)
        self.sharpness_steps = np.zeros(0, np.int64)
        self.sharpness = np.zeros(0)
        self.sharpness_error = np.zeros(0)
        self._offsets = {fmt.SCALARS: 0, fmt.SHARPNESS: 0}
        self._invariants: dict[int, list[LayerRecord]] = {}
        self._line_problems: list[str] = []
        self.refresh()

    # ── reading ───────────────────────────────────────────────────────────────────────────────

    def refresh(self) -> Run:
        """Read what was added since the last read: the manifest again, and only the new lines of
        the scalars and the sharpness. Returns the run."""
        self._read_manifest()
        rows, problems = self._new_lines(fmt.SCALARS)
        self._line_problems += problems
        rows = [r for r in rows if fmt.is_step(r.get("step"))]
        if rows:
            self.steps = np.concatenate([self.steps, np.array([r["step"] for r in rows], np.int64)])
            self.loss = np.concatenate([self.loss, _floats(r.get("loss") for r in rows)])
            self.lr = np.concatenate([self.lr, _floats(r.get("lr") for r in rows)])
        rows, problems = self._new_lines(fmt.SHARPNESS)
        self._line_problems += problems
        rows = [r for r in rows if fmt.is_step(r.get("step"))]
        if rows:
            self.sharpness_steps = np.concatenate([self.sharpness_steps, np.array([r["step"] for r in rows], np.int64)])
            self.sharpness = np.concatenate([self.sharpness, _floats(r.get("sharpness") for r in rows)])
            self.sharpness_error = np.concatenate([self.sharpness_error, _floats(r.get("error") for r in rows)])
        self.problems = self._manifest_problems + self._line_problems
        return self

    def _new_lines(self, name: str) -> tuple[list[dict], list[str]]:
        records, problems, self._offsets[name] = fmt.read_lines(self.folder / name, self._offsets[name])
        return records, problems

    def _read_manifest(self) -> None:
        """The manifest and the checkpoints it lists up to the first missing file (read twice
        before one is called missing: a live writer may have thinned it meanwhile)."""
        self._manifest_problems = []
        for attempt in range(2):
            try:
                self.manifest = fmt.read_manifest(self.folder / fmt.MANIFEST)
            except EngineInputError as e:
                self._manifest_problems = [f"{e}; the checkpoints are taken from the files present"]
                self.manifest = self._manifest_from_files()
            entries = self.manifest["checkpoints"]
            missing = next(
                (
                    (i, e[key])
                    for i, e in enumerate(entries)
                    for key in ("state", "invariants")
                    if e[key] and not (self.folder / e[key]).is_file()
                ),
                None,
            )
            if missing is None:
                break
            if attempt == 1:
                i, name = missing
                self._manifest_problems.append(
                    f"{self.folder}: {name}, listed in {fmt.MANIFEST}, is missing; "
                    f"the checkpoints from step {entries[i]['step']} on are left out"
                )
                entries = entries[:i]
        self._entries = {e["step"]: e for e in entries}
        self.checkpoint_steps = np.array(sorted(self._entries), np.int64)
        self.layer_names = list(self.manifest["layers"])
        self._invariants = {s: r for s, r in self._invariants.items() if s in self._entries}

    def _manifest_from_files(self) -> dict:
        """A manifest made from the checkpoint files that open as archives (the dtypes as stored)."""
        entries, schema, layers = [], None, []
        folder = self.folder / fmt.CHECKPOINTS
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            step = fmt.step_of(path.name)
            if step is None:
                continue
            try:
                with zipfile.ZipFile(path) as z:
                    z.namelist()
                arrays = fmt.read_arrays(path)
            except (zipfile.BadZipFile, OSError, EngineInputError):
                continue
            if schema is None:
                schema = {k: {"dtype": str(a.dtype), "shape": list(a.shape)} for k, a in arrays.items()}
            invariants = fmt.invariants_name(step)
            if (self.folder / invariants).is_file():
                try:
                    names = [k[:-2] for k in fmt.read_arrays(self.folder / invariants) if k.endswith("/c")]
                    layers = layers or names
                except EngineInputError:
                    invariants = None
            else:
                invariants = None
            entries.append({"step": step, "state": fmt.checkpoint_name(step), "invariants": invariants})
        return {"checkpoints": entries, "state": schema or {}, "layers": layers, "finished": False}

    # ── what the writer says ──────────────────────────────────────────────────────────────────

    @property
    def finished(self) -> bool:
        """Whether the writer closed the run (as of the last read)."""
        return bool(self.manifest.get("finished", False))

    @property
    def writer_alive(self) -> bool:
        """Whether ``writer.lock`` is present and its writer's process is alive (or on another host)."""
        return lock.holder_alive(lock.read_lock(self.folder))

    # ── checkpoints ───────────────────────────────────────────────────────────────────────────

    def _entry(self, step) -> dict:
        entry = self._entries.get(int(step)) if isinstance(step, int | np.integer) else None
        if entry is None:
            listed = self.checkpoint_steps
            near = ", ".join(map(str, listed[:5])) + (" …" if len(listed) > 5 else "")
            raise EngineInputError(f"{self.folder}: no checkpoint at step {step!r}; the run has {near or 'none'}")
        return entry

    def checkpoint(self, step: int) -> dict:
        """The state_dict recorded at ``step``: {name: torch.Tensor}, in the model's order and with
        its exact dtypes."""
        entry = self._entry(step)
        path = self.folder / entry["state"]
        if not path.is_file():
            raise EngineInputError(f"{path}: gone (thinned by the writer since the last refresh(); refresh and retry)")
        arrays = fmt.read_arrays(path)
        schema = self.manifest["state"]
        if set(arrays) != set(schema):
            raise EngineInputError(f"{path}: holds other tensors than the manifest's state lists")
        for name, meta in schema.items():  # the file holds what the manifest says, or it is not read as that
            if fmt.stored_dtype(meta["dtype"]) != arrays[name].dtype or list(arrays[name].shape) != list(meta["shape"]):
                raise EngineInputError(
                    f"{path}: {name!r} is stored as {arrays[name].dtype} {arrays[name].shape}; "
                    f"the manifest says {meta['dtype']} {tuple(meta['shape'])}"
                )
        return {name: fmt.as_tensor(arrays[name], schema[name]["dtype"]) for name in schema}

    def load_into(self, model, step: int):
        """Load the checkpoint of ``step`` into ``model`` (strictly); EngineInputError, one line,
        when the model's state_dict has other names, shapes or dtypes. Returns the model."""
        if not isinstance(model, torch.nn.Module):
            raise EngineInputError(f"model is {type(model).__name__}; expected a torch.nn.Module")
        difference = fmt.schema_difference(self.manifest["state"], fmt.state_schema(model.state_dict()), "the model")
        if difference:
            raise EngineInputError(f"{self.folder}: step {step}'s checkpoint does not fit the model: {difference}")
        model.load_state_dict(self.checkpoint(step))
        return model

    # ── invariants ────────────────────────────────────────────────────────────────────────────

    @property
    def invariant_steps(self) -> np.ndarray:
        """The checkpoint steps whose invariants were recorded."""
        return np.array([s for s in self.checkpoint_steps if self._entries[s]["invariants"]], np.int64)

    def invariants(self, step: int) -> list[LayerRecord]:
        """The invariants of every layer's hidden units at the checkpoint of ``step``, in
        ``layer_names`` order: records with ``name``, ``c``, ``law``, ``locked``, ``negative_share``."""
        entry = self._entry(step)
        if not entry["invariants"]:
            raise EngineInputError(f"{self.folder}: no invariants were recorded at step {step}")
        if entry["step"] not in self._invariants:
            arrays = fmt.read_arrays(self.folder / entry["invariants"])
            try:
                self._invariants[entry["step"]] = records_of(arrays, self.layer_names)
            except KeyError as e:
                raise EngineInputError(
                    f"{self.folder / entry['invariants']}: has no array {e.args[0]!r} of the manifest's layers"
                ) from None
        return self._invariants[entry["step"]]

    def invariant_history(self) -> dict[str, np.ndarray]:
        """{layer: c over ``invariant_steps``, (T, units)}."""
        steps = self.invariant_steps
        per_step = [self.invariants(int(s)) for s in steps]
        return {
            name: np.stack([records[i].c for records in per_step]) if len(steps) else np.zeros((0, 0))
            for i, name in enumerate(self.layer_names)
        }

    def __repr__(self) -> str:
        return (
            f"Run({str(self.folder)!r}: {len(self.steps)} steps, {len(self.checkpoint_steps)} checkpoints, "
            f"{len(self.sharpness_steps)} sharpness, {'finished' if self.finished else 'not finished'})"
        )


def _floats(values) -> np.ndarray:
    """Recorded numbers as float64; None (not given) and anything not a number as NaN."""
    return np.array([float(v) if isinstance(v, int | float) else np.nan for v in values], np.float64)
