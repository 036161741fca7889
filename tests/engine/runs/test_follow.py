"""engine.runs.follow: the view of a run as it is written, compared with the run read back and
with the PCA plane and drift bands computed here; its statuses (finished, writer died, stopped
growing) from what the folder says; the plane recomputed only as often as its throttle allows."""

import json
import socket
import subprocess
import threading

import numpy as np
import pytest
import torch
from torch import nn

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.runs import Recorder, open_run
from engine.runs import format as fmt
from engine.runs.follow import DIED, FINISHED, FOLLOWING, QUANTILES, STALLED, follow_job


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 1))


def write(folder, steps, every=2, close=True, lr=0.05, start=None):
    """SGD on a small regression, recorded; the recorder (open unless ``close``)."""
    model = mlp()
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(32, 3, generator=g), torch.randn(32, 1, generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    rec = Recorder(
        folder, model, every=every, sharpness_every=every * 2, sharpness_data=(X, Y), resume=start is not None
    )
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(X) - Y) ** 2).mean()
        loss.backward()
        rec.step(loss=loss.item(), lr=lr)
        opt.step()
    if close:
        rec.close()
    else:
        rec.flush()
    return rec


def test_a_finished_run_is_viewed_as_recorded(tmp_path):
    write(tmp_path / "run", 40, every=4)
    state = run_to_completion(follow_job(tmp_path / "run"))
    run = open_run(tmp_path / "run")
    assert state.status == FINISHED
    np.testing.assert_array_equal(state.steps, run.steps)
    np.testing.assert_array_equal(state.loss, run.loss)
    np.testing.assert_array_equal(state.sharpness, run.sharpness)
    np.testing.assert_array_equal(state.edge, 2 / 0.05)
    assert not state.loss.flags.writeable  # a state is never changed once yielded
    # the drift bands, from the run's invariants here
    history = run.invariant_history()
    assert [layer.name for layer in state.layers] == run.layer_names
    for layer in state.layers:
        drift = history[layer.name] - history[layer.name][:1]
        np.testing.assert_allclose(layer.low, drift.min(1))
        np.testing.assert_allclose(layer.high, drift.max(1))
        np.testing.assert_allclose(layer.q_low, np.quantile(drift, QUANTILES[0], axis=1))
        k = int(np.argmax(np.abs(drift[-1])))
        assert layer.top[0] == (k, pytest.approx(drift[-1, k]))
        assert layer.low[0] == layer.high[0] == 0 and layer.high[-1] > layer.low[-1]
    # the PCA plane: centred on the last checkpoint, its directions orthonormal, the path the
    # checkpoints' coordinates along them
    flat = np.stack(
        [
            np.concatenate([t.reshape(-1).double().numpy() for t in run.checkpoint(int(s)).values()])
            for s in run.checkpoint_steps
        ]
    )
    centred = flat - flat[-1]
    np.testing.assert_array_equal(state.pca.steps, run.checkpoint_steps)
    np.testing.assert_allclose(state.pca.xy[-1], 0, atol=1e-12)
    # the path's coordinates keep the distances between checkpoints within the plane: its
    # projection's Gram matrix is the top-2 part of the centred checkpoints'
    Mc = centred - centred.mean(0)
    evals, evecs = np.linalg.eigh(Mc @ Mc.T)
    top = evecs[:, -2:] * evals[-2:]
    xy = state.pca.xy - state.pca.xy.mean(0)
    np.testing.assert_allclose(xy @ xy.T, top @ evecs[:, -2:].T, atol=1e-9 * evals[-1])
    assert state.pca.explained.sum() <= 1 + 1e-12


def test_a_run_being_written_is_followed_step_by_step(tmp_path):
    folder = tmp_path / "run"
    rec = write(folder, 3, close=False)
    job = follow_job(folder, poll_s=0.01, pca_every=100, pca_every_s=1e9)
    first = next(u.partial for u in job if u.partial is not None)
    assert first.status == FOLLOWING and len(first.steps) == 3
    seen, planes = [first], set()
    model = rec.model
    for _ in range(12):  # one step at a time: the next state has it
        rec.step(loss=1.0, lr=0.05)
        with torch.no_grad():
            model[0].weight += 0.01 * torch.randn_like(model[0].weight)
        rec.flush()
        state = next(u.partial for u in job if u.partial is not None and u.partial.revision > seen[-1].revision)
        assert state.last_step == rec.last_step
        if state.pca is not None:
            planes.add(id(state.pca))
        if state.steps is seen[-1].steps:
            pytest.fail("a state with a new step kept the old steps")
        seen.append(state)
    # unchanged fields are the identical objects: the views skip them
    assert seen[-1].layers is seen[-2].layers or not np.array_equal(
        seen[-1].checkpoint_steps, seen[-2].checkpoint_steps
    )
    # the plane is made once as the third checkpoint lands, and then held by its throttle
    assert len(planes) == 1
    rec.close()
    last = next(u.partial for u in job if u.partial is not None and u.partial.status == FINISHED)
    assert last.pca is not None and len(last.pca.steps) == len(last.checkpoint_steps)  # the end brings it up to date
    with pytest.raises(StopIteration):
        next(job)


def test_a_run_that_stops_growing_and_one_whose_writer_died(tmp_path):
    folder = tmp_path / "run"
    rec = write(folder, 5, close=False)
    job = follow_job(folder, poll_s=0.01, stall_s=0.2)
    assert next(u.partial for u in job if u.partial is not None).status == FOLLOWING
    assert next(u.partial for u in job if u.partial is not None).status == STALLED
    rec.step(loss=1.0, lr=0.05)
    assert next(u.partial for u in job if u.partial is not None).status == FOLLOWING
    job.close()
    rec.close()
    # a writer killed: the manifest not finished, its lock naming a process that is gone
    manifest = json.loads((folder / fmt.MANIFEST).read_text())
    fmt.write_json(folder / fmt.MANIFEST, {**manifest, "finished": False})
    gone = subprocess.Popen(["true"])
    gone.wait()
    (folder / fmt.LOCK).write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(), "started": ""}))
    state = run_to_completion(follow_job(folder))
    assert state.status == DIED and "writer died" in state.line


def test_once_reads_a_live_run_as_it_stands(tmp_path):
    rec = write(tmp_path / "run", 6, close=False)
    state = run_to_completion(follow_job(tmp_path / "run", once=True))
    assert state.status == FOLLOWING and len(state.steps) == 6
    rec.close()


def test_a_folder_that_is_not_a_run_is_one_line(tmp_path):
    with pytest.raises(EngineInputError, match="not a run folder"):
        run_to_completion(follow_job(tmp_path))
    with pytest.raises(EngineInputError, match="writer ended"):
        run_to_completion(follow_job(tmp_path, writer_running=lambda: False))


def test_a_writer_in_another_thread_is_waited_for(tmp_path):
    folder = tmp_path / "later"
    thread = threading.Thread(target=write, args=(folder, 12))
    thread.start()
    state = run_to_completion(follow_job(folder, poll_s=0.01, writer_running=thread.is_alive))
    thread.join()
    assert state.status == FINISHED and len(state.steps) == 12
