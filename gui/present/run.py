"""The Training run tab's view state: a followed run's ``RunView`` with the words and colours its
views show, made inside the job (no Qt), so the window only sets data on its items.

``presented(job)`` maps every partial and the result of a following job
(``engine.runs.follow.follow_job`` or the edge-of-stability preset's job) to a ``RunPresented``;
its ``run`` is the engine's state as it came, whose unchanged fields stay the identical objects
from one state to the next, so the workspace redraws a view only when its data is new.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.progress import Job, Progress
from engine.runs.follow import DIED, FINISHED, FOLLOWING, STALLED, PCAPath, RunView

from . import NEURON_COLORS

STATUS_COLORS = {FOLLOWING: "#009E73", FINISHED: "#0072B2", STALLED: "#E69F00", DIED: "#D55E00"}
# the path's colour from its first checkpoint to its last (viridis' stops, without its darkest end)
PATH_STOPS = np.array(
    [[0x46, 0x33, 0x7E], [0x36, 0x5C, 0x8D], [0x27, 0x7F, 0x8E], [0x1F, 0xA1, 0x87], [0x4A, 0xC1, 0x6D]]
)
PATH_STOPS = np.vstack([PATH_STOPS, [[0xA0, 0xDA, 0x39], [0xFD, 0xE7, 0x25]]])


def layer_color(i: int) -> str:
    """Layer i's colour in the drift bands and their key."""
    return NEURON_COLORS[i % len(NEURON_COLORS)]


@dataclass(frozen=True, eq=False)
class RunPresented:
    """A run's state with its captions.

    Attributes
    ----------
    run : RunView
        The engine's state.
    status_text, status_color : str
        The line over the views and its colour (by status).
    loss_note, sharpness_note, path_note : str
        Each plot's numbers under its title.
    drift_key : tuple[str, ...]
        One line per layer: its colour's glyph, its name and law and its most-moved units.
    locked_text : str
        The locked units per layer, or that none is locked.
    path_colors : np.ndarray or None
        (T, 4) uint8 RGBA of each checkpoint on the path, by step.
    """

    run: RunView
    status_text: str
    status_color: str
    loss_note: str
    sharpness_note: str
    drift_key: tuple
    locked_text: str
    path_note: str
    path_colors: np.ndarray | None

    @property
    def message(self) -> str:  # the status bar's last word
        return self.run.line


def path_colors(steps: np.ndarray) -> np.ndarray:
    """RGBA (T, 4) uint8 along ``PATH_STOPS`` by each step's place between the first and last."""
    s = np.asarray(steps, float)
    t = (s - s[0]) / max(s[-1] - s[0], 1e-300) if len(s) else s
    x = t * (len(PATH_STOPS) - 1)
    rgb = np.column_stack([np.interp(x, np.arange(len(PATH_STOPS)), PATH_STOPS[:, k]) for k in range(3)])
    out = np.column_stack([np.rint(rgb), np.full(len(s), 255)]).astype(np.uint8)
    out.setflags(write=False)
    return out


def _last(values: np.ndarray) -> float | None:
    finite = np.asarray(values, float)
    finite = finite[np.isfinite(finite)]
    return float(finite[-1]) if finite.size else None


def _loss_note(run: RunView) -> str:
    if not len(run.steps):
        return "no step recorded yet"
    last, lr = _last(run.loss), _last(run.lr)
    parts = [f"step {run.last_step}"]
    if last is not None:
        parts.append(f"L = {last:.4g}")
        parts.append(f"least {np.nanmin(run.loss):.4g}")
    if lr is not None:
        parts.append(f"η = {lr:.3g}")
    return " · ".join(parts)


def _sharpness_note(run: RunView) -> str:
    if not len(run.sharpness):
        return "no sharpness recorded (Recorder's sharpness_every)"
    value, edge = float(run.sharpness[-1]), _last(run.edge)
    text = f"λ<sub>max</sub> = {value:.4g} at step {int(run.sharpness_steps[-1])}"
    if edge is not None:
        text += f" · 2/η = {edge:.4g} · λ<sub>max</sub>·η/2 = {value / edge:.3f}"
    return text


def _glyph(color: str, glyph: str = "▇") -> str:
    return f"<span style='color:{color}'>{glyph}</span>"


def _drift_key(run: RunView) -> tuple[str, ...]:
    if not run.layers:
        return (run.invariants_note,)
    lines = []
    for i, layer in enumerate(run.layers):
        moved = ", ".join(f"#{k} {d:+.2g}" for k, d in layer.top)
        lines.append(f"{_glyph(layer_color(i))} {layer.name} ({layer.law}, |c(0)| ≤ {layer.scale:.2g}): {moved}")
    return tuple(lines)


def _locked_text(run: RunView) -> str:
    locked = [f"{layer.name} #{', #'.join(map(str, layer.locked))}" for layer in run.layers if layer.locked]
    if not run.layers:
        return ""
    return "bands: every unit, darker 10–90 % · locked units: " + ("; ".join(locked) if locked else "none")


def _path_note(pca: PCAPath | None, note: str) -> str:
    if pca is None:
        return note
    a, b = 100 * pca.explained
    return (
        f"{len(pca.steps)} checkpoints, steps {int(pca.steps[0])}–{int(pca.steps[-1])} · PC1 {a:.1f} %, PC2 {b:.1f} %"
    )


def present(run: RunView, before: RunPresented | None = None) -> RunPresented:
    """The captions and colours of ``run``; the path's colours are kept from ``before`` while its
    plane is the same object."""
    same_path = before is not None and before.run.pca is run.pca
    colors = before.path_colors if same_path else (None if run.pca is None else path_colors(run.pca.steps))
    problems = f" · {run.problems[-1]}" if run.problems else ""
    return RunPresented(
        run=run,
        status_text=f"● {run.line}{problems}",
        status_color=STATUS_COLORS.get(run.status, "#999999"),
        loss_note=_loss_note(run),
        sharpness_note=_sharpness_note(run),
        drift_key=_drift_key(run),
        locked_text=_locked_text(run),
        path_note=_path_note(run.pca, run.pca_note),
        path_colors=colors,
    )


def presented(job: Job[RunView]) -> Job[RunPresented]:
    """``job`` with each partial and its result presented, on the job's own (worker) thread."""
    last: RunPresented | None = None
    while True:
        try:
            update = next(job)
        except StopIteration as stop:
            result = stop.value
            return last if last is not None and last.run is result else present(result, last)
        if isinstance(update.partial, RunView):
            last = present(update.partial, last)
            update = Progress(update.fraction, update.message, last)
        yield update
