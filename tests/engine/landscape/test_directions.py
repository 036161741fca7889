"""Direction normalisation (engine.landscape.directions) against numpy recomputations."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import directions as D
from engine.landscape import slices
from tests.engine.landscape import toolkit_numpy as ref

ARCH = mlp.landscape_arch((4, 6, 5, 3), "tanh", True)


def theta_of(arch, seed=0):
    return mlp.init_params(arch, np.random.default_rng(seed), 1.3) + 0.1 * np.random.default_rng(seed + 1).normal(
        size=arch.n_params
    )


def test_filter_rows_get_theta_row_norms_and_biases_follow_li_et_al():
    theta = theta_of(ARCH)
    d = D.directions(ARCH, theta, 2, seed=3, normalization="filter")
    raw = np.random.default_rng(3).standard_normal((2, ARCH.n_params))
    for k in range(2):
        for (W, b), (Wd, bd), (Wr, _) in zip(
            ref.layers(theta, ARCH.widths, True),
            ref.layers(d[k], ARCH.widths, True),
            ref.layers(raw[k], ARCH.widths, True),
        ):
            np.testing.assert_allclose(np.linalg.norm(Wd, axis=1), np.linalg.norm(W, axis=1), rtol=1e-12)
            # each row keeps the raw draw's direction: a positive multiple of it
            cos = (Wd * Wr).sum(1) / np.linalg.norm(Wd, axis=1) / np.linalg.norm(Wr, axis=1)
            np.testing.assert_allclose(cos, 1, rtol=1e-12)
            np.testing.assert_array_equal(bd, b)  # Li et al. copy the 1-D parameters
    ignored = D.directions(ARCH, theta, 2, seed=3, normalization="filter", ignore="biases")
    for _, bd in ref.layers(ignored[0], ARCH.widths, True):
        assert not bd.any()
    np.testing.assert_allclose(D.filter_norms(ARCH, d[0]), D.filter_norms(ARCH, theta), rtol=1e-12)


def test_layer_and_random_normalisation():
    theta = theta_of(ARCH)
    d = D.directions(ARCH, theta, 3, seed=5, normalization="layer")
    for (W, _), (Wd, _) in zip(ref.layers(theta, ARCH.widths, True), ref.layers(d[1], ARCH.widths, True)):
        assert np.linalg.norm(Wd) == pytest.approx(np.linalg.norm(W), rel=1e-12)
    u = D.directions(ARCH, theta, 3, seed=5, normalization="random")
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1, rtol=1e-12)
    raw = np.random.default_rng(5).standard_normal((3, ARCH.n_params))
    np.testing.assert_allclose(u, raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-12)


def test_seeded_and_reproducible():
    theta = theta_of(ARCH)
    a = D.directions(ARCH, theta, 2, seed=11)
    np.testing.assert_array_equal(a, D.directions(ARCH, theta, 2, seed=11))
    assert not np.allclose(a, D.directions(ARCH, theta, 2, seed=12))


def test_slices_run_along_filter_normalised_directions():
    arch = mlp.Arch((2, 4, 1), "sigmoid", False)
    theta = theta_of(arch)
    X, Y = np.random.default_rng(0).normal(size=(6, 2)), np.random.default_rng(1).normal(size=6)
    d = D.directions(arch, theta, 4, seed=2, normalization="filter")
    s = run_to_completion(slices.slices_job(arch, theta, X, Y, P=5, directions=d))
    t = s.t[1]
    expect = ref.loss(theta + t * d[3], arch.widths, False, "sigmoid", X, Y[:, None])
    assert s.curves[3, 1] == pytest.approx(expect, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    widths=st.lists(st.integers(1, 5), min_size=2, max_size=4),
    bias=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_filter_norms_match_for_any_shape(widths, bias, seed):
    arch = mlp.landscape_arch(tuple(widths), "relu", bias)
    theta = np.random.default_rng(seed).normal(size=arch.n_params)
    d = D.directions(arch, theta, 1, seed=seed, normalization="filter")[0]
    for (W, _), (Wd, _) in zip(ref.layers(theta, arch.widths, bias), ref.layers(d, arch.widths, bias)):
        np.testing.assert_allclose(np.linalg.norm(Wd, axis=1), np.linalg.norm(W, axis=1), rtol=1e-10, atol=1e-300)


def test_bad_choices():
    theta = theta_of(ARCH)
    with pytest.raises(EngineInputError, match="normalisation"):
        D.directions(ARCH, theta, 1, normalization="neuron-ish")
    with pytest.raises(EngineInputError, match="ignore"):
        D.directions(ARCH, theta, 1, ignore="bn")
    with pytest.raises(EngineInputError, match="expected"):
        D.normalize(ARCH, theta, np.zeros(3))


@pytest.mark.parametrize("count, dim", [(1, 1), (3, 7), (5000, 463), (2, 70_000), (70_000, 1)])
def test_gaussian_draws_drawn_in_blocks_are_one_calls_draws(count, dim):
    """The blocks (which let the GUI thread run between them) change no number: row k is still
    the k-th row of one (count, dim) call, so a seed names the same directions as before."""
    whole = np.random.default_rng(11).standard_normal((count, dim))
    assert np.array_equal(D.gaussian_draws(count, dim, seed=11), whole)
