"""The Training run tab's model: the run drawn now, the checkpoint selected on its path, the
edge-of-stability demo's temporary folder, and the toolkit request a checkpoint makes. No Qt.

The workspace (gui/workspaces/run.py) starts the jobs and hands each presented state here
(``take``); the model tells its listeners (``drawn``) what to draw as typed, frozen stage states,
one per view, and only for a view whose data is a new object (``engine.runs.follow`` keeps a field
that did not change the identical object). A click on the path selects a checkpoint (``select``);
``toolkit_request`` writes that checkpoint as a state_dict the landscape toolkit reads like any
other network file, with what it needs beside it (its data, activation or model factory, the
mode to run), so the toolkit tab runs its mode around that checkpoint's θ.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.runs.edge_of_stability import EdgeSettings
from engine.runs.follow import PCAPath

from ..present.run import RunPresented, layer_color
from . import Listeners

# What a checkpoint can be opened as in the toolkit tab: (toolkit mode, plane directions).
TOOLKIT_MODES = {
    "filter-normalised plane": ("plane", "filter"),
    "extreme curvature plane (bottom and top eigenvectors)": ("plane", "hessian-extremes"),
    "interpolation to the latest checkpoint": ("interpolation", "filter"),
    "Hessian spectral density": ("density", "filter"),
}
REPLAY_NOTE = "a followed run: no replay"


@dataclass(frozen=True, eq=False)
class Status:
    """The line over the views, in its status's colour (grey: no run status)."""

    text: str
    color: str = "#999999"


@dataclass(frozen=True, eq=False)
class Loss:
    steps: np.ndarray
    loss: np.ndarray
    note: str


@dataclass(frozen=True, eq=False)
class Sharpness:
    steps: np.ndarray
    sharpness: np.ndarray
    edge: np.ndarray  # 2/η at each sharpness step
    note: str


@dataclass(frozen=True, eq=False)
class Drift:
    layers: tuple  # engine.runs.follow.LayerDrift per layer
    colors: tuple[str, ...]
    key: tuple[str, ...]
    locked: str


@dataclass(frozen=True, eq=False)
class Path2D:
    """The checkpoints on their PCA plane (``pca`` None: not yet, ``note`` says why)."""

    pca: PCAPath | None
    colors: np.ndarray | None
    note: str


@dataclass(frozen=True)
class Selection:
    """The checkpoint selected on the path (None: none)."""

    step: int | None


@dataclass(frozen=True)
class ToolkitRequest:
    """A checkpoint opened in the toolkit tab: its state_dict file (``path``, written by the
    model) and what the toolkit's network, mode and interpolation fields take."""

    step: int
    path: str
    mode: str
    directions: str
    activation: str = ""
    data: str = ""
    model: str = ""
    loss: str = "auto"
    second: str = ""  # the interpolation's other end: the run's latest checkpoint


