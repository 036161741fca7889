"""The local-minima workspace in the real window: presets draw, one slice item, λ flips the verdict."""
import pyqtgraph as pg
import pytest

from .conftest import assert_not_blank, gl_pixels, save_screenshot, wait_until_idle

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
    # K curves are ONE item (plus the envelope and the descent line), not K items.
    curves = [i for i in ws.slice_min.getPlotItem().items if isinstance(i, pg.PlotCurveItem)]
    assert len(curves) == 3 and ws.slice_min.n_curves == 300
    assert len(ws.slice_min.curves.getData()[0]) == 300 * 41
    assert ws.inspector.steps.rowCount() >= 2
    assert ws.path_view.loss_curve.getData()[0] is not None
    save_screenshot(window, "minima-shallow")
    # The preset splits with λ = 1.5 (B negative definite, I = (−∞, 0) ∪ (1, ∞)): crossing 1 flips it.
    box = ws.inspector.lam
    for lam, kind in ((1.5, "minim"), (0.5, "saddle")):
        box.set_value(lam)
        ws._on_lambda_moved(lam)
        qtbot.waitUntil(lambda: not ws.probe_runner.busy and kind in box.verdict, timeout=60000)
    ws.figures.setCurrentWidget(ws.plane)
    qtbot.wait(100)
    assert_not_blank(gl_pixels(ws.plane.surface_view))


def test_fig3_preset_draws(window, qtbot):
    ws = open_quick(window, qtbot, "nonattr-fig3", {"construction": {"schedule": "1:1, 2:1"}})
    assert ws.construction is not None and ws.construction.arch.widths == (2, 2, 2, 1)
    assert ws.slice_saddle.n_curves == 300
    assert "saddle" in ws.inspector.lam.verdict
    save_screenshot(window, "minima-fig3")


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
