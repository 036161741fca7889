"""A recorded run's PCA path as it grew, for ``main.py record --run`` (a clip of the run).

The plane is the finished run's: all its checkpoints, centred on the last, exactly as the
Training run tab shows it once the run has ended (``follow.pca_path``), computed once. Each frame
shows the checkpoints up to its step on that one plane, so the path grows in fixed coordinates;
a plane recomputed at each checkpoint would turn and rescale under the path from frame to frame,
and nothing would read as growth.

``frame_steps`` gives each frame its step: the frames are spread evenly over the checkpoints (the
writer thins late checkpoints to a log-spaced schedule, so even in steps the early path would
flash past in a few frames), and between two checkpoints the step moves linearly, so the loss and
sharpness curves grow smoothly beside the path. ``upto(view, step)`` is the run's view cut at a
step: what a frame draws.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.core.progress import Job
from engine.runs.follow import LayerDrift, PCAPath, RunView, follow_job
from engine.runs.reader import open_run

MIN_CHECKPOINTS = 3  # the PCA plane needs three (follow.pca_path)


def grown_run_job(folder) -> Job[RunView]:
    """Job: the view of the run in ``folder`` as it stands, with its PCA plane.

    Raises
    ------
    EngineInputError
        ``folder`` is not a run, or it has no step or fewer than ``MIN_CHECKPOINTS`` checkpoints
        (no plane to film).
    """
    run = open_run(folder)
    name = Path(run.folder).name
    if not len(run.steps):
        raise EngineInputError(f"{name}: the run has no recorded step; nothing to film")
    if len(run.checkpoint_steps) < MIN_CHECKPOINTS:
        raise EngineInputError(
            f"{name}: the PCA path needs {MIN_CHECKPOINTS} checkpoints; the run has {len(run.checkpoint_steps)}"
        )
    view = yield from follow_job(run.folder, once=True)
    if view.pca is None:  # thinned or unreadable since the check above
        raise EngineInputError(f"{name}: {view.pca_note}")
    return view


def frame_steps(steps: np.ndarray, checkpoint_steps: np.ndarray, frames: int) -> np.ndarray:
    """(frames,) the step each frame shows, rising from the run's first step to its last.

    The knots are the checkpoints (with the run's first and last step), one equal share of the
    frames between each two; in between the step moves linearly."""
    if frames < 1:
        raise EngineInputError(f"frames {frames}: at least 1")
    if not len(steps):
        raise EngineInputError("the run has no recorded step")
    knots = np.unique(np.concatenate([[steps[0]], checkpoint_steps, [steps[-1]]]).astype(float))
    if len(knots) == 1 or frames == 1:
        return np.full(frames, knots[-1])
    at = np.linspace(0.0, len(knots) - 1.0, frames)
    return np.interp(at, np.arange(len(knots)), knots)


def _upto(steps: np.ndarray, step: float) -> int:
    return int(np.searchsorted(steps, step, side="right"))


def _layer_upto(layer: LayerDrift, step: float) -> LayerDrift:
    k = _upto(layer.steps, step)
    cut = {f: getattr(layer, f)[:k] for f in ("steps", "low", "high", "q_low", "q_high")}
    return dataclasses.replace(layer, **cut)


def upto(view: RunView, step: float) -> RunView:
    """``view`` with only what was recorded at steps ≤ ``step``: the loss, the sharpness, the
    checkpoints, the drift bands and the path (on the whole run's plane, with its explained
    shares). A layer's most-moved and locked units stay the whole run's."""
    k = _upto(view.steps, step)
    s = _upto(view.sharpness_steps, step)
    fields: dict = {
        "steps": view.steps[:k],
        "loss": view.loss[:k],
        "lr": view.lr[:k],
        "sharpness_steps": view.sharpness_steps[:s],
        "sharpness": view.sharpness[:s],
        "sharpness_error": view.sharpness_error[:s],
        "edge": view.edge[:s],
        "checkpoint_steps": view.checkpoint_steps[: _upto(view.checkpoint_steps, step)],
        "layers": tuple(_layer_upto(layer, step) for layer in view.layers),
    }
    if view.pca is not None:
        p = _upto(view.pca.steps, step)
        fields["pca"] = PCAPath(view.pca.steps[:p], view.pca.xy[:p], view.pca.explained) if p else None
        fields["pca_note"] = view.pca_note if p else "no checkpoint yet"
    shown = f"step {int(view.steps[k - 1])}" if k else "no step yet"
    fields["line"] = f"{Path(view.folder).name}: {shown} · {len(fields['checkpoint_steps'])} checkpoints"
    return dataclasses.replace(view, **fields)
