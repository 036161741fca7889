"""The topology tab's model, headless: what an update lays out and draws, replay frames, and a
training run's session data, through the model's public methods."""

from types import SimpleNamespace

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.topology.training import Trajectory
from gui.models.topology import Arrival, TopologyModel, fits
from gui.present import Presented


def trajectory(T: int = 4, d: int = 2, l: int = 3, e: int = 1) -> Trajectory:
    rng = np.random.default_rng(0)
    return Trajectory(
        step=np.arange(T),
        W1=rng.normal(size=(T, l, d)),
        W2=rng.normal(size=(T, e, l)),
        b1=None,
        b2=None,
        loss=np.linspace(1, 0.1, T),
        c=rng.normal(size=(T, l)),
        sign_flips=[(2, 1)],
    )


def context(kept: bool = False):
    return SimpleNamespace(layout_kept=kept, layout={"extra": ""})


def test_a_first_update_lays_out_then_draws_and_a_kept_layout_does_not():
    model, first, traj = TopologyModel(), context(), trajectory()
    arrival = model.take(Presented(traj, {"context": first, "loss": [1.0]}), final=False)
    assert arrival == Arrival(first, {"context": first, "loss": [1.0]}) and model.result is traj
    model.laid_out(first)
    assert model.preview_shown and model.state is None
    same = model.take(Presented(traj, {"context": first, "loss": [0.5]}), final=False)
    assert same.lay_out is None  # previewed for this network: its layout is kept
    model.drawn(same.draw)
    assert model.state is same.draw and not model.preview_shown
    other = context()
    assert model.take(Presented(traj, {"context": other, "loss": [0.5]}), final=True).lay_out is other


def test_an_update_with_only_a_layout_draws_nothing():
    model, ctx = TopologyModel(), context()
    model.result = trajectory()
    arrival = model.take(Presented(SimpleNamespace(), {"context": ctx}), final=True)
    assert arrival.draw is None and arrival.lay_out is ctx and model.result is None


def test_replay_frames_and_a_newer_result():
    model, traj = TopologyModel(), trajectory(T=5)
    assert model.timeline_length("training") == 0 and model.trajectory("training") is None
    model.result = traj
    assert model.timeline_length("training") == 5 and model.timeline_length("fig4") == 0
    assert model.frame_row(99) == 4 and model.shown_frame() == 4
    model.result = trajectory(T=5)
    assert model.shown_frame() is None  # a newer result is drawn whole


def test_a_training_run_round_trips_through_its_session_data():
    model, traj = TopologyModel(), trajectory()
    assert model.session_state("training", None, False) == {}  # nothing run
    model.result = traj
    saved = model.session_state("training", None, False)
    assert saved["mode"] == "training" and "b1" not in saved["trajectory"]
    assert saved["trajectory"]["sign_flips"].shape == (1, 2)
    again = TopologyModel.saved_trajectory(saved)
    assert again.sign_flips == [(2, 1)] and np.array_equal(again.W1, traj.W1) and again.b1 is None
    assert fits(again, 2, 3, 1) and not fits(again, 3, 3, 1)
    with pytest.raises(EngineInputError, match="does not fit"):
        TopologyModel.saved_trajectory({"mode": "training"})  # no run in it


def test_a_sweep_page_saves_its_own_result():
    model = TopologyModel()
    model.result = object()
    assert model.session_state("fig4", lambda r: {"page": r is model.result}, False) == {
        "mode": "fig4",
        "result": {"page": True},
    }


def test_a_session_run_waits_for_its_cameras_and_frame():
    model, traj = TopologyModel(), trajectory()
    model.restoring(traj)
    assert model.result is traj and model.context is None and model.pending_cameras == []
    model.pending_cameras, model.frame_wanted = [{"distance": 3.0}], 2
    loaded = (SimpleNamespace(), ("file", "key"))
    cameras, wanted = model.restored(loaded, Presented(traj, {"context": "ctx"}))
    assert cameras == [{"distance": 3.0}] and wanted == 2 and model.pending_cameras is None
    assert model.loaded == (loaded[0], "ctx") and model.loaded_key == ("file", "key")
    model.clear()
    assert model.result is None and model.state is None and model.frame_wanted is None
