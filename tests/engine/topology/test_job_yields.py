"""Every topology job yields often enough that pause and cancel act within 200 ms of work.

Work is counted, not timed (tests/engine/job_timing.py): each job's clock moves 1 ms with every
unit of its work, so its own yield rule says how many units it may do between two yields, on any
machine under any load. The jobs promise a yield at least every ~50 ms of work; the bound here
is 200 units of 1 ms (a Fig. 5 batch is ~10 ms: 20 of them). Each job runs with work units as
large as the GUI's: full-width (l = 9), full-size chunks for the sweep; the widest Fig. 5 grid the
panel allows; the Fig. 3 data size for training. Each also does far more work in all than the
bound, so a job that yielded only at its end would fail.
"""

import pytest

from engine.core.datasets import toy_dataset
from engine.topology import probability, training, width_sweep
from engine.topology.probability import MapSettings, probability_maps_job
from engine.topology.reproduce import toy_init
from engine.topology.training import TrainConfig, train
from engine.topology.two_layer import TwoLayerNet
from engine.topology.width_sweep import SweepSettings, breast_cancer_sweep
from tests.engine.job_timing import UNIT_S, WorkClock, install, most_work_between_yields

BOUND_S = 0.2


def toy_training(optimizer: str, n: int, steps: int):
    X, Y = toy_dataset(n, 0)
    return train(TwoLayerNet(2, 2, 1), toy_init(0, (-0.1, 0.1)), X, Y, TrainConfig(optimizer, 0.01, steps))


# name: (the job, the modules whose clock it reads, its units of work: functions / step generators,
# what one unit costs in seconds of work)
JOBS = {
    "Fig. 4 sweep": (
        lambda: breast_cancer_sweep(SweepSettings(ls=[9], n_inits=20, steps=300)),
        [width_sweep],
        {"steps": [(width_sweep, "_gd_batched")]},  # one GD step of a chunk of runs
        UNIT_S,
    ),
    "Fig. 5 maps": (
        lambda: probability_maps_job(MapSettings(200, 200, mc_samples=2000, mc_stride=60)),
        [],  # it yields after every batch, by count
        {"work": [(probability, "probability_grid"), (probability, "balances")]},  # a block, a batch
        0.01,
    ),
    "GD on the Fig. 3 toy": (
        lambda: toy_training("gd", 8000, 1500),
        [training],
        {"work": [(training, "loss_and_grads")]},  # one full-batch gradient
        UNIT_S,
    ),
    "gradient flow on the Fig. 3 toy": (
        lambda: toy_training("flow", 8000, 500),
        [training],
        {"work": [(training, "loss_and_grads_np")]},  # one evaluation of the flow's field
        UNIT_S,
    ),
}


@pytest.mark.parametrize("name", JOBS)
def test_most_work_between_yields(name, monkeypatch):
    make, clocked, units, unit_s = JOBS[name]
    clock = WorkClock()
    install(monkeypatch, clock, clocked, **units)
    most, total = most_work_between_yields(make(), clock)
    bound = round(BOUND_S / unit_s)
    assert total > 2 * bound, f"{name}: {total} units in all, too few to tell"
    assert most <= bound, f"{name}: {most} units of work (~{most * unit_s:.2f} s) between two yields"
