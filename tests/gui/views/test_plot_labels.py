"""What a plot says about itself: legends never sit on the data, tick labels agree with the
caption, and subtitles grow with presentation mode."""

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPointF

from gui.rendering.plot_style import add_legend, legend_to_empty_corner


def points_under_legend(plot: pg.PlotWidget, x: np.ndarray, y: np.ndarray) -> int:
    box = plot.getPlotItem().legend.sceneBoundingRect()
    view = plot.getPlotItem().getViewBox()
    return sum(box.contains(view.mapViewToScene(QPointF(a, b))) for a, b in zip(x, y))


def shown_plot_with_legend(qtbot, width: int, height: int) -> pg.PlotWidget:
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    plot.resize(width, height)
    plot.show()
    qtbot.waitExposed(plot)
    add_legend(plot)
    return plot


@pytest.mark.parametrize("empty", ["top left", "top right", "bottom left", "bottom right"])
def test_the_legend_takes_the_one_empty_corner(qtbot, empty):
    """Data everywhere except one corner (a dense grid with that quadrant's corner cut out):
    the legend must go there, and cover none of the points."""
    plot = shown_plot_with_legend(qtbot, 600, 400)
    gx, gy = np.meshgrid(np.linspace(0, 1, 41), np.linspace(0, 1, 41))
    x, y = gx.ravel(), gy.ravel()
    right, top = "right" in empty, "top" in empty
    cut = ((x > 0.6) if right else (x < 0.4)) & ((y > 0.6) if top else (y < 0.4))
    x, y = x[~cut], y[~cut]
    plot.plot(x, y, pen=None, symbol="o", symbolSize=3, name="grid with a corner cut out")
    legend_to_empty_corner(plot, x, y)
    plot.getPlotItem().getViewBox().autoRange(padding=0.02)
    qtbot.wait(50)
    assert points_under_legend(plot, x, y) == 0


def test_spectrum_ticks_use_the_captions_tolerance(qtbot):
    """τ = 5e−07: the zero band is labelled with 5e−07, as the caption says, and each tick
    above it is τ·10^k (not log10 τ rounded to 1e−6)."""
    from gui.views.spectrum_view import SpectrumView

    view = SpectrumView()
    qtbot.addWidget(view)
    view.show_spectrum(np.array([-2e-2, 0.0, 1e-9, 3.0]), 5e-07)
    title = view.getPlotItem().titleLabel.text
    assert "5e-07" in title
    assert view.axis.tickStrings([0.0, 2.0, -1.0], 1, 1) == ["|e|≤5e-07", "5e-05", "−5e-06"]


def test_subtitles_grow_in_presentation_mode(qtbot):
    from gui.rendering.plot_style import SUBTITLE_PT, set_plot_fonts, set_title

    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    set_title(plot, "(a) slices", ["12 of 500 dip below L*"])
    assert f"font-size:{SUBTITLE_PT[False]}pt" in plot.getPlotItem().titleLabel.text
    set_plot_fonts(plot, presentation=True)
    text = plot.getPlotItem().titleLabel.text
    assert f"font-size:{SUBTITLE_PT[True]}pt" in text and "12 of 500 dip below L*" in text
    set_title(plot, "(a) slices", ["3 of 500 dip below L*"])  # a later update keeps the size
    assert f"font-size:{SUBTITLE_PT[True]}pt" in plot.getPlotItem().titleLabel.text


def test_two_flat_lines_leave_the_middle_and_sampling_does_not_weigh(qtbot):
    """A long recorded line (2,000 points) at the top and a reference level (two points) at the
    bottom: every corner touches a line, the middle of an edge does not."""
    from gui.rendering.plot_style import densify

    plot = shown_plot_with_legend(qtbot, 600, 300)
    top_x = np.linspace(0, 1, 2000)
    plot.plot(top_x, np.zeros_like(top_x), name="GD: L − L∞")
    plot.plot([0, 1], [-7, -7], name="L-BFGS level")
    x, y = densify([0, 1], [-7, -7], factor=200)
    frame = (0, 1, -8.5, 1.5)  # both lines well inside, as a caller's frame puts them
    legend_to_empty_corner(plot, np.concatenate([top_x, x]), np.concatenate([np.zeros_like(top_x), y]), frame=frame)
    plot.setXRange(0, 1, padding=0)
    plot.setYRange(-8.5, 1.5, padding=0)
    qtbot.wait(50)
    lines_x = np.concatenate([top_x, x])
    lines_y = np.concatenate([np.zeros_like(top_x), y])
    assert points_under_legend(plot, lines_x, lines_y) == 0


