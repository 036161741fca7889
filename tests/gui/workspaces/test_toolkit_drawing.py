"""The toolkit tab's pages at 1600 × 960, read back from their pixels: the spectral density ends
inside the window (its axis and last tick label whole), the colour bar's title is legible in both
themes, and the plane shows a legend only when it has paths to name. Each view draws a state made
here (``restore_session_state``, as a reopened session does): no job runs."""

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage, QPainter

from gui.style import theme_colors

GRID = np.linspace(-2000.0, 4300.0, 400)
DENSITY = {
    "grid": GRID,
    "density": np.exp(-(((GRID[:, None] - np.array([-1740.0, 0.0, 1750.0, 4010.0])) / 120.0) ** 2)).sum(axis=1),
    "extremes": np.array([-1740.0, 4010.0]),
    "trace": -1306.0,
    "sum_squares": 3.694e7,
    "probes": 10,
    "steps": 8,
}


def plane_state(paths: int) -> dict:
    a = b = np.linspace(-1.0, 1.0, 9)
    loss = 1e3 * (1 + np.add.outer(a**2, 2 * b**2))
    walk = np.column_stack([np.linspace(0.0, 0.6, 5), np.linspace(0.0, -0.4, 5)])
    return {
        "mode": "pca" if paths else "plane",
        "plane": {
            "alpha": a,
            "beta": b,
            "loss": loss,
            "L_star": 1e3,
            "kind": "sum",
            "labels": ["d1, filter", "d2, filter"],
            "path_names": ["gd", "adam"][:paths],
            "paths": np.stack([walk * (k + 1) for k in range(paths)]) if paths else np.zeros((0, 1, 2)),
        },
    }


@pytest.fixture
def toolkit(window, qtbot):
    window.resize(1600, 960)
    window.show_workspace("landscape")
    qtbot.wait(50)
    yield window.workspaces["landscape"]
    window.set_look(presentation=False, theme="light")


def pixels(widget) -> np.ndarray:
    """The widget as drawn, RGB, top row first (copied before the QImage goes)."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGBA8888)
    rgba = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.width(), 4)
    return rgba[..., :3].copy()


def rgb(colour: str) -> np.ndarray:
    c = QColor(colour)
    return np.array([c.red(), c.green(), c.blue()])


def ink_distance(patch: np.ndarray, colour: str) -> float:
    """The largest per-channel distance (0..255) of any pixel of ``patch`` from ``colour``."""
    return float(np.abs(patch.astype(int) - rgb(colour)).max())


@pytest.mark.parametrize("presentation", [False, True])
def test_the_density_plot_ends_inside_the_window(window, qtbot, toolkit, presentation):
    window.set_look(presentation=presentation)
    toolkit.restore_session_state({"mode": "density", "density": DENSITY})
    plot = toolkit.density
    qtbot.waitUntil(lambda: plot.isVisible() and plot.width() > 400)
    qtbot.wait(100)
    # the page lies inside the window
    right = plot.mapTo(window, plot.rect().topRight()).x()
    assert right < window.width(), (right, window.width())
    # every tick label of the bottom axis lies whole inside the widget
    axis = plot.getPlotItem().getAxis("bottom")
    canvas = QImage(8, 8, QImage.Format.Format_RGB32)
    painter = QPainter(canvas)  # only for its font metrics
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert texts
    for rect, _flags, text in texts:
        x_end = axis.mapToScene(QPointF(rect.right(), rect.center().y())).x()
        assert x_end <= plot.width(), f"tick label {text!r} ends at {x_end:.0f} px of {plot.width()}"
    # the axis line ends before the widget's edge: the last columns of its row are background
    image = pixels(plot)
    row = int(round(axis.mapToScene(QPointF(0, 0)).y()))
    edge = image[max(row - 1, 0) : row + 2, -6:]
    assert ink_distance(edge, theme_colors()["bg"]) < 40, "the x axis runs into the window's edge"
    # and the curve's last point is inside the plot's view
    view = plot.getPlotItem().vb
    last = view.mapViewToScene(QPointF(GRID[-1], 0.0)).x()
    assert last < view.sceneBoundingRect().right() < plot.width()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_colour_bar_title_is_drawn_in_the_theme_ink(window, qtbot, toolkit, theme):
    window.set_look(theme=theme)
    toolkit.restore_session_state(plane_state(paths=0))
    plane = toolkit.plane
    qtbot.waitUntil(lambda: plane.heatmap.isVisible())
    qtbot.wait(100)
    title = plane.colorbar.getAxis("left").label  # the QGraphicsTextItem holding "loss L"
    assert "loss L" in title.toPlainText()
    rect = title.mapToScene(title.boundingRect()).boundingRect().toRect()
    image = pixels(plane.heatmap)
    patch = image[max(rect.top(), 0) : rect.bottom(), max(rect.left(), 0) : rect.right()]
    colours = theme_colors()
    # some of its pixels are near the ink, far from the background
    assert ink_distance(patch, colours["bg"]) > 120, f"'loss L' is invisible in the {theme} theme"
    near_ink = np.abs(patch.astype(int) - rgb(colours["fg"])).max(axis=2) < 60
    assert near_ink.sum() >= 10, f"'loss L' is not drawn in the {theme} theme's ink"


def test_the_plane_shows_a_legend_only_for_its_paths(window, qtbot, toolkit):
    plane = toolkit.plane
    toolkit.restore_session_state(plane_state(paths=0))
    qtbot.wait(50)
    assert not plane.legend.isVisible(), "an empty legend card is drawn over the plane"
    toolkit.restore_session_state(plane_state(paths=2))
    qtbot.waitUntil(lambda: plane.legend.isVisible())
    assert [label.text for _sample, label in plane.legend.items] == ["gd", "adam"]
    toolkit.restore_session_state(plane_state(paths=0))
    qtbot.wait(50)
    assert not plane.legend.isVisible()


@pytest.mark.parametrize("presentation", [False, True])
def test_the_colour_bar_values_are_as_large_as_the_axes(window, qtbot, toolkit, presentation):
    window.set_look(presentation=presentation)
    toolkit.restore_session_state(plane_state(paths=0))
    qtbot.wait(50)
    plane = toolkit.plane
    axis_font = plane.heatmap.getPlotItem().getAxis("bottom").style["tickFont"]
    bar_font = plane.colorbar.axis.style["tickFont"]
    assert bar_font is not None and bar_font.pointSize() == axis_font.pointSize()
    # and so is its title: "loss L" stayed at 10 pt beside 15 pt values on a projector
    title = plane.colorbar.getAxis("left").label
    assert title.font().pointSize() == axis_font.pointSize()
