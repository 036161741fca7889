"""A plain line plot of a few named curves: Fig. 3(d), minima at infinity, the descending path."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..style import NEURON_COLORS
from .plot_style import add_legend, set_title

STYLES = {"solid": Qt.PenStyle.SolidLine, "dash": Qt.PenStyle.DashLine, "dot": Qt.PenStyle.DotLine}


class CurvesView(pg.PlotWidget):
    def __init__(self, title: str, x_label: str, y_label: str, parent=None):
        super().__init__(parent)
        set_title(self, title)
        self.setLabel("bottom", x_label)
        self.setLabel("left", y_label)
        self.showGrid(x=True, y=True, alpha=0.2)
        self.legend = add_legend(self, offset=(-10, 10))
        self._items: list = []
        self._width = 3

    def show_curves(self, curves: list[dict], log_y: bool = False, note: str = ""):
        """Each curve: {"name", "x", "y"} and optionally "color" (index or hex), "style", "hline"."""
        self.clear_curves()
        self.setLogMode(y=log_y)
        for k, c in enumerate(curves):
            color = c.get("color", k)
            color = NEURON_COLORS[color % len(NEURON_COLORS)] if isinstance(color, int) else color
            pen = pg.mkPen(color, width=self._width, style=STYLES[c.get("style", "solid")])
            if "hline" in c:  # a reference level, e.g. L* or L∞
                item = pg.InfiniteLine(pos=c["hline"], angle=0, pen=pen)
                self.addItem(item)
                self.legend.addItem(pg.PlotDataItem(pen=pen), c["name"])
            else:
                item = self.plot(np.asarray(c["x"], float), np.asarray(c["y"], float), pen=pen, name=c["name"])
            self._items.append(item)
        set_title(self, self.getPlotItem()._title_parts[0], [note] if note else [])
        self.autoRange()

    def clear_curves(self):
        for item in self._items:
            self.removeItem(item)
        self._items = []
        self.legend.clear()

    def set_presentation(self, on: bool):
        self._width = 5 if on else 3
        for item in self._items:
            pen = pg.mkPen(item.opts["pen"] if hasattr(item, "opts") else item.pen)
            pen.setWidthF(self._width)
            item.setPen(pen)
