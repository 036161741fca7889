"""The Training run tab: a run folder written by ``ll.Recorder`` in the researcher's own loop,
followed while it is written (File ▸ Open run…, ``landscape-lens --run RUN_DIR``), or the
edge-of-stability preset's run, trained here and recorded into a temporary folder.

Four plots laid out for a projector: the loss, the sharpness with its 2/η line, each layer's
invariant drift as a band with its most-moved units and the locked ones named, and the
checkpoints on their PCA plane. The job (engine.runs.follow, on the main lane's worker thread)
reads the folder, makes every state and presents it (gui/present/run.py); the workspace only
routes a state's fields to its views, and redraws a view only when its data is a new object.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pyqtgraph as pg
from pyqtgraph.parametertree import Parameter
from PySide6.QtWidgets import QFileDialog, QGridLayout, QLabel, QVBoxLayout

from engine.core.errors import EngineInputError
from engine.runs.edge_of_stability import EdgeSettings, edge_of_stability_job
from engine.runs.follow import follow_job

from ..present.run import RunPresented, layer_color, presented
from ..rendering.plot_style import set_plot_fonts
from ..views.run_drift_view import RunDriftView
from ..views.run_loss_view import RunLossView
from ..views.run_path_view import RunPathView
from ..views.run_sharpness_view import RunSharpnessView
from ..workspace import Workspace

SOURCES = {"a run folder (File ▸ Open run…)": "folder", "the edge-of-stability demo (trained here)": "demo"}
DEMO = EdgeSettings()

PARAMETERS = [
    {"name": "source", "title": "Follow", "type": "list", "value": "folder", "limits": SOURCES},
    {"name": "folder", "title": "run folder", "type": "str", "value": "", "tip": "a folder written by ll.Recorder"},
    {
        "name": "demo",
        "title": "Edge-of-stability demo",
        "type": "group",
        "children": [
            {"name": "lr", "title": "step size η", "type": "float", "value": DEMO.lr, "limits": (1e-4, 9.9)},
            {"name": "steps", "type": "int", "value": DEMO.steps, "limits": (1, 1_000_000)},
            {
                "name": "sharpness_every",
                "title": "sharpness every",
                "type": "int",
                "value": DEMO.sharpness_every,
                "limits": (1, 100_000),
            },
            {"name": "every", "title": "checkpoint every", "type": "int", "value": DEMO.every, "limits": (1, 100_000)},
        ],
    },
]


class RunWorkspace(Workspace):
    key = "run"
    title = "Training run"

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="run", type="group", children=PARAMETERS), parent)
        self.status = QLabel("Open a run folder (File ▸ Open run…) to follow it while it is written.")
        self.status.setObjectName("runStatus")
        self.status.setWordWrap(True)
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
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.addWidget(self.status)
        layout.addLayout(grid, 1)
        self.shown: RunPresented | None = None  # the state drawn now
        self.selected_step: int | None = None  # the checkpoint clicked on the path
        self._demo_folder: Path | None = None  # the demo's temporary run folder
        self._presentation = False
        self.path.checkpoint_clicked.connect(self.select_checkpoint)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)
        self._set_status_font()

    # ------------------------------------------------------------------ jobs
    def make_job(self, steps: int | None = None, once: bool = False):
        p = self.parameters
        if p["source"] == "demo":
            settings = EdgeSettings(
                lr=float(p["demo", "lr"]),
                steps=int(steps if steps is not None else p["demo", "steps"]),
                every=int(p["demo", "every"]),
                sharpness_every=int(p["demo", "sharpness_every"]),
            ).checked()
            return presented(edge_of_stability_job(self._new_demo_folder(), settings))
        folder = p["folder"].strip()
        if not folder:
            raise EngineInputError("choose a run folder: File ▸ Open run…")
        if not Path(folder).expanduser().is_dir():
            raise EngineInputError(f"{folder}: no such run folder")
        return presented(follow_job(Path(folder).expanduser(), once=once))

    def _new_demo_folder(self) -> Path:
        """A fresh temporary folder for the demo's run; the previous demo's is removed."""
        self._remove_demo_folder()
        self._demo_folder = Path(tempfile.mkdtemp(prefix="landscape-lens-edge-"))
        return self._demo_folder / "run"

    def _remove_demo_folder(self) -> None:
        if self._demo_folder is not None:
            shutil.rmtree(self._demo_folder, ignore_errors=True)
            self._demo_folder = None

    def open_run(self, folder: str, once: bool = False) -> None:
        """Follow the run in ``folder`` (``once``: draw it as it stands, and stop)."""
        self.parameters["source"] = "folder"
        self.parameters["folder"] = str(folder)
        try:
            job = self.make_job(once=once)
        except EngineInputError as error:
            self.controller.error(str(error))
            return
        self.controller.workspace_requested.emit(self.key)
        self.controller.start(self, job)

    def ask_open_run(self) -> None:
        """File ▸ Open run…: a folder dialog."""
        folder = QFileDialog.getExistingDirectory(self, "Open run folder", self.parameters["folder"] or "")
        if folder:
            self.open_run(folder)

    # ------------------------------------------------------------------ drawing
    def show_partial(self, partial) -> None:
        if isinstance(partial, RunPresented):
            self._draw(partial)

    def show_result(self, result) -> None:
        self.show_partial(result)

    def _draw(self, p: RunPresented) -> None:
        """Route a state to the views; a view whose data is the object it drew last is left as it is."""
        before = self.shown.run if self.shown is not None else None
        run = p.run
        self.status.setText(f"<span style='color:{p.status_color}'>{p.status_text}</span>")
        if before is None or run.steps is not before.steps:
            self.loss.show_loss(run.steps, run.loss, p.loss_note)
        if before is None or run.sharpness is not before.sharpness or run.edge is not before.edge:
            self.sharpness.show_sharpness(run.sharpness_steps, run.sharpness, run.edge, p.sharpness_note)
        if before is None or run.layers is not before.layers:
            colors = [layer_color(i) for i in range(len(run.layers))]
            self.drift.show_drift(run.layers, colors, p.drift_key, p.locked_text)
        if before is None or run.pca is not before.pca:
            if run.pca is None:
                self.path.show_note(p.path_note)
            else:
                self.path.show_path(run.pca.steps, run.pca.xy, p.path_colors, run.pca.explained, p.path_note)
                self.path.select(self.selected_step)
        self.shown = p

    def select_checkpoint(self, step: int) -> None:
        """A click on the path: that checkpoint is selected, and its file named, for the toolkit."""
        self.selected_step = int(step)
        self.path.select(self.selected_step)
        if self.shown is not None:
            from engine.runs.format import checkpoint_name

            path = Path(self.shown.run.folder) / checkpoint_name(self.selected_step)
            self.controller.info(f"checkpoint at step {step}: {path} (the toolkit's network file, with its model)")

    def reset(self) -> None:
        self.shown = None
        self.selected_step = None
        self.loss.clear_loss()
        self.sharpness.clear_sharpness()
        self.drift.clear_drift()
        self.path.clear_path()
        self.path.select(None)
        self.status.setText("")

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
        if self.shown is not None:  # the titles' numbers at the new size
            shown, self.shown = self.shown, None
            self._draw(shown)

    def closeEvent(self, event):
        self._remove_demo_folder()
        super().closeEvent(event)
