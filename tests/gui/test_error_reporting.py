"""Exceptions nobody caught still reach the window's message bar, and the window stays usable."""

import threading

import pytest

from .conftest import wait_until_idle

# pytest-qt would otherwise take these exceptions for the test's own failures.
pytestmark = pytest.mark.qt_no_exception_capture


@pytest.fixture
def topology(window):
    window.show_workspace("topology")
    return window.workspaces["topology"]


def test_an_exception_while_drawing_shows_in_the_message_bar(window, qtbot, monkeypatch, topology):
    def broken_draw(partial):
        raise RuntimeError("draw exploded")

    monkeypatch.setattr(topology, "show_partial", broken_draw)
    monkeypatch.setattr(topology, "show_result", broken_draw)
    window.load_preset("fig3-free", steps=5)
    qtbot.waitUntil(lambda: "draw exploded" in window.message_bar.text, timeout=30000)
    wait_until_idle(qtbot, window)
    assert window.run_action.isEnabled()


def test_an_exception_in_reset_shows_and_the_next_run_works(window, qtbot, monkeypatch, topology):
    real_reset = topology.reset
    monkeypatch.setattr(topology, "reset", lambda: (_ for _ in ()).throw(ValueError("reset exploded")))
    window.reset_action.trigger()
    qtbot.waitUntil(lambda: "reset exploded" in window.message_bar.text, timeout=5000)
    monkeypatch.setattr(topology, "reset", real_reset)
    window.load_preset("fig3-free", steps=5)
    wait_until_idle(qtbot, window)
    assert window.last_outcome == "succeeded"


def test_an_exception_in_a_python_thread_reaches_the_window(window, qtbot):
    def work():
        raise KeyError("loader thread exploded")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: "loader thread exploded" in window.message_bar.text, timeout=5000)
