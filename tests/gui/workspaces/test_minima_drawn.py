"""The local-minima tab draws its results' numbers: the degenerate path, the descent line, the 2-D
slice and the minima at infinity, each compared with the loss recomputed here in numpy from the
result's weights (tests/references.py), never with the view's or the engine's own arrays alone."""

import numpy as np
import pyqtgraph as pg
import pytest

from engine.minima.construction import set_split_lambda
from tests.references import finite_difference_hessian, numpy_loss

from ..drawn import assert_cells_centred, plotted, xy
from .test_minima_workspace import open_quick

EPS = np.finfo(float).eps


def hessian_min_with_error(f, theta) -> tuple[float, float]:
    """λ_min of the finite-difference Hessian and its error bound: the O(h²) difference between
    steps h and 2h, doubled, bounds the eigenvalue's error (Weyl) with room for the ε/h² part."""
    H = finite_difference_hessian(f, theta, h=1e-4)
    coarse = finite_difference_hessian(f, theta, h=2e-4)
    return float(np.linalg.eigvalsh(H)[0]), 2 * float(np.linalg.norm(H - coarse, 2)) + 1e-12


def test_shallow_preset_draws_its_path_descent_line_and_plane(window, qtbot):
    ws = open_quick(window, qtbot, "nonattr-shallow")
    fig = ws.figure
    c, path = fig.construction, fig.path
    split = c.splits[path.split]
    loss_at = lambda theta: numpy_loss(c.arch, theta, c.X, c.Y)

    # (b) the degenerate path: the loss and λ_min(H) at each λ, recomputed at θ(λ).
    # The data the curves were given: getData() is pyqtgraph's display copy, clipped to a million
    # heights of the box as it was last ranged (a λ_min of −0.185 read −7.7e−10 once, before the
    # right axis' lazy auto-range had run after a flat partial path).
    x, y = ws.path_view.loss_curve.xData, ws.path_view.loss_curve.yData
    ex, ey = ws.path_view.eig_curve.xData, ws.path_view.eig_curve.yData
    np.testing.assert_array_equal(x, path.lam)
    np.testing.assert_array_equal(ex, path.lam)
    for k, lam in enumerate(path.lam):
        theta = set_split_lambda(c.arch, c.params, split, lam)
        assert y[k] == pytest.approx(loss_at(theta), rel=1e-10)
        lam_min, error = hessian_min_with_error(loss_at, theta)
        assert abs(ey[k] - lam_min) <= error, (lam, ey[k], lam_min, error)
    # The shading is Theorem 9's I, each part a region of its own (±∞ clipped to the view's limit).
    regions = [region.getRegion() for region in ws.path_view.regions]
    want = [(max(a, -1e3), min(b, 1e3)) for a, b in path.interval.parts]
    np.testing.assert_allclose(regions, want)

    # (d) the descent line at the saddle: L(θ_saddle + t·e) along the engine's unit direction.
    line, probe = fig.saddle.descent, fig.saddle.probe
    assert np.linalg.norm(line.direction) == pytest.approx(1.0, rel=1e-12)
    drawn = xy(ws.descent_view._items[0])
    np.testing.assert_array_equal(drawn[:, 0], line.t)
    want = [loss_at(probe.params + t * line.direction) for t in line.t]
    np.testing.assert_allclose(drawn[:, 1], want, rtol=1e-10)
    assert ws.descent_view._items[1].value() == pytest.approx(loss_at(probe.params), rel=1e-10)  # the L* level

    # The 2-D slice: row r, column j of the heatmap is L at (s_j, t_r), its cell centred there.
    plane = fig.plane
    image = ws.plane.image
    np.testing.assert_array_equal(image.image, plane.loss.T)
    assert_cells_centred(image, plane.alpha, plane.beta)


def excess_tolerance(loss: np.ndarray, L_inf: float) -> np.ndarray:
    """How far a naive L − L∞ may be from the exact one: a few ulps of the two losses (the engine's
    form keeps the digits the subtraction here loses)."""
    return 64 * EPS * (np.abs(loss) + L_inf)


