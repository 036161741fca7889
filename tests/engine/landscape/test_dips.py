"""The share of random directions that dip below L(θ) (engine.landscape.dips), on a quadratic
whose answer is known in closed form, and an MLP's extreme-curvature directions."""

import numpy as np
import pytest

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import dips as DIPS
from engine.landscape.directions import gaussian_draws


def test_a_quadratic_saddle_dips_exactly_where_its_form_is_negative():
    """L(x) = ½ Σ λ_i x_i² at x = 0: L(t d) = ½ t² Σ λ_i d_i², below L(0) exactly when the sum is
    negative, whatever t; the directions are unit Gaussian draws, block by block."""
    lam = np.array([-3.0, 1.0, 0.5, 0.2, 0.1])
    evaluate = lambda points: 0.5 * (points**2 @ lam)  # noqa: E731
    count = 40
    dips = run_to_completion(DIPS.dips_job(evaluate, [(5,)], np.zeros(5), 0.0, 0.5, count, "random", seed=7))
    draws = np.concatenate(
        [gaussian_draws(min(DIPS.DRAW_BLOCK, count - s), 5, 7 + s // DIPS.DRAW_BLOCK) for s in range(0, count, 16)]
    )
    negative = (draws**2 @ lam) < 0
    np.testing.assert_array_equal(dips.dipped, negative)
    assert dips.share == negative.mean() and 0 < dips.share < 1
    assert dips.t[-1] == pytest.approx(0.5) and dips.t[0] == pytest.approx(0.005)
    assert f"{negative.sum()} of {count} random random directions" in dips.text()


def test_a_minimum_never_dips_and_bad_counts_are_refused():
    evaluate = lambda points: (points**2).sum(axis=1)  # noqa: E731
    dips = run_to_completion(DIPS.dips_job(evaluate, [(3,)], np.zeros(3), 0.0, 1.0, 10, "random"))
    assert dips.share == 0.0
    with pytest.raises(EngineInputError, match="dip directions"):
        run_to_completion(DIPS.dips_job(evaluate, [(3,)], np.zeros(3), 0.0, 1.0, 0, "random"))
    with pytest.raises(EngineInputError, match="extent"):
        DIPS.dip_steps(float("nan"))


def test_an_mlps_extreme_directions_are_its_hessians_eigenvectors():
    rng = np.random.default_rng(0)
    arch = mlp.landscape_arch((2, 4, 1), "tanh", True)
    theta, X, Y = rng.normal(size=arch.n_params), rng.normal(size=(9, 2)), rng.normal(size=9)
    e = DIPS.mlp_extreme_directions(arch, theta, X, Y)
    H = mlp.hessian(arch, theta, X, Y)
    values = np.linalg.eigvalsh(H)
    assert e.bottom_eigenvalue == pytest.approx(values[0]) and e.top_eigenvalue == pytest.approx(values[-1])
    for d, lam in ((e.d1, e.bottom_eigenvalue), (e.d2, e.top_eigenvalue)):
        np.testing.assert_allclose(H @ d, lam * d, atol=1e-10 * abs(values).max())
    assert e.gradient_norm == pytest.approx(np.linalg.norm(mlp.loss_and_grad(arch, theta, X, Y)[1]))
    losses = DIPS.mlp_evaluator(arch, X, Y)(np.stack([theta, theta + e.d1]))
    assert losses[0] == pytest.approx(mlp.loss(arch, theta, X, Y), rel=1e-12)
