"""Random-direction slices L(θ + t d) (paper Fig. 3a/c): K curves as a density, their min
envelope, L* and the descent line as lines on top.

The K curves are drawn as a count image (gui.present.curve_density): per pixel column, how many
curves pass each row, histogram-equalised (any monotone scaling of the counts, the logarithm
included, gives the same ranks) on a perceptual blue map. 5,000 translucent paths were slow for
Qt's raster engine to paint and saturated where directions crowd; the image is re-counted
for the visible box after each zoom, pan or resize: on a worker when the view's workspace gives
it one (``count_elsewhere``), napari's way (the request made here, the count off the GUI thread,
the image of the latest request shown here), and here otherwise (a clip's own views)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QColor

from ..present import minima as presented
from ..present.curve_density import DensityRequest, density_image
from ..rendering.plot_style import DASHED, SOLID, follow_theme, key_text, own_menus, set_title

CURVE_RGB = (0, 114, 178)
ENVELOPE_COLOR = "#D55E00"
DESCENT_COLOR = "#CC79A7"  # distinct from the blue curves and the orange envelope


# Where on each map one curve starts: visible against the theme's background, and blue like the key.
DENSITY_MAPS = {"light": ("CET-L12", 0.3), "dark": ("CET-L6", 0.35)}
REDRAW_MS = 30  # a zoom or resize re-counts the image once it has settled this long


def density_lut(theme: str) -> np.ndarray:
    """(256, 4) RGBA: entry 0 (no curve) transparent, 1..255 the map from one curve to the most."""
    name, start = DENSITY_MAPS[theme]
    lut = np.zeros((256, 4), np.uint8)
    lut[1:] = pg.colormap.get(name).getLookupTable(start, 1.0, 255, alpha=True)
    return lut


class SliceView(pg.PlotWidget):
    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self._title = title
        set_title(self, title)
        self.n_curves = 0
        self.setLabel("bottom", "t  (θ + t·d)")
        self.setLabel("left", "loss L")
        self.showGrid(x=True, y=True, alpha=0.2)
        # ONE image for all K curves, under the lines.
        self.density = pg.ImageItem(axisOrder="col-major")
        self.density.setZValue(-10)
        self.addItem(self.density)
        self._t = self._losses = None
        self.counts = np.zeros((0, 0), np.int32)  # what the image shows, for tests and export
        # (request, deliver) -> None: counts the request elsewhere and calls deliver(image) here
        self.count_elsewhere = None
        self._wanted: DensityRequest | None = None  # the latest box asked for
        self._redraw = QTimer(self, singleShot=True, interval=REDRAW_MS)
        self._redraw.timeout.connect(self.draw_density)
        # The box's own size: a title gaining a line shrinks it while the widget keeps its size.
        for changed in (self.getViewBox().sigRangeChanged, self.getViewBox().sigResized):
            changed.connect(self._schedule_density)
        self.envelope = pg.PlotCurveItem(pen=pg.mkPen(ENVELOPE_COLOR, width=3))
        # L* takes the text colour: black vanished on the dark theme.
        self.lstar = pg.InfiniteLine(
            angle=0, movable=False, label="L*", labelOpts={"position": 0.04, "anchors": [(0, 1), (0, 1)]}
        )
        self.descent = pg.PlotCurveItem(pen=pg.mkPen(DESCENT_COLOR, width=3, style=Qt.PenStyle.DashLine))
        for item in (self.envelope, self.descent):
            self.addItem(item)
        self.lstar.hide()
        self.addItem(self.lstar)
        self._lstar_width = 2
        self._subtitle: list[str] = []
        self._with_descent = False
        follow_theme(self, self._set_foreground)
        own_menus(self)

    def _set_foreground(self, color):
        self._fg = color
        self.density.setLookupTable(density_lut("dark" if QColor(color).lightness() > 128 else "light"))
        self.lstar.setPen(pg.mkPen(color, width=self._lstar_width, style=Qt.PenStyle.DashLine))
        self.lstar.label.setColor(color)
        if self._subtitle:
            self._show_title(self._subtitle, self._with_descent)

    def _show_title(self, lines: list[str], with_descent: bool):
        """The key (curves fill every corner, so no legend box) and the numbers, under the title."""
        self._subtitle, self._with_descent = lines, with_descent
        key = [(CURVE_RGB, SOLID, "slices"), (ENVELOPE_COLOR, SOLID, "envelope"), (self._fg, DASHED, "L*")] + (
            [(DESCENT_COLOR, DASHED, "B6")] if with_descent else []  # the line below names it: 1600 px cut it
        )
        set_title(self, self._title, [key_text(key)] + lines)

    def set_title(self, title: str):
        self._title = title
        set_title(self, title)

    def show_slices(
        self,
        t,
        losses,
        envelope,
        lstar: float,
        gap: float,
        n_below: int,
        descent=None,
        family: str = "",
        predicted=None,
        directions: str = "",
        frame=None,
    ):
        """``losses`` (K, P) on the grid ``t`` (P,); ``descent`` an optional (t, loss) line along the
        analytic descent direction, drawn over the random ones. ``directions``: how they were
        scaled, named when the dip fraction has no closed form for it (``predicted`` None).
        ``frame``: the box shown, [x0, x1, y0, y1] (gui.present.minima.slice_frame; made here only
        for data saved before it was presented). The numbers come from the engine."""
        t, losses = np.asarray(t, float), np.asarray(losses, float)
        k, p = losses.shape
        self._t, self._losses = t, losses
        self.envelope.setData(t, np.asarray(envelope, float))
        self.lstar.setValue(lstar)
        self.lstar.show()
        self.n_curves = k
        lines = [f"{n_below} of {k} directions dip below L*", f"envelope − L* ≥ {gap:.2g}"]  # random ones: the key says
        # Short lines (1600×960 and presentation type cut longer ones): the family is named when it
        # is not every parameter.
        if predicted is not None:  # the engine's second-order prediction for this family (dᵀHd < 0)
            where = "" if family in ("", "all parameters") else f"{family}: "
            lines.insert(1, f"{where}predicted {predicted:.2g}, seen {n_below / k:.2g}")
        elif directions and directions != "unit-norm":  # not Gaussian: no Imhof form for its dip rate
            lines.insert(1, f"{directions}: no closed form")
        if descent is None:
            self.descent.setData([], [])
        else:
            self.descent.setData(np.asarray(descent[0], float), np.asarray(descent[1], float))
            dip = float(np.min(descent[1])) - lstar
            lines.append(f"B6 descent line: {dip:.2g} below L*" if dip < 0 else f"B6 descent line: +{dip:.2g}")
        # The summary sits under the title, where it can never cover a curve.
        # Short lines: a title wider than the plot widens the plot item past its widget.
        self._show_title(lines, descent is not None)
        if frame is None:
            frame = presented.slice_frame(t, losses, envelope, lstar, descent)
        x0, x1, y0, y1 = frame
        self.setXRange(x0, x1, padding=0)
        self.setYRange(y0, y1, padding=0)
        self.draw_density()  # asked now, for the box just set, not after the layout settles

    def _schedule_density(self, *_):
        self._redraw.start()

    def draw_density(self):
        """Ask for the curves counted in the visible box at the plot's pixel size; the image
        follows (``show_density``), now or once a worker has counted them."""
        self._redraw.stop()
        if self._losses is None:
            return
        box = self.getViewBox()
        (x0, x1), (y0, y1) = box.viewRange()
        ratio = self.devicePixelRatioF()
        width, height = max(1, round(box.width() * ratio)), max(1, round(box.height() * ratio))
        request = self._wanted = DensityRequest(self._t, self._losses, (x0, x1), (y0, y1), width, height)
        if self.count_elsewhere is None:
            self.show_density(request, density_image(request))
        else:
            self.count_elsewhere(request, partial(self.show_density, request))

    def show_density(self, request: DensityRequest, image) -> None:
        """Show ``image`` (counts, uint8 indices) of ``request``, unless a newer box was asked for."""
        if request is not self._wanted:
            return
        self.counts, indices = image
        self.density.setImage(indices, levels=(0, 255), autoLevels=False)
        (x0, x1), (y0, y1) = request.x_range, request.y_range
        self.density.setRect(QRectF(x0, y0, x1 - x0, y1 - y0))

    def clear_slices(self):
        self._t = self._losses = self._wanted = None
        self.counts = np.zeros((0, 0), np.int32)
        self.density.clear()
        self.envelope.setData([], [])
        self.descent.setData([], [])
        self.lstar.hide()
        self._subtitle = []
        set_title(self, self._title)
        self.n_curves = 0

    def set_presentation(self, on: bool):
        self.envelope.setPen(pg.mkPen(ENVELOPE_COLOR, width=5 if on else 3))
        self.descent.setPen(pg.mkPen(DESCENT_COLOR, width=5 if on else 3, style=Qt.PenStyle.DashLine))
        self._lstar_width = 3 if on else 2
        self._set_foreground(self._fg)
