"""The landscape toolkit tab's model: its result, the view state drawn (what a session saves), a
network file being loaded (and the fields to put back if it does not load), and a training run's
checkpoint opened here; what is drawn, as typed stage states. No Qt.

The workspace (gui/workspaces/landscape.py) makes the jobs, starts them through the controller
and hands their presented results here (``take``); the model tells its listeners (``drawn``) each
stage state to draw: the page to show, the planes, their persistence and basin map, the
interpolation or the spectral density. A new basin threshold is a new persistence state made
from the drawn one, without a job (``rethreshold``).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.core.errors import EngineInputError
from engine.landscape.toolkit import ToolkitResult

from ..present import Presented
from . import Listeners

PAGES = {"plane": 0, "pca": 0, "interpolation": 1, "density": 2}


@dataclass(frozen=True)
class Cleared:
    """Every page cleared: a loaded file's first result replaces what they showed."""


@dataclass(frozen=True)
class Page:
    """The page a mode is drawn on (``PAGES``)."""

    index: int


@dataclass(frozen=True, eq=False)
class Planes:
    """The plane (gui.present.landscape's ``plane``) and, for extreme curvature, its companions."""

    plane: dict
    extremes: dict | None


@dataclass(frozen=True, eq=False)
class Persistence:
    """The plane's persistence diagram and its basin map at ``persistence["threshold"]``."""

    persistence: dict
    plane: dict


@dataclass(frozen=True, eq=False)
class InterpolationCurve:
    curve: dict


@dataclass(frozen=True, eq=False)
class DensityCurve:
    density: dict


class ToolkitModel:
    """What the toolkit tab holds and how it changes; see the module's docstring."""

    def __init__(self):
        self.drawn = Listeners()  # a stage state to draw
        self.result: ToolkitResult | None = None
        self.shown: dict = {}  # the view state drawn now (gui.present.landscape)
        # A load that has not finished yet: {"before": the fields before the first of the loads in
        # progress, "file": the fields naming the file being loaded}
        self.loading: dict | None = None

    def reset(self) -> None:
        self.result, self.shown = None, {}

    # ------------------------------------------------------------------ results
    def take(self, presented) -> None:
        """A job's presented result: drawn (a loaded file's first result clears every page first)."""
        if not isinstance(presented, Presented) or not isinstance(presented.result, ToolkitResult):
            return
        if self.loading is not None:
            self.loading = None
            self.reset()
            self.drawn.emit(Cleared())
        self.result = presented.result
        self.draw(presented.state)

    def draw(self, state: dict) -> None:
        """Each stage of a view state (gui.present.landscape) to its view; nothing is computed."""
        self.shown = state
        self.drawn.emit(Page(PAGES[state["mode"]]))
        if "plane" in state:
            self.drawn.emit(Planes(state["plane"], state.get("extremes")))
            if "persistence" in state:
                self.drawn.emit(Persistence(state["persistence"], state["plane"]))
        elif "interpolation" in state:
            self.drawn.emit(InterpolationCurve(state["interpolation"]))
        elif "density" in state:
            self.drawn.emit(DensityCurve(state["density"]))

    def rethreshold(self, share: float) -> None:
        """A new basin threshold (a share of the plane's loss range): the drawn persistence with
        it, drawn again."""
        s = self.shown.get("persistence")
        if s is None:
            return
        s = {**s, "share": float(share), "threshold": float(share) * s["span"]}
        self.shown = {**self.shown, "persistence": s}
        self.drawn.emit(Persistence(s, self.shown["plane"]))

    @staticmethod
    def check(state: dict) -> None:
        """EngineInputError unless ``state`` is a view state the tab draws."""
        if state.get("mode") not in PAGES:
            raise EngineInputError(f"session has no toolkit mode it can draw: {state.get('mode')!r}")
        plane = state.get("plane")
        if plane is not None and len(plane.get("path_names", ())) != len(plane["paths"]):
            raise EngineInputError("session's toolkit plane names a different number of paths than it holds")

    def restore(self, state: dict, result: ToolkitResult | None = None) -> None:
        """A session's (or a file's, with its ``result``) view state, checked, then drawn."""
        self.check(state)
        self.result = result
        self.draw(state)

    def session_state(self) -> dict:
        return dict(self.shown)

    # ------------------------------------------------------------------ loads
    def begin_load(self, pending: dict | None, before: dict, file: dict) -> None:
        """A file's job was started: the fields to put back if it does not load are those before
        the first of the loads in progress (``pending``'s, else ``before``); ``file`` names it."""
        self.loading = {"before": pending["before"] if pending else before, "file": file}

    def settled(self) -> None:
        """A job made from the fields (Run, Step) reads them: they are the user's now."""
        self.loading = None

    def undo_load(self, fields_now: dict) -> dict | None:
        """A load in progress that will not finish: the fields to put back, unless something else
        wrote them since (a preset opened over it), whose values stay (None: nothing to do)."""
        loading, self.loading = self.loading, None
        if loading is not None and fields_now == loading["file"]:
            return loading["before"]
        return None

    # ------------------------------------------------------------------ a run's checkpoint
    @staticmethod
    def checkpoint_values(request) -> dict:
        """The panel's values that open a training run's checkpoint (gui.models.run.ToolkitRequest):
        the network group naming its state_dict, the mode and its directions, the interpolation's
        other end."""
        values = {
            "mode": request.mode,
            "network": {
                "source": "file",
                "path": request.path,
                "activation": request.activation,
                "data": request.data,
                "model": request.model,
                "loss": request.loss,
            },
            "plane": {"directions": request.directions},
        }
        if request.second:
            values["interpolation"] = {"second": request.second}
        return values
