"""The minima tab's model: its result, the split the λ slider moves, the λ drag, and whether a
reopened session's network is live; what is drawn, as typed stage states. No Qt.

The workspace (gui/workspaces/minima.py) forwards the user's requests here, starts the jobs the
model makes through the application controller, and hands their presented results back
(``take``, ``take_preview``, ``resume``). The model decides what each result changes and tells
its listeners: ``drawn`` with each stage state to draw (in ``STAGES`` order: the construction
before what reads its splits) and ``cleared`` with each stage the result no longer has.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError
from engine.io.netfile import load_network, save_network
from engine.minima.descending_path import DescendingPath
from engine.minima.pipeline import (
    DragSlices,
    Figure3,
    critical_point_job,
    drag_job,
    inspected_figure_job,
    preview_job,
    probe_job,
    reslice_job,
    split_figure_job,
    undo_figure_job,
)
from engine.minima.workbench import history_of

from ..present import Presented
from ..present.minima import STAGES, presented_job, presented_preview, presented_probe, presented_resume
from . import Listeners
from .minima_states import StageState, typed

# The stages a result clears when it no longer has them (a split, an undo or a critical point
# keeps the old panels on screen while it computes).
CLEARABLE = ("slices_min", "slices_saddle", "path", "descent", "plane")


@dataclass(frozen=True)
class SavedNetwork:
    """A reopened session's network: read and checked (``net``), and as the session held it."""

    net: object
    saved: dict  # the exported .npz's bytes, its label, the split and λ the slider was on

    @property
    def label(self) -> str:
        return str(self.saved.get("label", ""))

    @property
    def at(self) -> tuple:
        """(split index, λ) the slider was on."""
        return self.saved.get("split", -1), self.saved.get("lam")


def session_network(network) -> object:
    """A session's network read with the checks of a network file (engine.io.netfile)."""
    if not isinstance(network, dict) or not isinstance(network.get("npz"), np.ndarray):
        raise EngineInputError("session's minima network is not an exported .npz")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "network.npz"
        path.write_bytes(np.asarray(network["npz"], np.uint8).tobytes())
        return load_network(path)


