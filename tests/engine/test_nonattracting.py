"""The non-attracting-region experiments in --quick mode, and their data products."""
import json

import numpy as np
import pytest

from engine import deep, netio
from engine import nonattracting as NA
from engine.experiments import experiments
from engine.inspect import inspect_network_file
from engine.progress import run_to_completion


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("nonattr")
    for name in ("nonattr-deep", "nonattr-path", "nonattr-shallow", "nonattr-infinity"):
        d = out / name
        d.mkdir()
        if name == "nonattr-path":  # reuse the deep run's minimum, as `reproduce` into one folder would
            (d / "big_min.npz").write_bytes((out / "nonattr-deep" / "big_min.npz").read_bytes())
        run_to_completion(experiments()[name].run(d, quick=True, seed=0))
    return out


def test_deep_writes_its_files_and_numbers(out):
    d = out / "nonattr-deep"
    for f in ("metrics.json", "small_min.npz", "big_min.npz", "saddle.npz", "fig3a_minimum.png",
              "fig3b_degenerate_path.png", "fig3c_saddle.png", "fig3d_descent.png"):
        assert (d / f).stat().st_size > 0, f
    m = json.loads((d / "metrics.json").read_text())
    assert m["big"]["widths"] == [2, 21, 21, 1] and m["big"]["n_negative"] == 0
    assert abs(m["big"]["loss"] - m["small"]["loss"]) < 1e-12
    assert m["saddle"]["hessian_min"] < -1e-6 and min(m["descent"]["loss"]) < m["saddle"]["loss"]
    assert set(m["small"]["B"]) == {"1", "2"} and m["landscape"]["envelope_gap_at_min"] >= -1e-12
    saddle = netio.load_network(d / "saddle.npz")
    direction = saddle.extras["descent_direction"]
    assert deep.loss(saddle.arch, saddle.params + 0.5 * direction, saddle.X, saddle.Y) < m["saddle"]["loss"]
    report = inspect_network_file(d / "small_min.npz")
    assert report["critical_point"] == "strict minimum" and report["gamma_construction"]["possible"]
    json.dumps(report)


def test_path_is_monotone_and_reaches_zero(out):
    m = json.loads((out / "nonattr-path" / "metrics.json").read_text())
    assert m["monotone"] and m["loss_end"] < 1e-20 and m["path_error"] < 1e-10 and m["condition_number"] < 1e9
    assert m["straight_max"] > m["loss_start"]  # the straight segment climbs first; the path does not
    assert (out / "nonattr-path" / "path.png").exists()


def test_shallow_widens_beyond_samples(out):
    m = json.loads((out / "nonattr-shallow" / "metrics.json").read_text())
    assert m["wider_than_samples"] and m["fukumizu_amari"]["widths"] == [1, 2, 1]
    assert m["wide"]["n_negative"] == 0 and m["saddle"]["verdict"] == "saddle"


def test_infinity_loss_is_above_the_limit_and_accurate(out):
    m = json.loads((out / "nonattr-infinity" / "metrics.json").read_text())
    assert m["excess_positive_for_all_b"] and m["gd"]["bias_end"] > m["gd"]["bias_start"]
    assert m["lbfgs_below_L_inf"]
    X, Y = NA.infinity_data(0)  # the data run_infinity and the GUI share
    assert X.shape == (20, 1) and np.array_equal(NA.infinity_data(0)[1], Y)
    # the accurate excess agrees with plain subtraction where that still has digits (small b)
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(12, 1)), rng.normal(size=12)
    W, v = NA.infinity_point(X, Y, 3)
    curve = NA.loss_vs_bias(X, Y, W, v, [1.0, 3.0])
    arch = deep.Arch((1, 3, 1), "sigmoid", True)
    for b, excess in zip(curve["b"], curve["loss_minus_Linf"]):
        direct = deep.loss(arch, deep.pack([W, v[None]], [np.full(3, b), np.zeros(1)]), X, Y) - curve["L_inf"]
        assert excess == pytest.approx(direct, rel=1e-8)
