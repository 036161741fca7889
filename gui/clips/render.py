"""The frame loop: frame i = compose(state(i)). Headless it is a plain loop; in the GUI one
frame per timer tick, because GL must render on the GUI thread and the window must stay
responsive (the encoder already runs on its own thread)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from engine.core.errors import EngineInputError

from ..capture import Encoder
from .compositor import Compositor
from .model import Clip
from .timeline import Timeline


class ClipRenderer:
    """Renders frames of ``clip`` from ``scene``; ``close`` puts the views back as they were."""

    def __init__(self, clip: Clip, scene, samples: int = 0):
        self.clip, self.scene = clip, scene
        self.timeline = Timeline(clip, scene.steps, scene.event_steps(), scene.default_cameras())
        self.compositor = Compositor(clip, scene, samples)
        self.frames: int = self.timeline.frames
        self.times: dict = self.compositor.times  # seconds per stage, the compositor's and this one's
        self._saved = [scene.camera_of(view) for view in scene.views]
        # The first off-window paint of a view after the window painted it comes out wrong
        # (its surfaces squashed, as if drawn with the on-screen projection; seen with Mesa's
        # llvmpipe). One throw-away frame makes frame 0 like every other frame.
        self.frame(0)

    def frame(self, i: int) -> np.ndarray:
        steps = self.frame_steps(i)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def frame_steps(self, i: int):
        """Frame ``i`` as a generator: it yields between its costly parts and returns the frame."""
        state = self.timeline.state(i)
        t = time.perf_counter()
        self.scene.show(state.row)
        self.times["pose"] += time.perf_counter() - t
        yield
        self.scene.apply_cameras(state.cameras)  # again after the yield: the user may have turned them
        return (yield from self.compositor.compose_steps(state, state.row))

    def close(self):
        """The user's cameras, and the window as it was before the clip."""
        self.scene.apply_cameras(self._saved)
        self.scene.forget()
        self.scene.close()


def render_to_file(renderer: ClipRenderer, out, on_frame: Callable[[int, int], None] | None = None, adopt=None) -> dict:
    """Render every frame to ``out`` (.mp4, .gif or a PNG folder); return timings in seconds.
    ``adopt``: the controller's, which then counts the encoder among its workers."""
    encoder = Encoder(out, renderer.clip.fps)
    if adopt is not None:
        adopt(encoder)
    t0 = time.perf_counter()
    try:
        for i in range(renderer.frames):
            frame = renderer.frame(i)
            t = time.perf_counter()
            encoder.add(frame)  # waits only when the encoder is 16 frames behind
            renderer.times["encode wait"] += time.perf_counter() - t
            if on_frame:
                on_frame(i + 1, renderer.frames)
    except BaseException:
        encoder.abort()
        renderer.close()
        raise
    rendered = time.perf_counter() - t0
    encoder.close(wait=True)
    renderer.close()
    if encoder.error:
        raise EngineInputError(encoder.error)
    return {
        "rendered": rendered,
        "total": time.perf_counter() - t0,
        "frames": renderer.frames,
        "encode (thread)": encoder.busy_seconds,
        **renderer.times,
    }


class ClipJob(QObject):
    """A clip rendered from the GUI: one frame per event-loop turn, progress with ETA, cancel.

    A frame starts only when the encoder has room, so the GUI thread never blocks on it, and
    each tick renders one part of a frame, so ``cancel`` waits for one 3D view at most.
    """

    progressed = Signal(int, int, float)  # frames done, total, seconds left (estimate)
    finished = Signal(str)  # the file, once complete
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, renderer: ClipRenderer, out, parent=None):
        super().__init__(parent)
        self.renderer = renderer
        self.encoder = Encoder(out, renderer.clip.fps, self)  # EngineInputError before any work
        self.encoder.finished.connect(self.finished)
        self.encoder.failed.connect(self._on_failed)
        self.done = 0
        self._steps = None  # the frame being rendered, part by part
        self.active = False
        self._timer = QTimer(self, interval=0)
        self._timer.timeout.connect(self._tick)
        self._t0 = 0.0

    def start(self):
        self.active, self._t0 = True, time.monotonic()
        self._timer.start()

    def _tick(self):
        """One costly part of a frame (posing, one 3D view, one plot) per turn of the event loop."""
        try:
            if self._steps is None:
                if not self.encoder.has_room:
                    return
                self._steps = self.renderer.frame_steps(self.done)
            try:
                next(self._steps)
                return
            except StopIteration as done:
                frame = done.value
            self._steps = None
            self.encoder.add(frame)
        except Exception as error:  # a frame that cannot render must not leave a half file
            self._stop()
            self.encoder.abort()
            self.failed.emit(f"clip rendering failed: {error}")
            return
        self.done += 1
        total = self.renderer.frames
        elapsed = time.monotonic() - self._t0
        self.progressed.emit(self.done, total, elapsed / self.done * (total - self.done))
        if self.done == total:
            self._stop()
            self.encoder.close()  # finished arrives when the file is complete

    def cancel(self):
        """Stop rendering, or the encoder finishing the file: no file is written."""
        if self.active:
            self._stop()
            self.encoder.abort()
            self.cancelled.emit()
        elif self.encoder.writing:
            self.encoder.abort()
            self.cancelled.emit()

    # What the controller needs of an adopted worker (gui.controller.Worker).
    @property
    def busy(self) -> bool:
        return self.active or self.encoder.writing

    def wait(self, ms: int) -> bool:
        return self.encoder.wait(ms)

    def _stop(self):
        if self._steps is not None:
            self._steps.close()  # ends the half-drawn frame's painter
            self._steps = None
        self._timer.stop()
        self.active = False
        self.renderer.close()

    def _on_failed(self, message: str):
        self._stop()
        self.failed.emit(message)
