"""The Training run tab: a run folder written by ``ll.Recorder`` in the researcher's own loop,
followed while it is written (File ▸ Open run…, ``landscape-lens --run RUN_DIR``), or the
edge-of-stability preset's run, trained here and recorded into a temporary folder.

Four plots laid out for a projector: the loss, the sharpness with its 2/η line, each layer's
invariant drift as a band with its most-moved units and the locked ones named, and the
checkpoints on their PCA plane. The job (engine.runs.follow, on the controller's ``follow`` lane,
so another tab's Run does not stop it) reads the folder, makes every state and presents it
(gui/present/run.py); the tab's model (gui/models/run.py) decides what each state redraws, and
this workspace lays the views out and routes each stage state to its view. A checkpoint clicked
on the path opens in the landscape toolkit with the mode chosen in the panel (Open in toolkit).
"""

from __future__ import annotations

from pathlib import Path

import pyqtgraph as pg
from pyqtgraph.parametertree import Parameter
from PySide6.QtWidgets import QFileDialog, QGridLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from engine.core.errors import EngineInputError
from engine.runs.edge_of_stability import EdgeSettings, edge_of_stability_job
from engine.runs.follow import follow_job

from ..models.run import Drift, Loss, Path2D, RunModel, Selection, Sharpness, Status
from ..panels.run_parameters import PARAMETERS
from ..present.run import RunPresented, presented
from ..rendering.plot_style import set_plot_fonts
from ..views.run_drift_view import RunDriftView
from ..views.run_loss_view import RunLossView
from ..views.run_path_view import RunPathView
from ..views.run_sharpness_view import RunSharpnessView
from ..workspace import Workspace


