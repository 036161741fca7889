"""Paper B's slice directions in every scaling (engine.minima.pipeline.slice_directions): unit norm
with its exact dip prediction, biases ignored, and Li et al.'s filter and layer normalisation
restricted to a family, each checked against the rule written out here."""

import numpy as np
import pytest

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.minima.dip_probability import negative_probability
from engine.minima.pipeline import SliceSettings, slice_directions

ARCH = mlp.Arch((2, 4, 3, 1), "sigmoid", True)
RNG = np.random.default_rng(5)
THETA = mlp.init_params(ARCH, RNG, 1.0)
X = RNG.standard_normal((9, 2))
Y = np.cos(X[:, :1])
BIASES = np.concatenate([np.arange(ARCH.n_params)[ARCH.block(f"b{l}").slice] for l in (1, 2, 3)])


def test_unit_directions_without_biases_dip_as_predicted():
    """With biases ignored, the unit directions have no bias component and the share with dᵀHd < 0
    is Imhof's prediction for the Hessian restricted to the weights (sampled: within 4 σ)."""
    s = SliceSettings(K=20000, normalize="unit", ignore="biases")
    d, family = slice_directions(ARCH, THETA, X, Y, s)
    assert np.all(d[:, BIASES] == 0)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, rtol=1e-14)
    weights = np.setdiff1d(np.arange(ARCH.n_params), BIASES)
    np.testing.assert_array_equal(np.sort(family.indices), weights)
    H = mlp.hessian(ARCH, THETA, X, Y)
    p = negative_probability(np.linalg.eigvalsh(H[np.ix_(weights, weights)]))
    assert 0.05 < p < 0.95  # a random point: both signs are common
    seen = float((np.einsum("kp,pq,kq->k", d, H, d) < 0).mean())
    assert abs(seen - p) < 4 * np.sqrt(p * (1 - p) / s.K)


@pytest.mark.parametrize("ignore", ["none", "biases"])
def test_filter_directions_over_one_neuron(ignore):
    """A filter-normalised direction over neuron 2 of layer 1: its incoming weights scaled to θ's
    row norm, its bias θ's (or 0 with biases ignored), every other component 0."""
    s = SliceSettings(K=7, normalize="filter", family="neuron", family_layer=1, family_neuron=2, ignore=ignore)
    d, _ = slice_directions(ARCH, THETA, X, Y, s)
    W1, b1 = ARCH.block("W1"), ARCH.block("b1")
    row = np.arange(ARCH.n_params)[W1.slice].reshape(W1.shape)[2]
    bias = np.arange(ARCH.n_params)[b1.slice][2]
    np.testing.assert_allclose(np.linalg.norm(d[:, row], axis=1), np.linalg.norm(THETA[row]), rtol=1e-14)
    np.testing.assert_array_equal(d[:, bias], 0.0 if ignore == "biases" else THETA[bias])
    others = np.setdiff1d(np.arange(ARCH.n_params), np.append(row, bias))
    assert np.all(d[:, others] == 0)


def test_layer_directions_over_all_parameters():
    """Each W_l scaled to θ's norm of W_l; the biases are θ's (Li et al. copy them)."""
    d, _ = slice_directions(ARCH, THETA, X, Y, SliceSettings(K=5, normalize="layer"))
    for l in (1, 2, 3):
        W, b = ARCH.block(f"W{l}").slice, ARCH.block(f"b{l}").slice
        np.testing.assert_allclose(np.linalg.norm(d[:, W], axis=1), np.linalg.norm(THETA[W]), rtol=1e-14)
        assert np.all(d[:, b] == THETA[b])


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"normalize": "filters"}, "unknown direction scaling 'filters'"),
        ({"ignore": "weights"}, "unknown --ignore 'weights'"),
    ],
)
def test_bad_settings_are_refused(fields, words):
    with pytest.raises(EngineInputError, match=words):
        SliceSettings(**fields)


def test_per_neuron_scaling_over_a_family_is_refused():
    with pytest.raises(EngineInputError, match="per-neuron scaling is for directions over all parameters"):
        slice_directions(ARCH, THETA, X, Y, SliceSettings(normalize="neuron", family="layer"))