def test_infinity_preset_draws_the_loss_against_bias_and_gd(window, qtbot, monkeypatch):
    ws = window.workspaces["minima"]
    results = []  # what the runner handed the tab, as the job returned it
    show = ws.show_result
    monkeypatch.setattr(ws, "show_result", lambda result: (results.append(result), show(result)))
    open_quick(window, qtbot, "nonattr-infinity", steps=2000)
    r = results[-1].result  # the job's InfinityResult, beside the view state made from it
    X, y = r.X, np.ravel(r.Y)
    sigmoid = lambda z: 1 / (1 + np.exp(-z))
    L_inf = float(((y.mean() - y) ** 2).sum())

    def loss(W, b, v, b_out):
        res = sigmoid(X @ W.T + b) @ v + b_out - y
        return float(res @ res)

    # L(b) − L∞ against the shared bias, on a log axis: the drawn data, before the log.
    (bias_line,) = plotted(ws.bias_view)
    b, drawn = bias_line.xData, bias_line.yData
    np.testing.assert_array_equal(b, r.curve.b)
    naive = np.array([loss(r.W, np.full(len(r.v), bk), r.v, 0.0) for bk in b]) - L_inf
    np.testing.assert_array_less(np.abs(drawn - naive), excess_tolerance(naive + L_inf, L_inf) + 1e-300)
    assert (drawn > 0).all()  # above the limit for every b: the minimum at infinity is suboptimal

    # GD from b0: L − L∞ at each recorded step from that step's weights; L-BFGS's level as a line.
    (gd_line,) = plotted(ws.gd_view)
    gd = r.gd
    steps, drawn = xy(gd_line).T
    np.testing.assert_array_equal(steps, gd.step)
    naive = np.array([loss(gd.W[k], gd.b[k], gd.v[k], gd.b_out[k]) for k in range(len(gd.step))]) - L_inf
    np.testing.assert_array_less(np.abs(drawn - naive), excess_tolerance(naive + L_inf, L_inf))
    lower = [item for item in ws.gd_view._items if isinstance(item, pg.InfiniteLine)]
    level = loss(r.lower.W, r.lower.b, r.lower.v, r.lower.b_out) - L_inf
    assert [item.value() for item in lower] == [pytest.approx(level, abs=excess_tolerance(level + L_inf, L_inf))]
    assert level < 0  # L-BFGS goes below the limit at infinity


def test_the_spectrum_draws_each_eigenvalue_once_in_its_kind(qapp):
    """Sorted, on the signed log scale y = sign(e)·log10(max(|e|, τ)/τ): the negative ones red
    and large, those within τ of zero grey on y = 0, the positive ones blue (one item each)."""
    from gui.views.spectrum_view import NEGATIVE, POSITIVE, ZERO, SpectrumView

    tol = 1e-7
    eigs = np.array([5.0, -1e-9, -3.0, 2e-8, 1e-3, 0.0, -4e-5])
    view = SpectrumView()
    view.show_spectrum(eigs, tol)
    order = np.sort(eigs)
    want = {
        "negative": [(i, -np.log10(-e / tol)) for i, e in enumerate(order) if e < -tol],
        "zero": [(i, 0.0) for i, e in enumerate(order) if abs(e) <= tol],
        "positive": [(i, np.log10(e / tol)) for i, e in enumerate(order) if e > tol],
    }
    for kind, color in (("negative", NEGATIVE), ("zero", ZERO), ("positive", POSITIVE)):
        item = view.groups[kind]
        np.testing.assert_allclose(np.column_stack(item.getData()), np.array(want[kind]).reshape(-1, 2), atol=1e-12)
        assert item.opts["brush"].color().name() == color.lower()
    assert [len(want[k]) for k in ("negative", "zero", "positive")] == [2, 3, 2]
    view.deleteLater()
