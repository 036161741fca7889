"""Sublevel-set persistence of a loss grid (engine.landscape.persistence), held to a brute force.

The reference labels every sublevel set {rank ≤ t}, t = 0 … n − 1, with scipy.ndimage.label under
8-connectivity (a 3×3 structuring element), identifies each component by its oldest vertex, and
reads births and deaths off consecutive labelings: a component whose oldest vertex is new was
born, one whose oldest vertex no longer heads a component died, absorbed by the component that
now holds it. No union-find, no descent basins. Closed forms: one bowl, two bowls and a ridge.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import ndimage

from engine.core.errors import EngineInputError
from engine.landscape.persistence import barriers, basin_map, basins, persistence

EIGHT = np.ones((3, 3), dtype=int)


def ranks(L: np.ndarray) -> np.ndarray:
    """The entry order the module documents: by value, ties by flat (row-major) index."""
    order = np.lexsort((np.arange(L.size), L.ravel()))
    rank = np.empty(L.size, dtype=np.int64)
    rank[order] = np.arange(L.size)
    return rank.reshape(L.shape)


def brute_force(L: np.ndarray):
    """({oldest vertex: [birth value, death value, birth flat index, death flat index, absorber's
    oldest vertex]}, {flat index: oldest vertex of its component at its own level}) from the
    labelings of every sublevel set of the rank order; a vertex here is its rank, −1 for none."""
    R = ranks(L)
    flat, order = L.ravel(), np.argsort(R.ravel())
    heads_before, pairs, level_heads = set(), {}, {}
    for t in range(L.size):
        labels, count = ndimage.label(R <= t, structure=EIGHT)
        heads = ndimage.minimum(R, labels, np.arange(1, count + 1))  # each component's oldest rank
        head_of = {int(h) for h in np.atleast_1d(heads)}
        u = int(order[t])
        for h in head_of - heads_before:
            pairs[h] = [flat[order[h]], np.inf, int(order[h]), -1, -1]
        new_label = labels.ravel()[u]
        u_head = int(np.atleast_1d(heads)[new_label - 1])
        for h in heads_before - head_of:  # merged at u into the component u is in
            pairs[h][1], pairs[h][3], pairs[h][4] = flat[u], u, u_head
        level_heads[u] = u_head
        heads_before = head_of
    return pairs, level_heads


def assert_matches_brute_force(L: np.ndarray):
    p = persistence(L)
    pairs, _ = brute_force(L)
    R = ranks(L).ravel()
    heads = sorted(pairs)  # by the minimum's rank: the order of birth
    np.testing.assert_array_equal(p.birth_index, [pairs[h][2] for h in heads])
    np.testing.assert_array_equal(p.birth, [pairs[h][0] for h in heads])  # exactly: the grid's own values
    np.testing.assert_array_equal(p.death, [pairs[h][1] for h in heads])
    np.testing.assert_array_equal(p.death_index, [pairs[h][3] for h in heads])
    position = {h: i for i, h in enumerate(heads)}
    absorbers = [position[pairs[h][4]] if pairs[h][4] >= 0 else -1 for h in heads]
    np.testing.assert_array_equal(p.absorbed_by, absorbers)
    assert np.all(np.diff(R[p.birth_index]) > 0) and p.connectivity == 8 and p.shape == L.shape
    return p


@pytest.mark.parametrize("seed", range(20))
def test_random_7x7_grids_with_distinct_values_match_the_brute_force_exactly(seed):
    L = np.random.default_rng(seed).standard_normal((7, 7))
    p = assert_matches_brute_force(L)
    assert np.isinf(p.death).sum() == 1 and p.death_index[0] == -1 and p.birth[0] == L.min()


def test_where_three_components_meet_at_one_point_every_younger_one_dies_into_the_eldest():
    """16×16 grids, where a saddle point often joins three or more components, some of which had
    merged before: each dies into the eldest of all those meeting there (the brute force's
    absorber), also one that its union-find step first joined to a sibling dying at the same point."""
    meetings = 0
    for seed in range(10):
        p = assert_matches_brute_force(np.random.default_rng(seed).standard_normal((16, 16)))
        meetings += len(p.death_index[1:]) - len(np.unique(p.death_index[1:]))
    assert meetings > 0


def test_the_lexsort_for_grids_too_large_to_pack_gives_the_same_pairs(monkeypatch):
    from engine.landscape import persistence as module

    L = np.random.default_rng(3).standard_normal((16, 16))
    packed = persistence(L)
    monkeypatch.setattr(module, "PACKED_KEY_LIMIT", 0)
    for field in ("birth", "death", "birth_index", "death_index", "absorbed_by"):
        np.testing.assert_array_equal(getattr(persistence(L), field), getattr(packed, field))
    assert_matches_brute_force(L)


@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (2, 2), (3, 11), (12, 5)])
def test_thin_and_odd_shapes_match_the_brute_force(shape):
    assert_matches_brute_force(np.random.default_rng(sum(shape)).standard_normal(shape))


@pytest.mark.parametrize("seed", range(10))
def test_ties_are_broken_by_flat_index_as_the_brute_force_of_the_same_order(seed):
    L = np.random.default_rng(seed).integers(0, 3, (8, 9)).astype(float)  # plateaus everywhere
    assert_matches_brute_force(L)


def positive_pairs_by_value(L: np.ndarray) -> list:
    """The (birth, death) pairs of positive persistence from the sublevel sets {L ≤ t} of the
    values themselves, ties entering together: independent of any tie order. Each component is
    remembered by one of its points (its first in flat order) and the lowest minimum it holds."""
    before, pairs = {}, []
    for t in np.unique(L):
        labels, count = ndimage.label(L <= t, structure=EIGHT)
        births = {}
        for lab in range(1, count + 1):
            inside = (labels == lab).ravel()
            old = sorted(b for where, b in before.items() if inside[where])  # the components it joined
            births[int(np.flatnonzero(inside)[0])] = old[0] if old else t
            pairs += [(b, t) for b in old[1:] if t > b]  # all but the eldest die at t
        before = births
    return sorted(pairs + [(L.min(), np.inf)])


@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 6)),
        elements=st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, -1.0]),
    )
)
@settings(max_examples=60, deadline=None)
def test_positive_pairs_do_not_depend_on_the_tie_order(L):
    p = persistence(L)
    keep = p.persistence > 0
    assert sorted(zip(p.birth[keep], p.death[keep])) == positive_pairs_by_value(L)


@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 7), st.integers(1, 7)), elements=st.floats(-1e6, 1e6)))
@settings(max_examples=60, deadline=None)
def test_any_grid_matches_the_brute_force(L):
    assert_matches_brute_force(L)


@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 7), st.integers(1, 7)), elements=st.floats(-10, 10)),
    st.floats(0, 5),
)
@settings(max_examples=40, deadline=None)
def test_properties(L, threshold):
    p = persistence(L)
    # one component per minimum in the (value, index) order; deaths never below births
    assert len(p) == len(np.unique(p.birth_index)) and np.all(p.death >= p.birth)
    assert np.all(L.ravel()[p.death_index[1:]] == p.death[1:])
    # a strict local minimum of the grid (below all its 8 neighbours) is a birth
    padded = np.pad(L, 1, constant_values=np.inf)
    neighbours = [
        padded[1 + i : 1 + i + L.shape[0], 1 + j : 1 + j + L.shape[1]] for i in (-1, 0, 1) for j in (-1, 0, 1)
    ]
    strict = np.all([L < nb for k, nb in enumerate(neighbours) if k != 4], axis=0)
    assert set(np.flatnonzero(strict)) <= set(p.birth_index.tolist())
    # doubling (exact in floating point) keeps the order: the same pairs at twice the values
    q = persistence(2.0 * L)
    np.testing.assert_array_equal(q.birth_index, p.birth_index)
    np.testing.assert_array_equal(q.death_index, p.death_index)
    np.testing.assert_array_equal(q.death, 2.0 * p.death)
    assert 1 <= basins(p, threshold) <= len(p) and basins(p, threshold) == len(barriers(p, threshold)) + 1
    labels = basin_map(L, threshold, p)
    assert set(np.unique(labels)) == set(range(basins(p, threshold)))


def bowl(n: int = 41):
    x, y = np.meshgrid(np.linspace(-1, 1, n), np.linspace(-1, 1, n), indexing="ij")
    return x, y


def test_a_single_bowl_is_one_pair_that_never_dies():
    x, y = bowl()
    L = (x - 0.2) ** 2 + 2 * (y + 0.1) ** 2
    p = persistence(L)
    assert len(p) == 1 and p.birth[0] == L.min() and np.isinf(p.death[0]) and p.death_index[0] == -1
    assert p.birth_index[0] == np.argmin(L)
    assert basins(p, 0.0) == 1 and len(barriers(p, 0.0)) == 0
    assert np.all(basin_map(L, 0.0) == 0)


def test_two_bowls_meet_at_the_lowest_pass_of_the_ridge_between_them():
    """Two bowls, minima −1 (left) and −0.5 (right), split by a ridge along x = 0 whose height
    is 1 + y², lowest (1.0) at y = 0: the right bowl's component dies at exactly that pass."""
    x, y = bowl()
    ridge = 1.0 + y**2
    L = np.where(x < 0, -1.0 + 3 * ((x + 0.5) ** 2 + y**2), -0.5 + 3 * ((x - 0.5) ** 2 + y**2))
    L[np.isclose(x, 0.0)] = ridge[np.isclose(x, 0.0)]
    p = persistence(L)
    assert len(p) == 2
    np.testing.assert_array_equal(p.birth, [-1.0, -0.5])
    assert p.death[1] == 1.0 and np.unravel_index(p.death_index[1], L.shape) == (20, 20)
    assert barriers(p, 0.0).tolist() == [1.0] and barriers(p, 1.5).tolist() == [] and basins(p, 1.5) == 1
    labels = basin_map(L, 0.0, p)
    # below the pass each bowl is its own basin; above it the points join the elder, the left
    left_lake = (x > 0) & (L < 1.0)
    assert np.all(labels[left_lake] == 1) and np.all(labels[(x > 0) & (L > 1.0)] == 0) and np.all(labels[x < 0] == 0)
    assert np.all(basin_map(L, 1.5, p) == 0)  # the right bowl's barrier 1.5 is not above 1.5
    assert basins(p, np.inf) == 1 and np.all(basin_map(L, np.inf, p) == 0)  # the global minimum always counts


