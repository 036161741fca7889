"""The Training run tab's model, headless: what a followed run's state draws and redraws, a
checkpoint selected and written for the toolkit (read back by the toolkit's own reader), the
demo's data and folder, through the model's public methods, against a run folder ll.Recorder wrote."""

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape.toolkit import NetworkFile
from engine.runs import open_run
from engine.runs.edge_of_stability import EdgeSettings, edge_of_stability_job, problem
from engine.runs.follow import follow_job
from gui.models.run import TOOLKIT_MODES, Drift, Loss, Path2D, RunModel, Selection, Sharpness, Status
from gui.present.run import presented

from ...engine.runs.test_follow import write

LR = 0.05  # write's learning rate


def write_run(folder, steps=30):
    """The engine's follow tests' run (SGD on a 3—6—5—1 ReLU MLP), and its data as a file."""
    write(folder, steps, every=3)
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(32, 3, generator=g), torch.randn(32, 1, generator=g)  # write's data
    data = folder.parent / "data.npz"
    np.savez(data, X=X.numpy(), Y=Y.numpy())
    return open_run(folder), data


def followed(folder):
    return run_to_completion(presented(follow_job(folder, once=True)))


def drawn_by(model):
    out = []
    model.drawn.connect(out.append)
    return out


def test_a_run_state_draws_every_view_then_only_what_is_new(tmp_path):
    run, _ = write_run(tmp_path / "run")
    model = RunModel()
    states = drawn_by(model)
    p = followed(tmp_path / "run")
    model.take(p)
    by_type = {type(s): s for s in states}
    assert set(by_type) == {Status, Loss, Sharpness, Drift, Path2D, Selection}
    np.testing.assert_array_equal(by_type[Loss].steps, run.steps)
    np.testing.assert_array_equal(by_type[Loss].loss, run.loss)
    np.testing.assert_array_equal(by_type[Sharpness].sharpness, run.sharpness)
    np.testing.assert_allclose(by_type[Sharpness].edge, 2 / LR)
    np.testing.assert_array_equal(by_type[Path2D].pca.steps, run.checkpoint_steps)
    assert [d.name for d in by_type[Drift].layers] == run.layer_names
    assert "finished" in by_type[Status].text and model.shown is p
    states.clear()
    model.take(p)  # the same data objects: only the status line is drawn again
    assert [type(s) for s in states] == [Status]
    states.clear()
    model.redraw()  # a new font size: every view again
    assert {type(s) for s in states} == {Status, Loss, Sharpness, Drift, Path2D, Selection}


def test_a_selected_checkpoint_is_written_for_the_toolkit_as_its_weights(tmp_path):
    run, data = write_run(tmp_path / "run")
    model = RunModel()
    states = drawn_by(model)
    model.take(followed(tmp_path / "run"))
    with pytest.raises(EngineInputError, match="click a checkpoint"):
        model.toolkit_request(next(iter(TOOLKIT_MODES)), "relu", str(data))
    step = int(run.checkpoint_steps[2])
    line = model.select(step)
    assert states[-1] == Selection(step) and model.selected_step == step
    assert str(model.checkpoint_file(step)) in line and model.checkpoint_file(step).is_file()
    with pytest.raises(EngineInputError, match="data"):
        model.toolkit_request(next(iter(TOOLKIT_MODES)), "relu", "")
    choice = "interpolation to the latest checkpoint"
    request = model.toolkit_request(choice, "relu", str(data))
    assert (request.mode, request.step, request.activation, request.data) == ("interpolation", step, "relu", str(data))
    # the toolkit's own reader takes the file: paper B's MLP whose weights are the checkpoint's
    net = NetworkFile(request.path, request.activation, request.data).read()
    state = run.checkpoint(step)
    Ws, bs = mlp.unpack(net.arch, np.asarray(net.params))
    np.testing.assert_array_equal(Ws[0], state["0.weight"].numpy())
    np.testing.assert_array_equal(Ws[1], state["2.weight"].numpy())
    np.testing.assert_array_equal(Ws[2], state["4.weight"].numpy())
    np.testing.assert_array_equal(bs[0], state["0.bias"].numpy())
    np.testing.assert_array_equal(net.X, np.load(data)["X"])
    latest = torch.load(request.second, weights_only=True)
    for name, tensor in run.checkpoint(int(run.checkpoint_steps[-1])).items():
        torch.testing.assert_close(latest[name], tensor, rtol=0, atol=0)
    model.close()
    assert not Path(request.path).exists() and model.checkpoint_file(step).is_file()  # the run is left as it was


def test_the_demo_brings_its_data_and_its_folder_goes_on_close(tmp_path):
    settings = EdgeSettings(steps=20, every=5, sharpness_every=10)
    model = RunModel()
    folder = model.new_demo_folder(settings)
    p = run_to_completion(presented(edge_of_stability_job(folder, settings)))
    model.take(p)
    model.select(int(p.run.checkpoint_steps[1]))
    request = model.toolkit_request("Hessian spectral density")
    assert (request.mode, request.activation, request.loss) == ("density", "relu", "mean")
    _, X, Y = problem(settings)
    saved = np.load(request.data)
    np.testing.assert_array_equal(saved["X"], X.numpy())
    np.testing.assert_array_equal(saved["Y"], Y.numpy())
    second = model.new_demo_folder(settings)  # a second demo: the first one's folder goes
    assert not folder.parent.exists() and second.parent.is_dir()
    model.close()  # the window closes: the second one's goes too
    assert not second.parent.exists()
    assert "no replay" in model.replay_note
