"""The exact reduced picture for any d, e: each neuron on the hyperbola ‖w‖² − v² = c_k.

For e = 1 the vertical axis is the signed output weight v, so the two sheets of a pathological
neuron stay apart; for e > 1 it is ‖v‖. For d = 1 without biases the horizontal axis is the
signed input weight w, since its sign is then what the component label records.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..present.topology import sub, twin
from ..rendering.plot_style import add_legend, legend_to_empty_corner, own_menus
from ..style import neuron_color
from .quadric_view import time_colors

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

    def show_state(self, state: dict) -> None:
        """The state's reduced picture (gui.present.topology): per neuron its curve r² − v² = c_k
        now and, dashed, at the start where c drifted; the decimated path coloured by time; the
        start, the head and the sign changes. Nothing is computed here but the legend's corner."""
        self.clear_all()
        named = set()  # one legend entry per kind of event
        r, v = state["r"], state["v"]
        xs, ys = [r.ravel()], [v.ravel()]
        brushes = [pg.mkBrush(c) for c in time_colors(state["fraction"], mode="qcolor")]
        for k, neuron in enumerate(state["neurons"]):
            color = neuron_color(k)
            name = f"neuron {k + 1}: c{sub(k + 1)} = {neuron['c']:+.3g}"
            for i, (x, y) in enumerate(neuron["branches"]):
                self.plot(x, y, pen=self._curve_pen(k, neuron["twin"]), name=name if i == 0 else None)
                xs.append(x), ys.append(y)
            for x, y in neuron["ghost"]:
                self.plot(x, y, pen=pg.mkPen(color, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine))
            # Darker than the neuron's curve and above it, so a path along Q(c) stays visible.
            line = self.plot(
                r[:, k],
                v[:, k],
                pen=pg.mkPen(color.darker(160), width=3),
                symbol="o",
                symbolSize=5,
                symbolPen=None,
                symbolBrush=brushes,
            )
            line.setZValue(5)
            self.trajectories.append(line)
            (r0, v0), (r1, v1) = state["start"], state["head"]
            self.plot(r0[:, k], v0[:, k], pen=None, symbol="o", symbolSize=11, symbolBrush="k")
            self.plot(r1[:, k], v1[:, k], pen=None, symbol="o", symbolSize=13, symbolBrush=(220, 30, 30))
            for (x, y), (symbol, brush, what) in ((neuron["flips"], FLIP_MARK), (neuron["jumps"], JUMP_MARK)):
                if len(x):
                    first = what not in named
                    named.add(what)
                    self.plot(
                        x, y, pen=None, symbol=symbol, symbolSize=18, symbolBrush=brush, symbolPen="k",
                        name=what if first else None,
                    )  # fmt: skip
        legend_to_empty_corner(self, np.concatenate(xs), np.concatenate(ys))

    def _curve_pen(self, k: int, twin: bool):
        if twin:
            return pg.mkPen(neuron_color(k), width=2.5, style=pg.QtCore.Qt.PenStyle.DashLine)
        return pg.mkPen(neuron_color(k), width=2.5)

    def preview(self, curves: list[list[tuple]], c) -> None:
        """Before a run: each neuron's curves r² − v² = c_k (``curves``, from the layout's preview)."""
        self.clear_all()
        for k, branches in enumerate(curves):
            for i, (x, y) in enumerate(branches):
                self.plot(
                    x,
                    y,
                    pen=self._curve_pen(k, twin(c, k)),
                    name=f"neuron {k + 1}: c{sub(k + 1)} = {c[k]:+.3g}" if i == 0 else None,
                )

    def shown_points(self) -> int:
        return sum(len(t.xData) for t in self.trajectories if t.xData is not None)
