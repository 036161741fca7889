"""Non-attracting regions of local minima (paper Fig. 3): build one, inspect it, walk off it.

The workspace starts the engine's pipeline jobs (engine.minima.pipeline, engine.minima.infinity,
engine.minima.descending_path) through the application controller's lanes (gui/controller.py)
and draws their typed results; every number on screen comes from those jobs, the same ones
``main.py reproduce`` runs. What the tab holds (its result, the split, the λ drag, whether the
network is live) and how it changes is its model's (gui/models/minima.py, no Qt); the workspace is
layout, and routing: each stage state the model draws goes to its view by its type (``_ROUTES``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from pyqtgraph.parametertree import Parameter
from PySide6.QtCore import QTimer

from engine.core.errors import EngineInputError
from engine.io.netfile import save_network
from engine.io.two_layer_file import ACTIVATIONS as HOMOGENEOUS
from engine.io.two_layer_file import load_two_layer
from engine.minima.descending_path import descending_path_job
from engine.minima.infinity import infinity_job
from engine.minima.pipeline import Figure3, Figure3Settings, SliceSettings, figure3_job, load_figure3_job
from engine.minima.workbench import history_of

from ..models import minima_states as st
from ..models.minima import MinimaModel
from ..pacing import Pacer
from ..panels.minima_parameters import PARAMETERS, figure3_settings, path_range, plane_settings, slice_settings
from ..present import Presented
from ..present.curve_density import density_job
from ..present.minima import presented_job
from ..rendering.plot_style import set_plot_fonts
from ..views.slice_view import SliceView
from .minima_layout import MinimaLayout


def _is_two_layer_homogeneous(path: str) -> bool:
    """An .npz or .pt2 that records a two-layer ReLU or leaky-ReLU network (paper A's kind)."""
    if not path.lower().endswith((".npz", ".pt2")):
        return False  # a state_dict records no activation: the load dialog asks for it
    try:
        load_two_layer(path)
    except EngineInputError:
        return False
    return True


# A live run presents a partial result at every point of a stage, and the path (b) and the steps
# table are redrawn whole each time: partials are drawn at most this often (seconds; gui/pacing.py).
LIVE_INTERVAL = 0.25


class MinimaWorkspace(MinimaLayout):
    key = "minima"
    title = "Local minima (non-attracting regions)"

    def __init__(self, parent=None):
        super().__init__(Parameter.create(name="minima", type="group", children=PARAMETERS), parent)
        self.model = MinimaModel()  # the result, the split, the λ drag, the live network; what is drawn
        self.model.drawn.connect(self._route)
        self.model.cleared.connect(lambda stage: self._CLEAR[stage](self))
        self.pacer = Pacer({"partial": LIVE_INTERVAL}, self)
        self._counting: dict = {}  # view -> (its latest DensityRequest, deliver) not yet counted
        # A timer the tab owns, not QTimer.singleShot(0, self, ...): a single shot still pending
        # as a window closed kept the whole window alive (the soak's memory grew by gigabytes).
        self._previews_timer = QTimer(self, singleShot=True, interval=0)
        self._previews_timer.timeout.connect(self._drop_previews)
        self.inspector.lam.moved.connect(self.move_lambda)
        self.inspector.lam.released.connect(self.release_lambda)
        self.inspector.load_requested.connect(self.load_network)
        self.inspector.export_requested.connect(self.export_network)
        self.inspector.split.split_requested.connect(self.split_neuron)
        self.inspector.split.undo_requested.connect(self.undo_split)
        self.inspector.critical_requested.connect(self.find_critical_point)
        self.inspector.steps.itemSelectionChanged.connect(self._on_step_selected)
        for plot in self.plot_widgets().values():
            set_plot_fonts(plot)

    @property
    def figure(self):
        """The latest Figure3 / DescendingPath (the model's): what λ moves and Export saves."""
        return self.model.figure

    @property
    def shown(self) -> dict:
        """Stage -> its state on screen (the model's): what a session saves."""
        return self.model.shown

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
        controller.main_discarded.connect(self.pacer.clear)  # a dropped job's partial is not drawn

    # ------------------------------------------------------------------ jobs
    def make_job(self, steps: int | None = None):
        """Run: always a fresh build (or B10), never a re-slice of what is on screen."""
        kind = self.parameters["experiment", "kind"]
        self._fit_layout_to(kind)
        if kind == "infinity":
            self.figures.setCurrentIndex(2)
            return presented_job(infinity_job(self.parameters["experiment", "seed"], steps or 200_000))
        settings = self.settings()
        if kind == "path":
            self.figures.setCurrentIndex(3)
            return presented_job(descending_path_job(settings))
        self.figures.setCurrentIndex(0)
        return presented_job(figure3_job(settings))

    def settings(self) -> Figure3Settings:
        """The Fig. 3 build the parameters ask for (panels/minima_parameters.py)."""
        return figure3_settings(self.parameters)

    def show_partial(self, presented: Presented):
        """A running job's latest partial result, drawn in the pacer's turn: each holds every
        stage computed so far, so one skipped for a newer one loses nothing."""
        self.pacer.submit("partial", partial(self._show, presented))

    def show_result(self, presented: Presented):
        """Draw the result, then clear what it no longer has: a split, an undo or a critical
        point keeps the old panels on screen while it computes (``keep``), and the stages it does
        not recompute (the 2-D slice; (b)–(d) once no split is left) must not stay behind."""
        self.pacer.clear()  # a partial still waiting is older than the result, which holds it all
        self._show(presented)
        result = presented.result
        if isinstance(result, Figure3) and result.moved is not None:
            self.controller.info(result.moved.summary())  # where the search stopped, and why
        self.model.finish(presented)

    _CLEAR = {
        "slices_min": lambda ws: ws.slice_min.clear_slices(),
        "slices_saddle": lambda ws: ws.slice_saddle.clear_slices(),
        "path": lambda ws: ws.path_view.clear_path(),
        "descent": lambda ws: ws.descent_view.clear_curves(),
        "plane": lambda ws: ws.plane.clear_plane(),
    }

    def _show(self, presented: Presented):
        """Partials and final results alike, presented on the worker: the model draws each stage
        whose data is not the one drawn already; a construction just built warms the drag slices."""
        self.model.take(presented, self._probe_elsewhere)
        job = self.model.warm_up(presented.result, self.slice_settings())
        if job is not None:
            self.controller.preview(job, partial(self._on_preview, presented.result), self._on_probe)

    def _draw_all(self, data: dict):
        self.model.draw_all(data, self._probe_elsewhere)

    def _probe_elsewhere(self, probe: st.Probe) -> bool:
        """A loaded file's slider opens at its history's λ, and the λ box describes that point: the
        probe of (c) at the saddle's λ is not drawn there; a probe at the slider's λ runs instead."""
        if not (isinstance(self.figure, Figure3) and self.figure.loaded_from and self.model.movable()):
            return False
        lam = self.inspector.lam.exact
        if lam is None or abs(probe["lam"] - lam) <= 1e-12 * max(1.0, abs(lam)):
            return False
        self._submit_probe(lam)
        return True

    def _submit_probe(self, lam: float):
        self.controller.submit("probe", self.model.probe_request(lam), self._on_probe)

    # ------------------------------------------------------------- routing: a view per stage state
    def _route(self, state: st.StageState):
        """The model drew ``state``: the view its type names draws it."""
        self._ROUTES[type(state)](self, state)

    def _show_steps(self, data: st.Steps):
        self.inspector.show_steps(data["rows"], data.get("note", ""))

    def _show_spectrum(self, data: st.Spectrum):
        self.spectrum.show_stage(data)
        self._show_curvature(self.spectrum, "Hessian spectrum")

    def _show_density(self, data: st.Density):
        self.density.show_stage(data)
        self._show_curvature(self.density, "Spectral density")

    @staticmethod
    def _show_slices(view: SliceView, default_title: str, data: st.Slices):
        view.set_title(data.get("title", default_title))
        view.show_slices(**{k: v for k, v in data.items() if k != "title"})

    def _show_path(self, data: st.Path):
        self.path_view.show_path(data["lam"], data["loss"], data["hessian_min"], data["intervals"], data.get("label"))

    def _show_probe(self, data: st.Probe):
        self.inspector.lam.show_probe(**data)
        self.inspector.lam.set_value(data["lam"])
        self.path_view.set_current(data["lam"])

    _ROUTES = {
        st.Steps: _show_steps,
        st.Construction: lambda ws, data: ws._show_construction(data),
        st.Spectrum: _show_spectrum,
        st.Density: _show_density,
        st.SlicesMin: lambda ws, data: ws._show_slices(ws.slice_min, "(a) at the embedded minimum", data),
        st.SlicesSaddle: lambda ws, data: ws._show_slices(ws.slice_saddle, "(c) at the saddle", data),
        st.Path: _show_path,
        st.Descent: lambda ws, d: ws.descent_view.show_curves(
            d["curves"], note=d.get("note", ""), frame=d.get("frame")
        ),
        st.Plane: lambda ws, data: ws.plane.show_plane(**data),
        st.Probe: _show_probe,
        st.InfinityBias: lambda ws, d: ws.bias_view.show_curves(d["curves"], log_y=True, note=d.get("note", "")),
        st.InfinityGD: lambda ws, d: ws.gd_view.show_curves(d["curves"], note=d.get("note", "")),
        st.DescendingPath: lambda ws, d: ws.descend_view.show_curves(d["curves"], note=d.get("note", "")),
    }

    def _show_construction(self, data):
        self.model.split = -1
        self.inspector.show_neurons(data["neurons"])
        self.inspector.hypotheses.show_losses(data.get("losses", {}))
        self.network.show_network(data["widths"], data["weights"], data["splits"])
        # The controls act on a live construction, or on a reopened session's network, which they
        # show as they were saved (an action asked of it before it is live waits for it).
        live = self.model.live
        controls = live or self.model.saved_network is not None
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

    def curvature(self) -> tuple[str, st.StageState] | None:
        """What the curvature panel shows: ("spectrum" or "density", its stage's state), or None."""
        return self.model.curvature()

    def reset(self):
        if self.controller is not None:  # nothing late may draw after a reset
            self.controller.discard("preview", "probe", "raster")
        self._counting.clear()
        self.pacer.clear()  # a partial still waiting would draw the old run again
        self.model.reset()
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
    def move_lambda(self, lam: float):
        """The slider moved to ``lam`` (the λ box's drag): a coarse preview of (c) and the plane."""
        if self.model.saved_network is not None:  # no preview until it is live; the release waits for it
            self.go_live()
            return
        # The newest λ replaces any preview still waiting; a running one finishes or is dropped.
        # The controller starts the probe's Hessian once the preview is drawn.
        job = self.model.preview_request(lam, self.slice_settings(), self._plane_settings())
        if job is None:
            return
        self.inspector.lam.show_pending()
        self.controller.preview(job, partial(self._on_preview, self.figure), self._on_probe)

    def _on_preview(self, figure, result):
        """A drag's preview of ``figure`` (or the drag slices made ahead of the first move): the
        probe job to run next, for a preview drawn (the model drops one of a replaced figure)."""
        if self.model.take_preview(figure, result, self._probe_elsewhere):
            return self.model.probe_request(result.result.lam)
        return None

    def _on_probe(self, presented: Presented):
        self._draw_all(presented.state)

    def _drop_previews(self):
        """The main lane's jobs were dropped unended (Reset, a preset, a session, the window
        closing), a λ release's re-slice among them: the drag's previews would stay over a figure
        that never moved. Each stage is drawn again as it was before the drag, the λ box and the
        slider with it."""
        if self.model.drop_previews():  # drawn, a probe sets the slider too
            self.inspector.lam.set_value(self.model.split_lam())

    def release_lambda(self, lam: float):
        """The slider let go at ``lam``: the refined re-slice of (b)–(d) and the plane there."""
        if self._later(partial(self.release_lambda, lam)) or not self.model.movable():
            return
        self.controller.discard("preview")  # a late preview must not overwrite the refined slices
        # ... and its probe with it: the λ box and the spectrum beside it still follow the slider
        self._submit_probe(lam)
        job = self.model.release_request(lam, self.slice_settings(), self._path_range(), self._plane_settings())
        self.controller.start(self, job, keep=True)

    def _on_step_selected(self):
        """Row k > 0 of the steps table is split k − 1: the slider (and, on release, (b)–(d)) follow it."""
        data = self.model.select_step(self.inspector.steps.currentRow())
        if data is not None:
            self.inspector.lam.set_split(data["split_labels"][self.model.split])
            self.inspector.lam.set_value(data["split_lams"][self.model.split])

    def _plane_settings(self) -> tuple:
        return plane_settings(self.parameters)

    def _path_range(self) -> tuple:
        return path_range(self.parameters)

    # ------------------------------------------------------------- splits by hand
    def split_neuron(self, layer: int, neuron: int, lam: float):
        self._start_on_figure(self.model.split_maker(layer, neuron, lam))

    def undo_split(self):
        self._start_on_figure(self.model.undo_maker)

    def find_critical_point(self):
        self._start_on_figure(self.model.critical_maker)

    def _start_on_figure(self, make_job):
        """A job on the Fig. 3 result on screen; what is drawn stays until its result replaces it."""
        if self._later(partial(self._start_on_figure, make_job)):
            return
        if not isinstance(self.figure, Figure3):
            self._message("build or load a network first")
            return
        self.controller.discard("preview", "probe")  # a λ preview of the old split must not land on the new
        try:
            job = self.model.figure_request(make_job, self.settings())
        except EngineInputError as error:
            self._message(str(error))
            return
        self.controller.start(self, job, keep=True)

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
                path, self.slice_settings(), replace(self.settings(), plane=None), activation or None, data or None
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
        c = self.model.construction()
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
        return slice_settings(self.parameters)

    def _message(self, text: str):
        self.controller.error(text)

    # ------------------------------------------------------------- interface
    accepts_networks = True

    def ask_load_network(self):
        self.inspector.ask_load()

    def timeline_length(self) -> int:
        return self.model.timeline_length()

    def show_frame(self, index: int):
        path = self.model.frame(index)
        if path is None:
            return
        lam = path["lam"][index]
        self.path_view.set_current(lam)
        self.inspector.lam.set_value(lam)
        self.inspector.lam.show_probe(lam, path["loss"][index], path["hessian_min"][index], path["verdicts"][index])

    def shown_frame(self) -> int | None:
        return self.model.shown_frame()

    def session_state(self) -> dict:
        """What is drawn, as plain data, and the live network as the bytes of its exported .npz
        (weights, data, construction history): a reopened session makes it live again and goes on."""
        return self.model.session_state(self.inspector.lam.exact)

    def restore_session_state(self, state: dict):
        stages, net, network = self.model.check_session(state)  # checked before anything changes
        self.reset()
        self.model.restore(stages, net, network)
        if net is not None:
            self._place_lambda(
                *self.model.saved_network.at, len(stages.get("construction", {}).get("split_labels", []))
            )

    def go_live(self):
        """Make a reopened session's network live: its inspection, on the preview lane (the
        restored status line and message stay as they are). File ▸ Open session starts it at
        once; a shot of a session (``main.py screenshot --session``) never does, as it only draws."""
        model = self.model
        if model.saved_network is None or (model.going_live and self.controller.lane_busy("preview")):
            return  # none, or on its way (nothing else previews until it is live; a cancel-all may drop it)
        self.controller.preview(model.resume_request(), self._resume)

    def _later(self, action) -> bool:
        """With a reopened session's network not live yet: do ``action`` once it is (True)."""
        if not self.model.later(action):
            return False
        self.go_live()
        return True

    def _resume(self, presented: Presented):
        """The reopened session's network is live: the slider, split, undo, export and find
        critical point act on it; the panels keep what the session saved."""
        split, lam = self.model.resume(presented)
        fig = presented.result
        self._show_construction(self.shown.get("construction") or presented.state["construction"])
        self._place_lambda(split, lam, len(fig.construction.splits))
        self.model.run_waiting()
        return None  # no probe follows: the λ box shows what the session saved

    def _place_lambda(self, split, lam, n_splits: int):
        """The slider on the split and at the λ a session saved, of ``n_splits``."""
        if n_splits and isinstance(split, int) and -n_splits <= split < n_splits:
            self.model.split = split
            self.inspector.lam.set_split(self.shown["construction"]["split_labels"][split])
        if lam is not None and n_splits:
            self.inspector.lam.set_value(float(lam))
