"""Application start-up: the Qt settings that must precede the QApplication, and the theme."""

from __future__ import annotations

import gc
import sys
import threading

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QApplication
from shiboken6 import isValid

from engine.core.runtime import use_one_malloc_arena

from . import parameter_items
from .style import apply_theme


def create_app(argv=None) -> QApplication:
    """Return the QApplication, creating it with the settings the GL views need."""
    app = QApplication.instance()
    if app is None:
        use_one_malloc_arena()  # before Qt's and the jobs' threads (engine.core.runtime)
        # Without shared contexts pyqtgraph's shaders fail in every GL widget after the first.
        QApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
        app = QApplication(list(argv or sys.argv[:1]))
    # The GUI thread waits for the GIL at every Python call Qt makes (each pyqtgraph item's
    # paint, each slot) while a worker trains in Python; at Python's default hand-over interval
    # a repaint of a few dozen items could wait long. The shorter interval keeps those waits short.
    sys.setswitchinterval(0.001)
    pg.setConfigOptions(antialias=True)
    parameter_items.install()  # before any parameter tree: setting a field leaks nothing
    app.setApplicationName("Landscape Lens")
    app.setOrganizationName("Landscape Lens")  # where QSettings keeps recent files and theme
    apply_theme(app, "light")
    return app


PRELOAD_AFTER_MS = 300


def preload_png_writer() -> None:
    """What File ▸ Export's first 3D PNG imported on the GUI thread, slowly from a cold disk."""
    import imageio.plugins.pillow  # noqa: F401  (imageio.v3 imports it only on a first write)
    import imageio.v3  # noqa: F401
    from PIL import Image

    Image.init()  # PIL's format plugins, which it imports on a first save


def preload_numerics(then=None) -> threading.Thread:
    """Import torch (with what it loads lazily on a first optimizer step), scipy and the PNG
    writer on a thread, while the window is already up: slow imports that used to come
    before it. A job that starts sooner imports what it needs itself; Python's import locks make
    the two wait, never load twice. ``then``: called on that thread once they are in."""

    def load():
        from engine.core.runtime import configure_torch_threads, import_lazy_torch_modules

        configure_torch_threads()
        import_lazy_torch_modules()
        import scipy.optimize  # noqa: F401

        preload_png_writer()
        if then is not None:
            then()

    thread = threading.Thread(target=load, name="preload-numerics", daemon=True)
    thread.start()
    return thread


def preload_now() -> None:
    """The preload, waited for, then start-up frozen on this (the GUI) thread: what headless
    commands, tests and benchmarks do before their first job."""
    preload_numerics().join()
    freeze_start_up()


class _Preloaded(QObject):
    """Lives on the GUI thread: the preload thread's signal that it is done arrives queued, and
    start-up is frozen here. Collected on the preload thread, start-up's cyclic garbage (Qt
    wrappers among it) was freed there."""

    done = Signal()

    def __init__(self, parent: QObject):
        super().__init__(parent)
        self.done.connect(self.freeze)

    def freeze(self) -> None:
        freeze_start_up()
        self.deleteLater()


def preload_in_background(app: QApplication) -> threading.Thread:
    """The window's preload: imports on a thread, start-up frozen on the GUI thread after."""
    notice = _Preloaded(app)

    def announce():
        if isValid(notice):  # not when the application has gone first (closed within seconds)
            notice.done.emit()

    return preload_numerics(then=announce)


def freeze_start_up() -> None:
    """Move every object alive now (modules, classes, the window: ~330,000, nearly all of them
    for good) to the collector's permanent generation (``gc.freeze``). A full collection walked
    them all with the GIL held, on whichever thread had allocated: seen as stalls of the GUI
    thread during runs (a worker's collection). It now walks only what was
    made since (~56,000 objects after minutes of the soak). Collected first, on the calling
    thread (the GUI thread's, so Qt wrappers in the garbage go where they live): none kept."""
    gc.collect()
    gc.freeze()


def run_gui(
    preset: str | None = None, presentation: bool = False, theme: str | None = None, run: str | None = None
) -> int:
    """The window; ``preset``: load it; ``run``: follow that run folder in the Training run tab."""
    from .main_window import MainWindow

    app = create_app()
    window = MainWindow()
    window.resize(1600, 960)
    window.show()
    window.set_look(presentation, theme)
    QTimer.singleShot(PRELOAD_AFTER_MS, lambda: preload_in_background(app))  # once the window has painted
    if preset:
        window.load_preset(preset)
    if run:
        window.open_run(run)
    return app.exec()
