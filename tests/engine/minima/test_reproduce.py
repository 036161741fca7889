"""The non-attracting-region experiments in --quick mode: their files, their numbers, and that an
outside check recomputes every exported loss from the exported arrays with plain numpy."""

import json

import numpy as np
import pytest

from engine.core import mlp
from engine.core.progress import run_to_completion
from engine.experiments import run_experiment
from engine.io import netfile as netio
from engine.minima import infinity as INF
from engine.minima.report import inspect_network_file

NAMES = ("nonattr-deep", "nonattr-path", "nonattr-shallow", "nonattr-infinity")


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("nonattr")
    for name in NAMES:
        run_to_completion(run_experiment(name, out / name, quick=True, seed=0))
    return out


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_loss(widths, theta, X, Y):
    """Σ (f(x) − y)² of a sigmoid net without biases, from the flat vector (W1, W2, … row-major)."""
    a, pos = np.asarray(X, float), 0
    for l in range(1, len(widths)):
        n = widths[l] * widths[l - 1]
        W = theta[pos : pos + n].reshape(widths[l], widths[l - 1])
        pos += n
        a = a @ W.T if l == len(widths) - 1 else sigmoid(a @ W.T)
    return float(((a - np.asarray(Y, float).reshape(a.shape)) ** 2).sum())


def test_deep_writes_its_files_and_numbers(out):
    d = out / "nonattr-deep"
    for f in (
        "metrics.json",
        "small_min.npz",
        "big_min.npz",
        "saddle.npz",
        "fig3a_minimum.png",
        "fig3b_degenerate_path.png",
        "fig3c_saddle.png",
        "fig3d_descent.png",
        "landscape.npz",
        "degenerate_path.npz",
        "descent.npz",
        "spectrum.npz",
        "plane.npz",
    ):
        assert (d / f).stat().st_size > 0, f
    m = json.loads((d / "metrics.json").read_text())
    assert m["big"]["widths"] == [2, 21, 21, 1] and m["big"]["n_negative"] == 0
    assert m["big"]["verdict"] == "non-attracting region of local minima"
    assert abs(m["big"]["loss"] - m["small"]["loss"]) < 1e-12
    assert m["saddle"]["verdict"] == "saddle" and m["saddle"]["unmet"]
    assert m["saddle"]["hessian_min"] < -1e-6 and min(m["descent"]["loss"]) < m["saddle"]["loss"]
    assert set(m["small"]["B"]) == {"1", "2"} and m["landscape"]["envelope_gap_at_min"] >= -1e-12
    saddle = netio.load_network(d / "saddle.npz")
    direction = saddle.extras["descent_direction"]
    # The saved direction descends: at the step where metrics' descent curve is lowest (0.5 suited the
    # flat λ = 0.5 instance only; with λ = 0.99 the dip is deeper and narrower).
    t_low = m["descent"]["t"][int(np.argmin(m["descent"]["loss"]))]
    assert mlp.loss(saddle.arch, saddle.params + t_low * direction, saddle.X, saddle.Y) < m["saddle"]["loss"]
    report = inspect_network_file(d / "small_min.npz")
    assert report["critical_point"] == "strict minimum" and report["gamma_construction"]["possible"]
    json.dumps(report)


