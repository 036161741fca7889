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
from PySide6.QtWidgets import QFileDialog, QTabWidget, QVBoxLayout, QWidget

from engine.core.errors import EngineInputError
from engine.landscape.networks import Network
from engine.landscape.toolkit import NetworkFile, ToolkitResult, ToolkitSettings, toolkit_job

from ..panels.inspector import NETWORK_FILES, TorchFileDialog
from ..parameter_values import SEED_RANGE, plane_grid_fields
from ..present import Presented, resolve
from ..present.landscape import presented_job
from ..rendering.plot_style import set_colorbar_font, set_plot_fonts
from ..views.contour_plane_view import ContourPlaneView
from ..views.curves_view import CurvesView
from ..views.spectral_density_view import SpectralDensityView
from ..workspace import Workspace

MODES = {
    "filter-normalised plane": "plane",
    "training paths on their PCA plane (optimizers, or a model's checkpoints)": "pca",
    "interpolation to a second network": "interpolation",
    "Hessian spectral density (SLQ)": "density",
}
PAGES = {"plane": 0, "pca": 0, "interpolation": 1, "density": 2}
NORMALIZATIONS = {
    "per filter (Li et al.)": "filter",
    "per layer": "layer",
    "unit norm": "random",
    "the Hessian's top two eigenvectors (a PyTorch model)": "hessian",
}
FILE_FIELDS = ("source", "path", "activation", "data", "model")  # the network group's fields a load sets

PARAMETERS = [
    {"name": "mode", "title": "Show", "type": "list", "value": "plane", "limits": MODES},
    {
        "name": "network",
        "title": "Network",
        "type": "group",
        "children": [
            {
                "name": "source",
                "title": "from",
                "type": "list",
                "value": "minima",
                "limits": {"the minima tab's network": "minima", "a file": "file"},
            },
            {"name": "path", "title": "file", "type": "str", "value": "", "tip": ".npz, .pt/.pth state_dict or .pt2"},
            {"name": "activation", "title": "activation", "type": "str", "value": "", "tip": "for an MLP's state_dict"},
            {
                "name": "model",
                "title": "model factory",
                "type": "str",
                "value": "",
                "tip": "package.module:factory building the nn.Module a state_dict is for (your own code, imported)",
            },
            {
                "name": "data",
                "title": "data",
                "type": "str",
                "value": "",
                "tip": ".npz with X, Y or .csv (last column y)",
            },
            {
                "name": "loss",
                "title": "loss",
                "type": "list",
                "value": "auto",
                # Short enough for the value column at 1600×960 ("summed squared error (papers" was
                # cut there); the tip says what each is.
                "limits": {
                    "auto (by the data)": "auto",
                    "summed squares (papers)": "sum",
                    "mean squared error": "mean",
                    "cross-entropy": "cross-entropy",
                },
                "tip": "auto: cross-entropy when the data's last column holds integer class labels, else "
                "the summed squared error; summed squares is the papers' loss, L = Σ (f(x) − y)²",
            },
        ],
    },
    {
        "name": "plane",
        "title": "Plane",
        "type": "group",
        "children": [
            *plane_grid_fields(),
            {"name": "directions", "type": "list", "value": "filter", "limits": NORMALIZATIONS},
            {"name": "ignore_biases", "title": "ignore biases", "type": "bool", "value": False},
            {"name": "seed", "title": "direction seed", "type": "int", "value": 0, "limits": SEED_RANGE},
        ],
    },
    {
        "name": "training",
        "title": "PCA paths",
        "type": "group",
        "children": [
            {"name": "steps", "type": "int", "value": 200, "limits": (2, 100_000)},
            {"name": "optimizers", "type": "str", "value": "gd, adam", "tip": "comma-separated: gd, sgd, adam"},
            {"name": "lr", "title": "step size (0: default)", "type": "float", "value": 0.0, "limits": (0.0, 1e3)},
            {
                "name": "checkpoints",
                "type": "str",
                "value": "",
                "tip": "a PyTorch model's training state_dicts, oldest first, separated by ';' (at least 3)",
            },
        ],
    },
    {
        "name": "interpolation",
        "title": "Interpolation",
        "type": "group",
        "children": [
            {
                "name": "second",
                "title": "second network",
                "type": "str",
                "value": "",
                "tip": "a file of the same architecture; empty: the end of the minima tab's non-increasing path",
            },
            {"name": "points", "type": "int", "value": 201, "limits": (2, 100_000)},
        ],
    },
    {
        "name": "density",
        "title": "Spectral density",
        "type": "group",
        "children": [
            {"name": "probes", "type": "int", "value": 10, "limits": (1, 1000)},
            {"name": "steps", "title": "Lanczos steps", "type": "int", "value": 80, "limits": (1, 2000)},
        ],
    },
]


