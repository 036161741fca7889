"""Typed definiteness of B (Theorem 9's hypothesis): each sign pattern of eigenvalues, by construction."""

import numpy as np
import pytest

from engine.minima.construction import definiteness, theorem9_interval
from engine.minima.verdicts import INSIDE_0_1, OUTSIDE_0_1, Definiteness, Interval

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
    # Theorem 9's interval from the sign alone: (0, 1) for B ≥ 0, outside [0, 1] for B ≤ 0.
    expected = {1: INSIDE_0_1, -1: OUTSIDE_0_1}.get(int(np.sign(sum(eigs))) if got.sign else 0, Interval())
    assert theorem9_interval(np.linalg.eigvalsh(B)) == expected


def test_definiteness_prints_and_serialises_as_its_value():
    import json

    assert str(D.NEGATIVE_SEMIDEFINITE) == "negative semidefinite"
    assert json.dumps({"B": D.INDEFINITE}) == '{"B": "indefinite"}'
