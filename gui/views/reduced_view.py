"""The exact reduced picture for any d, e: each neuron on the hyperbola ‖w‖² − v² = c_k.

For e = 1 the vertical axis is the signed output weight v, so the two sheets of a pathological
neuron stay apart; for e > 1 it is ‖v‖. For d = 1 without biases the horizontal axis is the
signed input weight w, since its sign is then what the component label records.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from engine.topology.quadrics import hyperbola

from ..style import neuron_color
from .neuron_quadrics import sub
from .plot_style import add_legend, legend_to_empty_corner, own_menus
from .quadric_view import decimate, time_colors

FLIP_MARK = ("star", (255, 200, 0), "v flips sign (free neuron)")
JUMP_MARK = ("d", (158, 56, 199), "v jumps the barrier (finite step)")  # violet, as in the 3D views


class ReducedView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.showGrid(x=True, y=True, alpha=0.25)
        add_legend(self, offset=(8, 8))
        self.setAspectLocked(True)
        self.curves: list[pg.PlotDataItem] = []  # everything drawn, to clear between runs
        self.trajectories: list[pg.PlotDataItem] = []
        self.extent = 2.0
        own_menus(self)

    def configure(self, signed_w: bool, signed_v: bool, horizontal: str, vertical: str, extent: float):
        self.signed_w, self.signed_v, self.extent = signed_w, signed_v, extent
        # ‖w‖ ≥ 0 (and ‖v‖ ≥ 0): a locked aspect ratio in a wide view would stretch the axis to
        # negative norms (−2.4 … 4.4, the left third empty). Fix the box to what can be drawn.
        E = extent * 1.05
        self.setAspectLocked(signed_w)
        self.enableAutoRange(False)
        self.setXRange(-E if signed_w else 0, E, padding=0.02)
        self.setYRange(-E if signed_v else 0, E, padding=0.02)
        self.setLabel("bottom", horizontal)
        self.setLabel("left", vertical)
        self.setTitle(
            f"exact reduced view: {horizontal}² − {vertical}² = c<sub>k</sub>"
            if not signed_w
            else f"exact view: {horizontal}² − {vertical}² = c<sub>k</sub>"
        )
        self.clear_all()

    def clear_all(self):
        self.clear()
        if self.plotItem.legend is not None:
            self.plotItem.legend.clear()
        self.curves, self.trajectories = [], []

    def _branches(self, c: float):
        for r, v in hyperbola(c, extent=self.extent, n=160):
            if not self.signed_v:
                keep = v >= 0
                r, v = r[keep], v[keep]
            yield r, v
            if self.signed_w:
                yield -r, v

    def show_neurons(
        self,
        r: np.ndarray,
        v: np.ndarray,
        time_fraction: np.ndarray,
        c_now: np.ndarray,
        c_start: np.ndarray,
        events: list[list[tuple[int, int, bool]]],
    ):
        """r, v: (T, l) reduced coordinates from the engine; events[k]: (row, step, jumped) of
        neuron k's output-sign changes, jumped for a pathological neuron's finite-step jump."""
        self.clear_all()
        named = set()  # one legend entry per kind of event
        rows = decimate(len(r))
        xs, ys = [r[rows].ravel()], [v[rows].ravel()]
        for k in range(r.shape[1]):
            color = neuron_color(k)
            name = f"neuron {k + 1}: c{sub(k + 1)} = {c_now[k]:+.3g}"
            twin = self._twin(c_now, k)
            for i, (x, y) in enumerate(self._branches(float(c_now[k]))):
                self.plot(x, y, pen=self._curve_pen(k, twin), name=name if i == 0 else None)
                xs.append(x), ys.append(y)
            if abs(c_now[k] - c_start[k]) > 2e-3 * self.extent**2:
                for x, y in self._branches(float(c_start[k])):
                    self.plot(x, y, pen=pg.mkPen(color, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine))
            brushes = [pg.mkBrush(c) for c in time_colors(time_fraction[rows], mode="qcolor")]
            # Darker than the neuron's curve and above it, so a path along Q(c) stays visible.
            line = self.plot(
                r[rows, k],
                v[rows, k],
                pen=pg.mkPen(color.darker(160), width=3),
                symbol="o",
                symbolSize=5,
                symbolPen=None,
                symbolBrush=brushes,
            )
            line.setZValue(5)
            self.trajectories.append(line)
            self.plot(r[:1, k], v[:1, k], pen=None, symbol="o", symbolSize=11, symbolBrush="k")
            self.plot(r[-1:, k], v[-1:, k], pen=None, symbol="o", symbolSize=13, symbolBrush=(220, 30, 30))
            for jumped, (symbol, brush, what) in ((False, FLIP_MARK), (True, JUMP_MARK)):
                rows_k = [row for row, _, j in events[k] if j == jumped]
                if rows_k:
                    first = what not in named
                    named.add(what)
                    self.plot(
                        r[rows_k, k],
                        v[rows_k, k],
                        pen=None,
                        symbol=symbol,
                        symbolSize=18,
                        symbolBrush=brush,
                        symbolPen="k",
                        name=what if first else None,
                    )
        legend_to_empty_corner(self, np.concatenate(xs), np.concatenate(ys))

    @staticmethod
    def _twin(c: np.ndarray, k: int) -> bool:
        """Neuron k lies on the same curve as an earlier neuron (equal c): dash it."""
        return any(abs(float(c[k]) - float(c[j])) <= 1e-6 * max(1.0, abs(float(c[j]))) for j in range(k))

    def _curve_pen(self, k: int, twin: bool):
        if twin:
            return pg.mkPen(neuron_color(k), width=2.5, style=pg.QtCore.Qt.PenStyle.DashLine)
        return pg.mkPen(neuron_color(k), width=2.5)

    def preview(self, c: np.ndarray):
        self.clear_all()
        for k, ck in enumerate(c):
            for i, (x, y) in enumerate(self._branches(float(ck))):
                self.plot(
                    x,
                    y,
                    pen=self._curve_pen(k, self._twin(c, k)),
                    name=f"neuron {k + 1}: c{sub(k + 1)} = {ck:+.3g}" if i == 0 else None,
                )

    def shown_points(self) -> int:
        return sum(len(t.xData) for t in self.trajectories if t.xData is not None)
