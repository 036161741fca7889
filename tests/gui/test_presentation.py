"""Presentation mode: full screen, no parameter panel, large type, themes; state survives."""

import pytest
from PySide6.QtCore import QSettings

from gui import session

from .conftest import save_screenshot, wait_until_idle
from .test_session import assert_same


@pytest.fixture(autouse=True)
def private_settings(tmp_path):
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "cfg"))
    QSettings().clear()


def test_presentation_toggles_without_losing_state(qtbot, window):
    window.load_preset("fig3-free", steps=25)
    wait_until_idle(qtbot, window)
    before = session.capture_state(window)
    for theme in ("dark", "light"):
        _round_trip(qtbot, window, theme)
        assert_same(before, session.capture_state(window))
        assert QSettings().value("view/theme") == theme


def _round_trip(qtbot, window, theme):
    window.presentation.set_theme(theme)
    window.presentation.toggle_action.trigger()
    qtbot.waitUntil(window.isFullScreen, timeout=20000)
    assert not window.parameter_dock.isVisible()
    assert "16pt" in window.styleSheet()
    qtbot.wait(300)
    save_screenshot(window, f"presentation-{theme}")
    window.presentation.toggle_action.trigger()
    qtbot.waitUntil(lambda: not window.isFullScreen(), timeout=20000)
    assert window.parameter_dock.isVisible()
    assert "16pt" not in window.styleSheet()


def test_the_style_sheet_is_the_windows_never_the_applications(window):
    # Qt keeps ~600 bytes for every widget made under an application-wide style sheet: each
    # closed window left 0.3 MB in the heap (heaptrack), pinning more in heap pages (issue #27).
    from PySide6.QtWidgets import QApplication

    for theme in ("dark", "light"):
        window.presentation.set_theme(theme, remember=False)
        assert QApplication.instance().styleSheet() == ""
        assert "QMainWindow" in window.styleSheet()


def test_plots_paint_their_theme_s_background_without_a_cached_pixmap(qtbot, window):
    # pyqtgraph caches each plot's plain background as a pixmap of the plot's size; over every
    # preset that was 21 MB of heap (benchmarks/heap_tour.py, issue #27). The fill is still drawn.
    import pyqtgraph as pg
    from PySide6.QtWidgets import QGraphicsView

    from gui.style import THEMES

    window.load_preset("fig3-free", steps=25)
    wait_until_idle(qtbot, window)
    plot = window.workspace.curves.loss_plot
    for theme in ("dark", "light"):
        window.presentation.set_theme(theme, remember=False)
        qtbot.wait(50)
        plots = window.findChildren(pg.PlotWidget)
        assert plots and all(p.cacheMode() == QGraphicsView.CacheModeFlag.CacheNone for p in plots)
        image = plot.viewport().grab().toImage()
        corner = image.pixelColor(image.width() - 2, image.height() - 2)  # outside the axes' frame
        assert corner.name() == pg.mkColor(THEMES[theme]["bg"]).name()
