"""The clip of a recorded run's PCA path as it grew (``main.py record --run``).

Each frame is the Training run tab's path, loss and sharpness plots (gui/views/run_*.py, drawn
from gui/present/run.py's captions) for the run cut at the frame's step
(engine.runs.path_growth): the checkpoints appear one after another on the finished run's PCA
plane while the curves grow beside them. The plots' ranges are the whole run's, fixed for the
clip, and each checkpoint keeps the colour of its step in the whole run, so a frame differs from
the one before only by what was recorded between their steps. The plots are the clip's own,
never shown on screen, drawn at the frame's resolution as the story clips' are
(compositor.render_widget).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen
from PySide6.QtWidgets import QWidget

from engine.core.errors import EngineInputError
from engine.runs.follow import RunView
from engine.runs.path_growth import frame_steps, upto

from ..capture import Encoder, image_to_array
from ..present.run import path_colors, present
from ..rendering.plot_style import set_plot_fonts
from ..style import theme_colors
from ..views.run_loss_view import RunLossView
from ..views.run_path_view import RunPathView
from ..views.run_sharpness_view import RunSharpnessView
from .compositor import WIDGET_ZOOM, render_widget
from .off_screen import dispose_widgets

TITLE_HEIGHT = 0.07  # of the frame
PATH_WIDTH = 0.58  # the path's share of the width; the curves stack in the rest
HOLD = 0.15  # the share of the frames (at most one second) that holds the finished path


class RunClip:
    """Draws frames of ``view`` (a run as it stands, with its PCA plane) at ``size``."""

    def __init__(self, view: RunView, size: tuple[int, int]):
        if view.pca is None:
            raise EngineInputError(f"{view.folder}: {view.pca_note}")
        self.view = view
        self.w, self.h = size
        colors = theme_colors()
        self.bg, self.fg, self.band = QColor(colors["bg"]), QColor(colors["fg"]), QColor(colors["panel"])
        self.path, self.loss = RunPathView(), RunLossView()
        self.sharpness = RunSharpnessView() if len(view.sharpness) else None
        self.plots: list[tuple[QWidget, QRect]] = [(self.path, self._rect(0, TITLE_HEIGHT, PATH_WIDTH, 1))]
        right = (PATH_WIDTH, 0.99)  # a margin: the curves end at the frame's edge otherwise
        if self.sharpness is None:
            self.plots.append((self.loss, self._rect(right[0], TITLE_HEIGHT, right[1], 1)))
        else:
            middle = (1 + TITLE_HEIGHT) / 2
            self.plots.append((self.loss, self._rect(right[0], TITLE_HEIGHT, right[1], middle)))
            self.plots.append((self.sharpness, self._rect(right[0], middle, right[1], 1)))
        for plot, _ in self.plots:
            set_plot_fonts(plot)
            plot.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)  # laid out, never on screen
            plot.show()
        self.colors = path_colors(view.pca.steps)  # by each checkpoint's step in the whole run
        self._fix_ranges()
        self.image = QImage(self.w, self.h, QImage.Format.Format_RGB888)

    def _rect(self, x0: float, y0: float, x1: float, y1: float) -> QRect:
        left, top = round(x0 * self.w), round(y0 * self.h)
        return QRect(left, top, round(x1 * self.w) - left, round(y1 * self.h) - top)

    def _fix_ranges(self) -> None:
        """Every plot's ranges the whole run's, so the path and the curves grow in a still frame."""
        v = self.view
        xy = v.pca.xy
        self.path.setXRange(float(xy[:, 0].min()), float(xy[:, 0].max()), padding=0.06)
        self.path.setYRange(float(xy[:, 1].min()), float(xy[:, 1].max()), padding=0.06)
        first, last = float(v.steps[0]), float(max(v.steps[-1], v.steps[0] + 1))
        positive = v.loss[np.isfinite(v.loss) & (v.loss > 0)]
        self.loss.setXRange(first, last, padding=0.02)
        if positive.size:  # log axis: its range in decades
            self.loss.setYRange(np.log10(positive.min()), np.log10(positive.max()), padding=0.05)
        if self.sharpness is not None:
            self.sharpness.setXRange(first, last, padding=0.02)
            values = np.concatenate([v.sharpness, v.edge])
            values = values[np.isfinite(values)]
            if values.size:
                self.sharpness.setYRange(min(0.0, values.min()), values.max(), padding=0.05)

    def frame(self, step: float) -> np.ndarray:
        """(H, W, 3) RGB: the run as it stood at ``step``."""
        shown = present(upto(self.view, step))
        run = shown.run
        self.loss.show_loss(run.steps, run.loss, shown.loss_note)
        if self.sharpness is not None:
            self.sharpness.show_sharpness(run.sharpness_steps, run.sharpness, run.edge, shown.sharpness_note)
        if run.pca is None:
            self.path.show_note(shown.path_note)
        else:
            k = len(run.pca.steps)
            self.path.show_path(run.pca.steps, run.pca.xy, self.colors[:k], run.pca.explained, shown.path_note)
        self.image.fill(self.bg)
        painter = QPainter(self.image)
        painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        try:
            self._title(painter, run)
            zoom = WIDGET_ZOOM * self.h / 1080.0
            for plot, rect in self.plots:
                painter.drawImage(rect.topLeft(), render_widget(plot, rect.size(), zoom, self.bg))
        finally:
            painter.end()
        return image_to_array(self.image)

    def _title(self, painter: QPainter, run: RunView) -> None:
        """The band across the top: the run, the step shown and how many checkpoints are out."""
        rect = self._rect(0, 0, 1, TITLE_HEIGHT)
        painter.fillRect(rect, self.band)
        last = int(self.view.steps[-1])
        step = f"step {int(run.steps[-1])} of {last}" if len(run.steps) else "no step yet"
        text = (
            f"{Path(self.view.folder).name}   ·   {step}   ·   "
            f"{len(run.pca.steps) if run.pca is not None else 0} of {len(self.view.pca.steps)} checkpoints"
        )
        font = QFont()
        font.setPixelSize(max(8, round(0.034 * self.h)))
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(QPen(self.fg))
        pad = round(0.02 * self.h)
        painter.drawText(
            rect.adjusted(pad, 0, -pad, 0), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text
        )

    def close(self) -> None:
        dispose_widgets([plot for plot, _ in self.plots])


def clip_steps(view: RunView, fps: int, seconds: float) -> np.ndarray:
    """The step of every frame of a clip of ``seconds`` at ``fps``: the path grows over the
    frames, then the finished path holds for ``HOLD`` of them (at most one second)."""
    frames = max(2, round(seconds * fps) + 1)
    hold = min(fps, int(HOLD * frames))
    growing = frame_steps(view.steps, view.pca.steps, frames - hold)
    return np.concatenate([growing, np.full(hold, growing[-1])])


def render_run(view: RunView, out, size, fps: int, seconds: float, on_frame=None) -> dict:
    """Film ``view``'s path as it grew to ``out`` (.mp4, .gif or a PNG folder), written only once
    whole; return the frame count and the seconds spent."""
    steps = clip_steps(view, fps, seconds)
    encoder = Encoder(out, fps)  # refuses an output it cannot write, before any frame
    t0 = time.perf_counter()
    clip = RunClip(view, size)
    try:
        for i, step in enumerate(steps):
            encoder.add(clip.frame(step))  # waits only when the encoder is 16 frames behind
            if on_frame is not None:
                on_frame(i + 1, len(steps))
    except BaseException:
        encoder.abort()
        raise
    finally:
        clip.close()
    encoder.close(wait=True)
    if encoder.error:
        raise EngineInputError(encoder.error)
    return {"frames": len(steps), "total": time.perf_counter() - t0}