class LandscapeWorkspace(Workspace):
    key = "landscape"
    title = "Loss landscape toolkit"
    accepts_networks = True

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="landscape", type="group", children=PARAMETERS), parent)
        self.plane = ContourPlaneView()
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
        self.pages.addTab(self.plane, "Plane and surface")
        self.pages.addTab(line, "Interpolation")
        self.pages.addTab(self.density, "Spectral density")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)
        self.result: ToolkitResult | None = None
        self.shown: dict = {}  # the view state drawn now (gui.present.landscape), what a session saves
        # A load that has not finished yet: {"before": the fields before the first of the loads in
        # progress, "file": the fields naming the file being loaded}
        self._loading: dict | None = None
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)
        set_colorbar_font(self.plane.colorbar)

    def attach(self, controller) -> None:
        super().attach(controller)
        controller.run_started.connect(self._settle_load)
        controller.main_discarded.connect(self._undo_load)  # Reset, a preset, a session: no ending is said
        controller.run_finished.connect(self._run_finished)

    # ------------------------------------------------------------------ jobs
    def settings(self) -> ToolkitSettings:
        p = self.parameters
        optimizers = tuple(o.strip() for o in p["training", "optimizers"].split(",") if o.strip())
        return ToolkitSettings(
            mode=p["mode"],
            kind=p["network", "loss"],
            points=p["plane", "points"],
            extent=p["plane", "extent"],
            normalization=p["plane", "directions"],
            ignore="biases" if p["plane", "ignore_biases"] else "none",
            seed=p["plane", "seed"],
            steps=p["training", "steps"],
            optimizers=optimizers,
            lr=p["training", "lr"] or None,
            interp_points=p["interpolation", "points"],
            probes=p["density", "probes"],
            lanczos_steps=p["density", "steps"],
        )

    def make_job(self, steps: int | None = None):
        s = self.settings()
        if steps is not None and s.mode == "pca":
            s = ToolkitSettings(**{**s.__dict__, "steps": max(2, steps)})
        self.pages.setCurrentIndex(PAGES[s.mode])
        second = self._second() if s.mode == "interpolation" else None
        job = presented_job(toolkit_job(s, self._network(), second, self._checkpoints() if s.mode == "pca" else ()))
        self._loading = None  # a job made from the fields (Run, Step) reads them: they are the user's now
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
    def show_result(self, presented):
        if not isinstance(presented, Presented) or not isinstance(presented.result, ToolkitResult):
            return
        if self._loading is not None:  # a loaded file's first result replaces every page
            self._loading = None
            self.reset()
        self.result = presented.result
        self._draw(presented.state)

    def _draw(self, state: dict):
        """Route a view state (gui.present.landscape) to the pages; nothing is computed here."""
        self.shown = state
        self.pages.setCurrentIndex(PAGES[state["mode"]])
        if "plane" in state:
            p = state["plane"]
            paths = list(zip(p["path_names"], p["paths"]))
            self.plane.show_plane(p["alpha"], p["beta"], p["loss"].T, tuple(p["labels"]), (0.0, 0.0), paths)
            self.plane.heatmap.getPlotItem().setTitle(f"loss ({p['kind']}) over the plane · L(θ) = {p['L_star']:.6g}")
        elif "interpolation" in state:
            i = state["interpolation"]
            self.interpolation.show_curves(
                [
                    {"name": "L(α)", "x": i["alpha"], "y": i["loss"]},
                    {"name": "θa (α = 0)", "hline": i["loss_a"], "color": "fg", "style": "dash"},
                ],
                note=f"L(θa) = {i['loss_a']:.6g}, L(θb) = {i['loss_b']:.6g}; barrier over the chord {i['barrier']:.3g}",
            )
            self._draw_accuracy(i)
        elif "density" in state:
            d = state["density"]
            hessian = ""
            if "top_eigenvalues" in d:  # a module's: Lanczos' top eigenvalues and Hutchinson's trace
                top = ", ".join(f"{v:.4g}" for v in d["top_eigenvalues"])
                hessian = f"top λ {top} · Hutchinson tr H = {d['hutchinson_trace']:.4g} ± {d['hutchinson_se']:.2g}"
            self.density.show_density(
                d["grid"], d["density"], d["extremes"], d["trace"], d["sum_squares"], d["probes"], d["steps"], hessian
            )

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
        return dict(self.shown)

    def restore_session_state(self, state: dict):
        if state.get("mode") not in PAGES:
            raise EngineInputError(f"session has no toolkit mode it can draw: {state.get('mode')!r}")
        plane = state.get("plane")
        if plane is not None and len(plane.get("path_names", ())) != len(plane["paths"]):
            raise EngineInputError("session's toolkit plane names a different number of paths than it holds")
        self.reset()
        self._draw(state)

    def reset(self):
        self.result = None
        self.shown = {}
        self.plane.clear_plane()
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
        pending = self._loading
        self._set_file(dict(source="file", path=path, activation=activation, data=data, model=model))
        try:
            job = self.make_job()
        except EngineInputError as error:  # refused at once: a load in progress goes on with its file
            self._set_file(current)
            self._loading = pending
            self.controller.error(str(error))
            return
        # A file that does not load (the job says why, in one line) changes nothing: the pages keep
        # what they show until its first result, and the fields go back if it fails, is cancelled or
        # another tab's job takes the lane, to what they were before the first of the loads in progress.
        self._loading = {"before": pending["before"] if pending else current, "file": self._fields()}
        self.controller.start(self, job, keep=True)

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
        if self._loading is not None and self._fields() == self._loading["file"]:
            self._set_file(self._loading["before"])
        self._loading = None

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
