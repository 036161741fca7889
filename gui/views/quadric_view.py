"""3D view of one neuron's invariant hyperquadric Q(c) with its trajectory (d = 2, e = 1)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pyqtgraph.opengl as gl

from engine.quadrics import quadric_sheets

from ..style import neuron_color

EXTENT = 2.0


def _mesh_item(vertices, faces, rgba, shader="shaded", glow=False) -> gl.GLMeshItem:
    item = gl.GLMeshItem(meshdata=gl.MeshData(vertexes=vertices, faces=faces), smooth=True,
                         color=rgba, shader=shader, glOptions="translucent",
                         drawEdges=False)
    return item


class QuadricView(gl.GLViewWidget):
    """Q(c) as a translucent lit surface, the trajectory as a time-coloured line."""

    def __init__(self, neuron: int = 0, parent=None):
        super().__init__(parent)
        self.neuron = neuron
        self.setBackgroundColor(pg.mkColor("#f7f7f4"))
        self.setCameraPosition(distance=9.0, elevation=18, azimuth=35)
        self.opts["fov"] = 40
        self._surface_items: list[gl.GLMeshItem] = []
        grid = gl.GLGridItem(color=(0, 0, 0, 40))
        grid.setSize(2 * EXTENT, 2 * EXTENT)
        grid.setSpacing(0.5, 0.5)
        grid.translate(0, 0, -EXTENT)
        self.addItem(grid)
        self.addItem(gl.GLAxisItem(size=pg.Vector(EXTENT, EXTENT, EXTENT)))
        self.trajectory = gl.GLLinePlotItem(width=3, antialias=True, mode="line_strip")
        self.start_marker = gl.GLScatterPlotItem(size=12, color=(0.1, 0.1, 0.1, 1), pxMode=True)
        self.head_marker = gl.GLScatterPlotItem(size=16, color=(0.85, 0.1, 0.1, 1), pxMode=True)
        for item in (self.trajectory, self.start_marker, self.head_marker):
            item.setGLOptions("translucent")
            self.addItem(item)
        self.set_surface(0.5)

    def set_surface(self, c: float):
        for item in self._surface_items:
            self.removeItem(item)
        r, g, b, _ = neuron_color(self.neuron).getRgbF()
        self._surface_items = []
        for vertices, faces in quadric_sheets(c, extent=EXTENT, resolution=48):
            item = _mesh_item(vertices, faces, (r, g, b, 0.35))
            self.addItem(item)
            self._surface_items.append(item)

    def set_trajectory(self, points: np.ndarray):
        """points: (T, 3) positions (w1, w2, v) of this neuron over time."""
        points = np.asarray(points, dtype=np.float32)
        if len(points) == 0:
            self.clear_trajectory()
            return
        t = np.linspace(0.0, 1.0, len(points))
        colors = pg.colormap.get("viridis").map(t, mode="float")
        self.trajectory.setData(pos=points, color=colors)
        self.start_marker.setData(pos=points[:1])
        self.head_marker.setData(pos=points[-1:])

    def clear_trajectory(self):
        empty = np.zeros((0, 3), dtype=np.float32)
        self.trajectory.setData(pos=empty)
        self.start_marker.setData(pos=empty)
        self.head_marker.setData(pos=empty)
