"""The landscape toolkit researchers know from Li et al.'s loss-landscape and PyHessian, on the
minima tab's network or any loaded one: a filter-normalised plane with contours and its surface,
optimizers' paths on their PCA plane, the interpolation between two networks, and the Hessian's
spectral density where the full spectrum would not fit.

Every number comes from engine.landscape.toolkit's job, the same jobs ``main.py landscape`` runs.
Any PyTorch model loads too (a .pt2 of a conv net with batch norm, or a state_dict with its
``package.module:factory``): its modes are the module toolkit's (engine.landscape.toolkit.module_mode_job),
its PCA plane that of the training checkpoints listed, and a classifier's interpolation shows the
accuracy along the line under the loss.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from pyqtgraph.parametertree import Parameter
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QLabel, QSplitter, QTabWidget, QVBoxLayout, QWidget

from engine.core.errors import EngineInputError
from engine.landscape.networks import Network
from engine.landscape.toolkit import NetworkFile, ToolkitResult, ToolkitSettings, toolkit_job

from ..models.landscape import (
    PAGES,
    Cleared,
    DensityCurve,
    InterpolationCurve,
    Page,
    Persistence,
    Planes,
    ToolkitModel,
)
from ..panels.landscape_parameters import FILE_FIELDS, PARAMETERS, settings
from ..panels.network_file_dialog import NETWORK_FILES, TorchFileDialog
from ..parameter_values import apply_all
from ..present import resolve
from ..present.landscape import presented_job, relabel
from ..rendering.plot_style import set_colorbar_font, set_plot_fonts
from ..views.basin_map_view import BasinMapView
from ..views.contour_plane_view import ContourPlaneView
from ..views.curves_view import CurvesView
from ..views.persistence_view import PersistenceView
from ..views.spectral_density_view import SpectralDensityView
from ..workspace import Workspace

__all__ = ["FILE_FIELDS", "LandscapeWorkspace"]
VERDICT_PT = {False: 11, True: 16}  # the extreme plane's verdict line, normal and presentation


class LandscapeWorkspace(Workspace):
    key = "landscape"
    title = "Loss landscape toolkit"
    accepts_networks = True

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="landscape", type="group", children=PARAMETERS), parent)
        self.plane = ContourPlaneView()
        # the extreme-curvature plane's random companion: a map alone, the same size as the plane's
        self.random_plane = ContourPlaneView()
        self.random_plane.surface_view.hide()
        self.random_plane.hide()
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.verdict.hide()
        self.persistence = PersistenceView()
        self.basins = BasinMapView()
        self.interpolation = CurvesView("interpolation L(θa + α (θb − θa))", "α", "loss L")
        self.accuracy = CurvesView("accuracy along the line (a classifier's)", "α", "accuracy")
        self.accuracy.setXLink(self.interpolation)
        self.accuracy.hide()
        line = QWidget()
        column = QVBoxLayout(line)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.interpolation, 3)  # the loss above, the accuracy below it half as tall
        column.addWidget(self.accuracy, 2)
        self.density = SpectralDensityView()
        self.pages = QTabWidget()
        self.pages.addTab(self._plane_page(), "Plane and surface")
        self.pages.addTab(line, "Interpolation")
        self.pages.addTab(self.density, "Spectral density")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)
        self.model = ToolkitModel()  # the result, the state drawn, a load in progress
        self.model.drawn.connect(self._route)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)
        set_colorbar_font(self.plane.colorbar)
        set_colorbar_font(self.random_plane.colorbar)
        self._set_verdict_font(False)
        self.parameters.child("plane", "basin_share").sigValueChanged.connect(self._rethreshold)

    def _plane_page(self) -> QWidget:
        """The plane (and, for extreme curvature, the random plane beside it) above its
        persistence diagram and basin map; the verdict line over them."""
        page = QWidget()
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.verdict)
        split = QSplitter(Qt.Orientation.Vertical)
        planes = QSplitter(Qt.Orientation.Horizontal)
        planes.addWidget(self.plane)
        planes.addWidget(self.random_plane)
        topology = QSplitter(Qt.Orientation.Horizontal)
        topology.addWidget(self.persistence)
        topology.addWidget(self.basins)
        split.addWidget(planes)
        split.addWidget(topology)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        column.addWidget(split, 1)
        return page

    def attach(self, controller) -> None:
        super().attach(controller)
        controller.run_started.connect(self._settle_load)
        controller.main_discarded.connect(self._undo_load)  # Reset, a preset, a session: no ending is said
        controller.run_finished.connect(self._run_finished)

    # ------------------------------------------------------------------ jobs
    def settings(self) -> ToolkitSettings:
        return settings(self.parameters)

    def make_job(self, steps: int | None = None):
        s = self.settings()
        if steps is not None and s.mode == "pca":
            s = ToolkitSettings(**{**s.__dict__, "steps": max(2, steps)})
        self.pages.setCurrentIndex(PAGES[s.mode])
        second = self._second() if s.mode == "interpolation" else None
        checkpoints = self._checkpoints() if s.mode == "pca" else ()
        job = presented_job(
            toolkit_job(s, self._network(), second, checkpoints), self.parameters["plane", "basin_share"]
        )
        self.model.settled()  # a job made from the fields (Run, Step) reads them: they are the user's now
        return job

    def _network(self):
        """The minima tab's network as built or loaded, or the chosen file (read by the job)."""
        p = self.parameters
        if p["network", "source"] == "file":
            if not p["network", "path"].strip():
                raise EngineInputError("choose a network file (File ▸ Load network) or the minima tab's network")
            return self._file(resolve(p["network", "path"], "network file"))
        c = self._minima_construction()
        if c is None:
            raise EngineInputError("build or load a network in the minima tab first, or choose a file")
        return Network(c.arch, c.params, c.X, c.Y)

    def _file(self, path: str) -> NetworkFile:
        """``path`` read as the network group says: its data, activation or model factory."""
        p = self.parameters
        data = p["network", "data"].strip()
        data = resolve(data, "data file") if data else ""
        return NetworkFile(str(path), p["network", "activation"], data, p["network", "model"].strip())

    def _checkpoints(self) -> tuple[str, ...]:
        """A module's checkpoints for its PCA plane: the listed files, oldest first (an MLP's
        optimizers are trained instead, so it takes none)."""
        listed = [part.strip() for part in self.parameters["training", "checkpoints"].split(";")]
        return tuple(resolve(part, "checkpoint") for part in listed if part)

    def _second(self):
        path = self.parameters["interpolation", "second"].strip()
        if path:
            return self._file(resolve(path, "second network"))
        figure = getattr(self.controller.workspaces.get("minima"), "figure", None)
        end = getattr(getattr(figure, "path", None), "theta_end", None)
        if end is None:
            raise EngineInputError(
                "give a second network file, or run the minima tab's non-increasing path (nonattr-path): "
                "its constructed minimum is then interpolated to its global minimum"
            )
        return np.asarray(end)

    def _minima_construction(self):
        figure = getattr(self.controller.workspaces.get("minima"), "figure", None)
        return getattr(figure, "construction", None)

    # ------------------------------------------------------------------ drawing
    @property
    def result(self) -> ToolkitResult | None:
        return self.model.result

    @property
    def shown(self) -> dict:
        """The view state drawn now (gui.present.landscape): what a session saves."""
        return self.model.shown

    def show_result(self, presented):
        self.model.take(presented)

    def _route(self, state) -> None:
        """The model drew ``state``: the view its type names draws it; nothing is computed here."""
        self._ROUTES[type(state)](self, state)

    def _draw_interpolation(self, stage: InterpolationCurve):
        i = stage.curve
        self.interpolation.show_curves(
            [
                {"name": "L(α)", "x": i["alpha"], "y": i["loss"]},
                {"name": "θa (α = 0)", "hline": i["loss_a"], "color": "fg", "style": "dash"},
            ],
            note=f"L(θa) = {i['loss_a']:.6g}, L(θb) = {i['loss_b']:.6g}; barrier over the chord {i['barrier']:.3g}",
        )
        self._draw_accuracy(i)

    def _draw_density(self, stage: DensityCurve):
        d = stage.density
        hessian = ""
        if "top_eigenvalues" in d:  # a module's: Lanczos' top eigenvalues and Hutchinson's trace
            top = ", ".join(f"{v:.4g}" for v in d["top_eigenvalues"])
            hessian = f"top λ {top} · Hutchinson tr H = {d['hutchinson_trace']:.4g} ± {d['hutchinson_se']:.2g}"
        self.density.show_density(
            d["grid"], d["density"], d["extremes"], d["trace"], d["sum_squares"], d["probes"], d["steps"], hessian
        )

    def _draw_planes(self, stage: Planes):
        """The plane; for extreme curvature the random plane beside it and the verdict above."""
        p, extremes = stage.plane, stage.extremes
        paths = list(zip(p["path_names"], p["paths"]))
        self.plane.show_plane(p["alpha"], p["beta"], p["loss"].T, tuple(p["labels"]), (0.0, 0.0), paths)
        low = np.nanmin(p["loss"])
        title = f"loss ({p['kind']}) over the plane · L(θ) = {p['L_star']:.6g}"
        if extremes is not None:  # two maps share the width: a short title, the minimum beside L(θ)
            title = f"extreme curvature · L(θ) = {p['L_star']:.6g}, min {low:.6g}"
        self.plane.heatmap.getPlotItem().setTitle(title)
        self.plane.surface_view.setVisible(extremes is None)  # two maps of the same size side by side
        self.random_plane.setVisible(extremes is not None)
        self.verdict.setVisible(extremes is not None)
        if extremes is None:
            self.random_plane.clear_plane()
            self.verdict.clear()
            return
        r = extremes["random"]
        self.random_plane.show_plane(r["alpha"], r["beta"], r["loss"].T, tuple(r["labels"]))
        low = np.nanmin(r["loss"])
        self.random_plane.heatmap.getPlotItem().setTitle(f"a random filter plane · min {low:.6g}")
        e = extremes
        bottom = f"λ_min = {e['bottom_eigenvalue']:.4g} ± {e['bottom_error']:.1g}, "
        bottom = "" if "λ_min" in e["verdict"] else bottom  # a critical point's verdict states it
        self.verdict.setText(
            f"<b>{e['verdict']}</b> · {bottom}λ_max = {e['top_eigenvalue']:.4g} ± {e['top_error']:.1g}"
            f"<br>{e['dips_text']}"
        )

    def _draw_persistence(self, stage: Persistence):
        """The plane's persistence diagram and its basin map at the state's threshold."""
        s, p = stage.persistence, stage.plane
        threshold = s["threshold"]
        note = f"τ = {s['share']:.3g} × the loss range"
        self.persistence.show_persistence(s["birth"], s["death"], threshold, note)
        kept = s["persistence"] > threshold
        short = tuple(label.split(",")[0].split(" (")[0] for label in p["labels"])  # d1, d2 or PC1, PC2
        self.basins.show_basins(
            p["alpha"], p["beta"], s["components"], relabel(s, threshold), s["kept_minima"][kept], short
        )

    def _rethreshold(self, _param=None, share=None):
        """A new basin threshold: the diagram's colours and the map's table, from the drawn state."""
        self.model.rethreshold(self.parameters["plane", "basin_share"] if share is None else share)

    _ROUTES = {
        Cleared: lambda self, _s: self.reset(),
        Page: lambda self, s: self.pages.setCurrentIndex(s.index),
        Planes: _draw_planes,
        Persistence: _draw_persistence,
        InterpolationCurve: _draw_interpolation,
        DensityCurve: _draw_density,
    }

    def _set_verdict_font(self, on: bool):
        # a style sheet, not setFont: the window's sheet sets every label's size and wins over a font
        self.verdict.setStyleSheet(f"font-size: {VERDICT_PT[on]}pt; padding: 2px 6px;")

    def _draw_accuracy(self, i: dict):
        """A classifier's accuracy along the line, under the loss (hidden for a regression)."""
        self.accuracy.setVisible("accuracy" in i)
        if "accuracy" not in i:
            self.accuracy.clear_curves()
            return
        self.accuracy.show_curves(
            [
                {"name": "accuracy(α)", "x": i["alpha"], "y": i["accuracy"], "color": 2},
                {"name": "θa (α = 0)", "hline": i["accuracy_a"], "color": "fg", "style": "dash"},
            ],
            note=f"accuracy at θa {i['accuracy_a']:.3g}, at θb {i['accuracy_b']:.3g}; "
            f"most lost below the chord {i['accuracy_barrier']:.3g}",
        )

    # Sessions save the drawn view state, and opening one draws it again without a job.
    def session_state(self) -> dict:
        return self.model.session_state()

    def show_saved(self, result: ToolkitResult, state: dict):
        """A result read back from a file (``landscape-lens show``) and its view state, made before
        the window opened (gui.present.landscape.from_saved, present): drawn, no job run."""
        self.reset()
        self.parameters["mode"] = state["mode"]
        self.model.restore(state, result)

    def restore_session_state(self, state: dict):
        self.model.check(state)  # refused before anything is cleared
        self.reset()
        self.model.restore(state)

    def reset(self):
        self.model.reset()
        self.plane.clear_plane()
        self.plane.surface_view.show()
        self.random_plane.clear_plane()
        self.random_plane.hide()
        self.verdict.clear()
        self.verdict.hide()
        self.persistence.clear_persistence()
        self.basins.clear_basins()
        self.interpolation.clear_curves()
        self.accuracy.clear_curves()
        self.accuracy.hide()
        self.density.clear_density()

    # ------------------------------------------------------------------ files
    def ask_load_network(self):
        path, _ = QFileDialog.getOpenFileName(self, "Load network", "", NETWORK_FILES)
        if not path:
            return
        activation = data = ""
        if not path.lower().endswith(".npz"):
            dialog = TorchFileDialog(path, self)
            if not dialog.exec():
                return
            activation, data = dialog.choice()
        # a state_dict of any module is built by the factory named in the network group (an
        # exported graph holds its own)
        model = "" if path.lower().endswith(".pt2") else self.parameters["network", "model"].strip()
        self.load_network(path, activation, data, model)

    def load_network(self, path: str, activation: str = "", data: str = "", model: str = ""):
        """Take ``path`` as this tab's network and run the chosen mode on it: paper B's MLP, or
        any PyTorch model (a .pt2, or a state_dict with its ``model`` factory) with its data."""
        current = self._fields()
        pending = self.model.loading
        self._set_file(dict(source="file", path=path, activation=activation, data=data, model=model))
        try:
            job = self.make_job()
        except EngineInputError as error:  # refused at once: a load in progress goes on with its file
            self._set_file(current)
            self.model.loading = pending
            self.controller.error(str(error))
            return
        # A file that does not load (the job says why, in one line) changes nothing: the pages keep
        # what they show until its first result, and the fields go back if it fails, is cancelled or
        # another tab's job takes the lane, to what they were before the first of the loads in progress.
        self.model.begin_load(pending, current, self._fields())
        self.controller.start(self, job, keep=True)

    def open_checkpoint(self, request) -> None:
        """A training run's checkpoint (gui.models.run.ToolkitRequest), loaded as this tab's
        network with the request's mode, which runs around it."""
        values = self.model.checkpoint_values(request)
        network = values.pop("network")
        apply_all(self.parameters, values)
        self.parameters["network", "loss"] = network["loss"]
        self.load_network(network["path"], network["activation"], network["data"], network["model"])

    def _fields(self) -> dict:
        return {name: self.parameters["network", name] for name in FILE_FIELDS}

    def _set_file(self, values: dict):
        for name, value in values.items():
            self.parameters["network", name] = value

    def _settle_load(self, owner, _keep: bool):
        """Another tab's job took the lane from a load: the file did not load."""
        if owner is not self:
            self._undo_load()

    def _undo_load(self):
        """A load in progress that will not finish: its fields go back, unless something else
        wrote them since (a preset opened over it), whose values stay."""
        before = self.model.undo_load(self._fields())
        if before is not None:
            self._set_file(before)

    def _run_finished(self):
        # Only when no job follows: a load superseded by the next one ends (cancelled, or failed
        # just before) while that one runs, and the fields are the newer file's until it ends.
        if self.controller.run_active:
            return
        # still loading once the lane is idle: the load's result never came (it failed or was
        # cancelled), so the file did not load
        self._undo_load()

    # ------------------------------------------------------------------ interface
    def plot_widgets(self) -> dict[str, pg.PlotWidget]:
        return {
            "landscape plane": self.plane.heatmap,
            "random plane": self.random_plane.heatmap,
            "persistence diagram": self.persistence,
            "basin map": self.basins,
            "interpolation": self.interpolation,
            "interpolation accuracy": self.accuracy,
            "spectral density": self.density,
        }

    def gl_views(self):
        return [self.plane.surface_view]

    def set_presentation(self, on: bool):
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot, on)
            if hasattr(plot, "set_presentation"):
                plot.set_presentation(on)
        set_colorbar_font(self.plane.colorbar, on)  # its values grow with the axes' (they stayed at 10 pt)
        set_colorbar_font(self.random_plane.colorbar, on)
        self._set_verdict_font(on)
