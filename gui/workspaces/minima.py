"""Non-attracting regions of local minima (paper Fig. 3): build one, inspect it, walk off it.

The workspace starts the engine's pipeline jobs (engine.minima.pipeline, engine.minima.infinity,
engine.minima.descending_path) through the application controller's lanes (gui/controller.py)
and draws their typed results; every number on screen comes from those jobs, the same ones
``main.py reproduce`` runs.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from pyqtgraph.parametertree import Parameter
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from engine.core.errors import EngineInputError
from engine.io.netfile import load_network, save_network
from engine.io.two_layer_file import ACTIVATIONS as HOMOGENEOUS
from engine.io.two_layer_file import load_two_layer
from engine.minima.descending_path import DescendingPath, descending_path_job
from engine.minima.infinity import infinity_job
from engine.minima.pipeline import (
    DragSlices,
    Figure3,
    Figure3Settings,
    SliceSettings,
    critical_point_job,
    drag_job,
    figure3_job,
    inspected_figure_job,
    load_figure3_job,
    preview_job,
    probe_job,
    reslice_job,
    split_figure_job,
    undo_figure_job,
)
from engine.minima.workbench import history_of

from ..panels.inspector import InspectorPanel
from ..parameter_values import SEED_RANGE, plane_grid_fields
from ..present import Presented
from ..present.curve_density import density_job
from ..present.minima import (
    STAGES,
    parse_schedule,
    parse_widths,
    presented_job,
    presented_preview,
    presented_probe,
    presented_resume,
)
from ..rendering.plot_style import set_plot_fonts
from ..views.curves_view import CurvesView
from ..views.degenerate_path_view import DegeneratePathView
from ..views.network_diagram import NetworkDiagram
from ..views.plane_view import PlaneView
from ..views.slice_view import SliceView
from ..views.spectral_density_view import SpectralDensityView
from ..views.spectrum_view import SpectrumView
from ..workspace import Workspace


def _is_two_layer_homogeneous(path: str) -> bool:
    """An .npz or .pt2 that records a two-layer ReLU or leaky-ReLU network (paper A's kind)."""
    if not path.lower().endswith((".npz", ".pt2")):
        return False  # a state_dict records no activation: the load dialog asks for it
    try:
        load_two_layer(path)
    except EngineInputError:
        return False
    return True


# The figures' tabs, and their titles in presentation type (where the spectrum and network join them).
FIGURE_TABS = (
    ("Fig. 3 (a)–(d)", "Fig. 3 (a)–(d)"),
    ("2-D slice", "2-D slice"),
    ("Minima at infinity", "At infinity"),
    ("Non-increasing path", "Path"),
)
LAMBDA_RANGE = (-1e3, 1e3)  # λ far outside [0, 1] only scales one pair's weights towards overflow

PARAMETERS = [
    {
        "name": "experiment",
        "title": "Experiment",
        "type": "group",
        "children": [
            {
                "name": "kind",
                "title": "show",
                "type": "list",
                "value": "deep",
                "limits": {
                    "deep construction (Fig. 3)": "deep",
                    "shallow Fukumizu–Amari": "shallow",
                    "minima at infinity": "infinity",
                    "non-increasing path": "path",
                },
            },
            {"name": "seed", "title": "data seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            {"name": "samples", "title": "samples N", "type": "int", "value": 20, "limits": (1, 10000)},
        ],
    },
    {
        "name": "construction",
        "title": "Construction",
        "type": "group",
        "children": [
            {"name": "widths", "title": "small network", "type": "str", "value": "2, 1, 1, 1"},
            {"name": "activation", "type": "list", "value": "sigmoid", "limits": ["sigmoid", "tanh"]},
            {"name": "bias", "title": "biases", "type": "bool", "value": False},
            {
                "name": "schedule",
                "title": "splits",
                "type": "str",
                "value": "1:20, 2:20",
                "tip": "layer:count pairs: split that many neurons of each layer",
            },
            {
                "name": "lam",
                "title": "split λ (B > 0)",
                "type": "float",
                "value": 0.5,
                "step": 0.05,
                "limits": LAMBDA_RANGE,
            },
            {
                "name": "lam_outside",
                "title": "split λ (B < 0)",
                "type": "float",
                "value": -1.0,
                "step": 0.05,
                "limits": LAMBDA_RANGE,
            },
            {"name": "restarts", "title": "max restarts", "type": "int", "value": 100, "limits": (1, 10000)},
            {
                "name": "saddle_lam",
                "title": "saddle λ (c, d)",
                "type": "float",
                "value": 2.0,
                "step": 0.1,
                "limits": LAMBDA_RANGE,
            },
        ],
    },
    {
        "name": "slices",
        "title": "Slices (a, c)",
        "type": "group",
        "children": [
            {"name": "K", "title": "K directions", "type": "int", "value": 500, "limits": (1, 100000)},
            {"name": "P", "title": "P points", "type": "int", "value": 101, "limits": (3, 2001)},
            {"name": "T", "title": "t range ±T", "type": "float", "value": 1.0, "step": 0.1, "limits": (1e-6, 1e3)},
            {
                "name": "normalize",
                "title": "directions",
                "type": "list",
                "value": "unit",
                "limits": {
                    "unit norm": "unit",
                    "per neuron": "neuron",
                    "filter-normalised (Li et al.)": "filter",
                    "layer-normalised (Li et al.)": "layer",
                },
                "tip": "how each random direction is scaled (engine.landscape.directions); filter and layer "
                "also give the 2-D slice Li et al.'s random plane",
            },
            {
                "name": "ignore_biases",
                "title": "ignore biases",
                "type": "bool",
                "value": False,
                "tip": "directions with no bias components (Li et al.'s --xignore biasbn)",
            },
            {"name": "seed", "title": "direction seed", "type": "int", "value": 0, "limits": SEED_RANGE},
            {
                "name": "family",
                "title": "directions over",
                "type": "list",
                "value": "all",
                "limits": {
                    "all parameters": "all",
                    "one layer's block": "layer",
                    "one neuron's incoming weights": "neuron",
                    "the split pair's incoming weights": "pair",
                    "k lowest Hessian eigenvectors": "eigen",
                },
            },
            {"name": "family_layer", "title": "layer", "type": "int", "value": 1, "limits": (1, 100)},
            {
                "name": "family_neuron",
                "title": "neuron",
                "type": "int",
                "value": 1,
                "limits": (1, 100000),
                "tip": "counted from 1 within the layer, as everywhere in the app",
            },
            {"name": "family_k", "title": "k eigenvectors", "type": "int", "value": 5, "limits": (1, 1000)},
        ],
    },
    {
        "name": "path",
        "title": "Degenerate path (b)",
        "type": "group",
        "children": [
            {
                "name": "lam_from",
                "title": "λ from",
                "type": "float",
                "value": -0.5,
                "step": 0.1,
                "limits": LAMBDA_RANGE,
            },
            {"name": "lam_to", "title": "λ to", "type": "float", "value": 2.0, "step": 0.1, "limits": LAMBDA_RANGE},
            {"name": "points", "type": "int", "value": 26, "limits": (2, 1000)},
        ],
    },
    {
        "name": "plane",
        "title": "2-D slice",
        "type": "group",
        "children": plane_grid_fields(),
    },
]


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


class MinimaWorkspace(Workspace):
    key = "minima"
    title = "Local minima (non-attracting regions)"

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="minima", type="group", children=PARAMETERS), parent)
        self.slice_min = SliceView("(a) at the embedded minimum")
        self.path_view = DegeneratePathView()
        self.slice_saddle = SliceView("(c) at the saddle")
        self.descent_view = CurvesView("(d) descent at the saddle", "t", "loss L")
        self.plane = PlaneView()
        self.bias_view = CurvesView("loss against the shared last-layer bias b", "bias b", "L(b) − L∞")
        self.gd_view = CurvesView("gradient descent from large b", "step", "L − L∞")
        self.descend_view = CurvesView("non-increasing path vs straight segment", "path parameter t", "loss L")
        self.spectrum = SpectrumView()
        self.density = SpectralDensityView()  # in the spectrum's place past the full-Hessian limit
        self.network = NetworkDiagram()
        self.inspector = InspectorPanel()
        self._build_layout()
        self.shown: dict = {}  # stage -> plain view data: what is on screen, what a session saves
        self._frame_shown = (None, 0)  # (path stage, index) that show_frame drew last
        self._seen: dict = {}  # result field -> the object last drawn from it (identity)
        self._presented: dict = {}  # stage -> the presented data object last drawn for it
        self.figure = None  # the latest Figure3 / DescendingPath: what λ moves and Export saves
        self._split = -1  # which split the slider moves: the steps table's selected row
        # The split's slices for every λ, sliced once (engine.minima.pipeline.drag_job) as soon as a
        # construction is ready: then a move's preview costs milliseconds, not a slice pass.
        self._drag: DragSlices | None = None
        self._warmed_for = None  # the construction the drag slices were last asked for
        self._counting: dict = {}  # view -> (its latest DensityRequest, deliver) not yet counted
        self._curvature_stage = None  # "spectrum" or "density": the one the details panel shows
        self._before_drag: dict | None = None  # what was drawn before a drag's first preview
        # A reopened session's network, drawn as saved but not live yet (go_live makes it so),
        # and what the user asked of it meanwhile, done once it is live.
        self._saved_network: SavedNetwork | None = None
        self._going_live = False  # its inspection was submitted
        self._when_live: list = []
        # A timer the tab owns, not QTimer.singleShot(0, self, ...): a single shot still pending
        # as a window closed kept the whole window alive (the soak's memory grew by gigabytes).
        self._previews_timer = QTimer(self, singleShot=True, interval=0)
        self._previews_timer.timeout.connect(self._drop_previews)
        self.inspector.lam.moved.connect(self._on_lambda_moved)
        self.inspector.lam.released.connect(self._on_lambda_released)
        self.inspector.load_requested.connect(self.load_network)
        self.inspector.export_requested.connect(self.export_network)
        self.inspector.split.split_requested.connect(self.split_neuron)
        self.inspector.split.undo_requested.connect(self.undo_split)
        self.inspector.critical_requested.connect(self.find_critical_point)
        self.inspector.steps.itemSelectionChanged.connect(self._on_step_selected)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)

    def attach(self, controller):
        # Live λ readouts need a Hessian (slow at a few hundred parameters): they run on the probe lane,
        # so the slider never blocks and the main lane stays free for the slices; (c) and the
        # plane at a coarse grid, while λ is dragged, on the preview lane.
        # Their results come back through the callbacks each submission names; a failure goes to
        # the message bar.
        super().attach(controller)
        self.inspector.lam.changed.connect(controller.set_lambda)
        # The slice views' curves are counted per pixel on the raster lane, not on the GUI thread
        # (until attached, a view counts its own).
        for view in (self.slice_min, self.slice_saddle):
            view.count_elsewhere = partial(self._count_curves, view)
        # At the next turn: nothing is drawn (nor counted on a lane) while every lane is told to
        # stop, the window perhaps closing; a Reset of this tab has cleared it by then.
        controller.main_discarded.connect(self._previews_timer.start)

    def _build_layout(self):
        fig3 = QWidget()
        grid = QGridLayout(fig3)
        grid.setContentsMargins(0, 0, 0, 0)
        for k, view in enumerate((self.slice_min, self.path_view, self.slice_saddle, self.descent_view)):
            grid.addWidget(view, k // 2, k % 2)
        infinity = QSplitter(Qt.Orientation.Vertical)
        infinity.addWidget(self.bias_view)
        infinity.addWidget(self.gd_view)
        self.figures = QTabWidget()
        for page, (title, _) in zip((fig3, self.plane, infinity, self.descend_view), FIGURE_TABS):
            self.figures.addTab(page, title)
        self._details = details = QTabWidget()
        self._curvature = QStackedWidget()
        for view in (self.spectrum, self.density):
            self._curvature.addWidget(view)
        self._curvature_title = "Hessian spectrum"
        details.addTab(self._curvature, self._curvature_title)
        details.addTab(self.network, "Network")
        # Scrollable, so the inspector never sets the window's minimum width (small recordings).
        inspector = QScrollArea()
        inspector.setWidgetResizable(True)
        inspector.setFrameShape(QFrame.Shape.NoFrame)
        inspector.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # its tables scroll instead
        inspector.setWidget(self.inspector)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(inspector)
        right.addWidget(details)
        right.setSizes([600, 300])  # the inspector's λ box and tables whole, without a scroll bar
        self._splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.figures)
        splitter.addWidget(right)
        splitter.setSizes([960, 500])  # the inspector's tables and the spectrum need ~500 px
        splitter.setStretchFactor(0, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    # ------------------------------------------------------------------ jobs
    def make_job(self, steps: int | None = None):
        """Run: always a fresh build (or B10), never a re-slice of what is on screen."""
        kind = self.parameters["experiment", "kind"]
        self._fit_layout_to(kind)
        if kind == "infinity":
            self.figures.setCurrentIndex(2)
            return presented_job(infinity_job(self.parameters["experiment", "seed"], steps or 200_000))
        settings = self._settings()
        if kind == "path":
            self.figures.setCurrentIndex(3)
            return presented_job(descending_path_job(settings))
        self.figures.setCurrentIndex(0)
        return presented_job(figure3_job(settings))

    def _settings(self) -> Figure3Settings:
        p = self.parameters
        return Figure3Settings(
            kind="shallow" if p["experiment", "kind"] == "shallow" else "deep",
            seed=p["experiment", "seed"],
            widths=parse_widths(p["construction", "widths"]),
            activation=p["construction", "activation"],
            bias=p["construction", "bias"],
            schedule=parse_schedule(p["construction", "schedule"]),
            lam=p["construction", "lam"],
            lam_outside=p["construction", "lam_outside"],
            max_restarts=p["construction", "restarts"],
            n_samples=p["experiment", "samples"],
            saddle_lam=p["construction", "saddle_lam"],
            slices=self.slice_settings(),
            path=self._path_range(),
            plane=self._plane_settings(),
        )

    def show_partial(self, partial: Presented):
        self._show(partial)

    def show_result(self, presented: Presented):
        """Draw the result, then clear what it no longer has: a split, an undo or a critical
        point keeps the old panels on screen while it computes (``keep``), and the stages it does
        not recompute (the 2-D slice; (b)–(d) once no split is left) must not stay behind."""
        self._show(presented)
        result = presented.result
        if isinstance(result, Figure3) and result.moved is not None:
            self.controller.info(result.moved.summary())  # where the search stopped, and why
        if "current" in presented.state:
            current = presented.state["current"]
            for stage in [s for s in self.shown if s in self._CLEAR and s not in current]:
                del self.shown[stage]
                self._CLEAR[stage](self)

    _CLEAR = {
        "slices_min": lambda ws: ws.slice_min.clear_slices(),
        "slices_saddle": lambda ws: ws.slice_saddle.clear_slices(),
        "path": lambda ws: ws.path_view.clear_path(),
        "descent": lambda ws: ws.descent_view.clear_curves(),
        "plane": lambda ws: ws.plane.clear_plane(),
    }

    def _show(self, presented: Presented):
        """Partials and final results alike, presented on the worker: draw each stage whose data
        is not the one drawn already."""
        result, state = presented.result, presented.state
        if isinstance(result, (Figure3, DescendingPath)):
            self.figure = result
        self._seen = state["seen"]
        self._before_drag = None  # a result replaces the drag's previews
        # A stage is drawn once per presented data object (each state holds them all); the λ box's
        # probe, drawn over by the slider's, stays the slider's.
        data = {k: v for k, v in state["stages"].items() if self._presented.get(k) is not v}
        self._presented.update(data)
        self._draw_all(data)
        if "probe_details" in state and "probe" in data and self.shown.get("probe") is data["probe"]:
            # the λ box shows the probe: the spectrum (or density) beside it is its Hessian's
            self._draw_all(state["probe_details"])
        if isinstance(result, Figure3) and result.saddle is not None and result.construction is not self._warmed_for:
            self._warmed_for = result.construction
            if self._movable():
                lam = result.construction.splits[self._split].lam
                job = drag_job(result, lam, self._split, self.slice_settings(), drag=self._drag)
                self.controller.preview(job, partial(self._on_preview, result), self._on_probe)

    def _draw_all(self, data: dict):
        for stage in STAGES:  # a fixed order: the construction before the slider reads its splits
            if stage in data and not (stage == "probe" and self._probe_elsewhere(data[stage])):
                self._draw(stage, data[stage])

    def _probe_elsewhere(self, probe: dict) -> bool:
        """A loaded file's slider opens at its history's λ, and the λ box describes that point: the
        probe of (c) at the saddle's λ is not drawn there; a probe at the slider's λ runs instead."""
        if not (isinstance(self.figure, Figure3) and self.figure.loaded_from and self._movable()):
            return False
        lam = self.inspector.lam.exact
        if lam is None or abs(probe["lam"] - lam) <= 1e-12 * max(1.0, abs(lam)):
            return False
        self._submit_probe(lam)
        return True

    def _probe(self, lam: float):
        return presented_probe(probe_job(self.figure, lam, self._split), self.figure)

    def _submit_probe(self, lam: float):
        self.controller.submit("probe", self._probe(lam), self._on_probe)

    def _draw(self, stage: str, data):
        """One handler per view; ``data`` is plain (what a session stores)."""
        self.shown[stage] = data
        if stage == "steps":
            self.inspector.show_steps(data["rows"], data.get("note", ""))
        elif stage == "construction":
            self._show_construction(data)
        elif stage in ("spectrum", "density"):
            view = self.spectrum if stage == "spectrum" else self.density
            view.show_stage(data)
            self._show_curvature(view, "Hessian spectrum" if stage == "spectrum" else "Spectral density")
            self._curvature_stage = stage
        elif stage == "slices_min":
            self.slice_min.set_title(data.get("title", "(a) at the embedded minimum"))
            self.slice_min.show_slices(**{k: v for k, v in data.items() if k != "title"})
        elif stage == "slices_saddle":
            self.slice_saddle.set_title(data.get("title", "(c) at the saddle"))
            self.slice_saddle.show_slices(**{k: v for k, v in data.items() if k != "title"})
        elif stage == "path":
            self.path_view.show_path(
                data["lam"], data["loss"], data["hessian_min"], data["intervals"], data.get("label")
            )
        elif stage == "descent":
            self.descent_view.show_curves(data["curves"], note=data.get("note", ""), frame=data.get("frame"))
        elif stage == "plane":
            self.plane.show_plane(**data)
        elif stage == "probe":
            self.inspector.lam.show_probe(**data)
            self.inspector.lam.set_value(data["lam"])
            self.path_view.set_current(data["lam"])
        elif stage == "infinity_bias":
            self.bias_view.show_curves(data["curves"], log_y=True, note=data.get("note", ""))
        elif stage in ("infinity_gd", "descending_path"):
            view = self.gd_view if stage == "infinity_gd" else self.descend_view
            view.show_curves(data["curves"], note=data.get("note", ""))

    def _show_construction(self, data):
        self._split = -1
        self.inspector.show_neurons(data["neurons"])
        self.inspector.hypotheses.show_losses(data.get("losses", {}))
        self.network.show_network(data["widths"], data["weights"], data["splits"])
        # The controls act on a live construction, or on a reopened session's network, which they
        # show as they were saved (an action asked of it before it is live waits for it).
        live = isinstance(self.figure, Figure3) and self._construction() is not None
        controls = live or self._saved_network is not None
        labels = data["split_labels"] if controls else []
        self.inspector.lam.set_split(labels[-1] if labels else None)
        if data["split_lams"]:
            self.inspector.lam.set_value(data["split_lams"][-1])
        rows = self.shown.get("steps", {}).get("rows")
        if rows and "probe" not in self.shown:  # until a probe arrives: the network as built
            last = rows[-1]
            self.inspector.lam.show_probe(
                data["split_lams"][-1] if data["split_lams"] else None, last["loss"], last["min"], last["verdict"]
            )
        self.inspector.export_button.setEnabled(controls)
        self.inspector.critical_button.setEnabled(controls)
        moved = self.figure.moved if live else None
        self.inspector.show_search(None if moved is None else moved.reached)
        self.inspector.split.show_neurons(data.get("split_rows", []) if controls else [], len(labels))

    def curvature(self) -> tuple[str, dict] | None:
        """What the curvature panel shows: ("spectrum" or "density", its stage's data), or None."""
        stage = self._curvature_stage
        return (stage, self.shown[stage]) if stage in self.shown else None

    def _show_curvature(self, view, title: str):
        """The spectrum, or past the full-Hessian limit the density, in the details' first tab."""
        self._curvature.setCurrentWidget(view)
        self._curvature_title = title
        for tabs in (self._details, self.figures):
            if tabs.indexOf(self._curvature) >= 0:
                tabs.setTabText(tabs.indexOf(self._curvature), self._tab_title(tabs))

    def _tab_title(self, tabs: QTabWidget) -> str:
        """Beside the figures' four tabs, in large type, only a word fits: "Spectrum", "Density"."""
        return self._curvature_title.split()[-1].capitalize() if tabs is self.figures else self._curvature_title

    def _place_details(self, tabs: QTabWidget):
        """The spectrum and the network diagram as tabs of ``tabs``: under the inspector, or in
        presentation type beside the figures, so that the inspector has the right column's whole
        height (under it, in large type, the steps table kept two rows and the spectrum a sliver)."""
        for view, title in ((self._curvature, self._tab_title(tabs)), (self.network, "Network")):
            if tabs.indexOf(view) < 0:
                tabs.addTab(view, title)
        self._details.setVisible(tabs is self._details)

    def _construction(self):
        return None if self.figure is None else self.figure.construction

    def _fit_layout_to(self, kind: str):
        """Minima at infinity have no construction: the inspector and spectrum would stand empty
        beside them, so the figures take the whole width. The non-increasing path computes no
        spectrum: its tab shows the network the path starts from instead."""
        self._splitter.widget(1).setVisible(kind != "infinity")
        if kind == "path" and self._details.indexOf(self.network) >= 0:  # not beside the figures (presentation)
            self._details.setCurrentWidget(self.network)

    def reset(self):
        if self.controller is not None:  # nothing late may draw after a reset
            self.controller.discard("preview", "probe", "raster")
        self._counting.clear()
        self.shown, self._seen, self._presented, self.figure = {}, {}, {}, None
        self._drag = self._warmed_for = self._before_drag = self._saved_network = None
        self._going_live = False
        self._when_live.clear()
        self._fit_layout_to(self.parameters["experiment", "kind"])
        for view in (self.slice_min, self.slice_saddle):
            view.clear_slices()
        self.path_view.clear_path()
        for view in (self.descent_view, self.bias_view, self.gd_view, self.descend_view):
            view.clear_curves()
        self.plane.clear_plane()
        self.spectrum.clear_spectrum()
        self.density.clear_density()
        self._show_curvature(self.spectrum, "Hessian spectrum")
        self.network.clear_network()
        self.inspector.clear()

    # ------------------------------------------------------------- slice densities
    def _count_curves(self, view, request, deliver) -> None:
        """Count ``view``'s request on the raster lane with the other view's still waiting (a new
        job replaces the running one); ``deliver`` gets the image back on this thread."""
        self._counting[view] = (request, deliver)
        wanted = list(self._counting.items())
        job = density_job([request for _, (request, _) in wanted])
        self.controller.submit("raster", job, partial(self._counted, wanted))

    def _counted(self, wanted: list, images: list) -> None:
        for (view, (request, deliver)), image in zip(wanted, images):
            if self._counting.get(view, (None,))[0] is request:
                del self._counting[view]
            deliver(image)

    # ------------------------------------------------------------- λ slider
    def _movable(self) -> bool:
        """λ moves a split of a live Fig. 3 construction: built, split by hand, loaded with its history,
        or a reopened session's once its network is live (go_live)."""
        c = self._construction()
        return isinstance(self.figure, Figure3) and c is not None and bool(c.splits)

    def _on_lambda_moved(self, lam: float):
        if self._saved_network is not None:  # no preview until it is live; the release waits for it
            self.go_live()
            return
        if not self._movable():
            return
        self.inspector.lam.show_pending()
        # The newest λ replaces any preview still waiting; a running one finishes or is dropped.
        # The controller starts the probe's Hessian once the preview is drawn.
        job = preview_job(self.figure, lam, self._split, self.slice_settings(), self._plane_settings(), drag=self._drag)
        self.controller.preview(presented_preview(job), partial(self._on_preview, self.figure), self._on_probe)

    def _on_preview(self, figure, result):
        """A drag's preview (presented) of ``figure``, or the drag slices made ahead of the first
        move (or None: the split's slices are not affine in λ, so each move slices afresh).
        Returns the probe job to run next, for a preview. Dropped, with no probe, once another
        figure is on screen: a split, an undo or a load finished while it was sliced (the probe
        would move a split of the new figure, or of one that has none)."""
        if figure is not self.figure:
            return None
        if result is None or isinstance(result, DragSlices):
            self._drag = result
            return None
        preview = result.result
        self._drag = preview.drag
        if self._before_drag is None:  # what a dropped re-slice puts back (_drop_previews)
            self._before_drag = dict(self.shown)
        self._draw_all(result.state)
        return self._probe(preview.lam)

    def _on_probe(self, presented: Presented):
        self._draw_all(presented.state)

    def _drop_previews(self):
        """The main lane's jobs were dropped unended (Reset, a preset, a session, the window
        closing), a λ release's re-slice among them: the drag's previews would stay over a figure
        that never moved (the soak: "drawn stages [..., 'plane'] but the figure has [...]"). Each
        stage is drawn again as it was before the drag, the λ box and the slider with it."""
        before, self._before_drag = self._before_drag, None
        if before is None:
            return
        for stage in STAGES:  # in order: the construction before what reads its splits
            if stage in before and self.shown.get(stage) is not before[stage]:
                self._draw(stage, before[stage])
            elif stage not in before and stage in self.shown and stage in self._CLEAR:
                del self.shown[stage]
                self._CLEAR[stage](self)
        if "probe" not in before:  # drawn, a probe sets the slider too
            self.inspector.lam.set_value(self._construction().splits[self._split].lam)

    def _on_lambda_released(self, lam: float):
        if self._later(partial(self._on_lambda_released, lam)) or not self._movable():
            return
        shown_split = self.figure.path.split if self.figure.path is not None else None
        path = None if shown_split == self._split_index() else self._path_range()
        self.controller.discard("preview")  # a late preview must not overwrite the refined slices
        # ... and its probe with it: the λ box and the spectrum beside it still follow the slider
        self._submit_probe(lam)
        job = reslice_job(self.figure, lam, self._split, self.slice_settings(), path, plane=self._plane_settings())
        self.controller.start(self, presented_job(job, self._seen), keep=True)

    def _on_step_selected(self):
        """Row k > 0 of the steps table is split k − 1: the slider (and, on release, (b)–(d)) follow it."""
        row = self.inspector.steps.currentRow()
        if self._saved_network is not None:  # the drawn construction is the saved network's
            n_splits = len(self.shown.get("construction", {}).get("split_labels", []))
        else:
            c = self._construction()
            n_splits = len(c.splits) if c is not None else 0
        if not 1 <= row <= n_splits:
            return
        self._split = row - 1
        data = self.shown["construction"]
        self.inspector.lam.set_split(data["split_labels"][self._split])
        self.inspector.lam.set_value(data["split_lams"][self._split])

    def _split_index(self) -> int:
        c = self._construction()
        n = len(c.splits) if c is not None else 0
        return self._split % n if n else -1

    def _plane_settings(self) -> tuple:
        return (self.parameters["plane", "points"], self.parameters["plane", "extent"])

    def _path_range(self) -> tuple:
        p = self.parameters
        return (p["path", "lam_from"], p["path", "lam_to"], p["path", "points"])

    # ------------------------------------------------------------- splits by hand
    def split_neuron(self, layer: int, neuron: int, lam: float):
        self._start_on_figure(lambda fig, s: split_figure_job(fig, layer, neuron, lam, s))

    def undo_split(self):
        self._start_on_figure(undo_figure_job)

    def find_critical_point(self):
        self._start_on_figure(critical_point_job)

    def _start_on_figure(self, make_job):
        """A job on the Fig. 3 result on screen; what is drawn stays until its result replaces it."""
        if self._later(partial(self._start_on_figure, make_job)):
            return
        if not isinstance(self.figure, Figure3):
            self._message("build or load a network first")
            return
        self.controller.discard("preview", "probe")  # a λ preview of the old split must not land on the new
        try:
            job = make_job(self.figure, replace(self._settings(), plane=None))
        except EngineInputError as error:
            self._message(str(error))
            return
        self.controller.start(self, presented_job(job, self._seen), keep=True)

    # ------------------------------------------------------------- files
    def load_network(self, path: str, activation: str = "", data: str = ""):
        """``activation`` and ``data``: what a PyTorch file needs besides its weights ("" = none).
        A two-layer ReLU or leaky-ReLU network (paper B's constructions need a smooth σ) goes to
        the topology tab, which shows paper A's view of it."""
        if activation in HOMOGENEOUS:
            self.controller.hand_network("topology", path, data)
            return
        try:
            job = load_figure3_job(
                path, self.slice_settings(), replace(self._settings(), plane=None), activation or None, data or None
            )
        except EngineInputError as error:
            if not activation and _is_two_layer_homogeneous(path):  # an .npz or .pt2 says so itself
                self.controller.hand_network("topology", path, data)
                return
            self._message(str(error))
            return
        self.controller.start(self, presented_job(job))

    def export_network(self, path: str):
        if self._later(partial(self.export_network, path)):
            return
        c = self._construction()
        if c is None:
            self._message("nothing to export: build or load a construction first")
            return
        try:
            save_network(path, c.arch, c.params, c.X, c.Y, history=history_of(c))
        except (EngineInputError, OSError) as error:
            self._message(str(error))
            return
        self.controller.info(f"wrote {path}")

    def slice_settings(self) -> SliceSettings:
        p = self.parameters
        return SliceSettings(
            p["slices", "K"],
            p["slices", "P"],
            p["slices", "T"],
            p["slices", "normalize"],
            p["slices", "seed"],
            p["slices", "family"],
            p["slices", "family_layer"],
            p["slices", "family_neuron"] - 1,
            p["slices", "family_k"],
            "biases" if p["slices", "ignore_biases"] else "none",
        )

    def _message(self, text: str):
        self.controller.error(text)

    # ------------------------------------------------------------- interface
    accepts_networks = True

    def ask_load_network(self):
        self.inspector.ask_load()

    def plot_widgets(self) -> dict[str, pg.PlotWidget]:
        return {
            "slices at the minimum": self.slice_min,
            "degenerate path": self.path_view,
            "slices at the saddle": self.slice_saddle,
            "descent at the saddle": self.descent_view,
            "2-D slice heatmap": self.plane.heatmap,
            "loss against bias": self.bias_view,
            "gradient descent from large bias": self.gd_view,
            "non-increasing path": self.descend_view,
            "Hessian spectrum": self.spectrum,
            "spectral density": self.density,
            "network diagram": self.network,
        }

    def gl_views(self):
        return [self.plane.surface_view]

    def timeline_length(self) -> int:
        # Replay walks along the degenerate path: every λ sample is a frame.
        return len(self.shown.get("path", {}).get("lam", []))

    def show_frame(self, index: int):
        path = self.shown.get("path")
        if not path:
            return
        lam = path["lam"][index]
        self._frame_shown = (path, index)
        self.path_view.set_current(lam)
        self.inspector.lam.set_value(lam)
        self.inspector.lam.show_probe(lam, path["loss"][index], path["hessian_min"][index], path["verdicts"][index])

    def shown_frame(self) -> int | None:
        path, index = self._frame_shown
        return index if path is not None and path is self.shown.get("path") else None

    def session_state(self) -> dict:
        """What is drawn, as plain data, and the live network as the bytes of its exported .npz
        (weights, data, construction history): a reopened session makes it live again and goes on."""
        state = dict(self.shown)
        c = self._construction()
        if isinstance(self.figure, Figure3) and c is not None:
            with tempfile.TemporaryDirectory() as folder:
                path = save_network(Path(folder) / "network.npz", c.arch, c.params, c.X, c.Y, history=history_of(c))
                npz = np.frombuffer(path.read_bytes(), np.uint8)
            state["network"] = {
                "npz": npz,
                "label": self.figure.loaded_from or "the built network",
                "split": self._split,
                # the slider's λ moves a split: with none left (all undone) it is a stale value,
                # which a reopened window, having nothing to set it from, did not show (the soak)
                "lam": self.inspector.lam.exact if c.splits else None,
            }
        elif self._saved_network is not None:  # not live yet: as the session had it
            state["network"] = self._saved_network.saved
        return state

    def restore_session_state(self, state: dict):
        state = dict(state)
        network = state.pop("network", None)
        unknown = set(state) - set(STAGES)
        if unknown:
            raise EngineInputError(f"session has unknown minima results {sorted(unknown)}")
        net = None if network is None else self._session_network(network)  # checked before anything changes
        self.reset()
        if net is not None:
            self._saved_network = SavedNetwork(net, dict(network))
        self._draw_all(state)
        if net is not None:
            self._place_lambda(*self._saved_network.at, len(state.get("construction", {}).get("split_labels", [])))

    def go_live(self):
        """Make a reopened session's network live: its inspection, on the preview lane (the
        restored status line and message stay as they are). File ▸ Open session starts it at
        once; a shot of a session (``main.py screenshot --session``) never does, as it only draws."""
        if self._saved_network is None or (self._going_live and self.controller.lane_busy("preview")):
            return  # none, or on its way (nothing else previews until it is live; a cancel-all may drop it)
        saved, self._going_live = self._saved_network, True
        self.controller.preview(presented_resume(inspected_figure_job(saved.net, saved.label)), self._resume)

    def _later(self, action) -> bool:
        """With a reopened session's network not live yet: do ``action`` once it is (True)."""
        if self._saved_network is None:
            return False
        self._when_live.append(action)
        self.go_live()
        return True

    @staticmethod
    def _session_network(network) -> object:
        """The session's network read with the checks of a network file (engine.io.netfile)."""
        if not isinstance(network, dict) or not isinstance(network.get("npz"), np.ndarray):
            raise EngineInputError("session's minima network is not an exported .npz")
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "network.npz"
            path.write_bytes(np.asarray(network["npz"], np.uint8).tobytes())
            return load_network(path)

    def _resume(self, presented: Presented):
        """The reopened session's network is live: the slider, split, undo, export and find
        critical point act on it; the panels keep what the session saved."""
        fig = presented.result
        split, lam = self._saved_network.at
        self._saved_network, self._going_live = None, False
        self.figure = fig
        self._seen = {"steps": fig.steps, "construction": fig.construction, "eigs": fig.eigs}
        self._warmed_for = fig.construction
        self._show_construction(self.shown.get("construction") or presented.state["construction"])
        self._place_lambda(split, lam, len(fig.construction.splits))
        waiting, self._when_live = self._when_live, []
        for action in waiting:
            action()
        return None  # no probe follows: the λ box shows what the session saved

    def _place_lambda(self, split, lam, n_splits: int):
        """The slider on the split and at the λ a session saved, of ``n_splits``."""
        if n_splits and isinstance(split, int) and -n_splits <= split < n_splits:
            self._split = split
            self.inspector.lam.set_split(self.shown["construction"]["split_labels"][split])
        if lam is not None and n_splits:
            self.inspector.lam.set_value(float(lam))

    def set_presentation(self, on: bool):
        # Large type needs a wider inspector; the figures keep two thirds of the width.
        self._splitter.setSizes([900, 700] if on else [960, 500])
        self._place_details(self.figures if on else self._details)
        for k, (title, short) in enumerate(FIGURE_TABS):  # large type: short titles make room for two more
            self.figures.setTabText(k, short if on else title)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot, on)
            if hasattr(plot, "set_presentation"):
                plot.set_presentation(on)
