"""3D views rendered off-window into framebuffers of a clip cell's size, reused frame to frame.

The framing depends only on the cell, never on the on-screen widget's shape, so the window's
size cannot change a clip's frames (capture.render_gl passes its own field of view). Labels
(GLTextItem, painted by QPainter) are returned with their positions for the compositor to draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pyqtgraph.opengl import GLTextItem
from PySide6.QtCore import QPointF
from PySide6.QtGui import QFont, QImage, QMatrix4x4, QPainter, QVector3D
from PySide6.QtOpenGL import QOpenGLFramebufferObject, QOpenGLFramebufferObjectFormat


def _label_position(item, w: int, h: int) -> QPointF:
    """Where ``item`` puts its text in a w×h render, using the projection of the pass just drawn."""
    to_pixels = QMatrix4x4()
    to_pixels.viewport(0, h, w, -h)
    return (to_pixels * item.mvpMatrix()).map(QVector3D(*item.pos)).toPointF()


LABEL_MARGIN = 4  # px between a moved label and the picture's right edge


def paint_labels(painter: QPainter, labels: list, width: float, origin=QPointF(0, 0), scale: float = 1.0) -> None:
    """Paint a render's labels (``GLCells.render``'s list) on a picture ``width`` wide, in the
    painter's units. A label starts at its point (times ``scale``, plus ``origin``), unless it would
    run past the right edge: then it ends ``LABEL_MARGIN`` inside it (a neuron's "locked: v > 0"
    was cut in half in presentation mode at 1280×800)."""
    for point, text, font, color in labels:
        painter.setFont(font)
        painter.setPen(color)
        at = QPointF(point) * scale
        room = width - LABEL_MARGIN - painter.fontMetrics().horizontalAdvance(text)
        at.setX(max(0.0, min(at.x(), room)))
        painter.drawText(at + origin, text)


def widened_fov(fov: float, w: int, h: int, span: float = 1.0) -> float:
    """The horizontal field of view (degrees) of a w×h render whose shorter side spans ``fov``
    (times ``span``, a ratio of the half-angles' tangents): pyqtgraph's fov spans the width, so a
    tall frame would otherwise crop its top and bottom."""
    return math.degrees(2 * math.atan(math.tan(math.radians(fov) / 2) * span * max(w / h, 1.0)))


class GLCells:
    def __init__(self, samples: int = 0):
        # Framebuffer objects are not shared between GL contexts, so one per view, at its size.
        self._fbos: dict[tuple, QOpenGLFramebufferObject] = {}
        self.samples = samples

    def _framebuffers(self, view, w: int, h: int):
        """The view's framebuffers at w×h (the view's context is current). A view renders at one
        size at a time, so those of its earlier sizes are deleted: an on-screen view's GLCells
        lives as long as the view, and kept, every size a layout change gave it held its
        framebuffers for good (the soak's RSS grew all the while)."""
        key = (id(view), w, h)
        if key not in self._fbos:
            for old in [k for k in self._fbos if k[0] == key[0]]:
                del self._fbos[old]  # deleted now, while the context that owns them is current
            plain = QOpenGLFramebufferObject(w, h, QOpenGLFramebufferObject.Attachment.CombinedDepthStencil)
            multi = None
            if self.samples:
                fmt = QOpenGLFramebufferObjectFormat()
                fmt.setAttachment(QOpenGLFramebufferObject.Attachment.CombinedDepthStencil)
                fmt.setSamples(self.samples)
                multi = QOpenGLFramebufferObject(w, h, fmt)
            self._fbos[key] = (multi, plain)
        return self._fbos[key]

    def render(self, view, w: int, h: int, label_scale: float, fov: float | None = None) -> tuple[QImage, list]:
        """The view at w×h: (image, [(point, text, font, color)]) with labels to paint on top.
        ``fov``: the horizontal field of view to render with (default: the view's, widened so
        that it spans the cell's shorter side).

        The image is bottom-up, as GL reads it: draw it mirrored."""
        return self.draw(view, w, h, label_scale, fov).read()

    def draw(self, view, w: int, h: int, label_scale: float, fov: float | None = None) -> Drawing:
        """``render``'s first half: the scene drawn into the view's framebuffer, to be read back
        (``Drawing.read``) once the rasteriser has finished it (``Drawing.ready``)."""
        from OpenGL import GL

        view.makeCurrent()
        multi, plain = self._framebuffers(view, w, h)
        own = view.opts["fov"]
        view.opts["fov"] = fov if fov is not None else widened_fov(own, w, h)
        labels = [item for item in view.items if isinstance(item, GLTextItem) and item.visible()]
        try:
            # Text items paint with a QPainter on the widget, which rebinds the widget's own
            # framebuffer: everything drawn after the first label would miss ours. Hidden during
            # the GL pass, they are returned to be painted on the image.
            for item in labels:
                item.setVisible(False)
            target = multi or plain
            target.bind()
            GL.glViewport(0, 0, w, h)
            # Items leave GL state behind (surfaces turn depth writes off), and with depth
            # writes off the view's clear keeps the last frame's depth: reset what clear needs.
            GL.glDepthMask(GL.GL_TRUE)
            GL.glColorMask(GL.GL_TRUE, GL.GL_TRUE, GL.GL_TRUE, GL.GL_TRUE)
            GL.glDisable(GL.GL_SCISSOR_TEST)
            view.paint(region=(0, 0, w, h), viewport=(0, 0, w, h))
            placed = [(_label_position(item, w, h), item) for item in labels]
            if multi is not None:
                QOpenGLFramebufferObject.blitFramebuffer(plain, multi)
            fence = GL.glFenceSync(GL.GL_SYNC_GPU_COMMANDS_COMPLETE, 0)
            GL.glFlush()  # the rasteriser starts now, on its own threads
        finally:
            for item in labels:
                item.setVisible(True)
            view.opts["fov"] = own
            plain.release()
            view.doneCurrent()
        texts = []
        for point, item in placed:
            font = QFont(item.font)
            font.setPointSizeF(font.pointSizeF() * label_scale)
            texts.append((QPointF(point), item.text, font, item.color))
        return Drawing(view, plain, w, h, texts, fence)

    def release(self):
        self._fbos.clear()


@dataclass(eq=False)
class Drawing:
    """A view's picture drawn into its framebuffer and not read back yet. Mesa's llvmpipe
    rasterises on threads of its own after the flush: read at once, the GUI thread waited for
    them, about half of a render (benchmarks/bench_gl_readback.py)."""

    view: object
    framebuffer: QOpenGLFramebufferObject
    w: int
    h: int
    texts: list
    fence: object

    def ready(self) -> bool:
        """Whether the rasteriser has finished the picture (reading it then does not wait)."""
        from OpenGL import GL

        self.view.makeCurrent()
        try:
            status = GL.glClientWaitSync(self.fence, 0, 0)
        finally:
            self.view.doneCurrent()
        return status in (GL.GL_ALREADY_SIGNALED, GL.GL_CONDITION_SATISFIED)

    def read(self) -> tuple[QImage, list]:
        """The picture and its labels (waiting for the rasteriser if it has not finished)."""
        from OpenGL import GL

        self.view.makeCurrent()
        try:
            self.framebuffer.bind()
            # Straight into RGBA bytes: toImage converts and flips on the CPU; the compositor
            # flips for free as it draws. Into an array of ours: PyOpenGL's own buffer was
            # slower (benchmarks/bench_gl_readback.py).
            pixels = np.empty((self.h, self.w, 4), np.uint8)
            GL.glReadPixels(0, 0, self.w, self.h, GL.GL_RGBA, GL.GL_UNSIGNED_BYTE, pixels)
            GL.glDeleteSync(self.fence)
            self.framebuffer.release()
        finally:
            self.view.doneCurrent()
        image = QImage(pixels.data, self.w, self.h, 4 * self.w, QImage.Format.Format_RGBX8888)
        image.keep = pixels  # the QImage borrows the array's memory
        return image, self.texts
