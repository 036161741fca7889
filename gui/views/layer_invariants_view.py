"""Every hidden layer of a network that is not two-layer, one row each: its units' rescaling
invariant c as dots (spread a little up and down by unit index, so equal values stay visible), the
layer's range as a bar, its 10–90 % band as a box, the locked units as a distinct ✕, and c = 0 as
a dashed line. The row's label names the layer's law, its share of c < 0 and its locked count;
the caption below gives each law's reason. The rows come from gui.present.layer_invariants; the
view only draws them, and keeps them (``rows``) and its items for tests to compare."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ..rendering.plot_style import limit_ticks, own_menus, set_plot_fonts, set_title
from ..style import NEURON_COLORS

DOT = {False: 7, True: 12}  # px, normal and presentation
LOCK = {False: 14, True: 22}
SPREAD = 0.22  # rows apart: the dots of a row lie within ± this
BAND_HEIGHT = 0.36
LOCKED_COLOR = "#d62728"


def spread(n: int) -> np.ndarray:
    """Each unit's vertical offset in its row, from its index alone (the same every time)."""
    return SPREAD * (((np.arange(n) * 0.618034) % 1.0) * 2 - 1)


class LayerInvariantsView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.plot = pg.PlotWidget()
        set_title(self.plot, "c per hidden unit, by layer")
        self.plot.setLabel("bottom", "c = ‖w‖² + b² − ‖v‖²")
        self.plot.showGrid(x=True, y=False, alpha=0.15)
        limit_ticks(self.plot.getAxis("bottom"))
        own_menus(self.plot)
        self.caption = QLabel(wordWrap=True, textFormat=Qt.TextFormat.RichText)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.caption)
        self.rows: list[dict] = []
        self.dots: list[pg.ScatterPlotItem] = []  # per row: every unit, at (c, row + spread)
        self.locks: list[pg.ScatterPlotItem] = []  # per row: the locked units only
        self.labels: list[pg.TextItem] = []
        self._presenting = False

    def show_layers(self, rows: list[dict], caption: str):
        """Draw ``rows`` (gui.present.layer_invariants.layer_rows), the first layer on top."""
        self.plot.clear()
        self.rows, self.dots, self.locks, self.labels = list(rows), [], [], []
        self.plot.addItem(pg.InfiniteLine(0.0, angle=90, pen=pg.mkPen("#888888", width=1, style=Qt.PenStyle.DashLine)))
        for i, row in enumerate(rows):
            y = -float(i)
            color = NEURON_COLORS[i % len(NEURON_COLORS)]
            low, high = row["band"]
            band = pg.QtWidgets.QGraphicsRectItem(low, y - BAND_HEIGHT, high - low, 2 * BAND_HEIGHT)
            band.setPen(pg.mkPen(color, width=1))
            band.setBrush(pg.mkBrush(color))
            band.setOpacity(0.3)
            self.plot.addItem(band)
            self.plot.plot([row["min"], row["max"]], [y, y], pen=pg.mkPen(color, width=2))
            c = np.asarray(row["c"], float)
            offsets = spread(len(c))
            dots = pg.ScatterPlotItem(c, y + offsets, size=DOT[self._presenting], brush=pg.mkBrush(color), pen=None)
            locked = np.asarray(row["locked"], int)
            lock = pg.ScatterPlotItem(
                c[locked], y + offsets[locked], symbol="x", size=LOCK[self._presenting], brush=pg.mkBrush(LOCKED_COLOR)
            )
            lock.setPen(pg.mkPen(LOCKED_COLOR, width=1.5))
            label = pg.TextItem(row["label"], color=color, anchor=(0, 1))
            label.setPos(row["min"], y + BAND_HEIGHT + 0.12)
            for item in (dots, lock, label):
                self.plot.addItem(item)
            self.dots.append(dots), self.locks.append(lock), self.labels.append(label)
        self.plot.getAxis("left").setTicks([[(-float(i), str(i + 1)) for i in range(len(rows))]])
        self.plot.setLabel("left", "hidden layer")
        self.caption.setText(caption)
        self.plot.enableAutoRange()

    def set_presentation(self, on: bool):
        self._presenting = on
        set_plot_fonts(self.plot, on)
        for dots, lock in zip(self.dots, self.locks):
            dots.setSize(DOT[on])
            lock.setSize(LOCK[on])
