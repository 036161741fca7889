"""Paper Fig. 5: P[obstruction at initialization] over (d, l), Xavier and Kaiming normal.

Closed form as the heatmap, Monte Carlo estimates as dots on top (same colour scale, so a dot
that disappears into its cell agrees); hovering a cell shows both numbers.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.obstruction import probability_maps_job

from .heatmap_plot import HeatmapPlot
from .plot_style import set_plot_fonts

SCHEMES = {"xavier_normal": "Xavier normal", "kaiming_normal": "Kaiming normal"}  # engine's CLOSED_FORM_SCHEMES
CMAP = pg.colormap.get("viridis")


class Fig5View(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel("Probability that some neuron starts pathological (c_k < 0, e = 1): "
                              "P = 1 − (1 − p)ˡ. Heatmap: closed form; dots: Monte Carlo.")
        self.caption.setWordWrap(True)
        self.caption.setStyleSheet("padding: 6px; font-size: 11pt;")
        row = QHBoxLayout()
        self.maps = {}
        self.dots = {}
        for scheme, name in SCHEMES.items():
            heat = HeatmapPlot(f"{name}: P[obstruction]", "d (inputs)", "l (hidden neurons)",
                               levels=(0.0, 1.0))
            row.addWidget(heat)
            dots = pg.ScatterPlotItem(size=9, pen=pg.mkPen("w", width=1.5))
            heat.plot.addItem(dots)
            self.maps[scheme], self.dots[scheme] = heat, dots
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addLayout(row, 1)
        self.result = None

    def make_job(self, p, steps=None):
        return probability_maps_job(p["d_max"], p["l_max"], p["mc_samples"], p["mc_stride"], p["seed"])

    def reset(self):
        self.result = None
        for scheme in SCHEMES:
            self.maps[scheme].clear_grid()
            self.dots[scheme].setData([])

    def show_partial(self, result):
        self.show_result(result)

    def show_result(self, result: dict):
        """The engine's maps: d (nd,), l (nl,), closed[scheme] (nd, nl), mc[scheme] rows (d, l, p, se)."""
        self.result = result
        d, l = np.asarray(result["d"]), np.asarray(result["l"])
        for scheme in SCHEMES:
            closed = np.asarray(result["closed"][scheme], dtype=float)
            mc = np.asarray(result["mc"].get(scheme, np.zeros((0, 4))), dtype=float).reshape(-1, 4)
            heat = self.maps[scheme]
            heat.set_grid(d, l, closed)
            heat.describe = self._describer(d, l, closed, mc)
            self.dots[scheme].setData(x=mc[:, 0], y=mc[:, 1],
                                      brush=[pg.mkBrush(c) for c in CMAP.map(np.clip(mc[:, 2], 0, 1), mode="qcolor")])

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

    def result_state(self, result: dict) -> dict:
        return {"d": np.asarray(result["d"]), "l": np.asarray(result["l"]),
                **{f"closed_{s}": np.asarray(result["closed"][s]) for s in SCHEMES},
                **{f"mc_{s}": np.asarray(result["mc"].get(s, np.zeros((0, 4)))) for s in SCHEMES}}

    def result_from_state(self, state: dict) -> dict:
        return {"d": state["d"], "l": state["l"], "closed": {s: state[f"closed_{s}"] for s in SCHEMES},
                "mc": {s: state[f"mc_{s}"] for s in SCHEMES}}
