"""Paper Fig. 3(b): loss along the degenerate path λ, with λ_min(H) on a second axis."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..rendering.plot_style import SHADED, SOLID, FittedAxis, follow_theme, key_text, limit_ticks, own_menus, set_title

LOSS_COLOR = "#0072B2"
EIG_COLOR = "#D55E00"
SHADE = (0, 158, 115, 45)  # the interval I where the points are minima
# Short lines: a subtitle line wider than the plot widens its layout past the widget, and in
# presentation type the right axis was cut off ("-0" for -0.05).
KEY = key_text([(LOSS_COLOR, SOLID, "loss (left)"), (EIG_COLOR, SOLID, "λ_min(H) (right)")])
SHADE_KEY = key_text([("#009E73", SHADED, "I: minima")])
VIEW_LIMIT = 1e3  # stands in for ±∞ when shading (−∞, 0) ∪ (1, ∞)


class DegeneratePathView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent, axisItems={side: FittedAxis(side) for side in ("left", "right")})
        self._title, self._which = "(b) degenerate path", "λ of the last split"
        set_title(self, self._title)
        item = self.getPlotItem()
        item.setLabel("bottom", "λ")
        item.setLabel("left", "loss L", color=LOSS_COLOR)
        item.showAxis("right")
        item.setLabel("right", "λ_min(H)", color=EIG_COLOR)
        item.showGrid(x=True, y=True, alpha=0.2)
        limit_ticks(item.getAxis("left"))  # a flat loss spans ~1e-8: pyqtgraph labelled 17 ticks
        # The eigenvalue lives in its own ViewBox on the right axis, linked in x.
        self.eig_box = pg.ViewBox()
        item.scene().addItem(self.eig_box)
        item.getAxis("right").linkToView(self.eig_box)
        self.eig_box.setXLink(item.vb)
        # Its x follows the loss's box: an x auto-range of its own fought show_path's setXRange, and
        # which won depended on when the box was laid out (a reopened session drew λ unpadded).
        self.eig_box.enableAutoRange(axis=pg.ViewBox.XAxis, enable=False)
        item.vb.sigResized.connect(lambda: self.eig_box.setGeometry(item.vb.sceneBoundingRect()))
        self.loss_curve = item.plot(
            pen=pg.mkPen(LOSS_COLOR, width=3), symbol="o", symbolSize=5, symbolBrush=LOSS_COLOR, symbolPen=None
        )
        self.eig_curve = pg.PlotDataItem(
            pen=pg.mkPen(EIG_COLOR, width=2.5), symbol="t", symbolSize=6, symbolBrush=EIG_COLOR, symbolPen=None
        )
        self.eig_box.addItem(self.eig_curve)
        self.zero = pg.InfiniteLine(angle=0, pen=pg.mkPen(EIG_COLOR, width=1, style=Qt.PenStyle.DotLine))
        self.eig_box.addItem(self.zero)
        self.regions: list[pg.LinearRegionItem] = []
        self.marker = pg.InfiniteLine(angle=90)
        self.marker.hide()
        item.addItem(self.marker)
        # The key goes under the title: the path crosses every corner of the frame.
        follow_theme(self, lambda fg: self.marker.setPen(pg.mkPen(fg, width=2, style=Qt.PenStyle.DashLine)))
        own_menus(self)  # eig_box's menu too

    def show_path(self, lam, loss, hessian_min, intervals, split_label: str | None = None):
        """``intervals``: list of (a, b) with ±inf allowed, where the points are minima."""
        self._which = f"λ of {split_label or 'the last split'}"
        self.set_current(None)
        lam = np.asarray(lam, float)
        self.loss_curve.setData(lam, np.asarray(loss, float))
        self.eig_curve.setData(lam, np.asarray(hessian_min, float))
        self._shade(intervals)
        if len(lam):
            # Padding enough for the end ticks' labels (at 0.03 the λ = −0.5 label did not fit and was dropped).
            self.setXRange(lam.min(), lam.max(), padding=0.08)
            # A flat loss would otherwise autoscale its rounding noise to full height.
            loss = np.asarray(loss, float)
            mid, spread = float(np.mean(loss)), float(np.ptp(loss))
            half = max(spread, 1e-3 * max(abs(mid), 1e-12)) * 2
            self.setYRange(mid - half, mid + half, padding=0)
            self.eig_box.enableAutoRange(axis=pg.ViewBox.YAxis)
            # Ranged and transformed now, not lazily as the next paint begins: items moved within a
            # paint mark the scene changed again, and it was drawn twice for every new path.
            self.scene().prepareForPaint()
            for line in (self.zero, self.marker):
                line.boundingRect()

    def _shade(self, intervals):
        """One shaded region an interval, the items kept from the last path moved to the new
        bounds: a live run redraws the path at every new point, and adding items is the costly part."""
        while len(self.regions) > len(intervals):
            region = self.regions.pop()
            self.removeItem(region)
            region.deleteLater()  # removed, only Python owns it: never leave a Qt object to the cycle collector
        while len(self.regions) < len(intervals):
            region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(SHADE), pen=pg.mkPen(None))
            region.setZValue(-10)
            self.addItem(region)
            self.regions.append(region)
        for region, (a, b) in zip(self.regions, intervals):
            region.setRegion((max(a, -VIEW_LIMIT), min(b, VIEW_LIMIT)))

    def set_current(self, lam: float | None):
        """Short subtitle lines: which split, and the dashed marker's λ."""
        lines = [self._which, SHADE_KEY + ("" if lam is None else f" · dashed: current λ = {lam:.3g}")]
        self.marker.setVisible(lam is not None)
        if lam is not None:
            self.marker.setValue(lam)
        set_title(self, self._title, [KEY] + lines)

    def clear_path(self):
        self.show_path([], [], [], [])
        self.set_current(None)

    def set_presentation(self, on: bool):
        self.loss_curve.setPen(pg.mkPen(LOSS_COLOR, width=5 if on else 3))
        self.eig_curve.setPen(pg.mkPen(EIG_COLOR, width=4 if on else 2.5))
