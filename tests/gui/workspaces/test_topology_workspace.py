"""The invariant-sets tab as a speaker uses it: presets open and draw, the trajectory grows
live, the invariants panel shows the engine's numbers, and bad input starts nothing."""

import dataclasses

import numpy as np
import pyqtgraph as pg
import pyqtgraph.opengl as gl
import pytest
from PySide6.QtGui import QTextDocument

from engine.core.progress import Progress
from engine.topology import invariants as inv
from engine.topology.initialization import initial_params
from engine.topology.two_layer import TwoLayerNet
from gui.session import read_session, write_session
from gui.views.quadric_view import MAX_SHOWN_POINTS
from gui.views.training_curves import event_callouts

from ..conftest import assert_not_blank, gl_pixels, record_gui_thread_calls, save_screenshot, wait_until_idle
from ..drawn import neuron_points, plotted, xy

TRAINING_PRESETS = [
    "fig3-obstructed",
    "fig3-free",
    "fig3-obstructed-flow",
    "fig3-free-flow",
    "adam-drift",
    "biases",
    "fig3-free-d3",
]


def topology(window):
    return window.workspaces["topology"]


@pytest.mark.parametrize("preset", TRAINING_PRESETS)
def test_training_preset_runs_and_draws_3d(window, qtbot, preset):
    window.load_preset(preset, steps=10)
    assert not window.message_bar.text, window.message_bar.text
    wait_until_idle(qtbot, window)
    ws = topology(window)
    traj = ws.model.result
    assert ws.timeline_length() == len(traj.step) > 1
    assert len(traj.step) <= MAX_SHOWN_POINTS  # every row is drawn, none decimated away
    # Each neuron's 3D view draws its (w₁, w₂, v) at every recorded row, read here from the
    # run's weights: the line's vertices, the start and the head markers.
    for k, cell in enumerate(ws.quadrics.cells[: traj.W1.shape[1]]):
        want = neuron_points(traj, k)
        assert [item.text for item in cell.view._frame if isinstance(item, gl.GLTextItem)] == ["w₁", "w₂", "v"]
        np.testing.assert_allclose(cell.view.trajectory.pos, want, rtol=1e-6, atol=1e-7)  # float32
        np.testing.assert_allclose(cell.view.start_marker.pos, want[:1], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(cell.view.head_marker.pos, want[-1:], rtol=1e-6, atol=1e-7)
    assert_not_blank(gl_pixels(ws.gl_views()[0]))
    save_screenshot(window, f"topology_{preset}")


def test_the_biases_preset_moves_on_its_projections(window, qtbot):
    """Each neuron trains visibly on its 3D projection: with inputs of either sign both ReLUs died
    at once (one stood still, the other moved 0.017 in a frame of 0.5) and each view drew a dot."""
    window.load_preset("biases")
    wait_until_idle(qtbot, window)
    ws = topology(window)
    traj = ws.model.result
    for k, cell in enumerate(ws.quadrics.cells[: traj.W1.shape[1]]):
        np.testing.assert_allclose(cell.view.trajectory.pos, neuron_points(traj, k), rtol=1e-6, atol=1e-7)
        span = np.ptp(neuron_points(traj, k), axis=0).max()
        assert span > 0.1 * cell.view.extent, (k, span, cell.view.extent)


def test_d1_preset_shows_the_exact_plane(window, qtbot):
    window.load_preset("d1-input-signs", steps=10)
    assert not window.message_bar.text, window.message_bar.text
    wait_until_idle(qtbot, window)
    ws = topology(window)
    # θ_k = (w, v) is a plane: the exact 2-D view replaces the 3D one.
    assert ws.reduced.isVisible() and ws.gl_views() == []
    traj = ws.model.result
    w, v = traj.W1[:, :, 0], traj.W2[:, 0, :]  # (T, l): the run's signed weights
    assert len(w) <= MAX_SHOWN_POINTS
    for k, line in enumerate(ws.reduced.trajectories):
        np.testing.assert_array_equal(xy(line), np.column_stack([w[:, k], v[:, k]]))
    assert len(ws.reduced.trajectories) == w.shape[1]
    # The curves are the hyperbolas w² − v² = c_k through the run's points, now and, dashed,
    # at the start where c drifted: each drawn curve's c is one of them, and each c_k now is drawn.
    c_now, c_start = w[-1] ** 2 - v[-1] ** 2, w[0] ** 2 - v[0] ** 2
    curves = [xy(item) for item in plotted(ws.reduced) if item.opts["symbol"] is None]
    drawn_c = []
    for points in curves:
        c = points[:, 0] ** 2 - points[:, 1] ** 2
        np.testing.assert_allclose(c, c[0], atol=1e-9 * np.abs(points).max() ** 2)  # one hyperbola per curve
        drawn_c.append(c[0])
    scale = 1e-9 * max(1.0, np.abs(np.concatenate([c_now, c_start])).max())
    for c in drawn_c:
        assert np.isclose(c, c_now, atol=scale).any() or np.isclose(c, c_start, atol=scale).any(), c
    for c in c_now:
        assert np.isclose(drawn_c, c, atol=scale).any(), (c, drawn_c)
    # the invariants panel says why no neuron is locked, whole (its rich text read "(no c")
    shown = QTextDocument()
    shown.setHtml(ws.invariants.label.text())
    assert "locked: none (no c < 0)" in shown.toPlainText()
    save_screenshot(window, "topology_d1-input-signs")


def test_trajectory_grows_while_training(window, qtbot, monkeypatch):
    window.load_preset("fig3-free", run=False)
    ws = topology(window)
    ws.parameters["optimizer", "stride"] = 2  # 301 rows: below the display decimation
    seen = []
    draw = ws.show_partial

    def recording(partial):
        draw(partial)
        seen.append(ws.gl_views()[1].trajectory.pos.shape[0])

    monkeypatch.setattr(ws, "show_partial", recording)
    window.run(steps=600)
    wait_until_idle(qtbot, window)
    assert len(set(seen)) >= 2 and seen == sorted(seen), seen


def test_a_live_run_lays_nothing_out_until_it_ends(window, qtbot, monkeypatch):
    """The room a run's text takes (its drift column and note, a free neuron's flip line) is held
    from the preview on: no view changes size between the run's first update and its last (text
    that grew mid-run laid the 3D views and every plot out again), and the finished run's panel
    and captions are as tall as their own text."""
    window.load_preset("fig3-free", run=False)
    ws = topology(window)
    wait_until_idle(qtbot, window)
    preview = ws.context.layout["preview"]
    assert [c.caption.text() for c in ws.quadrics.cells[:2]] == [q["caption"] for q in preview["quadrics"]]
    assert "moved" not in ws.invariants.label.text()  # the room is held, its text not shown
    views = [ws.invariants, ws.curves.loss_plot, ws.curves.drift_plot, *(c.view for c in ws.quadrics.cells[:2])]
    sizes, draw = [], ws.show_partial

    def recording(partial):
        draw(partial)
        ws.pacer.flush()
        qtbot.wait(1)  # the layout the drawing asked for is laid out
        sizes.append([(view.width(), view.height()) for view in views])

    monkeypatch.setattr(ws, "show_partial", recording)
    window.run()
    wait_until_idle(qtbot, window)
    assert len(sizes) >= 3 and all(s == sizes[0] for s in sizes), sizes
    assert "moved" in ws.invariants.label.text() and "flipped sign" in ws.quadrics.cells[1].caption.text()
    panel = ws.invariants
    assert panel.maximumHeight() == panel.label.heightForWidth(panel.viewport().width()) + 2 * panel.frameWidth() + 4
    for cell in ws.quadrics.cells[:2]:
        assert cell.caption.minimumHeight() == cell.caption.heightForWidth(cell.caption.width())


def test_the_learned_map_frames_the_data_s_box_before_a_run(window, qtbot):
    """Before a run nothing is learned: the map still frames the data's box as the target's does
    (cleared, it framed ±0.4 and labelled its axes ×0.001)."""
    window.load_preset("fig3-free", run=False)
    wait_until_idle(qtbot, window)
    ws = topology(window)
    (lo_x, lo_y), (hi_x, hi_y) = ws.context.layout["data"]["box"]
    for widget in (ws.heatmaps.target_widget, ws.heatmaps.learned_widget):
        (x0, x1), (y0, y1) = widget.getPlotItem().getViewBox().viewRange()
        assert x0 <= lo_x and hi_x <= x1 and x1 - x0 < 3 * (hi_x - lo_x), (x0, x1)
        assert y0 <= lo_y and hi_y <= y1 and y1 - y0 < 3 * (hi_y - lo_y), (y0, y1)


def test_invariants_panel_shows_the_engine_numbers(window, qtbot):
    window.load_preset("fig3-obstructed", steps=5)
    wait_until_idle(qtbot, window)
    ws = topology(window)
    traj = ws.model.result
    shown = ws.invariants.shown
    c = traj.c[-1]
    assert np.allclose(shown["c"], c)
    assert (shown["l_plus"], shown["l_minus"], shown["l_zero"]) == inv.counts(c)
    assert shown["poincare"] == inv.poincare(2, 1, c) == [4]
    assert shown["beta0"] == inv.beta0(2, 1, c) == 4
    assert shown["effective_components"] == inv.effective_components(2, 1, c) == 3
    # The preset starts both neurons in the s = (+1, +1) component (MATH A8).
    net = TwoLayerNet(2, 2, 1)
    start = initial_params(net, "uniform", seed=3, a=2**0.5, c=[-0.1, -0.1], signs=[1, 1], positive_inputs=True)
    assert shown["label"] == list(inv.component_label(start.W1, start.W2)) == [1, 1]
    text = ws.invariants.label.text()
    assert "β₀" in text and "4" in text and "−0.1" in text.replace("-", "−")


def test_close_events_of_one_kind_share_a_call_out():
    flips = [(24, 2, False), (25, 0, False), (35, 3, False)]
    assert event_callouts(flips, span=1000) == ["v₃, v₁, v₄ flip sign", None, None]
    assert event_callouts(flips, span=40) == ["v₃, v₁ flip sign", None, "v₄ flips sign"]  # 6 % of 40 steps
    mixed = [(10, 0, False), (11, 1, True), (12, 2, True)]  # a jump never shares a free flip's words
    assert event_callouts(mixed, span=100) == ["v₁ flips sign", "v₂, v₃ jump the barrier (finite step)", None]
    assert event_callouts([], span=100) == []


def test_free_flips_and_barrier_jumps_are_labelled_apart(window, qtbot):
    ws = topology(window)
    window.load_preset("fig3-free", steps=300)  # neuron 2 is free: its flip is the topology at work
    wait_until_idle(qtbot, window)
    assert ws.curves.event_labels() == ["v₂ flips sign"]
    assert "flipped sign" in ws.quadrics.cells[1].caption.text()
    window.load_preset("fig3-obstructed", run=False)
    ws.parameters["optimizer", "lr"] = 1.0  # so large that pathological v₂ hops over v = 0 ...
    ws.parameters["init", "positive_inputs"] = False  # ... and, with this draw, only v₂
    window.run(steps=30)
    wait_until_idle(qtbot, window)
    assert ws.curves.event_labels() == ["v₂ jumps the barrier (finite step)"]
    caption = ws.quadrics.cells[1].caption.text()
    assert "jumped the barrier" in caption and "flipped" not in caption
    assert len(ws.quadrics.cells[1].jump_markers.pos) == 1 and len(ws.quadrics.cells[1].view.flip_markers.pos) == 0


def test_effective_component_index_comes_from_the_engine(window, qtbot):
    window.load_preset("fig3-obstructed", steps=5)
    wait_until_idle(qtbot, window)
    shown = topology(window).invariants.shown
    assert shown["effective_index"] == inv.effective_component_index(shown["label"]) == 2


INVALID = [
    (("init", "c"), "-0.1, 0.1, 0.3", "c has 3 value"),
    (("init", "c"), "minus one", "not a comma-separated list"),
    (("network", "e"), 2, "set Network d and e"),  # the toy target follows d, not e
    (("init", "signs"), "+, ?", "output signs"),
]


def test_invalid_input_shows_a_message_and_starts_nothing(window):
    ws = topology(window)
    for field, value, reason in INVALID:
        window.load_preset("fig3-free", run=False)
        ws.parameters[field] = value
        window.run()
        assert reason in window.message_bar.text
        assert not window.runner.busy
        assert "Traceback" not in window.message_bar.text


def test_layout_replay_and_session(window, qtbot):
    window.load_preset("fig3-free", steps=20)
    wait_until_idle(qtbot, window)
    ws = topology(window)
    assert len(ws.gl_views()) == 2
    ws.parameters["display", "layout"] = "one neuron enlarged"
    ws.parameters["display", "neuron"] = 2
    assert [v.neuron for v in ws.gl_views()] == [1]
    ws.parameters["display", "layout"] = "side by side"
    assert len(ws.gl_views()) == 2
    # Replay shows the run as it was at a frame; a session restores it without recomputing.
    n = ws.timeline_length()
    ws.show_frame(3)
    assert ws.invariants.shown is not None and ws.gl_views()[0].shown_points() == 4
    state = ws.session_state()
    ws.reset()
    ws.restore_session_state(state)
    assert ws.timeline_length() == n


def test_fig4_and_fig5_presets_fill_their_plots(window, qtbot, tmp_path):
    ws = topology(window)
    window.load_preset("fig4-breast-cancer", run=False)
    ws.parameters["fig4", "inits"] = 1
    ws.parameters["fig4", "l_max"] = 3
    window.run(steps=5)
    wait_until_idle(qtbot, window)
    assert not window.message_bar.text, window.message_bar.text
    assert "done" in ws.fig4.caption.text()
    assert_fig4_draws(ws.fig4, ws.model.result)
    save_screenshot(window, "topology_fig4-breast-cancer")
    assert_session_round_trip(ws, tmp_path / "fig4.lens", ws.fig4)
    window.load_preset("fig5-probability", run=False)
    ws.parameters["fig5", "d_max"] = 8
    ws.parameters["fig5", "l_max"] = 8
    ws.parameters["fig5", "mc_samples"] = 200
    window.run()
    wait_until_idle(qtbot, window)
    assert_fig5_draws(ws.fig5, ws.model.result)
    heat = ws.fig5.maps["kaiming_normal"]
    assert "closed form" in heat.describe(0, 0)
    save_screenshot(window, "topology_fig5-probability")
    assert_session_round_trip(ws, tmp_path / "fig5.lens", ws.fig5)


def cell_centres(heat) -> np.ndarray:
    """Where the image puts the centre of each of its pixels, in the plot's coordinates: (nx, ny, 2)."""
    nx, ny = heat.image.image.shape
    out = np.empty((nx, ny, 2))
    for i in range(nx):
        for j in range(ny):
            p = heat.image.mapToParent(pg.Point(i + 0.5, j + 0.5))
            out[i, j] = p.x(), p.y()
    return out


def assert_fig4_draws(view, result):
    """The map is result.mean, cell (i, j) centred on (l_i, l₊_j), NaN where nothing ran; each
    line is one l's finite means against l₊ / l."""
    np.testing.assert_array_equal(view.heat.image.image, result.mean)  # NaN where the mean is
    centres = cell_centres(view.heat)
    np.testing.assert_allclose(centres[..., 0], np.broadcast_to(result.ls[:, None], result.mean.shape), atol=1e-9)
    np.testing.assert_allclose(centres[..., 1], np.broadcast_to(result.l_plus[None, :], result.mean.shape), atol=1e-9)
    want = []
    for i, l in enumerate(result.ls):
        ok = np.isfinite(result.mean[i]) & (result.l_plus <= l)
        if ok.any():
            want.append(np.column_stack([result.l_plus[ok] / l, result.mean[i, ok]]))
    lines = [xy(item) for item in plotted(view.lines_widget)]
    assert len(lines) == len(want) > 0
    for got, expected in zip(lines, want):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def assert_fig5_draws(view, result):
    """Each map is MATH A7's closed form P = 1 − F_{1,d}(ρ)^l, computed here with scipy, cell
    (i, j) centred on (d_i, l_j); the dots sit at the Monte Carlo points, coloured by their p̂."""
    from scipy.stats import f as f_distribution

    d, l = np.meshgrid(result.d.astype(float), result.l.astype(float), indexing="ij")
    rho = {"kaiming_normal": l, "xavier_normal": d * (l + 1) / (d + l)}
    assert set(view.maps) == set(rho)
    for scheme, heat in view.maps.items():
        want = 1 - f_distribution.cdf(rho[scheme], 1, d) ** l
        np.testing.assert_allclose(heat.image.image, want, rtol=1e-9, atol=1e-12)
        centres = cell_centres(heat)
        np.testing.assert_allclose(centres[..., 0], d, atol=1e-9)
        np.testing.assert_allclose(centres[..., 1], l, atol=1e-9)
        mc = result.mc[scheme]
        dots = view.dots[scheme].data
        assert len(dots) == len(mc) > 0
        np.testing.assert_array_equal(np.column_stack([dots["x"], dots["y"]]), mc[:, :2])
        colours = np.array([spot.brush().color().getRgbF()[:3] for spot in view.dots[scheme].points()])
        want_colours = pg.colormap.get("viridis").map(np.clip(mc[:, 2], 0, 1), mode="float")[:, :3]
        np.testing.assert_allclose(colours, want_colours, atol=1 / 255)


def assert_session_round_trip(ws, path, view):
    """The view's typed result survives a session file (plain data only) field for field."""
    before = view.result
    write_session(path, ws.session_state())
    ws.reset()
    assert view.result is None
    ws.restore_session_state(read_session(path))
    after = view.result
    assert type(after) is type(before) and after.settings == before.settings
    for field in dataclasses.fields(before):
        a, b = getattr(before, field.name), getattr(after, field.name)
        if isinstance(a, dict):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
        elif field.name != "settings":
            np.testing.assert_array_equal(a, b)


# The fields that choose what the others mean: a preset that left one out inherited it from the
# preset before (after your-network, fig3-free trained the file's network, not the paper's). The
# Fig. 4 and Fig. 5 sweeps make their own networks and data.
SELECTORS = {
    "training": (("network", "source"), ("data", "source")),
    "fig4": (),
    "fig5": (),
    "minima": (("experiment", "kind"),),
    "landscape": (("mode",), ("network", "source")),
    "run": (("source",),),
}


def test_a_preset_opens_the_same_whatever_was_open_before(window):
    from gui.presets import available_presets

    presets = available_presets()
    for name, preset in presets.items():
        chosen = set()
        for before in (other for other, p in presets.items() if p.workspace == preset.workspace):
            window.load_preset(before, run=False)
            window.load_preset(name, run=False)
            p = window.workspaces[preset.workspace].parameters
            kind = p["mode"] if preset.workspace == "topology" else preset.workspace
            chosen.add((kind, *(p[path] for path in SELECTORS[kind])))
        assert len(chosen) == 1, f"{name} opens as {sorted(chosen)}, depending on the preset before it"


def test_a_preset_that_waits_for_run_is_laid_out_off_the_gui_thread(window, qtbot, monkeypatch):
    """Loaded without a run, a preset's network (its data, initial weights and Q(c)) is laid out
    in a job: the views show that network, and none of it was made on the GUI thread."""
    import gui.present.topology as present_topology
    import gui.workspaces.topology as workspace_topology

    on_gui = []
    for module, names in (  # each calls them by its own import
        (present_topology, ["training_setup", "layout_of"]),
        (workspace_topology, ["training_setup", "setup_context"]),
    ):
        record_gui_thread_calls(monkeypatch, module, names, on_gui)
    ws = topology(window)
    for preset, d in (("fig3-free-d3", 3), ("fig3-free", 2)):
        window.load_preset(preset, run=False)
        qtbot.waitUntil(lambda d=d: ws.context is not None and ws.context.layout["d"] == d, timeout=20000)
        assert ws.context.net.d == ws.parameters["network", "d"] == d
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=20000)
    assert on_gui == []
    assert ws.invariants.label.text().strip(), "the panel shows nothing before the run"


