"""A clip as plain data, read from and written to JSON, with one-line errors for bad files.

Example::

    {"preset": "fig3-free", "size": [1920, 1080], "fps": 30, "title": "Fig. 3, free",
     "layout": [{"source": "neurons", "rect": [0, 0.08, 1, 0.56]},
                {"source": "loss", "rect": [0, 0.64, 1, 0.24]},
                {"source": "caption", "rect": [0, 0.88, 1, 0.12]}],
     "keyframes": [{"at": 0, "step": 0, "camera": {"azimuth": 40, "elevation": 18}},
                   {"at": 6, "step": "end", "camera": {"azimuth": 130, "elevation": 25},
                    "caption": "step {step}: {c}"}],
     "timing": {"easing": "smoothstep", "slow_events": {"factor": 4, "steps": 25}}}

Rects are fractions of the frame (x, y, width, height). A key frame's ``at`` is in seconds
(or ``frame``, an index at the clip's fps); ``step`` is a training step or "end"; a missing
camera field keeps the view's default framing; ``panels`` lists the sources shown (default:
all); ``caption`` may use {step}, {last_step}, {c}, {loss}, {events}. A clip of a minima
(paper B) preset lays out "path", "slices", "descent" and "spectrum"; its ``step`` counts the
rows of the walk along λ and its caption may use {lam}, {where}, {loss}, {hmin}, {dips}.
"""

from __future__ import annotations

import dataclasses
import json
import math
import string
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.errors import EngineInputError

GL_SOURCE = "neurons"  # every 3D view of the workspace, as a grid
TEXT_SOURCES = ("title", "caption")
# What each workspace's scene offers (gui.clips.scene, gui.clips.minima_scene). For the minima
# (paper B) presets a key frame's "step" counts the rows of the walk along λ: 0 is the point
# inside I, "end" the saddle.
SOURCES = {
    "topology": (GL_SOURCE, "loss", "drift", "invariants") + TEXT_SOURCES,
    "minima": ("path", "slices", "descent", "spectrum") + TEXT_SOURCES,
}
CAPTION_FIELDS = {
    "topology": ("step", "last_step", "c", "loss", "events"),
    "minima": ("lam", "where", "loss", "hmin", "dips"),
}
CAMERA_FIELDS = ("azimuth", "elevation", "distance", "center")
EASINGS = ("smoothstep", "cubic", "linear")


def source_names(workspace: str = "topology") -> tuple[str, ...]:
    return SOURCES[workspace]


@dataclass(frozen=True)
class Cell:
    source: str
    rect: tuple[float, float, float, float]


@dataclass(frozen=True)
class KeyFrame:
    at: float  # seconds from the clip's start
    step: int | str = "end"  # training step, or "end"
    camera: dict | list | None = None  # one camera for every view, or one per view
    panels: tuple[str, ...] | None = None  # None: every source of the layout
    caption: str = ""


@dataclass(frozen=True)
class Timing:
    easing: str = "smoothstep"
    slow_factor: float = 1.0  # time runs this many times slower ...
    slow_steps: int = 0  # ... within this many training steps of a sign flip


@dataclass(frozen=True)
class Clip:
    preset: str
    size: tuple[int, int] = (1920, 1080)
    fps: int = 30
    title: str = ""
    layout: tuple[Cell, ...] = ()
    keyframes: tuple[KeyFrame, ...] = ()
    timing: Timing = field(default_factory=Timing)

    @property
    def seconds(self) -> float:
        return self.keyframes[-1].at

    @property
    def frames(self) -> int:
        """Frame 0 shows the first key frame and the last frame the last one."""
        return max(2, round(self.seconds * self.fps) + 1)

    def sources(self) -> list[str]:
        return [cell.source for cell in self.layout]

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["size"] = list(self.size)
        data["layout"] = [{"source": c.source, "rect": list(c.rect)} for c in self.layout]
        data["keyframes"] = [
            {k: v for k, v in dataclasses.asdict(kf).items() if v not in (None, "")} for kf in self.keyframes
        ]
        for kf in data["keyframes"]:
            if "panels" in kf:
                kf["panels"] = list(kf["panels"])
        data["timing"] = {"easing": self.timing.easing}
        if self.timing.slow_factor != 1.0:
            data["timing"]["slow_events"] = {"factor": self.timing.slow_factor, "steps": self.timing.slow_steps}
        return data


# ---------------------------------------------------------------- reading
def load_clip(path) -> Clip:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise EngineInputError(f"clip {path}: cannot read it ({error.strerror})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise EngineInputError(
            f"clip {path}: not valid JSON ({error.msg}, line {error.lineno} column {error.colno})"
        ) from None
    try:
        return parse_clip(data)
    except EngineInputError as error:
        raise EngineInputError(f"clip {path}: {error}") from None


def save_clip(clip: Clip, path) -> None:
    Path(path).write_text(json.dumps(clip.to_json(), indent=2, ensure_ascii=False) + "\n")


