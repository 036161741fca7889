"""Headless commands build only what they show (issue 26): ``record`` films the clip with the
controller and the preset's workspace alone, frame for frame the one the window's path films;
``screenshot --session`` builds only the saved tab; cancel-all and closing end every worker."""

import json
import threading

import imageio.v3 as iio
import numpy as np
import pytest

from gui import headless, presets
from gui.clips.render import ClipRenderer, render_to_file
from gui.clips.scene import scene_for, story_for
from gui.main_window import MainWindow

SIZE, FPS, SECONDS = (480, 272), 5, 1.6  # 9 frames: both ends, the holds and the walk between

# Short copies of the two story presets: the comparison needs each run twice.
SHORTER = {
    "fig3-free": {"optimizer": {"steps": 120}},
    "nonattr-fig3": {"slices": {"K": 300}, "construction": {"restarts": 4}, "path": {"points": 11}},
}


@pytest.fixture
def short_presets(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    folder.mkdir()
    for name, change in SHORTER.items():
        preset = json.loads((presets.PRESET_DIR / f"{name}.json").read_text())
        for group, values in change.items():
            preset["parameters"][group].update(values)
        (folder / f"{name}.json").write_text(json.dumps(preset))
    monkeypatch.setattr(presets, "PRESET_DIR", folder)


def record_with_window(preset: str, out) -> None:
    """The clip as ``record`` made it before: the whole window runs the preset, the scene
    reads its workspaces."""
    clip = story_for(preset, SIZE, FPS, SECONDS)
    app, window = headless.open_window((1600, 960))
    try:
        headless.settle()
        headless.run_preset(window, preset, steps=None)
        render_to_file(ClipRenderer(clip, scene_for(window.controller.workspaces, preset)), out)
    finally:
        headless.close_window(window)


def no_window(*args, **kwargs):
    raise AssertionError("record built the main window")


@pytest.mark.parametrize("preset", sorted(SHORTER))
def test_record_films_the_windows_clip_without_the_window(qapp, short_presets, tmp_path, monkeypatch, preset):
    record_with_window(preset, tmp_path / "window.mp4")
    monkeypatch.setattr(MainWindow, "__init__", no_window)
    assert headless.record_preset(preset, str(tmp_path / "alone.mp4"), SIZE, FPS, SECONDS) == 0

    alone, window = iio.imread(tmp_path / "alone.mp4"), iio.imread(tmp_path / "window.mp4")
    assert alone.shape == window.shape == (round(FPS * SECONDS) + 1, SIZE[1], SIZE[0], 3)
    # Not blank: each frame has the theme's background and drawn lines and text on it.
    per_frame = alone.reshape(len(alone), -1)
    assert (per_frame.std(axis=1) > 10).all() and (np.ptp(per_frame, axis=1) > 200).all()
    # The same frames. x264 is deterministic, so equal renders decode to equal pixels; what
    # differs comes from the render. Anti-aliased edges may round one level differently (the
    # window's GL context vs. its own); a view drawn at another size or pose, a missing plot or
    # a stale caption changes whole regions, thousands of pixels by tens of levels.
    difference = np.abs(alone.astype(int) - window.astype(int))
    assert (difference <= 2).mean() >= 0.999, f"{(difference > 2).mean():.2%} of pixels differ by more than 2"
    assert difference.mean() < 0.1


def test_cancel_all_and_shutdown_end_a_clip_render_and_its_encoder(qtbot, window, tmp_path):
    """With a live recording and a clip rendering, their encoders writing, cancel-all ends
    every one of them (no file), and a second clip, cut off by closing the window, ends as the
    window closes."""
    window.load_preset("fig3-free", steps=30)
    qtbot.waitUntil(lambda: not window.computing, timeout=120000)
    before = set(threading.enumerate())
    window.recording.start("Whole window", "Source's own size", 10, "live", 60.0, str(tmp_path / "live.mp4"))
    live = window.recording.recorder
    qtbot.waitUntil(lambda: live.distinct >= 1, timeout=60000)
    assert live in window.controller.workers

    def start_clip(name):
        job = window.recording.start("Whole window", "Source's own size", 10, "replay", 2.0, str(tmp_path / name))
        assert job is not None and job.active
        qtbot.waitUntil(lambda: job.encoder.done >= 1, timeout=60000)  # rendering, and the encoder writing
        assert job in window.controller.workers and window.controller.busy
        return job

    job = start_clip("cancelled.mp4")
    with qtbot.waitSignal(job.cancelled, timeout=10000):
        window.controller.cancel_all()
    assert window.controller.wait(10000) and not window.controller.workers and not window.controller.busy
    assert not live.busy and not job.busy
    assert not (tmp_path / "cancelled.mp4").exists() and not (tmp_path / "live.mp4").exists()

    job = start_clip("closed.mp4")
    encoder_thread = job.encoder._thread
    window.close()
    assert not encoder_thread.is_alive() and not window.controller.busy
    assert set(threading.enumerate()) <= before, "a worker's thread outlived the window"
    assert not (tmp_path / "closed.mp4").exists()


def test_a_session_screenshot_builds_only_the_tab_it_shows(qtbot, window, tmp_path, monkeypatch):
    """The toolkit tab's saved plane is drawn again by a window that built neither other tab,
    and gives the picture of the window that saved it."""
    from gui import session
    from gui.capture import grab_widget, image_to_array
    from gui.workspaces.minima import MinimaWorkspace
    from gui.workspaces.topology import TopologyWorkspace

    window.load_preset("toolkit-plane")
    qtbot.waitUntil(lambda: not window.computing, timeout=240000)
    headless.settle()
    saved, out = tmp_path / "plane.lens", tmp_path / "again.png"
    session.write_session(saved, session.capture_state(window))
    shot = image_to_array(grab_widget(window))
    for kind in (TopologyWorkspace, MinimaWorkspace):
        monkeypatch.setattr(kind, "__init__", no_tab)
    assert headless.screenshot(None, str(out), (1600, 960), None, session_in=str(saved)) == 0
    again = iio.imread(out)[..., :3]
    assert again.shape == shot.shape == (960, 1600, 3)
    same = (again == shot).all(axis=-1).mean()
    assert same >= 0.995, f"{100 * same:.2f} % of pixels identical"


def no_tab(*args, **kwargs):
    raise AssertionError("built a tab the session does not show")
