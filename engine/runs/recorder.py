"""``Recorder``: what a researcher puts in their own training loop to record a run folder.

The loop's thread writes only the step's scalars (one appended line) and, at a checkpoint step,
copies the state_dict. A background thread writes the checkpoint, measures the invariants and the
sharpness on its own copy of the model, and replaces the manifest; the loop waits for it only when
two checkpoints are already queued. Every file lands atomically (``engine.runs.format``), so a
process killed at any moment leaves a folder that ``open_run`` reads: the scalars of every step
whose ``step()`` returned, and every checkpoint the manifest had listed.
"""

from __future__ import annotations

import copy
import numbers
import os
import queue
import threading
import time
from pathlib import Path

import numpy as np

import engine.runs.format as fmt
import engine.runs.lock as lock
import engine.runs.measures as measures
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.validation import integer

# A checkpoint every 100 steps. Each checkpoint's files are fsync'd, which keeps the background
# thread busier than many steps of a small model take; every 100 steps it keeps up, and the
# recorder's share of a step of benchmarks/bench_recorder.py's small CNN (digits, batch 64) stays
# within its 5 % budget (that file measures it).
DEFAULT_EVERY = 100
DEFAULT_MAX_CHECKPOINTS = 200
# Snapshots waiting for the background thread before ``step`` waits for it.
QUEUE_DEPTH = 2