def test_a_run_of_the_previewed_network_lays_nothing_out_and_a_rerun_lays_out_anew(window, qtbot, monkeypatch):
    """Run after a preview draws on the preview's layout (laying out again cost ~20 ms on the GUI
    thread and a repaint of every view as the run began); Run after a run lays out anew, so
    the run before is not drawn on. Each time the views draw the run's own points."""
    ws = topology(window)
    before = ws.context
    window.load_preset("fig3-free", run=False)
    qtbot.waitUntil(lambda: ws.context is not before, timeout=20000)  # the preview, laid out in a job
    laid_out = []
    lay_out = ws._lay_out
    monkeypatch.setattr(ws, "_lay_out", lambda context: (laid_out.append(context), lay_out(context)))
    for runs, lays_out in ((1, 0), (2, 1)):
        window.run()
        wait_until_idle(qtbot, window)
        assert window.last_outcome == "succeeded", window.message_bar.text
        assert len(laid_out) == lays_out, f"run {runs}"
        traj = ws.trajectory()
        for k, cell in enumerate(ws.quadrics.cells[: traj.W1.shape[1]]):
            np.testing.assert_allclose(cell.view.trajectory.pos[-1], neuron_points(traj, k)[-1], rtol=1e-6, atol=1e-7)


def test_a_run_s_result_is_drawn_a_view_per_turn_and_the_window_is_busy_until_it_is(window, qtbot):
    """The result is drawn one view per turn of the event loop (drawn at once it was one turn of
    ~60 ms); at the first turn the controller is not busy, and at run_finished, nothing is left
    to draw."""
    from PySide6.QtCore import QTimer

    ws = topology(window)
    at_result, at_idle = [], []
    turn = QTimer(window, interval=0)
    turn.timeout.connect(lambda: window.controller.busy or (at_idle.append(ws.pacer.pending), turn.stop()))
    at_finished = []
    window.controller.succeeded.connect(lambda _: (at_result.append(ws.pacer.pending), turn.start()))
    window.run_finished.connect(lambda: at_finished.append(ws.pacer.pending))
    window.load_preset("fig3-free", steps=30)
    qtbot.waitUntil(lambda: bool(at_idle and at_finished), timeout=30000)
    assert len(at_result[0]) > 2, at_result  # the views wait for their turns
    assert at_idle == [()] and at_finished == [()]  # what waits for the end sees the result drawn
    traj = ws.trajectory()
    for k, cell in enumerate(ws.quadrics.cells[: traj.W1.shape[1]]):
        np.testing.assert_allclose(cell.view.trajectory.pos, neuron_points(traj, k), rtol=1e-6, atol=1e-7)


