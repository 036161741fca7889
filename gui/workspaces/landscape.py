"""The landscape toolkit researchers know from Li et al.'s loss-landscape and PyHessian, on the
minima tab's network or any loaded one: a filter-normalised plane with contours and its surface,
optimizers' paths on their PCA plane, the interpolation between two networks, and the Hessian's
spectral density where the full spectrum would not fit.

Every number comes from engine.landscape.toolkit's job, the same jobs ``main.py landscape`` runs.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from pyqtgraph.parametertree import Parameter
from PySide6.QtWidgets import QFileDialog, QTabWidget, QVBoxLayout

from engine.core.errors import EngineInputError
from engine.landscape.networks import Network
from engine.landscape.toolkit import ToolkitResult, ToolkitSettings, read_network_job, toolkit_job

from ..panels.inspector import NETWORK_FILES, TorchFileDialog
from ..panels.topology_parameters import resolve
from ..parameter_values import SEED_RANGE
from ..present import Presented
from ..present.landscape import presented_job
from ..views.contour_plane_view import ContourPlaneView
from ..views.curves_view import CurvesView
from ..views.plot_style import set_plot_fonts
from ..views.spectral_density_view import SpectralDensityView
from ..workspace import Workspace

MODES = {
    "filter-normalised plane": "plane",
    "optimizers on their PCA plane": "pca",
    "interpolation to a second network": "interpolation",
    "Hessian spectral density (SLQ)": "density",
}
PAGES = {"plane": 0, "pca": 0, "interpolation": 1, "density": 2}
NORMALIZATIONS = {"per filter (Li et al.)": "filter", "per layer": "layer", "unit norm": "random"}

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
            {"name": "activation", "title": "activation", "type": "str", "value": "", "tip": "for a state_dict"},
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
                "value": "sum",
                "limits": {
                    "summed squared error (papers)": "sum",
                    "mean squared error": "mean",
                    "cross-entropy": "cross-entropy",
                },
            },
        ],
    },
    {
        "name": "plane",
        "title": "Plane",
        "type": "group",
        "children": [
            {"name": "points", "title": "grid points", "type": "int", "value": 41, "limits": (5, 401)},
            {"name": "extent", "title": "extent ±", "type": "float", "value": 1.0, "step": 0.1, "limits": (1e-6, 1e3)},
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
        self.density = SpectralDensityView()
        self.pages = QTabWidget()
        self.pages.addTab(self.plane, "Plane and surface")
        self.pages.addTab(self.interpolation, "Interpolation")
        self.pages.addTab(self.density, "Spectral density")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)
        self.result: ToolkitResult | None = None
        self.shown: dict = {}  # the view state drawn now (gui.present.landscape), what a session saves
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)

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
        return presented_job(toolkit_job(s, self._network(), self._second() if s.mode == "interpolation" else None))

    def _network(self):
        """The minima tab's network as built or loaded, or a job reading the chosen file."""
        p = self.parameters
        if p["network", "source"] == "file":
            if not p["network", "path"].strip():
                raise EngineInputError("choose a network file (File ▸ Load network) or the minima tab's network")
            data = p["network", "data"].strip()
            return read_network_job(
                resolve(p["network", "path"], "network file"),
                p["network", "activation"],
                resolve(data, "data file") if data else "",
            )
        c = self._minima_construction()
        if c is None:
            raise EngineInputError("build or load a network in the minima tab first, or choose a file")
        return Network(c.arch, c.params, c.X, c.Y)

    def _second(self):
        path = self.parameters["interpolation", "second"].strip()
        if path:
            p = self.parameters
            return read_network_job(path, p["network", "activation"], p["network", "data"])
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
        elif "density" in state:
            d = state["density"]
            self.density.show_density(
                d["grid"], d["density"], d["extremes"], d["trace"], d["sum_squares"], d["probes"], d["steps"]
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
        self.load_network(path, activation, data)

    def load_network(self, path: str, activation: str = "", data: str = ""):
        """Take ``path`` as this tab's network and run the chosen mode on it."""
        p = self.parameters
        p["network", "source"] = "file"
        p["network", "path"], p["network", "activation"], p["network", "data"] = path, activation, data
        try:
            job = self.make_job()
        except EngineInputError as error:
            self.controller.error(str(error))
            return
        self.controller.start(self, job)

    # ------------------------------------------------------------------ interface
    def plot_widgets(self) -> dict[str, pg.PlotWidget]:
        return {
            "landscape plane": self.plane.heatmap,
            "interpolation": self.interpolation,
            "spectral density": self.density,
        }

    def gl_views(self):
        return [self.plane.surface_view]

    def set_presentation(self, on: bool):
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot, on)
            if hasattr(plot, "set_presentation"):
                plot.set_presentation(on)
