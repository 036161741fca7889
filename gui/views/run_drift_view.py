"""A followed run's invariant drift c(t) − c(0) per layer: one colour per layer, the band between
its units' least and largest drift and, darker, its 10–90 % quantile band (gui/workspaces/run.py)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..rendering.plot_style import own_menus, set_title

TITLE = "invariant drift c(t) − c(0) per layer"


class RunDriftView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        set_title(self, TITLE)
        self.setLabel("bottom", "step")
        self.setLabel("left", "c(t) − c(0)")
        self.showGrid(x=True, y=True, alpha=0.25)
        self.getAxis("left").enableAutoSIPrefix(False)
        self.zero = pg.InfiniteLine(pos=0.0, angle=0, pen=pg.mkPen("#999999", width=1))
        self.addItem(self.zero)
        self.bands: list[tuple] = []  # per layer: its items (``_slot``), kept for the view's life
        self.shown = 0  # the layers shown (the first ``shown`` slots)
        self._width = 1.5
        own_menus(self)

    def show_drift(self, layers, colors: list[str], key: tuple, locked: str) -> None:
        """``layers``: engine.runs.follow.LayerDrift, one colour each. Each layer's items are made
        once and kept (a run's layers do not change): a following run only sets their data."""
        for i, (layer, color) in enumerate(zip(layers, colors)):
            steps = np.asarray(layer.steps, float)
            low, high, outer, q_low, q_high, inner = self._slot(i)
            for curve, y in ((low, layer.low), (high, layer.high), (q_low, layer.q_low), (q_high, layer.q_high)):
                curve.setData(steps, np.asarray(y, float))
                curve.setPen(pg.mkPen(color, width=self._width))
                curve.show()
            for band, alpha in ((outer, 60), (inner, 150)):
                fill = pg.mkColor(color)
                fill.setAlpha(alpha)
                band.setBrush(pg.mkBrush(fill))
                band.show()
        self.shown = len(layers)
        for items in self.bands[self.shown :]:
            for item in items:
                if isinstance(item, pg.PlotCurveItem):
                    item.setData([], [])
                item.hide()
        set_title(self, TITLE, [*key, locked] if locked else list(key))

    def _slot(self, i: int) -> tuple:
        """Layer i's curves and bands: low, high, their band, the quantiles and theirs."""
        while len(self.bands) <= i:
            items = []
            for _ in range(2):
                pair = [pg.PlotCurveItem(), pg.PlotCurveItem()]
                items += [*pair, pg.FillBetweenItem(pair[0], pair[1])]
            for item in items:
                self.addItem(item)
            self.bands.append(tuple(items))
        return self.bands[i]

    def drawn(self) -> list[dict]:
        """Per layer shown, what is drawn: {"steps", "low", "high", "q_low", "q_high"} (for tests)."""
        out = []
        for low, high, _, q_low, q_high, _ in self.bands[: self.shown]:
            out.append(
                {"steps": low.xData, "low": low.yData, "high": high.yData, "q_low": q_low.yData, "q_high": q_high.yData}
            )
        return out

    def clear_drift(self) -> None:
        self.show_drift([], [], (), "")
        set_title(self, TITLE)

    def set_presentation(self, on: bool) -> None:
        self._width = 3.0 if on else 1.5
        for items in self.bands[: self.shown]:
            for item in items:
                if isinstance(item, pg.PlotCurveItem):
                    pen = pg.mkPen(item.opts["pen"])
                    pen.setWidthF(self._width)
                    item.setPen(pen)
