"""GUI tests run a real window under Xvfb (pytest-xvfb) with Mesa's software OpenGL."""

import gc
from pathlib import Path

import numpy as np
import pytest

SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "screenshots"


@pytest.fixture(scope="session")
def qapp():
    # Override pytest-qt's fixture: the app needs AA_ShareOpenGLContexts before it exists.
    from gui.app import create_app

    yield create_app()


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
    """Keep a PNG of what the test saw, for a person to look at."""
    SCREENSHOT_DIR.mkdir(exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    image = widget_or_image.grab() if hasattr(widget_or_image, "grab") else widget_or_image
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


def wait_until_idle(qtbot, window, timeout_ms=60000):
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=timeout_ms)
