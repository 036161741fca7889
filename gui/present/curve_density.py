"""K curves on a shared grid as a density image: per pixel column, how many curves pass each row.

Thousands of translucent paths are slow for Qt's raster engine and still saturate; a count
image costs O(K · columns) in numpy and shows where directions crowd, as datashader does. Each
curve is a polyline through (t_j, y_kj). Column i spans the x interval [e_i, e_{i+1}] of the
drawn range; the curve covers every row between its interpolated values at the column's two edges
(both ends included), so a steep segment paints a vertical run and no curve leaves gaps.
Numpy only: the view turns counts into colours, the tests compare them with a brute-force count.
A view asks for its visible box as a ``DensityRequest``; ``density_job`` counts requests on a
worker (the minima tab's raster lane), and the view shows the image of the latest it asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.progress import Job, Progress

CHUNK = 4096  # curves rasterised at a time: K × columns floats stay within a few tens of MB


def column_edges(x0: float, x1: float, width: int) -> np.ndarray:
    return np.linspace(x0, x1, width + 1)


def _interpolation(t: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each x: the left grid index j, the weight of t_{j+1}, and whether x lies on the grid."""
    inside = (x >= t[0]) & (x <= t[-1])
    j = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
    w = np.where(inside, (x - t[j]) / (t[j + 1] - t[j]), 0.0)
    return j, w, inside


def rows_of(y: np.ndarray, y0: float, y1: float, height: int) -> np.ndarray:
    """Row index of each value: row r holds [y0 + r·h, y0 + (r+1)·h), h = (y1 − y0)/height."""
    return np.floor((y - y0) * (height / (y1 - y0)))


def curve_density(
    t, curves, x_range: tuple[float, float], y_range: tuple[float, float], width: int, height: int
) -> np.ndarray:
    """(width, height) int32 counts: column i, row r is how many of the K ``curves`` (K, P) on the
    grid ``t`` (P,) cover that pixel of the box ``x_range`` × ``y_range``. NaN points cover
    nothing; the parts of curves outside the box are cut off."""
    t = np.asarray(t, float)
    curves = np.atleast_2d(np.asarray(curves))
    if width < 1 or height < 1 or len(t) < 2 or not (x_range[1] > x_range[0] and y_range[1] > y_range[0]):
        return np.zeros((max(width, 0), max(height, 0)), np.int32)
    # Edge values by linear interpolation on the shared grid: two row gathers of the transposed
    # curves, in float32 after subtracting y0 in float64, so a box 1e-6 tall about L* = 0.3 keeps
    # its rows. Off the grid the weight is NaN: no curve there.
    j, w, inside = _interpolation(t, column_edges(*x_range, width))
    scale = height / (y_range[1] - y_range[0])
    right = (w * scale).astype(np.float32)[:, None]
    left = ((1 - w) * scale).astype(np.float32)[:, None]
    left[~inside] = np.nan
    # Difference array, one column per pixel column plus a last one for runs that cover nothing:
    # +1 where a curve's run of rows starts, −1 just past its end; a running sum gives the counts.
    stride = height + 1
    diff = np.zeros((width + 1) * stride, np.int64)
    base = (np.arange(width, dtype=np.float32) * stride)[:, None]
    dump = np.float32(width * stride)
    for start in range(0, len(curves), CHUNK):
        c = np.ascontiguousarray((curves[start : start + CHUNK] - y_range[0]).T, dtype=np.float32)  # (P, k)
        r = c[j]
        r *= left
        r += c[j + 1] * right
        np.floor(r, out=r)  # (width + 1, k): the row at each column edge; NaN off the grid or at a NaN point
        lo, hi = np.minimum(r[:-1], r[1:]), np.maximum(r[:-1], r[1:])  # NaN stays NaN
        void = ~((hi >= 0) & (lo <= height - 1))  # NaN compares False: void too
        np.clip(lo, 0, height - 1, out=lo)
        np.clip(hi, 0, height - 1, out=hi)
        lo += base
        hi += base + 1
        lo[void] = dump
        hi[void] = dump
        diff += np.bincount(lo.astype(np.intp).ravel(), minlength=diff.size)
        diff -= np.bincount(hi.astype(np.intp).ravel(), minlength=diff.size)
    return np.cumsum(diff.reshape(width + 1, stride)[:width], axis=1)[:, :height].astype(np.int32)


def equalized_levels(counts: np.ndarray) -> np.ndarray:
    """Counts mapped to (0, 1] by their rank among the covered pixels (histogram equalisation,
    datashader's ``eq_hist``): every shade is used, so sparse fans and dense cores both show; 0
    stays 0 (drawn transparent)."""
    levels = np.zeros(counts.shape, np.float32)
    covered = counts > 0
    if covered.any():
        values, inverse, freq = np.unique(counts[covered], return_inverse=True, return_counts=True)
        levels[covered] = (np.cumsum(freq) / covered.sum())[inverse]
    return levels


def density_indices(counts: np.ndarray) -> np.ndarray:
    """uint8 image for a view's lookup table: 0 where no curve passes, 1..255 by the count's rank."""
    return np.where(counts > 0, 1 + np.round(254 * equalized_levels(counts)), 0).astype(np.uint8)


@dataclass(frozen=True, eq=False)  # compared by identity: a view shows only the latest it asked for
class DensityRequest:
    """A view's curves ``curves`` (K, P) on the grid ``t`` (P,), to be counted in the box
    ``x_range`` × ``y_range`` at ``width`` × ``height`` pixels. The arrays are never mutated."""

    t: np.ndarray
    curves: np.ndarray
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    width: int
    height: int


def density_image(request: DensityRequest) -> tuple[np.ndarray, np.ndarray]:
    """The request's (width, height) counts and their uint8 image."""
    r = request
    counts = curve_density(r.t, r.curves, r.x_range, r.y_range, r.width, r.height)
    return counts, density_indices(counts)


def density_job(requests: list[DensityRequest]) -> Job[list]:
    """Each request's ``density_image``, in order (a yield between views: a newer request
    cancels the job there)."""
    images = []
    for done, request in enumerate(requests, 1):
        images.append(density_image(request))
        yield Progress(done / len(requests), "counting the slices' curves")
    return images
