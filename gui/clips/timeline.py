"""Frame i of a clip → the state to show: run row, one camera per 3D view, panels, caption.

Pure arithmetic on the clip and the run's step numbers, so the same clip gives the same
frames on any machine at any speed. Between key frames the camera and the step ease in and
out; slow motion around sign flips is a reweighting of the run's rows, not a side effect.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Clip, KeyFrame


@dataclass(frozen=True)
class FrameState:
    row: int  # the run's recorded row to show
    cameras: tuple[dict, ...]  # per 3D view: azimuth, elevation, distance, center
    panels: frozenset  # layout sources shown
    caption: str  # the caption template (fields filled by the scene)


def ease(u: float, kind: str) -> float:
    u = min(max(u, 0.0), 1.0)
    if kind == "smoothstep":
        return u * u * (3 - 2 * u)
    if kind == "cubic":  # ease-in-out cubic: gentler start and stop than smoothstep
        return 4 * u**3 if u < 0.5 else 1 - (-2 * u + 2) ** 3 / 2
    return u


def lerp_angle(a: float, b: float, u: float) -> float:
    """Shortest way round: 350° → 10° turns 20°, not 340°."""
    return a + ((b - a + 180.0) % 360.0 - 180.0) * u


def lerp_camera(a: dict, b: dict, u: float) -> dict:
    return {
        "azimuth": lerp_angle(a["azimuth"], b["azimuth"], u),
        "elevation": a["elevation"] + (b["elevation"] - a["elevation"]) * u,
        # Geometric: a zoom from 2 to 8 passes 4 halfway, which is how zooming feels.
        "distance": a["distance"] * (b["distance"] / a["distance"]) ** u,
        "center": [x + (y - x) * u for x, y in zip(a["center"], b["center"])],
    }


class Timeline:
    """The clip's frames against one finished run.

    ``steps``: the run's recorded training steps; ``events``: steps of sign flips;
    ``default_cameras``: each view's own framing, which key frames override field by field.
    """

    def __init__(self, clip: Clip, steps: np.ndarray, events: list[int], default_cameras: list[dict]):
        self.clip = clip
        self.steps = np.asarray(steps)
        self.defaults = default_cameras
        self.sources = frozenset(clip.sources())
        self._rows = [self._row_of(kf.step) for kf in clip.keyframes]
        self._cameras = [self._cameras_of(kf) for kf in clip.keyframes]
        # Moving into row r costs weight[r] of "clip time": rows near an event cost more, so
        # the clip lingers there. Cumulative weights turn an eased fraction into a row.
        weight = np.ones(len(self.steps))
        timing = clip.timing
        if timing.slow_factor > 1 and events:
            near = np.min(np.abs(self.steps[:, None] - np.asarray(events)[None, :]), axis=1)
            weight[near <= timing.slow_steps] = timing.slow_factor
        self._cum = np.concatenate([[0.0], np.cumsum(weight[1:])])

    @property
    def frames(self) -> int:
        return self.clip.frames

    def time_of(self, i: int) -> float:
        return self.clip.seconds * i / (self.frames - 1)

    def state(self, i: int) -> FrameState:
        keys = self.clip.keyframes
        t = self.time_of(i)
        j = max(0, int(np.searchsorted([k.at for k in keys], t, side="right")) - 1)
        here = keys[j]
        if j == len(keys) - 1:
            return FrameState(self._rows[j], self._cameras[j], self._panels(here), here.caption)
        span = keys[j + 1].at - here.at
        u = ease((t - here.at) / span if span > 0 else 1.0, self.clip.timing.easing)
        row = self._between(self._rows[j], self._rows[j + 1], u)
        cameras = tuple(lerp_camera(a, b, u) for a, b in zip(self._cameras[j], self._cameras[j + 1]))
        return FrameState(row, cameras, self._panels(here), here.caption)

    # ------------------------------------------------------------------ pieces
    def _row_of(self, step) -> int:
        if step == "end" or len(self.steps) == 0:
            return max(len(self.steps) - 1, 0)
        return max(0, int(np.searchsorted(self.steps, step, side="right")) - 1)

    def _between(self, a: int, b: int, u: float) -> int:
        if a == b:
            return a
        lo, hi = min(a, b), max(a, b)
        f = u if b >= a else 1 - u
        target = self._cum[lo] + f * (self._cum[hi] - self._cum[lo])
        return int(min(max(np.searchsorted(self._cum, target - 1e-9, side="left"), lo), hi))

    def _cameras_of(self, kf: KeyFrame) -> tuple[dict, ...]:
        given = kf.camera
        out = []
        for i, default in enumerate(self.defaults):
            cam = given[min(i, len(given) - 1)] if isinstance(given, list) else (given or {})
            merged = dict(default) | {k: v for k, v in cam.items()}
            merged["center"] = [float(x) for x in merged["center"]]
            out.append(merged)
        return tuple(out)

    def _panels(self, kf: KeyFrame) -> frozenset:
        return self.sources if kf.panels is None else frozenset(kf.panels)
