"""Probability of an obstruction at initialization (MATH A7): closed forms against independent
integrals and Monte Carlo, and the Fig. 5 maps job."""

import math

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.topology.probability import (
    MapSettings,
    ProbabilityMaps,
    obstruction_probability,
    obstruction_probability_mc,
    probability_grid,
    probability_maps_job,
)


@pytest.mark.parametrize("scheme", ["kaiming_normal", "xavier_normal"])
@pytest.mark.parametrize("d, l", [(1, 1), (3, 4), (30, 1), (10, 10)])
def test_monte_carlo_agrees_with_closed_form(scheme, d, l):
    est, se = obstruction_probability_mc(d, l, scheme, 20000, seed=d * 31 + l)
    assert abs(est - obstruction_probability(d, l, scheme)) < 4 * se


def test_closed_form_known_values():
    assert obstruction_probability(1, 1, "xavier_normal") == pytest.approx(0.5)  # σ1 = σ2, d = 1
    # Kaiming, l = 1: P[χ²_d / d < χ²_1], integrated numerically over the χ²_1 density
    from scipy import integrate, stats

    d = 5
    p = integrate.quad(lambda t: stats.chi2(d).cdf(d * t) * stats.chi2(1).pdf(t), 0, np.inf)[0]
    assert obstruction_probability(d, 1, "kaiming_normal") == pytest.approx(p, abs=1e-8)
    g = probability_grid([1, 5], [1, 2, 3], "kaiming_normal")
    assert g.shape == (2, 3) and g[1, 0] == pytest.approx(p, abs=1e-8)
    with pytest.raises(EngineInputError, match="closed form"):
        obstruction_probability(3, 3, "pytorch")


def test_probability_maps_job_closed_forms_then_monte_carlo():
    partials = []
    res = run_to_completion(
        probability_maps_job(MapSettings(7, 6, mc_samples=4000, mc_stride=3, seed=2)),
        lambda u: u.partial is not None and partials.append(u.partial),
    )
    assert isinstance(res, ProbabilityMaps) and res == partials[-1]
    # The first partial already holds both complete closed-form maps, cell for cell.
    first = partials[0]
    assert all(len(rows) == 0 for rows in first.mc.values())
    for scheme, grid in res.closed.items():
        assert grid.shape == (7, 6) and grid is first.closed[scheme]
        for i, d in enumerate(res.d):
            for j, l in enumerate(res.l):
                assert grid[i, j] == pytest.approx(obstruction_probability(int(d), int(l), scheme), abs=1e-12)
    # Then Monte Carlo at d, l ∈ {1, 4, 7} × {1, 4}, growing one point per partial.
    counts = [sum(len(r) for r in p.mc.values()) for p in partials]
    assert counts == sorted(counts) and counts[-1] == 2 * 3 * 2
    assert len(first.mc["kaiming_normal"]) == 0  # earlier partials are never edited
    z = []
    for scheme, rows in res.mc.items():
        assert {(d, l) for d, l, _, _ in rows} == {(d, l) for d in (1, 4, 7) for l in (1, 4)}
        for d, l, est, se in rows:
            z.append((est - obstruction_probability(int(d), int(l), scheme)) / se)
    assert max(abs(v) for v in z) < 4
    assert len({r[2] for r in res.mc["kaiming_normal"]}) > 1  # not one shared random stream


def test_probability_maps_job_without_monte_carlo_and_bad_input():
    res = run_to_completion(probability_maps_job(MapSettings(3, 2, mc_samples=0)))
    assert all(len(rows) == 0 for rows in res.mc.values())
    for kwargs, match in [
        ({"mc_samples": 1}, "Monte Carlo draws"),
        ({"mc_stride": 0}, "stride"),
        ({"seed": -1}, "seed"),
        ({"d_max": 0}, "d = 0"),
        ({"l_max": 2.5}, "largest l"),
    ]:
        args = {"d_max": 3, "l_max": 3, **kwargs}
        with pytest.raises(EngineInputError, match=match):
            MapSettings(**args)  # refused before any job exists


def pytorch_default_obstruction_l1(d: int) -> float:
    """P[c < 0] for one neuron (l = e = 1, no bias) under nn.Linear's default init, by quadrature.

    w ~ U(−a, a)^d with a = 1/√d and v ~ U(−1, 1); c = ‖w‖² − v² < 0 iff |v| > √S, S = ‖w‖² ≤ 1,
    so P = 1 − E[√S]. With √s = (2√π)⁻¹ ∫₀^∞ (1 − e^{−λs}) λ^{−3/2} dλ and the Laplace transform
    E[e^{−λS}] = (√π erf(a√λ) / (2a√λ))^d, E[√S] is one smooth integral over λ."""
    from scipy import integrate, special

    a = 1 / math.sqrt(d)

    def integrand(lam):
        x = a * math.sqrt(lam)
        laplace = (math.sqrt(math.pi) * special.erf(x) / (2 * x)) ** d if x > 0 else 1.0
        return (1 - laplace) * lam**-1.5

    mean_sqrt = sum(integrate.quad(integrand, lo, hi, limit=200)[0] for lo, hi in ((0, 1), (1, np.inf)))
    return 1 - mean_sqrt / (2 * math.sqrt(math.pi))


def test_pytorch_default_init_monte_carlo():
    for l in (1, 4):
        est, se = obstruction_probability_mc(1, l, "pytorch", 20000, seed=l)
        assert abs(est - (1 - (1 - 1 / (2 * math.sqrt(l))) ** l)) < 4 * se
    for d in (5, 30):
        exact = pytorch_default_obstruction_l1(d)
        est, se = obstruction_probability_mc(d, 1, "pytorch", 100_000, seed=d)
        assert abs(est - exact) < 4 * se  # se ≈ 0.0016
    # MATH A8: at d = 30 more obstructed (0.4246) than Kaiming's closed form (0.33)
    assert pytorch_default_obstruction_l1(30) > obstruction_probability(30, 1, "kaiming_normal") + 0.05
    assert pytorch_default_obstruction_l1(1) == pytest.approx(0.5, abs=1e-9)  # 1 − E|U(−1, 1)|
    with pytest.raises(EngineInputError, match="d = 0"):
        obstruction_probability_mc(0, 1, "pytorch")
