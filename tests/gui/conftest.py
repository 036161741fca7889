"""GUI tests run a real window under Xvfb (pytest-xvfb) with Mesa's software OpenGL."""

import gc
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, settings

SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "screenshots"
# --hypothesis-profile=no-shrink: a failing state machine is reported as found, unshrunk (shrinking
# replays real windows for a long time); registered here, before the plugin loads the profile.
settings.register_profile("no-shrink", phases=[Phase.explicit, Phase.reuse, Phase.generate])


@pytest.fixture(scope="session")
def qapp():
    # Override pytest-qt's fixture: the app needs AA_ShareOpenGLContexts before it exists.
    from gui.app import create_app, preload_now

    app = create_app()
    preload_now()  # as headless runs do: no test's first job pays torch's lazy imports
    yield app
    # Windows a test left (a headless command's) go now, while the application exists, not in
    # interpreter shutdown. Only main windows: pyqtgraph's parentless menus and the forms its
    # QWidgetActions own go with their plots (plot_style.own_menus); deleted before them, the
    # plot's ~QGraphicsScene later crashed.
    from PySide6.QtWidgets import QMainWindow

    _delete_later([w for w in app.topLevelWidgets() if isinstance(w, QMainWindow)])
    gc.collect()


def _delete_later(objects) -> None:
    """Delete Qt objects on this (the GUI) thread, and whatever their deletion posts in turn."""
    from PySide6.QtCore import QCoreApplication, QEvent
    from shiboken6 import isValid

    for obj in objects:
        if isValid(obj):
            obj.deleteLater()
    for _ in range(3):  # a deleted plot posts its menus' deletion (rendering/plot_style.own_menus)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def qt_objects_left_to_the_collector() -> list:
    """The live Qt objects that only Python's cycle collector would delete (owned by Python
    alone, reachable only through reference cycles), found by a collection that frees nothing
    (DEBUG_SAVEALL), together with those earlier collections of a test saved (see
    ``no_qt_object_reaches_the_collector``). The collector runs at any allocation of any
    thread: deleting a Qt object there once deadlocked inside QObject::disconnect
    (rendering/plot_style.own_menus), so the app gives it none. Returns them; the caller deletes
    them and drops the list."""
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QGraphicsItem
    from shiboken6 import isValid, ownedByPython

    flags = gc.get_debug()
    gc.set_debug(flags | gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return [
            obj
            for obj in gc.garbage
            if isinstance(obj, (QObject, QGraphicsItem)) and isValid(obj) and ownedByPython(obj)
        ]
    finally:
        gc.set_debug(flags)
        if not flags & gc.DEBUG_SAVEALL:
            gc.garbage.clear()


def _describe(obj) -> str:
    """A leftover's class, and for pyqtgraph's menus the plot widget they belong to."""
    name = f"{type(obj).__module__}.{type(obj).__qualname__}"
    view = getattr(obj, "view", None)  # ViewBoxMenu: a weak reference to its ViewBox
    if callable(view) and hasattr(view(), "getViewWidget"):
        widget = view().getViewWidget()
        name += f" of a {type(widget).__qualname__}" if widget is not None else " of a dead plot"
    return name


@pytest.fixture(autouse=True)
def no_qt_object_reaches_the_collector(request):
    """No live Qt object may reach the cycle collector during a test or its teardown (autouse
    fixtures finish last), nor be left to it after, and no wrapper of a deleted Qt item may be
    left either (``untracked_item_wrappers``). Each collection of the test saves what it
    would free (DEBUG_SAVEALL) instead of freeing it, so an object collected mid-test, on any
    thread, is caught too, not only one still alive at the end; the test errors naming them.
    They are then deleted here, on the GUI thread, and the rest of the garbage is freed, so the
    next test starts clean and the suite's memory stays flat."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield
    finally:
        names = _delete_collected()
    if names:
        listed = ", ".join(f"{n} × {name}" for name, n in names.most_common())
        pytest.fail(f"Qt objects reached the cycle collector, or outlived their items: {listed}", pytrace=False)


def _delete_collected() -> Counter:
    """End a test's SAVEALL audit: delete the Qt objects it caught (plots before menus: a
    pyqtgraph menu deleted before its plot crashed the plot's deletion), free the rest."""
    from PySide6.QtCore import QObject
    from PySide6.QtWidgets import QApplication, QMenu

    try:
        if QApplication.instance() is None:
            return Counter()
        _delete_later([])  # what the test's teardown posted
        left = qt_objects_left_to_the_collector()
        names = Counter(_describe(obj) for obj in left)
        _delete_later([obj for obj in left if isinstance(obj, QObject) and not isinstance(obj, QMenu)])
        _delete_later([obj for obj in left if isinstance(obj, QMenu)])
        del left
        names.update(f"wrapper of a deleted {name}" for name in untracked_item_wrappers())
        return names
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.collect()


ITEM_KINDS = ("QTreeWidgetItem", "QGraphicsItem", "QListWidgetItem", "QTableWidgetItem", "QStandardItem")


def untracked_item_wrappers() -> list[str]:
    """Python wrappers of Qt items that Qt created (not QObjects), still marked valid, once no
    window is open: their C++ items went with their window, and PySide, never told, keeps each
    in shiboken's address map, where a new C++ object at that address is handed back to Python
    as the old wrapper (ownership.forget_root_item). With a window open they may be its own."""
    from PySide6 import QtGui, QtWidgets
    from PySide6.QtWidgets import QApplication, QMainWindow
    from shiboken6 import createdByPython, isValid

    if any(isinstance(w, QMainWindow) for w in QApplication.topLevelWidgets()):
        return []
    kinds = tuple(getattr(QtWidgets, k, None) or getattr(QtGui, k) for k in ITEM_KINDS)
    return [
        type(obj).__qualname__
        for obj in gc.get_objects()
        # issubclass of the type, not isinstance: that reads obj.__class__, and on torch's
        # deprecated module attributes the read warns
        if issubclass(type(obj), kinds) and isValid(obj) and not createdByPython(obj)
    ]


@pytest.fixture
def window(qtbot):
    """A shown main window. At the end every job it started (probes and previews included) has
    stopped and the window is deleted here, before the next test: deleting it inside the next
    test's event loop, with a thread of this one still finishing, is how crashes get misplaced."""
    from PySide6.QtCore import QCoreApplication, QEvent

    from gui.main_window import MainWindow

    win = MainWindow()
    win.resize(1600, 960)
    win.show()
    qtbot.waitExposed(win)
    yield win
    win.controller.discard()
    qtbot.waitUntil(lambda: not win.computing, timeout=120000)
    win.close()
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def save_screenshot(widget_or_image, name: str) -> Path:
    """Keep a PNG of what the test saw, for a person to look at. A widget is grabbed as the app's
    own grabs are: its 3D views still waiting for their turn in the render queue render first (a
    plain grab showed the toolkit's surface as it was before its plane landed)."""
    from gui.capture import grab_widget

    SCREENSHOT_DIR.mkdir(exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    image = grab_widget(widget_or_image) if hasattr(widget_or_image, "grab") else widget_or_image
    image.save(str(path))
    return path


def gl_pixels(view, size=(480, 320)) -> np.ndarray:
    """Render a GLViewWidget off-screen and return RGBA pixels (H, W, 4)."""
    from OpenGL.GL import GL_RGBA

    view.makeCurrent()
    rgba = np.asarray(view.renderToArray(size, format=GL_RGBA))
    assert rgba.shape == (size[1], size[0], 4)
    return rgba


def assert_not_blank(pixels: np.ndarray, min_std: float = 4.0):
    rgb = pixels[..., :3].astype(float)
    assert rgb.std() > min_std, f"view looks blank (pixel std {rgb.std():.2f})"
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 50, "view has almost no distinct colours"


def fail_on_any_job_but_a_layout(monkeypatch):
    """Opening a session computes no result again. The jobs allowed lay paper A's views out
    (gui.present.topology): ``preview_job`` for its panel's network with nothing saved, as after
    a Reset, and ``restored_job`` for a saved run, presented as saved."""
    from gui.worker import JobRunner

    submit = JobRunner.submit

    def guarded(runner, job, *args, **kwargs):
        if getattr(job, "__name__", "") not in ("preview_job", "restored_job"):
            pytest.fail(f"a job ran: {getattr(job, '__name__', job)}")
        return submit(runner, job, *args, **kwargs)

    monkeypatch.setattr(JobRunner, "submit", guarded)


def wait_until_idle(qtbot, window, timeout_ms=60000):
    """Until every lane and worker is idle: a run, and what lays views out (a preview, a session)."""
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=timeout_ms)


def record_gui_thread_calls(monkeypatch, module, names, on_gui: list) -> None:
    """Wrap ``module``'s functions ``names`` so each call made on the GUI (main) thread appends
    its name to ``on_gui``: a guard that a view state was made off that thread."""
    for name in names:
        real = getattr(module, name)

        def call(*args, _real=real, _name=name, **kwargs):
            if threading.current_thread() is threading.main_thread():
                on_gui.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, call)
