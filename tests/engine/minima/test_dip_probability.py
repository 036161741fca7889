"""dip_probability: Imhof against closed forms and sampling; predicted vs observed dips at a real saddle."""

import numpy as np
import pytest
import scipy.optimize

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.runtime import configure_torch_threads
from engine.minima import dip_probability as DP


def test_two_eigenvalues_match_closed_form():
    # λ1 w1² + λ2 w2² < 0 ⇔ |w2/w1| > √(λ1/−λ2); the angle of (w1, w2) is uniform, so
    # P = 1 − (2/π) arctan √(λ1/−λ2) = (2/π) arctan √(−λ2/λ1).
    for l1, l2 in ((1.0, -1.0), (3.0, -0.5), (544.5, -1.6e-3), (1.0, -1e-8), (0.2, -7.0)):
        want = 2 / np.pi * np.arctan(np.sqrt(-l2 / l1))
        assert DP.negative_probability([l1, l2]) == pytest.approx(want, rel=1e-9)
    assert DP.negative_probability([1.0, 1.0]) == 0.0  # same sign: never negative
    assert DP.negative_probability([-1.0, -2.0]) == 1.0


def test_imhof_matches_monte_carlo_on_random_symmetric_matrices():
    rng = np.random.default_rng(0)
    n = 20_000
    for size, shift in ((6, 0.0), (10, 2.0), (15, 3.5)):
        A = rng.normal(size=(size, size))
        eigs = np.linalg.eigvalsh(A + A.T + shift * np.eye(size))
        assert eigs[0] < 0 < eigs[-1]  # mixed signs
        p = DP.negative_probability(eigs)
        w = rng.standard_normal((n, size))
        observed = ((w**2) @ eigs < 0).mean()
        assert 0.01 < p < 0.99 and abs(observed - p) < 4 * np.sqrt(p * (1 - p) / n)


def test_rare_dips_match_high_precision_quadrature():
    # One negative eigenvalue among many positive ones, as at the constructed saddles: P is far
    # below anything sampling can check (conditioning on the positive part, E[erfc(√(S/2|λ0|))],
    # gave 3e-13 here: its mean is carried by samples too rare to draw). So check the float
    # quadrature of Imhof's integral against the same integral in 30-digit arithmetic.
    mpmath = pytest.importorskip("mpmath")
    lam = np.concatenate([[-0.02], np.geomspace(1e-3, 50.0, 12)])
    mpmath.mp.dps = 30
    exact = [mpmath.mpf(float(v)) / 50 for v in lam]
    f = lambda u: (
        mpmath.sin(sum(mpmath.atan(v * u) for v in exact) / 2)
        / u
        / mpmath.exp(sum(mpmath.log1p((v * u) ** 2) for v in exact) / 4)
    )
    want = 0.5 - mpmath.quad(f, [0] + [mpmath.mpf(4) ** k for k in range(-3, 16)] + [mpmath.inf]) / mpmath.pi
    p = DP.negative_probability(np.concatenate([lam, np.zeros(30)]))  # exact zeros are dropped
    assert 1e-10 < float(want) < 1e-8 and p == pytest.approx(float(want), rel=1e-6)


def test_semidefinite_and_rounding_level_eigenvalues():
    A = np.random.default_rng(1).normal(size=(8, 5))
    assert DP.negative_probability(np.linalg.eigvalsh(A @ A.T)) == 0.0  # PSD with 3 zero eigenvalues
    assert DP.negative_probability([5.0, 2.0, -4e-14]) == 0.0  # rounding, not curvature
    with pytest.raises(EngineInputError, match="every eigenvalue is zero"):
        DP.negative_probability([0.0, 0.0])


def test_family_indices():
    arch = mlp.Arch((2, 3, 2, 1), "tanh", True)  # W1 0:6 b1 6:9 W2 9:15 b2 15:17 W3 17:19 b3 19
    assert DP.family_indices(arch, "all").tolist() == list(range(20))
    assert DP.family_indices(arch, "layer", layer=2).tolist() == list(range(9, 17))
    assert DP.family_indices(arch, "neuron", layer=1, neuron=2).tolist() == [4, 5, 8]
    assert DP.family_indices(arch, "pair", layer=2, pair=(0, 1)).tolist() == [9, 10, 11, 15, 12, 13, 14, 16]
    for kwargs, message in (
        ({"kind": "neuron", "layer": 1, "neuron": 3}, "neuron 3 does not exist"),
        ({"kind": "pair", "layer": 1, "pair": (1, 1)}, "two different neurons"),
        ({"kind": "layer", "layer": 4}, "needs a layer"),
        ({"kind": "row"}, "unknown direction family"),
    ):
        with pytest.raises(EngineInputError, match=message):
            DP.family_indices(arch, **kwargs)


def _critical_point(arch, X, Y, theta):
    fun = lambda p: mlp.loss_and_grad(arch, p, X, Y)
    theta = scipy.optimize.minimize(
        fun, theta, jac=True, method="L-BFGS-B", options=dict(maxiter=5000, gtol=1e-10, ftol=1e-16)
    ).x
    for _ in range(6):  # Newton polish to a gradient at rounding level
        theta = theta - np.linalg.lstsq(mlp.hessian(arch, theta, X, Y), fun(theta)[1], rcond=None)[0]
    return theta