def brute_basin_map(L: np.ndarray, threshold: float) -> np.ndarray:
    """The basin map by its definition, from the brute force alone: each point's component's
    oldest vertex at its own level, moved to its absorber while its persistence ≤ threshold,
    numbered by birth among the survivors."""
    pairs, level_heads = brute_force(L)
    survive = {h for h, (b, d, *_) in pairs.items() if d - b > threshold or d == np.inf}
    number = {h: i for i, h in enumerate(sorted(survive))}
    out = np.empty(L.size, dtype=np.int64)
    for u, h in level_heads.items():
        while h not in survive:
            h = pairs[h][4]  # the absorber's oldest vertex
        out[u] = number[h]
    return out.reshape(L.shape)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("threshold", [0.0, 0.3, 1.0, np.inf])
def test_basin_map_is_its_definition(seed, threshold):
    L = np.random.default_rng(seed).standard_normal((7, 8))
    np.testing.assert_array_equal(basin_map(L, threshold), brute_basin_map(L, threshold))


def test_bad_input_is_refused_in_one_line():
    L = np.zeros((3, 3))
    p = persistence(L)
    cases = [
        (lambda: persistence(np.array([[0.0, np.nan]])), "NaN"),
        (lambda: persistence(np.zeros(4)), "2-D"),
        (lambda: persistence(np.zeros((0, 3))), "2-D"),
        (lambda: persistence(np.array([["a"]])), "real"),
        (lambda: basins(p, float("nan")), "threshold"),
        (lambda: barriers(p, -0.1), "threshold"),
        (lambda: basin_map(L, -1.0), "threshold"),
        (lambda: basin_map(np.zeros((4, 4)), 0.0, p), "shape|grid"),
    ]
    for call, word in cases:
        with pytest.raises(EngineInputError, match=word) as caught:
            call()
        assert "\n" not in str(caught.value)