def test_a_reopened_run_is_laid_out_and_presented_off_the_gui_thread(window, qtbot, monkeypatch, tmp_path):
    """A session's run is drawn again without the GUI thread loading its data set, building
    its meshes or presenting its rows: the reopened views draw the saved run, as it was."""
    import gui.present.topology as present_topology
    import gui.workspaces.topology as workspace_topology
    from gui import session

    window.load_preset("fig3-free", steps=30)
    wait_until_idle(qtbot, window)
    ws = topology(window)
    drawn = lambda: [xy(item) for plot in (ws.curves.loss_plot, ws.curves.drift_plot) for item in plotted(plot)]  # noqa: E731
    shown = drawn()
    path = tmp_path / "run.lens"
    session.write_session(path, session.capture_state(window))
    window.load_preset("fig3-free-d3", run=False)  # another network laid out meanwhile
    wait_until_idle(qtbot, window)
    on_gui = []
    for module, names in (
        (present_topology, ["training_setup", "layout_of", "present"]),
        (workspace_topology, ["training_setup", "setup_context", "present_row"]),
    ):
        record_gui_thread_calls(monkeypatch, module, names, on_gui)
    assert session.load_session(window, path), window.message_bar.text
    wait_until_idle(qtbot, window)
    assert on_gui == []
    assert ws.context is not None and ws.context.layout["d"] == 2
    saved = read_session(path)["workspaces"]["topology"]["results"]["trajectory"]
    np.testing.assert_array_equal(ws.trajectory().W1, saved["W1"])
    again = drawn()
    assert len(again) == len(shown) > 0
    for a, b in zip(again, shown):
        np.testing.assert_array_equal(a, b)


