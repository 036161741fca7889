"""Stochastic Lanczos quadrature against the full eigendecomposition of a small network's Hessian."""

import numpy as np
import pytest

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import density
from tests.engine.landscape import toolkit_numpy as ref
from tests.references import finite_difference_hessian

ARCH = mlp.landscape_arch((3, 5, 4, 2), "tanh", True)  # 46 parameters


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    theta = mlp.init_params(ARCH, rng, 1.5)
    X, Y = rng.normal(size=(14, 3)), rng.normal(size=(14, 2))
    H = mlp.hessian(ARCH, theta, X, Y)
    return theta, X, Y, H, np.linalg.eigvalsh(H)


def test_the_hessian_itself_matches_finite_differences(problem):
    theta, X, Y, H, _ = problem
    fd = finite_difference_hessian(lambda t: ref.loss(t, ARCH.widths, True, "tanh", X, Y), theta)
    np.testing.assert_allclose(H, fd, atol=1e-5 * np.abs(H).max())


def test_quadrature_moments_are_exact_per_probe(problem):
    theta, X, Y, H, eigs = problem
    r = run_to_completion(density.density_job(ARCH, theta, X, Y, probes=6, steps=12, seed=3))
    V = density.probe_vectors(ARCH.n_params, 6, 3)
    np.testing.assert_allclose(np.linalg.norm(V, axis=1), 1)
    for j in range(1, 6):  # m-point Gauss quadrature is exact up to degree 2m − 1 = 23
        exact = np.einsum("pi,pi->p", V @ np.linalg.matrix_power(H, j), V)
        np.testing.assert_allclose(r.moment(j), exact, rtol=1e-9, atol=1e-9 * np.abs(eigs).max() ** j)
    np.testing.assert_allclose(r.weights.sum(1), 1, rtol=1e-12)
    lo, hi = r.extremes  # the extremes converge first
    assert lo == pytest.approx(eigs[0], rel=1e-6, abs=1e-6 * np.abs(eigs).max())
    assert hi == pytest.approx(eigs[-1], rel=1e-8)


def test_full_krylov_space_recovers_the_spectrum_and_its_statistics(problem):
    theta, X, Y, H, eigs = problem
    probes = 300
    r = run_to_completion(density.density_job(ARCH, theta, X, Y, probes=probes, steps=ARCH.n_params, seed=1))
    # with m = P every probe's nodes are H's eigenvalues (to rounding), weighted by (vᵀu_i)²
    used = r.weights > 1e-12
    gaps = np.abs(r.nodes[used][:, None] - eigs[None]).min(1)
    assert gaps.max() < 1e-7 * np.abs(eigs).max()
    # trace and Σλ²: Hutchinson estimates, within 4 standard errors of the exact values
    P = ARCH.n_params
    for j, exact in ((1, eigs.sum()), (2, (eigs**2).sum())):
        samples = P * r.moment(j)
        stderr = samples.std(ddof=1) / np.sqrt(probes)
        assert abs(samples.mean() - exact) < 4 * stderr, (j, samples.mean(), exact, stderr)
    assert r.trace == pytest.approx(P * r.moment(1).mean())
    # the smoothed density integrates to 1 and its mean is the trace / P, up to the Hutchinson error
    step = r.grid[1] - r.grid[0]
    assert r.density.sum() * step == pytest.approx(1, abs=1e-3)
    assert (r.grid * r.density).sum() * step == pytest.approx(r.trace / P, rel=1e-3)


def test_density_for_cross_entropy_and_bad_requests(problem):
    theta, X, _, _, _ = problem
    labels = np.arange(14) % 2
    H = mlp.hessian(ARCH, theta, X, labels, "cross-entropy")
    r = run_to_completion(
        density.density_job(ARCH, theta, X, labels, probes=3, steps=ARCH.n_params, kind="cross-entropy")
    )
    eigs = np.linalg.eigvalsh(H)
    assert r.extremes[1] == pytest.approx(eigs[-1], rel=1e-8)
    with pytest.raises(EngineInputError, match="probes"):
        run_to_completion(density.density_job(ARCH, theta, X, labels, probes=0, kind="cross-entropy"))
