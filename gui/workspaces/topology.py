"""Invariant sets: train a shallow ReLU network and watch each neuron stay on Q(c_k).

Three sub-views share the tab, chosen by the "View" parameter: the live training view, the
paper's Fig. 4 sweep and its Fig. 5 probability maps. The workspace routes engine results to
the views; every number shown comes from the engine.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtWidgets import QSplitter, QStackedWidget, QVBoxLayout

from engine.core.errors import EngineInputError
from engine.topology.invariants import c_of, component_label, sign_flip_events
from engine.topology.obstruction import LoadedNetwork, NetworkRun, continue_training_job, load_two_layer_job
from engine.topology.probability import probability_maps_job
from engine.topology.quadrics import reduced_coordinates
from engine.topology.training import Trajectory, train
from engine.topology.two_layer import TwoLayerNet, TwoLayerParams
from engine.topology.width_sweep import breast_cancer_sweep

from ..pacing import Pacer
from ..panels.invariants_panel import InvariantsPanel, summary
from ..panels.topology_parameters import (
    TrainingSetup,
    create_parameters,
    fig4_settings,
    fig5_settings,
    network_request,
    sweep_place,
    train_config,
    training_setup,
)
from ..parameter_values import apply_all
from ..views.fig4_view import Fig4View
from ..views.fig5_view import Fig5View
from ..views.function_heatmaps import FunctionHeatmaps
from ..views.neuron_quadrics import NeuronQuadrics, sub
from ..views.plot_style import set_plot_fonts
from ..views.reduced_view import ReducedView
from ..views.training_curves import TrainingCurves
from ..workspace import Workspace

# Seconds between live redraws of each part (gui.pacing): the 3D views as often as the event
# loop allows; plots, whose repaint costs 4–18 ms each under llvmpipe, a few times a second.
MAX_LOADED_NEURONS = 16  # a loaded network gets one 3D view per neuron: beyond this, use the command line
LIVE_INTERVALS = {"loss": 0.2, "drift": 0.2, "invariants": 0.2, "reduced": 0.1, "heatmaps": 0.5}


def neuron_coordinates(traj: Trajectory) -> tuple[np.ndarray, list[str]]:
    """θ_k = (w, b, v) of every neuron as (T, l, n) raw coordinates, with their names."""
    d, e = traj.W1.shape[2], traj.W2.shape[1]
    parts = [traj.W1] + ([traj.b1[..., None]] if traj.b1 is not None else []) + [np.swapaxes(traj.W2, 1, 2)]
    names = [f"w{chr(0x2080 + i + 1)}" if d > 1 else "w" for i in range(d)]
    names += ["b"] if traj.b1 is not None else []
    names += [f"v{chr(0x2080 + i + 1)}" if e > 1 else "v" for i in range(e)]
    return np.concatenate(parts, axis=2), names


def projection_axes(n_in: int, n_out: int) -> list[int] | None:
    """Which three coordinates a 3D view shows: two input-side, then the output side."""
    if n_in + n_out < 3:
        return None
    take_in = min(n_in, 3 - min(n_out, 1))
    axes = list(range(min(take_in, 2)))
    axes += list(range(n_in, n_in + min(n_out, 3 - len(axes))))
    axes += [i for i in range(n_in) if i not in axes][: 3 - len(axes)]
    return sorted(axes[:3])


def sliced(traj: Trajectory, rows: int) -> Trajectory:
    """The first ``rows`` recorded rows: the run as it was at that moment (for replay)."""
    cut = lambda a: None if a is None else a[:rows]
    last = traj.step[rows - 1]
    return dataclasses.replace(
        traj,
        step=traj.step[:rows],
        W1=traj.W1[:rows],
        W2=traj.W2[:rows],
        b1=cut(traj.b1),
        b2=cut(traj.b2),
        loss=traj.loss[:rows],
        c=traj.c[:rows],
        time=cut(traj.time),
        sign_flips=[f for f in traj.sign_flips if f[0] <= last],
    )


DRIFT_WORTH_A_NOTE = 0.05  # relative change of some c_k


def drift_note(c_start: np.ndarray, c_now: np.ndarray, config) -> str:
    """Why c_k moved, when it moved visibly: only the exact flow conserves it."""
    relative = np.abs(c_now - c_start) / np.maximum(np.abs(c_start), 1e-12)
    k = int(np.argmax(relative))
    if relative[k] < DRIFT_WORTH_A_NOTE:
        return ""
    moved = f"c{sub(k + 1)} moved {100 * relative[k]:.0f} %"
    if config.weight_decay > 0:
        return f"{moved}: weight decay breaks the conservation law."
    if config.optimizer in ("gd", "sgd"):
        return (
            f"{moved}: each {config.optimizer.upper()} step of size h = {config.lr:g} changes c by "
            "O(h²); the exact flow conserves it."
        )
    if config.optimizer == "flow":
        return f"{moved}: the solver's tolerance is too loose to conserve c."
    name = {"adam": "Adam's per-coordinate"}.get(config.optimizer, config.optimizer)
    return f"{moved}: {name} steps are not gradient steps, so c is not conserved."


def locked_signs(net: TwoLayerNet, c: np.ndarray, W2: np.ndarray) -> list[int]:
    """Per neuron: the output sign it is locked to (e = 1, c_k < 0; MATH A5), else 0."""
    if net.e != 1:
        return [0] * len(c)
    return [int(np.sign(W2[0, k])) if c[k] < 0 else 0 for k in range(len(c))]


def loaded_text(loaded: LoadedNetwork) -> str:
    """The invariants panel's lines about a loaded file: what it is, and whether its fit is obstructed."""
    r, name = loaded.report, Path(loaded.network.path).name
    act = "ReLU" if r["activation"] == "relu" else f"leaky ReLU γ = {r['slope']:g}"
    lines = [f"<b>{name}</b>: {r['d']}—{r['l']}—{r['e']} {act}" + (f", loss {r['loss']:.3g}" if "loss" in r else "")]
    fit = r.get("fit")
    if fit is not None:
        verdict = "<b>yes</b>" if fit["better_fit_needs_flip"] else "<b>no</b>"
        lines.append(
            f"better fit needs a locked flip: {verdict} "
            f"(signs kept {fit['kept_loss']:.2g}, free {fit['free_loss']:.2g})"
        )
    if loaded.net is None:
        lines.append("<i>a bias on one layer only: training needs both or neither</i>")
    return "<br>".join(lines)


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
        for page in self.page_of.values():
            self.pages.addWidget(page)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.pages)

        self._setup: TrainingSetup | None = None  # what the views are configured for
        self._pending: TrainingSetup | None = None  # built by make_job, shown at reset
        self._result = None  # the latest partial or final result
        self._total_steps = 1
        self._loaded: LoadedNetwork | None = None  # the network file last read by a job
        self._loaded_key: tuple | None = None  # ... and the request it answered
        self._extra = ""  # the invariants panel's lines about a loaded network
        self._presenting = False  # presentation mode (set_presentation)
        self._has_heatmaps = False  # the run's data can be drawn (d ≤ 2)
        self.pacer = Pacer(LIVE_INTERVALS, self)
        self.parameters.child("mode").sigValueChanged.connect(self._on_mode)
        self.parameters.child("network", "source").sigValueChanged.connect(self._on_mode)
        self.parameters.child("display").sigTreeStateChanged.connect(self._on_display)
        self._on_mode()
        self.reset()

    @property
    def mode(self) -> str:
        return self.parameters["mode"]

    def _sweep_job(self, steps: int | None):
        """Fig. 4 or 5: the batched program in this process, or the sweep runner (cells kept)."""
        group = self.parameters.child(self.mode)
        place = sweep_place(group)
        settings = fig4_settings(group, steps) if self.mode == "fig4" else fig5_settings(group)
        if place["executor"] == "batched":
            return breast_cancer_sweep(settings) if self.mode == "fig4" else probability_maps_job(settings)
        from engine.sweeps import window as sweeps

        root = Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.CacheLocation)) / "sweeps"
        job = sweeps.fig4_job if self.mode == "fig4" else sweeps.fig5_job
        return job(settings, root, place["folder"], place["executor"], place["address"])

    @property
    def from_file(self) -> bool:
        return self.mode == "training" and self.parameters["network", "source"] == "file"

    # ------------------------------------------------------------------ jobs
    def make_job(self, steps: int | None = None):
        if self.mode in ("fig4", "fig5"):
            return self._sweep_job(steps)
        if self.from_file:  # the file is read, checked and its c computed in the job
            r = network_request(self.parameters, steps)
            self._pending, self._loaded_key = None, r.key
            return continue_training_job(
                r.path, r.activation, r.slope, r.data, r.config, r.data_source, MAX_LOADED_NEURONS
            )
        setup = training_setup(self.parameters, steps)
        self._pending = setup
        return train(setup.net, setup.params, setup.X, setup.Y, setup.config)

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
        self._loaded_key = r.key
        self._start(load_two_layer_job(r.path, r.activation, r.slope, r.data, r.data_source, MAX_LOADED_NEURONS))
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
        self._result = None
        self.pacer.clear()  # a live update still waiting would draw the old run again
        if self.mode != "training":
            self.page_of[self.mode].reset()
            return
        if self.from_file:
            self._pending = None
            try:
                key = network_request(self.parameters).key
            except EngineInputError as error:
                self._setup = None
                self.invariants.show_nothing(f"Cannot load: {error}")
                return
            if self._loaded is not None and key == self._loaded_key:
                self._configure_loaded(self._loaded)
            else:
                self._setup = None
                self.invariants.show_nothing("Run to read the network file and train it on.")
            return
        self._extra = ""
        setup, self._pending = self._pending, None
        if setup is None:
            try:
                setup = training_setup(self.parameters)
            except EngineInputError as error:
                self.invariants.show_nothing(f"Cannot preview: {error}")
                return
        self._configure(setup)

    def _panel_extra(self) -> str:
        return "" if self._presenting else self._extra

    def _configure_loaded(self, loaded: LoadedNetwork):
        """Lay the views out for a loaded network: its own quadrics, each with its current point."""
        self._loaded = loaded
        n = loaded.network
        slope = n.slope if n.activation == "leaky_relu" else 0.01
        net = loaded.net or TwoLayerNet(n.d, n.l, n.e, n.activation, slope, n.b1 is not None)
        params = loaded.params or TwoLayerParams(n.W1, n.W2, n.b1, n.b2)
        self._extra = loaded_text(loaded)
        self._configure(TrainingSetup(net, params, n.X, n.Y, train_config(self.parameters)), points=True)

    def _configure(self, setup: TrainingSetup, points: bool = False):
        """Lay the training views out for this network, and preview Q(c) at the start (with each
        neuron's current point when ``points``: a loaded network)."""
        self._setup = setup
        net = setup.net
        self._total_steps = max(setup.config.steps, 1)
        start = Trajectory(
            np.zeros(1, dtype=np.int64),
            setup.params.W1[None],
            setup.params.W2[None],
            None if setup.params.b1 is None else setup.params.b1[None],
            None,
            np.zeros(1),
            np.zeros((1, net.l)),
        )
        coords, names = neuron_coordinates(start)
        self._exact = net.d == 2 and net.e == 1 and not net.bias
        self._axes = projection_axes(net.d + net.bias, net.e)
        extent = float(np.ceil(2 * max(1.0, 1.5 * np.abs(coords).max())) / 2)
        labels = tuple(names[i] for i in self._axes) if self._axes else ("", "", "")
        self.quadrics.configure(net.l, self._exact, labels, extent)
        self.quadrics.setVisible(self._axes is not None)
        self.reduced.setVisible(not self._exact)
        if not self._exact and self._axes is not None:
            self.neuron_area.setSizes([600, 300])  # the exact picture first, the projection below
        signed_w = net.d == 1 and not net.bias
        w_name = "w" if signed_w else ("‖(w, b)‖" if net.bias else "‖w‖")
        self.reduced.configure(signed_w, net.e == 1, w_name, "v" if net.e == 1 else "‖v‖", extent)
        self.curves.configure(net.l, self.parameters["display", "log_drift"])
        self.curves.hold_steps(self._total_steps)
        show_data = net.d <= 2 and setup.X is not None and setup.Y is not None and setup.Y.shape[1] >= 1
        self._has_heatmaps = show_data
        self.heatmaps.setVisible(show_data and not self._presenting)
        if show_data:
            self.heatmaps.set_dimension(net.d)
            self.heatmaps.set_data(setup.X, setup.Y)
        self._on_display()
        c = c_of(setup.params)
        lock = locked_signs(net, c, setup.params.W2)
        shown = coords[0][:, self._axes] if (points and self._axes is not None) else None
        self.quadrics.preview(c, shown, lock)
        self.reduced.preview(c)
        if points:
            r, v = reduced_coordinates(start.W1, start.W2, start.b1)
            if net.d == 1 and not net.bias:
                r = start.W1[:, :, 0]
            self.reduced.show_neurons(r, v, np.zeros(1), c, c, [[] for _ in range(net.l)])
            if net.d <= 2 and show_data:
                self.heatmaps.show_function(net, setup.params)
        label = component_label(setup.params.W1, setup.params.W2, setup.params.b1)
        self.invariants.show_values(summary(net.d, net.e, net.bias, c, label), None, 0, extra=self._panel_extra())

    # ------------------------------------------------------------------ results
    def _unwrap(self, run: NetworkRun) -> Trajectory:
        """A loaded network's run: lay the views out for its network the first time it is seen."""
        if run.loaded is not self._loaded or self._setup is None:
            self._configure_loaded(run.loaded)
        return run.trajectory

    def show_partial(self, partial):
        self._show(partial, final=False)

    def show_result(self, result):
        self._show(result, final=True)

    def _show(self, result, final: bool):
        if isinstance(result, LoadedNetwork):  # the job read the file: lay the views out for it
            if final:  # File ▸ Load network: shown, not trained
                self._result = None
            self._configure_loaded(result)
            return
        if isinstance(result, NetworkRun):
            result = self._unwrap(result)
        self._result = result
        if self.mode == "training":
            self._show_trajectory(result, final=final)
        elif final:
            self.page_of[self.mode].show_result(result)
        else:
            self.page_of[self.mode].show_partial(result)

    def _show_trajectory(self, traj: Trajectory, final: bool):
        """Every view of the run, through the pacer: a live update draws one view per turn of
        the event loop (gui.pacing), a final one all at once."""
        if self._setup is None or len(traj.step) == 0:
            return
        net: TwoLayerNet = self._setup.net
        frac = traj.step / self._total_steps
        c_now, c_start = traj.c[-1], traj.c[0]
        flip_events = sign_flip_events(traj.step, traj.c, traj.sign_flips)
        flips, jumps = [(e.step, e.neuron) for e in flip_events], [e.jumped for e in flip_events]
        events = [[] for _ in range(net.l)]  # per neuron: (row, step, jumped)
        for e in flip_events:
            events[e.neuron].append((e.row, e.step, e.jumped))
        draw = self.pacer.submit
        if self._axes is not None:
            axes = self._axes
            draw(
                "quadrics",
                lambda: self.quadrics.show_neurons(
                    neuron_coordinates(traj)[0][:, :, axes],
                    frac,
                    c_now,
                    c_start,
                    c_now < 0,
                    events,
                    locked_signs(net, c_now, traj.W2[-1]),
                ),
            )
        if not self._exact:
            draw("reduced", lambda: self._show_reduced(traj, net, frac, c_now, c_start, events))

        def invariants():
            label = component_label(traj.W1[-1], traj.W2[-1], None if traj.b1 is None else traj.b1[-1])
            self.invariants.show_values(
                summary(net.d, net.e, net.bias, c_now, label),
                c_start,
                int(traj.step[-1]),
                drift_note(c_start, c_now, self._setup.config),
                extra=self._panel_extra(),
            )

        draw("invariants", invariants)
        draw("loss", lambda: self.curves.show_loss(traj.step, traj.loss, flips, jumps, live=not final))
        draw("drift", lambda: self.curves.show_drift(traj.step, traj.c, live=not final))
        if net.d <= 2:
            draw("heatmaps", lambda: self.heatmaps.show_function(net, traj.final_params()))
        if final:
            self.pacer.flush()
            self.curves.finish()

    def _show_reduced(self, traj: Trajectory, net: TwoLayerNet, frac, c_now, c_start, events):
        r, v = reduced_coordinates(traj.W1, traj.W2, traj.b1)
        if net.d == 1 and not net.bias:
            r = traj.W1[:, :, 0]  # signed: the label of a c > 0 neuron is sign(w)
        self.reduced.show_neurons(r, v, frac, c_now, c_start, events)

    # ------------------------------------------------------------------ display
    def _on_mode(self, *_):
        mode = self.mode
        self.pages.setCurrentWidget(self.page_of[mode])
        training = mode == "training"
        for name in ("network", "data", "init", "optimizer", "display"):
            self.parameters.child(name).setOpts(visible=training)
        fresh = self.parameters["network", "source"] == "fresh"
        for name in ("d", "l", "e", "bias"):
            self.parameters.child("network", name).setOpts(visible=training and fresh)
        self.parameters.child("network", "file").setOpts(visible=training and not fresh)
        self.parameters.child("init").setOpts(visible=training and fresh)
        self.parameters.child("fig4").setOpts(visible=mode == "fig4")
        self.parameters.child("fig5").setOpts(visible=mode == "fig5")

    def _on_display(self, *_):
        d = self.parameters.child("display")
        self.quadrics.set_focus(d["neuron"] - 1 if d["layout"] == "one neuron enlarged" else None)
        self.curves.set_log_drift(d["log_drift"])
        if self.mode == "training" and isinstance(self._result, Trajectory):
            self._show_trajectory(self._result, final=True)

    def gl_views(self):
        return self.quadrics.views() if self.mode == "training" and self._axes is not None else []

    def plot_widgets(self):
        if self.mode == "fig4":
            return self.fig4.plot_widgets()
        if self.mode == "fig5":
            return self.fig5.plot_widgets()
        plots = {"loss": self.curves.loss_plot, "invariant drift": self.curves.drift_plot}
        if not self._exact:
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
        self.invariants.set_presentation(on)

    # ------------------------------------------------------------------ replay and sessions
    def timeline_length(self) -> int:
        if self.mode == "training" and isinstance(self._result, Trajectory):
            return len(self._result.step)
        return 0

    def trajectory(self) -> Trajectory | None:
        """The run the training view shows (finished or latest), for clips; else None."""
        if self.mode == "training" and isinstance(self._result, Trajectory):
            return self._result
        return None

    def show_frame(self, index: int):
        if self.timeline_length():
            full = self._result
            rows = int(np.clip(index, 0, len(full.step) - 1)) + 1
            self._show_trajectory(sliced(full, rows), final=True)
            self._result = full

    def session_state(self) -> dict:
        if self._result is None:
            return {}
        if self.mode != "training":
            return {"mode": self.mode, "result": self.page_of[self.mode].result_state(self._result)}
        fields = {f.name: getattr(self._result, f.name) for f in dataclasses.fields(Trajectory)}
        fields["sign_flips"] = np.asarray(fields["sign_flips"], dtype=np.int64).reshape(-1, 2)
        # Not the panel: the session saves it beside the results and applies it checked, first.
        state = {"mode": "training", "trajectory": {k: v for k, v in fields.items() if v is not None}}
        if self.from_file and self._loaded is not None:  # the file may be gone when the talk reopens
            n = self._loaded.network
            state["loaded"] = {"report": self._loaded.report, "activation": n.activation, "slope": n.slope}
            state["loaded"] |= {k: v for k, v in (("X", n.X), ("Y", n.Y)) if v is not None}
        return state

    def _restore_loaded(self, traj: Trajectory, saved: dict) -> None:
        """A loaded network's views from a session: its weights are the trajectory's first row."""
        from engine.io.two_layer_file import TwoLayer, check_activation, check_data_width
        from engine.topology.obstruction import training_net

        first = lambda a: None if a is None else np.asarray(a[0], dtype=np.float64)  # noqa: E731
        act = saved.get("activation")
        act, slope = check_activation("the session", act, saved.get("slope") if act == "leaky_relu" else None)
        X, Y = saved.get("X"), saved.get("Y")
        if X is not None:
            X, Y = check_data_width("the session's data", traj.W1.shape[2], traj.W2.shape[1], X, Y)
        report = saved.get("report")
        if not isinstance(report, dict) or not {"activation", "slope", "format", "d", "l", "e"} <= set(report):
            raise EngineInputError("the session's loaded network has no report")
        n = TwoLayer(
            first(traj.W1),
            first(traj.W2),
            first(traj.b1),
            first(traj.b2),
            act,
            slope,
            X,
            Y,
            report.get("file", ""),
            report["format"],
        )
        net, params = training_net(n)
        self._loaded_key = network_request(self.parameters).key if self.parameters["network", "file"] else None
        self._configure_loaded(LoadedNetwork(n, report, net, params))

    def restore_session_state(self, state: dict):
        mode = state.get("mode")
        if mode not in self.page_of:
            raise EngineInputError(f"saved state has unknown view {mode!r}")
        self.parameters["mode"] = mode
        if mode != "training":
            page = self.page_of[mode]
            result = page.result_from_state(state.get("result", {}))
            self._result = result
            page.show_result(result)
            return
        try:
            t = dict(state["trajectory"])
            t["sign_flips"] = [tuple(int(x) for x in row) for row in np.asarray(t.get("sign_flips", []))]
            t.setdefault("b1", None), t.setdefault("b2", None)
            traj = Trajectory(**{k: t.get(k) for k in (f.name for f in dataclasses.fields(Trajectory))})
        except (KeyError, TypeError, ValueError) as error:
            raise EngineInputError(f"saved training state does not fit: {error}") from None
        self.reset()
        if self.from_file and "loaded" in state:
            try:
                self._restore_loaded(traj, state["loaded"])
            except (KeyError, TypeError, ValueError, IndexError) as error:
                raise EngineInputError(f"saved network does not fit: {error}") from None
        if self._setup is None or traj.W1.shape[1:] != self._setup.params.W1.shape:
            raise EngineInputError("saved trajectory does not match its network parameters")
        self._result = traj
        self._show_trajectory(traj, final=True)
