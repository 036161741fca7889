"""A pyqtgraph 3D view drawn into a framebuffer off screen and painted as an ordinary widget.

Why not GLViewWidget: a single QOpenGLWidget in a window makes Qt compose the *whole* window
with OpenGL at every repaint (each widget's pixels become a texture). Under Mesa's llvmpipe that
composition was most of a live update of the topology tab, and the event loop stood still
meanwhile. Here each view renders into its own framebuffer through one shared,
off-screen GL context (pyqtgraph's GLViewMixin drives the items exactly as GLViewWidget does),
and the picture is drawn with QPainter: the window stays on Qt's raster backing store.

A view renders only when something changed (``update``) or its size did; between renders a
repaint (another widget's, a scroll, a tooltip) costs one image blit. Changed views queue up and
render one at a time (``RenderQueue``): a live run that changes every neuron's view never stalls
the loop for all of them at once. A picture is drawn in one turn of the event loop and read back
in a later one, once Mesa's rasteriser threads have finished it (``gl_cells.Drawing``): the GUI
thread no longer waits for them.
"""

from __future__ import annotations

from pyqtgraph.opengl.GLViewWidget import GLViewMixin
from PySide6.QtCore import QObject, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QOffscreenSurface, QOpenGLContext, QPainter, QSurfaceFormat
from PySide6.QtWidgets import QWidget
from shiboken6 import isValid

from .gl_cells import Drawing, GLCells, paint_labels

_shared: tuple[QOpenGLContext, QOffscreenSurface] | None = None


def shared_context() -> tuple[QOpenGLContext, QOffscreenSurface]:
    """One GL context for every view, sharing resources with Qt's global share context."""
    global _shared
    if _shared is None:
        context = QOpenGLContext()
        context.setShareContext(QOpenGLContext.globalShareContext())
        context.setFormat(QSurfaceFormat.defaultFormat())
        if not context.create():
            raise RuntimeError("could not create an OpenGL context for the 3D views")
        surface = QOffscreenSurface()
        surface.setFormat(context.format())
        surface.create()
        _shared = (context, surface)
    return _shared


class RenderQueue(QObject):
    """Views waiting for a new picture, oldest first, one drawn at a time: drawn in one turn of
    the event loop, it is read back in a later turn once the rasteriser has finished it (polled
    every ``POLL_MS``), and the next view is drawn then."""

    POLL_MS = 2

    def __init__(self):
        super().__init__()
        self._waiting: list = []
        self._in_flight = None  # the view whose picture the rasteriser is drawing
        self._timer = QTimer(self, singleShot=True, interval=0)
        self._timer.timeout.connect(self._turn)

    def request(self, view) -> None:
        if view not in self._waiting:
            self._waiting.append(view)
        if not self._timer.isActive():
            self._timer.start(0 if self._in_flight is None else self.POLL_MS)

    def flush(self) -> None:
        """Every picture now, the one being drawn and the waiting ones (before a grab: it must
        show the views as they are)."""
        self._timer.stop()
        self._finish(wait=True)
        while (view := self._next()) is not None:
            view.render_now()
            QWidget.update(view)  # its paint is now a blit

    def _next(self):
        """The oldest waiting view that needs a picture now (a hidden one: when shown)."""
        while self._waiting:
            view = self._waiting.pop(0)
            if isValid(view) and view._stale and view.isVisible():
                return view
        return None

    def _finish(self, wait: bool) -> bool:
        """Read the picture in flight back (``wait``: even if the rasteriser is still at it);
        False if it is not finished yet."""
        view = self._in_flight
        if view is not None and isValid(view) and view._drawing is not None:
            if not wait and not view._drawing.ready():
                return False
            view.end_render()
            QWidget.update(view)  # its paint is now a blit
        self._in_flight = None
        return True

    def _turn(self) -> None:
        if self._finish(wait=False) and (view := self._next()) is not None:
            view.begin_render()
            self._in_flight = view
        if self._in_flight is not None or self._waiting:
            self._timer.start(self.POLL_MS if self._in_flight is not None else 0)


_queue: RenderQueue | None = None


def render_queue() -> RenderQueue:
    global _queue
    if _queue is None:
        _queue = RenderQueue()
    return _queue


