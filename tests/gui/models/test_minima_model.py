"""The minima tab's model, headless: typed stage states, the split, the λ drag, a session's
network made live, tested through the model's public methods on a real (small) Fig. 3 build."""

import subprocess
import sys
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.minima.pipeline import Figure3, figure3_job
from engine.minima.reproduce import deep_settings
from gui.models import Listeners
from gui.models import minima_states as st
from gui.models.minima import CLEARABLE, MinimaModel
from gui.present import Presented
from gui.present.minima import STAGES, presented_job

SETTINGS = replace(deep_settings(True, 0), schedule=((1, 1), (2, 1)))


@pytest.fixture(scope="module")
def built() -> Presented:
    """A deep construction with two splits, presented as the tab gets it."""
    return run_to_completion(presented_job(figure3_job(SETTINGS)))


def watched(model: MinimaModel) -> tuple[list, list]:
    drawn, cleared = [], []
    model.drawn.connect(drawn.append)
    model.cleared.connect(cleared.append)
    return drawn, cleared


def test_the_models_import_no_qt():
    code = (
        "import sys, gui.models.minima, gui.models.topology; "
        "print(sorted(m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'shiboken6'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_listeners_call_each_callback_in_order():
    calls, signal = [], Listeners()
    first = lambda x: calls.append(("a", x))  # noqa: E731
    signal.connect(first)
    signal.connect(lambda x: calls.append(("b", x)))
    signal.emit(1)
    signal.disconnect(first)
    signal.emit(2)
    assert calls == [("a", 1), ("b", 1), ("b", 2)]


def test_a_stage_state_is_frozen_typed_and_gives_its_plain_data_back():
    data = {"lam": 0.5, "loss": 1.0, "hessian_min": -1e-3, "verdict": "saddle", "unmet": []}
    probe = st.typed("probe", data)
    assert isinstance(probe, st.Probe) and probe.lam == 0.5 and probe["verdict"] == "saddle"
    assert probe.to_dict() == data and list(probe) == list(data) and dict(**probe) == data
    with pytest.raises(FrozenInstanceError):
        probe.lam = 1.0
    assert st.typed("probe", probe) is probe  # a state passes as it is


def test_a_missing_field_is_no_key_and_an_unknown_one_is_kept():
    """An older session's stage lacks a field, a newer one's has one more: both read as saved."""
    t = np.linspace(-1, 1, 3)
    saved = {"t": t, "title": "(a) at the minimum", "from_a_newer_app": 1}
    state = st.typed("slices_min", saved)
    assert isinstance(state, st.SlicesMin) and "descent" not in state and state.get("descent") is None
    with pytest.raises(KeyError):
        state["envelope"]
    assert state.extra == {"from_a_newer_app": 1} and state.to_dict().keys() == saved.keys()
    with pytest.raises(EngineInputError, match="unknown minima stage"):
        st.typed("nonsense", {})
    with pytest.raises(EngineInputError, match="not view data"):
        st.typed("probe", [1, 2])
    assert set(st.STAGE_TYPES) == set(STAGES)


def test_a_built_figure_is_drawn_as_typed_states_in_stage_order(built):
    model = MinimaModel()
    drawn, cleared = watched(model)
    model.take(built)
    model.finish(built)
    stages = [s.stage for s in drawn]
    assert stages[: len(stages) - 1] == [s for s in STAGES if s in stages[:-1]]  # the probe's spectrum last
    assert all(isinstance(s, st.STAGE_TYPES[s.stage]) for s in drawn) and cleared == []
    assert model.figure is built.result and model.live and model.movable()
    assert all(isinstance(state, st.StageState) for state in model.shown.values())
    assert model.curvature()[0] == "spectrum"
    model.take(built)  # the same result again: nothing is drawn twice
    assert len(drawn) == len(stages)


def test_a_construction_warms_its_drag_slices_once(built):
    model = MinimaModel()
    model.take(built)
    assert model.warm_up(object(), SETTINGS.slices) is None  # not a Fig. 3 result
    assert model.warm_up(built.result, SETTINGS.slices) is not None  # a job, not run here
    assert model.warm_up(built.result, SETTINGS.slices) is None  # the same construction: warmed already


def test_a_result_without_a_stage_clears_it(built):
    model = MinimaModel()
    _, cleared = watched(model)
    model.take(built)
    current = [s for s in built.state["current"] if s != "plane"]
    model.finish(Presented(built.result, {"current": current}))
    assert cleared == ["plane"] and "plane" not in model.shown and "plane" in CLEARABLE


def test_a_step_row_picks_the_split_the_slider_moves(built):
    model = MinimaModel()
    model.take(built)
    n = len(built.result.construction.splits)
    assert model.select_step(0) is None and model.split == -1  # the small network's row
    assert model.select_step(n + 1) is None
    construction = model.select_step(1)
    assert model.split == 0 and construction is model.shown["construction"]
    assert model.split_lam() == built.result.construction.splits[0].lam and model.split_index() == 0


def test_a_preview_of_a_replaced_figure_is_dropped_and_drag_slices_kept(built):
    model = MinimaModel()
    assert model.preview_request(0.7, SETTINGS.slices, SETTINGS.plane) is None  # nothing to move
    model.take(built)
    assert model.preview_request(0.7, SETTINGS.slices, SETTINGS.plane) is not None  # a job, not run here
    assert not model.take_preview(object(), None)  # another figure is on screen
    assert not model.take_preview(model.figure, None) and model.drag is None


def test_dropped_previews_put_back_what_was_drawn(built):
    model = MinimaModel()
    drawn, cleared = watched(model)
    model.take(built)
    before = dict(model.shown)
    model.before_drag = dict(model.shown)  # as a drag's first preview leaves it
    preview = dict(model.shown["slices_saddle"].to_dict(), title="(c) preview at λ = 0.7")
    model.draw("slices_saddle", preview)
    del before["probe"]
    model.before_drag.pop("probe")
    assert model.drop_previews() is True  # no probe then: the slider goes back to the split's λ
    assert model.shown["slices_saddle"] is before["slices_saddle"] and cleared == []
    assert model.before_drag is None and model.drop_previews() is False


def test_a_session_round_trips_and_its_network_goes_live(built):
    model = MinimaModel()
    model.take(built)
    model.split = 0
    saved = model.session_state(0.25)
    assert all(isinstance(v, dict) for v in saved.values())
    assert saved["network"]["split"] == 0 and saved["network"]["lam"] == 0.25
    assert saved["path"].keys() == model.shown["path"].keys()

    reopened = MinimaModel()
    drawn, _ = watched(reopened)
    stages, net, network = MinimaModel.check_session(saved)
    reopened.restore(stages, net, network)
    assert [s.stage for s in drawn] == [s for s in STAGES if s in stages]
    for stage, data in stages.items():
        again = reopened.shown[stage].to_dict()
        assert again.keys() == data.keys()
    assert not reopened.live and reopened.saved_network.at == (0, 0.25)
    assert reopened.session_state(None)["network"] is reopened.saved_network.saved  # as saved, not live yet

    done = []
    assert reopened.later(lambda: done.append("export")) and done == []
    presented = run_to_completion(reopened.resume_request())
    assert reopened.going_live
    assert reopened.resume(presented) == (0, 0.25)
    assert reopened.live and reopened.saved_network is None and isinstance(reopened.figure, Figure3)
    reopened.run_waiting()
    assert done == ["export"] and not reopened.later(lambda: None)


def test_a_session_with_unknown_stages_or_no_network_file_is_refused():
    with pytest.raises(EngineInputError, match="unknown minima results"):
        MinimaModel.check_session({"nonsense": {}})
    with pytest.raises(EngineInputError, match="not an exported .npz"):
        MinimaModel.check_session({"network": {"npz": "text"}})


def test_replay_walks_the_path_and_forgets_a_frame_of_an_older_one(built):
    model = MinimaModel()
    assert model.timeline_length() == 0 and model.frame(0) is None
    model.take(built)
    n = model.timeline_length()
    assert n == len(built.result.path.lam)
    assert model.frame(n - 1) is model.shown["path"] and model.shown_frame() == n - 1
    model.draw("path", model.shown["path"].to_dict())  # a newer path
    assert model.shown_frame() is None
    model.reset()
    assert model.shown == {} and model.figure is None and model.split == -1
