"""The Hessian's spectral density from stochastic Lanczos quadrature (PyHessian's ESD): for
networks whose full Hessian would not fit, what the spectrum view shows for small ones."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from ..rendering.plot_style import own_menus, set_title

DENSITY_COLOR = "#0072B2"
EDGE_COLOR = "#D55E00"
FLOOR = 1e-8  # the log axis' floor: a Gaussian's tails reach 1e-300 and would flatten the rest
# px between the plot's right end and the widget's edge. The page fills the window to its right
# edge, and pyqtgraph's layout has no margin there: the axis ran into the edge with no end, and
# a tick label at the end was cut in half.
RIGHT_MARGIN = {False: 16, True: 28}


class SpectralDensityView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._title = "Hessian spectral density (stochastic Lanczos quadrature)"
        set_title(self, self._title)
        self.setLabel("bottom", "eigenvalue λ")
        self.setLabel("left", "density (log)")
        self.showGrid(x=True, y=True, alpha=0.2)
        self.setLogMode(y=True)
        self.curve = self.plot([], [], pen=pg.mkPen(DENSITY_COLOR, width=2.5))
        self.edges = [pg.InfiniteLine(angle=90, pen=pg.mkPen(EDGE_COLOR, width=2, style=Qt.PenStyle.DashLine))]
        self.edges.append(pg.InfiniteLine(angle=90, pen=pg.mkPen(EDGE_COLOR, width=2, style=Qt.PenStyle.DashLine)))
        self.zero = pg.InfiniteLine(angle=90, pen=pg.mkPen("#888888", width=1))
        for line in (*self.edges, self.zero):
            line.hide()
            self.addItem(line)
        own_menus(self)
        self.set_presentation(False)

    def set_presentation(self, on: bool):
        self.getPlotItem().layout.setContentsMargins(1, 1, RIGHT_MARGIN[on], 1)  # pyqtgraph: 1 px each side

    def show_stage(self, data: dict):
        """The minima tab's "density" stage (gui.present.minima), as the tab and a clip draw it."""
        keys = ("grid", "density", "extremes", "trace", "sum_squares", "probes", "steps", "note")
        self.show_density(*(data[k] for k in keys))

    def show_density(
        self, grid, density, extremes, trace: float, sum_squares: float, probes: int, steps: int, note: str = ""
    ):
        """The smoothed density on ``grid``, the extreme Ritz values as dashed lines, and the
        SLQ estimates of tr H and Σλ² under the title (and ``note`` under them, when given)."""
        grid, density = np.asarray(grid, float), np.asarray(density, float)
        self.curve.setData(grid, np.maximum(density, FLOOR))
        for line, value in zip(self.edges, extremes):
            line.setValue(float(value))
            line.show()
        self.zero.setValue(0.0)
        self.zero.show()
        lo, hi = extremes
        set_title(
            self,
            self._title,
            [
                f"{probes} probes × {steps} Lanczos steps · λ from {lo:.3g} to {hi:.3g} (dashed)",
                f"tr H ≈ {trace:.4g} · Σλ² ≈ {sum_squares:.4g}",
            ]
            + ([note] if note else []),
        )
        # Auto-range that stays on: a one-shot autoRange() ran at whatever size the page had when
        # it was drawn (hidden, on another tab, or before the window's last layout), and the
        # density's right end then fell outside the plot shown at 1600×960.
        self.enableAutoRange()

    def clear_density(self):
        self.curve.setData([], [])
        for line in (*self.edges, self.zero):
            line.hide()
        set_title(self, self._title)
