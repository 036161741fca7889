"""A 2-D slice L(θ + a·d1 + b·d2): heatmap with contours beside or above a 3-D surface (OpenGL)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pyqtgraph.opengl as gl
from PySide6.QtWidgets import QBoxLayout, QWidget

from ..rendering.offscreen_gl import OffscreenGLView
from ..rendering.plot_style import follow_theme, limit_ticks, own_menus, set_colorbar_colors

COLORMAP = "viridis"
SURFACE_SIZE = 10.0  # the surface is drawn in a 10 × 10 × 5 box whatever the data's units
HEATMAP_FRAME = (150, 60)  # px of the heatmap's width (axis, colour bar) and height (title, axis) around its map


def side_by_side(width: int, height: int) -> bool:
    """Whether the heatmap's map comes out nearer square beside the surface than above it. Paper B's
    2-D slice has a column of ~570 × 590 px at 1600 × 960: side by side its map was 145 × 530."""
    fx, fy = HEATMAP_FRAME
    beside = (width / 2 - fx) / max(height - fy, 1)
    above = (width - fx) / max(height / 2 - fy, 1)
    return _off_square(beside) <= _off_square(above)


def _off_square(aspect: float) -> float:
    """How far a map of this width / height is from square; one with no room is the farthest."""
    return abs(math.log(aspect)) if aspect > 0 else math.inf


def cell_step(x: np.ndarray) -> float:
    """The spacing of an evenly spaced grid (1 for a single point, so its pixel still has a size)."""
    return float(x[1] - x[0]) if len(x) > 1 else 1.0


class PlaneView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.heatmap = pg.PlotWidget(title="2-D slice: loss")
        self.image = pg.ImageItem(axisOrder="row-major")
        self.heatmap.addItem(self.image)
        self.colorbar = pg.ColorBarItem(colorMap=pg.colormap.get(COLORMAP), interactive=False, label="loss L")
        self.colorbar.setImageItem(self.image, insert_in=self.heatmap.getPlotItem())
        # pyqtgraph fixes a colour bar's axis at 45 px and drops labels wider than that: a loss
        # near a minimum (0.004290 … 0.004305) showed no values at all. Fit it to its labels,
        # few of them, in the theme's ink.
        self.colorbar.axis.setWidth(None)
        limit_ticks(self.colorbar.axis)
        follow_theme(self.heatmap, lambda fg: set_colorbar_colors(self.colorbar, fg))
        self.point = pg.ScatterPlotItem(
            size=16, symbol="star", brush=pg.mkBrush("#D62728"), pen=pg.mkPen("w", width=1.5)
        )
        self.heatmap.addItem(self.point)
        self.heatmap.setAspectLocked(False)
        own_menus(self.heatmap)  # the colour bar's menus too
        self.surface_view = OffscreenGLView()
        self.surface_view.setBackgroundColor("w")
        self.surface_view.setCameraPosition(distance=20, elevation=28, azimuth=-60)
        self.surface_view.setMinimumSize(120, 120)
        # Created with a flat placeholder: an empty surface item fails in paint().
        self.surface = gl.GLSurfacePlotItem(z=np.zeros((2, 2)), shader="shaded", smooth=False, computeNormals=True)
        self.surface_view.addItem(self.surface)
        self.grid = gl.GLGridItem()
        self.grid.setSize(SURFACE_SIZE, SURFACE_SIZE)
        self.grid.setSpacing(1, 1)
        self.grid.setColor((0, 0, 0, 60))
        self.grid.translate(0, 0, -0.05)  # just under the surface minimum, never through it
        self.surface_view.addItem(self.grid)
        self.marker = gl.GLScatterPlotItem(size=14, color=(0.84, 0.15, 0.16, 1.0), pxMode=True)
        self.marker.setGLOptions("translucent")
        self.surface_view.addItem(self.marker)
        self.arrangement = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self.arrangement.setContentsMargins(0, 0, 0, 0)
        self.arrangement.addWidget(self.heatmap, 1)
        self.arrangement.addWidget(self.surface_view, 1)

    def resizeEvent(self, event):
        beside = side_by_side(event.size().width(), event.size().height())
        self.arrangement.setDirection(QBoxLayout.Direction.LeftToRight if beside else QBoxLayout.Direction.TopToBottom)
        super().resizeEvent(event)

    def show_plane(self, a, b, loss, labels=("d1", "d2"), center=(0.0, 0.0)):
        """``loss[i, j]`` at (a[j], b[i]); ``center`` is the construction point in (a, b)."""
        a, b, loss = np.asarray(a, float), np.asarray(b, float), np.asarray(loss, float)
        self.image.setImage(loss, autoLevels=False)
        # Each pixel is centred on its grid point: the image reaches half a step past the ends
        # (spread over [a₀, a_end] its n pixels had drifted up to half a cell off their points).
        da, db = cell_step(a), cell_step(b)
        self.image.setRect(a[0] - da / 2, b[0] - db / 2, da * len(a), db * len(b))
        low, high = float(np.nanmin(loss)), float(np.nanpercentile(loss, 98))
        self.colorbar.setLevels((low, max(high, low + 1e-12)))
        self.point.setData([center[0]], [center[1]])
        self.heatmap.setLabel("bottom", labels[0])
        self.heatmap.setLabel("left", labels[1])
        # Kept on: a one-shot autoRange() taken while the page was hidden or not laid out yet framed
        # the map by that size, so a session opened at the same size drew it shifted.
        self.heatmap.enableAutoRange()
        # Scale to a fixed box so the camera framing does not depend on the data's units.
        sx = SURFACE_SIZE / max(a[-1] - a[0], 1e-12)
        sy = SURFACE_SIZE / max(b[-1] - b[0], 1e-12)
        z = np.clip(loss, low, high)
        sz = 5.0 / max(high - low, 1e-12)
        xs, ys = (a - a.mean()) * sx, (b - b.mean()) * sy
        zs = (z.T - low) * sz
        # Flat (len(x)·len(y), 4): MeshData indexes vertex colours by flat vertex number.
        colors = pg.colormap.get(COLORMAP).map((zs / 5.0).ravel(), mode="float")
        self.surface.setData(x=xs, y=ys, z=zs, colors=colors)
        ci = np.clip(np.searchsorted(a, center[0]), 0, len(a) - 1)
        cj = np.clip(np.searchsorted(b, center[1]), 0, len(b) - 1)
        self.marker.setData(
            pos=np.array([[(center[0] - a.mean()) * sx, (center[1] - b.mean()) * sy, zs[ci, cj] + 0.15]])
        )

    def clear_plane(self):
        self.image.clear()
        self.point.setData([], [])
        # x, y and colours too: a 2×2 z against the last grid's x and y raises in setData (issue 13).
        unit = np.array([0.0, 1.0])
        self.surface.setData(x=unit, y=unit, z=np.zeros((2, 2)), colors=np.ones((4, 4)))
        self.marker.setData(pos=np.zeros((0, 3)))
