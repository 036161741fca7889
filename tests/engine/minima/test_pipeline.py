"""The pipeline jobs: their results equal the separate engine functions, partials are the same
dataclass filled stage by stage, and every job yields often enough for pause and cancel."""

from dataclasses import replace

import numpy as np
import pytest

from engine.core.progress import run_to_completion
from engine.landscape import slices as landscape
from engine.minima import construction as C
from engine.minima import infinity as INF
from engine.minima import pipeline as F
from engine.minima.verdicts import Verdict
from tests.engine.job_timing import UNIT_S, WorkClock, install, most_work_between_yields
from tests.references import numpy_loss

POINT_LOSS_S = 1e-6  # one loss of the 2—21—21—1 net over its data: ~0.65 ms a chunk of 808 points

SMALL = F.Figure3Settings(
    schedule=((1, 2), (2, 2)),
    slices=F.SliceSettings(40, 11, 1.0, "unit", 3),
    path=(-0.5, 2.0, 4),
    plane=(5, 0.5),
    descent=(2.0, 9),
)


@pytest.fixture(scope="module")
def run():
    partials = []
    fig = run_to_completion(F.figure3_job(SMALL), lambda u: partials.append(u.partial))
    return fig, [p for p in partials if p is not None]


def test_figure3_equals_the_separate_engine_functions(run):
    fig, _ = run
    c = fig.construction
    c_alone, seed = run_to_completion(F.construction_job(SMALL))
    assert seed == fig.data_seed and np.array_equal(c_alone.params, c.params)
    eigs, h = C.hessian_spectrum(c.arch, c.params, c.X, c.Y)
    assert np.array_equal(eigs, fig.eigs) and h == fig.hessian and h.n_negative == 0
    slices = run_to_completion(landscape.slices_job(c.arch, c.params, c.X, c.Y, K=40, P=11, T=1.0, seed=3))
    assert np.array_equal(slices.curves, fig.slices_min.curves)
    path = run_to_completion(C.degenerate_path_job(c, np.linspace(-0.5, 2.0, 4)))
    assert np.array_equal(path.loss, fig.path.loss) and path.verdicts == fig.path.verdicts
    probe = C.move_lambda(c, SMALL.saddle_lam)
    assert probe.verdict is fig.saddle.probe.verdict is Verdict.SADDLE
    assert np.array_equal(probe.params, fig.saddle.probe.params) and probe.loss == fig.saddle.probe.loss
    line = C.descent_curve(c, probe, np.linspace(-2.0, 2.0, 9))
    assert np.array_equal(line.loss, fig.saddle.descent.loss)
    assert fig.plane.loss.shape == (5, 5) and fig.plane.loss[2, 2] == pytest.approx(probe.loss, rel=1e-12)


@pytest.mark.parametrize("scaling", ["unit", "filter"])
def test_the_probe_plane_is_the_loss_at_every_grid_point(run, scaling):
    """Paper B's 2-D slice is the toolkit's plane (a PlaneResult) along B9's analytic directions
    (unit norm) or the random plane of Li et al.'s scalings: every grid point equals the loss
    written out in numpy at θ + α_i d1 + β_j d2, and its axes say which directions they are."""
    fig, _ = run
    c, probe = fig.construction, fig.saddle.probe
    slices = replace(SMALL.slices, normalize=scaling)
    plane = (
        fig.plane if scaling == "unit" else run_to_completion(F.probe_plane_job(c, probe.params, -1, 5, 0.5, slices))
    )
    d1, d2, labels = F.plane_directions(c, probe.params, -1, slices)
    np.testing.assert_array_equal(plane.d1, d1)
    np.testing.assert_array_equal(plane.d2, d2)
    assert plane.labels == labels
    random_axes = ("filter-normalised direction 1", "filter-normalised direction 2")
    assert labels == (F.ANALYTIC_AXES if scaling == "unit" else random_axes)
    assert np.array_equal(plane.alpha, np.linspace(-0.5, 0.5, 5)) and np.array_equal(plane.beta, plane.alpha)
    want = [[numpy_loss(c.arch, probe.params + a * d1 + b * d2, c.X, c.Y) for b in plane.beta] for a in plane.alpha]
    np.testing.assert_allclose(plane.loss, want, rtol=1e-12, atol=0)
    assert np.ptp(want) > 1e-3 * np.abs(want).max()  # not flat: the comparison sees the directions
    assert plane.L_star == pytest.approx(numpy_loss(c.arch, probe.params, c.X, c.Y), rel=1e-13)


