"""For d = 2: the learned function beside the target, as two heatmaps over the input box.

The target is shown as the data itself (mean label per cell), so any 2-D data set works, not
only the toy one; the learned function is the engine's forward pass on a grid. Both come made in
the view state (gui.present.topology): this only sets them on the images.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QWidget

from ..rendering.plot_style import follow_theme, limit_ticks, own_menus, set_axis_colors, set_colorbar_font


class FunctionHeatmaps(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.target_widget = pg.PlotWidget(title="target F (data)")
        self.learned_widget = pg.PlotWidget(title="learned f(x; θ)")
        self.target_image, self.learned_image = pg.ImageItem(), pg.ImageItem()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        for widget, image in ((self.target_widget, self.target_image), (self.learned_widget, self.learned_image)):
            plot = widget.getPlotItem()
            plot.addItem(image)
            plot.setAspectLocked(True)
            plot.setLabel("bottom", "x₁")
            plot.setLabel("left", "x₂")
            layout.addWidget(widget)
        # d = 1: the learned function against the data on one axis instead of two heatmaps.
        self.line_widget = pg.PlotWidget(title="learned f(x; θ) against the data")
        self.line_widget.setLabel("bottom", "x")
        self.line_widget.setLabel("left", "y")
        self.line_widget.showGrid(x=True, y=True, alpha=0.25)
        self.data_points = pg.ScatterPlotItem(size=4, pen=None, brush=(120, 120, 120, 140))
        self.learned_line = pg.PlotDataItem(pen=pg.mkPen("#D55E00", width=3))
        self.line_widget.addItem(self.data_points)
        self.line_widget.addItem(self.learned_line)
        self.line_widget.hide()
        layout.addWidget(self.line_widget)
        # f ≡ 0 is a true result (every neuron dead on the data), not a broken plot: say so.
        self.zero_note = pg.TextItem("", anchor=(0.5, 0.5), color="#111111", fill=(255, 255, 255, 215))
        self.zero_note.setZValue(30)
        self.learned_widget.getPlotItem().addItem(self.zero_note, ignoreBounds=True)
        self.zero_note.hide()
        self.colorbar = pg.ColorBarItem(colorMap=pg.colormap.get("CET-D1"), width=10, interactive=False)
        self.colorbar.setImageItem([self.target_image, self.learned_image], insert_in=self.learned_widget.getPlotItem())
        limit_ticks(self.colorbar.axis)
        follow_theme(self, lambda fg: set_axis_colors(self.colorbar.axis, fg))
        for widget in (self.target_widget, self.learned_widget, self.line_widget):
            own_menus(widget)
        self._box = None  # d = 2: the data's box, (lo, hi)

    def set_dimension(self, d: int):
        """d = 2: target and learned heatmaps; d = 1: one plot of f over x with the data."""
        self._d = d
        self.target_widget.setVisible(d == 2)
        self.learned_widget.setVisible(d == 2)
        self.line_widget.setVisible(d == 1)

    def set_data(self, data: dict):
        """The data's state (gui.present.topology, the layout's ``data``): d = 1 its points, d = 2
        the target image over the data's box, on a diverging map centred on 0 (sign is the story)."""
        self._box = None
        if data["d"] == 1:
            self.data_points.setData(data["x"], data["y"])
            self.learned_line.setData([], [])
            return
        lo, hi = data["box"]
        self._box = (lo, hi)
        box = pg.QtCore.QRectF(lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1])
        self.target_image.setImage(data["target"], rect=box)
        self.colorbar.setLevels((-data["span"], data["span"]))
        # Nothing learned yet: a blank image over the same box, so the plot frames it as the target
        # does (cleared, the empty plot framed ±400 × 0.001 with its x labels run together).
        blank = np.full((2, 2), np.nan)
        self.learned_image.setImage(blank, levels=self.colorbar.levels(), rect=box)
        self.zero_note.hide()

    def show_function(self, state: dict):
        """The learned function's state: d = 1 a line, d = 2 an image, with a note when it is flat."""
        if "x" in state:
            self.learned_line.setData(state["x"], state["y"])
            return
        if self._box is None:
            return
        lo, hi = self._box
        if state["note"]:
            self.zero_note.setText(state["note"])
            self.zero_note.setPos((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2)
            self.zero_note.show()
        else:
            self.zero_note.hide()
        self.learned_image.setImage(state["values"], rect=pg.QtCore.QRectF(lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]))
        self.learned_image.setLevels(self.colorbar.levels())

    def set_presentation(self, on: bool):
        set_colorbar_font(self.colorbar, on)
        font = pg.QtGui.QFont()
        font.setPointSize(15 if on else 10)
        self.zero_note.setFont(font)
        self.learned_line.setPen(pg.mkPen("#D55E00", width=5 if on else 3))
        self.data_points.setSize(7 if on else 4)

    def clear(self):
        self.learned_image.clear()
        self.learned_line.setData([], [])
        self.zero_note.hide()
