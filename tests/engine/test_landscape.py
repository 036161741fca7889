"""landscape: batched slices/planes equal plain per-point evaluation; float32 agrees; envelope sense."""
import numpy as np
import pytest

from engine import deep, landscape
from engine.errors import EngineInputError
from engine.progress import run_to_completion

rng = np.random.default_rng(0)
ARCH = deep.Arch((2, 5, 4, 1), "sigmoid", True)
THETA = rng.normal(size=ARCH.n_params)
X, Y = rng.normal(size=(8, 2)), rng.normal(size=8)


@pytest.mark.parametrize("threads", [1, 2])
def test_batched_slices_equal_per_point(threads):
    updates = []
    s = run_to_completion(landscape.slices_job(ARCH, THETA, X, Y, K=7, P=9, T=0.5, chunk=10, threads=threads),
                          updates.append)
    assert len(updates) >= 1 and updates[-1].fraction == 1
    d = landscape.random_directions(ARCH, THETA, 7, seed=0)
    ref = np.array([landscape.losses_per_point(ARCH, THETA + np.outer(s.t, dk), X, Y) for dk in d])
    assert np.allclose(s.curves, ref, rtol=1e-13, atol=0)
    assert s.L_star == pytest.approx(deep.loss(ARCH, THETA, X, Y), rel=1e-15)
    assert np.allclose(s.envelope, ref.min(0), rtol=1e-13, atol=0)
    assert s.envelope_gap == pytest.approx(np.delete(ref.min(0), 4).min() - s.L_star)


def test_float32_agrees_with_float64():
    s64 = run_to_completion(landscape.slices_job(ARCH, THETA, X, Y, K=50, P=11))
    s32 = run_to_completion(landscape.slices_job(ARCH, THETA, X, Y, K=50, P=11, dtype="float32"))
    assert np.abs(s32.curves / s64.curves - 1).max() < 2e-6


def test_neuron_normalization_and_plane():
    d = landscape.random_directions(ARCH, THETA, 3, seed=1, normalization="neuron")
    for idx in ARCH.neuron_blocks():
        assert np.allclose(np.linalg.norm(d[:, idx], axis=1), np.linalg.norm(THETA[idx]))
    plane = run_to_completion(landscape.plane_job(ARCH, THETA, X, Y, d[0], d[1], n=5, T=0.3))
    i, j = 1, 4
    assert plane.losses[i, j] == pytest.approx(deep.loss(ARCH, THETA + plane.s[i] * d[0] + plane.t[j] * d[1], X, Y),
                                               rel=1e-13)


def test_envelope_stays_above_minimum_of_a_convex_problem():
    # one hidden layer with fixed features is least squares in the output weights; at its
    # minimum along output-only directions every curve rises
    arch = deep.Arch((1, 3, 1))
    theta = rng.normal(size=arch.n_params)
    Xs, Ys = rng.normal(size=(10, 1)), rng.normal(size=10)
    H = 1 / (1 + np.exp(-(Xs @ theta[:3].reshape(3, 1).T)))
    theta[3:] = np.linalg.lstsq(H, Ys, rcond=None)[0]
    d = np.zeros((20, arch.n_params))
    d[:, 3:] = rng.normal(size=(20, 3))
    s = run_to_completion(landscape.slices_job(arch, theta, Xs, Ys, P=11, directions=d))
    assert s.envelope_gap > 0 and s.frac_below == 0 and s.n_below == 0


def test_bad_arguments():
    with pytest.raises(EngineInputError, match="normalization"):
        landscape.random_directions(ARCH, THETA, 3, normalization="filter")
    with pytest.raises(EngineInputError, match="directions have shape"):
        run_to_completion(landscape.slices_job(ARCH, THETA, X, Y, directions=np.ones((2, 3))))
    with pytest.raises(EngineInputError, match="dtype"):
        run_to_completion(landscape.slices_job(ARCH, THETA, X, Y, K=2, P=3, dtype="float16"))
