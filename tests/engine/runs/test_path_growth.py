"""engine.runs.path_growth: the run cut at a step is the run read back up to that step, on the
finished run's PCA plane (checked against an SVD here); the frames' steps rise through every
checkpoint; a folder with nothing to film is refused in one line."""

import numpy as np
import pytest
import torch
from torch import nn

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.runs import Recorder, open_run
from engine.runs.path_growth import frame_steps, grown_run_job, upto

from .test_follow import write


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("growth") / "run"
    write(folder, 42, every=4)  # checkpoints at 0, 4, …, 40; the last steps after the last one
    return folder


def test_the_whole_runs_plane_is_the_checkpoints_principal_plane(run_dir):
    view = run_to_completion(grown_run_job(run_dir))
    run = open_run(run_dir)
    np.testing.assert_array_equal(view.pca.steps, run.checkpoint_steps)
    flat = np.stack(
        [
            np.concatenate([t.double().reshape(-1).numpy() for t in run.checkpoint(int(s)).values()])
            for s in view.pca.steps
        ]
    )
    moved = flat - flat[-1]
    _, sv, vt = np.linalg.svd(moved - moved.mean(0), full_matrices=False)
    xy = moved @ vt[:2].T
    xy *= np.sign(xy[0])  # the engine's sign: the first checkpoint on the positive side
    np.testing.assert_allclose(view.pca.xy, xy, atol=1e-10 * np.abs(xy).max())
    np.testing.assert_allclose(view.pca.explained, sv[:2] ** 2 / (sv**2).sum(), rtol=1e-9)


@pytest.mark.parametrize("step", [0, 3, 4, 17.5, 40, 41])
def test_the_run_cut_at_a_step_is_the_run_read_back_up_to_it(run_dir, step):
    view = run_to_completion(grown_run_job(run_dir))
    run = open_run(run_dir)
    cut = upto(view, step)
    keep = run.steps <= step
    np.testing.assert_array_equal(cut.steps, run.steps[keep])
    np.testing.assert_array_equal(cut.loss, run.loss[keep])
    np.testing.assert_array_equal(cut.sharpness, run.sharpness[run.sharpness_steps <= step])
    shown = run.checkpoint_steps <= step
    np.testing.assert_array_equal(cut.pca.steps, run.checkpoint_steps[shown])
    np.testing.assert_array_equal(cut.pca.xy, view.pca.xy[shown])  # on the whole run's plane
    assert cut.pca.explained is view.pca.explained
    for layer, whole in zip(cut.layers, view.layers):
        np.testing.assert_array_equal(layer.steps, whole.steps[whole.steps <= step])
        np.testing.assert_array_equal(layer.high, whole.high[whole.steps <= step])
    assert cut.line.endswith(f"step {int(run.steps[keep][-1])} · {shown.sum()} checkpoints")


def test_frames_rise_through_every_checkpoint_evenly():
    steps, checkpoints = np.arange(42), np.arange(0, 41, 4)
    knots = np.append(checkpoints, 41)
    per = 3
    at = frame_steps(steps, checkpoints, per * (len(knots) - 1) + 1)
    np.testing.assert_array_equal(at[::per], knots)  # each checkpoint is a frame's step
    assert np.all(np.diff(at) > 0) and at[0] == 0 and at[-1] == 41
    # thinned, log-spaced checkpoints still get equal shares of the frames
    late = frame_steps(np.arange(1001), np.array([0, 1, 10, 100, 1000]), 9)
    np.testing.assert_allclose(late[::2], [0, 1, 10, 100, 1000])


def test_nothing_to_film_is_one_line(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(EngineInputError, match="not a run folder"):
        run_to_completion(grown_run_job(tmp_path / "plain"))
    torch.manual_seed(0)
    Recorder(tmp_path / "empty", nn.Linear(2, 1), every=2).close()
    with pytest.raises(EngineInputError, match="no recorded step"):
        run_to_completion(grown_run_job(tmp_path / "empty"))
    write(tmp_path / "short", 6, every=4)  # checkpoints at 0 and 4
    with pytest.raises(EngineInputError, match="needs 3 checkpoints; the run has 2"):
        run_to_completion(grown_run_job(tmp_path / "short"))