def _adopt(item, parent: QObject) -> None:
    """Give a GL item (a QObject that pyqtgraph leaves parentless) and its child items Qt parents.
    pyqtgraph links items to their children in Python only (a grid and its line plot refer to
    each other), so without a Qt parent only the cycle collector freed them once the view was
    gone: at whatever allocation it ran, on whatever thread (see plot_style.own_menus)."""
    if item.parent() is None:
        item.setParent(parent)
    for child in item.childItems():
        _adopt(child, item)


class OffscreenGLView(GLViewMixin, QWidget):
    frameSwapped = Signal()  # a new picture was rendered (QOpenGLWidget's name for it)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # the picture covers every pixel
        self._cells = GLCells()
        self._picture = None  # (bottom-up image, labels, size) of the last render
        self._drawing = None  # a picture drawn and not read back yet (gl_cells.Drawing)
        self._stale = True
        self._initialized = False
        self.renders = 0  # how many pictures were rendered (benchmarks count them)
        self.keyTimer.setParent(self)  # GLViewMixin's is parentless: the view owns it (see _adopt)

    # ------------------------------------------------------------ what pyqtgraph's items expect
    def context(self) -> QOpenGLContext:
        return shared_context()[0]

    def makeCurrent(self) -> None:
        context, surface = shared_context()
        context.makeCurrent(surface)
        if not self._initialized:
            self._initialized = True
            self.initializeGL()  # items added so far; later ones initialize in addItem

    def doneCurrent(self) -> None:
        shared_context()[0].doneCurrent()

    def isValid(self) -> bool:
        return self._initialized

    def addItem(self, item):
        if self._initialized:
            self.makeCurrent()  # the item uploads its buffers now
        super().addItem(item)
        _adopt(item, self)

    def removeItem(self, item):
        """Remove ``item`` and delete it (and its child items) on this thread: a removed item is
        done with in this app, and only Python would own it, through the reference cycle with
        its children (``_adopt``)."""
        super().removeItem(item)
        item.deleteLater()

    def update(self, *args) -> None:
        """A new picture is due: rendered in its turn (``RenderQueue``), then painted."""
        self._stale = True
        render_queue().request(self)

    def showEvent(self, event):
        super().showEvent(event)
        if self._stale:  # changed while hidden
            render_queue().request(self)

    # ------------------------------------------------------------ painting
    def begin_render(self) -> Drawing:
        """Draw the scene at the widget's device size; the rasteriser finishes it meanwhile."""
        w, h = max(self.deviceWidth(), 1), max(self.deviceHeight(), 1)
        self._drawing = self._cells.draw(self, w, h, label_scale=1.0, fov=self.opts["fov"])
        self._stale = False  # a change from now on asks for another picture
        return self._drawing

    def end_render(self) -> None:
        """Read the drawn picture back (the next paint only blits it)."""
        drawing, self._drawing = self._drawing, None
        image, labels = drawing.read()
        self._picture = (image, labels, (drawing.w, drawing.h))
        self.renders += 1
        self.frameSwapped.emit()

    def render_now(self) -> None:
        """Render the scene at the widget's device size now, waiting for the rasteriser."""
        if self._drawing is not None:  # the queue's picture in flight: its framebuffer is reused
            self.end_render()
        self.begin_render()
        self.end_render()

    def paintEvent(self, event):
        # A stale picture waits for its turn in the queue (grabs flush it first); a new size
        # cannot wait.
        size = (max(self.deviceWidth(), 1), max(self.deviceHeight(), 1))
        if self._picture is None or self._picture[2] != size:
            self.render_now()
        painter = QPainter(self)
        try:
            image, labels, _ = self._picture
            painter.save()
            painter.translate(0, self.height())  # GL rows run bottom-up: mirror as we draw
            painter.scale(1, -1)
            painter.drawImage(QRect(0, 0, self.width(), self.height()), image)
            painter.restore()
            painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
            paint_labels(painter, labels, self.width(), scale=1 / self.devicePixelRatioF())
        finally:
            painter.end()

    def grabFramebuffer(self):
        """The view's current picture with its labels, as QOpenGLWidget offers it."""
        if self._stale or self._drawing is not None:
            self.render_now()
        return self.grab().toImage()
