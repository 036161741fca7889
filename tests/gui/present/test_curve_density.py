"""The slice panels' density image against a brute-force count of the pixels each curve crosses."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui.present.curve_density import curve_density, equalized_levels


def brute_force(t, curves, x_range, y_range, width, height):
    """Loop over curves and columns: the rows between the curve's values at the column's edges."""
    counts = np.zeros((width, height), int)
    edges = np.linspace(x_range[0], x_range[1], width + 1)
    row = lambda y: math.floor((y - y_range[0]) * height / (y_range[1] - y_range[0]))
    for curve in curves:
        at = np.interp(edges, t, curve, left=np.nan, right=np.nan)
        for i in range(width):
            a, b = at[i], at[i + 1]
            if not (np.isfinite(a) and np.isfinite(b)):
                continue
            lo, hi = sorted((row(a), row(b)))
            for r in range(max(lo, 0), min(hi, height - 1) + 1):
                counts[i, r] += 1
    return counts


@settings(max_examples=60, deadline=None, derandomize=True)  # float32 rows: no flaky boundary cases
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 12),
    p=st.integers(2, 9),
    width=st.integers(1, 23),
    height=st.integers(1, 17),
    wide=st.booleans(),
)
def test_counts_equal_a_brute_force_count(seed, k, p, width, height, wide):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(-1, 1, p)) + np.arange(p) * 1e-3  # strictly increasing
    curves = rng.normal(size=(k, p))
    curves[rng.random((k, p)) < 0.1] = np.nan  # missing points cover nothing
    x_range = (-1.5, 1.5) if wide else (float(t[0]) + 0.1, float(t[-1]) - 0.05)  # past the grid, or inside it
    if x_range[1] <= x_range[0]:
        x_range = (float(t[0]), float(t[-1]) + 1e-3)
    y_range = (-0.8, 1.3)  # curves leave the box above and below
    got = curve_density(t, curves, x_range, y_range, width, height)
    np.testing.assert_array_equal(got, brute_force(t, curves, x_range, y_range, width, height))


def test_a_steep_segment_paints_a_vertical_run_and_levels_are_ranks():
    t = np.array([0.0, 1.0])
    counts = curve_density(t, np.array([[0.0, 1.0]] * 3 + [[0.5, 0.5]]), (0.0, 1.0), (0.0, 1.0), 1, 10)
    # the three ramps cover every row of the one column; the flat curve only row 5
    assert counts[0].tolist() == [3] * 5 + [4] + [3] * 4
    # equalised: a level is the share of covered pixels at or below that count; empty stays 0
    rng = np.random.default_rng(0)
    many = rng.integers(0, 50, size=(30, 20))
    levels = equalized_levels(many)
    covered = many[many > 0]
    for n in (1, 7, 49):
        if (many == n).any():
            assert levels[many == n][0] == pytest.approx((covered <= n).mean())
    assert not levels[many == 0].any() and not equalized_levels(np.zeros((2, 2), int)).any()
