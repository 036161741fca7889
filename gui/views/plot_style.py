"""Axis fonts shared by the 2-D plots, normal and projector-sized."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont


def set_plot_fonts(plot: pg.PlotWidget | pg.PlotItem, presentation: bool = False):
    item = plot.getPlotItem() if hasattr(plot, "getPlotItem") else plot
    size = 15 if presentation else 10
    font = QFont()
    font.setPointSize(size)
    for name in ("left", "bottom", "right"):
        axis = item.getAxis(name)
        axis.setTickFont(font)
        axis.label.setFont(font)
    item.titleLabel.setText(item.titleLabel.text, size=f"{size + 2}pt")
