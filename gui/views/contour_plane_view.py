"""A loss plane as researchers know it from Li et al.: contour lines over a heatmap, optimizer
paths drawn on it, and the 3-D surface beside it."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..rendering.plot_style import add_legend, follow_theme
from ..style import NEURON_COLORS
from .plane_view import PlaneView

END_MARK = 11  # px: a path's start (disc) and end (square)
STAYED_RING = 26  # px: the ring around a path that never left its start, larger than any mark there
STAYED_Z = 20
STAYED = 1e-3  # of the plane's extent: a path shorter than this is one point on the map
CONTOURS = 14  # levels between the lowest loss and the colour bar's top (98th percentile)


def contour_levels(loss: np.ndarray, count: int = CONTOURS) -> np.ndarray:
    """Evenly spaced levels over the part of the loss the colour bar shows; on a log scale when
    the loss spans more than two decades, so the basin's rings are not all squeezed at its floor."""
    low, high = float(np.nanmin(loss)), float(np.nanpercentile(loss, 98))
    if not high > low:
        return np.array([])
    if low > 0 and high / low > 100:
        return np.geomspace(low, high, count + 2)[1:-1]
    return np.linspace(low, high, count + 2)[1:-1]


class ContourPlaneView(PlaneView):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.isocurves: list[pg.IsocurveItem] = []
        self.paths: list[pg.PlotDataItem] = []
        self.legend = add_legend(self.heatmap, offset=(-10, 10))
        self.legend.hide()  # shown with the paths it names
        self._ink = "#111111"
        follow_theme(self.heatmap, self._set_ink)

    def _set_ink(self, color):
        self._ink = color
        for item in self.isocurves:
            item.setPen(pg.mkPen(color, width=1))

    def show_plane(self, a, b, loss, labels=("d1", "d2"), center=(0.0, 0.0), paths=()):
        """``loss[i, j]`` at (a[j], b[i]), with contour lines; ``paths``: (name, (T, 2) points in
        (a, b)) of optimizer runs, drawn over it with their start and end."""
        super().show_plane(a, b, loss, labels, center)
        self._clear_overlays()
        loss = np.asarray(loss, float)
        for level in contour_levels(loss):
            item = pg.IsocurveItem(
                data=loss, level=float(level), pen=pg.mkPen(self._ink, width=1), axisOrder="row-major"
            )
            item.setParentItem(self.image)  # in the image's coordinates: it follows its rect
            self.isocurves.append(item)
        span = max(float(np.ptp(a)), float(np.ptp(b)), 1e-300)
        for k, (name, xy) in enumerate(paths):
            xy = np.asarray(xy, float)
            color = NEURON_COLORS[(k + 1) % len(NEURON_COLORS)]
            stayed = float(np.ptp(xy, axis=0).max()) < STAYED * span
            item = pg.PlotDataItem(
                xy[:, 0],
                xy[:, 1],
                pen=pg.mkPen(color, width=3),
                name=f"{name} (stayed at its start)" if stayed else name,
                symbol=None,
                antialias=True,
            )
            if stayed:  # no line to see, and its end markers lie under the others' starts: ring it
                ends = pg.ScatterPlotItem(
                    xy[:1, 0], xy[:1, 1], symbol="o", size=STAYED_RING, brush=None, pen=pg.mkPen(color, width=3)
                )
                ends.setZValue(STAYED_Z)  # over the paths that leave from the same point
            else:
                ends = pg.ScatterPlotItem(
                    xy[[0, -1], 0],
                    xy[[0, -1], 1],
                    symbol=["o", "s"],
                    size=END_MARK,
                    brush=pg.mkBrush(color),
                    pen=pg.mkPen("w"),
                )
            for it in (item, ends):
                self.heatmap.addItem(it)
                self.paths.append(it)
        self.legend.setVisible(bool(paths))  # a plane alone has nothing to name: no empty card

    def _clear_overlays(self):
        for item in self.isocurves:
            item.setParentItem(None)
            if item.scene() is not None:
                item.scene().removeItem(item)
        for item in self.paths:
            self.heatmap.removeItem(item)
        self.isocurves, self.paths = [], []
        self.legend.clear()
        self.legend.hide()

    def clear_plane(self):
        super().clear_plane()
        self._clear_overlays()
