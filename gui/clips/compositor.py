"""Lays a clip's sources out in one frame at the clip's own size and paints its words.

Everything is drawn at the target resolution: 3D views into framebuffers of their cell's
size, widgets (plots, the invariants panel) by QWidget.render through a scaled painter, so
lines and glyphs stay vector-sharp at 4K, and text with QPainter. Scaling is relative to a
1080-line frame, so a 4K clip has the 1080p clip's layout with four times the pixels.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict

import numpy as np
from PySide6.QtCore import QCoreApplication, QEvent, QPoint, QPointF, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen
from PySide6.QtWidgets import QWidget

from ..rendering.gl_cells import GLCells, paint_labels
from ..style import theme_colors
from .model import GL_SOURCE, Clip
from .timeline import FrameState

WIDGET_ZOOM = 1.5  # widgets at 1080p render as if on a 1.5× display: readable from the back row
HEADER = 0.034  # a neuron's header line, as a fraction of the frame height
MARGIN = 0.006
TRAJECTORY_WIDTH = 6  # pixels in a 1080-line frame


class Compositor:
    def __init__(self, clip: Clip, scene, samples: int = 0):
        self.clip, self.scene = clip, scene
        self.w, self.h = clip.size
        self.unit = self.h / 1080.0
        colors = theme_colors()
        self.bg, self.fg, self.band = QColor(colors["bg"]), QColor(colors["fg"]), QColor(colors["panel"])
        # One frame image, repainted in place; its RGBX bytes go to the encoder as they are.
        self.image = QImage(self.w, self.h, QImage.Format.Format_RGBX8888)
        self.gl = GLCells(samples)
        self.cells = [(c.source, self._pixels(c.rect)) for c in clip.layout]
        self._widget_cache: dict[str, tuple] = {}
        self.times: dict[str, float] = defaultdict(float)  # seconds per stage, summed over frames

    def _pixels(self, rect) -> QRect:
        x, y, w, h = rect
        left, top = round(x * self.w), round(y * self.h)
        return QRect(left, top, round((x + w) * self.w) - left, round((y + h) * self.h) - top)

    def compose(self, state: FrameState, row: int) -> np.ndarray:
        """The frame for ``state`` as (H, W, 4) RGBX bytes (a copy: the image is reused)."""
        steps = self.compose_steps(state, row)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value

    def compose_steps(self, state: FrameState, row: int):
        """``compose`` as a generator that yields after each costly source, so the GUI can
        turn its event loop between them (a cancel waits for one source, not a whole frame)."""
        self.image.fill(self.bg)
        painter = QPainter(self.image)
        painter.setRenderHints(
            QPainter.RenderHint.Antialiasing
            | QPainter.RenderHint.TextAntialiasing
            | QPainter.RenderHint.SmoothPixmapTransform
        )
        try:
            for source, rect in self.cells:
                if source not in state.panels:
                    continue
                if source == GL_SOURCE:
                    yield from self._neurons(painter, rect, row)
                elif source == "title":
                    self._band(painter, rect, self.clip.title, 0.040, bold=True)
                elif source == "caption":
                    facts = self.scene.facts(row)
                    self._band(painter, rect, state.caption.format(**facts), 0.030, bold=False)
                else:
                    self._widget(painter, source, rect, row)
                    yield
        finally:
            painter.end()
        t = time.perf_counter()
        bits = self.image.constBits()
        frame = np.frombuffer(bits, np.uint8, count=self.h * self.image.bytesPerLine())
        frame = frame.reshape(self.h, -1)[:, : 4 * self.w].reshape(self.h, self.w, 4).copy()
        self.times["compose"] += time.perf_counter() - t
        return frame

    # ------------------------------------------------------------------ sources
    def neuron_cells(self, rect: QRect) -> list[QRect]:
        """Each 3D view's cell in ``rect`` (a header line, then the view), grid as on screen."""
        n = len(self.scene.views)
        cols = n if n <= 3 else math.ceil(math.sqrt(n))
        rows = math.ceil(n / cols)
        gap = max(2, round(MARGIN * self.h))
        cw = (rect.width() - gap * (cols - 1)) // cols
        ch = (rect.height() - gap * (rows - 1)) // rows
        return [
            QRect(rect.x() + (i % cols) * (cw + gap), rect.y() + (i // cols) * (ch + gap), cw, ch) for i in range(n)
        ]

    def header_height(self) -> int:
        return round(HEADER * self.h)

    def _neurons(self, painter: QPainter, rect: QRect, row: int):
        header = self.header_height()
        font = self._font(0.024)
        for (text, color), view, cell in zip(self.scene.headers(row), self.scene.views, self.neuron_cells(rect)):
            x, y, cw, ch = cell.x(), cell.y(), cell.width(), cell.height()
            t = time.perf_counter()
            # Trajectories as thick as in presentation mode, in proportion to the frame.
            width = view.trajectory.width
            view.set_line_width(TRAJECTORY_WIDTH * self.unit)
            try:
                image, labels = self.gl.render(view, cw, ch - header, label_scale=1.3 * self.unit)
            finally:
                view.set_line_width(width)
            self.times["gl"] += time.perf_counter() - t
            t = time.perf_counter()
            painter.save()  # GL rows run bottom-up: mirror while drawing, no copy
            painter.translate(x, y + ch)
            painter.scale(1, -1)
            painter.drawImage(QPoint(0, 0), image)
            painter.restore()
            paint_labels(painter, labels, cw, origin=QPointF(x, y + header))
            painter.fillRect(QRect(x, y, cw, header), self.band)
            painter.fillRect(QRect(x, y, cw, max(2, round(0.004 * self.h))), color)  # the neuron's colour
            painter.setFont(font)
            # The neuron's colour, darker on a light band and lighter on a dark one (readable).
            painter.setPen(color.darker(130) if self.band.lightness() > 127 else color.lighter(150))
            painter.drawText(
                QRect(x + round(0.01 * self.h), y, cw, header),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                text,
            )
            self.times["compose"] += time.perf_counter() - t
            yield

    def _widget(self, painter: QPainter, source: str, rect: QRect, row: int):
        """A Qt widget drawn at ``rect``'s size; cached while the run row stays the same
        (plots do not move with the camera, and a held step then costs nothing)."""
        cached = self._widget_cache.get(source)
        if cached is None or cached[0] != row:
            t = time.perf_counter()
            image = render_widget(self.scene.widgets[source], rect.size(), WIDGET_ZOOM * self.unit, self.bg)
            self._widget_cache[source] = (row, image)
            self.times["plot"] += time.perf_counter() - t
        t = time.perf_counter()
        painter.drawImage(rect.topLeft(), self._widget_cache[source][1])
        self.times["compose"] += time.perf_counter() - t

    def _band(self, painter: QPainter, rect: QRect, text: str, size: float, bold: bool):
        t = time.perf_counter()
        painter.fillRect(rect, self.band)
        pad = round(0.02 * self.h)
        room = rect.adjusted(pad, 0, -pad, 0)
        font = self._font(size, bold)
        # Smaller type rather than a cut-off line: long preset titles and captions fit the width.
        while (
            font.pixelSize() > 8
            and QFontMetrics(font).boundingRect(room, Qt.AlignmentFlag.AlignLeft, text).width() > room.width()
        ):
            font.setPixelSize(font.pixelSize() - 1)
        painter.setFont(font)
        painter.setPen(QPen(self.fg))
        painter.drawText(room, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
        self.times["compose"] += time.perf_counter() - t

    def _font(self, size: float, bold: bool = False) -> QFont:
        font = QFont()
        font.setPixelSize(max(8, round(size * self.h)))  # pixels, not points: no screen DPI in a clip
        font.setBold(bold)
        return font


def render_widget(widget, size: QSize, zoom: float, background: QColor) -> QImage:
    """``widget`` drawn into a new image of ``size``, laid out at size/zoom and scaled up.

    The widget is resized for the render and put back: Qt sends the resize synchronously,
    and nothing repaints on screen in between. Works for widgets in hidden tabs as well.
    """
    image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(background)
    logical = QSize(max(1, round(size.width() / zoom)), max(1, round(size.height() / zoom)))
    old = widget.size()
    widget.resize(logical)
    # Layouts the last change asked for (a plot's axis widened for longer tick labels posts
    # one): a clip renders frame after frame with no turn of the event loop between them.
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    painter = QPainter(image)
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    painter.scale(zoom, zoom)
    try:
        # QWidget's render, not QGraphicsView's (which draws the scene, not the widget);
        # pyqtgraph's paintEvent prepares the scene itself.
        QWidget.render(widget, painter, QPoint(0, 0))
    finally:
        painter.end()
        widget.resize(old)
    return image
