"""The edge-of-stability run, checked from the numbers its recorder wrote: the sharpness rises to
2/η and stays there while the loss falls, not monotonically; one step of gradient descent moves
the ReLU units' invariants by η² times a function of the weights (paper A's second order)."""

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.runs import open_run
from engine.runs.edge_of_stability import EdgeSettings, edge_of_stability_job, train
from engine.runs.follow import FINISHED


@pytest.fixture(scope="module")
def edge_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("edge") / "run"
    states = []
    last = run_to_completion(edge_of_stability_job(folder), lambda u: states.append(u.partial))
    return folder, last, [s for s in states if s is not None]


def test_the_sharpness_settles_at_two_over_the_step(edge_run):
    folder, last, _ = edge_run
    run = open_run(folder)
    edge = 2 / EdgeSettings().lr
    assert run.finished and last.status == FINISHED
    assert run.sharpness[0] < 0.4 * edge  # it starts well below the edge ...
    late = run.sharpness[run.sharpness_steps >= run.steps[-1] / 2]
    assert len(late) > 10
    np.testing.assert_allclose(late, edge, rtol=0.05)  # ... and stays at it over the last half
    np.testing.assert_array_equal(last.edge, edge)  # the view's 2/η line is the recorded lr's
    np.testing.assert_array_equal(last.sharpness, run.sharpness)


def test_the_loss_falls_but_not_monotonically(edge_run):
    folder, last, _ = edge_run
    run = open_run(folder)
    assert run.loss[-1] < 0.05 * run.loss[0]
    late = run.loss[len(run.loss) // 2 :]
    assert (np.diff(late) > 0).sum() > 0.1 * len(late)  # many steps go up at the edge
    assert late[-100:].mean() < late[:100].mean()  # and yet it falls over the last half
    np.testing.assert_array_equal(last.loss, run.loss)


def test_one_step_moves_the_invariants_by_the_square_of_the_step(tmp_path):
    """From θ₀ one step changes c by η² · (‖∂L/∂w‖² + (∂L/∂b)² − ‖∂L/∂v‖²) at θ₀: halving η
    quarters it exactly; over the same time (twice the steps) it halves, roughly."""
    drift = {}
    for lr, steps in ((0.1, 1), (0.05, 1), (0.1, 10), (0.05, 20)):
        folder = tmp_path / f"{lr}-{steps}"
        train(folder, EdgeSettings(lr=lr, steps=steps, every=steps, sharpness_every=steps))
        history = open_run(folder).invariant_history()
        assert set(open_run(folder).layer_names) == {"0.weight", "2.weight"}
        drift[lr, steps] = np.concatenate([c[-1] - c[0] for c in history.values()])
        scale = np.concatenate([np.abs(c[0]) for c in history.values()]).max()
    moved = np.abs(drift[0.05, 1]) > 1e-12
    assert moved.sum() > 10
    np.testing.assert_allclose(drift[0.1, 1][moved] / drift[0.05, 1][moved], 4.0, rtol=1e-6)
    assert 0 < np.abs(drift[0.1, 10]).max() < 0.01 * scale  # nonzero, and small against c
    ratio = np.abs(drift[0.1, 10]).sum() / np.abs(drift[0.05, 20]).sum()
    assert 1.5 < ratio < 2.7  # O(η) over a fixed time t = η · steps


def test_the_follower_saw_the_run_grow(edge_run):
    _, last, states = edge_run
    assert len(states) >= 3 and states[-1] is last
    steps = [len(s.steps) for s in states]
    assert steps == sorted(steps) and steps[0] < steps[-1]
    assert last.pca is not None and len(last.pca.steps) == len(last.checkpoint_steps)


def test_bad_settings_are_one_line(tmp_path):
    with pytest.raises(EngineInputError, match="learning rate"):
        run_to_completion(edge_of_stability_job(tmp_path / "r", EdgeSettings(lr=-1.0)))
