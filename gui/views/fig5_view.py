"""Paper Fig. 5: P[obstruction at initialization] over (d, l), Xavier and Kaiming normal.

Closed form as the heatmap, Monte Carlo estimates as dots on top (same colour scale, so a dot
that disappears into its cell agrees); hovering a cell shows both numbers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.core.errors import EngineInputError
from engine.topology.probability import CLOSED_FORM_SCHEMES, MapSettings, ProbabilityMaps

from ..rendering.plot_style import set_plot_fonts
from .heatmap_plot import HeatmapPlot

NAMES = {"xavier_normal": "Xavier normal", "kaiming_normal": "Kaiming normal"}
SCHEMES = {scheme: NAMES[scheme] for scheme in CLOSED_FORM_SCHEMES}
CMAP = pg.colormap.get("viridis")


class Fig5View(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel(
            "Probability that some neuron starts pathological (c_k < 0, e = 1): "
            "P = 1 − (1 − p)ˡ. Heatmap: closed form; dots: Monte Carlo."
        )
        self.caption.setWordWrap(True)
        self.caption.setStyleSheet("padding: 6px; font-size: 11pt;")
        row = QHBoxLayout()
        self.maps = {}
        self.dots = {}
        self.halos = {}
        for scheme, name in SCHEMES.items():
            heat = HeatmapPlot(f"{name}: P[obstruction]", "d (inputs)", "l (hidden neurons)", levels=(0.0, 1.0))
            row.addWidget(heat)
            # A black-and-white double ring: the white one vanishes on yellow, a black one on purple.
            halo = pg.ScatterPlotItem(size=15, pen=pg.mkPen("w", width=2), brush=None)
            dots = pg.ScatterPlotItem(size=11, pen=pg.mkPen("k", width=2))
            heat.plot.addItem(halo)
            heat.plot.addItem(dots)
            self.halos[scheme] = halo
            self.maps[scheme], self.dots[scheme] = heat, dots
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addLayout(row, 1)
        self.result = None

    def reset(self):
        self.result = None
        for scheme in SCHEMES:
            self.maps[scheme].clear_grid()
            self.dots[scheme].setData([])
            self.halos[scheme].setData([])

    def show_partial(self, result):
        self.show_result(result)

    def show_result(self, result: ProbabilityMaps):
        self.result = result
        d, l = result.d, result.l
        for scheme in SCHEMES:
            closed, mc = result.closed[scheme], result.mc[scheme]
            heat = self.maps[scheme]
            heat.set_grid(d, l, closed)
            heat.describe = self._describer(d, l, closed, mc)
            self.halos[scheme].setData(x=mc[:, 0], y=mc[:, 1])
            self.dots[scheme].setData(
                x=mc[:, 0], y=mc[:, 1], brush=[pg.mkBrush(c) for c in CMAP.map(np.clip(mc[:, 2], 0, 1), mode="qcolor")]
            )

    @staticmethod
    def _describer(d, l, closed, mc):
        def describe(i, j):
            text = f"d = {d[i]:g}, l = {l[j]:g}\nclosed form P = {closed[i, j]:.4f}"
            hit = mc[(mc[:, 0] == d[i]) & (mc[:, 1] == l[j])]
            if len(hit):
                text += f"\nMonte Carlo {hit[0, 2]:.4f} ± {hit[0, 3]:.4f}"
            return text

        return describe

    def has_data(self) -> bool:
        return self.result is not None and all(m.values.size for m in self.maps.values())

    def plot_widgets(self):
        return {f"Fig. 5 {name}": self.maps[s] for s, name in SCHEMES.items()}

    def set_presentation(self, on: bool):
        for heat in self.maps.values():
            set_plot_fonts(heat.plot, on)
            heat.set_presentation(on)
        for scheme in SCHEMES:
            self.halos[scheme].setSize(22 if on else 15)
            self.dots[scheme].setSize(17 if on else 11)
        self.caption.setStyleSheet(f"padding: 6px; font-size: {16 if on else 11}pt;")

    def result_state(self, result: ProbabilityMaps) -> dict:
        return {
            "settings": dataclasses.asdict(result.settings),
            "d": result.d,
            "l": result.l,
            "closed": dict(result.closed),
            "mc": dict(result.mc),
        }

    def result_from_state(self, state: dict) -> ProbabilityMaps:
        try:
            return ProbabilityMaps(
                MapSettings(**state["settings"]),
                state["d"],
                state["l"],
                {s: state["closed"][s] for s in SCHEMES},
                {s: state["mc"][s] for s in SCHEMES},
            )
        except (KeyError, TypeError) as error:
            raise EngineInputError(f"saved Fig. 5 maps do not fit: {error}") from None
