"""A followed run's checkpoints on their PCA plane: the path, each checkpoint coloured by its
step, the latest ringed; a click on a checkpoint selects it (gui/workspaces/run.py)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal

from ..rendering.plot_style import follow_theme, own_menus, set_title

TITLE = "checkpoints on their PCA plane"
SELECTED = "#D55E00"


class RunPathView(pg.PlotWidget):
    checkpoint_clicked = Signal(int)  # the step of the checkpoint clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        set_title(self, TITLE)
        self.setLabel("bottom", "PC1")
        self.setLabel("left", "PC2")
        self.showGrid(x=True, y=True, alpha=0.25)
        self.setAspectLocked(False)
        self._size = 9
        self.line = pg.PlotCurveItem()
        self.points = pg.ScatterPlotItem(size=self._size, pen=None, hoverable=True)
        self.latest = pg.ScatterPlotItem(size=2 * self._size, brush=None)
        self.selected = pg.ScatterPlotItem(size=2 * self._size, brush=None, symbol="s")
        for item in (self.line, self.points, self.latest, self.selected):
            self.addItem(item)
        self.points.sigClicked.connect(self._clicked)
        self.steps = np.zeros(0, np.int64)
        self.xy = np.zeros((0, 2))
        self._selected_step: int | None = None
        follow_theme(self, self._set_foreground)
        own_menus(self)

    def _set_foreground(self, color):
        self._fg = color
        self.line.setPen(pg.mkPen(color, width=1))
        self.latest.setPen(pg.mkPen(color, width=3))
        self.selected.setPen(pg.mkPen(SELECTED, width=3))

    def show_path(self, steps: np.ndarray, xy: np.ndarray, colors: np.ndarray, explained, note: str) -> None:
        self.steps, self.xy = np.asarray(steps), np.asarray(xy, float)
        self.line.setData(self.xy[:, 0], self.xy[:, 1])
        brushes = [pg.mkBrush(*map(int, c)) for c in colors]
        self.points.setData(x=self.xy[:, 0], y=self.xy[:, 1], brush=brushes, data=[int(s) for s in steps])
        self.latest.setData(x=self.xy[-1:, 0], y=self.xy[-1:, 1])
        self.setLabel("bottom", f"PC1 ({100 * explained[0]:.1f} %)")
        self.setLabel("left", f"PC2 ({100 * explained[1]:.1f} %)")
        set_title(self, TITLE, [note])
        self._place_selection()

    def show_note(self, note: str) -> None:
        """No plane yet (fewer than 3 checkpoints): say why."""
        self.clear_path()
        set_title(self, TITLE, [note] if note else [])

    def select(self, step: int | None) -> None:
        self._selected_step = step
        self._place_selection()

    def _place_selection(self) -> None:
        step = self._selected_step
        at = np.flatnonzero(self.steps == step) if step is not None else []
        if len(at):
            self.selected.setData(x=self.xy[at, 0], y=self.xy[at, 1])
        else:
            self.selected.setData([], [])

    def _clicked(self, _item, points, _event=None) -> None:
        if len(points):
            self.checkpoint_clicked.emit(int(points[0].data()))

    def clear_path(self) -> None:
        self.steps, self.xy = np.zeros(0, np.int64), np.zeros((0, 2))
        for item in (self.line, self.points, self.latest, self.selected):
            item.setData([], [])
        set_title(self, TITLE)

    def set_presentation(self, on: bool) -> None:
        self._size = 13 if on else 9
        self.points.setSize(self._size)
        self.latest.setSize(2 * self._size)
        self.selected.setSize(2 * self._size)
