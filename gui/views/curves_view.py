"""A plain line plot of a few named curves: Fig. 3(d), minima at infinity, the descending path."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..style import NEURON_COLORS
from .plot_style import add_legend, densify, follow_theme, legend_to_empty_corner, set_title

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
        self._shown: tuple | None = None  # the last show_curves arguments, redrawn on a theme switch
        follow_theme(self, self._set_foreground)

    def _set_foreground(self, color):
        self._fg = color
        if self._shown is not None:
            self.show_curves(*self._shown)

    def show_curves(self, curves: list[dict], log_y: bool = False, note: str = "", frame=None):
        """Each curve: {"name", "x", "y"} and optionally "color" (index, hex, or "fg" for the
        theme's text colour), "style", "hline". frame: (x0, x1, y0, y1) to show instead of all."""
        self.clear_curves()
        self._shown = (curves, log_y, note, frame)
        self.setLogMode(y=log_y)
        for k, c in enumerate(curves):
            color = c.get("color", k)
            color = NEURON_COLORS[color % len(NEURON_COLORS)] if isinstance(color, int) else color
            color = self._fg if color == "fg" else color
            pen = pg.mkPen(color, width=self._width, style=STYLES[c.get("style", "solid")])
            if "hline" in c:  # a reference level, e.g. L* or L∞
                item = pg.InfiniteLine(pos=c["hline"], angle=0, pen=pen)
                self.addItem(item)
                self.legend.addItem(pg.PlotDataItem(pen=pen), c["name"])
            else:
                item = self.plot(np.asarray(c["x"], float), np.asarray(c["y"], float), pen=pen, name=c["name"])
            self._items.append(item)
        set_title(self, self.getPlotItem()._title_parts[0], [note] if note else [])
        if frame is None:
            self.autoRange()
        else:
            self.setXRange(frame[0], frame[1], padding=0.02)
            self.setYRange(frame[2], frame[3], padding=0)
        drawn = [densify(c["x"], c["y"]) for c in curves if "hline" not in c]
        self._drawn = None
        if drawn:
            xs = np.concatenate([x for x, _ in drawn])
            across = np.linspace(np.nanmin(xs), np.nanmax(xs), 200)
            drawn += [(across, np.full_like(across, c["hline"])) for c in curves if "hline" in c]
            self._drawn = (np.concatenate([x for x, _ in drawn]), np.concatenate([y for _, y in drawn]), frame)
            self._place_legend()

    def _place_legend(self):
        if getattr(self, "_drawn", None) is not None:
            x, y, frame = self._drawn
            legend_to_empty_corner(self, x, y, frame=frame)

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._place_legend()  # the legend's share of the plot changed with its size

    def clear_curves(self):
        for item in self._items:
            self.removeItem(item)
        self._items = []
        self._shown = None
        self.legend.clear()

    def set_presentation(self, on: bool):
        self._width = 5 if on else 3
        for item in self._items:
            pen = pg.mkPen(item.opts["pen"] if hasattr(item, "opts") else item.pen)
            pen.setWidthF(self._width)
            item.setPen(pen)