class RunModel:
    """What the Training run tab holds and how it changes; see the module's docstring."""

    def __init__(self):
        self.drawn = Listeners()  # a stage state to draw
        self.shown: RunPresented | None = None  # the state drawn now
        self.selected_step: int | None = None  # the checkpoint clicked on the path
        self.outcome = ""  # how the last following ended: "succeeded", "failed", "stopped"
        self.demo: EdgeSettings | None = None  # the demo run's settings while its run is shown
        self._demo_folder: Path | None = None  # the demo's temporary folder (its run and data)
        self._exports: Path | None = None  # checkpoints written for the toolkit

    # ------------------------------------------------------------------ drawing
    def take(self, p: RunPresented) -> None:
        """A presented state: each view whose data is new is told to draw (the status always)."""
        before = self.shown.run if self.shown is not None else None
        run = p.run
        self.drawn.emit(Status(p.status_text, p.status_color))
        if before is None or run.steps is not before.steps:
            self.drawn.emit(Loss(run.steps, run.loss, p.loss_note))
        if before is None or run.sharpness is not before.sharpness or run.edge is not before.edge:
            self.drawn.emit(Sharpness(run.sharpness_steps, run.sharpness, run.edge, p.sharpness_note))
        if before is None or run.layers is not before.layers:
            colors = tuple(layer_color(i) for i in range(len(run.layers)))
            self.drawn.emit(Drift(run.layers, colors, p.drift_key, p.locked_text))
        if before is None or run.pca is not before.pca:
            self.drawn.emit(Path2D(run.pca, p.path_colors, p.path_note))
            if run.pca is not None:
                self.drawn.emit(Selection(self.selected_step))
        self.shown = p

    def redraw(self) -> None:
        """Every view again from the state drawn (a new font size)."""
        shown, self.shown = self.shown, None
        if shown is not None:
            self.take(shown)

    def reset(self) -> None:
        self.shown, self.selected_step, self.outcome = None, None, ""

    def ended(self, outcome: str) -> None:
        """The following job ended: "succeeded", "failed", or "stopped" by the user, which the
        status line says (the job's last state still said it was following)."""
        self.outcome = outcome
        if outcome == "stopped" and self.shown is not None:
            self.drawn.emit(Status(f"○ not followed any more (stopped) · {self.shown.run.line}"))

    @property
    def replay_note(self) -> str:
        """What the replay bar says on this tab: a run has no replay, its plots hold every step."""
        return REPLAY_NOTE

    # ------------------------------------------------------------------ checkpoints
    def select(self, step: int) -> str:
        """A click on the path: the checkpoint of ``step`` is selected; returns the line that
        names its file."""
        self.selected_step = int(step)
        self.drawn.emit(Selection(self.selected_step))
        if self.shown is None:
            return f"checkpoint at step {step}"
        path = self.checkpoint_file(self.selected_step)
        return f"checkpoint at step {step}: {path} (Open in toolkit runs a mode around it)"

    def checkpoint_file(self, step: int) -> Path:
        """The run folder's file of the checkpoint at ``step``."""
        from engine.runs.format import checkpoint_name

        return Path(self.shown.run.folder) / checkpoint_name(int(step))

    def toolkit_request(self, choice: str, activation: str = "", data: str = "", model: str = "") -> ToolkitRequest:
        """The selected checkpoint as the toolkit's network: its state_dict written to a file of
        this model's (read back without unpickling), with the data and activation (an MLP's) or
        model factory (any module) it is evaluated with; the demo's run brings its own data."""
        if self.shown is None or self.selected_step is None:
            raise EngineInputError("click a checkpoint on the PCA path first")
        if choice not in TOOLKIT_MODES:
            raise EngineInputError(f"toolkit mode {choice!r}: choose one of {', '.join(TOOLKIT_MODES)}")
        from engine.runs import open_run

        run = open_run(self.shown.run.folder)
        mode, directions = TOOLKIT_MODES[choice]
        loss = "auto"
        if self.demo is not None and self._demo_folder is not None:
            activation, data, model, loss = "relu", str(self._demo_data()), "", "mean"
        elif not data.strip():
            raise EngineInputError("name the data the checkpoint is evaluated on (.npz with X, Y, or .csv)")
        elif not (activation.strip() or model.strip()):
            raise EngineInputError("name the activation (an MLP of nn.Linear layers) or the model factory")
        second = ""
        if mode == "interpolation":
            second = str(self._export(run, int(run.checkpoint_steps[-1])))
        path = self._export(run, self.selected_step)
        names = dict(activation=activation.strip(), data=data.strip(), model=model.strip())
        return ToolkitRequest(self.selected_step, str(path), mode, directions, **names, loss=loss, second=second)

    def _export(self, run, step: int) -> Path:
        """The checkpoint of ``step`` as a .pt state_dict of plain tensors, in this model's folder."""
        from engine.core.lazy import torch

        if self._exports is None:
            self._exports = Path(tempfile.mkdtemp(prefix="landscape-lens-checkpoints-"))
        path = self._exports / f"{Path(run.folder).name}-step_{step:09d}.pt"
        torch.save(run.checkpoint(step), path)
        return path

    # ------------------------------------------------------------------ the demo's folder
    def new_demo_folder(self, settings: EdgeSettings) -> Path:
        """A fresh temporary folder for the demo's run (the run folder inside it is returned);
        the previous demo's is removed."""
        self.remove_demo_folder()
        self._demo_folder = Path(tempfile.mkdtemp(prefix="landscape-lens-edge-"))
        self.demo = settings
        return self._demo_folder / "run"

    def following_folder(self) -> None:
        """A run folder of the user's is followed: no demo run is shown."""
        self.demo = None

    def _demo_data(self) -> Path:
        """The demo's data (X, Y) as a .npz beside its run, for the toolkit."""
        path = self._demo_folder / "data.npz"
        if not path.exists():
            from engine.runs.edge_of_stability import problem

            _, X, Y = problem(self.demo)
            np.savez(path, X=X.numpy(), Y=Y.numpy())
        return path

    def remove_demo_folder(self) -> None:
        if self._demo_folder is not None:
            shutil.rmtree(self._demo_folder, ignore_errors=True)
            self._demo_folder = None

    def close(self) -> None:
        """The window closes: the demo's folder and the checkpoints written for the toolkit go."""
        self.remove_demo_folder()
        if self._exports is not None:
            shutil.rmtree(self._exports, ignore_errors=True)
            self._exports = None
