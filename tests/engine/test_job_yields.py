"""Every topology job yields often enough that pause and cancel act within 200 ms.

The jobs promise a yield at least every ~50 ms of work; the bound here is 0.2 s because the
test machine is shared. Each job runs with work units as large as the GUI's: full-width
(l = 9), full-size chunks for the sweep; the widest Fig. 5 grid the panel allows; the Fig. 3
data size for training.
"""

import pytest
import torch

from engine.core.datasets import breast_cancer, toy_dataset
from engine.topology.probability import MapSettings, probability_maps_job
from engine.topology.reproduce import toy_init
from engine.topology.training import TrainConfig, train
from engine.topology.two_layer import TwoLayerNet
from engine.topology.width_sweep import SweepSettings, breast_cancer_sweep

from .job_timing import largest_work_between_yields

BOUND_S = 0.2


@pytest.fixture(scope="module", autouse=True)
def warm_imports():
    """One-off imports are not work units, and they hold the GIL in pieces of up to ~1 s that no
    helper thread can interleave with: scikit-learn (read by the sweep) and torch._dynamo (which
    a process's first torch.optim optimizer imports). Both happen before measuring."""
    breast_cancer(seed=0)
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)


def toy_training(optimizer: str, n: int, steps: int):
    X, Y = toy_dataset(n, 0)
    return train(TwoLayerNet(2, 2, 1), toy_init(0, (-0.1, 0.1)), X, Y, TrainConfig(optimizer, 0.01, steps))


JOBS = {
    "Fig. 4 sweep": lambda: breast_cancer_sweep(SweepSettings(ls=[9], n_inits=20, steps=300)),
    "Fig. 5 maps": lambda: probability_maps_job(MapSettings(200, 200, mc_samples=2000, mc_stride=60)),
    "GD on the Fig. 3 toy": lambda: toy_training("gd", 8000, 300),
    "gradient flow on the Fig. 3 toy": lambda: toy_training("flow", 8000, 20),
}


@pytest.mark.parametrize("name", JOBS)
def test_largest_gap_between_yields(name):
    gap = largest_work_between_yields(JOBS[name]())
    assert gap < BOUND_S, f"{name}: {gap * 1000:.0f} ms between two yields"