def test_partials_fill_one_dataclass_and_keep_finished_fields(run):
    fig, partials = run
    assert all(isinstance(p, F.Figure3) for p in partials)
    assert partials[0].construction is None and partials[0].steps  # the steps table fills first
    built = [p for p in partials if p.construction is not None]
    assert all(p.construction is fig.construction for p in built)  # identity: drawn once
    with_slices = [p for p in built if p.slices_min is not None]
    assert with_slices and all(p.slices_min is fig.slices_min for p in with_slices)


def test_reslice_keeps_the_rest_and_moves_the_saddle(run):
    fig, _ = run
    moved = run_to_completion(F.reslice_job(fig, 0.5, slices=None))
    assert moved.construction is fig.construction and moved.slices_min is fig.slices_min
    assert moved.path is fig.path and moved.plane is fig.plane
    assert moved.saddle.probe.lam == 0.5 and moved.saddle.probe.verdict is Verdict.NON_ATTRACTING
    other = run_to_completion(F.reslice_job(fig, 2.0, split=0, slices=None, path=(0.5, 2.0, 2)))
    assert other.path.split == 0 and other.path is not fig.path


def test_load_job_inspects_a_saved_network(run, tmp_path):
    from engine.io import netfile as netio

    fig, _ = run
    c = fig.construction
    netio.save_network(tmp_path / "net.npz", c.arch, c.params, c.X, c.Y)
    loaded = run_to_completion(F.load_figure3_job(tmp_path / "net.npz", F.SliceSettings(10, 5)))
    assert loaded.loaded_from.endswith("net.npz") and loaded.construction.splits == ()
    assert np.array_equal(loaded.eigs, fig.eigs) and loaded.steps[0].verdict is Verdict.DEGENERATE_MINIMUM
    assert loaded.slices_min.curves.shape == (10, 5)


def test_slowest_jobs_yield_within_200_ms_of_work(monkeypatch):
    """GD from infinity (200,000 steps), and the Fig. 3 pipeline at the paper's 2—21—21—1 (restart
    search, 40 split Hessians, slices, path, saddle, plane). Work is counted (job_timing): a GD step
    (its sigmoid) moves the job's clock 1 ms, a loss at one point of a slice or of the plane 1 µs
    (the slice kernel's cost at 2—21—21—1, README), and at most 200 ms may come between two yields.
    The Hessians and L-BFGS runs go through wait_for, which yields every 50 ms of real time while
    they run."""
    from types import SimpleNamespace

    from engine.core.lazy import scipy_special

    bound = round(0.2 / UNIT_S)
    clock = WorkClock()
    install(monkeypatch, clock, [INF])
    expit = clock.counted(scipy_special.expit)  # once per GD step
    monkeypatch.setattr(INF, "scipy_special", SimpleNamespace(expit=expit))
    X, Y = INF.infinity_data(0)
    most, total = most_work_between_yields(INF.gd_from_infinity(X, Y, *INF.infinity_point(X, Y), steps=200_000), clock)
    assert total > 2 * bound and most <= bound, (most, total)

    clock = WorkClock(POINT_LOSS_S)
    install(monkeypatch, clock, [landscape])
    monkeypatch.setattr(landscape, "evaluate_job", clock.counted_compute(landscape.evaluate_job))
    # the GUI's slices (K = 5000 directions of P = 101 points): 10⁶ losses, ~1 s of work
    deep = replace(F.Figure3Settings(), slices=F.SliceSettings(5000, 101), path=(-0.5, 2.0, 3), plane=(11, 1.0))
    most, total = most_work_between_yields(F.figure3_job(deep), clock)
    bound = round(0.2 / POINT_LOSS_S)
    assert total > 2 * bound and most <= bound, (most, total)


