"""The toolkit's jobs yield often enough that a view's pause and cancel act within 200 ms of CPU
work, on a network big enough that one unit of work could overrun it (100—64—64—10, 500 samples)."""

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.landscape import density, interpolation, plane, trajectory_pca

from .job_timing import largest_work_between_yields

BOUND_S = 0.2
ARCH = mlp.landscape_arch((100, 64, 64, 10), "relu", True)


@pytest.fixture(scope="module")
def net():
    # the first torch.optim optimizer imports torch._dynamo (1–5 s holding the GIL); the app pays
    # it at start-up (engine.core.runtime.import_lazy_torch_modules), so the test does too
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    rng = np.random.default_rng(0)
    theta = mlp.init_params(ARCH, rng, 1.4)
    return theta, rng.normal(size=(500, 100)), rng.integers(0, 10, 500)


JOBS = {
    "plane": lambda t, X, Y: plane.plane_job(ARCH, t, X, Y, n=31, kind="cross-entropy"),
    "pca": lambda t, X, Y: trajectory_pca.pca_plane_job(ARCH, t, X, Y, 30, ("gd", "adam"), kind="cross-entropy", n=11),
    "interpolation": lambda t, X, Y: interpolation.interpolation_job(ARCH, t, 0.5 * t, X, Y, 301, kind="cross-entropy"),
    "density": lambda t, X, Y: density.density_job(ARCH, t, X, Y, 4, 30, kind="cross-entropy"),
}


@pytest.mark.parametrize("name", list(JOBS))
def test_largest_gap_between_yields(name, net):
    assert largest_work_between_yields(JOBS[name](*net)) < BOUND_S
