"""Colours and fonts shared by every view, so neuron k has one colour everywhere."""
from PySide6.QtGui import QColor

# Okabe–Ito: distinguishable for colour-blind viewers and on projectors.
NEURON_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                 "#F0E442", "#000000", "#999999"]


def neuron_color(k: int) -> QColor:
    return QColor(NEURON_COLORS[k % len(NEURON_COLORS)])
