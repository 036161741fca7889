"""Recording: frame sources (3D view, plot, window), encoders (MP4, GIF, PNGs), and drivers.

``LiveRecorder`` films whatever happens on screen (a live run, a replay playing, a user
turning the camera). Deterministic clips (replay, orbit, key frames) live in gui.clips and
feed the same ``Encoder``, which writes on a thread so the window stays responsive.
"""

from __future__ import annotations

import math
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PySide6.QtCore import QObject, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QImage, QPainter

from engine.core.errors import EngineInputError

STANDARD_SIZES = {"1920×1080": (1920, 1080), "3840×2160": (3840, 2160)}  # None: the source's own


# ------------------------------------------------------------------ frames
def render_gl(view, size: tuple[int, int], samples: int = 4) -> np.ndarray:
    """Render a GLViewWidget off-window at ``size`` and return RGB pixels (H, W, 3).

    One multisampled framebuffer of exactly the requested size (gui.rendering.gl_cells) instead of
    renderToArray's 1024² tiles: a single pass is several times faster at 1080p and gives
    antialiased edges. pyqtgraph's field of view is horizontal, so a 16:9 frame of a tall
    on-screen view would crop its top and bottom. The render's fov is chosen so that the central
    square of what the user framed (side = the view's shorter edge) is always in the frame,
    whatever its shape.
    """
    from .rendering.gl_cells import GLCells, paint_labels, widened_fov

    w, h = int(size[0]), int(size[1])
    square = min(1.0, max(view.height(), 1) / max(view.width(), 1))  # its tan vs. the width's
    fov = widened_fov(view.opts["fov"], w, h, square)
    cells = GLCells(samples)
    try:
        image, labels = cells.render(view, w, h, label_scale=max(1.0, h / max(view.height(), 1)), fov=fov)
    finally:
        cells.release()
    pixels = np.ascontiguousarray(image.keep[::-1, :, :3])  # GL rows run bottom-up
    if not labels:
        return pixels
    picture = QImage(pixels.data, w, h, 3 * w, QImage.Format.Format_RGB888)
    painter = QPainter(picture)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    paint_labels(painter, labels, w)
    painter.end()
    return image_to_array(picture)


