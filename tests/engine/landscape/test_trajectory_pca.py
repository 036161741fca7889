"""Training trajectories and their PCA plane, against numpy, sklearn and finite differences."""

import numpy as np
import pytest
from sklearn.decomposition import PCA

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import interpolation, trajectory_pca
from tests.engine.landscape import toolkit_numpy as ref

ARCH = mlp.landscape_arch((2, 5, 3), "tanh", True)


def setup(seed=0, n=15):
    rng = np.random.default_rng(seed)
    theta = mlp.init_params(ARCH, rng, 1.5)
    return theta, rng.normal(size=(n, 2)), rng.integers(0, 3, n)


def numpy_grad(theta, X, Y, kind, h=1e-6):
    f = lambda t: ref.loss(t, ARCH.widths, True, "tanh", X, Y, kind)
    return np.array([(f(theta + e) - f(theta - e)) / (2 * h) for e in np.eye(len(theta)) * h])


def test_gd_steps_are_theta_minus_h_times_the_finite_difference_gradient():
    theta, X, Y = setup()
    run = run_to_completion(trajectory_pca.train_job(ARCH, theta, X, Y, 3, "gd", lr=0.3, kind="cross-entropy"))
    assert run.params.shape == (4, ARCH.n_params)
    np.testing.assert_array_equal(run.params[0], theta)
    for k in range(3):
        step = run.params[k] - 0.3 * numpy_grad(run.params[k], X, Y, "cross-entropy")
        np.testing.assert_allclose(run.params[k + 1], step, rtol=1e-7, atol=1e-9)
        assert run.loss[k] == pytest.approx(ref.loss(run.params[k], ARCH.widths, True, "tanh", X, Y, "cross-entropy"))


@pytest.mark.parametrize("optimizers", [("gd",), ("adam", "sgd")])
def test_pca_plane_matches_sklearn_and_numpy(optimizers):
    theta, X, Y = setup(1)
    r = run_to_completion(
        trajectory_pca.pca_plane_job(ARCH, theta, X, Y, 40, optimizers, kind="cross-entropy", n=6, lr=None)
    )
    center = r.runs[0].params[-1]
    np.testing.assert_array_equal(r.center, center)
    stacked = np.concatenate([run.params - center for run in r.runs])
    pca = PCA(n_components=2).fit(stacked)  # Li et al.'s call
    np.testing.assert_allclose(np.abs(r.components @ pca.components_.T), np.eye(2), atol=1e-8)
    np.testing.assert_allclose(r.explained, pca.explained_variance_ratio_, rtol=1e-8)
    for run, path in zip(r.runs, r.paths):
        np.testing.assert_allclose(path, (run.params - center) @ r.components.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r.paths[0, -1], 0, atol=1e-14)
    # the grid covers every path, and its losses are the loss at centre + α c1 + β c2
    assert r.plane.alpha.min() < r.paths[..., 0].min() and r.plane.alpha.max() > r.paths[..., 0].max()
    for i, j in [(0, 0), (2, 5), (5, 3)]:
        point = center + r.plane.alpha[i] * r.components[0] + r.plane.beta[j] * r.components[1]
        assert r.plane.loss[i, j] == pytest.approx(
            ref.loss(point, ARCH.widths, True, "tanh", X, Y, "cross-entropy"), rel=1e-12
        )
    assert r.runs[0].loss[-1] < r.runs[0].loss[0]


def test_bad_training_requests():
    theta, X, Y = setup()
    with pytest.raises(EngineInputError, match="optimizer"):
        run_to_completion(trajectory_pca.train_job(ARCH, theta, X, Y, 3, "lbfgs"))
    with pytest.raises(EngineInputError, match="diverged"):
        one = mlp.Arch((2, 5, 1), "tanh", True)
        start = mlp.init_params(one, np.random.default_rng(0))
        run_to_completion(trajectory_pca.train_job(one, start, X, Y.astype(float), 200, "gd", lr=1e8))


def test_interpolation_curve_matches_numpy():
    theta, X, Y = setup(2)
    other = theta + np.random.default_rng(9).normal(size=theta.size)
    r = run_to_completion(interpolation.interpolation_job(ARCH, theta, other, X, Y, 21, kind="cross-entropy"))
    assert r.alpha[0] <= -0.5 and r.alpha[-1] >= 1.5 and len(r.alpha) == 21
    expect = [ref.loss((1 - a) * theta + a * other, ARCH.widths, True, "tanh", X, Y, "cross-entropy") for a in r.alpha]
    np.testing.assert_allclose(r.loss, expect, rtol=1e-12)
    assert r.loss[5] == pytest.approx(r.loss_a, rel=1e-12) and r.loss[15] == pytest.approx(r.loss_b, rel=1e-12)
    with pytest.raises(EngineInputError, match="parameters"):
        run_to_completion(interpolation.interpolation_job(ARCH, theta, other[:-1], X, Y))
