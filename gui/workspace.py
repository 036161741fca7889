"""What the main window needs from each workspace (a tab: its parameters, views and jobs).

A workspace turns its parameter values into an engine job and renders the job's partial and
final results. It starts work and shows messages only through the application controller
(gui/controller.py) it is attached to; the window owns the run controls and the status bar.
"""

from __future__ import annotations

import pyqtgraph as pg
import pyqtgraph.opengl as gl
from pyqtgraph.parametertree import Parameter
from PySide6.QtWidgets import QWidget

from engine.core.progress import Job

from .rendering.camera import camera_of, set_camera


class Workspace(QWidget):
    key = ""  # the name presets use in their "workspace" field
    title = ""  # the tab's label
    accepts_networks = False  # File ▸ Load network can put a network file here

    def __init__(self, parameters: Parameter, parent=None):
        super().__init__(parent)
        self.parameters = parameters
        self.controller = None  # the AppController, once attached

    def attach(self, controller) -> None:
        """Called once by ``AppController.register``: from then on work goes through it."""
        self.controller = controller

    def ask_load_network(self) -> None:
        """File ▸ Load network on this tab: ask for the file (and what it needs) and load it."""

    def make_job(self, steps: int | None = None) -> Job:
        """Build the job from the current parameters; raise EngineInputError on bad values.

        ``steps`` overrides the number of training steps (screenshots and tests run short).
        """
        raise NotImplementedError

    def show_partial(self, partial) -> None:
        """Draw a partial result; called at most ~60 times a second."""

    def show_result(self, result) -> None:
        """Draw the finished result."""
        self.show_partial(result)

    @property
    def drawing(self) -> bool:
        """Still drawing a finished result, a view per turn of the event loop (gui.pacing): the
        controller counts it as busy, so what waits for the end sees the result drawn."""
        return False

    def reset(self) -> None:
        """Clear computed results and return the views to their initial state."""

    def gl_views(self) -> list[gl.GLViewWidget]:
        """The workspace's 3D views, for framebuffer checks and capture."""
        return []

    def plot_widgets(self) -> dict[str, pg.PlotWidget]:
        """Its 2-D plots by title, for PNG/SVG/CSV export and recording."""
        return {}

    # Replay: a finished run is a timeline of frames the scrubber can show.
    def timeline_length(self) -> int:
        """Number of frames of the current result available for replay (0: nothing to replay)."""
        return 0

    def show_frame(self, index: int) -> None:
        """Show every view as it was at frame ``index`` of the current result."""

    def shown_frame(self) -> int | None:
        """The frame of the current result that ``show_frame`` drew, or None: its end is drawn."""
        return None

    # Sessions: computed results as plain data (numpy arrays, lists, numbers, strings).
    def session_state(self) -> dict:
        return {}

    def restore_session_state(self, state: dict) -> None:
        """Show saved results without recomputing; raise EngineInputError if they don't fit."""

    def go_live(self) -> None:
        """Start making restored results live again where acting on them needs more than what is
        drawn (the minima tab's network); a session opened only to be drawn never calls it."""

    def session_cameras(self) -> list[dict]:
        """Its 3D views' cameras, as a session saves them."""
        return [camera_of(view) for view in self.gl_views()]

    def restore_cameras(self, cameras: list[dict]) -> None:
        """Place a session's cameras, after its results (laying views out may reframe them)."""
        for view, camera in zip(self.gl_views(), cameras):
            set_camera(view, camera)

    def set_presentation(self, on: bool) -> None:
        """Thicker lines and larger fonts for a projector."""
