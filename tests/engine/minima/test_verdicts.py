"""Typed definiteness of B (Theorem 9's hypothesis): each sign pattern of eigenvalues, by construction."""

import numpy as np
import pytest

from engine.minima.construction import definiteness, theorem9_interval
from engine.minima.verdicts import Definiteness

D = Definiteness


@pytest.mark.parametrize(
    "eigs, want",
    [
        ([1.0, 2.0, 3.0], D.POSITIVE_DEFINITE),
        ([-1.0, -2.0], D.NEGATIVE_DEFINITE),
        ([0.0, 1.0, 4.0], D.POSITIVE_SEMIDEFINITE),
        ([-3.0, 0.0], D.NEGATIVE_SEMIDEFINITE),
        ([-1.0, 0.0, 2.0], D.INDEFINITE),
        ([0.0, 0.0], D.ZERO),
    ],
)
def test_definiteness_of_a_matrix_built_with_these_eigenvalues(eigs, want):
    # B = Q diag(eigs) Qᵀ for a random rotation Q: its computed eigenvalues carry rounding, as B's do.
    rng = np.random.default_rng(len(eigs))
    Q, _ = np.linalg.qr(rng.normal(size=(len(eigs), len(eigs))))
    B = Q @ np.diag(eigs) @ Q.T
    got = definiteness(np.linalg.eigvalsh(B))
    assert got is want
    assert got.definite == (want in (D.POSITIVE_DEFINITE, D.NEGATIVE_DEFINITE))
    # Theorem 9's I (MATH B5), from the eigenvalues B was built with: (0, 1) for B ≥ 0, outside
    # [0, 1] for B ≤ 0 (semidefinite counts, MATH B5's departures), none for an indefinite or zero B.
    interval = theorem9_interval(np.linalg.eigvalsh(B))
    e = np.array(eigs)
    if np.any(e > 0) and np.all(e >= 0):
        assert interval.parts == ((0.0, 1.0),)
    elif np.any(e < 0) and np.all(e <= 0):
        assert interval.parts == ((-np.inf, 0.0), (1.0, np.inf))
    else:
        assert interval.empty
    # And what I means, from B itself: λ ∈ I exactly where the pair's curvature λ(1 − λ)B is
    # positive semidefinite and not zero (MATH B5: crossing 0 or 1 flips its sign).
    tol = 1e-9 * max(1.0, np.abs(e).max())
    for lam in (-3.0, -0.5, 0.0, 1e-3, 0.5, 0.999, 1.0, 1.5, 40.0):
        curvature = np.linalg.eigvalsh(lam * (1 - lam) * B)
        assert interval.contains(lam) == (curvature.min() >= -tol and curvature.max() > tol), lam


def test_definiteness_prints_and_serialises_as_its_value():
    import json

    assert str(D.NEGATIVE_SEMIDEFINITE) == "negative semidefinite"
    assert json.dumps({"B": D.INDEFINITE}) == '{"B": "indefinite"}'