def test_the_lambda_preview_is_the_refined_saddle_on_a_coarse_grid(run):
    """The drag preview at λ equals (to float32 rounding) the same directions' float64 slices at
    λ on its coarse grid, and its plane equals the plane the release computes."""
    fig, _ = run
    c = fig.construction
    preview = run_to_completion(F.preview_job(fig, 2.0, -1, SMALL.slices, SMALL.plane))
    assert preview.lam == 2.0 and preview.slices.curves.shape == (40, F.PREVIEW_POINTS)
    theta = C.move_lambda(c, 2.0).params
    exact = run_to_completion(landscape.slices_job(c.arch, theta, c.X, c.Y, K=40, P=F.PREVIEW_POINTS, T=1.0, seed=3))
    scale = np.abs(exact.curves).max()
    assert np.abs(preview.slices.curves - exact.curves).max() < 1e-5 * scale
    released = run_to_completion(F.reslice_job(fig, 2.0, -1, None, None, plane=SMALL.plane))
    assert np.allclose(preview.plane.loss, released.plane.loss, rtol=1e-12, atol=0)
    assert released.slices_min is fig.slices_min  # what the release did not touch stays the same object


def _affine_slicer(c, lam0, directions, P, dtype):
    s = c.splits[-1]
    theta = C.set_split_lambda(c.arch, c.params, s, lam0)
    e = C.set_split_lambda(c.arch, c.params, s, 1.0) - C.set_split_lambda(c.arch, c.params, s, 0.0)
    return run_to_completion(
        landscape.lambda_slices_job(c.arch, theta, e, lam0, (s.new, s.origin), c.X, c.Y, directions, P, dtype=dtype)
    )


def test_slices_of_a_last_layer_split_are_affine_in_lambda(run):
    """One float64 pass at λ₀ = 0.5 gives, at other λ, what a fresh forward pass at θ(λ) gives
    (the output is affine in λ when the pair feeds the output): curves to 1e-12, same L*, same dips."""
    fig, _ = run
    c = fig.construction
    assert c.splits[-1].layer + 1 == c.arch.n_layers
    d = landscape.random_directions(c.arch, c.params, 40, seed=3)
    slicer = _affine_slicer(c, 0.5, d, 11, "float64")
    for lam in (-1.0, 0.5, 2.0, 3.7):
        theta = C.set_split_lambda(c.arch, c.params, c.splits[-1], lam)
        exact = run_to_completion(landscape.slices_job(c.arch, theta, c.X, c.Y, P=11, directions=d))
        got = slicer.slices(lam, theta)
        assert np.abs(got.curves - exact.curves).max() <= 1e-12 * np.abs(exact.curves).max()
        assert got.L_star == exact.L_star and got.n_below == exact.n_below


def test_the_drag_preview_reuses_its_pass_only_where_it_fits(run):
    """The first move returns the affine slices; the next move of the same split and settings
    reuses them (same object) and agrees with a fresh preview; other settings, or a split in
    layer 1 (whose λ reaches a hidden layer), compute afresh."""
    fig, _ = run
    first = run_to_completion(F.preview_job(fig, 2.0, -1, SMALL.slices))
    assert first.drag is not None
    second = run_to_completion(F.preview_job(fig, 3.0, -1, SMALL.slices, drag=first.drag))
    fresh = run_to_completion(F.preview_job(fig, 3.0, -1, SMALL.slices))
    assert second.drag is first.drag
    scale = np.abs(fresh.slices.curves).max()
    assert np.abs(second.slices.curves - fresh.slices.curves).max() < 1e-5 * scale
    assert second.slices.n_below == fresh.slices.n_below
    reseeded = run_to_completion(F.preview_job(fig, 3.0, -1, replace(SMALL.slices, seed=4), drag=first.drag))
    assert reseeded.drag is not first.drag
    layer_1 = next(i for i, s in enumerate(fig.construction.splits) if s.layer == 1)
    assert run_to_completion(F.preview_job(fig, 2.0, layer_1, SMALL.slices, drag=first.drag)).drag is None