def test_training_runs_in_a_worker_process_and_each_mesh_is_built_once(window, qtbot, monkeypatch):
    """The run's job trains in a worker process (a ``train`` that raises in this process does
    not stop it), so its Python shares no GIL with the window (issue #26). Its updates arrive
    unpickled, each with its own dicts, and a neuron's surface is still rebuilt only when the
    state brings a mesh for another c: as many rebuilds as changes of mesh, not one per update."""
    import gui.present.topology as present

    def refused(*args, **kwargs):
        raise AssertionError("trained on the window's process")

    monkeypatch.setattr(present, "train", refused)
    ws = topology(window)
    window.load_preset("fig3-free", run=False)
    wait_until_idle(qtbot, window)
    view = ws.quadrics.cells[0].view
    before, shown, rebuilt = view._surface_state, [], []
    show, replace = view.show_surfaces, view._replace

    def showing(c, surface, *rest):
        shown.append(surface)
        show(c, surface, *rest)

    def replacing(old, mesh, *rest, ghost=False):
        rebuilt.append((ghost, mesh is not None))
        return replace(old, mesh, *rest, ghost=ghost)

    monkeypatch.setattr(view, "show_surfaces", showing)
    monkeypatch.setattr(view, "_replace", replacing)
    window.run()
    wait_until_idle(qtbot, window)
    assert window.last_outcome == "succeeded", window.message_bar.text
    keys = [_mesh_key(surface) for surface in [before] + shown]
    changes = sum(1 for last, now in zip(keys, keys[1:]) if now != last)
    assert len(shown) >= 3, "too few updates drawn to tell"
    built = rebuilt.count((False, True))  # surfaces built (not ghosts, not removals)
    assert 0 < built == changes < len(shown), f"{built} surfaces built for {changes} new meshes in {len(shown)} updates"


