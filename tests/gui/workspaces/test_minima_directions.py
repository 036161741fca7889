"""The minima tab with each direction scaling (unit norm, Li et al.'s filter and layer normalisation)
and, past the full-Hessian limit, the spectral density in the spectrum's place (issue #28).

Every drawn number is recomputed here: directions from numpy's seeded Gaussian draws, scaled by the
rule written out below, and losses from the numpy MLP (tests/references.py); the density against
the toolkit's own ``density.npz`` from ``main.py landscape --density`` on the same network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.core import mlp
from engine.landscape.slices import loss_rounding
from tests.references import numpy_loss

from ..conftest import wait_until_idle
from .test_minima_workspace import QUICK, open_quick

ROOT = Path(__file__).resolve().parents[3]


def scaled_directions(arch, theta, count: int, seed: int, scaling: str) -> np.ndarray:
    """Li et al. 2018 written out: Gaussian rows, then the whole row to norm 1 ("unit"), each row of
    each W_l to the norm of θ's ("filter"), or each W_l to θ's norm ("layer"). No biases here."""
    assert not arch.bias
    d = np.random.default_rng(seed).standard_normal((count, arch.n_params))
    if scaling == "unit":
        return d / np.linalg.norm(d, axis=1, keepdims=True)
    for l in range(1, arch.n_layers + 1):
        blk = arch.block(f"W{l}")
        W = theta[blk.slice].reshape(blk.shape)
        for k in range(count):
            D = d[k, blk.slice].reshape(blk.shape)
            if scaling == "filter":
                D = D * (np.linalg.norm(W, axis=1) / np.linalg.norm(D, axis=1))[:, None]
            else:
                D = D * (np.linalg.norm(W) / np.linalg.norm(D))
            d[k, blk.slice] = D.ravel()
    return d


def envelope(arch, theta, X, Y, d: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.array([[numpy_loss(arch, theta + tk * dk, X, Y) for tk in t] for dk in d]).min(0)


def summation_rtol(X) -> float:
    """A summed loss over N samples, in another order than numpy's: ~N ulps of itself."""
    return 4 * len(X) * np.finfo(float).eps


def title_of(view) -> str:
    return view.getPlotItem().titleLabel.text


@pytest.mark.parametrize("scaling", ["unit", "filter", "layer"])
def test_each_scaling_draws_its_envelopes_and_plane(window, qtbot, scaling):
    ws = open_quick(window, qtbot, "nonattr-shallow", {"slices": {"normalize": scaling}})
    fig = ws.figure
    c = fig.construction
    K, seed = QUICK["slices"]["K"], ws.parameters["slices", "seed"]
    # (a) at the minimum and (c) at the saddle: the drawn envelope is the minimum over the K curves
    # recomputed here, within the rounding the slices allow (float64 kernel against numpy).
    for view, theta in ((ws.slice_min, c.params), (ws.slice_saddle, fig.saddle.probe.params)):
        t, drawn = view.envelope.getData()
        want = envelope(c.arch, theta, c.X, c.Y, scaled_directions(c.arch, theta, K, seed, scaling), t)
        tol = 2 * loss_rounding(c.arch, theta, c.X, c.Y, "float64")
        np.testing.assert_allclose(drawn, want, rtol=summation_rtol(c.X), atol=tol)
        if scaling == "unit":  # a Gaussian family: Imhof's prediction beside what is seen
            assert "predicted" in title_of(view)
        else:
            assert f"{scaling}-normalised: no closed form" in title_of(view)
    # The 2-D slice at the saddle: B9's analytic plane for unit norm (tested in test_minima_drawn),
    # Li et al.'s random plane of two scaled directions otherwise, every cell recomputed.
    image = ws.plane.image.image
    a, b = ws.shown["plane"]["a"], ws.shown["plane"]["b"]
    label = ws.plane.heatmap.getPlotItem().getAxis("bottom").labelText
    if scaling == "unit":
        assert label.startswith("degenerate direction")
        return
    assert label == f"{scaling}-normalised direction 1"
    theta = fig.saddle.probe.params
    d1, d2 = scaled_directions(c.arch, theta, 2, seed, scaling)
    want = np.array([[numpy_loss(c.arch, theta + aj * d1 + br * d2, c.X, c.Y) for aj in a] for br in b])
    tol = 2 * loss_rounding(c.arch, theta, c.X, c.Y, "float64")
    np.testing.assert_allclose(image, want, rtol=summation_rtol(c.X), atol=tol)

    # The λ drag previews (c) with the same directions at θ(λ), in float32.
    from engine.minima.construction import set_split_lambda
    from engine.minima.pipeline import PREVIEW_POINTS

    lam = 0.8
    ws.move_lambda(lam)
    qtbot.waitUntil(lambda: "preview at λ = 0.8" in ws.shown["slices_saddle"].get("title", ""), timeout=60000)
    wait_until_idle(qtbot, window, timeout_ms=60000)
    theta = set_split_lambda(c.arch, c.params, c.splits[-1], lam)
    t, drawn = ws.slice_saddle.envelope.getData()
    assert len(t) == PREVIEW_POINTS
    want = envelope(c.arch, theta, c.X, c.Y, scaled_directions(c.arch, theta, K, seed, scaling), t)
    tol = loss_rounding(c.arch, theta, c.X, c.Y, "float32") + loss_rounding(c.arch, theta, c.X, c.Y, "float64")
    np.testing.assert_allclose(drawn, want, rtol=0, atol=tol)