def test_a_flat_line_inside_I_gets_readable_axes(qtbot):
    """Inside I the descent line moves the loss by rounding only (~1e-14). Panel (d) must not
    autoscale to that (15-digit tick labels), and panel (c) must frame its slices as at a minimum
    rather than around the flat line."""
    from gui.views.curves_view import FLAT_SPAN, CurvesView
    from gui.views.slice_view import SliceView

    level = 2.981715923012
    t = np.linspace(-1, 1, 21)
    flat = level + 1e-14 * np.sin(7 * t)
    d = CurvesView("(d)", "t", "loss L")
    qtbot.addWidget(d)
    d.show_curves([{"name": "L(θ + t·e)", "x": t, "y": flat}, {"name": "L*", "hline": level}])
    low, high = d.getViewBox().viewRange()[1]
    assert high - low >= 2 * FLAT_SPAN * level * 0.99
    d.show_curves([{"name": "steep", "x": t, "y": level + t**2}])  # a real curve autoscales as before
    low, high = d.getViewBox().viewRange()[1]
    assert high - low < 2

    c = SliceView("(c)")
    qtbot.addWidget(c)
    losses = level + np.outer(np.linspace(0.01, 0.05, 30), t**2)  # a minimum: every slice rises
    c.show_slices(t, losses, losses.min(0), level, 0.0, 0, descent=(t, flat))
    low, high = c.getViewBox().viewRange()[1]
    assert high - low > 1e-3, f"framed around the flat descent line: {high - low:.1e}"
    from gui.present.minima import dip_frame

    assert dip_frame(t, flat, level) is None  # (d) autoscales (and is widened) instead
    assert dip_frame(t, level - 1e-4 * (1 - t**2), level) is not None  # a saddle's dip is framed


def test_the_path_views_axes_are_as_wide_as_their_labels_now_whatever_came_before(qtbot):
    """A live run may draw (b) more than once before its final path; a reopened session draws
    the final one at once. Both must end with the same axis widths (pyqtgraph kept what it had
    reserved while the labels stayed within 10 px of it, so the two pictures differed)."""
    from gui.views.degenerate_path_view import DegeneratePathView

    lam = np.linspace(-1, 2, 31)
    dip = np.where((lam > 0) & (lam < 1), -np.sin(np.pi * lam), 0.0)
    loss = 0.0042862 + 1e-7 * np.cos(lam)

    def widths(scales):
        view = DegeneratePathView()
        view.resize(320, 340)
        view.show()
        qtbot.waitExposed(view)
        for scale in scales:  # each drawn and painted before the next
            view.show_path(lam, loss, scale * dip, [(0.0, 1.0)], "layer 1, neuron 1 → copy 2")
            for _ in range(3):  # a paint sizes the axes, the layout follows at the next turn
                view.grab()
                qtbot.wait(10)
        item = view.getPlotItem()
        out = [item.getAxis(side).width() for side in ("left", "right")]
        view.deleteLater()  # by Qt, now: a dropped pyqtgraph view left to the cycle collector crashes
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        return out

    direct = widths([0.16])
    for before in (0.0123, 0.07, 12.5):  # labels narrower or wider by less than 10 px
        assert widths([before, 0.16]) == direct, before


def test_a_curve_plot_frames_its_curves_by_the_size_it_ends_at(qtbot):
    """The range a curve plot shows must not depend on the size it had when its curves were set
    (a title's key resizes it just after): pyqtgraph pads a range by a share of the view's size.
    Two plots, drawn at different sizes and then brought to one, frame the curves alike."""
    from gui.views.curves_view import CurvesView

    steps = np.arange(200.0)
    curves = [{"name": "GD", "x": steps, "y": -7.6 * steps / steps[-1]}, {"name": "L∞", "hline": -7.3}]
    plots = []
    for size in ((320, 180), (900, 600)):
        plot = CurvesView("gradient descent", "step", "L − L∞")
        qtbot.addWidget(plot)
        plot.resize(*size)
        plot.show()
        qtbot.waitExposed(plot)
        plot.show_curves(curves)
        plots.append(plot)
    for plot in plots:
        plot.resize(600, 400)
    ranges = lambda: [np.array(p.getViewBox().viewRange()) for p in plots]
    qtbot.waitUntil(lambda: all(p.getViewBox().width() == plots[0].getViewBox().width() for p in plots))
    qtbot.waitUntil(lambda: np.allclose(*ranges(), rtol=0, atol=1e-9), timeout=5000)
    for plot in plots:  # deleted by Qt now: pytest-qt's weak references die if a collection comes first
        plot.deleteLater()
