"""Invariant sets: train a shallow ReLU network and watch each neuron stay on Q(c_k).

Three sub-views share the tab, chosen by the "View" parameter: the live training view, the
paper's Fig. 4 sweep and its Fig. 5 probability maps. A training run's job builds its setup
and presents every update on the worker thread (gui.present.topology); the workspace only routes
the view state's fields to the views, and every number shown comes from the engine.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QSplitter, QStackedWidget, QVBoxLayout

from engine.core.errors import EngineInputError
from engine.core.process_jobs import in_worker_process, prestart
from engine.core.progress import run_to_completion
from engine.topology.obstruction import LoadedNetwork
from engine.topology.training import Trajectory
from engine.topology.two_layer import TwoLayerParams

from ..models.topology import TopologyModel, fits
from ..pacing import Pacer
from ..panels.invariants_panel import InvariantsPanel, values_text
from ..panels.topology_parameters import (
    create_parameters,
    network_request,
    show_fields_of,
    sweep_job,
)
from ..parameter_values import apply_all
from ..present import Presented
from ..present.layer_invariants import LayersShown, continued_or_layers_job, network_file_job
from ..present.topology import (
    Context,
    loaded_context,
    present_row,
    preview_job,
    restored_job,
    setup_context,
    training_job,
)
from ..present.training_setup import check_request, train_config, training_setup, values_of
from ..rendering.plot_style import set_plot_fonts
from ..views.fig4_view import Fig4View
from ..views.fig5_view import Fig5View
from ..views.function_heatmaps import FunctionHeatmaps
from ..views.layer_invariants_view import LayerInvariantsView
from ..views.neuron_quadrics import NeuronQuadrics
from ..views.reduced_view import ReducedView
from ..views.training_curves import TrainingCurves
from ..workspace import Workspace

# Seconds between live redraws of each part (gui.pacing): the 3D views as often as the event
# loop allows; plots, whose repaint is costly under llvmpipe, a few times a second.
MAX_LOADED_NEURONS = 16  # a loaded network gets one 3D view per neuron: beyond this, use the command line
LIVE_INTERVALS = {"loss": 0.2, "drift": 0.2, "invariants": 0.2, "reduced": 0.1, "heatmaps": 0.5}


class TopologyWorkspace(Workspace):
    key = "topology"
    title = "Invariant sets (topological obstruction)"

    def __init__(self, parent=None):
        super().__init__(create_parameters(), parent)
        self.quadrics = NeuronQuadrics()
        self.reduced = ReducedView()
        self.invariants = InvariantsPanel()
        self.curves = TrainingCurves()
        self.heatmaps = FunctionHeatmaps()
        self.fig4 = Fig4View()
        self.fig5 = Fig5View()
        self.layers = LayerInvariantsView()  # a network that is not two-layer (gui.present.layer_invariants)

        self.neuron_area = QSplitter(Qt.Orientation.Vertical)
        self.neuron_area.addWidget(self.reduced)
        self.neuron_area.addWidget(self.quadrics)
        side = QSplitter(Qt.Orientation.Vertical)
        for widget in (self.invariants, self.curves.loss_plot, self.curves.drift_plot, self.heatmaps):
            side.addWidget(widget)
        side.setSizes([230, 260, 220, 240])
        side.setMinimumWidth(360)
        training = QSplitter(Qt.Orientation.Horizontal)
        training.addWidget(self.neuron_area)
        training.addWidget(side)
        training.setSizes([820, 520])
        self.pages = QStackedWidget()
        self.page_of = {"training": training, "fig4": self.fig4, "fig5": self.fig5}
        for page in (*self.page_of.values(), self.layers):
            self.pages.addWidget(page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)

        # The result, the layout's context, the network file read, a session's run being drawn.
        self.model = TopologyModel()
        self._presenting = False  # presentation mode (set_presentation)
        self._has_heatmaps = False  # the run's data can be drawn (d ≤ 2)
        self.pacer = Pacer(LIVE_INTERVALS, self)
        # A reset that no run follows previews the panel's network at the next turn of the event
        # loop, so a preset that runs at once never builds it here: its job does (training_job).
        self._preview_timer = QTimer(self, singleShot=True, interval=0)
        self._preview_timer.timeout.connect(self._preview)
        self.parameters.child("mode").sigValueChanged.connect(self._on_mode)
        self.parameters.child("network", "source").sigValueChanged.connect(self._on_mode)
        self.parameters.child("display").sigTreeStateChanged.connect(self._on_display)
        self._on_mode()
        self._clear()
        # Here, before the window is first shown and before there is a controller to run jobs:
        # the window lays itself out around these views.
        self._lay_out(run_to_completion(preview_job(values_of(self.parameters))))
        self._worker_started = False  # see showEvent

    def showEvent(self, event):
        # Training runs in a worker process (make_job): started when the tab is first shown, it
        # has imported torch by the first Run (a slow import). A window that never
        # shows this tab (a screenshot of another one) starts none.
        if not self._worker_started:
            self._worker_started = True
            prestart("gui.present.topology")
        super().showEvent(event)

    @property
    def mode(self) -> str:
        return self.parameters["mode"]

    @property
    def from_file(self) -> bool:
        return self.mode == "training" and self.parameters["network", "source"] == "file"

    # ------------------------------------------------------------------ jobs
    def make_job(self, steps: int | None = None):
        """The job of the current values. Training reads a snapshot of them and builds its data,
        network and initial weights itself (gui.present.training_setup), and presents each update
        (gui.present.topology)."""
        if self.mode in ("fig4", "fig5"):
            return sweep_job(self.parameters, steps)
        if self.from_file:  # the file is read, checked and its c computed in the job
            r = network_request(self.parameters, steps)
            self.model.loaded_key = r.key
            self._expect_job()
            request = (r.path, r.activation, r.slope, r.data, r.config, r.data_source, MAX_LOADED_NEURONS)
            return in_worker_process(continued_or_layers_job, *request)
        values = values_of(self.parameters)
        check_request(values)  # refused now what can be without loading data; a data file's shape in the job
        self._expect_job()
        return in_worker_process(training_job, values, steps, laid_out=self.model.context)

    def _expect_job(self):
        self.model.starting = True
        self._stop_preview()

    def load_network(self, path, data_path=None) -> bool:
        """File ▸ Load network: show the network in ``path`` (.npz, .pt/.pth, .pt2) with the data in
        ``data_path`` (else the file's own, else the Data group's), its quadrics and invariants; Run
        then trains it on. The file is read in an engine job; False if the request was refused."""
        values = {"mode": "training", "network": {"source": "file", "file": str(path)}}
        if data_path:
            values["data"] = {"source": "file", "file": str(data_path)}
        elif str(path).lower().endswith(".npz"):
            values["data"] = {"source": "file", "file": ""}  # its own X and Y
        try:
            apply_all(self.parameters, values)
            r = network_request(self.parameters)
        except EngineInputError as error:
            self._error(str(error))
            return False
        self.model.loaded_key = r.key
        request = (r.path, r.activation, r.slope, r.data, r.config, r.data_source, MAX_LOADED_NEURONS)
        self._start(network_file_job(*request))
        return True

    accepts_networks = True  # File ▸ Load network on this tab loads here

    def ask_load_network(self):
        """File ▸ Load network: the network file, then (unless an .npz carries it) its data."""
        from PySide6.QtWidgets import QFileDialog

        path, _ = QFileDialog.getOpenFileName(
            self, "Load a two-layer ReLU network", "", "Networks (*.npz *.pt *.pth *.pt2);;All files (*)"
        )
        if not path:
            return
        data = None
        if not path.lower().endswith(".npz"):
            data, _ = QFileDialog.getOpenFileName(
                self, "Its data (cancel: the Data group's)", "", "Data (*.npz *.csv);;All files (*)"
            )
        self.load_network(path, data or None)

    def _start(self, job):
        self.controller.start(self, job)

    def _error(self, text: str):
        self.controller.error(text)

    def reset(self):
        if self._clear() and not self.model.starting:  # else the job lays the views out with its first update
            self._preview_timer.start()

    def _clear(self) -> bool:
        """Drop the run and any preview on its way; True if the panel's own network is now to
        be previewed (a loaded network's views are laid out again here, from what was read)."""
        self.model.clear()
        self.pacer.clear()  # a live update still waiting would draw the old run again
        self._stop_preview()
        self.pages.setCurrentWidget(self.page_of[self.mode])  # off the layers view, if shown
        if self.mode != "training":
            self.page_of[self.mode].reset()
            return False
        if self.from_file:
            try:
                key = network_request(self.parameters).key
            except EngineInputError as error:
                self.model.context = None
                self.invariants.show_nothing(f"Cannot load: {error}")
                return False
            if self.model.loaded is not None and key == self.model.loaded_key:
                self._lay_out(self.model.loaded[1])
            else:
                self.model.context = None
                self.invariants.show_nothing("Run to read the network file and train it on.")
            return False
        return True

    def _preview(self):
        """Q(c) at the start of the panel's network, before any run (a Reset, or a preset that
        waits for Run), laid out in a job on the setup lane; a run or a reset drops it."""
        if self.mode != "training" or self.from_file:
            return
        self.controller.submit(
            "setup",
            preview_job(values_of(self.parameters)),
            self._lay_out,
            on_failure=lambda text: self.invariants.show_nothing(f"Cannot preview: {text}"),
        )

    def _stop_preview(self):
        """No preview lands now: neither the one due at the next turn of the event loop nor one
        on the setup lane (it would lay a run's views out for the network before)."""
        self._preview_timer.stop()
        if self.controller is not None:
            self.controller.discard("setup")

    def _panel_extra(self) -> str:
        return "" if self._presenting or self.model.context is None else self.model.context.layout["extra"]

    def _lay_out(self, context: Context):
        """Lay the training views out for a network (gui.present.topology.layout_of) and draw its
        picture before a run: Q(c) at the start, and a loaded network's current points."""
        self.model.laid_out(context)
        L = context.layout
        self.quadrics.configure(L["l"], L["exact"], L["labels"], L["extent"])
        self.quadrics.setVisible(L["axes"] is not None)
        self.reduced.setVisible(not L["exact"])
        if not L["exact"] and L["axes"] is not None:
            self.neuron_area.setSizes([600, 300])  # the exact picture first, the projection below
        self.reduced.configure(L["signed_w"], L["signed_v"], L["w_name"], L["v_name"], L["extent"])
        self.curves.configure(L["l"], self.parameters["display", "log_drift"])
        self.curves.hold_steps(L["total_steps"])
        self._has_heatmaps = L["data"] is not None
        self.heatmaps.setVisible(self._has_heatmaps and not self._presenting)
        if self._has_heatmaps:
            self.heatmaps.set_dimension(L["d"])
            self.heatmaps.set_data(L["data"])
        self._on_display()
        preview = L["preview"]
        self.quadrics.show_state(preview["quadrics"])
        self.reduced.preview(preview["reduced"], preview["c"])
        start = preview.get("start")
        if start is not None:  # a loaded network: where each neuron is now
            if "reduced" in start:
                self.reduced.show_state(start["reduced"])
            if "function" in start:
                self.heatmaps.show_function(start["function"])
        self.invariants.show_values(preview["summary"], None, 0, extra=self._panel_extra())
        # Room for the most text the run will show, held from before it starts until it has ended:
        # text that grew mid-run laid the window out again, on the GUI thread, each time.
        room = L["room"]
        self.quadrics.hold_room(room["captions"])
        self.invariants.hold_room(
            values_text(preview["summary"], room["c_start"], room["step"], room["note"], self._panel_extra())
        )

    # ------------------------------------------------------------------ results
    def show_partial(self, partial):
        self._show(partial, final=False)

    def show_result(self, result):
        self._show(result, final=True, drain=True)

    @property
    def drawing(self) -> bool:
        return bool(self.pacer.pending)

    def _show(self, result, final: bool, drain: bool = False):
        if isinstance(result, LayersShown):  # a network that is not two-layer: shown at its weights, no run
            self.model.layers_shown(), self.layers.show_layers(result.rows, result.caption)
            return self.pages.setCurrentWidget(self.layers)
        if not isinstance(result, Presented):  # the Fig. 4 and Fig. 5 pages draw their own
            self.model.result = result
            if final:
                self.page_of[self.mode].show_result(result)
            else:
                self.page_of[self.mode].show_partial(result)
            return
        arrival = self.model.take(result, final)
        if arrival.lay_out is not None:  # the job's first update, or a network file read
            self._lay_out(arrival.lay_out)
        if arrival.draw is not None:  # else the layout alone (File ▸ Load network: shown, not trained)
            self._draw(arrival.draw, final, drain)

    def _draw(self, state: dict, final: bool, drain: bool = False):
        """Route a view state to the views through the pacer: a live update draws one view per
        turn of the event loop (gui.pacing), a final one all at once, or with ``drain`` (a run's
        result) one view per turn with none held back. Nothing is computed here."""
        draw = self.pacer.submit
        if "quadrics" in state:
            draw("quadrics", lambda: self.quadrics.show_state(state["quadrics"], state["c_now"]))
        if "reduced" in state:
            draw("reduced", lambda: self.reduced.show_state(state["reduced"]))
        draw(
            "invariants",
            lambda: self.invariants.show_values(
                state["summary"], state["c_start"], state["step"], state["note"], extra=self._panel_extra()
            ),
        )
        draw("loss", lambda: self.curves.show_loss(state["loss"], live=not final))
        draw("drift", lambda: self.curves.show_drift(state["drift"], live=not final))
        if "function" in state:
            draw("heatmaps", lambda: self.heatmaps.show_function(state["function"]))
        self.model.drawn(state)
        if final:
            # Last, one per turn (one long layout of the window for all three at once): each plot's
            # axes fit the whole run, the captions and the panel their own text.
            draw("fit loss axes", lambda: self.curves.finish(self.curves.loss_plot))
            draw("fit drift axes", lambda: self.curves.finish(self.curves.drift_plot))
            draw("fit captions", self.quadrics.fit_captions)
            draw("fit panel", self.invariants.fit_text)
            if drain:
                self.pacer.drain()
            else:
                self.pacer.flush()

    # ------------------------------------------------------------------ display
    def _on_mode(self, *_):
        self.pages.setCurrentWidget(self.page_of[self.mode])
        show_fields_of(self.parameters)

    def _on_display(self, *_):
        d = self.parameters.child("display")
        self.quadrics.set_focus(d["neuron"] - 1 if d["layout"] == "one neuron enlarged" else None)
        self.curves.set_log_drift(d["log_drift"])
        state = self.model.state
        if self.mode == "training" and state is not None and "loss" in state:
            self._draw(state, final=True)

    def gl_views(self):
        laid_out = self.model.context is not None and self.model.context.layout["axes"] is not None
        return self.quadrics.views() if self.mode == "training" and laid_out else []

    def plot_widgets(self):
        if self.mode == "fig4":
            return self.fig4.plot_widgets()
        if self.mode == "fig5":
            return self.fig5.plot_widgets()
        if self.pages.currentWidget() is self.layers:
            return {"layer invariants": self.layers.plot}
        plots = {"loss": self.curves.loss_plot, "invariant drift": self.curves.drift_plot}
        if self.model.context is not None and not self.model.context.layout["exact"]:
            plots["reduced view"] = self.reduced
        if self.heatmaps.isVisibleTo(self) and self.heatmaps.line_widget.isVisibleTo(self):
            plots["learned function"] = self.heatmaps.line_widget
        elif self.heatmaps.isVisibleTo(self):
            plots["target function"] = self.heatmaps.target_widget
            plots["learned function"] = self.heatmaps.learned_widget
        return plots

    def set_presentation(self, on: bool):
        # The panel then leaves out the loaded file's lines, and the side column the function
        # heatmaps: at projector sizes in large type the loss and drift plots had ~50 px each.
        self._presenting = on
        self.heatmaps.setVisible(self._has_heatmaps and not on)
        self.quadrics.set_presentation(on)
        self.curves.set_line_width(4.0 if on else 2.0)
        for plot in (
            self.curves.loss_plot,
            self.curves.drift_plot,
            self.reduced,
            self.heatmaps.target_widget,
            self.heatmaps.learned_widget,
            self.heatmaps.line_widget,
        ):
            set_plot_fonts(plot, on)
        self.heatmaps.set_presentation(on)
        self.fig4.set_presentation(on)
        self.fig5.set_presentation(on)
        self.layers.set_presentation(on)
        self.invariants.set_presentation(on)

    # ------------------------------------------------------------------ replay and sessions
    def timeline_length(self) -> int:
        return self.model.timeline_length(self.mode)

    def trajectory(self) -> Trajectory | None:
        """The run the training view shows (finished or latest), for clips; else None."""
        return self.model.trajectory(self.mode)

    def show_frame(self, index: int):
        """The run as it was at row ``index``, the frame the user scrubbed to (shown_frame)."""
        if not self.timeline_length():
            return
        if self.model.pending_cameras is not None:  # a reopened session's run, not drawn yet: drawn at this frame
            self.model.frame_wanted = index
            return
        if self.model.context is None:
            return
        model = self.model
        row = int(np.clip(index, 0, len(model.result.step) - 1))
        self._draw(present_row(model.result, row, model.context, model.state), final=True)
        model.frame_row(index)

    @property
    def context(self) -> Context | None:
        """What the training views are laid out for (gui.present.topology.Context), or None."""
        return self.model.context

    def shown_frame(self) -> int | None:
        return self.model.shown_frame()

    def session_state(self) -> dict:
        page = self.page_of.get(self.mode)
        return self.model.session_state(self.mode, getattr(page, "result_state", None), self.from_file)

    def restore_session_state(self, state: dict):
        """Draw a session's result. Everything is checked here, before the tab changes; a run's
        views are laid out and presented in a job on the setup lane (restored_job), and the
        session's cameras are placed once it has drawn (restore_cameras)."""
        mode = state.get("mode")
        if mode not in self.page_of:
            raise EngineInputError(f"saved state has unknown view {mode!r}")
        self.parameters["mode"] = mode
        if mode != "training":
            page = self.page_of[mode]
            result = page.result_from_state(state.get("result", {}))
            self.model.result = result
            page.show_result(result)
            return
        traj = self.model.saved_trajectory(state)
        loaded = None  # a network read from a file, and the panel's request it answers
        if self.from_file and "loaded" in state:
            try:
                network = self.model.saved_network(traj, state["loaded"])
            except (KeyError, TypeError, ValueError, IndexError) as error:
                raise EngineInputError(f"saved network does not fit: {error}") from None
            key = network_request(self.parameters).key if self.parameters["network", "file"] else None
            loaded = (network, key)
            context = partial(loaded_context, network, train_config(self.parameters))
        elif self.from_file:  # the file the panel names, read before: the views it laid out
            laid_out = self.model.context
            if laid_out is None or not fits(traj, *(laid_out.layout[k] for k in ("d", "l", "e"))):
                raise EngineInputError("saved trajectory does not match its network parameters")
            context = lambda: laid_out  # noqa: E731
        else:  # the panel's network: its data set is drawn again, not saved
            p = self.parameters
            if not fits(traj, p["network", "d"], p["network", "l"], p["network", "e"]):
                raise EngineInputError("saved trajectory does not match its network parameters")
            first = [None if a is None else np.asarray(a[0], np.float64) for a in (traj.W1, traj.W2, traj.b1, traj.b2)]
            values = values_of(p)
            context = lambda: setup_context(training_setup(values, params=TwoLayerParams(*first)))  # noqa: E731
        self._clear()  # no preview: drawn here, from the session
        # Until it is drawn the run is the tab's result (saved again as it was opened, the
        # scrubber's timeline) and the session's cameras wait; no frame is posed without views.
        self.model.restoring(traj)
        self.controller.submit(
            "setup", restored_job(traj, context), partial(self._restored, loaded), on_failure=self._not_restored
        )

    def _restored(self, loaded: tuple[LoadedNetwork, tuple | None] | None, presented: Presented):
        cameras, wanted = self.model.restored(loaded, presented)
        self._show(presented, final=True)
        if wanted is not None:  # the scrubber moved meanwhile: drawn whole, the run hid its frame
            self.show_frame(wanted)
        super().restore_cameras(cameras or [])  # last: laying the views out framed them anew

    def _not_restored(self, text: str):
        self.model.pending_cameras = self.model.frame_wanted = None
        self.invariants.show_nothing(f"Cannot draw the session: {text}")

    def session_cameras(self) -> list[dict]:
        pending = self.model.pending_cameras
        return super().session_cameras() if pending is None else list(pending)

    def restore_cameras(self, cameras: list[dict]) -> None:
        if self.model.pending_cameras is None:
            super().restore_cameras(cameras)
        else:
            self.model.pending_cameras = list(cameras)