class MinimaModel:
    """What the minima tab holds and how it changes; see the module's docstring."""

    def __init__(self):
        self.drawn = Listeners()  # a StageState to draw
        self.cleared = Listeners()  # a stage (str) whose view is to be cleared
        self.when_live: list = []  # actions asked of a reopened session's network before it is live
        self.reset()

    def reset(self) -> None:
        """Nothing computed, nothing drawn, no network."""
        self.shown: dict[str, StageState] = {}  # stage -> its state on screen (what a session saves)
        self.seen: dict = {}  # result field -> the object last drawn from it (identity)
        self.presented: dict = {}  # stage -> the presented data object last drawn for it
        self.figure = None  # the latest Figure3 / DescendingPath: what λ moves and Export saves
        self.split = -1  # which split the slider moves: the steps table's selected row
        # The split's slices for every λ, sliced once (engine.minima.pipeline.drag_job) as soon as a
        # construction is ready: then a move's preview needs no slice pass.
        self.drag: DragSlices | None = None
        self.warmed_for = None  # the construction the drag slices were last asked for
        self.before_drag: dict | None = None  # what was drawn before a drag's first preview
        self.curvature_stage = None  # "spectrum" or "density": the one the details panel shows
        # A reopened session's network, drawn as saved but not live yet (going live makes it so),
        # and what the user asked of it meanwhile, done once it is live.
        self.saved_network: SavedNetwork | None = None
        self.going_live = False  # its inspection was submitted
        self.when_live.clear()
        self.frame_shown = (None, 0)  # (path state, index) a replay frame drew last

    # ------------------------------------------------------------------ what it holds
    def construction(self):
        return None if self.figure is None else self.figure.construction

    @property
    def live(self) -> bool:
        """A Fig. 3 construction is on screen and can be acted on."""
        return isinstance(self.figure, Figure3) and self.construction() is not None

    def movable(self) -> bool:
        """λ moves a split of a live Fig. 3 construction: built, split by hand, loaded with its
        history, or a reopened session's once its network is live."""
        c = self.construction()
        return isinstance(self.figure, Figure3) and c is not None and bool(c.splits)

    def split_index(self) -> int:
        c = self.construction()
        n = len(c.splits) if c is not None else 0
        return self.split % n if n else -1

    def split_lam(self) -> float:
        """The λ of the split the slider moves, as the construction has it."""
        return self.construction().splits[self.split].lam

    def curvature(self) -> tuple[str, StageState] | None:
        """What the curvature panel shows: ("spectrum" or "density", its state), or None."""
        stage = self.curvature_stage
        return (stage, self.shown[stage]) if stage in self.shown else None

    # ------------------------------------------------------------------ drawing
    def draw(self, stage: str, data) -> StageState:
        """``data`` (plain view data or a state) is now on screen: its state goes to ``drawn``."""
        state = typed(stage, data)
        self.shown[stage] = state
        if stage in ("spectrum", "density"):
            self.curvature_stage = stage
        self.drawn.emit(state)
        return state

    def draw_all(self, data: dict, skip=None) -> None:
        """Each stage of ``data`` in ``STAGES`` order; ``skip(state)`` true leaves a probe undrawn."""
        for stage in STAGES:
            if stage in data:
                state = typed(stage, data[stage])
                if not (stage == "probe" and skip is not None and skip(state)):
                    self.draw(stage, state)

    def clear(self, stage: str) -> None:
        del self.shown[stage]
        self.cleared.emit(stage)

    # ------------------------------------------------------------------ results
    def take(self, presented: Presented, skip=None) -> None:
        """A job's partial or final result, presented on the worker: each stage whose data is not
        the one drawn already is drawn (and a λ drag's previews are over)."""
        result, state = presented.result, presented.state
        if isinstance(result, (Figure3, DescendingPath)):
            self.figure = result
        self.seen = state["seen"]
        self.before_drag = None
        # A stage is drawn once per presented data object (each state holds them all); the λ box's
        # probe, drawn over by the slider's, stays the slider's.
        data = {k: v for k, v in state["stages"].items() if self.presented.get(k) is not v}
        self.presented.update(data)
        data = {k: typed(k, v) for k, v in data.items()}
        self.draw_all(data, skip)
        if "probe_details" in state and "probe" in data and self.shown.get("probe") is data["probe"]:
            # the λ box shows the probe: the spectrum (or density) beside it is its Hessian's
            self.draw_all(state["probe_details"], skip)

    def finish(self, presented: Presented) -> None:
        """After a final result is drawn: clear the stages it no longer has (the 2-D slice is not
        recomputed by a split; (b)–(d) go once no split is left)."""
        if "current" in presented.state:
            current = presented.state["current"]
            for stage in [s for s in self.shown if s in CLEARABLE and s not in current]:
                self.clear(stage)

    def warm_up(self, fig, slices):
        """The drag slices' job for ``fig``, a result just drawn, if its construction was not
        warmed yet (then a λ move previews at once), or None."""
        if not (isinstance(fig, Figure3) and fig.saddle is not None and fig.construction is not self.warmed_for):
            return None
        self.warmed_for = fig.construction
        if not self.movable():
            return None
        return drag_job(fig, fig.construction.splits[self.split].lam, self.split, slices, drag=self.drag)

    # ------------------------------------------------------------------ the λ drag
    def preview_request(self, lam: float, slices, plane):
        """A λ move's preview job (presented), or None when λ moves nothing."""
        if not self.movable():
            return None
        return presented_preview(preview_job(self.figure, lam, self.split, slices, plane, drag=self.drag))

    def take_preview(self, figure, result, skip=None) -> bool:
        """A drag's preview (presented) of ``figure``, or the drag slices made ahead of the first
        move (or None: the split's slices are not affine in λ, so each move slices afresh). True:
        a preview was drawn, and the probe at its λ is to run. Dropped once another figure is on
        screen: a split, an undo or a load finished while it was sliced."""
        if figure is not self.figure:
            return False
        if result is None or isinstance(result, DragSlices):
            self.drag = result
            return False
        self.drag = result.result.drag
        if self.before_drag is None:  # what a dropped re-slice puts back (drop_previews)
            self.before_drag = dict(self.shown)
        self.draw_all(result.state, skip)
        return True

    def probe_request(self, lam: float):
        """The λ box's probe at ``lam`` of the split (presented)."""
        return presented_probe(probe_job(self.figure, lam, self.split), self.figure)

    def drop_previews(self) -> bool:
        """The main lane's jobs were dropped unended, a λ release's re-slice among them: each stage
        is drawn again as it was before the drag. True: no probe was drawn then, so the slider
        goes back to the split's λ."""
        before, self.before_drag = self.before_drag, None
        if before is None:
            return False
        for stage in STAGES:  # in order: the construction before what reads its splits
            if stage in before and self.shown.get(stage) is not before[stage]:
                self.draw(stage, before[stage])
            elif stage not in before and stage in self.shown and stage in CLEARABLE:
                self.clear(stage)
        return "probe" not in before

    def release_request(self, lam: float, slices, path_range, plane):
        """The refined re-slice at a released λ (presented): (b) too when another split is shown."""
        shown_split = self.figure.path.split if self.figure.path is not None else None
        path = None if shown_split == self.split_index() else path_range
        job = reslice_job(self.figure, lam, self.split, slices, path, plane=plane)
        return presented_job(job, self.seen)

    def select_step(self, row: int) -> StageState | None:
        """Row k > 0 of the steps table is split k − 1: the slider follows it. The construction's
        state, or None when the row is no split."""
        if self.saved_network is not None:  # the drawn construction is the saved network's
            n_splits = len(self.shown.get("construction", {}).get("split_labels", []))
        else:
            c = self.construction()
            n_splits = len(c.splits) if c is not None else 0
        if not 1 <= row <= n_splits:
            return None
        self.split = row - 1
        return self.shown["construction"]

    # ------------------------------------------------------------------ splits by hand
    def figure_request(self, make_job, settings):
        """A job on the Fig. 3 result on screen (presented): ``make_job(figure, settings)``, for a
        split, an undo or a critical point. EngineInputError says why there is none."""
        if not isinstance(self.figure, Figure3):
            raise EngineInputError("build or load a network first")
        return presented_job(make_job(self.figure, replace(settings, plane=None)), self.seen)

    @staticmethod
    def split_maker(layer: int, neuron: int, lam: float):
        return lambda fig, s: split_figure_job(fig, layer, neuron, lam, s)

    undo_maker = staticmethod(undo_figure_job)
    critical_maker = staticmethod(critical_point_job)

    # ------------------------------------------------------------------ sessions
    def session_state(self, lam: float | None) -> dict:
        """What is drawn, as plain data, and the live network as the bytes of its exported .npz
        (weights, data, construction history); ``lam``: the slider's exact λ."""
        state = {stage: data.to_dict() for stage, data in self.shown.items()}
        c = self.construction()
        if isinstance(self.figure, Figure3) and c is not None:
            with tempfile.TemporaryDirectory() as folder:
                path = save_network(Path(folder) / "network.npz", c.arch, c.params, c.X, c.Y, history=history_of(c))
                npz = np.frombuffer(path.read_bytes(), np.uint8)
            state["network"] = {
                "npz": npz,
                "label": self.figure.loaded_from or "the built network",
                "split": self.split,
                # the slider's λ moves a split: with none left (all undone) it is a stale value,
                # which a reopened window, having nothing to set it from, did not show
                "lam": lam if c.splits else None,
            }
        elif self.saved_network is not None:  # not live yet: as the session had it
            state["network"] = self.saved_network.saved
        return state

    @staticmethod
    def check_session(state: dict) -> tuple[dict, object, dict | None]:
        """A session's minima state checked before anything changes: (its stages, its network
        read, the network as saved), or EngineInputError."""
        state = dict(state)
        network = state.pop("network", None)
        unknown = set(state) - set(STAGES)
        if unknown:
            raise EngineInputError(f"session has unknown minima results {sorted(unknown)}")
        net = None if network is None else session_network(network)
        return state, net, network

    def restore(self, stages: dict, net, network) -> None:
        """A checked session (``check_session``), after a reset: its network saved, not live."""
        if net is not None:
            self.saved_network = SavedNetwork(net, dict(network))
        self.draw_all(stages)

    def resume_request(self):
        """The job that makes a reopened session's network live (presented), or None: none, or on
        its way."""
        saved, self.going_live = self.saved_network, True
        return presented_resume(inspected_figure_job(saved.net, saved.label))

    def later(self, action) -> bool:
        """With a reopened session's network not live yet: do ``action`` once it is (True)."""
        if self.saved_network is None:
            return False
        self.when_live.append(action)
        return True

    def resume(self, presented: Presented) -> tuple:
        """The reopened session's network is live: (split, λ) the session's slider was on."""
        fig = presented.result
        at = self.saved_network.at
        self.saved_network, self.going_live = None, False
        self.figure = fig
        self.seen = {"steps": fig.steps, "construction": fig.construction, "eigs": fig.eigs}
        self.warmed_for = fig.construction
        return at

    def run_waiting(self) -> None:
        """What was asked of the network before it was live, now that it is."""
        waiting, self.when_live[:] = list(self.when_live), []
        for action in waiting:
            action()

    # ------------------------------------------------------------------ replay
    def timeline_length(self) -> int:
        """Replay walks along the degenerate path: every λ sample is a frame."""
        return len(self.shown.get("path", {}).get("lam", []))

    def frame(self, index: int):
        """The path state and its frame ``index``, remembered as shown; None without a path."""
        path = self.shown.get("path")
        if not path:
            return None
        self.frame_shown = (path, index)
        return path

    def shown_frame(self) -> int | None:
        path, index = self.frame_shown
        return index if path is not None and path is self.shown.get("path") else None
