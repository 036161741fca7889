"""A labelled integer-grid heatmap with a colour bar and the value under the mouse.

Shared by the Fig. 4 and Fig. 5 views: cell (i, j) is drawn centred on (x[i], y[j]).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from ..rendering.plot_style import follow_theme, limit_ticks, own_menus, set_colorbar_colors, set_colorbar_font


class HeatmapPlot(pg.PlotWidget):
    def __init__(
        self, title: str, xlabel: str, ylabel: str, cmap: str | pg.ColorMap = "viridis", levels: tuple | None = None
    ):
        super().__init__(title=title)
        self.plot = self.getPlotItem()
        self.plot.setLabel("bottom", xlabel)
        self.plot.setLabel("left", ylabel)
        self.image = pg.ImageItem()
        self.plot.addItem(self.image)
        colors = pg.colormap.get(cmap) if isinstance(cmap, str) else cmap
        self.colorbar = pg.ColorBarItem(colorMap=colors, width=12, interactive=False, values=levels or (0, 1))
        self.colorbar.setImageItem(self.image, insert_in=self.plot)
        limit_ticks(self.colorbar.axis)
        follow_theme(self, lambda fg: set_colorbar_colors(self.colorbar, fg))
        self._fixed_levels = levels
        self.hover = pg.TextItem(anchor=(0, 1), color="k", fill=(255, 255, 255, 220))
        self.hover.setZValue(20)
        self.plot.addItem(self.hover, ignoreBounds=True)
        own_menus(self)  # the colour bar's menus too
        self.hover.hide()
        self.describe: Callable[[int, int], str] | None = None  # (i, j) → hover text
        self.values = np.zeros((0, 0))
        self.x = self.y = np.zeros(0)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse)

    def set_grid(self, x: np.ndarray, y: np.ndarray, values: np.ndarray):
        """values (len(x), len(y)); NaN cells stay blank (not computed yet, or undefined)."""
        self.x, self.y, self.values = np.asarray(x), np.asarray(y), np.asarray(values, dtype=float)
        if self.values.size == 0:
            self.image.clear()
            return
        dx = self.x[1] - self.x[0] if len(self.x) > 1 else 1.0
        dy = self.y[1] - self.y[0] if len(self.y) > 1 else 1.0
        finite = self.values[np.isfinite(self.values)]
        if self._fixed_levels is None and finite.size:
            lo, hi = float(finite.min()), float(finite.max())
            levels = (lo, hi if hi > lo else lo + 1e-9)
        else:
            levels = self._fixed_levels or (0, 1)
        # Levels given, not left to pyqtgraph: on a sweep's first, all-NaN map its nanmin warned.
        rect = QRectF(self.x[0] - dx / 2, self.y[0] - dy / 2, dx * len(self.x), dy * len(self.y))
        self.image.setImage(self.values, levels=levels, rect=rect)
        self.plot.autoRange(padding=0.02)  # the image rect does not re-range the view by itself
        self.colorbar.setLevels(levels)

    def set_presentation(self, on: bool):
        set_colorbar_font(self.colorbar, on)

    def clear_grid(self):  # not clear(): PlotWidget binds PlotItem.clear over it, removing items
        self.set_grid(np.zeros(0), np.zeros(0), np.zeros((0, 0)))
        self.hover.hide()

    def _on_mouse(self, pos):
        if self.values.size == 0 or not self.plot.sceneBoundingRect().contains(pos):
            self.hover.hide()
            return
        p = self.plot.vb.mapSceneToView(pos)
        i = int(np.argmin(np.abs(self.x - p.x()))) if len(self.x) else -1
        j = int(np.argmin(np.abs(self.y - p.y()))) if len(self.y) else -1
        half = lambda a: (a[1] - a[0]) / 2 if len(a) > 1 else 0.5
        if abs(self.x[i] - p.x()) > half(self.x) or abs(self.y[j] - p.y()) > half(self.y):
            self.hover.hide()
            return
        text = self.describe(i, j) if self.describe else f"{self.values[i, j]:.4g}"
        self.hover.setText(text)
        self.hover.setPos(p.x(), p.y())
        self.hover.show()
