"""Paper Fig. 4: mean test BCE on breast cancer over (l, l₊), and the same against l₊/l.

The sweep runs in the worker and fills in cell by cell; the caption shows how many runs are
done and an ETA from the elapsed time (the engine reports counts, the view keeps the clock).
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

from engine.obstruction import breast_cancer_sweep

from .heatmap_plot import HeatmapPlot
from .plot_style import add_legend, set_plot_fonts

LINE_CMAP = pg.colormap.get("plasma")


def eta_text(done: int, total: int, elapsed_s: float) -> str:
    if done <= 0 or total <= 0:
        return "starting…"
    if done >= total:
        return f"{total} runs in {elapsed_s:.0f} s"
    remaining = elapsed_s * (total - done) / done
    return f"{done} / {total} runs · ETA {remaining:.0f} s"


class Fig4View(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setStyleSheet("padding: 6px; font-size: 11pt;")
        self.heat = HeatmapPlot("mean test BCE", "l (hidden neurons)",
                                "l₊ (non-pathological neurons)", cmap="magma")
        self.lines_widget = pg.PlotWidget(title="mean test BCE against l₊ / l")
        self.lines = self.lines_widget.getPlotItem()
        self.lines.setLabel("bottom", "l₊ / l")
        self.lines.setLabel("left", "mean test BCE")
        self.lines.showGrid(x=True, y=True, alpha=0.25)
        self.lines.getAxis("left").enableAutoSIPrefix(False)
        add_legend(self.lines, offset=(-8, 8))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        row = QHBoxLayout()
        row.addWidget(self.heat, 1)
        row.addWidget(self.lines_widget, 1)
        layout.addLayout(row, 1)
        self.result = None
        self._started = time.monotonic()
        self._ls = list(range(2, 10))
        self.reset()

    def make_job(self, p, steps=None):
        self._ls = list(range(2, p["l_max"] + 1))
        return breast_cancer_sweep(ls=self._ls, n_inits=p["inits"], c0=p["c0"],
                                   sign_policy=p["sign_policy"], lr=p["lr"],
                                   steps=steps or p["steps"], seed=p["seed"])

    def reset(self):
        self.result = None
        self._started = time.monotonic()
        self.heat.clear_grid()
        self.lines.clear()
        self.caption.setText("Breast cancer, two-layer ReLU, BCE: each cell averages the test loss "
                             "over random inits with l₊ neurons at c = +c₀ and the rest at −c₀.")

    def show_partial(self, partial: dict):
        ls = self._ls
        self._show(dict(partial, ls=ls, l_plus=list(range(max(ls) + 1))), final=False)

    def show_result(self, result: dict):
        self._show(result, final=True)

    def _show(self, result: dict, final: bool):
        """The engine's sweep dict: ls, l_plus, mean (len(ls), max l + 1) NaN where not run."""
        self.result = result
        l, lp = np.asarray(result["ls"]), np.asarray(result["l_plus"])
        mean = np.asarray(result["mean"], dtype=float)
        self.heat.set_grid(l, lp, mean)
        self.heat.describe = lambda i, j: (f"l = {l[i]}, l₊ = {lp[j]}\nmean test BCE = {mean[i, j]:.4f}"
                                           if np.isfinite(mean[i, j]) else f"l = {l[i]}, l₊ = {lp[j]}")
        self.lines.clear()
        if self.lines.legend is not None:
            self.lines.legend.clear()
        for i, li in enumerate(l):
            ok = np.isfinite(mean[i]) & (lp <= li)
            if ok.any():
                color = LINE_CMAP.map(i / max(len(l) - 1, 1), mode="qcolor")
                self.lines.plot(lp[ok] / li, mean[i, ok], pen=pg.mkPen(color, width=2), symbol="o",
                                symbolSize=6, symbolBrush=color, symbolPen=None, name=f"l = {li}")
        total = len(result["runs"]) if "runs" in result else int(result["total"])
        done = total if final else int(result["done"])
        self.caption.setText(f"Fig. 4 sweep: {eta_text(done, total, time.monotonic() - self._started)}"
                             + ("" if not final else " — done"))

    def has_data(self) -> bool:
        return self.result is not None and np.isfinite(np.asarray(self.result["mean"])).any()

    def plot_widgets(self):
        return {"Fig. 4 heatmap": self.heat, "Fig. 4 against l₊ / l": self.lines_widget}

    def set_presentation(self, on: bool):
        for plot in (self.heat.plot, self.lines):
            set_plot_fonts(plot, on)

    KEPT = ("ls", "l_plus", "mean", "std", "test_bce", "runs")

    def result_state(self, result: dict) -> dict:
        return {k: np.asarray(result[k]) for k in self.KEPT if k in result}

    def result_from_state(self, state: dict) -> dict:
        return {k: state[k] for k in self.KEPT if k in state}
