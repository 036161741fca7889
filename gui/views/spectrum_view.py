"""Hessian spectrum on a signed log scale: y = sign(e)·log10(|e|/τ) above the zero tolerance τ.

Eigenvalues with |e| ≤ τ (the engine's "zero") sit on y = 0, so hundreds of degenerate
directions and a single −2e−2 are visible in one picture; negative ones are drawn in red.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..rendering.plot_style import own_menus, set_title

POSITIVE, ZERO, NEGATIVE = "#0072B2", "#999999", "#D62728"


class SignedLogAxis(pg.AxisItem):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log_tol = -9.0

    def tickValues(self, minVal, maxVal, size):
        step = max(1, int(np.ceil((maxVal - minVal) / 8)))
        ticks = [float(k) for k in range(int(np.floor(minVal)), int(np.ceil(maxVal)) + 1) if k % step == 0]
        return [(step, ticks)]

    def tickStrings(self, values, scale, spacing):
        """|e| = τ·10^|y|, written with τ's own mantissa (τ = 5e−07 gives 5e−07, 5e−06, …):
        rounding log10 τ to an integer labelled the zero band 1e−6 under a caption of 5e−07."""
        out = []
        for v in values:
            if abs(v) < 0.5:
                out.append(f"|e|≤{10**self.log_tol:.0e}")
            else:
                out.append(("−" if v < 0 else "") + f"{10 ** (self.log_tol + abs(v)):.0e}")
        return out


class SpectrumView(pg.PlotWidget):
    def __init__(self, parent=None):
        self.axis = SignedLogAxis("left")
        super().__init__(parent, axisItems={"left": self.axis})
        set_title(self, "Hessian spectrum (signed log scale)")
        self.setLabel("bottom", "eigenvalue index")
        self.setLabel("left", "eigenvalue e")
        self.showGrid(x=False, y=True, alpha=0.25)
        # One item per kind, each of one brush and size: with a brush per spot, pyqtgraph made
        # each spot's symbol on its own, on the GUI thread.
        self.groups = {
            kind: pg.ScatterPlotItem(size=size, pen=None, brush=pg.mkBrush(color))
            for kind, size, color in (("zero", 6, ZERO), ("positive", 6, POSITIVE), ("negative", 10, NEGATIVE))
        }
        for item in self.groups.values():  # the negative ones last: on top
            self.addItem(item)
        self.zero_line = pg.InfiniteLine(angle=0, pen=pg.mkPen(ZERO, width=1))
        self.addItem(self.zero_line)
        self.getViewBox().setDefaultPadding(0.06)  # the end points' dots stay whole
        own_menus(self)

    def show_stage(self, data: dict):
        """The minima tab's "spectrum" stage (gui.present.minima), as the tab and a clip draw it."""
        self.show_spectrum(data["eigs"], data["tol"], data.get("caption", ""))

    def show_spectrum(self, eigs, tol: float, caption: str = ""):
        eigs = np.sort(np.asarray(eigs, float))
        log_tol = np.log10(tol)
        self.axis.log_tol = log_tol
        magnitude = np.log10(np.maximum(np.abs(eigs), tol)) - log_tol
        y = np.sign(eigs) * magnitude
        x = np.arange(len(eigs))
        for kind, where in (("negative", eigs < -tol), ("zero", np.abs(eigs) <= tol), ("positive", eigs > tol)):
            self.groups[kind].setData(x[where], y[where])
        n_neg, n_zero = int((eigs < -tol).sum()), int((np.abs(eigs) <= tol).sum())
        # The caption goes under the title: in the x label it was clipped in a narrow panel.
        counts = (
            f"<span style='color:{NEGATIVE}'><b>{n_neg}</b> negative</span>"
            f" · <b>{n_zero}</b> zero (|e| ≤ {tol:.0e}) · <span style='color:{POSITIVE}'>"
            f"<b>{len(eigs) - n_neg - n_zero}</b> positive</span>"
        )
        set_title(self, "Hessian spectrum (signed log scale)", [caption, counts] if caption else [counts])
        # Auto-range that stays on: the dots' pixel margins make a one-shot range depend on the size
        # the plot had when drawn (a session reopened into a hidden tab framed it differently).
        self.enableAutoRange()

    def clear_spectrum(self):
        for item in self.groups.values():
            item.setData([], [])
        set_title(self, "Hessian spectrum (signed log scale)")
