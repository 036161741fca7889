"""The toolkit's jobs yield often enough that a view's pause and cancel act within 200 ms of work,
on a network big enough that one unit of work could overrun it (100—64—64—10, 500 samples).

Work is counted, not timed (job_timing): a plane's or a line's point (a pass over the data), a
training step's loss, a Hessian-vector product moves the job's clock by what it costs here, and
the job's own yield rule bounds the units between two yields on any machine under any load.
"""

import numpy as np
import pytest

from engine.core import mlp
from engine.landscape import density, interpolation, operations, plane, slices, trajectory_pca
from tests.engine.job_timing import WorkClock, install, most_work_between_yields

BOUND_S = 0.2
ARCH = mlp.landscape_arch((100, 64, 64, 10), "relu", True)
POINT_S = 0.001  # a pass over the 500 samples: a loss at one point, one training step
PRODUCT_S = 0.005  # a Hessian-vector product: its backward through the gradient's graph


@pytest.fixture(scope="module")
def net():
    rng = np.random.default_rng(0)
    theta = mlp.init_params(ARCH, rng, 1.4)
    return theta, rng.normal(size=(500, 100)), rng.integers(0, 10, 500)


def count_points(monkeypatch, clock):
    """Each point a chunk of a plane or line evaluates is a unit (slices.evaluate_job's clock)."""
    install(monkeypatch, clock, [slices])
    monkeypatch.setattr(plane, "evaluate_job", clock.counted_compute(plane.evaluate_job))


def count_steps(monkeypatch, clock):
    count_points(monkeypatch, clock)  # the PCA grid
    install(monkeypatch, clock, [trajectory_pca], work=[(mlp, "loss_t")])


def count_products(monkeypatch, clock):
    install(monkeypatch, clock, [density])
    original = density.hvp_function

    def counted_hvp_function(*args, **kwargs):
        hvp = original(*args, **kwargs)

        def counted(V):
            result = hvp(V)
            clock.tick(1 if V.ndim == 1 else V.shape[0])
            return result

        counted.one, counted.batched = clock.counted(hvp.one), hvp.batched
        return counted

    monkeypatch.setattr(density, "hvp_function", counted_hvp_function)


# name: (the job, how its work is counted, what a unit costs)
JOBS = {
    "plane": (
        lambda t, X, Y: operations.plane_job(plane.MLPLoss(ARCH, t, X, Y, "cross-entropy"), 31),
        count_points,
        POINT_S,
    ),
    "pca": (
        lambda t, X, Y: trajectory_pca.pca_plane_job(ARCH, t, X, Y, 300, ("gd", "adam"), kind="cross-entropy", n=11),
        count_steps,
        POINT_S,
    ),
    "interpolation": (
        lambda t, X, Y: interpolation.interpolation_job(ARCH, t, 0.5 * t, X, Y, 1001, kind="cross-entropy"),
        count_points,
        POINT_S,
    ),
    "density": (
        lambda t, X, Y: density.density_job(ARCH, t, X, Y, 4, 60, kind="cross-entropy"),
        count_products,
        PRODUCT_S,
    ),
}


@pytest.mark.parametrize("name", list(JOBS))
def test_most_work_between_yields(name, net, monkeypatch):
    make, count, unit_s = JOBS[name]
    clock = WorkClock(unit_s)
    count(monkeypatch, clock)
    most, total = most_work_between_yields(make(*net), clock)
    bound = round(BOUND_S / unit_s)
    assert total > 2 * bound, f"{name}: {total} units in all, too few to tell"
    assert most <= bound, f"{name}: {most} units of work (~{most * unit_s:.2f} s) between two yields"