def _mesh_key(surface):
    return None if surface is None else (surface["mesh"]["c"], surface["extent"], surface["locked"])


def test_a_frame_scrubbed_to_while_a_session_is_drawn_is_the_frame_shown(window, qtbot, monkeypatch, tmp_path):
    """A reopened session's run is drawn by a job; the scrubber, moved before it has drawn, was
    overridden by the whole run (the soak: the views at the run's end, the scrubber at 24 of 31).
    The frame asked for is drawn once the run is."""
    import threading

    import gui.workspaces.topology as module

    window.load_preset("fig3-free", steps=30)
    wait_until_idle(qtbot, window)
    ws = topology(window)
    path = str(tmp_path / "run.lens")
    window.save_session(path)
    release = threading.Event()
    restored_job = module.restored_job

    def held(*args):
        while not release.is_set():  # the job waits here, off the GUI thread, until the scrub is done
            yield Progress(0.0, "held")
            release.wait(0.01)
        return (yield from restored_job(*args))

    monkeypatch.setattr(module, "restored_job", held)
    window.open_session(path)
    dock = window.replay_dock
    assert dock.length == 31 and ws.model.pending_cameras is not None, "the session's run was drawn already"
    dock.seek(23)
    release.set()
    wait_until_idle(qtbot, window)
    assert dock.slider.value() == 23
    np.testing.assert_array_equal(ws.curves.loss_curve.yData, ws.trajectory().loss[:24])
    assert ws.shown_frame() == 23


@pytest.mark.parametrize("source", ["toy", "breast_cancer"])
def test_a_network_file_trains_on_a_built_in_data_set_in_the_worker(window, qtbot, source):
    """A network file with the toy target or the breast-cancer split: the job's data source goes
    to the worker process, so it must pickle (a lambda did not: "Can't pickle local object")."""
    ws = topology(window)
    window.load_preset("your-network", run=False)
    wait_until_idle(qtbot, window)
    ws.parameters["data", "source"] = source
    window.run(steps=5)
    wait_until_idle(qtbot, window)
    if source == "breast_cancer":  # a 2-input network cannot read 30 features: said in one line
        assert window.last_outcome == "failed" and "30" in window.message_bar.text, window.message_bar.text
        assert "pickle" not in window.message_bar.text
        return
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert len(ws.curves.loss_curve.yData) == len(ws.trajectory().loss) == 6
