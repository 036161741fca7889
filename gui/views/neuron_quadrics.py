"""Every hidden neuron's 3D view, side by side (paper Fig. 3b) or one enlarged; linked cameras.

Shows Q(c_k) exactly when θ_k = (w₁, w₂, v) (d = 2, e = 1, no biases); otherwise each view is
a labelled projection onto three of the neuron's coordinates, with no surface.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QVBoxLayout, QWidget

from ..style import neuron_color
from .quadric_view import QuadricView, SphereMarkers

JUMP_RGBA = (0.62, 0.22, 0.78, 1)  # violet: a pathological neuron's barrier jump (finite step)
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def sub(k: int) -> str:
    return str(k).translate(SUBSCRIPT)


CONSERVED_TOL = 1e-9  # below this a drift is rounding, not a change


def drift_text(c_now: float, c_start: float) -> str:
    """' (start …)' after a real drift; a drift below rounding reads as conservation."""
    delta = abs(c_now - c_start)
    if delta == 0:
        return ""
    if delta < CONSERVED_TOL:
        return " · conserved (|Δc| &lt; 1e-9)"
    return f" (start {c_start:+.4g})"


def shape_name(c: float) -> str:
    return "one sheet" if c > 0 else ("two sheets" if c < 0 else "cone")


def lock_text(k: int, sign: int) -> str:
    """The caption's lock chip: a locked neuron's output sign, fixed for ever (MATH A5)."""
    if not sign:
        return ""
    color = neuron_color(k).name()
    above = "&gt;" if sign > 0 else "&lt;"
    return (
        f" &nbsp;<span style='background-color:{color}; color:white; font-weight:700;'>"
        f"&nbsp;LOCKED v{sub(k + 1)} {above} 0&nbsp;</span>"
    )


def _event_text(k: int, events: list[tuple[int, int, bool]]) -> str:
    """Caption words for the latest sign change, matching the marker's colour."""
    if not events:
        return ""
    _, step, jumped = events[-1]
    more = f" (+{len(events) - 1} more)" if len(events) > 1 else ""
    if jumped:
        return (
            f"<br><span style='color:#9e38c7'>◆ v{sub(k + 1)} jumped the barrier at step {step}"
            f" — a finite step, impossible for gradient flow</span>{more}"
        )
    return f"<br><span style='color:#b38600'>● v{sub(k + 1)} flipped sign at step {step}</span>{more}"


class _NeuronCell(QWidget):
    """A coloured caption over one neuron's QuadricView."""

    def __init__(self, k: int):
        super().__init__()
        self.caption = QLabel()
        self.caption.setTextFormat(Qt.TextFormat.RichText)
        self.caption.setWordWrap(True)  # a long caption must not widen the window
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


def nice_extent(x: float) -> float:
    """The next 1, 1.5, 2, 3, 5 or 7 × 10ⁿ at or above x: a frame that does not jitter."""
    magnitude = 10 ** np.floor(np.log10(x))
    return float(next(m * magnitude for m in (1, 1.5, 2, 3, 5, 7, 10) if m * magnitude >= x))


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
    def show_neurons(
        self,
        coords: np.ndarray,
        time_fraction: np.ndarray,
        c_now: np.ndarray,
        c_start: np.ndarray,
        barrier: np.ndarray,
        events: list[list[tuple[int, int, bool]]],
        locked: list[int] | None = None,
    ):
        """coords (T, l, 3) in the views' coordinates; events[k]: (row, step, jumped) of each sign
        change of neuron k's output weight, jumped when it was pathological (a finite step).
        locked[k]: ±1, the output sign neuron k is locked to (shown on its sheet), 0 if free."""
        locked = list(locked) if locked is not None else [0] * len(c_now)
        for k in range(getattr(self, "_l", 0)):
            cell = self.cells[k]
            view = cell.view
            if self.exact:
                view.set_quadric(float(c_now[k]), float(c_start[k]), bool(barrier[k]), locked[k])
            else:
                view.set_quadric(None)
                self._fit_projection(view, coords[:, k])
            flips = [row for row, _, jumped in events[k] if not jumped]
            jumps = [row for row, _, jumped in events[k] if jumped]
            view.set_trajectory(coords[:, k], time_fraction, coords[flips, k])
            cell.jump_markers.set_positions(coords[jumps, k])
            what = shape_name(c_now[k]) if self.exact else "projection onto (" + ", ".join(self.labels) + ")"
            if not self.exact and np.ptp(coords[:, k], axis=0).max() < 1e-3 * view.extent:
                what += ": still here (the run moves the other coordinates)"
            drift = drift_text(float(c_now[k]), float(c_start[k]))
            cell.set_caption(
                f"<b>neuron {k + 1}</b>{lock_text(k, locked[k])} &nbsp; c{sub(k + 1)} = {c_now[k]:+.4g}{drift}"
                f" &nbsp;·&nbsp; {what}{_event_text(k, events[k])}"
            )

    def _fit_projection(self, view, points: np.ndarray):
        """A projection has no surface to set the scale: frame the trajectory itself, refitting
        only when it outgrows the frame or fills less than half of it (a handful of times a run)."""
        reach = float(np.nanmax(np.abs(points))) if points.size else 0.0
        if reach > 0 and not 0.5 * view.extent <= 1.1 * reach <= view.extent:
            view.set_frame(nice_extent(1.1 * reach), self.labels)

    def preview(self, c: np.ndarray, points: np.ndarray | None = None, locked: list[int] | None = None):
        """Before a run: the surfaces for the chosen c. ``points`` (l, 3): each neuron's current θ_k
        in the views' coordinates (a loaded network's weights), drawn as its marker; ``locked``:
        as in show_neurons."""
        locked = list(locked) if locked is not None else [0] * len(c)
        for k in range(getattr(self, "_l", 0)):
            cell = self.cells[k]
            view = cell.view
            view.clear_trajectory()
            cell.jump_markers.set_positions(np.zeros((0, 3)))
            if points is not None:
                view.set_trajectory(points[None, k], np.zeros(1))
            chip = lock_text(k, locked[k]) if k < len(locked) else ""
            if self.exact and k < len(c):
                view.set_quadric(float(c[k]), None, bool(c[k] < 0), locked[k])
                cell.set_caption(
                    f"<b>neuron {k + 1}</b>{chip} &nbsp; c{sub(k + 1)} = {c[k]:+.4g} &nbsp;·&nbsp; {shape_name(c[k])}"
                )
            else:
                view.set_quadric(None)
                if points is not None:
                    self._fit_projection(view, points[None, k])
                cell.set_caption(
                    f"<b>neuron {k + 1}</b>{chip}" + (f" &nbsp; c{sub(k + 1)} = {c[k]:+.4g}" if k < len(c) else "")
                )

    def set_presentation(self, on: bool):
        self._presentation = on
        for cell in self.cells:
            cell.view.set_line_width(7 if on else 3)
            cell.view.set_label_size(22 if on else 13)
            cell.set_caption_size(17 if on else 11)
