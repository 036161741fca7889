"""Recording: a live run to MP4, the headless `record` command at 1080p, GIF and PNG frames."""

import json

import imageio.v3 as iio
import numpy as np
import pytest

from engine.core.errors import EngineInputError
from gui import capture, headless, presets

from .conftest import wait_until_idle


def _frame_changes(frames: np.ndarray) -> np.ndarray:
    return np.array([np.abs(a.astype(int) - b.astype(int)).mean() for a, b in zip(frames, frames[1:])])


def test_live_recording_of_a_running_preset(qtbot, window, tmp_path):
    out = tmp_path / "live.mp4"
    window.resize(800, 480)  # small (down to the minimum): the encoder shares two cores with the run
    window.load_preset("fig3-free", run=False)
    encoder = window.recording.start(
        source="Whole window", size="Source's own size", fps=30, when="live", seconds=0, out=str(out)
    )
    assert window.recording.indicator.isVisible()
    # A long run, filmed until it has given a fixed number of distinct frames rather than for
    # a fixed time, so the count does not depend on how fast this machine trains.
    window.run(steps=100_000)
    recorder = window.recording.recorder
    qtbot.waitUntil(lambda: recorder.distinct >= 4, timeout=120000)
    window.recording.stop()
    window.cancel()
    wait_until_idle(qtbot, window, 120000)
    qtbot.waitUntil(lambda: not encoder.writing, timeout=60000)  # it may finish before we look
    assert encoder.error is None
    frames = iio.imread(out)
    # Grabs are spaced by 1/BUDGET of their cost (≥ 1/30 s here) after the first, so every grab
    # but perhaps the first one has a frame of its own at 30 fps.
    assert len(frames) == recorder.frames >= recorder.distinct - 1
    width, height = recorder.source.size
    assert frames.shape[1:] == (height, width, 3)
    assert all(f.std() > 4 for f in frames), "a recorded frame is blank"
    # Every change in the video is a distinct grab (repeats only fill time); a running
    # preset changes between grabs, so most distinct grabs show as a change.
    moves = (_frame_changes(frames) > 0.05).sum()
    # Repeats differ by ≤ 0.002 after encoding, grabs by 0.05–25. After a big change H.264 can
    # take a frame to settle, so a repeat may count as one more change (seen: 5 for 4 grabs).
    # Frames written far outnumber the grabs: repeats that differed would count many more.
    assert 2 * recorder.distinct >= moves >= (recorder.distinct - 1) // 2, (moves, recorder.distinct)
    # The summary arrives with the encoder's queued "finished", just after it stops writing.
    qtbot.waitUntil(lambda: "distinct frames" in window.message_bar.text, timeout=10000)
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


def test_replay_from_the_record_dialog_is_a_cancellable_clip_job(qtbot, window, tmp_path):
    window.load_preset("fig3-free", steps=30)
    wait_until_idle(qtbot, window, 120000)
    qtbot.waitUntil(lambda: window.workspace.timeline_length() > 1, timeout=10000)
    job = window.recording.start(
        source="Whole window",
        size="Source's own size",
        fps=10,
        when="orbit",
        seconds=1.0,
        out=str(tmp_path / "orbit.gif"),
    )
    assert job is not None and window.clip_dock.isVisible()
    with qtbot.waitSignal(job.finished, timeout=120000):
        pass
    frames = iio.imread(tmp_path / "orbit.gif")[..., :3]
    assert len(frames) == 11 and (_frame_changes(frames) > 0.05).all()  # the camera orbits


def test_bad_output_is_refused_before_any_work(tmp_path):
    with pytest.raises(EngineInputError, match="mp4"):
        headless.record_preset("fig3-free", str(tmp_path / "x.avi"), (64, 64), 5, 1)
    with pytest.raises(EngineInputError, match="does not exist"):
        capture.check_output(tmp_path / "missing" / "x.mp4")


def _dark_columns(image) -> np.ndarray:
    from gui.capture import image_to_array

    pixels = image_to_array(image)
    return np.nonzero((pixels.min(axis=2) < 128).any(axis=0))[0]


def test_a_3d_label_near_the_right_edge_is_painted_whole_inside_the_picture(qapp):
    """A render's label that would run past the picture's right edge ends inside it, whole (the
    3D views, the clips and the captures paint labels through gl_cells.paint_labels); one that
    fits stays where its point puts it."""
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QColor, QFont, QImage, QPainter

    from gui.rendering.gl_cells import LABEL_MARGIN, paint_labels

    font = QFont()
    font.setPointSize(14)

    def painted(x: float, through_helper: bool = True) -> QImage:
        image = QImage(240, 60, QImage.Format.Format_RGB888)
        image.fill(Qt.GlobalColor.white)
        painter = QPainter(image)
        label = (QPointF(x, 40), "locked: v > 0", font, QColor("black"))
        if through_helper:
            paint_labels(painter, [label], image.width())
        else:
            painter.setFont(font)
            painter.setPen(label[3])
            painter.drawText(label[0], label[1])
        painter.end()
        return image

    whole = _dark_columns(painted(10))
    near_edge = _dark_columns(painted(200))
    assert near_edge.max() < 240 - LABEL_MARGIN + 1, "the label runs past the right edge"
    assert len(near_edge) == len(whole), "the label was cut"
    assert painted(10) == painted(10, through_helper=False), "a label that fits was moved"
