"""Clip timing without a window: easing, shortest-way angles, slow motion around events."""

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from gui.clips.model import parse_clip, story_clip
from gui.clips.timeline import Timeline, ease, lerp_angle

CAMERA = [{"azimuth": 40.0, "elevation": 18.0, "distance": 8.8, "center": [0.0, 0.0, 0.0]}]


def test_easing_and_angles():
    for kind in ("smoothstep", "cubic", "linear"):
        assert ease(0, kind) == 0 and ease(1, kind) == 1 and ease(0.5, kind) == pytest.approx(0.5)
    assert ease(0.1, "smoothstep") < 0.1  # eases in
    assert lerp_angle(350, 10, 0.5) == pytest.approx(360)  # through 0°, not back round
    assert lerp_angle(10, 350, 0.5) == pytest.approx(0)


def _timeline(slow: bool) -> Timeline:
    data = story_clip("fig3-free", (320, 180), 10, 4.0).to_json()
    data["timing"] = {"easing": "linear", "slow_events": {"factor": 5, "steps": 10} if slow else {}}
    if not slow:
        del data["timing"]["slow_events"]
    return Timeline(parse_clip(data), np.arange(201), [100], CAMERA)


def test_slow_motion_spends_more_frames_near_events():
    fast, slow = _timeline(False), _timeline(True)
    near = lambda tl: sum(abs(tl.state(i).row - 100) <= 10 for i in range(tl.frames))
    assert near(slow) >= 3 * near(fast)
    rows = [slow.state(i).row for i in range(slow.frames)]
    assert rows[0] == 0 and rows[-1] == 200 and rows == sorted(rows)


def test_cameras_follow_key_frames():
    tl = _timeline(False)
    first, last = tl.state(0).cameras[0], tl.state(tl.frames - 1).cameras[0]
    assert first["azimuth"] == pytest.approx(40) and last["azimuth"] == pytest.approx(110)
    assert first["distance"] == pytest.approx(8.8)  # the view's own framing where not given


def test_round_trip_and_errors():
    clip = story_clip("fig3-free")
    assert parse_clip(clip.to_json()) == clip
    with pytest.raises(EngineInputError, match="exactly one"):
        parse_clip(clip.to_json() | {"keyframes": [{"step": 3}]})
