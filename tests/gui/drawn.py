"""What a view drew, read back from its items and its pixels, for tests that compare it with the
data it should show (computed in the test from the result arrays, never by the view's code)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QVector3D


def neuron_points(traj, k: int) -> np.ndarray:
    """Neuron k's (w₁, w₂, v) at every recorded row, straight from the trajectory's weights: what
    its 3D view shows (the exact quadric for d = 2, the first two input weights and v otherwise)."""
    return np.column_stack([traj.W1[:, k, 0], traj.W1[:, k, 1], traj.W2[:, 0, k]])


def render_square(view, side: int = 400) -> np.ndarray:
    """The view rendered at side × side with its own field of view, RGB, top row first."""
    from gui.rendering.gl_cells import GLCells

    cells = GLCells()
    try:
        image, _ = cells.render(view, side, side, label_scale=1.0)  # square: the view's fov as it is
        return np.ascontiguousarray(image.keep[::-1, :, :3])
    finally:
        cells.release()


def projected_pixels(view, points: np.ndarray, side: int) -> np.ndarray:
    """(column, row) from the top left where each scene point lands in a side × side render:
    pyqtgraph's own projection and camera matrices, applied here to the test's points."""
    mvp = view.projectionMatrix((0, 0, side, side), (0, 0, side, side)) * view.viewMatrix()
    out = []
    for x, y, z in np.asarray(points, float):
        ndc = mvp.map(QVector3D(x, y, z))
        out.append(((ndc.x() + 1) / 2 * side, (1 - ndc.y()) / 2 * side))
    return np.array(out)


def nearest_colour_distance(pixels: np.ndarray, at, rgb, radius: int = 2) -> float:
    """The smallest per-channel distance (0..1) between ``rgb`` and a pixel within ``radius`` of
    ``at`` (a line is a few pixels wide, and rasterisation rounds its centre)."""
    col, row = int(round(at[0])), int(round(at[1]))
    patch = pixels[max(row - radius, 0) : row + radius + 1, max(col - radius, 0) : col + radius + 1] / 255.0
    return float(np.abs(patch - np.asarray(rgb)[None, None, :3]).max(axis=2).min())


def plotted(plot, kind=pg.PlotDataItem) -> list:
    """A plot's data items in the order they were added."""
    item = plot.getPlotItem() if hasattr(plot, "getPlotItem") else plot
    return [i for i in item.items if isinstance(i, kind)]


def xy(item) -> np.ndarray:
    x, y = item.getData()
    return np.column_stack([x, y])


def assert_cells_centred(image, a, b):
    """A row-major image's pixel (row r, column j) is centred on (a[j], b[r])."""
    for r, j in ((0, 0), (len(b) - 1, len(a) - 1), (len(b) // 2, len(a) // 3)):
        centre = image.mapToParent(pg.Point(j + 0.5, r + 0.5))
        assert (centre.x(), centre.y()) == pytest.approx((a[j], b[r]), abs=1e-9 * (np.ptp(a) + np.ptp(b)))


def assert_contours_on_their_levels(view, alpha, beta, loss):
    """Every vertex of every contour line, in the plot's coordinates, is where the loss grid,
    interpolated linearly between its points (marching squares' own rule), equals the line's
    level; the levels climb from the lowest loss towards the top of the colour bar."""
    from scipy.interpolate import RegularGridInterpolator

    at = RegularGridInterpolator((alpha, beta), loss)  # loss[i, j] at (α_i, β_j)
    levels = []
    for item in view.isocurves:
        if item.path is None:
            item.generatePath()
        path = item.path
        points = [view.image.mapToParent(item.mapToParent(path.elementAt(k))) for k in range(path.elementCount())]
        xy = np.array([(p.x(), p.y()) for p in points])
        assert len(xy) > 0
        # pyqtgraph extends lines half a cell past the outer points, where the grid holds its edge value
        xy = np.clip(xy, [alpha[0], beta[0]], [alpha[-1], beta[-1]])
        scale = np.ptp(loss)
        np.testing.assert_allclose(at(xy), item.level, atol=1e-9 * scale)
        levels.append(item.level)
    assert len(levels) > 3 and np.all(np.diff(levels) > 0)
    assert loss.min() < levels[0] and levels[-1] < loss.max()


def assert_density_is_the_quadrature(view, d):
    """The drawn curve is the Gaussian-smoothed quadrature rebuilt here from each probe's Lanczos
    tridiagonal: Ritz values its eigenvalues, weights the squared first components, averaged over
    probes (floored for the log axis); the dashed lines sit at the extreme Ritz values."""
    from gui.views.spectral_density_view import FLOOR

    grid, density = np.zeros(0), np.zeros_like(d.grid)
    for p, m in enumerate(d.steps_done):
        T = np.diag(d.alphas[p, :m]) + np.diag(d.betas[p, : m - 1], 1) + np.diag(d.betas[p, : m - 1], -1)
        ritz, vectors = np.linalg.eigh(T)
        weights = vectors[0] ** 2
        gauss = np.exp(-((d.grid[:, None] - ritz[None]) ** 2) / (2 * d.sigma**2)) / np.sqrt(2 * np.pi * d.sigma**2)
        density += gauss @ weights / len(d.steps_done)
        grid = np.concatenate([grid, ritz])
    np.testing.assert_array_equal(view.curve.xData, d.grid)
    np.testing.assert_allclose(view.curve.yData, np.maximum(density, FLOOR), rtol=1e-8, atol=1e-12 * density.max())
    edges = sorted(line.value() for line in view.edges)
    assert edges == pytest.approx([grid.min(), grid.max()], rel=1e-8, abs=1e-10 * np.abs(grid).max())
