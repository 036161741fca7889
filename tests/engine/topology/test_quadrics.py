import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.topology.quadrics import hyperbola, quadric_sheets, reduced_coordinates


@pytest.mark.parametrize("c, n_sheets", [(1.0, 1), (0.1, 1), (-0.1, 2), (-3.0, 2), (0.0, 2)])
def test_vertices_on_surface_and_valid_faces(c, n_sheets):
    sheets = quadric_sheets(c, extent=2.0, resolution=24)
    assert len(sheets) == n_sheets
    for V, F in sheets:
        assert V.dtype == np.float64 and V.shape[1] == 3 and F.shape[1] == 3
        np.testing.assert_allclose(V[:, 0] ** 2 + V[:, 1] ** 2 - V[:, 2] ** 2, c, rtol=0, atol=1e-9)
        assert F.min() >= 0 and F.max() < len(V)
        assert all(len(set(f)) == 3 for f in F.tolist())  # no degenerate triangles
        assert len(np.unique(F)) == len(V)  # every vertex used
    if c < 0:  # the two sheets are v > 0 and v < 0
        assert np.all(sheets[0][0][:, 2] > 0) and np.all(sheets[1][0][:, 2] < 0)
    if c > 0:
        assert np.abs(sheets[0][0][:, 2]).max() == pytest.approx(2.0)


def test_hyperbola_branches():
    for c in (0.5, -0.5, 0.0):
        branches = hyperbola(c, 1.5, 50)
        assert len(branches) == (1 if c > 0 else 2)
        for r, v in branches:
            assert np.all(r >= 0)
            np.testing.assert_allclose(r**2 - v**2, c, atol=1e-12)


def test_reduced_coordinates_match_balances():
    rng = np.random.default_rng(0)
    T, l, d = 5, 3, 4
    W1, b1 = rng.normal(size=(T, l, d)), rng.normal(size=(T, l))
    for e in (1, 2):
        W2 = rng.normal(size=(T, e, l))
        r, v = reduced_coordinates(W1, W2, b1)
        for t in range(T):
            for k in range(l):
                c = sum(W1[t, k, j] ** 2 for j in range(d)) + b1[t, k] ** 2 - sum(W2[t, i, k] ** 2 for i in range(e))
                assert r[t, k] ** 2 - v[t, k] ** 2 == pytest.approx(c, abs=1e-12)
                if e == 1:
                    assert v[t, k] == W2[t, 0, k]
    r1, v1 = reduced_coordinates(W1[0], W2[0])
    assert r1.shape == (l,)


def test_bad_input():
    with pytest.raises(EngineInputError, match="c ="):
        quadric_sheets(float("nan"))
    with pytest.raises(EngineInputError, match="extent"):
        quadric_sheets(1.0, extent=-1)
    with pytest.raises(EngineInputError, match="resolution"):
        quadric_sheets(1.0, resolution=2)
    with pytest.raises(EngineInputError):
        reduced_coordinates(np.zeros((2, 3, 2)), np.zeros((2, 1, 4)))