def parse_clip(data) -> Clip:
    """Validate JSON data and return the Clip; EngineInputError names the first problem."""
    from ..presets import preset_named

    obj = _object(data, "the clip", ("preset", "size", "fps", "title", "layout", "keyframes", "timing"))
    preset = obj.get("preset")
    if not isinstance(preset, str):
        raise EngineInputError('needs "preset": the name of a preset')
    workspace = preset_named(preset).workspace
    if workspace not in SOURCES:
        raise EngineInputError(f"preset {preset!r} belongs to the {workspace} workspace, which has no clips")
    size = obj.get("size", [1920, 1080])
    if not (
        isinstance(size, list)
        and len(size) == 2
        and all(_is_int(v) for v in size)
        and 16 <= size[0] <= 7680
        and 16 <= size[1] <= 4320
    ):
        raise EngineInputError(f"size {size!r} must be [width, height] within 16..7680 x 16..4320")
    if size[0] % 2 or size[1] % 2:
        raise EngineInputError(f"size {size!r} must be even in both directions (H.264 needs it)")
    fps = obj.get("fps", 30)
    if not (_is_int(fps) and 1 <= fps <= 120):
        raise EngineInputError(f"fps {fps!r} must be a whole number in 1..120")
    title = obj.get("title", "")
    if not isinstance(title, str):
        raise EngineInputError("title must be text")
    layout = tuple(_cell(c, i, workspace) for i, c in enumerate(_list(obj.get("layout"), "layout")))
    names = [c.source for c in layout]
    keyframes = tuple(
        _keyframe(k, i, fps, names, CAPTION_FIELDS[workspace])
        for i, k in enumerate(_list(obj.get("keyframes"), "keyframes"))
    )
    for i, (a, b) in enumerate(zip(keyframes, keyframes[1:])):
        if b.at < a.at:
            raise EngineInputError(f"key frame {i + 2} comes before key frame {i + 1} (at {b.at:g} s < {a.at:g} s)")
    if keyframes[-1].at <= 0:
        raise EngineInputError("the last key frame must come after 0 s: the clip has no length")
    if keyframes[-1].at > 3600:
        raise EngineInputError("a clip may last at most 3600 s")
    return Clip(
        preset, (int(size[0]), int(size[1])), int(fps), title, layout, keyframes, _timing(obj.get("timing", {}))
    )


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _object(data, what: str, allowed) -> dict:
    if not isinstance(data, dict):
        raise EngineInputError(f"{what} must be a JSON object")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise EngineInputError(f"{what} has unknown field {unknown[0]!r}; known: {', '.join(allowed)}")
    return data


def _list(data, what: str) -> list:
    if not isinstance(data, list) or not data:
        raise EngineInputError(f"{what} must be a non-empty list")
    return data


def _cell(data, i: int, workspace: str) -> Cell:
    obj = _object(data, f"layout entry {i + 1}", ("source", "rect"))
    source = obj.get("source")
    if source not in source_names(workspace):
        raise EngineInputError(
            f"layout entry {i + 1}: unknown panel {source!r}; choose from {', '.join(source_names(workspace))}"
        )
    rect = obj.get("rect")
    if not (
        isinstance(rect, list)
        and len(rect) == 4
        and all(_is_number(v) for v in rect)
        and rect[0] >= 0
        and rect[1] >= 0
        and rect[2] > 0
        and rect[3] > 0
        and rect[0] + rect[2] <= 1 + 1e-9
        and rect[1] + rect[3] <= 1 + 1e-9
    ):
        raise EngineInputError(
            f"layout entry {i + 1} ({source}): rect {rect!r} must be "
            "[x, y, width, height] as fractions inside the frame"
        )
    return Cell(source, tuple(float(v) for v in rect))


def _keyframe(data, i: int, fps: int, names: list[str], caption_fields: tuple[str, ...]) -> KeyFrame:
    what = f"key frame {i + 1}"
    obj = _object(data, what, ("at", "frame", "step", "camera", "panels", "caption"))
    if ("at" in obj) == ("frame" in obj):
        raise EngineInputError(f'{what} needs exactly one of "at" (seconds) or "frame"')
    at = obj["at"] if "at" in obj else obj["frame"]
    if not (_is_number(at) and at >= 0) or ("frame" in obj and not _is_int(at)):
        raise EngineInputError(f"{what}: time {at!r} must be a number ≥ 0")
    seconds = float(at) if "at" in obj else at / fps
    step = obj.get("step", "end")
    if not (step == "end" or (_is_int(step) and step >= 0)):
        raise EngineInputError(f'{what}: step {step!r} must be a training step ≥ 0 or "end"')
    camera = obj.get("camera")
    for j, cam in enumerate(camera if isinstance(camera, list) else [camera] if camera is not None else []):
        _camera(cam, f"{what}, camera {j + 1}")
    panels = obj.get("panels")
    if panels is not None:
        if not isinstance(panels, list):
            raise EngineInputError(f"{what}: panels must be a list of layout sources")
        for p in panels:
            if p not in names:
                raise EngineInputError(f"{what}: unknown panel {p!r}; the layout has {', '.join(names)}")
        panels = tuple(panels)
    caption = obj.get("caption", "")
    if not isinstance(caption, str):
        raise EngineInputError(f"{what}: caption must be text")
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(caption) if f is not None]
    except ValueError as error:
        raise EngineInputError(f"{what}: caption {caption!r}: {error}") from None
    for f in fields:
        if f not in caption_fields:
            raise EngineInputError(
                f"{what}: caption field {{{f}}} is unknown; use {', '.join('{' + n + '}' for n in caption_fields)}"
            )
    return KeyFrame(seconds, step, camera, panels, caption)


