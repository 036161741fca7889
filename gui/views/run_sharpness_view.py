"""A followed run's sharpness (the loss Hessian's top eigenvalue) against its step, with the edge
of stability 2/η, η the learning rate recorded at each measurement (gui/workspaces/run.py)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..rendering.plot_style import DASHED, SOLID, follow_theme, key_text, own_menus, set_title
from ..style import NEURON_COLORS

TITLE = "sharpness λ<sub>max</sub> of the loss Hessian"
COLOR = NEURON_COLORS[1]


class RunSharpnessView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        set_title(self, TITLE)
        self.setLabel("bottom", "step")
        self.setLabel("left", "λ<sub>max</sub>")
        self.showGrid(x=True, y=True, alpha=0.25)
        self._width = 2.0
        self.curve = self.plot(symbol="o", symbolSize=5, symbolPen=None, symbolBrush=COLOR)
        # 2/η, a step line where the learning rate changes; a dashed line antialiased took the
        # software rasteriser more than ten times as long as the rest of the plot
        self.edge = self.plot(antialias=False)
        follow_theme(self, self._set_foreground)
        own_menus(self)

    def _set_foreground(self, color):
        self._fg = color
        self.curve.setPen(pg.mkPen(COLOR, width=self._width))
        self.edge.setPen(pg.mkPen(color, width=self._width, style=Qt.PenStyle.DashLine))

    def show_sharpness(self, steps: np.ndarray, sharpness: np.ndarray, edge: np.ndarray, note: str) -> None:
        self.curve.setData(np.asarray(steps, float), np.asarray(sharpness, float))
        keep = np.isfinite(edge)
        self.edge.setData(np.asarray(steps, float)[keep], np.asarray(edge, float)[keep])
        key = key_text([(COLOR, SOLID, "λ<sub>max</sub>"), (self._fg, DASHED, "2/η (edge of stability)")])
        set_title(self, TITLE, [key, note])

    def clear_sharpness(self) -> None:
        self.curve.setData([], [])
        self.edge.setData([], [])
        set_title(self, TITLE)

    def set_presentation(self, on: bool) -> None:
        self._width = 4.0 if on else 2.0
        self.curve.setSymbolSize(9 if on else 5)
        self._set_foreground(self._fg)
