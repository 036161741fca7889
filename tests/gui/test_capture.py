"""Recording: a live run to MP4, the headless `record` command at 1080p, GIF and PNG frames."""
import json

import imageio.v3 as iio
import numpy as np
import pytest

from engine.errors import EngineInputError
from gui import capture, headless, presets

from .conftest import wait_until_idle


def _frame_changes(frames: np.ndarray) -> np.ndarray:
    return np.array([np.abs(a.astype(int) - b.astype(int)).mean() for a, b in zip(frames, frames[1:])])


def test_live_recording_of_a_running_preset(qtbot, window, tmp_path):
    out = tmp_path / "live.mp4"
    window.resize(800, 480)  # small (down to the minimum): the encoder shares two cores with the run
    window.load_preset("fig3-free", run=False)
    encoder = window.recording.start(source="Whole window", size="Source's own size", fps=5,
                                     when="live", seconds=0, out=str(out))
    assert window.recording.indicator.isVisible()
    # A long run, filmed for a fixed number of frames rather than a fixed time, so the
    # count does not depend on how fast this machine trains; every frame moves.
    window.run(steps=100_000)
    qtbot.waitUntil(lambda: window.recording.recorder.frames >= 5, timeout=120000)
    window.recording.stop()
    window.cancel()
    wait_until_idle(qtbot, window, 120000)
    qtbot.waitUntil(lambda: not encoder.writing, timeout=60000)  # it may finish before we look
    assert encoder.error is None
    frames = iio.imread(out)
    assert len(frames) == window.recording.recorder.frames >= 3
    width, height = window.recording.recorder.source.size
    assert frames.shape[1:] == (height, width, 3)
    assert all(f.std() > 4 for f in frames), "a recorded frame is blank"
    changes = _frame_changes(frames)
    assert (changes > 0).mean() >= 0.6, f"too many frozen frames: {changes}"
    assert not window.recording.indicator.isVisible()


def test_record_command_writes_1080p(qapp, tmp_path, monkeypatch):
    # A short copy of the preset keeps the run (which precedes the filming) brief.
    preset = json.loads((presets.PRESET_DIR / "fig3-free.json").read_text())
    preset["parameters"]["optimizer"]["steps"] = 40
    (tmp_path / "short.json").write_text(json.dumps(preset))
    monkeypatch.setattr(presets, "PRESET_DIR", tmp_path)
    out = tmp_path / "clip.mp4"
    assert headless.record_preset("short", str(out), (1920, 1080), 10, 0.6, orbit=True) == 0
    frames = iio.imread(out)
    assert frames.shape == (7, 1080, 1920, 3)  # 0.6 s at 10 fps, first and last key frame included
    assert frames.std() > 4 and (_frame_changes(frames) > 0.05).all()  # the camera orbits


@pytest.mark.parametrize("name", ["orbit.gif", "frames"])
def test_orbit_to_gif_and_png_frames(qtbot, window, tmp_path, name):
    view = window.workspace.gl_views()[0]
    azimuth = view.opts["azimuth"]
    encoder = capture.Encoder(tmp_path / name, fps=8)
    source = capture.FrameSource(view, (160, 120), gl=True)
    # 60° steps: Q(c) is round and the grid square, so 90° turns could look alike.
    capture.render_clip(source, encoder, 6, capture.clip_poser(window.workspace, 6, True, False))
    encoder.close(wait=True)
    assert encoder.error is None
    if name == "frames":
        files = sorted((tmp_path / name).glob("frame_*.png"))
        frames = np.stack([iio.imread(f) for f in files])
    else:
        frames = iio.imread(tmp_path / name)[..., :3]
    assert frames.shape == (6, 120, 160, 3)
    assert (_frame_changes(frames) > 0.05).all()
    assert view.opts["azimuth"] == pytest.approx(azimuth)  # the camera ends where it began


def test_bad_output_is_refused_before_any_work(tmp_path):
    with pytest.raises(EngineInputError, match="mp4"):
        headless.record_preset("fig3-free", str(tmp_path / "x.avi"), (64, 64), 5, 1)
    with pytest.raises(EngineInputError, match="does not exist"):
        capture.check_output(tmp_path / "missing" / "x.mp4")