def _camera(data, what: str) -> None:
    obj = _object(data, what, CAMERA_FIELDS)
    for key in ("azimuth", "elevation", "distance"):
        if key in obj and not _is_number(obj[key]):
            raise EngineInputError(f"{what}: {key} {obj[key]!r} must be a number")
    if "distance" in obj and obj["distance"] <= 0:
        raise EngineInputError(f"{what}: distance must be > 0")
    center = obj.get("center", [0, 0, 0])
    if not (isinstance(center, list) and len(center) == 3 and all(_is_number(v) for v in center)):
        raise EngineInputError(f"{what}: center {center!r} must be [x, y, z]")


def _timing(data) -> Timing:
    obj = _object(data, "timing", ("easing", "slow_events"))
    easing = obj.get("easing", "smoothstep")
    if easing not in EASINGS:
        raise EngineInputError(f"timing: unknown easing {easing!r}; choose from {', '.join(EASINGS)}")
    slow = _object(obj.get("slow_events", {}), "timing.slow_events", ("factor", "steps"))
    factor, steps = slow.get("factor", 1.0), slow.get("steps", 0)
    if not (_is_number(factor) and 1 <= factor <= 100):
        raise EngineInputError(f"timing.slow_events.factor {factor!r} must lie in 1..100")
    if not (_is_int(steps) and steps >= 0):
        raise EngineInputError(f"timing.slow_events.steps {steps!r} must be a whole number ≥ 0")
    return Timing(easing, float(factor), int(steps))


# ---------------------------------------------------------------- the default story
STORY_CAPTION = "step {step} / {last_step}   ·   {c}   ·   loss {loss}\n{events}"
TITLE_CELL = Cell("title", (0.0, 0.0, 1.0, 0.07))  # every story's slide title, across the top


def even_size(size) -> tuple[int, int]:
    """The frame size rounded down to even numbers: H.264's 4:2:0 frames need both even."""
    return size[0] // 2 * 2, size[1] // 2 * 2


def story_clip(preset: str, size=(1920, 1080), fps: int = 30, seconds: float = 8.0, orbit: bool = False) -> Clip:
    """Paper A's story for a training preset: every neuron's quadric and trajectory above the
    loss, the step counter, c_k and sign-flip call-outs in the caption; the camera swings
    (or orbits) slowly so the 3D shape reads, and time slows around sign flips."""
    from ..presets import preset_named

    found = preset_named(preset)
    if found.workspace == "landscape":
        raise EngineInputError(f"preset {preset!r}: the toolkit tab films no clip; File ▸ Export saves its views")
    if found.workspace != "topology":  # gui.clips.minima_scene.minima_story_clip
        raise EngineInputError(
            f"preset {preset!r}: its clip is paper B's walk along λ "
            "(Record… → replay, or main.py record), not a training story"
        )
    layout = (
        TITLE_CELL,
        Cell(GL_SOURCE, (0.0, 0.07, 1.0, 0.57)),
        Cell("loss", (0.0, 0.64, 1.0, 0.24)),
        Cell("caption", (0.0, 0.88, 1.0, 0.12)),
    )
    if not orbit:
        keys = (
            KeyFrame(0.0, 0, {"azimuth": 40.0, "elevation": 18.0}, None, STORY_CAPTION),
            KeyFrame(float(seconds), "end", {"azimuth": 110.0, "elevation": 26.0}, None, STORY_CAPTION),
        )
        return Clip(preset, even_size(size), fps, found.title, layout, keys, Timing("smoothstep", 3.0, 15))
    # A full turn needs key frames less than 180° apart (angles go the shortest way round),
    # and a steady pace: linear, with the run's steps spread evenly over the turn.
    steps = int(found.values.get("optimizer", {}).get("steps", 0))
    keys = tuple(
        KeyFrame(
            seconds * q / 3,
            round(steps * q / 3) if q < 3 else "end",
            {"azimuth": 40.0 + 120.0 * q, "elevation": 22.0},
            None,
            STORY_CAPTION,
        )
        for q in range(4)
    )
    return Clip(preset, even_size(size), fps, found.title, layout, keys, Timing("linear"))
