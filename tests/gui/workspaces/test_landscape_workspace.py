"""The landscape toolkit tab in the real window, on the minima tab's network: what it draws is the
loss recomputed here from the network, the directions and the paths."""

import numpy as np
import pyqtgraph as pg
import pytest

from engine.core import mlp

from ..conftest import save_screenshot, wait_until_idle
from ..drawn import assert_cells_centred, assert_contours_on_their_levels, assert_density_is_the_quadrature
from .test_minima_workspace import open_quick


@pytest.fixture
def toolkit(window, qtbot):
    open_quick(window, qtbot, "nonattr-shallow")
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    return ws


def run_mode(window, qtbot, ws, mode, **groups):
    from gui.presets import apply_values

    apply_values(ws.parameters, {"mode": mode, **groups})
    window.run()
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    return ws.result


def test_plane_draws_the_loss_at_its_grid_points(window, qtbot, toolkit):
    ws = toolkit
    result = run_mode(window, qtbot, ws, "plane", plane={"points": 11, "directions": "filter"})
    plane, net = result.plane, result.network
    drawn = ws.plane.image.image  # rows: d2 (β), columns: d1 (α)
    assert drawn.shape == (11, 11)
    for i, j in ((0, 0), (3, 7), (10, 5)):
        theta = net.params + plane.alpha[i] * plane.d1 + plane.beta[j] * plane.d2
        assert drawn[j, i] == pytest.approx(mlp.loss(net.arch, theta, net.X, net.Y), rel=1e-10)
    # filter normalisation: each neuron's row of d1 has the norm of the same row of θ
    Ws, _ = mlp.unpack(net.arch, net.params)
    D1, _ = mlp.unpack(net.arch, plane.d1)
    for W, D in zip(Ws, D1):
        np.testing.assert_allclose(np.linalg.norm(D, axis=1), np.linalg.norm(W, axis=1), rtol=1e-10)
    np.testing.assert_array_equal(drawn, plane.loss.T)
    assert_cells_centred(ws.plane.image, plane.alpha, plane.beta)
    assert_contours_on_their_levels(ws.plane, plane.alpha, plane.beta, plane.loss)
    save_screenshot(window, "landscape-plane")


def test_pca_paths_are_the_trajectories_projected(window, qtbot, toolkit):
    ws = toolkit
    result = run_mode(window, qtbot, ws, "pca", plane={"points": 9}, training={"steps": 30, "optimizers": "gd, adam"})
    pca = result.pca
    lines = [item for item in ws.plane.paths if isinstance(item, pg.PlotDataItem)]
    marks = [item for item in ws.plane.paths if isinstance(item, pg.ScatterPlotItem)]
    assert [line.name().split(" ")[0] for line in lines] == ["gd", "adam"]
    for run, line, mark in zip(pca.runs, lines, marks):
        x, y = line.getData()
        want = (run.params - pca.center) @ pca.components.T
        np.testing.assert_allclose(np.column_stack([x, y]), want, atol=1e-12)
        # gd starts at the constructed minimum and stays there: a ring in its colour, larger than
        # the marks of the paths that start at the same point, says so on the map and in the key.
        if np.ptp(want, axis=0).max() == 0:
            assert line.name() == f"{run.optimizer} (stayed at its start)"
            assert mark.opts["pen"].color() == line.opts["pen"].color()
            np.testing.assert_allclose(np.column_stack(mark.getData()), want[:1], atol=1e-12)
            assert mark.opts["size"] > max(m.opts["size"] for m in marks if m is not mark)
            assert mark.zValue() > max(item.zValue() for item in ws.plane.paths if item is not mark)
    assert "stayed" in lines[0].name()  # this network's gd: the test would pass vacuously otherwise
    assert_colour_bar_shows_values(window, ws.plane)
    assert np.allclose(pca.components @ pca.components.T, np.eye(2), atol=1e-12)
    label = ws.plane.heatmap.getPlotItem().getAxis("bottom").labelText
    assert f"{100 * pca.explained[0]:.1f} %" in label
    save_screenshot(window, "landscape-pca")


def test_density_and_interpolation_on_the_same_network(window, qtbot, toolkit, tmp_path):
    ws = toolkit
    result = run_mode(window, qtbot, ws, "density", density={"probes": 6, "steps": 60})
    net, d = result.network, result.density
    eigs = np.linalg.eigvalsh(mlp.hessian(net.arch, net.params, net.X, net.Y))
    # Lanczos with as many steps as parameters is exact: the extreme Ritz values are the spectrum's
    lo, hi = d.extremes
    assert hi == pytest.approx(eigs.max(), rel=1e-6)
    assert lo == pytest.approx(eigs.min(), abs=1e-6 * abs(eigs).max())
    assert_density_is_the_quadrature(ws.density, d)
    # interpolation to a second network written here: the drawn curve is L along the segment
    from engine.io.netfile import save_network

    other = net.params + 0.3 * np.random.default_rng(0).normal(size=net.params.shape)
    path = save_network(tmp_path / "b.npz", net.arch, other, net.X, net.Y)
    result = run_mode(window, qtbot, ws, "interpolation", interpolation={"second": str(path), "points": 21})
    x, y = ws.interpolation.getPlotItem().listDataItems()[0].getData()
    for k in (0, 7, 20):
        theta = net.params + x[k] * (other - net.params)
        assert y[k] == pytest.approx(mlp.loss(net.arch, theta, net.X, net.Y), rel=1e-10)
    assert x[0] == pytest.approx(-0.5) and x[-1] == pytest.approx(1.5)


def assert_colour_bar_shows_values(window, view):
    """The colour bar's axis is as wide as its labels (pyqtgraph's fixed 45 px dropped them all for
    a loss such as 0.004290 … 0.004305), a few of them, in the theme's ink, light and dark."""
    from gui.style import theme_colors

    axis = view.colorbar.axis
    (low, high) = view.colorbar.levels()
    for theme in ("dark", "light"):
        window.set_look(theme=theme)
        ticks = [value for _, values in axis.tickValues(low, high, axis.height()) for value in values]
        assert 2 <= len(ticks) <= 8, ticks
        assert axis.width() >= axis.textWidth > 0, (axis.width(), axis.textWidth)
        assert axis.textPen().color() == pg.mkColor(theme_colors()["fg"]), theme