def toolkit_density(net: Path, out: Path) -> np.lib.npyio.NpzFile:
    """``main.py landscape NET --density``'s density.npz, run as a user runs it."""
    done = subprocess.run(
        [sys.executable, "main.py", "landscape", str(net), "--density", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return np.load(out / "density.npz")


def ritz_extremes(npz) -> tuple[float, float]:
    nodes = npz["nodes"][npz["weights"] > 0]
    return float(nodes.min()), float(nodes.max())


def test_density_past_the_full_hessian_limit_is_the_toolkits(window, qtbot, tmp_path, monkeypatch):
    """The limit is lowered to 100 parameters, so a 2—10—10—1 net (130) is past it and the test stays
    fast: the switch is the limit's, the density the toolkit's for whatever the network."""
    from engine.io.netfile import save_network
    from engine.landscape import hessian
    from engine.minima import report

    monkeypatch.setattr(hessian, "FULL_SPECTRUM_MAX_PARAMS", 100)
    monkeypatch.setattr(report, "FULL_SPECTRUM_MAX_PARAMS", 100)
    arch = mlp.Arch((2, 10, 10, 1), "sigmoid", False)
    rng = np.random.default_rng(3)
    theta = mlp.init_params(arch, rng, 1.0)
    X = rng.standard_normal((12, 2))
    Y = np.sin(X[:, :1])
    net = save_network(tmp_path / "net.npz", arch, theta, X, Y)
    ws = window.workspaces["minima"]
    window.tabs.setCurrentWidget(ws)
    ws.load_network(str(net))
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert not window.message_bar.text, window.message_bar.text
    assert ws._curvature.currentWidget() is ws.density

    want = ritz_extremes(toolkit_density(net, tmp_path / "toolkit"))
    lo, hi = (line.value() for line in ws.density.edges)
    # Lanczos' rounding: each of its 80 steps loses a few ulps of ‖H‖.
    tol = 80 * 8 * np.finfo(float).eps * max(abs(want[0]), abs(want[1]))
    assert lo == pytest.approx(want[0], abs=tol) and hi == pytest.approx(want[1], abs=tol)
    assert "at the network" in ws.shown["density"]["note"]

    # Split by hand and move λ: the density follows the probe, as the spectrum does, and is the
    # toolkit's density of the network at θ(λ).
    from engine.minima.construction import set_split_lambda

    ws.split_neuron(1, 0, 0.5)
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert ws._curvature.currentWidget() is ws.density and "λ = 0.5" in ws.shown["density"]["note"]
    box = ws.inspector.lam
    box.set_value(1.5, emit=True)
    qtbot.waitUntil(lambda: "slider's λ = 1.5" in ws.shown["density"]["note"], timeout=120000)
    wait_until_idle(qtbot, window, timeout_ms=240000)
    c = ws.figure.construction
    moved = save_network(
        tmp_path / "moved.npz", c.arch, set_split_lambda(c.arch, c.params, c.splits[-1], 1.5), c.X, c.Y
    )
    want = ritz_extremes(toolkit_density(moved, tmp_path / "toolkit-moved"))
    lo, hi = (line.value() for line in ws.density.edges)
    assert lo == pytest.approx(want[0], abs=tol) and hi == pytest.approx(want[1], abs=tol)
