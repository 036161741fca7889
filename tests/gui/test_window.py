"""The window as a person uses it: it opens, the 3D view draws, runs start and cancel cleanly."""

import subprocess
import sys
from pathlib import Path

import numpy as np
from PySide6.QtGui import QImage

from .conftest import assert_not_blank, gl_pixels, save_screenshot, wait_until_idle

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


def test_blank_check_can_fail(window):
    # The framebuffer check must be able to fail: an empty scene is flagged as blank.
    from gui.views.offscreen_gl import OffscreenGLView

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


def test_run_then_cancel_leaves_no_running_thread(window, qtbot):
    start_long_run(window, qtbot)
    thread = window.runner._thread
    with qtbot.waitSignal(thread.finished, timeout=2000):  # the QThread really ends
        window.cancel()
    wait_until_idle(qtbot, window, 2000)
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


def test_the_status_bar_shows_the_newest_update_the_throttle_held_back(window, qtbot):
    from engine.core.progress import Progress

    window.runner.progressed.emit(Progress(0.0, "fig4: 0/12 cells"))
    window.runner.progressed.emit(Progress(1 / 12, "fig4: 1/12 cells"))  # within the ~10 Hz interval
    assert window.status_label.text() == "fig4: 0/12 cells"
    qtbot.waitUntil(lambda: window.status_label.text() == "fig4: 1/12 cells", timeout=2000)
    assert window.progress_bar.value() == 83
    window.runner.progressed.emit(Progress(0.5, "fig4: 6/12 cells"))
    window.runner.progressed.emit(Progress(0.6, "fig4: 7/12 cells"))
    window.runner.cancelled.emit(None)  # the job's last word stays
    qtbot.wait(300)
    assert window.status_label.text().startswith("Cancelled")
