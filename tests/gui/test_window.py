"""The window as a person uses it: it opens, the 3D view draws, runs start and cancel cleanly."""

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from PySide6.QtGui import QImage

from .conftest import assert_not_blank, gl_pixels, save_screenshot, wait_until_idle
from .drawn import nearest_colour_distance, neuron_points, projected_pixels, render_square

ROOT = Path(__file__).resolve().parents[2]


def test_window_opens_with_panel_views_and_controls(window):
    assert window.isVisible()
    assert window.parameter_dock.isVisible()
    assert window.workspace.gl_views(), "the current workspace shows a 3D view"
    for action in (
        window.run_action,
        window.pause_action,
        window.step_action,
        window.cancel_action,
        window.reset_action,
    ):
        assert action.text()
    assert window.run_action.isEnabled() and not window.cancel_action.isEnabled()


def test_3d_view_framebuffer_is_not_blank(window, qtbot):
    view = window.workspace.gl_views()[0]
    qtbot.wait(100)
    pixels = gl_pixels(view)
    assert_not_blank(pixels)
    save_screenshot(window, "window_initial")


def test_3d_view_pixels_are_where_the_run_projects(window, qtbot):
    """The rendered line lies where pyqtgraph's camera projects the run's points (read from its
    weights), and the head marker's red is at the last one."""
    window.load_preset("fig3-free", steps=40)
    wait_until_idle(qtbot, window)
    ws = window.workspace
    traj, view = ws.model.result, ws.gl_views()[0]
    points = neuron_points(traj, view.neuron)
    side = 400
    pixels = render_square(view, side)
    where = projected_pixels(view, points, side)
    assert ((0 <= where) & (where < side)).all(), "the whole run is in the frame"
    # The line's own pixels: those that change when it alone is hidden. They lie along the
    # projected polyline of the run's points, and each of these vertices has some next to it.
    view.trajectory.setVisible(False)
    try:
        without = render_square(view, side)
    finally:
        view.trajectory.setVisible(True)
    rows, cols = np.nonzero(np.abs(pixels.astype(int) - without.astype(int)).max(axis=2) > 8)
    drawn = np.column_stack([cols, rows]) + 0.5  # pixel centres
    assert len(drawn) > 50, "the line drew almost nothing"
    off = distance_to_polyline(drawn, where)
    assert np.mean(off <= 4) > 0.99, f"{100 * np.mean(off > 4):.1f} % of the line's pixels are off the run"
    for k in (len(points) // 4, len(points) // 2, 3 * len(points) // 4):
        assert np.linalg.norm(drawn - where[k], axis=1).min() <= 2.5, (k, where[k])
    line_rgb = view.trajectory.color[len(points) // 2][:3]
    col, row = np.round(where[-1]).astype(int)
    r, g, b = pixels[row, col].astype(int)
    assert r > 2 * g and r > 2 * b, ("the head marker is red", (r, g, b))
    # And the frame is the points': off the run, a pixel far from it has neither colour.
    empty = np.array([side * 0.02, side * 0.5])
    assert np.min(np.linalg.norm(where - empty, axis=1)) > 20
    assert nearest_colour_distance(pixels, empty, line_rgb, radius=0) > 0.2


def distance_to_polyline(points: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Each point's distance (pixels) to the nearest segment of the polyline through ``vertices``."""
    a, b = vertices[:-1], vertices[1:]
    ab = b - a
    t = np.einsum("psk,sk->ps", points[:, None] - a[None], ab) / np.maximum((ab**2).sum(1), 1e-12)
    nearest = a[None] + np.clip(t, 0, 1)[..., None] * ab[None]
    return np.linalg.norm(points[:, None] - nearest, axis=2).min(axis=1)


def test_blank_check_can_fail(window):
    # The framebuffer check must be able to fail: an empty scene is flagged as blank.
    from gui.rendering.offscreen_gl import OffscreenGLView

    empty = OffscreenGLView()
    empty.resize(200, 200)
    empty.show()
    try:
        pixels = gl_pixels(empty, size=(200, 200))
        assert pixels[..., :3].std() < 4.0
    finally:
        empty.close()


def start_long_run(window, qtbot) -> None:
    """Start a long training run and return once the 3D view shows part of its trajectory."""
    window.load_preset("fig3-free", run=False)
    window.workspace.parameters.child("optimizer", "steps").setValue(100_000)
    window.run()
    assert window.runner.busy
    # Polled on what the view shows: a test's own slot on the runner's signal can be served
    # late while a software-rendered window is busy drawing.
    view = window.workspace.gl_views()[0]
    qtbot.waitUntil(lambda: view.shown_points() > 1, timeout=30000)


def _counting_yields(job, log: list, cancelled: list):
    """``job``, logging for each of its yields whether Cancel had been asked for by then."""
    try:
        while True:
            try:
                update = next(job)
            except StopIteration as done:
                return done.value
            log.append(bool(cancelled))
            yield update
    finally:
        job.close()


def test_run_then_cancel_leaves_no_running_thread(window, qtbot):
    start_long_run(window, qtbot)
    thread = window.runner._thread
    yields, cancelled = [], []
    # The worker reads its job afresh at every turn: from here on it drives the counting wrapper.
    thread._job = _counting_yields(thread._job, yields, cancelled)
    qtbot.waitUntil(lambda: len(yields) >= 2, timeout=30000)
    with qtbot.waitSignal(thread.finished, timeout=60000):  # the QThread really ends (a hang guard)
        cancelled.append(True)
        window.cancel()
    assert yields.count(True) <= 1, "the job ran on past the yield in hand after Cancel"
    wait_until_idle(qtbot, window, 30000)
    assert "Cancelled" in window.status_label.text()
    assert window.run_action.isEnabled()


def test_pause_and_step_controls(window, qtbot):
    start_long_run(window, qtbot)
    window.toggle_pause()
    assert window.runner.state == "paused" and window.run_action.text() == "Resume"
    window.run()  # Run while paused resumes
    assert window.runner.state == "running"
    window.cancel()
    wait_until_idle(qtbot, window, 5000)


def test_closing_mid_run_stops_the_worker(qtbot):
    from gui.main_window import MainWindow

    win = MainWindow()
    win.show()
    win.load_preset("fig3-free", run=False)
    win.workspace.parameters.child("optimizer", "steps").setValue(100_000)
    win.run()
    thread = win.runner._thread
    qtbot.wait(200)
    win.close()
    assert not thread.isRunning()


def test_screenshot_command_writes_png_of_requested_size(tmp_path):
    out = tmp_path / "shot.png"
    result = subprocess.run(
        [
            sys.executable,
            "main.py",
            "screenshot",
            "--preset",
            "fig3-free",
            "--out",
            str(out),
            "--size",
            "960x600",
            "--steps",
            "20",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    image = QImage(str(out))
    assert (image.width(), image.height()) == (960, 600)
    pixels = np.frombuffer(image.convertToFormat(QImage.Format.Format_RGBA8888).constBits(), np.uint8).reshape(
        600, 960, 4
    )
    assert_not_blank(pixels)


def test_bad_arguments_give_one_line_and_exit_2():
    for argv in (
        ["screenshot", "--preset", "fig3-free", "--out", "x.png", "--size", "big"],
        ["screenshot", "--preset", "no-such-preset", "--out", "/tmp/x.png"],
        ["reproduce", "no-such-experiment", "--out", "/tmp/x"],
        ["invariant-set", "--d", "0", "--e", "1", "--c", "1"],
    ):
        result = subprocess.run(
            [sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 2, (argv, result.stderr)
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_the_status_bar_shows_the_newest_update_the_throttle_held_back(window, qtbot, monkeypatch):
    from engine.core.progress import Progress
    from gui import main_window

    # The throttle reads the window's clock; stopped here, the second update is inside the
    # ~10 Hz interval however long the machine takes between the two lines.
    stopped = time.monotonic() + 3600.0  # after every stamp earlier tests left
    monkeypatch.setattr(main_window, "time", SimpleNamespace(monotonic=lambda: stopped))
    window.runner.progressed.emit(Progress(0.0, "fig4: 0/12 cells"))
    window.runner.progressed.emit(Progress(1 / 12, "fig4: 1/12 cells"))
    assert window.status_label.text() == "fig4: 0/12 cells"
    qtbot.waitUntil(lambda: window.status_label.text() == "fig4: 1/12 cells", timeout=10000)
    assert window.progress_bar.value() == 83
    window.runner.progressed.emit(Progress(0.5, "fig4: 6/12 cells"))
    window.runner.progressed.emit(Progress(0.6, "fig4: 7/12 cells"))
    window.runner.cancelled.emit(None)  # the job's last word stays
    qtbot.wait(300)
    assert window.status_label.text().startswith("Cancelled")


def test_the_windows_preload_freezes_start_up_on_the_gui_thread(qapp, qtbot, monkeypatch):
    # Collected on the preload thread, start-up's cyclic garbage (Qt wrappers among it) was freed
    # there, not on the thread its objects live on.
    import threading

    import gui.app

    frozen_on = []
    monkeypatch.setattr(gui.app, "freeze_start_up", lambda: frozen_on.append(threading.current_thread()))
    gui.app.preload_in_background(qapp).join()
    assert frozen_on == [], "the preload thread froze start-up itself"
    qtbot.waitUntil(lambda: bool(frozen_on))
    assert frozen_on == [threading.main_thread()]


def test_the_slide_says_what_the_panel_changed_since_the_preset(window, qtbot):
    """A slide whose line quotes the preset's numbers says so once a field differs from it."""
    from gui.presets import preset_named

    window.load_preset("nonattr-fig3", run=False)
    line = preset_named("nonattr-fig3").description
    shown = window.slide_title.subtitle.text
    assert shown() == line
    window.workspace.parameters["slices", "normalize"] = "filter"
    assert shown() == line + " Changed since the preset: directions → filter-normalised (Li et al.)."
    window.workspace.parameters["slices", "K"] = 200
    assert shown().endswith(": K directions → 200, directions → filter-normalised (Li et al.).")  # panel order
    window.workspace.parameters["slices", "normalize"] = "unit"
    window.workspace.parameters["slices", "K"] = 5000
    assert shown() == line
    # a run of a preset changes none of its fields
    window.load_preset("fig3-free", steps=30)
    wait_until_idle(qtbot, window)
    assert window.last_outcome == "succeeded" and shown() == preset_named("fig3-free").description


def test_every_parameter_name_is_whole_in_the_font_it_is_drawn_in(window, qtbot):
    """Each tab's panel shows its names uncut in the window's own font, which its style sheet
    sets after the dock is built (a names column sized in the default font cut "l (hidden
    neurons)" to "l (hidden neuro…"), and still after a theme switch restyles the window."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QTreeWidgetItemIterator

    from gui.style import FONT_PT

    def cut_names():
        cut = []
        for key, tree in window.parameter_trees.items():
            window.show_workspace(key)
            qtbot.waitUntil(lambda tree=tree: tree.isVisible())
            it = QTreeWidgetItemIterator(tree)
            while it.value() is not None:
                item = it.value()
                font = item.data(0, Qt.ItemDataRole.FontRole)  # a group's bold title has its own
                metrics = tree.fontMetrics() if font is None else QFontMetrics(font)
                cell = tree.visualRect(tree.indexFromItem(item, 0))  # empty under a folded or hidden group
                room = cell.width() - 8  # the style's text margins
                if item.text(0) and not cell.isEmpty() and metrics.horizontalAdvance(item.text(0)) > room:
                    cut.append(f"{key}: {item.text(0)!r}")
                it += 1
        return cut

    assert window.parameter_trees["topology"].font().pointSizeF() == FONT_PT[False]  # the style sheet's
    assert cut_names() == []
    window.presentation.set_theme("dark", remember=False)
    assert cut_names() == []
