"""A followed run's training loss against its step, on a log axis (gui/workspaces/run.py)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..rendering.plot_style import follow_theme, own_menus, set_title, sparse_log_labels

TITLE = "training loss"


class RunLossView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        set_title(self, TITLE)
        self.setLabel("bottom", "step")
        self.setLabel("left", "loss L(θ)")
        self.showGrid(x=True, y=True, alpha=0.25)
        self.setLogMode(y=True)
        sparse_log_labels(self.getAxis("left"))
        self._width = 2.0
        # Not antialiased: a noisy loss of thousands of steps took the software rasteriser about
        # forty times longer antialiased, and a dense curve looks the same without it.
        self.curve = self.plot(antialias=False)
        self.curve.setDownsampling(auto=True, method="peak")  # a long run: one point per pixel column
        self.curve.setClipToView(True)
        follow_theme(self, self._set_foreground)
        own_menus(self)

    def _set_foreground(self, color):
        self._fg = color
        self.curve.setPen(pg.mkPen(color, width=self._width))

    def show_loss(self, steps: np.ndarray, loss: np.ndarray, note: str) -> None:
        """The positive, finite losses (a log axis has no room for the rest)."""
        keep = np.isfinite(loss) & (loss > 0)
        self.curve.setData(np.asarray(steps, float)[keep], np.asarray(loss, float)[keep])
        set_title(self, TITLE, [note])

    def clear_loss(self) -> None:
        self.curve.setData([], [])
        set_title(self, TITLE)

    def set_presentation(self, on: bool) -> None:
        self._width = 4.0 if on else 2.0
        self._set_foreground(self._fg)
