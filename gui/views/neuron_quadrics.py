"""Every hidden neuron's 3D view, side by side (paper Fig. 3b) or one enlarged; linked cameras.

Shows Q(c_k) exactly when θ_k = (w₁, w₂, v) (d = 2, e = 1, no biases); otherwise each view is
a labelled projection onto three of the neuron's coordinates, with no surface.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from ..present.quadric_meshes import nice_extent  # noqa: F401  (the views' frames)
from ..present.topology import drift_text, lock_text, shape_name, sub  # noqa: F401  (captions' words)
from ..style import neuron_color
from .quadric_view import QuadricView, SphereMarkers

JUMP_RGBA = (0.62, 0.22, 0.78, 1)  # violet: a pathological neuron's barrier jump (finite step)


class _NeuronCell(QWidget):
    """A coloured caption over one neuron's QuadricView."""

    def __init__(self, k: int):
        super().__init__()
        self.caption = QLabel()
        self.caption.setTextFormat(Qt.TextFormat.RichText)
        self.caption.setWordWrap(True)  # a long caption must not widen the window
        self.caption.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)  # in a run's held room
        self.view = QuadricView(neuron=k)
        self.set_caption_size(11)
        # The view's gold spheres mark free flips; a finite-step jump over the barrier gets its
        # own colour so the two are never confused.
        self.jump_markers = SphereMarkers(0.05, JUMP_RGBA)
        self.jump_markers.setDepthValue(10)
        self.view.addItem(self.jump_markers)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(1, 1, 1, 1)
        layout.setSpacing(0)
        layout.addWidget(self.caption)
        layout.addWidget(self.view, 1)

    def set_caption(self, text: str):
        """The caption grows to the most lines it has needed and never shrinks back: a live run
        changes its digits at every update, and a caption whose wrapping came and went resized
        the 3D view under it each time (a full re-render, and the window's layout redone)."""
        self.caption.setText(text)
        needed = self.caption.heightForWidth(max(self.caption.width(), 1))
        if needed > self.caption.minimumHeight():
            self.caption.setMinimumHeight(needed)

    def hold_room(self, text: str):
        """A live run: the caption is at least as tall as ``text``, the most its run will show
        (measured in the caption itself, whose text stays the one shown)."""
        width, shown = max(self.caption.width(), 1), self.caption.text()
        needed = self.caption.heightForWidth(width)
        self.caption.setText(text)
        room = self.caption.heightForWidth(width)
        self.caption.setText(shown)
        self.caption.setMinimumHeight(max(needed, room, self.caption.minimumHeight()))

    def fit_caption(self):
        """The run is over: as tall as the caption shown, no more."""
        self.caption.setMinimumHeight(0)
        self.caption.setMinimumHeight(max(self.caption.heightForWidth(max(self.caption.width(), 1)), 0))

    def resizeEvent(self, event):
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            # Another width wraps differently: fit the shown text to it now. Reset to 0 and left
            # for the next caption, a finished run's last caption was cut to the lines of another.
            self.caption.setMinimumHeight(0)  # heightForWidth counts a minimum height in
            fitted = self.caption.heightForWidth(max(event.size().width(), 1))
            self.caption.setMinimumHeight(max(fitted, 0))  # -1: no height for width yet (no text)

    def set_caption_size(self, pt: float):
        self.caption.setStyleSheet(
            f"border-top: 4px solid {neuron_color(self.view.neuron).name()};padding: 3px 6px; font-size: {pt}pt;"
        )
        self.caption.setMinimumHeight(0)  # another size of type: fit it afresh


