"""Every hidden neuron's 3D view, side by side (paper Fig. 3b) or one enlarged; linked cameras.

Shows Q(c_k) exactly when θ_k = (w₁, w₂, v) (d = 2, e = 1, no biases); otherwise each view is
a labelled projection onto three of the neuron's coordinates, with no surface.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from ..style import neuron_color
from .quadric_view import QuadricView

SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def sub(k: int) -> str:
    return str(k).translate(SUBSCRIPT)


def shape_name(c: float) -> str:
    return "one sheet" if c > 0 else ("two sheets" if c < 0 else "cone")


class _NeuronCell(QWidget):
    """A coloured caption over one neuron's QuadricView."""

    def __init__(self, k: int):
        super().__init__()
        self.caption = QLabel()
        self.caption.setTextFormat(Qt.TextFormat.RichText)
        self.caption.setWordWrap(True)  # a long caption must not widen the window
        self.caption.setStyleSheet(f"border-top: 4px solid {neuron_color(k).name()};"
                                   "padding: 3px 6px; font-size: 11pt; background: #fbfbf8;")
        self.view = QuadricView(neuron=k)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(1, 1, 1, 1)
        layout.setSpacing(0)
        layout.addWidget(self.caption)
        layout.addWidget(self.view, 1)


class NeuronQuadrics(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.cells: list[_NeuronCell] = []
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(2)
        self.exact = True
        self.labels = ("w₁", "w₂", "v")
        self._focus: Optional[int] = None
        self._linking = False

    # ---------------------------------------------------------------- structure
    def configure(self, l: int, exact: bool, labels: tuple[str, str, str], extent: float):
        """Rebuild for ``l`` neurons (views are reused; GL contexts are costly to create)."""
        while len(self.cells) < l:
            cell = _NeuronCell(len(self.cells))
            cell.view.camera_moved.connect(self._link_cameras)
            self.cells.append(cell)
        self.exact, self.labels = exact, labels
        for cell in self.cells[:l]:
            cell.view.set_frame(extent, labels)
            cell.view.clear_trajectory()
        self._l = l
        self._relayout()

    def set_focus(self, neuron: Optional[int]):
        """None: all neurons side by side; k: only neuron k, enlarged."""
        self._focus = neuron
        self._relayout()

    def _relayout(self):
        for cell in self.cells:
            self.grid.removeWidget(cell)
            cell.hide()
        l = getattr(self, "_l", 0)
        shown = list(range(l))
        if self._focus is not None and 0 <= self._focus < l:
            shown = [self._focus]
        cols = len(shown) if len(shown) <= 3 else math.ceil(math.sqrt(len(shown)))
        for i, k in enumerate(shown):
            self.grid.addWidget(self.cells[k], i // cols, i % cols)
            self.cells[k].show()

    def views(self) -> list[QuadricView]:
        return [c.view for c in self.cells[:getattr(self, "_l", 0)] if c.isVisible()] or \
            [c.view for c in self.cells[:1]]

    def _link_cameras(self, source: QuadricView):
        if self._linking:
            return
        self._linking = True
        state = source.camera_state()
        for cell in self.cells:
            if cell.view is not source:
                cell.view.apply_camera(state)
        self._linking = False

    # ---------------------------------------------------------------- content
    def show_neurons(self, coords: np.ndarray, time_fraction: np.ndarray, c_now: np.ndarray,
                     c_start: np.ndarray, barrier: np.ndarray, flip_rows: list[list[int]]):
        """coords (T, l, 3) in the views' coordinates; flip_rows[k]: rows where neuron k flipped."""
        for k in range(getattr(self, "_l", 0)):
            cell = self.cells[k]
            view = cell.view
            if self.exact:
                view.set_quadric(float(c_now[k]), float(c_start[k]), bool(barrier[k]))
            else:
                view.set_quadric(None)
            view.set_trajectory(coords[:, k], time_fraction, coords[flip_rows[k], k])
            what = shape_name(c_now[k]) if self.exact else \
                "projection onto (" + ", ".join(self.labels) + ")"
            drift = "" if c_now[k] == c_start[k] else f" (start {c_start[k]:+.4g})"
            cell.caption.setText(f"<b>neuron {k + 1}</b> &nbsp; c{sub(k + 1)} = {c_now[k]:+.4g}{drift}"
                                 f" &nbsp;·&nbsp; {what}")

    def preview(self, c: np.ndarray):
        """Before a run: the surfaces for the chosen c, with no trajectory."""
        for k in range(getattr(self, "_l", 0)):
            view = self.cells[k].view
            view.clear_trajectory()
            if self.exact and k < len(c):
                view.set_quadric(float(c[k]), None, bool(c[k] < 0))
                self.cells[k].caption.setText(f"<b>neuron {k + 1}</b> &nbsp; c{sub(k + 1)} = "
                                              f"{c[k]:+.4g} &nbsp;·&nbsp; {shape_name(c[k])}")
            else:
                view.set_quadric(None)
                self.cells[k].caption.setText(f"<b>neuron {k + 1}</b>")

    def set_line_width(self, width: float):
        for cell in self.cells:
            cell.view.set_line_width(width)
