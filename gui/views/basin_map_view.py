"""A plane's basin map: each grid point coloured by the basin it belongs to at its own level
(engine.landscape.persistence.basin_map), one categorical colour a basin, 0 the global minimum's.

The image holds each point's component (its basin at threshold 0); a lookup table gives each
component its basin's colour at the threshold, so a new threshold changes only the table."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ..rendering.plot_style import own_menus, set_title
from .plane_view import cell_step

# Okabe–Ito without black (the dark theme's background) and with grey last: basin 0 blue.
MARK = {False: 14, True: 22}  # px, normal and presentation
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#999999")


def basin_colors(labels: np.ndarray) -> np.ndarray:
    """(n, 4) uint8 RGBA: the palette's colour of each label (cycled past its length)."""
    table = np.array([pg.mkColor(c).getRgb() for c in PALETTE], dtype=np.uint8)
    return table[np.asarray(labels, int) % len(PALETTE)]


class BasinMapView(pg.PlotWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        set_title(self, "basin map")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.addItem(self.image)
        # each basin's lowest point, white with a dark rim: seen on every palette colour
        self.minima = pg.ScatterPlotItem(size=MARK[False], symbol="x", pen=pg.mkPen("#222222", width=1), brush="w")
        self.addItem(self.minima)
        self.components = np.zeros((0, 0), dtype=np.int64)
        own_menus(self)

    def set_presentation(self, on: bool):
        self.minima.setSize(MARK[on])

    def show_basins(self, a, b, components, labels, minima=(), labels_text=("d1", "d2"), note: str = ""):
        """``components[i, j]`` (at (a[i], b[j])) a component's index, ``labels`` each component's
        basin; ``minima``: (k, 2) points in (a, b) to mark (the basins' lowest points)."""
        a, b = np.asarray(a, float), np.asarray(b, float)
        self.components = np.asarray(components, np.int64)
        self.image.setImage(self.components.T, autoLevels=False)
        da, db = cell_step(a), cell_step(b)
        self.image.setRect(a[0] - da / 2, b[0] - db / 2, da * len(a), db * len(b))
        minima = np.asarray(minima, float).reshape(-1, 2)
        self.minima.setData(minima[:, 0], minima[:, 1])
        self.setLabel("bottom", labels_text[0])
        self.setLabel("left", labels_text[1])
        self.set_labels(labels, note)
        self.enableAutoRange()

    def set_labels(self, labels, note: str = ""):
        """Colour each component as its basin ``labels[c]``."""
        labels = np.asarray(labels, int)
        self.labels = labels
        self.image.setLookupTable(basin_colors(labels))
        self.image.setLevels((0, max(len(labels), 1)))  # component c → table row c
        count = len(np.unique(labels))
        set_title(self, "basin map", [f"{count} basin{'s' if count != 1 else ''}"] + ([note] if note else []))

    def drawn_rgba(self) -> np.ndarray:
        """(A, B, 4) the colour each grid point is drawn in, from the image and its table."""
        return basin_colors(self.labels)[self.components]

    def clear_basins(self):
        self.image.clear()
        self.components = np.zeros((0, 0), dtype=np.int64)
        self.minima.setData([], [])
        set_title(self, "basin map")
