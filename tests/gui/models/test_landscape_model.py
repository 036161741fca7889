"""The toolkit tab's model, headless: a plane's result drawn stage by stage, a new basin threshold
drawn without a job (compared with the persistence module's own basin map), a load's fields put
back when it does not load, a session's state checked, and a run's checkpoint as panel values."""

import numpy as np
import pytest

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import persistence as P
from engine.landscape.networks import Network
from engine.landscape.toolkit import ToolkitSettings, toolkit_job
from gui.models.landscape import Cleared, DensityCurve, Page, Persistence, Planes, ToolkitModel
from gui.models.run import ToolkitRequest
from gui.present.landscape import presented_job, relabel


def network() -> Network:
    rng = np.random.default_rng(0)
    arch = mlp.Arch((2, 4, 1), "tanh")
    X = rng.normal(size=(16, 2))
    return Network(arch, mlp.init_params(arch, rng), X, np.sin(X[:, 0]))


def result(**settings):
    return run_to_completion(presented_job(toolkit_job(ToolkitSettings(**settings), network())))


def drawn_by(model):
    out = []
    model.drawn.connect(out.append)
    return out


def test_a_plane_is_drawn_stage_by_stage_and_rethresholded_without_a_job():
    model = ToolkitModel()
    states = drawn_by(model)
    presented = result(mode="plane", points=9)
    model.take(presented)
    assert [type(s) for s in states] == [Page, Planes, Persistence]
    assert states[0] == Page(0) and model.result is presented.result and model.shown is presented.state
    plane = presented.result.plane
    np.testing.assert_array_equal(states[1].plane["loss"], plane.loss)
    assert states[1].extremes is None
    span = np.nanmax(plane.loss) - np.nanmin(plane.loss)
    states.clear()
    model.rethreshold(0.3)
    (stage,) = states
    assert isinstance(stage, Persistence) and stage.persistence["threshold"] == pytest.approx(0.3 * span)
    assert model.shown["persistence"] is stage.persistence and presented.state["persistence"]["share"] != 0.3
    # the basin map at the new threshold is the persistence module's, component for component
    s = stage.persistence
    direct = P.basin_map(plane.loss, s["threshold"], P.persistence(plane.loss))
    labels = relabel(s, s["threshold"])
    component = s["components"]
    np.testing.assert_array_equal(np.where(component >= 0, labels[np.maximum(component, 0)], -1), direct)
    assert model.session_state() == model.shown and model.session_state() is not model.shown


def test_a_density_result_and_a_session_state():
    model = ToolkitModel()
    states = drawn_by(model)
    presented = result(mode="density", probes=2, lanczos_steps=10)
    model.take(presented)
    assert states[0] == Page(2) and isinstance(states[1], DensityCurve)
    np.testing.assert_array_equal(states[1].density["grid"], presented.result.density.grid)
    saved = model.session_state()
    again = ToolkitModel()
    again_states = drawn_by(again)
    again.restore(saved)
    assert again.result is None and again.shown == saved and isinstance(again_states[1], DensityCurve)
    with pytest.raises(EngineInputError, match="no toolkit mode"):
        again.restore({"mode": "cube"})
    with pytest.raises(EngineInputError, match="paths"):
        ToolkitModel.check({"mode": "plane", "plane": {"path_names": ["gd"], "paths": []}})


def test_a_load_clears_the_pages_at_its_first_result_and_its_fields_go_back_when_it_does_not_load():
    model = ToolkitModel()
    states = drawn_by(model)
    before, first, second = {"path": ""}, {"path": "a.pt"}, {"path": "b.pt"}
    model.begin_load(None, before, first)
    model.begin_load(model.loading, first, second)  # a second load over the first: the fields before the first
    assert model.undo_load({"path": "c.pt"}) is None and model.loading is None  # a preset wrote them since
    model.begin_load(None, before, first)
    model.begin_load(model.loading, first, second)
    assert model.undo_load(second) == before
    model.begin_load(None, before, first)
    model.take(result(mode="plane", points=5))
    assert isinstance(states[0], Cleared) and model.loading is None
    model.begin_load(None, before, first)
    model.settled()  # Run read the fields: they are the user's
    assert model.undo_load(first) is None


def test_a_checkpoint_request_is_the_panels_values():
    request = ToolkitRequest(25, "/tmp/x.pt", "interpolation", "filter", "relu", "d.npz", "", "mean", "/tmp/y.pt")
    values = ToolkitModel.checkpoint_values(request)
    assert values["mode"] == "interpolation" and values["interpolation"] == {"second": "/tmp/y.pt"}
    assert values["network"] == {
        "source": "file",
        "path": "/tmp/x.pt",
        "activation": "relu",
        "data": "d.npz",
        "model": "",
        "loss": "mean",
    }
    plane = ToolkitRequest(25, "/tmp/x.pt", "plane", "hessian-extremes", "relu", "d.npz")
    assert "interpolation" not in ToolkitModel.checkpoint_values(plane)
    assert ToolkitModel.checkpoint_values(plane)["plane"] == {"directions": "hessian-extremes"}
