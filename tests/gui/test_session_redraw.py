"""A saved session draws again without recomputing: in a fresh window no job is submitted, and
``screenshot --session`` gives the picture ``screenshot --preset … --save-session`` took."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QImage

from gui import session
from gui.main_window import MainWindow
from gui.worker import JobRunner

from .conftest import fail_on_any_job_but_a_layout, wait_until_idle

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def private_settings(tmp_path):
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "cfg"))
    QSettings().clear()


def pixels(path) -> np.ndarray:
    image = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : 3 * image.width()].reshape(image.height(), image.width(), 3).copy()  # image's memory dies here


def screenshot(*argv) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "main.py", "screenshot", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_opening_a_session_runs_nothing_again_and_shows_the_saved_frame(qtbot, window, tmp_path, monkeypatch):
    window.load_preset("fig3-free", steps=25)
    wait_until_idle(qtbot, window)
    path = tmp_path / "talk.lens"
    session.write_session(path, session.capture_state(window))
    submitted = []
    monkeypatch.setattr(JobRunner, "submit", lambda self, job, *a, **k: submitted.append(job))
    fresh = MainWindow()
    qtbot.addWidget(fresh)
    fresh.show()
    assert session.load_session(fresh, path), fresh.message_bar.text
    # drawn from the saved results, nothing trained again: the one job lays the saved run out
    assert [job.__name__ for job in submitted] == ["restored_job"]
    assert fresh.slide_title.title.text() == window.slide_title.title.text() != ""
    assert fresh.status_label.text() == window.status_label.text()
    assert fresh.progress_bar.value() == window.progress_bar.value() == 1000
    # the restored run is a timeline at its end, as the finished run was
    assert fresh.replay_dock.length == window.replay_dock.length > 1
    assert fresh.replay_dock.slider.value() == window.replay_dock.slider.value()


def test_screenshot_of_a_saved_session_redraws_the_shot(tmp_path):
    first, second, big, saved = (tmp_path / n for n in ("a.png", "b.png", "big.png", "s.lens"))
    done = screenshot("--preset", "fig3-free", "--steps", "40", "--out", str(first), "--save-session", str(saved))
    assert done.returncode == 0, done.stderr
    assert saved.is_file()
    again = screenshot("--session", str(saved), "--out", str(second))
    assert again.returncode == 0, again.stderr
    a, b = pixels(first), pixels(second)
    assert a.shape == b.shape == (960, 1600, 3)  # the default size
    assert a.std() > 20  # a real picture, not a blank grab
    # 99.3 % measured: the learned map's column is laid out 11 px shorter when drawn at once
    assert (a == b).all(-1).mean() >= 0.99, f"{100 * (a == b).all(-1).mean():.2f} % of pixels identical"
    # any size and theme: a slide re-rendered larger from the same session
    dark = screenshot("--session", str(saved), "--size", "1920x1200", "--theme", "dark", "--out", str(big))
    assert dark.returncode == 0, dark.stderr
    assert pixels(big).shape == (1200, 1920, 3)
    assert pixels(big).mean() < a.mean()  # the dark theme


@pytest.mark.parametrize(
    "argv",
    [
        ["--session", "no-such.lens", "--out", "x.png"],
        ["--session", "README.md", "--out", "x.png"],
        ["--preset", "fig3-free", "--session", "x.lens", "--out", "x.png"],
    ],
)
def test_a_bad_session_argument_is_one_line_and_exit_2(argv, tmp_path):
    done = screenshot(*[str(tmp_path / a) if a == "x.png" else a for a in argv])
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("preset", ["toolkit-plane", "toolkit-density"])
def test_the_toolkit_tab_reopens_what_it_drew(qtbot, window, tmp_path, monkeypatch, preset):
    """The toolkit's view state is saved and drawn again field by field, with no job run."""
    window.load_preset(preset)
    wait_until_idle(qtbot, window)
    ws = window.workspaces["landscape"]
    assert window.last_outcome == "succeeded" and ws.shown, window.message_bar.text
    path = tmp_path / "toolkit.lens"
    session.write_session(path, session.capture_state(window))
    fail_on_any_job_but_a_layout(monkeypatch)
    fresh = MainWindow()
    qtbot.addWidget(fresh)
    fresh.show()
    assert session.load_session(fresh, path), fresh.message_bar.text
    again = fresh.workspaces["landscape"]
    assert fresh.workspace is again and again.pages.currentIndex() == ws.pages.currentIndex()
    assert again.shown.keys() == ws.shown.keys()
    if preset == "toolkit-plane":
        plane = ws.result.plane  # the engine's arrays, not the saved copy
        np.testing.assert_array_equal(again.plane.image.image, ws.plane.image.image)
        np.testing.assert_array_equal(again.shown["plane"]["loss"], plane.loss)
        assert len(again.plane.isocurves) == len(ws.plane.isocurves) > 0
        assert again.plane.heatmap.getPlotItem().titleLabel.text == ws.plane.heatmap.getPlotItem().titleLabel.text
    else:
        x, y = again.density.curve.getData()
        x0, y0 = ws.density.curve.getData()
        np.testing.assert_array_equal(x, ws.result.density.grid)
        np.testing.assert_array_equal(y, y0)
        assert [line.value() for line in again.density.edges] == list(ws.result.density.extremes)


def test_a_window_whose_progress_bar_was_reset_saves_a_valid_session(window, tmp_path):
    """QProgressBar.reset() leaves value() at −1 (found by the state machine: save, then open)."""
    window.progress_bar.reset()
    assert window.progress_bar.value() == -1
    path = tmp_path / "reset.lens"
    session.write_session(path, session.capture_state(window))
    assert session.checked_state(session.read_session(path)).frame.progress == 0
