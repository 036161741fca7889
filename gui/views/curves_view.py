"""A plain line plot of a few named curves: Fig. 3(d), minima at infinity, the descending path."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..rendering.plot_style import DASHED, SOLID, follow_theme, key_text, own_menus, set_title
from ..style import NEURON_COLORS

STYLES = {"solid": Qt.PenStyle.SolidLine, "dash": Qt.PenStyle.DashLine, "dot": Qt.PenStyle.DotLine}
GLYPHS = {"solid": SOLID, "dash": DASHED, "dot": DASHED}
FLAT_SPAN = 1e-6  # the least half-height of a curve plot's y range, relative to its level


class CurvesView(pg.PlotWidget):
    def __init__(self, title: str, x_label: str, y_label: str, parent=None):
        super().__init__(parent)
        set_title(self, title)
        self.setLabel("bottom", x_label)
        self.setLabel("left", y_label)
        self.showGrid(x=True, y=True, alpha=0.2)
        self._items: list = []
        self._width = 3
        self._shown: tuple | None = None  # the last show_curves arguments, redrawn on a theme switch
        follow_theme(self, self._set_foreground)
        own_menus(self)

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
        key = []
        for k, c in enumerate(curves):
            color = c.get("color", k)
            color = NEURON_COLORS[color % len(NEURON_COLORS)] if isinstance(color, int) else color
            color = self._fg if color == "fg" else color
            style = c.get("style", "solid")
            pen = pg.mkPen(color, width=self._width, style=STYLES[style])
            if "hline" in c:  # a reference level, e.g. L* or L∞
                item = pg.InfiniteLine(pos=c["hline"], angle=0, pen=pen)
                self.addItem(item)
            else:
                item = self.plot(np.asarray(c["x"], float), np.asarray(c["y"], float), pen=pen)
            self._items.append(item)
            key.append((color, GLYPHS[style], c["name"]))
        # The key goes under the title: a descent line or two flat levels leave no corner free
        # for a legend box at every size the plot is shown at (window, presentation, clip cell).
        set_title(self, self.getPlotItem()._title_parts[0], [key_text(key)] + ([note] if note else []))
        if frame is None:
            # Auto-range that stays on: a one-shot autoRange() padded the range by a share of the
            # view's size at that moment, before the title's key, set just above, resized it; which
            # size it saw depended on timing, and so did the picture (nonattr-infinity's (b) plot
            # showed its minor grid lines in some shots and not others).
            self.enableAutoRange()
            self._widen_flat(curves, log_y)
        else:
            self.setXRange(frame[0], frame[1], padding=0.02)
            self.setYRange(frame[2], frame[3], padding=0)

    def _widen_flat(self, curves: list[dict], log_y: bool):
        """A flat curve (the descent line inside I moves the loss by rounding only) autoscales to
        a span of ~1e-14 and 15-digit tick labels: show at least ±1e-6 of its level instead."""
        values = [np.asarray(c["y"], float) for c in curves if "y" in c] + [
            np.asarray([c["hline"]], float) for c in curves if "hline" in c
        ]
        values = np.concatenate(values) if values else np.array([])
        values = values[np.isfinite(values)]
        if log_y or not values.size:
            return
        level, span = float(np.mean(values)), float(np.ptp(values))
        least = FLAT_SPAN * max(1.0, abs(level))
        if span < least:
            self.setYRange(level - least, level + least, padding=0)

    def clear_curves(self):
        for item in self._items:
            self.removeItem(item)
            item.deleteLater()  # removed, only Python owns it: never leave a Qt object to the cycle collector
        self._items = []
        self._shown = None

    def set_presentation(self, on: bool):
        self._width = 5 if on else 3
        for item in self._items:
            pen = pg.mkPen(item.opts["pen"] if hasattr(item, "opts") else item.pen)
            pen.setWidthF(self._width)
            item.setPen(pen)
