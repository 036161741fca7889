"""Following a run folder while it is written: a job whose partials are the run's view, made anew
whenever something new has landed (docs/EXPORTS.md, "Training runs").

``follow_job(folder)`` reads the folder with ``Run.refresh()``, which reads only the new lines of
the scalars and the manifest, and waits between reads by yielding, so pause and cancel act at
once and nothing waits on the window's thread. Each state is a ``RunView``, a frozen dataclass of
read-only arrays: a field that did not change is the identical object in the next state, so a view
redraws only what is new. It holds

- the loss and the learning rate at every recorded step;
- the sharpness (the loss Hessian's top eigenvalue) with 2/η, η the learning rate recorded at
  that step: gradient descent is stable along the top eigenvector only while the sharpness is
  below 2/η, the edge of stability of Cohen et al.;
- each layer's invariant drift c(t) − c(0) over its hidden units as a band (least and largest,
  and the 10–90 % quantile band), with the units that moved most, and the units locked now;
- the checkpoints' PCA plane with the path across it (no model is needed: the plane is spanned
  by the flattened checkpoints' top two principal directions), recomputed as checkpoints
  arrive, at most every ``PCA_EVERY`` new ones or ``PCA_EVERY_S`` after the last;
- the run's status: "following", "finished" (its writer closed it), "writer died" (its lock is
  left and its process is gone) or "stopped growing" (the writer lives and no step came for
  ``STALL_S``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import engine.runs.format as fmt
from engine.core.errors import EngineInputError
from engine.core.progress import Job, Progress
from engine.landscape.trajectory_pca import pca_directions
from engine.runs.reader import Run

POLL_S = 0.5  # between reads of the folder: a new step is shown within this and one drawing
WAIT_YIELD_S = 0.05  # the job yields this often while it waits, as the job protocol asks
STALL_S = 10.0  # a live writer with no new step for this long has "stopped growing"
PCA_EVERY = 4  # the PCA plane is recomputed after this many new checkpoints ...
PCA_EVERY_S = 3.0  # ... or this long after its last computation, whichever comes first
QUANTILES = (0.1, 0.9)  # the drift's inner band, over a layer's units
TOP_UNITS = 3  # the units that moved most, named per layer

FOLLOWING, FINISHED, DIED, STALLED = "following", "finished", "writer died", "stopped growing"


def _frozen(a, dtype=float) -> np.ndarray:
    out = np.array(a, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class LayerDrift:
    """One layer's invariant drift c(t) − c(0) over its hidden units, at ``steps``.

    Attributes
    ----------
    name, law : str
        The layer and its conservation law (``ll.invariants``'s words).
    steps : np.ndarray
        (T,) the checkpoint steps with invariants.
    low, high, q_low, q_high : np.ndarray
        (T,) the least and largest drift over the units and the ``QUANTILES`` band.
    scale : float
        max |c(0)| over the units: what the drift is small or large against.
    top : tuple[tuple[int, float], ...]
        (unit, drift at the latest step) of the units whose |drift| is largest, largest first.
    locked : tuple[int, ...]
        The units locked at the latest checkpoint (a single outgoing weight whose sign gradient
        flow cannot change).
    units : int
    """

    name: str
    law: str
    steps: np.ndarray
    low: np.ndarray
    high: np.ndarray
    q_low: np.ndarray
    q_high: np.ndarray
    scale: float
    top: tuple
    locked: tuple
    units: int


@dataclass(frozen=True, eq=False)
class PCAPath:
    """The checkpoints on their PCA plane, centred on the latest checkpoint (Li et al.).

    Attributes
    ----------
    steps : np.ndarray
        (T,) the checkpoint steps, ascending.
    xy : np.ndarray
        (T, 2) each checkpoint's coordinates along the two principal directions.
    explained : np.ndarray
        (2,) the share of the path's variance along each.
    """

    steps: np.ndarray
    xy: np.ndarray
    explained: np.ndarray


@dataclass(frozen=True, eq=False)
class RunView:
    """What the Training run tab draws of a run as it stands (the module's docstring).

    ``edge`` is 2/η at each sharpness step (NaN where no learning rate was recorded); ``pca`` is
    None with ``pca_note`` saying why; ``revision`` counts the states made."""

    folder: str
    status: str
    line: str
    steps: np.ndarray
    loss: np.ndarray
    lr: np.ndarray
    sharpness_steps: np.ndarray
    sharpness: np.ndarray
    sharpness_error: np.ndarray
    edge: np.ndarray
    layers: tuple
    invariants_note: str
    pca: PCAPath | None
    pca_note: str
    checkpoint_steps: np.ndarray
    problems: tuple
    revision: int = 0

    @property
    def last_step(self) -> int | None:
        return int(self.steps[-1]) if len(self.steps) else None


def status_of(run: Run, last_growth: float, now: float, stall_s: float = STALL_S) -> str:
    """The run's status from its manifest, its lock and how long ago it last grew. A writer
    that closes the run between the manifest's read and the lock's is seen finished: the
    manifest is read again before a missing writer is called dead."""
    if run.finished:
        return FINISHED
    if not run.writer_alive:
        run.refresh()
        return FINISHED if run.finished else DIED
    return STALLED if now - last_growth > stall_s else FOLLOWING


def edge_of(run: Run) -> np.ndarray:
    """2/η at each sharpness step, η the learning rate recorded at that step (NaN where none)."""
    where = np.searchsorted(run.steps, run.sharpness_steps)
    found = (where < len(run.steps)) & (run.steps[np.minimum(where, max(len(run.steps) - 1, 0))] == run.sharpness_steps)
    lr = np.full(len(run.sharpness_steps), np.nan)
    if len(run.steps):
        lr[found] = run.lr[where[found]]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lr > 0, 2.0 / lr, np.nan)


def layer_drifts(run: Run) -> tuple[tuple[LayerDrift, ...], str]:
    """Each layer's drift band over the checkpoints whose invariants were recorded, and a note
    when there are none."""
    steps = run.invariant_steps
    if not len(steps):
        why = run.manifest.get("no_invariants")
        return (), (f"no invariants: {why}" if why else "no invariants recorded yet")
    history = run.invariant_history()
    latest = run.invariants(int(steps[-1]))
    out = []
    for record, name in zip(latest, run.layer_names):
        c = history[name]
        drift = c - c[:1]
        order = np.argsort(-np.abs(drift[-1]), kind="stable")[:TOP_UNITS]
        q_low, q_high = np.quantile(drift, QUANTILES, axis=1)
        out.append(
            LayerDrift(
                name=name,
                law=record.law,
                steps=_frozen(steps, np.int64),
                low=_frozen(drift.min(axis=1)),
                high=_frozen(drift.max(axis=1)),
                q_low=_frozen(q_low),
                q_high=_frozen(q_high),
                scale=float(np.abs(c[0]).max()) if c.size else 0.0,
                top=tuple((int(k), float(drift[-1, k])) for k in order),
                locked=tuple(int(k) for k in record.locked),
                units=int(c.shape[1]),
            )
        )
    return tuple(out), ""


class _Checkpoints:
    """The flattened checkpoints the PCA plane is made of, each read once and dropped when the
    writer thins it away."""

    def __init__(self):
        self.flat: dict[int, np.ndarray] = {}

    def update(self, run: Run) -> None:
        listed = set(int(s) for s in run.checkpoint_steps)
        for step in list(self.flat):
            if step not in listed:
                del self.flat[step]
        for step in sorted(listed - set(self.flat)):
            try:
                state = run.checkpoint(step)
            except EngineInputError:  # thinned since the manifest was read: the next read drops it
                continue
            parts = [t.detach().reshape(-1).double().numpy() for t in state.values() if t.is_floating_point()]
            self.flat[step] = np.concatenate(parts) if parts else np.zeros(0)


def pca_path(checkpoints: _Checkpoints) -> tuple[PCAPath | None, str]:
    """The checkpoints' PCA plane centred on the latest, or None and why not."""
    steps = sorted(checkpoints.flat)
    if len(steps) < 3:
        return None, f"the PCA plane needs 3 checkpoints; the run has {len(steps)}"
    M = np.stack([checkpoints.flat[s] for s in steps])
    center = M[-1]
    try:
        comps, explained = pca_directions([M], center)
    except EngineInputError as e:
        return None, str(e)
    return PCAPath(_frozen(steps, np.int64), _frozen((M - center) @ comps.T), _frozen(explained)), ""


def _line(run: Run, status: str) -> str:
    steps = f"step {int(run.steps[-1])}" if len(run.steps) else "no step yet"
    return f"{Path(run.folder).name}: {status} · {steps} · {len(run.checkpoint_steps)} checkpoints"


def wait(seconds: float, message: str, fraction: float = float("nan")) -> Job[None]:
    """Job: wait ``seconds``, yielding every ``WAIT_YIELD_S`` (so a close acts at once)."""
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(WAIT_YIELD_S, left))
        yield Progress(fraction, message)


def follow_job(
    folder,
    *,
    once: bool = False,
    poll_s: float = POLL_S,
    stall_s: float = STALL_S,
    pca_every: int = PCA_EVERY,
    pca_every_s: float = PCA_EVERY_S,
    writer_running: Callable[[], bool] | None = None,
    total_steps: int | None = None,
) -> Job[RunView]:
    """Job: follow the run in ``folder``; each partial is a ``RunView`` with something new.

    Parameters
    ----------
    once : bool
        Read the run as it stands and return its view (a screenshot of it).
    poll_s, stall_s, pca_every, pca_every_s
        How often the folder is read, how long a live writer may add no step before the run has
        "stopped growing", and how often the PCA plane is recomputed (module constants).
    writer_running : callable or None
        For a writer started by the caller (the edge-of-stability preset): while it returns
        True a folder that is not a run yet is waited for; once it returns False with no run
        in the folder the job fails.
    total_steps : int or None
        The steps the writer will record, for the progress fraction.

    Returns
    -------
    RunView
        The last state: once the run is finished or its writer died (or at once, ``once``).

    Raises
    ------
    EngineInputError
        The folder is not a run (and no writer of the caller's is about to make one).
    """
    folder = Path(folder)
    while writer_running is not None and not (folder / fmt.MANIFEST).exists():
        if not writer_running() and not (folder / fmt.MANIFEST).exists():
            raise EngineInputError(f"{folder}: the writer ended before it recorded a run")
        yield from wait(WAIT_YIELD_S, "waiting for the run to start", 0.0)
    run = Run(folder)
    plane = _Plane(pca_every, pca_every_s)
    state: RunView | None = None
    seen = None  # what the last state was made of
    last_growth = time.monotonic()
    while True:
        now = time.monotonic()
        before = len(run.steps)
        run.refresh()
        if len(run.steps) != before:
            last_growth = now
        status = status_of(run, last_growth, now, stall_s)
        ending = once or status in (FINISHED, DIED)
        listed = tuple(run.checkpoint_steps.tolist())
        key = (len(run.steps), len(run.sharpness_steps), listed, status, len(run.problems))
        if key != seen or plane.due(run, ending):
            state = _next_state(state, run, status, plane, ending)
            seen = key
            yield Progress(_fraction(run, total_steps, status), state.line, state)
        if ending:
            return state
        yield from wait(poll_s, state.line, _fraction(run, total_steps, status))


class _Plane:
    """The PCA plane's throttle and the flattened checkpoints it is made of."""

    def __init__(self, every: int, every_s: float):
        self.every, self.every_s = every, every_s
        self.checkpoints = _Checkpoints()
        self.made: tuple = ()  # the checkpoint steps of the plane shown
        self.made_at = -math.inf

    def due(self, run: Run, ending: bool) -> bool:
        """Whether the plane shown lags the listed checkpoints by enough (any lag once the run
        ends, and a first plane as soon as there are 3)."""
        listed = tuple(run.checkpoint_steps.tolist())
        if len(listed) < 3 or listed == self.made:
            return False
        new = len(set(listed) - set(self.made))
        waited = time.monotonic() - self.made_at >= self.every_s
        return ending or not self.made or new >= self.every or waited

    def fields(self, run: Run) -> dict:
        self.checkpoints.update(run)
        pca, note = pca_path(self.checkpoints)
        self.made, self.made_at = tuple(sorted(self.checkpoints.flat)), time.monotonic()
        return {"pca": pca, "pca_note": note}


def _fraction(run: Run, total_steps: int | None, status: str) -> float:
    if status in (FINISHED, DIED):
        return 1.0
    if not total_steps or not len(run.steps):
        return float("nan")
    return min(1.0, float(run.steps[-1]) / total_steps)


def _next_state(state: RunView | None, run: Run, status: str, plane: _Plane, ending: bool) -> RunView:
    """The next view: the fields whose source grew are made again, the others kept as they are."""
    fields: dict = {"status": status, "line": _line(run, status), "problems": tuple(run.problems)}
    fields["revision"] = 1 if state is None else state.revision + 1
    if state is None or len(state.steps) != len(run.steps):
        fields.update(steps=_frozen(run.steps, np.int64), loss=_frozen(run.loss), lr=_frozen(run.lr))
    if state is None or len(state.sharpness_steps) != len(run.sharpness_steps) or "steps" in fields:
        fields.update(
            sharpness_steps=_frozen(run.sharpness_steps, np.int64),
            sharpness=_frozen(run.sharpness),
            sharpness_error=_frozen(run.sharpness_error),
            edge=_frozen(edge_of(run)),
        )
    if state is None or not np.array_equal(state.checkpoint_steps, run.checkpoint_steps):
        fields["checkpoint_steps"] = _frozen(run.checkpoint_steps, np.int64)
        fields["layers"], fields["invariants_note"] = layer_drifts(run)
    if plane.due(run, ending):
        fields.update(plane.fields(run))
    elif state is None:
        fields.update(pca=None, pca_note=f"the PCA plane needs 3 checkpoints; the run has {len(run.checkpoint_steps)}")
    if state is None:
        return RunView(folder=str(run.folder), **fields)
    return dataclasses.replace(state, **fields)
