"""Live invariants: c_k per neuron, l₊/l₋/l₀, the Poincaré polynomial, β₀, s(θ) and components.

Every number comes from engine.topology.invariants; this panel only formats them.
"""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea

from ..present.topology import summary  # noqa: F401  (the numbers shown, made in the job)
from ..style import neuron_color
from ..views.neuron_quadrics import sub

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def polynomial_text(coefficients: list[int]) -> str:
    """[2, 2, 0, 1] → '2 + 2x + x³'."""
    terms = []
    for i, a in enumerate(coefficients):
        if a == 0:
            continue
        power = "" if i == 0 else ("x" if i == 1 else "x" + str(i).translate(SUPERSCRIPT))
        number = str(a) if (a != 1 or i == 0) else ""
        terms.append(number + power)
    return " + ".join(terms) or "0"


def locked_text(values: dict) -> str:
    """Which neurons can never change their output sign, and why (MATH A5)."""
    locked, e = values.get("locked", []), values.get("e")
    if not locked:
        why = "S^{e−1} is connected" if e is not None and e > 1 else "no c &lt; 0"  # rich text: a bare < ended the line
        return f"locked: <b>none</b> ({why})"
    names = ", ".join(str(k) for k in locked)
    return f"locked: neuron{'s' if len(locked) > 1 else ''} <b>{names}</b> (c &lt; 0: v² ≥ −c, output sign fixed)"


def _chip(k: int, s: int) -> str:
    color = neuron_color(k).name()
    text = {1: "+1", -1: "−1"}.get(s, "free")
    style = f"background-color:{color}; color:white;" if s else f"color:{color}; border:1px solid {color};"
    return f"<span style='{style} font-weight:600;'>&nbsp;{text}&nbsp;</span>"


class InvariantsPanel(QScrollArea):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.setStyleSheet("QScrollArea { background: transparent; border: none; }")
        self.viewport().setAutoFillBackground(False)  # the theme's background shows through
        self.set_presentation(False)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setWidget(self.label)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._fitted_width = -1
        self._fitted_shape = None  # (text with digits as 0, width) of the last _fit
        self._room = ""  # hold_room's text, while a run holds the panel's height
        self._room_height: tuple[int, int] | None = None  # (width, the room's height at it)
        self.shown: dict | None = None
        self.show_nothing()

    # The panel is exactly as tall as its text: no blank gap under the last line, and no
    # scrollbar hiding it (the splitter gives the rest to the plots below).
    def _fit(self):
        width = max(self.viewport().width(), self.width() - 2 * self.frameWidth(), 100)
        height = self.label.heightForWidth(width)
        if height <= 0:
            height = self.label.sizeHint().height()
        if self._room:
            height = max(height, self._room_height_at(width))
        height += 2 * self.frameWidth() + 4
        self.setMinimumHeight(min(height, 700))
        self.setMaximumHeight(height)
        self._fitted_width = self.width()

    def _room_height_at(self, width: int) -> int:
        """The height the label takes with the held room's text, laid out once a width: a live
        update's refit laid the room out again each time (three rich-text layouts)."""
        if self._room_height is None or self._room_height[0] != width:
            shown = self.label.text()
            self.label.setText(self._room)
            self._room_height = (width, self.label.heightForWidth(width))
            self.label.setText(shown)
        return self._room_height[1]

    def resizeEvent(self, event):
        super().resizeEvent(event)
        if self.width() != self._fitted_width:
            self._fit()

    def _set_text(self, text: str):
        self.label.setText(text)
        # Live updates change digits, not lines: the height for this width is known already
        # (heightForWidth lays the rich text out again at each call, costly under a live run).
        shape = (re.sub(r"\d", "0", text), self.width())
        if shape != self._fitted_shape:
            self._fit()
            self._fitted_shape = shape

    def set_presentation(self, on: bool):
        self.label.setStyleSheet(f"padding: 6px; font-size: {16 if on else 10.5}pt; background: transparent;")
        self._fitted_width, self._fitted_shape, self._room_height = -1, None, None  # new type, new heights
        if self.label.text():
            self._fit()

    def show_nothing(self, note: str = "Run to see the invariants of the trajectory."):
        self.shown = None
        self._set_text(f"<b>Invariants</b><br><i>{note}</i>")

    def show_values(
        self, values: dict, c_start: np.ndarray | None = None, step: int = 0, note: str = "", extra: str = ""
    ):
        """note: one more line under the table (e.g. why c drifted); extra: lines of rich text
        above it (a loaded network's file and fit)."""
        self.shown = values
        self._set_text(values_text(values, c_start, step, note, extra))

    def hold_room(self, text: str):
        """A live run: the panel is at least as tall as ``text`` (the most its run will show,
        gui.present.topology's ``room``) until ``fit_text``, so its text growing mid-run does not
        lay the plots under it out again."""
        self._room, self._room_height = text, None
        self._fitted_shape = None
        self._fit()

    def fit_text(self):
        """The run is over: exactly as tall as the text again."""
        if self._room:
            self._room = ""
            self._fitted_shape = None
            self._fit()


def values_text(values: dict, c_start: np.ndarray | None, step: int, note: str = "", extra: str = "") -> str:
    """The panel's rich text for the invariants ``values`` (gui.present.topology.summary)."""
    rows = []
    for k, ck in enumerate(values["c"]):
        color = neuron_color(k).name()
        start = "" if c_start is None else f"<td align=right>{c_start[k]:+.5f}</td>"
        lock = " <b>locked</b>" if k + 1 in values.get("locked", []) else ""
        rows.append(
            f"<tr><td><span style='color:{color}'>■</span> c{sub(k + 1)}</td>{start}"
            f"<td align=right><b>{ck:+.5f}</b></td>"
            f"<td>&nbsp;{_chip(k, values['label'][k])}{lock}</td></tr>"
        )
    head = (
        "<tr><th></th>"
        + ("<th align=right>start</th>" if c_start is not None else "")
        + f"<th align=right>step {step}</th><th>&nbsp;s(θ)</th></tr>"
    )
    eff = values["effective_components"]
    eff_text = (
        "effective components: not defined for these d, e"
        if eff is None
        else f"effective component <b>{values['effective_index'] + 1}</b> of <b>{eff}</b> &nbsp;(1 + l₋, Theorem 2)"
    )
    return (
        "<b>Invariants</b> (engine, live)<table cellspacing=3>" + head + "".join(rows) + "</table>"
        f"l₊ = <b>{values['l_plus']}</b>, &nbsp;l₋ = <b>{values['l_minus']}</b>, "
        f"&nbsp;l₀ = <b>{values['l_zero']}</b><br>"
        f"Poincaré polynomial P(x) = <b>{polynomial_text(values['poincare'])}</b><br>"
        f"connected components β₀ = P(0) = <b>{values['beta0']}</b><br>{eff_text}<br>"
        + locked_text(values)
        + (f"<br>{extra}" if extra else "")
        + (f"<br><i>{note}</i>" if note else "")
    )