def test_deep_exports_recompute_its_metrics(out):
    d = out / "nonattr-deep"
    m = json.loads((d / "metrics.json").read_text())
    big = np.load(d / "big_min.npz")
    widths = m["big"]["widths"]
    slices = np.load(d / "landscape.npz")
    for name in ("min", "saddle"):
        t, curves, env, L = (
            slices[f"{k}_{'minimum' if name == 'min' else name}"] for k in ("t", "curves", "envelope", "L_star")
        )
        assert np.array_equal(env, curves.min(0))
        assert m["landscape"][f"envelope_gap_at_{name}"] == pytest.approx((env[t != 0] - L).min(), abs=1e-15)
    line = np.load(d / "descent.npz")
    X, Y = big["X"], big["Y"]
    for k in (0, len(line["t"]) // 3, -1):
        theta = line["params"] + line["t"][k] * line["direction"]
        assert numpy_loss(widths, theta, X, Y) == pytest.approx(line["loss"][k], rel=1e-12)
    path = np.load(d / "degenerate_path.npz")
    assert np.array_equal(path["lam"], m["degenerate_path"]["lam"])
    lo, hi = path["interval"][0]
    inside = (path["lam"] > lo) & (path["lam"] < hi)
    assert inside.any() and (~inside).any()


def test_path_is_monotone_and_reaches_zero(out):
    m = json.loads((out / "nonattr-path" / "metrics.json").read_text())
    assert m["monotone"] and m["loss_end"] < 1e-20 and m["path_error"] < 1e-10 and m["condition_number"] < 1e9
    assert m["straight_max"] > m["loss_start"]  # the straight segment climbs first; the path does not
    assert (out / "nonattr-path" / "path.png").exists()


def test_path_exports_recompute_every_loss(out):
    d = out / "nonattr-path"
    m = json.loads((d / "metrics.json").read_text())
    p = np.load(d / "path.npz")
    assert len(p["points"]) == len(m["loss_path"]) > 2 and m["activation"] == "sigmoid" and not m["bias"]
    losses = [numpy_loss(p["widths"], theta, p["X"], p["Y"]) for theta in p["points"]]
    assert np.allclose(losses, p["loss_path"], rtol=1e-12, atol=1e-12)
    assert np.allclose(losses, m["loss_path"], rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(losses) <= 1e-12 * losses[0])


def test_path_honours_seed_over_a_stale_big_min(out, tmp_path):
    """A big_min.npz from another seed in the folder is overwritten, never reused."""
    stale = netio.load_network(out / "nonattr-deep" / "big_min.npz")
    netio.save_network(tmp_path / "big_min.npz", stale.arch, stale.params + 1.0, stale.X, stale.Y)
    run_to_completion(run_experiment("nonattr-path", tmp_path, quick=True, seed=0))
    fresh = json.loads((out / "nonattr-path" / "metrics.json").read_text())
    again = json.loads((tmp_path / "metrics.json").read_text())
    assert again["loss_path"] == fresh["loss_path"]
    assert np.array_equal(
        np.load(tmp_path / "path.npz")["points"], np.load(out / "nonattr-path" / "path.npz")["points"]
    )
    run_to_completion(run_experiment("nonattr-path", tmp_path, quick=True, seed=1))
    assert json.loads((tmp_path / "metrics.json").read_text())["loss_path"] != fresh["loss_path"]


def test_shallow_widens_beyond_samples(out):
    m = json.loads((out / "nonattr-shallow" / "metrics.json").read_text())
    assert m["wider_than_samples"] and m["fukumizu_amari"]["widths"] == [1, 2, 1]
    assert m["wide"]["n_negative"] == 0 and m["saddle"]["verdict"] == "saddle"


def test_infinity_loss_is_above_the_limit_and_accurate(out):
    m = json.loads((out / "nonattr-infinity" / "metrics.json").read_text())
    assert m["excess_positive_for_all_b"] and m["gd"]["bias_end"] > m["gd"]["bias_start"]
    assert m["lbfgs_below_L_inf"]
    X, Y = INF.infinity_data(0)  # the data run_infinity and the GUI share
    assert X.shape == (20, 1) and np.array_equal(INF.infinity_data(0)[1], Y)
    # the accurate excess agrees with plain subtraction where that still has digits (small b)
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(12, 1)), rng.normal(size=12)
    W, v = INF.infinity_point(X, Y, 3)
    curve = INF.loss_vs_bias(X, Y, W, v, [1.0, 3.0])
    arch = mlp.Arch((1, 3, 1), "sigmoid", True)
    for b, excess in zip(curve.b, curve.loss_minus_Linf):
        direct = mlp.loss(arch, mlp.pack([W, v[None]], [np.full(3, b), np.zeros(1)]), X, Y) - curve.L_inf
        assert excess == pytest.approx(direct, rel=1e-8)


def test_infinity_exports_recompute_its_losses(out):
    d = out / "nonattr-infinity"
    m = json.loads((d / "metrics.json").read_text())
    e = np.load(d / "infinity.npz")
    X, y = e["X"], e["Y"]

    def loss(W, b, v, b_out):
        r = sigmoid(X @ W.T + b) @ v + b_out - y
        return r @ r

    L_inf = ((y.mean() - y) ** 2).sum()
    assert float(e["L_inf"]) == pytest.approx(L_inf, rel=1e-14) and m["L_inf"] == pytest.approx(L_inf, rel=1e-14)
    L_b = [loss(e["W"], np.full(len(e["v"]), b), e["v"], 0.0) for b in e["b"]]
    assert np.allclose(L_b, e["L_b"], rtol=0, atol=1e-12)
    assert np.allclose(np.array(L_b) - L_inf, e["excess_b"], rtol=0, atol=1e-12)
    gd = [loss(W, b, v, bo) for W, b, v, bo in zip(e["gd_W"], e["gd_b"], e["gd_v"], e["gd_b_out"])]
    assert np.allclose(gd, e["gd_loss"], rtol=0, atol=1e-12)
    assert np.allclose(np.array(gd) - L_inf, e["gd_excess"], rtol=0, atol=1e-12)
    assert e["gd_W"][0] == pytest.approx(e["W"]) and np.all(e["gd_b"][0] == e["b0"])
    assert int(e["gd_step"][-1]) == m["gd"]["steps"] and e["gd_b"][-1].mean() == pytest.approx(m["gd"]["bias_end"])
    lower = loss(e["lower_W"], e["lower_b"], e["lower_v"], e["lower_b_out"])
    assert lower == pytest.approx(float(e["lower_loss"]), abs=1e-12) and lower < L_inf
    assert m["lbfgs_loss_from_recipe_weights_b0"] == pytest.approx(lower, abs=1e-12)