class RunWorkspace(Workspace):
    key = "run"
    title = "Training run"

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="run", type="group", children=PARAMETERS), parent)
        self.status = QLabel("Open a run folder (File ▸ Open run…) to follow it while it is written.")
        self.status.setObjectName("runStatus")
        self.status.setWordWrap(True)
        self.open_button = QPushButton("Open in toolkit")
        self.open_button.setToolTip("run the toolkit mode chosen in the panel around the checkpoint selected")
        self.open_button.setEnabled(False)
        self.stop_button = QPushButton("Stop following")
        self.stop_button.hide()  # shown while a run folder is followed
        self.loss = RunLossView()
        self.sharpness = RunSharpnessView()
        self.drift = RunDriftView()
        self.path = RunPathView()
        self.sharpness.setXLink(self.loss)
        self.drift.setXLink(self.loss)
        grid = QGridLayout()
        grid.setContentsMargins(0, 0, 0, 0)
        grid.addWidget(self.loss, 0, 0)
        grid.addWidget(self.sharpness, 0, 1)
        grid.addWidget(self.drift, 1, 0)
        grid.addWidget(self.path, 1, 1)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.open_button)
        top.addWidget(self.stop_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addLayout(top)
        layout.addLayout(grid, 1)
        self.model = RunModel()
        self.model.drawn.connect(self._route)
        self._presentation = False
        self.path.checkpoint_clicked.connect(self.select_checkpoint)
        self.open_button.clicked.connect(self.open_in_toolkit)
        self.stop_button.clicked.connect(self.stop_following)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)
        self._set_status_font()

    @property
    def shown(self) -> RunPresented | None:
        """The state drawn now."""
        return self.model.shown

    # ------------------------------------------------------------------ jobs
    @property
    def lane(self) -> str:
        """The controller lane Run puts this tab's job on: a run folder is followed on its own
        lane, and goes on whatever other tabs run; the demo trains on the main lane, which the
        run controls pause and cancel, like every tab's training."""
        return "main" if self.parameters["source"] == "demo" else "follow"

    def make_job(self, steps: int | None = None, once: bool = False):
        p = self.parameters
        if p["source"] == "demo":
            settings = EdgeSettings(
                lr=float(p["demo", "lr"]),
                steps=int(steps if steps is not None else p["demo", "steps"]),
                every=int(p["demo", "every"]),
                sharpness_every=int(p["demo", "sharpness_every"]),
            ).checked()
            self.controller.discard("follow")  # the demo's run replaces a folder followed here
            return presented(edge_of_stability_job(self.model.new_demo_folder(settings), settings))
        folder = p["folder"].strip()
        if not folder:
            raise EngineInputError("choose a run folder: File ▸ Open run…")
        if not Path(folder).expanduser().is_dir():
            raise EngineInputError(f"{folder}: no such run folder")
        self.model.following_folder()
        return presented(follow_job(Path(folder).expanduser(), once=once))

    def follow(self, job) -> None:
        """Run ``job`` on the follow lane: its states drawn as they come (a demo training for
        this tab on the main lane is stopped: one run is drawn here)."""
        if self.controller.owner is self:
            self.controller.discard("main")
        self.reset()
        self.stop_button.show()
        self.controller.submit("follow", job, self._ended, self._progress, self._failed)

    def _progress(self, update) -> None:
        self.show_partial(update.partial)

    def _ended(self, result) -> None:
        self.show_result(result)
        self.model.ended("succeeded")
        self.stop_button.hide()

    def _failed(self, text: str) -> None:
        self.model.ended("failed")
        self.stop_button.hide()
        self.controller.error(text)

    def stop_following(self) -> None:
        """Stop following: what was drawn stays, and the status line says it is not followed."""
        self.controller.discard("follow")
        self.stop_button.hide()
        self.model.ended("stopped")

    def open_run(self, folder: str, once: bool = False) -> None:
        """Follow the run in ``folder`` (``once``: draw it as it stands, and stop: a screenshot's
        one draw, on the main lane, whose outcome the headless command reads)."""
        self.parameters["source"] = "folder"
        self.parameters["folder"] = str(folder)
        try:
            job = self.make_job(once=once)
        except EngineInputError as error:
            self.controller.error(str(error))
            return
        self.controller.workspace_requested.emit(self.key)
        if once:
            self.controller.start(self, job)
        else:
            self.follow(job)

    def ask_open_run(self) -> None:
        """File ▸ Open run…: a folder dialog."""
        folder = QFileDialog.getExistingDirectory(self, "Open run folder", self.parameters["folder"] or "")
        if folder:
            self.open_run(folder)

    # ------------------------------------------------------------------ drawing
    def show_partial(self, partial) -> None:
        if isinstance(partial, RunPresented):
            self.model.take(partial)

    def show_result(self, result) -> None:
        self.show_partial(result)

    def _route(self, state) -> None:
        """The model drew ``state``: the view its type names draws it."""
        self._ROUTES[type(state)](self, state)

    def _draw_status(self, s: Status) -> None:
        self.status.setText(f"<span style='color:{s.color}'>{s.text}</span>")

    def _draw_path(self, s: Path2D) -> None:
        if s.pca is None:
            self.path.show_note(s.note)
        else:
            self.path.show_path(s.pca.steps, s.pca.xy, s.colors, s.pca.explained, s.note)

    def _draw_selection(self, s: Selection) -> None:
        self.path.select(s.step)
        self.open_button.setEnabled(s.step is not None)
        self.open_button.setText("Open in toolkit" if s.step is None else f"Open step {s.step} in toolkit")

    _ROUTES = {
        Status: _draw_status,
        Loss: lambda self, s: self.loss.show_loss(s.steps, s.loss, s.note),
        Sharpness: lambda self, s: self.sharpness.show_sharpness(s.steps, s.sharpness, s.edge, s.note),
        Drift: lambda self, s: self.drift.show_drift(s.layers, list(s.colors), s.key, s.locked),
        Path2D: _draw_path,
        Selection: _draw_selection,
    }

    def select_checkpoint(self, step: int) -> None:
        """A click on the path: that checkpoint is selected (and opened in the toolkit at once
        when the panel says a click opens it)."""
        self.controller.info(self.model.select(step))
        if self.parameters["toolkit", "on_click"]:
            self.open_in_toolkit()

    def open_in_toolkit(self) -> None:
        """The selected checkpoint to the landscape toolkit, which runs the chosen mode around it."""
        t = self.parameters.child("toolkit")
        try:
            request = self.model.toolkit_request(t["mode"], t["activation"], t["data"], t["model"])
        except EngineInputError as error:
            self.controller.error(str(error))
            return
        self.controller.open_checkpoint(request)

    def reset(self) -> None:
        self.model.reset()
        self.loss.clear_loss()
        self.sharpness.clear_sharpness()
        self.drift.clear_drift()
        self.path.clear_path()
        self._draw_selection(Selection(None))
        self.stop_button.hide()
        self.status.setText("")

    @property
    def replay_note(self) -> str:
        return self.model.replay_note

    def release_files(self) -> None:
        """The window closes: the demo's temporary run and the checkpoints written for the toolkit go."""
        self.model.close()

    # ------------------------------------------------------------------ interface
    def plot_widgets(self) -> dict[str, pg.PlotWidget]:
        return {
            "training loss": self.loss,
            "sharpness": self.sharpness,
            "invariant drift": self.drift,
            "PCA path": self.path,
        }

    def _set_status_font(self) -> None:
        font = self.status.font()
        font.setPointSize(18 if self._presentation else 12)
        font.setBold(True)
        self.status.setFont(font)

    def set_presentation(self, on: bool) -> None:
        self._presentation = on
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot, on)
            plot.set_presentation(on)
        self._set_status_font()
        self.model.redraw()  # the titles' numbers at the new size

    def closeEvent(self, event):
        self.release_files()
        super().closeEvent(event)
