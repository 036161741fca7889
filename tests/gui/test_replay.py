"""The replay dock scrubs a finished run and every view follows through show_frame."""

import pytest

from .conftest import wait_until_idle


@pytest.fixture
def replay(qtbot, window, monkeypatch):
    window.load_preset("fig3-free", steps=30)
    wait_until_idle(qtbot, window)
    qtbot.waitUntil(lambda: window.replay_dock.slider.isEnabled(), timeout=5000)
    shown = []
    workspace = window.workspace
    original = workspace.show_frame
    monkeypatch.setattr(workspace, "show_frame", lambda i: (shown.append(i), original(i)))
    return window.replay_dock, shown


def test_scrub_step_play_loop(qtbot, window, replay):
    dock, shown = replay
    n = window.workspace.timeline_length()
    assert n > 2 and dock.slider.maximum() == n - 1
    dock.seek(0)
    dock.step(1)
    dock.step(-1)
    assert shown == [0, 1, 0]
    assert dock.label.text() == f"frame 1 / {n}"
    # one window for all: every run under Xvfb costs seconds
    _play_to_the_end_and_loop(qtbot, dock, shown)
    window.run(steps=2000)
    assert not dock.slider.isEnabled(), "a live run must own the views"
    window.cancel()


def _play_to_the_end_and_loop(qtbot, dock, shown):
    shown.clear()
    dock.speed.setCurrentIndex(dock.speed.count() - 1)  # fastest
    dock.play()
    assert dock.playing
    qtbot.waitUntil(lambda: not dock.playing, timeout=8000)
    assert shown[-1] == dock.slider.maximum() and shown == sorted(shown)
    dock.loop.setChecked(True)
    dock.play()
    qtbot.waitUntil(lambda: len(shown) > 3 and shown[-1] < shown[-2], timeout=8000)  # wrapped
    dock.toggle_play()
    assert not dock.playing


def test_the_slider_shows_the_frame_drawn_after_a_tab_switch(qtbot, window, replay):
    # It jumped to the end ("frame 31 / 31") while every view stayed at the frame scrubbed to.
    dock, _shown = replay
    n = window.workspace.timeline_length()
    dock.seek(5)
    curve = window.workspace.curves.loss_curve
    assert len(curve.yData) == 6
    window.tabs.setCurrentIndex(1)
    window.tabs.setCurrentIndex(0)
    assert dock.slider.value() == 5 and dock.label.text() == f"frame 6 / {n}"
    assert len(curve.yData) == 6, "the views left the frame the slider shows"
    window.run(steps=30)  # a new run is drawn whole: the slider shows its end
    wait_until_idle(qtbot, window)
    assert dock.slider.value() == dock.slider.maximum() == len(curve.yData) - 1
    # and a key frame captured now is the new run's end, not the frame scrubbed to in the old one
    assert window.controller.frames["topology"] == dock.slider.value()