class Recorder:
    """Record a training run into ``run_dir``: every step's loss and learning rate, checkpoints of
    the model's state_dict, the invariants of its hidden units and its sharpness.

    Parameters
    ----------
    run_dir : str or Path
        The run folder; created if missing. A folder holding another run is refused unless
        ``resume``; a folder holding other files is refused.
    model : torch.nn.Module
        The model being trained. Its state_dict (parameters and buffers) is copied at checkpoint
        steps; the recorder never changes it.
    every : int
        A checkpoint (state_dict and invariants) at every step that is a multiple of ``every``.
    sharpness_every : int or None
        The sharpness (the loss Hessian's top eigenvalue on ``sharpness_data``) at every step that
        is a multiple of it; None for none.
    sharpness_data : (X, Y)
        Tensors or arrays, batch first: the fixed data the sharpness is measured on. Required
        with ``sharpness_every``.
    loss : {"sum", "mean", "cross-entropy"} or None
        The sharpness's loss; None: cross-entropy for integer labels, else "mean".
    resume : bool
        Continue the run in ``run_dir`` (the default step continues after its last); start one if
        there is none.
    max_checkpoints : int
        Past this many checkpoints they are thinned to a log-spaced set of steps that keeps the
        first and the latest. The scalars are all kept.

    Use as a context manager, or call ``close()``; ``step()`` once per training step. A second
    recorder on a folder whose writer is alive is refused; a dead writer's lock is taken over.
    """

    def __init__(
        self,
        run_dir,
        model,
        *,
        every: int = DEFAULT_EVERY,
        sharpness_every: int | None = None,
        sharpness_data=None,
        loss: str | None = None,
        resume: bool = False,
        max_checkpoints: int = DEFAULT_MAX_CHECKPOINTS,
    ):
        self.every = integer("every", every, 1)
        self.sharpness_every = None if sharpness_every is None else integer("sharpness_every", sharpness_every, 1)
        self.max_checkpoints = integer("max_checkpoints", max_checkpoints, 2)
        if not isinstance(model, torch.nn.Module):
            raise EngineInputError(f"model is {type(model).__name__}; expected a torch.nn.Module")
        self.model = model
        schema = fmt.state_schema(model.state_dict())
        for name, t in model.state_dict().items():
            fmt.as_array(name, t)  # refuses what cannot be stored, before any file is made
        self._data = self._check_sharpness(sharpness_data, loss)
        self._copy = self._model_copy(model)
        self.folder = Path(run_dir)
        if self.folder.exists() and not self.folder.is_dir():
            raise EngineInputError(f"{self.folder}: exists and is not a folder")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EngineInputError(f"{self.folder}: cannot be made ({e.strerror})") from None
        self._lock = lock.acquire(self.folder)
        try:
            self.manifest = self._open_manifest(schema, resume)
            self._last_step = self._prepare_files()
            self._write_manifest()
        except BaseException:
            lock.release(self.folder, self._lock)
            raise
        self._scalars = os.open(self.folder / fmt.SCALARS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._example_box = _first_input(model)  # one input of the loop's, for the invariants' layer shapes
        self._units: measures.UnitInvariants | None = None
        self._error: BaseException | None = None
        self._queue: queue.Queue = queue.Queue(QUEUE_DEPTH)
        self._worker = threading.Thread(target=self._work, name="engine-run-recorder", daemon=True)
        self._worker.start()
        self.closed = False

    # ── set-up ────────────────────────────────────────────────────────────────────────────────

    def _check_sharpness(self, data, kind):
        """(X, Y, kind) as numpy for the sharpness, or None without it."""
        if self.sharpness_every is None:
            if data is not None:
                raise EngineInputError("sharpness_data is given but sharpness_every is not; give both or neither")
            return None
        if data is None:
            raise EngineInputError("sharpness_every needs sharpness_data = (X, Y): the data to measure it on")
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise EngineInputError("sharpness_data must be a pair (X, Y) of tensors or arrays")
        X, Y = measures.as_numpy(data[0], "sharpness_data's X"), measures.as_numpy(data[1], "sharpness_data's Y")
        kind = measures.default_loss_kind(Y) if kind is None else kind
        if kind not in measures.LOSS_KINDS:
            raise EngineInputError(f"loss = {kind!r}: choose one of {', '.join(measures.LOSS_KINDS)}")
        return X, Y, kind

    def _model_copy(self, model):
        """The background thread's own copy of the model, checked once with the sharpness's loss."""
        try:
            mine = copy.deepcopy(model)
        except Exception as e:
            raise EngineInputError(f"model: cannot be copied for the recorder ({type(e).__name__}: {e})") from None
        if self._data is not None:
            loss = measures.sharpness_loss(mine, *self._data)  # bad data: one line, before any file
            if loss.n_params < 3:
                raise EngineInputError(f"sharpness: Lanczos needs at least 3 parameters, the model has {loss.n_params}")
        return mine

    def _open_manifest(self, schema: dict, resume: bool) -> dict:
        path = self.folder / fmt.MANIFEST
        if path.exists():
            if not resume:
                raise EngineInputError(
                    f"{self.folder}: holds a run already; pass resume=True to continue it, or choose another folder"
                )
            try:
                manifest = fmt.read_manifest(path)
            except EngineInputError as e:
                raise EngineInputError(f"{e}; it cannot be continued (open_run reads what survives)") from None
            difference = fmt.schema_difference(manifest["state"], schema, "the model")
            if difference:
                raise EngineInputError(f"{self.folder}: {difference}; it is not this run's model")
        else:
            others = [
                p.name
                for p in self.folder.iterdir()
                if p.name != fmt.LOCK
                and not fmt.is_temporary(p.name)
                and not (p.name in (fmt.CHECKPOINTS, fmt.INVARIANTS) and p.is_dir())
                and p.name not in (fmt.SCALARS, fmt.SHARPNESS)
            ]
            if others:
                raise EngineInputError(
                    f"{self.folder}: not a run folder and not empty (holds {others[0]!r}); choose a new folder"
                )
            manifest = {
                "format": fmt.FORMAT,
                "version": fmt.VERSION,
                "created": _now(),
                "state": schema,
                "layers": [],
                "no_invariants": None,
                "checkpoints": [],
                "thinned": 0,
            }
        manifest.update(
            finished=False,
            updated=_now(),
            every=self.every,
            sharpness_every=self.sharpness_every,
            sharpness_loss=None if self._data is None else self._data[2],
            sharpness_samples=None if self._data is None else len(self._data[0]),
            max_checkpoints=self.max_checkpoints,
            scalars=fmt.SCALARS,
            sharpness=fmt.SHARPNESS,
        )
        return manifest

    def _prepare_files(self) -> int | None:
        """Clear a dead writer's leftovers (temporary files, files the manifest does not list, a
        torn last line), drop listed checkpoints whose files are gone, and return the last
        recorded step (None for a new run)."""
        whole = lambda e: all((self.folder / e[key]).is_file() for key in ("state", "invariants") if e[key])
        self.manifest["checkpoints"] = [e for e in self.manifest["checkpoints"] if whole(e)]  # lost by hand
        listed = {e[key] for e in self.manifest["checkpoints"] for key in ("state", "invariants") if e[key]}
        for sub in (fmt.CHECKPOINTS, fmt.INVARIANTS):
            (self.folder / sub).mkdir(exist_ok=True)
            for p in (self.folder / sub).iterdir():
                if fmt.is_temporary(p.name) or f"{sub}/{p.name}" not in listed:
                    p.unlink(missing_ok=True)
        for p in self.folder.iterdir():
            if fmt.is_temporary(p.name) and p.is_file():
                p.unlink(missing_ok=True)
        last = None
        for name in (fmt.SCALARS, fmt.SHARPNESS):
            path = self.folder / name
            if path.exists():
                os.truncate(path, fmt.complete_length(path))
        records, _, _ = fmt.read_lines(self.folder / fmt.SCALARS)
        steps = [r["step"] for r in records if isinstance(r.get("step"), int)]
        if steps:
            last = max(steps)
        if self.manifest["checkpoints"]:
            last = max(last if last is not None else -1, self.manifest["checkpoints"][-1]["step"])
        return last

    # ── the loop's calls ──────────────────────────────────────────────────────────────────────

    @property
    def last_step(self) -> int | None:
        """The last step recorded (None before the first)."""
        return self._last_step

    def step(self, step: int | None = None, *, loss=None, lr=None) -> int:
        """Record one training step; returns its step number.

        Parameters
        ----------
        step : int or None
            The step number; None: one after the last recorded (0 for a new run). Steps must
            increase.
        loss, lr : float, 0-d tensor or array, or None
            The step's training loss and learning rate (None: NaN). NaN and ±inf are recorded.
        """
        if self.closed:
            raise EngineInputError(f"{self.folder}: the recorder is closed")
        self._raise_error()
        if step is None:
            step = 0 if self._last_step is None else self._last_step + 1
        else:
            step = integer("step", step, 0)
            if self._last_step is not None and step <= self._last_step:
                raise EngineInputError(f"step = {step}: steps must increase; the last recorded is {self._last_step}")
        record = {"step": step, "loss": _scalar("loss", loss), "lr": _scalar("lr", lr)}
        os.write(self._scalars, fmt.json_line(record))
        self._last_step = step
        checkpoint = step % self.every == 0
        sharpness = self.sharpness_every is not None and step % self.sharpness_every == 0
        if checkpoint and self._units is None:
            # traced on this thread with the background one idle: fx patches nn.Module.__call__ meanwhile
            self._queue.join()
            self._units = measures.UnitInvariants(self._copy, self._example_box.get("input"))
        if checkpoint or sharpness:
            state = {name: np.array(fmt.as_array(name, t), copy=True) for name, t in self.model.state_dict().items()}
            self._queue.put((step, state, checkpoint, sharpness))
        return step

    def flush(self) -> None:
        """Wait until every queued checkpoint and sharpness has landed."""
        self._queue.join()
        self._raise_error()

    def close(self) -> None:
        """Wait for the queued work, mark the run finished in the manifest and release the lock."""
        if self.closed:
            return
        self.closed = True
        self._queue.put(None)
        self._worker.join()
        self._example_box["handle"].remove()
        try:
            os.fsync(self._scalars)
        finally:
            os.close(self._scalars)
        try:
            if self._error is None:
                self.manifest["finished"] = True
                self._write_manifest()
        finally:
            lock.release(self.folder, self._lock)
        self._raise_error()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    # ── the background thread ─────────────────────────────────────────────────────────────────

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:
                    self._record(*item)
            except BaseException as error:  # re-raised in the loop's thread at its next call
                self._error = error
            finally:
                self._queue.task_done()

    def _record(self, step: int, state: dict, checkpoint: bool, sharpness: bool) -> None:
        schema = self.manifest["state"]
        tensors = {k: fmt.as_tensor(a, schema[k]["dtype"]) for k, a in state.items()}
        if sharpness:
            self._copy.load_state_dict(tensors)
            loss = measures.sharpness_loss(self._copy, *self._data)
            value, error, n_hvp = measures.sharpness_of(loss, seed=step)
            line = {"step": step, "sharpness": value, "error": error, "n_hvp": n_hvp, "loss": loss.loss()}
            with open(self.folder / fmt.SHARPNESS, "ab") as f:
                f.write(fmt.json_line(line))
                f.flush()
                os.fsync(f.fileno())
        if checkpoint:
            self._checkpoint(step, state, tensors)

    def _checkpoint(self, step: int, state: dict, tensors: dict) -> None:
        entry = {"step": step, "state": fmt.checkpoint_name(step), "invariants": None}
        fmt.write_state(self.folder / entry["state"], state)
        records = self._units(tensors)
        if records is None:
            self.manifest["no_invariants"] = self._units.why_none
        else:
            entry["invariants"] = fmt.invariants_name(step)
            fmt.write_state(self.folder / entry["invariants"], measures.invariant_arrays(records))
            self.manifest["layers"] = [r.name for r in records]
            self.manifest["no_invariants"] = None
        os.fsync(self._scalars)  # the manifest never lists a checkpoint whose step's scalars are not on disk
        entries = self.manifest["checkpoints"] + [entry]
        kept = set(measures.thin([e["step"] for e in entries], self.max_checkpoints))
        dropped = [e for e in entries if e["step"] not in kept]
        self.manifest["checkpoints"] = [e for e in entries if e["step"] in kept]
        self.manifest["thinned"] += len(dropped)
        self.manifest["updated"] = _now()
        self._write_manifest()
        for e in dropped:  # only once the manifest no longer lists them
            for key in ("state", "invariants"):
                if e[key]:
                    (self.folder / e[key]).unlink(missing_ok=True)

    def _write_manifest(self) -> None:
        fmt.write_json(self.folder / fmt.MANIFEST, self.manifest)


def _scalar(name: str, value) -> float | None:
    """A loss or learning rate as a float (None stays None): a number, or a one-element tensor or array."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    array = np.asarray(value) if isinstance(value, np.ndarray | np.generic) else None
    if array is None or array.size != 1 or array.dtype.kind not in "biuf":
        raise EngineInputError(f"{name} = {value!r} must be a real number or a one-element tensor")
    return float(array.reshape(()))


def _first_input(model) -> dict:
    """{"input": one sample of the first input ``model`` is called with, "handle": its hook}. The
    hook removes itself after that call; it is a plain function, so a deep copy of the model made
    meanwhile copies it as it is and copies no recorder."""
    box = {}

    def keep(module, args):
        x = args[0] if args else None
        if isinstance(x, torch.Tensor) and x.ndim >= 1 and len(x) and "input" not in box:
            box["input"] = x[:1].detach().clone()
        box["handle"].remove()

    box["handle"] = model.register_forward_pre_hook(keep)
    return box


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
