"""Sessions round-trip exactly; damaged or foreign files are refused and change nothing."""

import zipfile

import numpy as np
import pytest
from PySide6.QtCore import QSettings

from gui import session
from gui.main_window import MainWindow

from .conftest import wait_until_idle


@pytest.fixture(autouse=True)
def private_settings(tmp_path):
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "cfg"))
    QSettings().clear()


def assert_same(a, b, where="state"):
    assert type(a) is type(b) or isinstance(a, np.ndarray), f"{where}: {type(a)} vs {type(b)}"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    else:
        assert a == b, where


@pytest.fixture
def saved(qtbot, window, tmp_path):
    window.load_preset("fig3-free", steps=25)
    window.workspace.parameters["init", "seed"] = 3  # the preset sets 0; a change must survive
    wait_until_idle(qtbot, window)
    window.workspace.gl_views()[0].setCameraPosition(distance=7.5, elevation=40, azimuth=123)
    path = tmp_path / "talk.lens"
    window.save_session(str(path))
    assert path.exists() and not list(tmp_path.glob("*.tmp")), "write was not atomic"
    return path


def test_session_round_trips_into_a_fresh_window(qtbot, window, saved):
    before = session.capture_state(window)
    assert before["workspaces"]["topology"]["results"], "the workspace saved no results"
    written = session.read_session(saved)["frame"]  # the status bar now says "Saved session …"
    assert written["title"].startswith("Fig. 3") and written["progress"] == 1000
    fresh = MainWindow()
    qtbot.addWidget(fresh)
    fresh.show()
    fresh.open_session(str(saved))
    assert fresh.message_bar.text.startswith("Opened"), fresh.message_bar.text
    drawing = session.capture_state(fresh)  # its run is laid out and drawn on the setup lane
    wait_until_idle(qtbot, fresh)
    after = session.capture_state(fresh)
    assert_same(drawing, after)  # saved again while it is drawn: as it was opened, cameras too
    assert after["frame"]["status"] == written["status"] != before["frame"]["status"]
    before["frame"]["status"] = after["frame"]["status"]
    assert_same(before, after)
    assert fresh.workspace.parameters["init", "seed"] == 3
    assert fresh.workspace.gl_views()[0].opts["azimuth"] == 123
    assert session.recent_files() == [str(saved.resolve())]
    assert fresh.replay_dock.length == window.workspace.timeline_length()


def _damage(bad, data: bytes, how: str):
    if how == "truncated":
        bad.write_bytes(data[: len(data) // 2])
    elif how == "text":
        bad.write_text("hello")
    else:
        fields = (
            '"format": "something-else"' if how == "foreign zip" else f'"format": "{session.FORMAT}", "version": 99'
        )
        with zipfile.ZipFile(bad, "w") as z:
            z.writestr("manifest.json", "{" + fields + "}")


def test_damaged_sessions_are_refused_and_change_nothing(qtbot, window, saved):
    bad = saved.with_name("bad.lens")
    before = session.capture_state(window)
    for how in ("truncated", "foreign zip", "text", "newer version"):
        _damage(bad, saved.read_bytes(), how)
        window.message_bar.clear()
        window.open_session(str(bad))
        assert "bad.lens" in window.message_bar.text, f"{how}: {window.message_bar.text!r}"
        assert_same(before, session.capture_state(window))
    assert str(bad.resolve()) not in session.recent_files()
    window.run(steps=3)  # the app still works
    wait_until_idle(qtbot, window)


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda t: t.pop("W1"), "W1"),
        (lambda t: t.update(W1=np.ones(t["W1"].shape, dtype=np.int64)), "W1"),
        (lambda t: t.update(loss=t["loss"][:-1]), "loss"),
        (lambda t: t.update(W1=t["W1"] + 1j), "W1"),
    ],
    ids=["missing W1", "integer W1", "loss shorter than step", "complex W1"],
)
def test_sessions_with_bad_trajectories_are_refused_whole(qtbot, window, saved, damage, words):
    # The trajectory is checked (names, dtypes, lengths) before anything is applied: the camera
    # the session would move stays where it was, and the message names the array.
    state = session.read_session(saved)
    damage(state["workspaces"]["topology"]["results"]["trajectory"])
    bad = saved.with_name("bad.lens")
    session.write_session(bad, state)
    view = window.workspaces["topology"].gl_views()[0]
    view.setCameraPosition(distance=11.0)
    before = session.capture_state(window)
    window.message_bar.clear()
    assert window.open_session(str(bad)) is None
    assert "bad.lens" in window.message_bar.text and words in window.message_bar.text, window.message_bar.text
    assert view.opts["distance"] == pytest.approx(11.0)
    assert_same(before, session.capture_state(window))


def test_a_session_whose_panel_holds_a_bad_value_is_refused_whole(qtbot, window, saved):
    # The panel goes through the same checks as a preset's, before anything is applied; the
    # results carry no second copy of it that could slip past them.
    state = session.read_session(saved)
    assert "parameters" not in state["workspaces"]["topology"]["results"]
    optimizer = state["workspaces"]["topology"]["parameters"]["children"]["optimizer"]["children"]
    optimizer["lr"]["value"] = -0.5
    bad = saved.with_name("bad.lens")
    session.write_session(bad, state)
    before = session.capture_state(window)
    window.message_bar.clear()
    window.open_session(str(bad))
    text = window.message_bar.text
    assert "bad.lens" in text and "lr" in text, text
    assert_same(before, session.capture_state(window))


def test_a_session_saved_with_text_run_would_refuse_opens_again(qtbot, window, tmp_path):
    # The panel's text fields are read at Run; a session saved with one holding "abc" could not
    # be opened (it re-made the initial weights from them), and the results it held were lost.
    window.load_preset("fig3-free", steps=25)
    wait_until_idle(qtbot, window)
    window.workspace.parameters["init", "c"] = "abc"
    path = tmp_path / "typed.lens"
    window.save_session(str(path))
    fresh = MainWindow()
    qtbot.addWidget(fresh)
    fresh.show()
    fresh.open_session(str(path))
    assert fresh.message_bar.text.startswith("Opened"), fresh.message_bar.text
    assert fresh.workspace.parameters["init", "c"] == "abc"
    assert_same(window.workspace.session_state(), fresh.workspace.session_state())