def _split_first_neuron(arch, theta, lam):
    """γ^0_λ on a one-hidden-layer net (docs/MATH.md B2), written out here to stay independent of construction."""
    (W1, W2), _ = mlp.unpack(arch, theta)
    W1 = np.vstack([W1, W1[0]])
    W2 = np.hstack([W2, lam * W2[:, :1]])
    W2[:, 0] *= 1 - lam
    return mlp.Arch((arch.widths[0], arch.widths[1] + 1, 1), arch.activation), mlp.pack([W1, W2])


@pytest.fixture(scope="module")
def minimum_and_saddle():
    configure_torch_threads()  # torch's default threads made this 4-parameter L-BFGS take seconds
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 2))
    Y = np.tanh(X @ [1.0, -2.0]) + 0.5 * np.sin(3 * X[:, 0])
    small = mlp.Arch((2, 2, 1), "sigmoid")
    theta = _critical_point(small, X, Y, mlp.init_params(small, np.random.default_rng(3)))
    big, saddle = _split_first_neuron(small, theta, 0.5)
    return X, Y, (small, theta), (big, saddle)


TS = (-0.05, -0.02, 0.02, 0.05)


def test_predicted_matches_observed_at_a_saddle(minimum_and_saddle):
    X, Y, _, (arch, theta) = minimum_and_saddle
    assert np.linalg.norm(mlp.loss_and_grad(arch, theta, X, Y)[1]) < 1e-12
    H = mlp.hessian(arch, theta, X, Y)
    eigs = np.linalg.eigvalsh(H)
    assert eigs[0] < -1e-3 * eigs[-1]  # a saddle: one clearly negative eigenvalue
    seen = {}
    for family in (
        DP.index_family(arch, "pair", layer=1, pair=(0, 2)),
        DP.index_family(arch, "layer", layer=1),
        DP.eigenvector_family(arch, theta, X, Y, k=3),
    ):
        r = DP.dip_fractions(arch, theta, X, Y, family, n=20_000, ts=TS, seed=7, H=H)
        assert 1e-3 < r.predicted < 1 - 1e-3
        assert abs(r.quadratic - r.predicted) < 4 * r.quadratic_stderr
        # what the curves show at small t agrees with the second-order prediction too
        assert abs(r.curve - r.predicted) < 4 * r.quadratic_stderr
        seen[family.name] = r.predicted
    # the split pair's incoming weights see the saddle far more often than all parameters do
    everything = DP.predicted_dip_fraction(H)
    assert everything < seen["layer 1"] < seen["pair 1:(0, 2)"]


def test_predicted_and_observed_zero_at_a_strict_minimum(minimum_and_saddle):
    X, Y, (arch, theta), _ = minimum_and_saddle
    H = mlp.hessian(arch, theta, X, Y)
    assert np.linalg.eigvalsh(H)[0] > 1e-3
    for family in (DP.index_family(arch, "all"), DP.index_family(arch, "neuron", layer=1, neuron=1)):
        r = DP.dip_fractions(arch, theta, X, Y, family, n=2_000, ts=TS, H=H)
        assert (r.predicted, r.quadratic, r.curve) == (0.0, 0.0, 0.0)


def test_restricted_hessian_from_hvps_equals_block_of_formed_hessian(minimum_and_saddle):
    X, Y, _, (arch, theta) = minimum_and_saddle
    H = mlp.hessian(arch, theta, X, Y)
    family = DP.index_family(arch, "pair", layer=1, pair=(0, 2))
    V = np.linalg.qr(np.random.default_rng(2).normal(size=(arch.n_params, 3)))[0]
    basis = DP.Family("random 3-D span", arch.n_params, basis=V)
    for f, want in ((family, H[np.ix_(family.indices, family.indices)]), (basis, V.T @ H @ V)):
        got = DP.restricted_hessian(arch, theta, X, Y, f, max_full=0)  # max_full=0: the HVP path
        assert np.abs(got - want).max() < 1e-10 * np.abs(H).max()


def test_family_directions_stay_in_their_family_and_have_unit_norm():
    from engine.minima.dip_probability import family_directions, family_indices, slice_family

    arch = mlp.Arch((2, 3, 2, 1), "sigmoid", True)
    theta = mlp.init_params(arch, np.random.default_rng(0), 1.0)
    X, Y = np.random.default_rng(1).normal(size=(6, 2)), np.random.default_rng(2).normal(size=6)
    for kind, where in (("layer", {"layer": 2}), ("neuron", {"layer": 1, "neuron": 2}), ("pair", {"pair": (1, 0, 2)})):
        fam = slice_family(arch, theta, X, Y, kind, **where)
        d = family_directions(fam, 50, seed=3)
        inside = family_indices(
            arch, kind, layer=where.get("layer", 1), neuron=where.get("neuron"), pair=(0, 2) if kind == "pair" else None
        )
        outside = np.setdiff1d(np.arange(arch.n_params), inside)
        assert np.allclose(np.linalg.norm(d, axis=1), 1) and not d[:, outside].any() and d[:, inside].any()
    eig = slice_family(arch, theta, X, Y, "eigen", k=3)
    assert np.allclose(np.linalg.norm(family_directions(eig, 10), axis=1), 1) and eig.dim == 3
