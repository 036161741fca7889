"""Random-direction slices L(θ + t d) (paper Fig. 3a/c): K curves, their min envelope and L*."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from .plot_style import DASHED, SOLID, dips_below, follow_theme, key_text, set_title

CURVE_RGB = (0, 114, 178)
ENVELOPE_COLOR = "#D55E00"
DESCENT_COLOR = "#CC79A7"  # distinct from the blue curves and the orange envelope


def curve_alpha(k: int) -> int:
    """Opacity of one of K overlapping curves: about 30 curves on one pixel saturate it, so
    thousands read as a density (dense where many directions pass) instead of a solid block,
    and a few curves stay clearly visible."""
    return int(np.clip(round(255 * 30 / max(k, 1) ** 1.15), 4, 160))


class SliceView(pg.PlotWidget):
    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self._title = title
        set_title(self, title)
        self.n_curves = 0
        self.setLabel("bottom", "t  (θ + t·d)")
        self.setLabel("left", "loss L")
        self.showGrid(x=True, y=True, alpha=0.2)
        # ONE item for all K curves: NaN-free, broken between curves by a connect array, so
        # pan/zoom redraws one path instead of K items (K = 5000, P = 101 stays interactive).
        self.curves = pg.PlotCurveItem(
            pen=pg.mkPen(CURVE_RGB + (curve_alpha(1000),), width=1), antialias=False, skipFiniteCheck=True
        )
        self.envelope = pg.PlotCurveItem(pen=pg.mkPen(ENVELOPE_COLOR, width=3))
        # L* takes the text colour: black vanished on the dark theme.
        self.lstar = pg.InfiniteLine(
            angle=0, movable=False, label="L*", labelOpts={"position": 0.04, "anchors": [(0, 1), (0, 1)]}
        )
        self.descent = pg.PlotCurveItem(pen=pg.mkPen(DESCENT_COLOR, width=3, style=Qt.PenStyle.DashLine))
        for item in (self.curves, self.envelope, self.descent):
            self.addItem(item)
        self.lstar.hide()
        self.addItem(self.lstar)
        self._lstar_width = 2
        self._subtitle: list[str] = []
        self._with_descent = False
        follow_theme(self, self._set_foreground)

    def _set_foreground(self, color):
        self._fg = color
        self.lstar.setPen(pg.mkPen(color, width=self._lstar_width, style=Qt.PenStyle.DashLine))
        self.lstar.label.setColor(color)
        if self._subtitle:
            self._show_title(self._subtitle, self._with_descent)

    def _show_title(self, lines: list[str], with_descent: bool):
        """The key (curves fill every corner, so no legend box) and the numbers, under the title."""
        self._subtitle, self._with_descent = lines, with_descent
        key = [(CURVE_RGB, SOLID, "slices"), (ENVELOPE_COLOR, SOLID, "envelope"), (self._fg, DASHED, "L*")] + (
            [(DESCENT_COLOR, DASHED, "B6 descent")] if with_descent else []
        )
        set_title(self, self._title, [key_text(key)] + lines)

    def set_title(self, title: str):
        self._title = title
        set_title(self, title)

    def show_slices(
        self,
        t,
        losses,
        envelope,
        lstar: float,
        gap: float,
        n_below: int,
        descent=None,
        family: str = "",
        predicted=None,
    ):
        """``losses`` (K, P) on the grid ``t`` (P,); ``descent`` an optional (t, loss) line along the
        analytic descent direction, drawn over the random ones. The numbers come from the engine."""
        t, losses = np.asarray(t, float), np.asarray(losses, float)
        k, p = losses.shape
        connect = np.ones((k, p), dtype=bool)
        connect[:, -1] = False  # the last point of each curve does not join the next curve
        self.curves.setData(np.tile(t, k), losses.ravel(), connect=connect.ravel())
        self.curves.setPen(pg.mkPen(CURVE_RGB + (curve_alpha(k),), width=1))
        self.envelope.setData(t, np.asarray(envelope, float))
        self.lstar.setValue(lstar)
        self.lstar.show()
        self.n_curves = k
        lines = [f"{n_below} of {k} random directions dip below L*", f"envelope − L* ≥ {gap:.2g}"]
        if predicted is not None:  # the engine's second-order prediction for this family (dᵀHd < 0)
            lines.insert(1, f"over {family}: predicted {predicted:.2g}, seen {n_below / k:.2g}")
        if descent is None:
            self.descent.setData([], [])
            low = min(np.nanmin(envelope), lstar)
        else:
            self.descent.setData(np.asarray(descent[0], float), np.asarray(descent[1], float))
            lowest = float(np.min(descent[1]))
            dip = lowest - lstar
            lines.append(f"B6 descent line: {dip:.2g} below L*" if dip < 0 else f"B6 descent line: +{dip:.2g}")
            low = min(np.nanmin(envelope), lstar, lstar + dip)
        # The summary sits under the title, where it can never cover a curve.
        # Short lines: a title wider than the plot widens the plot item past its widget.
        self._show_title(lines, descent is not None)
        # Frame the interesting part: the envelope and L*, not the tallest of K curves; with a
        # descent line, frame that too, or its dip (~1e−4 of L* at the Fig. 3 saddle) is invisible.
        top = np.nanpercentile(losses, 40)
        if descent is not None and dips_below(lowest, lstar):  # a flat line (inside I): nothing to magnify
            top = min(top, float(np.max(descent[1])))
        pad = 0.08 * max(top - low, 1e-12)
        self.setXRange(t[0], t[-1], padding=0.02)
        self.setYRange(low - pad, top + pad, padding=0)

    def clear_slices(self):
        self.curves.setData([], [])
        self.envelope.setData([], [])
        self.descent.setData([], [])
        self.lstar.hide()
        self._subtitle = []
        set_title(self, self._title)
        self.n_curves = 0

    def set_presentation(self, on: bool):
        self.envelope.setPen(pg.mkPen(ENVELOPE_COLOR, width=5 if on else 3))
        self.descent.setPen(pg.mkPen(DESCENT_COLOR, width=5 if on else 3, style=Qt.PenStyle.DashLine))
        self._lstar_width = 3 if on else 2
        self._set_foreground(self._fg)
