"""A plane's persistence diagram: each sublevel-set component (a local minimum of the grid) as a
point (birth, death), the diagonal, and the threshold line death = birth + τ above which a
component counts as a basin of its own. The global minimum's component never dies: its point is
a triangle on the plot's top edge, which the subtitle names (a text item placed there drifted
off its point on a diagram a few 1e-13 tall)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..rendering.plot_style import limit_ticks, own_menus, set_title
from ..style import NEURON_COLORS

BASIN = NEURON_COLORS[0]  # a component above the threshold, as basin 0's colour on the map
DENT = "#999999"  # at or below it: a dent merged into an older basin
MARK = {False: 10, True: 16}  # px, normal and presentation
INFINITE_MARK = {False: 14, True: 22}
TOP_ROOM = 0.08  # of the diagram's span: the ∞ edge above the highest finite death
# A diagram whose values differ by less than this share of their size is drawn relative to its
# lowest birth: a line of minima (paper B's) gave 14-digit tick labels that ran into each other.
OFFSET_SPAN = 1e-4
BIRTH, DEATH = "birth (loss at a minimum)", "death (loss)"


def diagram_top(birth: np.ndarray, death: np.ndarray) -> float:
    """Where the infinite death is drawn: a little above every finite value of the diagram."""
    values = np.concatenate([birth, death[np.isfinite(death)]])
    low, high = float(values.min()), float(values.max())
    return high + TOP_ROOM * max(high - low, abs(high) * 1e-9, 1e-300)


class PersistenceView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        set_title(self, "persistence diagram")
        # short: the plot is low beside the planes, and a projector's fonts are large
        self.setLabel("bottom", BIRTH)
        self.setLabel("left", DEATH)
        self.showGrid(x=True, y=True, alpha=0.15)
        limit_ticks(self.getAxis("bottom"))
        limit_ticks(self.getAxis("left"))
        self.diagonal = pg.PlotDataItem(pen=pg.mkPen("#888888", width=1))
        self.threshold_line = pg.PlotDataItem(pen=pg.mkPen("#888888", width=1.5, style=Qt.PenStyle.DashLine))
        self.points = pg.ScatterPlotItem(size=MARK[False], pen=pg.mkPen("w", width=1))
        self.infinite = pg.ScatterPlotItem(size=INFINITE_MARK[False], symbol="t1", pen=pg.mkPen("w", width=1))
        for item in (self.diagonal, self.points, self.infinite):
            self.addItem(item)
        # the threshold line runs over the diagonal's span and never widens the range the pairs set
        self.addItem(self.threshold_line, ignoreBounds=True)
        # the threshold line's start, in the range while τ is within the diagram's span (then the line shows)
        self.anchor = pg.ScatterPlotItem(size=0, pen=None, brush=None)
        self.addItem(self.anchor)
        self.birth = self.death = np.zeros(0)
        self.threshold = 0.0
        self.top = 0.0
        self.offset = 0.0  # subtracted from every value drawn (OFFSET_SPAN)
        own_menus(self)
        self.set_presentation(False)

    def set_presentation(self, on: bool):
        """Marks grow with the axes' fonts for a projector."""
        self.points.setSize(MARK[on])
        self.infinite.setSize(INFINITE_MARK[on])

    def show_persistence(self, birth, death, threshold: float, note: str = ""):
        """Pairs (birth, death), death +inf for the global minimum's; ``threshold`` in loss units."""
        birth, death = np.asarray(birth, float), np.asarray(death, float)
        self.offset = 0.0
        if len(birth):
            low, top = float(birth.min()), diagram_top(birth, death)
            if top - low < OFFSET_SPAN * abs(low):
                self.offset = low
        self.birth, self.death = birth - self.offset, death - self.offset
        shift = f" − {self.offset:.10g}"  # relative: the loss words give way to the offset
        self.setLabel("bottom", "birth" + shift if self.offset else BIRTH)
        self.setLabel("left", "death" + shift if self.offset else DEATH)
        # the ∞ edge's room from the values as given: shifted, a lone minimum at 0 left it none
        self.top = diagram_top(birth, death) - self.offset if len(birth) else 0.0
        low = float(self.birth.min()) if len(self.birth) else 0.0
        self.diagonal.setData([low, self.top], [low, self.top])
        self.set_threshold(threshold, note)
        self.enableAutoRange()

    def set_threshold(self, threshold: float, note: str = ""):
        """Colour the components by whether their persistence exceeds ``threshold``."""
        self.threshold = float(threshold)
        if not len(self.birth):
            return
        finite = np.isfinite(self.death)
        basin = (self.death - self.birth) > self.threshold
        brushes = [pg.mkBrush(BASIN if b else DENT) for b in basin[finite]]
        self.points.setData(self.birth[finite], self.death[finite], brush=brushes)
        forever = self.birth[~finite]
        self.infinite.setData(forever, np.full(len(forever), self.top), brush=pg.mkBrush(BASIN))
        low = float(self.birth.min())
        self.threshold_line.setData([low, self.top], [low + self.threshold, self.top + self.threshold])
        near = self.threshold <= self.top - low
        self.anchor.setData([low] if near else [], [low + self.threshold] if near else [])
        count = int(np.count_nonzero(basin))
        minima = f"{len(self.birth)} minim{'a' if len(self.birth) != 1 else 'um'}"
        text = f"{minima}, {count} basin{'s' if count != 1 else ''} of persistence > τ = {self.threshold:.3g}"
        note = " · ".join(part for part in (note, "▲ the global minimum (death ∞)") if part)
        set_title(self, "persistence diagram", [text, note])

    def clear_persistence(self):
        self.birth = self.death = np.zeros(0)
        for item in (self.diagonal, self.threshold_line, self.points, self.infinite, self.anchor):
            item.setData([], [])
        set_title(self, "persistence diagram")