def image_to_array(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    rows = np.frombuffer(image.constBits(), dtype=np.uint8, count=stride * h).reshape(h, stride)
    return rows[:, : 3 * w].reshape(h, w, 3).copy()


def letterbox(image: QImage, size: tuple[int, int], background: QColor) -> QImage:
    """Scale to fit ``size`` keeping the aspect ratio; bars take the theme's background."""
    if (image.width(), image.height()) == tuple(size):
        return image
    out = QImage(size[0], size[1], QImage.Format.Format_RGB888)
    out.fill(background)
    scaled = image.scaled(
        size[0], size[1], Qt.AspectRatioMode.KeepAspectRatio, Qt.TransformationMode.SmoothTransformation
    )
    painter = QPainter(out)
    painter.drawImage(
        QRectF((size[0] - scaled.width()) / 2, (size[1] - scaled.height()) / 2, scaled.width(), scaled.height()), scaled
    )
    painter.end()
    return out


def even_size(size: tuple[int, int]) -> tuple[int, int]:
    # H.264 (yuv420p) needs even sizes and imageio pads to macro blocks of 8; round down.
    return max(8, size[0] // 8 * 8), max(8, size[1] // 8 * 8)


def grab_widget(widget) -> QImage:
    """``widget.grab()`` with every 3D view's newest picture: views still waiting for their turn
    in the render queue (a live update changed them) render first."""
    from .rendering.offscreen_gl import render_queue

    render_queue().flush()
    return widget.grab().toImage()


class FrameSource:
    """Something to film: ``grab()`` returns (H, W, 3) uint8 at ``size`` (None: own size)."""

    def __init__(self, widget, size: tuple[int, int] | None = None, gl: bool = False):
        self.widget, self.gl = widget, gl
        own = (widget.width(), widget.height())
        self.size = even_size(size or own)

    def grab(self) -> np.ndarray:
        if self.gl:
            return render_gl(self.widget, self.size)
        image = grab_widget(self.widget)
        background = self.widget.palette().window().color()
        return image_to_array(letterbox(image, self.size, background))


def sources_of(window) -> dict[str, Callable[[tuple[int, int] | None], FrameSource]]:
    """The things the current tab can film, by the name the Record dialog shows."""
    workspace = window.workspace
    found = {}
    for i, view in enumerate(workspace.gl_views()):
        found[f"3D view {i + 1}" if i else "3D view"] = lambda s, v=view: FrameSource(v, s, gl=True)
    for title, plot in workspace.plot_widgets().items():
        found[f"Plot: {title}"] = lambda s, p=plot: FrameSource(p, s)
    found["Whole window"] = lambda s: FrameSource(window, s)
    return found


# ---------------------------------------------------------------- encoding
def check_output(out) -> Path:
    """Refuse an output the encoders cannot write, before any time is spent rendering."""
    out = Path(out)
    if out.suffix and out.suffix.lower() not in (".mp4", ".gif"):
        raise EngineInputError(f"{out}: record to .mp4, .gif, or a folder (for PNG frames)")
    if not out.parent.is_dir():
        raise EngineInputError(f"folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK):
        raise EngineInputError(f"cannot write {out}: folder {out.parent} is not writable")
    return out


def _open_writer(out: Path, fps: int):
    """Return (append(frame), close()) for the format the path names.

    Frames may be (H, W, 3) RGB or (H, W, 4) RGBX: the clip compositor paints 4-byte pixels,
    and handing them to ffmpeg as they are saves a conversion per frame on the GUI thread.
    """
    import imageio.v2 as imageio
    import imageio.v3 as iio

    suffix = out.suffix.lower()
    if suffix == ".mp4":
        # yuv420p needs even sizes; every size passed here is even (even_size, clip sizes).
        # veryfast: x264's default preset cannot keep up with 1080p clips on two cores, and
        # at this quality the files are still small. Its output stays deterministic.
        writer = imageio.get_writer(
            str(out),
            format="FFMPEG",
            fps=fps,
            codec="libx264",
            quality=8,
            pixelformat="yuv420p",
            macro_block_size=2,
            ffmpeg_log_level="error",
            output_params=["-preset", "veryfast"],
        )
        return writer.append_data, writer.close
    if suffix == ".gif":
        writer = imageio.get_writer(str(out), mode="I", duration=1000 / fps, loop=0)
        return (lambda frame: writer.append_data(frame[..., :3])), writer.close
    out.mkdir(parents=True, exist_ok=True)
    count = iter(range(10**9))
    return ((lambda frame: iio.imwrite(out / f"frame_{next(count):05d}.png", frame[..., :3])), (lambda: None))


def _partial_path(out: Path) -> Path:
    """Where frames go until the file is complete: beside ``out``, same suffix (ffmpeg picks
    the container from it), hidden, so a cancelled or failed recording never leaves a
    truncated file under the name the user asked for."""
    return out.with_name(f".{out.stem}.partial{out.suffix}")


def _publish(partial: Path, out: Path) -> None:
    if partial.is_dir():
        out.mkdir(exist_ok=True)
        for old in out.glob("frame_*.png"):
            old.unlink()
        for frame in sorted(partial.iterdir()):
            frame.replace(out / frame.name)
        partial.rmdir()
    else:
        partial.replace(out)


def _discard(partial: Path) -> None:
    if partial.is_dir():
        shutil.rmtree(partial, ignore_errors=True)
    else:
        partial.unlink(missing_ok=True)


class Encoder(QObject):
    """Writes frames on a thread; ``progress(done, total)`` drives the encoding bar.

    The file appears under its name only once complete; ``abort`` discards it.
    """

    progress = Signal(int, int)
    finished = Signal(str)  # the output path
    failed = Signal(str)

    def __init__(self, out, fps: int, parent=None):
        super().__init__(parent)
        self.out = check_output(out)
        self._partial = _partial_path(self.out)
        try:
            if self.out.suffix:
                self._partial.touch()  # an unwritable folder fails here, before any rendering
        except OSError as error:
            raise EngineInputError(f"cannot write {self.out}: {error.strerror}") from None
        try:
            self._append, self._close = _open_writer(self._partial, fps)
        except OSError as error:
            _discard(self._partial)
            raise EngineInputError(f"cannot write {self.out}: {error}") from None
        # Bounded, so a slow encoder slows the grabbing instead of filling memory with 4K frames.
        self._queue: queue.Queue = queue.Queue(maxsize=16)
        self.submitted = self.done = 0
        self.busy_seconds = 0.0  # time spent encoding, on the encoder's thread
        self.error: str | None = None
        self._aborted = False
        self._thread = threading.Thread(target=self._work, daemon=True)
        self._thread.start()

    def add(self, frame: np.ndarray):
        if self.error is None and not self._aborted:
            self.submitted += 1
            self._queue.put(frame)

    @property
    def has_room(self) -> bool:
        """Whether ``add`` would return at once (the GUI renders only then, so it never blocks)."""
        return not self._queue.full()

    @property
    def writing(self) -> bool:
        return self._thread.is_alive()

    # What the controller needs of an adopted worker (gui.controller.Worker).
    busy = writing

    def cancel(self):
        self.abort()

    def wait(self, ms: int) -> bool:
        self._thread.join(ms / 1000)
        return not self._thread.is_alive()

    def close(self, wait: bool = False):
        """No more frames; with ``wait``, block until the file is complete."""
        self._queue.put(None)
        if wait:
            self._thread.join()

    def abort(self):
        """Stop without a file: queued frames are dropped and the partial file deleted."""
        self._aborted = True
        self._queue.put(None)

    def _work(self):
        try:
            while (frame := self._queue.get()) is not None:
                if self.error is None and not self._aborted:
                    t = time.perf_counter()
                    self._append(frame)
                    self.busy_seconds += time.perf_counter() - t
                    self.done += 1
                    self.progress.emit(self.done, self.submitted)
            self._close()
            if self._aborted:
                _discard(self._partial)
                return
            _publish(self._partial, self.out)
        except Exception as error:  # disk full, ffmpeg gone: report, and keep draining
            self.error = f"recording to {self.out} failed: {error}"
            _discard(self._partial)
            while self._queue.get() is not None:
                pass
            self.failed.emit(self.error)
            return
        self.finished.emit(str(self.out))


# ----------------------------------------------------------------- drivers
class LiveRecorder(QObject):
    """Films what happens on screen: one grab per distinct drawn update, with its true time.

    ``mark_changed`` (connected, after the views, to whatever draws: a run's updates, the
    replay scrubber, a camera move) says something new is on screen; it is grabbed then, or
    by a timer once the time budget allows, and only then. While recording, only those distinct
    grabs are kept (spooled to disk by a thread); on ``stop`` each is written for as many output
    frames as its time on screen spans at ``fps``, so the video plays at the speed things happened
    and repeats only what timing implies. ``distinct`` says how many different frames there were.

    Recording must not slow a run: grabs are spaced so that they take at most ``BUDGET`` of
    the wall time, and the encoding (which the repeats would make as costly as 30 real frames
    a second) waits until the recording stops.
    """

    BUDGET = 0.15
    ticked = Signal(float)  # seconds recorded, for the REC indicator

    def __init__(self, source: FrameSource, encoder: Encoder, fps: int, seconds: float | None = None, parent=None):
        super().__init__(parent)
        self.source, self.encoder, self.fps, self.seconds = source, encoder, fps, seconds
        self._timer = QTimer(self, interval=max(1, int(1000 / fps)))
        self._timer.timeout.connect(self._tick)
        self._t0 = self._next_grab = 0.0
        self._changed = True
        self._times: list[float] = []  # when each distinct grab was taken
        self._spool = Path(tempfile.mkdtemp(prefix="landscape-lens-live-"))
        self._spooling: queue.Queue = queue.Queue()
        self._spooler = threading.Thread(target=self._spool_frames, daemon=True)
        self._spooler.start()
        self._encoding: threading.Thread | None = None  # writes the file once stopped
        self._aborted = False
        self.frames = 0  # in the file, known once stopped
        self.distinct = 0  # different grabs
        self.grab_seconds = 0.0  # GUI-thread time spent grabbing
        self.active = False

    def mark_changed(self, _payload=None):
        """Something new is drawn. Grab here when due, not only on the timer: a run's stream of
        updates keeps the event loop so busy that timers starve."""
        self._changed = True
        if self.active:
            self._grab_if_due()

    def start(self):
        self._t0, self.active = time.monotonic(), True
        self._tick()
        self._timer.start()

    def stop(self):
        if not self.active:
            return
        self.active = False
        self._timer.stop()
        end = time.monotonic() - self._t0
        if self.seconds is not None:
            end = min(end, self.seconds)
        # Output frame j shows the latest grab taken by its time j / fps.
        slots = np.arange(max(1, math.ceil(end * self.fps - 1e-9))) / self.fps
        shown = np.maximum(np.searchsorted(self._times, slots + 1e-9, side="right") - 1, 0)
        self.frames = len(shown)
        self._spooling.put(None)
        self._encoding = threading.Thread(target=self._encode, args=(shown,), daemon=True)
        self._encoding.start()

    # What the controller needs of an adopted worker (gui.controller.Worker): the recording,
    # its spooler, its encoding and the encoder's thread.
    def _threads(self) -> list[threading.Thread]:
        return [t for t in (self._spooler, self._encoding, self.encoder._thread) if t is not None]

    @property
    def busy(self) -> bool:
        return self.active or any(t.is_alive() for t in self._threads())

    def cancel(self):
        """Stop without a file: nothing more is grabbed or written, the spool is deleted."""
        self._aborted = True
        self.encoder.abort()  # first: the encoding closes the encoder, which would then publish
        if self.active:
            self.active = False
            self._timer.stop()
            self._spooling.put(None)
            self._encoding = threading.Thread(target=self._encode, args=(np.zeros(0, int),), daemon=True)
            self._encoding.start()  # only cleans up: the spool goes once the spooler has ended

    def wait(self, ms: int) -> bool:
        for thread in self._threads():
            thread.join(ms / 1000)
        return not any(t.is_alive() for t in self._threads())

    def _tick(self):
        elapsed = time.monotonic() - self._t0
        if self.seconds is not None and elapsed >= self.seconds:
            self.stop()
            return
        self._grab_if_due()
        self.ticked.emit(elapsed)

    def _grab_if_due(self):
        now = time.monotonic()
        elapsed = now - self._t0
        if self._changed and now >= self._next_grab:
            self._changed = False
            frame = self.source.grab()
            cost = time.monotonic() - now
            self.grab_seconds += cost
            if self.distinct:  # the first grab pays for setting up the window's paint; not typical
                self._next_grab = now + cost / self.BUDGET
            self._spooling.put((self.distinct, frame))
            self._times.append(elapsed)
            self.distinct += 1

    def _spool_frames(self):
        while (item := self._spooling.get()) is not None:
            k, frame = item
            np.save(self._spool / f"{k}.npy", frame)  # raw: no compression to cost the run CPU

    def _encode(self, shown: np.ndarray):
        self._spooler.join()
        try:
            frame, loaded = None, -1
            for k in shown:
                if self._aborted:
                    break
                if k != loaded:
                    frame, loaded = np.load(self._spool / f"{k}.npy"), k
                self.encoder.add(frame)
        finally:
            self.encoder.close()
            shutil.rmtree(self._spool, ignore_errors=True)