class NeuronQuadrics(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.cells: list[_NeuronCell] = []
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(2)
        self.exact = True
        self.labels = ("w₁", "w₂", "v")
        self._focus: int | None = None
        self._presentation = False
        self._linking = False

    # ---------------------------------------------------------------- structure
    def configure(self, l: int, exact: bool, labels: tuple[str, str, str], extent: float):
        """Rebuild for ``l`` neurons (views are reused; GL contexts are costly to create)."""
        while len(self.cells) < l:
            cell = _NeuronCell(len(self.cells))
            cell.view.camera_moved.connect(self._link_cameras)
            self.cells.append(cell)
            self.set_presentation(self._presentation)
        self.exact, self.labels = exact, labels
        for cell in self.cells[:l]:
            cell.view.set_frame(extent, labels)
            cell.view.clear_trajectory()
            cell.jump_markers.extent = extent
            cell.jump_markers.set_positions(np.zeros((0, 3)))
        self._l = l
        self._relayout()

    def set_focus(self, neuron: int | None):
        """None: all neurons side by side; k: only neuron k, enlarged."""
        self._focus = neuron
        self._relayout()

    def _relayout(self):
        l = getattr(self, "_l", 0)
        shown = list(range(l))
        if self._focus is not None and 0 <= self._focus < l:
            shown = [self._focus]
        if shown == getattr(self, "_shown", None):
            # The same cells: taken out and put back they were laid out anew, and a run's first
            # update (which lays the views out) left them unsized when a short run ended.
            return
        self._shown = shown
        for cell in self.cells:
            self.grid.removeWidget(cell)
            cell.hide()
        cols = len(shown) if len(shown) <= 3 else math.ceil(math.sqrt(len(shown)))
        for i, k in enumerate(shown):
            self.grid.addWidget(self.cells[k], i // cols, i % cols)
            self.cells[k].show()

    def views(self) -> list[QuadricView]:
        # isVisibleTo: the cells this layout shows, also while the tab itself is hidden.
        return [c.view for c in self.cells[: getattr(self, "_l", 0)] if c.isVisibleTo(self)] or [
            c.view for c in self.cells[:1]
        ]

    def _link_cameras(self, source: QuadricView):
        if self._linking:
            return
        self._linking = True
        state = source.camera_state()
        for cell in self.cells:
            if cell.view is not source:
                cell.view._user_camera = True
                cell.view.apply_camera(state)
        self._linking = False

    # ---------------------------------------------------------------- content
    def show_state(self, cells: list[dict], c_now=None) -> None:
        """Each neuron's part of a view state (gui.present.topology): its frame, surfaces, path,
        markers and caption, set on the items; nothing is computed here. ``c_now`` places a
        locked neuron's label (None: the state's own c, a preview)."""
        for k in range(min(getattr(self, "_l", 0), len(cells))):
            cell, view, shown = self.cells[k], self.cells[k].view, cells[k]
            if shown["extent"] != view.extent:  # a projection refitted to its path
                view.set_frame(shown["extent"], self.labels)
            surface = shown["surface"]
            ck = None if c_now is None else float(c_now[k])
            view.show_surfaces(
                ck if ck is not None else (surface and surface["c"]), surface, shown.get("ghost"), shown["barrier"]
            )
            if "line" in shown:
                view.set_trajectory(shown["line"], shown["fraction"], shown["start"], shown["head"], shown["flips"])
                cell.jump_markers.set_positions(shown["jumps"])
            else:  # a preview: the start, or a loaded network's point
                view.clear_trajectory()
                cell.jump_markers.set_positions(np.zeros((0, 3)))
                if shown["points"] is not None:
                    p = shown["points"]
                    view.set_trajectory(p, np.zeros(1), p[:1], p[-1:], np.zeros((0, 3)))
            cell.set_caption(shown["caption"])

    def hold_room(self, captions: list[str]):
        """A live run holds room for the longest caption each neuron will show (see _NeuronCell);
        the run's first update then sets the captions it has."""
        for cell, text in zip(self.cells, captions):
            cell.hold_room(text)

    def fit_captions(self):
        for cell in self.cells[: getattr(self, "_l", 0)]:
            cell.fit_caption()

    def set_presentation(self, on: bool):
        self._presentation = on
        for cell in self.cells:
            cell.view.set_line_width(7 if on else 3)
            cell.view.set_label_size(22 if on else 13)
            cell.set_caption_size(17 if on else 11)
