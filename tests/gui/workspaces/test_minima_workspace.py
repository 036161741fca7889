"""The local-minima workspace in the real window: presets draw, one slice item, λ flips the verdict,
and a job slow to yield never draws over a Reset or a restored session."""

import threading

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPoint, QRect, QTimer

from engine.core import mlp
from engine.core.progress import Progress
from engine.minima.construction import HessianSummary, set_split_lambda
from engine.minima.verdicts import Verdict

from ..conftest import assert_not_blank, gl_pixels, save_screenshot, wait_until_idle

# Small enough for a shared 2-core CI box; the presets themselves keep the paper's sizes.
QUICK = {"slices": {"K": 300, "P": 41}, "path": {"points": 7}, "plane": {"points": 15}}


def open_quick(window, qtbot, preset, extra=None, steps=None):
    from gui.presets import apply_values

    window.load_preset(preset, run=False)
    ws = window.workspaces["minima"]
    apply_values(ws.parameters, QUICK)
    apply_values(ws.parameters, extra or {})
    window.run(steps=steps)
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert not window.message_bar.text, window.message_bar.text
    return ws


def test_shallow_preset_draws_and_lambda_flips_verdict(window, qtbot):
    ws = open_quick(window, qtbot, "nonattr-shallow")
    # K curves are ONE density image (under the envelope and the descent line), not K items,
    # and it shows the engine's curves: the count in the visible box, recomputed by brute force
    # on a few columns, and every curve crossing each column once at least where all are in view.
    view = ws.slice_min
    lines = [i for i in view.getPlotItem().items if isinstance(i, pg.PlotCurveItem)]
    images = [i for i in view.getPlotItem().items if isinstance(i, pg.ImageItem)]
    assert len(lines) == 2 and len(images) == 1 and view.n_curves == 300
    slices = ws.figure.slices_min
    (x0, x1), (y0, y1) = view.getViewBox().viewRange()
    box = lambda: (round(view.getViewBox().width()), round(view.getViewBox().height()))
    qtbot.waitUntil(lambda: view.counts.shape == box(), timeout=5000)  # re-counted after the layout settled
    counts = view.counts
    width, height = counts.shape
    edges = np.linspace(x0, x1, width + 1)
    for col in (width // 4, width // 2, 3 * width // 4):
        at = np.array([np.interp(edges[col : col + 2], slices.t, c) for c in slices.curves])
        rows = np.floor((at - y0) * height / (y1 - y0))
        lo, hi = rows.min(1), rows.max(1)
        want = [int(((lo <= r) & (hi >= r)).sum()) for r in range(height)]
        assert counts[col].tolist() == want
    assert images[0].image.shape == counts.shape and (images[0].image > 0).sum() == (counts > 0).sum()
    assert ws.inspector.steps.rowCount() >= 2
    assert ws.path_view.loss_curve.getData()[0] is not None
    save_screenshot(window, "minima-shallow")
    # The preset splits with λ = 1.5 (B negative definite, I = (−∞, 0) ∪ (1, ∞)): crossing 1 flips it.
    box = ws.inspector.lam
    for lam, kind in ((1.5, "minim"), (0.5, "saddle")):
        box.set_value(lam)
        ws.move_lambda(lam)
        qtbot.waitUntil(lambda: not ws.controller.lane_busy("probe") and kind in box.verdict, timeout=60000)
        # The spectrum beside the λ box is the probe's, at θ(λ): its negative count is that of the
        # Hessian recomputed here from the slider's λ.
        c = ws.figure.construction
        theta = set_split_lambda(c.arch, c.params, c.splits[-1], box.value())
        eigs = np.linalg.eigvalsh(mlp.hessian(c.arch, theta, c.X, c.Y))
        tol = HessianSummary.of(eigs).tol
        shown = ws.shown["spectrum"]
        assert f"λ = {box.value():.3g}" in shown["caption"]
        assert int((np.asarray(shown["eigs"]) < -tol).sum()) == int((eigs < -tol).sum())
        assert (int((eigs < -tol).sum()) > 0) == (kind == "saddle")
    ws.figures.setCurrentWidget(ws.plane)
    qtbot.wait(100)
    assert_not_blank(gl_pixels(ws.plane.surface_view))


@pytest.fixture
def fig3(window, qtbot):
    return open_quick(window, qtbot, "nonattr-fig3", {"construction": {"schedule": "1:1, 2:1"}})


def test_fig3_preset_draws(window, qtbot, fig3):
    ws = fig3
    assert ws.figure.construction.arch.widths == (2, 2, 2, 1)
    assert ws.figure.saddle.probe.verdict is Verdict.SADDLE and ws.shown["probe"]["verdict"] == "saddle"
    assert ws.slice_saddle.n_curves == 300
    assert "saddle" in ws.inspector.lam.verdict
    save_screenshot(window, "minima-fig3")
    # At 1600×960 the inspector fits its pane: the steps' note was cut in half below a scroll bar.
    note, area = ws.inspector.restarts_label, ws.inspector.parentWidget().parentWidget()
    assert note.text() and not area.verticalScrollBar().isVisible()
    assert area.viewport().rect().contains(QRect(note.mapTo(area.viewport(), QPoint(0, 0)), note.size()))
    assert ws.inspector.steps.height() >= ws.inspector.steps.minimumHeight() > 0
    # ... and the split table's texts fit their cells, wrapped ("heorem", "cover…" were cut)
    ws.inspector.tables.setCurrentWidget(ws.inspector.split)
    qtbot.wait(50)
    table = ws.inspector.split.table
    assert table.rowCount() > 0
    save_screenshot(ws.inspector, "minima-fig3-split")
    header, metrics = table.horizontalHeader(), table.fontMetrics()
    for column in range(table.columnCount()):
        title, width = table.horizontalHeaderItem(column).text(), header.sectionSize(column)
        assert width >= metrics.horizontalAdvance(title), title
        for row in range(table.rowCount()):
            item = table.item(row, column)
            for word in item.text().split() if item is not None else []:
                assert metrics.horizontalAdvance(word) < width, (row, column, item.text())
    # every row as tall as its wrapped text at the widths shown (Qt's own measure)
    assert all(table.rowHeight(row) >= table.sizeHintForRow(row) for row in range(table.rowCount()))
    # issue 13: after a finished run (the plane drawn on a 15 × 15 grid), Reset and Run must not raise
    # "Z values must have shape".
    window.reset()
    assert window.workspace.plane.surface._z.shape == (2, 2) and not ws.shown
    window.run()
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert not window.message_bar.text, window.message_bar.text
    assert ws.figure.plane is not None and ws.slice_min.n_curves == 300


def blocking_job(release: threading.Event, result, calls: list):
    """A job that yields once, then blocks in its work (like a Hessian that cannot yield) until
    ``release``; then it yields ``result`` as a partial and returns it."""

    def job():
        calls.append(1)
        yield Progress(0.0, "started")
        release.wait(30)
        yield Progress(0.5, "late partial", result)
        return result

    return job()


def test_dragging_lambda_previews_c_and_the_plane_then_refines_on_release(window, qtbot, fig3):
    ws = fig3
    title = lambda: ws.slice_saddle.getPlotItem().titleLabel.text
    plane_before = ws.shown["plane"]["loss"]
    ws.inspector.lam.set_value(3.0)
    ws.move_lambda(3.0)
    qtbot.waitUntil(lambda: "preview at λ = 3" in title(), timeout=60000)
    assert ws.slice_saddle.n_curves == 300  # every direction, on the coarse grid
    assert len(ws.shown["slices_saddle"]["t"]) < len(ws.shown["slices_min"]["t"])
    assert not np.array_equal(ws.shown["plane"]["loss"], plane_before)  # the plane moved with λ
    ws.release_lambda(3.0)
    wait_until_idle(qtbot, window, 60000)
    assert "preview" not in title() and "λ = 3" in title()
    assert len(ws.shown["slices_saddle"]["t"]) == len(ws.shown["slices_min"]["t"])


def test_a_job_slow_to_yield_never_draws_over_reset_or_a_restored_session(window, qtbot, fig3, monkeypatch):
    import gui.workspaces.minima as minima

    ws = fig3
    state, finished = ws.session_state(), ws.figure
    release, calls = threading.Event(), []
    monkeypatch.setattr(minima, "figure3_job", lambda settings: blocking_job(release, finished, calls))
    # 1. Reset while the job blocks: its late partial and result are dropped.
    window.run()
    qtbot.waitUntil(lambda: calls == [1], timeout=10000)
    window.reset()
    release.set()
    wait_until_idle(qtbot, window, timeout_ms=30000)
    qtbot.wait(100)
    assert ws.shown == {} and ws.figure is None and ws.inspector.steps.rowCount() == 0
    # 2. A restored session while the job blocks: it stays as restored.
    release.clear()
    window.run()
    qtbot.waitUntil(lambda: calls == [1, 1], timeout=10000)
    window.stop_jobs()
    ws.restore_session_state(state)
    ws.go_live()  # as File ▸ Open session does
    release.set()
    wait_until_idle(qtbot, window, timeout_ms=30000)
    qtbot.waitUntil(lambda: ws.figure is not None, timeout=120000)  # the session's own network, live again
    assert ws.figure is not finished and set(ws.shown) == set(state) - {"network"}
    assert ws.slice_min.n_curves == 300 and ws.inspector.steps.rowCount() == 3
    assert ws.inspector.lam.slider.isEnabled()  # the restored session goes on


def test_run_after_a_superseded_reslice_builds(window, qtbot, fig3, monkeypatch):
    import gui.models.minima as minima  # the model makes the re-slice's job

    ws = fig3
    old = ws.figure
    release, calls = threading.Event(), []
    monkeypatch.setattr(minima, "reslice_job", lambda *args, **kwargs: blocking_job(release, old, calls))
    ws.release_lambda(0.5)
    qtbot.waitUntil(lambda: calls == [1], timeout=10000)
    window.cancel()  # the re-slice is blocked in its work: the cancel cannot land yet
    window.run()  # ... and Run must build, not resume or re-slice
    release.set()
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert calls == [1] and not window.message_bar.text
    assert ws.figure is not old and ws.figure.construction is not old.construction
    assert np.array_equal(ws.figure.construction.params, old.construction.params)  # same settings, same build
    assert ws.inspector.steps.rowCount() == 3


def test_minima_session_round_trips(window, qtbot, fig3, tmp_path):
    from gui import session

    ws = fig3
    path = tmp_path / "minima.lens"
    window.save_session(str(path))
    before = {k: v for k, v in ws.shown.items()}
    window.reset()
    assert session.load_session(window, str(path))
    assert set(ws.shown) == set(before)
    np.testing.assert_array_equal(ws.shown["slices_min"]["losses"], before["slices_min"]["losses"])
    assert ws.slice_saddle.n_curves == 300 and "saddle" in ws.inspector.lam.verdict


def test_infinity_preset_draws(window, qtbot):
    ws = open_quick(window, qtbot, "nonattr-infinity", steps=2000)
    assert ws.bias_view._items and ws.gd_view._items
    save_screenshot(window, "minima-infinity")


def test_corrupt_npz_shows_a_message(window, qtbot, tmp_path):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a zip archive at all")
    window.show_workspace("minima")
    window.workspaces["minima"].load_network(str(bad))
    assert "broken.npz" in window.message_bar.text


def test_presets_and_reproduce_run_the_same_job_settings(window):
    """The nonattr-fig3 preset builds exactly what `reproduce nonattr-deep` builds, and the
    nonattr-path preset's construction is `reproduce nonattr-path`'s (same job, same settings)."""
    from dataclasses import replace

    from engine.minima.pipeline import Figure3Settings
    from engine.minima.reproduce import deep_settings

    ws = window.workspaces["minima"]
    window.load_preset("nonattr-fig3", run=False)
    assert ws.settings() == deep_settings(quick=False, seed=16)  # `reproduce nonattr-deep --seed 16`
    window.load_preset("nonattr-fig3-flat", run=False)
    assert ws.settings() == deep_settings(quick=False, seed=0, lam=0.5)
    window.load_preset("nonattr-path", run=False)
    built = ws.settings()
    # B11 uses the construction only: slices, path and plane settings play no part in it.
    assert replace(built, slices=None, path=None, plane=None, descent=None, saddle_lam=0) == replace(
        Figure3Settings(seed=0), slices=None, path=None, plane=None, descent=None, saddle_lam=0
    )


def test_exported_construction_reloads_with_its_splits_and_slider(window, qtbot, fig3, tmp_path):
    ws = fig3
    built = ws.figure
    ws.export_network(str(tmp_path / "c.npz"))
    window.reset()
    ws.load_network(str(tmp_path / "c.npz"))
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert not window.message_bar.text, window.message_bar.text
    loaded = ws.figure.construction
    assert loaded.splits == built.construction.splits and ws.inspector.steps.rowCount() == 3
    assert ws.figure.path.interval == built.path.interval and ws.figure.path.verdicts == built.path.verdicts
    # λ opens where the file's history left it (the last split's), and the λ box describes that point
    box, lam = ws.inspector.lam, loaded.splits[-1].lam
    qtbot.waitUntil(lambda: not ws.controller.lane_busy("probe"), timeout=60000)
    assert box.slider.isEnabled() and box.exact == lam and "non-attracting" in box.verdict
    assert f"λ = {lam:.3g}" in ws.shown["spectrum"]["caption"]
    box.set_value(2.0)
    ws.move_lambda(2.0)
    qtbot.waitUntil(lambda: not ws.controller.lane_busy("probe") and "saddle" in box.verdict, timeout=60000)
    save_screenshot(window, "minima-reloaded")


def test_split_a_loaded_network_by_hand_and_move_lambda(window, qtbot, tmp_path):
    """Load a 2—3—1 net at a strict minimum (no history), split an admissible neuron with the
    inspector's button, drag λ across I and watch the verdict flip; then undo."""
    from engine.io import netfile as netio
    from gui.presets import apply_values

    from ...networks import strict_minimum_net

    net = strict_minimum_net()
    path = netio.save_network(tmp_path / "own.npz", net.arch, net.params, net.X, net.Y)
    window.show_workspace("minima")
    ws = window.workspaces["minima"]
    apply_values(ws.parameters, QUICK)
    ws.load_network(str(path))
    wait_until_idle(qtbot, window, timeout_ms=120000)
    assert not window.message_bar.text, window.message_bar.text
    assert not ws.inspector.lam.slider.isEnabled() and ws.inspector.split.table.rowCount() >= 1
    layer, neuron, badge = ws.shown["construction"]["admissible"][0]
    inside, outside = (0.5, 1.6) if badge.startswith("positive") else (1.6, 0.5)
    ws.inspector.split.lam.setValue(inside)
    ws.inspector.split.button(layer, neuron).click()
    wait_until_idle(qtbot, window, timeout_ms=120000)
    assert not window.message_bar.text, window.message_bar.text
    assert ws.figure.construction.arch.widths == (2, 4, 1) and ws.inspector.steps.rowCount() == 2
    box = ws.inspector.lam
    assert box.slider.isEnabled() and ws.inspector.split.undo.isEnabled()
    for lam, kind in ((outside, "saddle"), (inside, "non-attracting")):
        box.set_value(lam, emit=True)  # as a click on the slider: live probe, then (c)/(d) re-sliced
        qtbot.waitUntil(lambda: not ws.controller.lane_busy("probe") and kind in box.verdict, timeout=60000)
        qtbot.waitUntil(lambda: abs(ws.figure.saddle.probe.lam - lam) < 0.01, timeout=120000)
        wait_until_idle(qtbot, window, timeout_ms=120000)
    save_screenshot(window, "minima-split-by-hand")
    ws.inspector.split.undo.click()
    wait_until_idle(qtbot, window, timeout_ms=120000)
    assert ws.figure.construction.arch.widths == (2, 3, 1) and ws.inspector.steps.rowCount() == 1
    assert not box.slider.isEnabled() and not ws.inspector.split.undo.isEnabled()


def test_load_a_torch_state_dict_and_find_its_critical_point(window, qtbot, tmp_path):
    """A state_dict off the minimum (with its activation and data, as the dialog asks), then
    "Find critical point": the message bar and the steps note say how far it moved and the new gradient norm."""
    import torch

    from engine.core import mlp
    from gui.panels.inspector import TorchFileDialog
    from gui.presets import apply_values

    from ...networks import strict_minimum_net

    net = strict_minimum_net()
    Ws, _ = mlp.unpack(net.arch, net.params + 0.05)
    torch.save({"0.weight": torch.as_tensor(Ws[0]), "2.weight": torch.as_tensor(Ws[1])}, tmp_path / "net.pt")
    np.savetxt(tmp_path / "data.csv", np.column_stack([net.X, net.Y]), delimiter=",")
    dialog = TorchFileDialog(str(tmp_path / "net.pt"), window)
    assert dialog.activation.currentText() == "sigmoid"
    dialog.deleteLater()
    window.show_workspace("minima")
    ws = window.workspaces["minima"]
    apply_values(ws.parameters, QUICK)
    ws.load_network(str(tmp_path / "net.pt"), "sigmoid", str(tmp_path / "data.csv"))
    wait_until_idle(qtbot, window, timeout_ms=120000)
    assert not window.message_bar.text, window.message_bar.text
    assert ws.figure.steps[0].verdict is Verdict.NOT_CRITICAL and ws.inspector.critical_button.isEnabled()
    ws.inspector.critical_button.click()
    wait_until_idle(qtbot, window, timeout_ms=120000)
    search = ws.figure.moved
    assert search.grad_norm < 1e-8 and search.distance > 0.01 and ws.figure.steps[0].grad_norm < 1e-8
    assert window.message_bar.text.startswith("Critical point found") and "moved" in window.message_bar.text
    assert "Critical point found" in ws.inspector.restarts_label.text()
    save_screenshot(window, "minima-critical-point")
    ws.load_network(str(tmp_path / "net.pt"), "", str(tmp_path / "data.csv"))  # no activation: one-line error
    assert "activation" in window.message_bar.text


def test_slices_over_the_split_pair_show_predicted_and_observed(window, qtbot):
    ws = open_quick(
        window,
        qtbot,
        "nonattr-fig3",
        {"construction": {"schedule": "1:1, 2:1"}, "slices": {"family": "pair", "T": 0.01}},
    )
    saddle = ws.figure.saddle.slices
    assert saddle.family.startswith("pair") and 0 < saddle.predicted < 1
    assert ws.shown["slices_saddle"]["predicted"] == saddle.predicted
    assert "predicted" in ws.slice_saddle.getPlotItem().titleLabel.text
    save_screenshot(window, "minima-pair-family")


def test_record_replay_of_a_minima_preset_slices_on_a_worker_then_renders(window, qtbot, tmp_path):
    """Record… → replay on paper B: the walk's slices run as a job (the window keeps turning its
    event loop, Cancel stops it and writes nothing), then the clip renders like any other."""
    import imageio.v3 as iio

    open_quick(window, qtbot, "nonattr-shallow")
    dock = window.clip_dock
    ticks = []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    cancelled = tmp_path / "cancelled.mp4"
    assert (
        window.recording.start(
            source="Whole window", size="Source's own size", fps=5, when="replay", seconds=1.0, out=str(cancelled)
        )
        is None
    )
    dock.cancel()
    qtbot.waitUntil(lambda: not window.computing, timeout=60000)
    assert not cancelled.exists() and "cancelled" in window.message_bar.text
    out = tmp_path / "walk.mp4"
    window.recording.start(
        source="Whole window", size="Source's own size", fps=5, when="replay", seconds=1.0, out=str(out)
    )
    assert dock._walk is not None, "the slicing ran before start() returned, on the GUI thread"
    ticks.clear()
    qtbot.waitUntil(lambda: dock._walk is None, timeout=120000)
    timer.stop()
    assert len(ticks) > 10, "the event loop stalled while slicing"
    qtbot.waitUntil(lambda: dock.job is not None and not dock.job.active and out.exists(), timeout=180000)
    frames = iio.imread(out)
    assert frames.shape[0] == 6 and np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 0.5


def test_key_frame_dock_on_paper_b_slices_once_then_captures_lambda_panels_and_previews(window, qtbot, tmp_path):
    """Paper B in the key-frame dock: the first Capture slices the walk on a worker, then
    captures the λ slider's value; a key frame can hide a panel; the preview is the composed
    frame, drawn small in the dock, and it changes along the walk; the clip saves, reloads and
    renders as its key frames say."""
    import imageio.v3 as iio

    from gui.clips.minima_scene import STORY_CAPTION

    ws = open_quick(window, qtbot, "nonattr-shallow")
    dock = window.clip_dock
    dock.show()
    assert dock.capture() is False and dock._walk is not None, "the slicing must run on the worker"
    qtbot.waitUntil(lambda: len(dock.keys) == 1, timeout=120000)
    lams = dock.scene().lams
    assert dock.keys[0].step == dock.scene().row_of(ws.inspector.lam.value())
    dock.delete()  # the window's λ sat at the saddle: start inside I instead
    ws.inspector.lam.set_value(float(lams[0]))
    assert dock.capture() and dock.keys[0].step == 0 and dock.keys[0].at == 0
    ws.inspector.lam.set_value(float(lams[-1]))
    dock.seconds.setValue(1.0)
    assert dock.capture() and dock.keys[1].step == len(lams) - 1 and dock.keys[1].at == 1.0
    assert dock.keys[1].caption == STORY_CAPTION  # its line break kept through the one-line field
    assert sorted(dock.panel_boxes) == ["descent", "path", "slices"]
    dock.list.setCurrentRow(0)
    dock.panel_boxes["descent"].setChecked(False)  # edits the selected key frame
    assert "descent" not in dock.keys[0].panels and "caption" in dock.keys[0].panels
    assert dock.keys[1].panels is None
    dock.list.setCurrentRow(1)
    assert dock.panel_boxes["descent"].isChecked()  # the boxes show the selected key frame
    assert dock.list.item(0).text().endswith(f"λ = {lams[0]:.3f}")
    assert dock.list.item(1).text().endswith(f"λ = {lams[-1]:.3f}")

    dock.preview.setValue(dock.preview.maximum())  # scrubbed to the end and back
    end = dock.thumbnail.pixmap().toImage()
    dock.preview.setValue(0)
    start = dock.thumbnail.pixmap().toImage()
    assert dock.thumbnail.isVisible() and start.width() == 400
    pixels = lambda image: np.array(image.convertToFormat(image.Format.Format_Grayscale8).constBits()).astype(int)
    assert pixels(start).std() > 4 and np.abs(pixels(start) - pixels(end)).mean() > 0.5
    save_screenshot(start, "clip-dock-walk-preview-start")
    save_screenshot(end, "clip-dock-walk-preview-end")
    save_screenshot(window, "clip-dock-walk")

    dock.save(str(tmp_path / "walk.json"))
    dock.keys.clear()
    dock.load(str(tmp_path / "walk.json"))
    assert [k.step for k in dock.keys] == [0, len(lams) - 1] and "descent" not in dock.keys[0].panels
    out = tmp_path / "walk.mp4"
    job = dock.render(str(out))
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    frames = iio.imread(out)
    assert len(frames) == 31
    # (d) is off in the first frame and on in the last: its cell is blank at the start.
    x, y, w, h = next(c.rect for c in dock.clip.layout if c.source == "descent")
    H, W = frames.shape[1:3]
    cell = (slice(round(y * H), round((y + h) * H)), slice(round(x * W), round((x + w) * W)))
    assert frames[0][cell].std() < 4 and frames[-1][cell].std() > 5 * frames[0][cell].std()


def test_a_drag_preview_of_a_figure_replaced_meanwhile_is_dropped(window, qtbot, monkeypatch):
    """λ moved while an undo runs: the preview, sliced from the figure before the undo, arrives
    after it (held here until the undo's result is drawn). It is not drawn over the new figure,
    and no probe follows it (in the soak it probed a construction left with no split: "this
    construction has no split whose λ could be moved")."""
    import threading

    from gui.models import minima as module  # the model makes the jobs

    ws = open_quick(window, qtbot, "nonattr-fig3", {"construction": {"schedule": "1:1"}})  # undone: no split
    undone = threading.Event()
    real = module.presented_preview

    def held(job):
        undone.wait(120)
        return (yield from real(job))

    monkeypatch.setattr(module, "presented_preview", held)
    window.controller.run_finished.connect(undone.set)
    before, probes = ws.figure, []
    monkeypatch.setattr(ws.model, "probe_request", lambda lam: probes.append(lam))
    ws.undo_split()
    ws.move_lambda(3.0)
    wait_until_idle(qtbot, window, 120000)
    assert undone.is_set() and ws.figure is not before
    assert len(ws.figure.construction.splits) == len(before.construction.splits) - 1
    assert not window.message_bar.text, window.message_bar.text
    assert "preview" not in ws.shown.get("slices_saddle", {}).get("title", "") and probes == []


def test_a_reset_that_drops_a_releases_reslice_takes_the_drags_previews_back(window, qtbot, monkeypatch):
    """λ released, and Reset pressed on another tab before the re-slice has finished (held here):
    the main lane's jobs are dropped, and the drag's preview of (c), drawn at a λ the figure never
    reached, must not stay over it (the soak: "drawn stages [..., 'plane'] but the figure has
    [...]"). The figure is drawn as presented, the slider and the λ box with it, and no job
    starts (the window may be closing)."""
    import threading

    from gui.models import minima as module  # the model makes the jobs

    ws = open_quick(window, qtbot, "nonattr-fig3")
    figure, drawn, shown_lam = ws.figure, dict(ws.shown), ws.inspector.lam.exact
    lam = figure.construction.splits[ws.model.split].lam
    ws.move_lambda(lam + 0.5)
    wait_until_idle(qtbot, window, 120000)
    assert "preview" in ws.shown["slices_saddle"]["title"] and ws.shown["slices_saddle"] is not drawn["slices_saddle"]
    held, real = threading.Event(), module.reslice_job

    def reslice(*args, **kwargs):
        held.wait(120)
        return (yield from real(*args, **kwargs))

    monkeypatch.setattr(module, "reslice_job", reslice)
    ws.release_lambda(lam + 0.5)
    assert window.controller.run_active
    window.show_workspace("topology")
    submitted, submit = [], window.controller.submit
    record = lambda lane, *a, **k: submitted.append(lane) or submit(lane, *a, **k)  # noqa: E731
    monkeypatch.setattr(window.controller, "submit", record)
    window.reset()
    assert submitted == []  # nothing started while every lane is told to stop (closing, the window's)
    held.set()
    wait_until_idle(qtbot, window, 120000)
    assert ws.figure is figure and not window.message_bar.text, window.message_bar.text
    assert set(ws.shown) == set(drawn) and all(ws.shown[k] is drawn[k] for k in drawn)
    assert ws.inspector.lam.exact == shown_lam == drawn["probe"]["lam"]  # the slider as before the drag


def test_a_session_of_a_construction_with_every_split_undone_keeps_no_slider_lambda(window, qtbot, tmp_path):
    """With every split undone the slider moves nothing; the λ it last held was saved, and a
    reopened window, having nothing to set it from, showed none (the soak: "network/lam: None ≠
    0.909"). No λ is saved then, and the reopened tab's state is the saved one."""
    from ..actions import close_window, open_window, readable, same

    ws = open_quick(window, qtbot, "nonattr-fig3", {"construction": {"schedule": "1:1"}})
    ws.inspector.lam.set_value(0.9)  # as a drag leaves it
    ws.undo_split()
    wait_until_idle(qtbot, window, 120000)
    assert not ws.figure.construction.splits and ws.inspector.lam.exact is not None
    saved = ws.session_state()
    assert saved["network"]["lam"] is None
    path = str(tmp_path / "undone.lens")
    window.save_session(path)
    fresh = open_window(shortened=False)
    try:
        fresh.open_session(path)
        wait_until_idle(qtbot, fresh, 120000)
        assert same(readable(fresh.workspaces["minima"].session_state()), readable(saved))
    finally:
        close_window(fresh)


def test_a_session_only_drawn_runs_no_inspection_and_its_controls_act_once_live(window, qtbot, fig3, tmp_path):
    """``screenshot --session`` draws a session and makes nothing live (its network's inspection,
    a Hessian, was half the shot's time): the controls look as saved all the same, the session is
    saved again as it was read, and a split undone before the network is live is undone once it is."""
    from gui import session

    from ..actions import readable, same

    ws = fig3
    box, split = ws.inspector.lam, ws.inspector.split
    path = str(tmp_path / "drawn.lens")
    window.save_session(path)
    saved, n_splits = ws.session_state(), len(ws.figure.construction.splits)

    def controls():
        return (
            box.slider.isEnabled(),
            box.title(),
            box.exact,
            ws.inspector.export_button.isEnabled(),
            ws.inspector.critical_button.isEnabled(),
            split.undo.isEnabled(),
            split.table.rowCount(),
        )

    before = controls()
    assert before[0] and before[5] and before[6] > 0 and n_splits == 2
    window.reset()
    session.apply_state(window, session.read_session(path), live=False)
    wait_until_idle(qtbot, window, 60000)
    assert ws.figure is None, "nothing was to be made live"
    assert controls() == before
    assert same(readable(ws.session_state()), readable(saved))
    split.undo.click()
    qtbot.waitUntil(lambda: ws.figure is not None, timeout=120000)  # the undo made it live ...
    wait_until_idle(qtbot, window, 240000)
    assert len(ws.figure.construction.splits) == n_splits - 1  # ... and was done then
    assert not window.message_bar.text, window.message_bar.text
