"""The invariant-sets tab on a loaded network: the shipped example loads, shows its locked neuron on
its sheet, trains on and stays there; numbers against the file's tensors; bad files start nothing."""

import numpy as np
import torch
from torch import nn

import resources
from gui.session import capture_state, read_session, write_session

from ..conftest import assert_not_blank, gl_pixels, save_screenshot, wait_until_idle

NETWORK = resources.path("networks", "your-network.pt")
DATA = resources.path("data", "your-network.csv")


def topology(window):
    return window.workspaces["topology"]


def file_c() -> np.ndarray:
    state = torch.load(NETWORK, weights_only=True)
    W1, W2 = state["0.weight"].double().numpy(), state["2.weight"].double().numpy()
    return (W1**2).sum(1) - (W2**2).sum(0)


def test_load_network_shows_its_quadrics_current_points_and_locked_neuron(window, qtbot):
    ws = topology(window)
    window.show_workspace("topology")
    with qtbot.waitSignal(window.run_finished, timeout=60000):
        assert ws.load_network(str(NETWORK), str(DATA))
    assert not window.message_bar.text, window.message_bar.text
    assert window.last_outcome == "succeeded" and ws.timeline_length() == 0  # loaded, not trained
    shown = ws.invariants.shown
    assert np.allclose(shown["c"], file_c(), rtol=0, atol=1e-12)
    assert shown["locked"] == [2] and shown["label"] == [0, 1, 0, 0]
    views = ws.gl_views()
    assert len(views) == 4
    state = torch.load(NETWORK, weights_only=True)
    W1, W2 = state["0.weight"].double().numpy(), state["2.weight"].double().numpy()
    for k, view in enumerate(views):
        assert view.shown_points() == 1  # the current point θ_k = (w₁, w₂, v)
        assert np.allclose(view.head_marker.pos[0], [W1[k, 0], W1[k, 1], W2[0, k]], atol=1e-6)
        assert view.locked_sign == (1 if k == 1 else 0)
        assert view.lock_label.visible() == (k == 1)
    assert "LOCKED" in ws.quadrics.cells[1].caption.text() and "LOCKED" not in ws.quadrics.cells[0].caption.text()
    assert "better fit needs a locked flip: <b>no</b>" in ws.invariants.label.text()
    assert_not_blank(gl_pixels(views[1]))


def test_a_relu_network_loaded_on_the_minima_tab_opens_on_the_topology_tab(window, qtbot, tmp_path):
    """Paper B's constructions need a smooth σ: a ReLU state_dict (the dialog's "ReLU" choice)
    or a .pt2 that records its ReLU is handed to the topology tab, not refused."""
    state = torch.load(NETWORK, weights_only=True)
    module = nn.Sequential(nn.Linear(2, 4, bias=False), nn.ReLU(), nn.Linear(4, 1, bias=False)).double()
    module.load_state_dict({k: v.double() for k, v in state.items()})
    archive = tmp_path / "net.pt2"
    torch.export.save(torch.export.export(module, (torch.zeros(3, 2, dtype=torch.float64),)), archive)
    minima, ws = window.workspaces["minima"], topology(window)
    for path, activation in ((str(NETWORK), "relu"), (str(archive), "")):
        window.show_workspace("minima")
        ws.reset()
        with qtbot.waitSignal(window.run_finished, timeout=60000):
            minima.load_network(path, activation, str(DATA))
        assert not window.message_bar.text, window.message_bar.text
        assert window.workspace is ws, f"{path}: still on the {window.workspace.key} tab"
        assert np.allclose(ws.invariants.shown["c"], file_c(), rtol=0, atol=1e-12)
        assert ws.invariants.shown["locked"] == [2]
    window.show_workspace("minima")  # a sigmoid state_dict stays where it was loaded
    minima.load_network(str(NETWORK), "sigmoid", str(DATA))
    assert window.workspace is minima


def test_the_shipped_example_trains_on_and_stays_on_its_sheet(window, qtbot, tmp_path):
    with qtbot.waitSignal(window.run_finished, timeout=120000):
        window.load_preset("your-network", steps=200)
    assert not window.message_bar.text, window.message_bar.text
    ws = topology(window)
    assert window.last_outcome == "succeeded"
    traj = ws.trajectory()
    assert traj is not None and len(traj.step) == 201
    assert np.allclose(traj.c[0], file_c(), rtol=0, atol=1e-12)  # it started from the file's weights
    assert np.all(traj.W2[:, 0, 1] > 0) and np.all(traj.c[:, 1] < 0)  # neuron 2: on its v > 0 sheet
    assert {k for _, k in traj.sign_flips} == {0, 2, 3}  # the free ones flipped
    assert traj.loss[-1] < 1e-3 * traj.loss[0]
    # steps 24, 25 and 35 of 200: one call-out names the three, not three that overlap
    assert ws.curves.event_labels() == ["v₃, v₁, v₄ flip sign"]
    view = ws.gl_views()[1]
    assert view.shown_points() > 100 and view.locked_sign == 1 and view.lock_label.visible()
    assert ws.invariants.shown["locked"] == [2]
    assert "LOCKED v₂ &gt; 0" in ws.quadrics.cells[1].caption.text()
    assert_not_blank(gl_pixels(view))
    save_screenshot(window, "topology_your-network")
    # a session keeps the loaded network's run: reopened, the same views and numbers
    path = tmp_path / "talk.lens"
    write_session(path, capture_state(window))
    saved = read_session(path)["workspaces"]["topology"]["results"]
    ws.reset()
    ws.restore_session_state(saved)
    wait_until_idle(qtbot, window)  # laid out and drawn on the setup lane
    assert ws.trajectory() is not None and np.array_equal(ws.trajectory().W2, traj.W2)
    assert ws.gl_views()[1].locked_sign == 1 and ws.invariants.shown["locked"] == [2]


def test_bad_network_files_start_nothing_and_say_why(window, qtbot, tmp_path):
    ws = topology(window)
    sig = nn.Sequential(nn.Linear(2, 3), nn.Sigmoid(), nn.Linear(3, 1))
    torch.export.save(torch.export.export(sig, (torch.randn(4, 2),)), tmp_path / "sig.pt2")
    with qtbot.waitSignal(window.run_finished, timeout=60000):
        assert ws.load_network(str(tmp_path / "sig.pt2"), str(DATA))
    assert window.last_outcome == "failed"
    assert "not positively homogeneous" in window.message_bar.text and "\n" not in window.message_bar.text
    window.message_bar.clear()
    assert not ws.load_network(str(tmp_path / "missing.pt"), str(DATA))  # refused before any job
    assert "does not exist" in window.message_bar.text
    deep = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    torch.save(deep.state_dict(), tmp_path / "deep.pt")
    window.message_bar.clear()
    with qtbot.waitSignal(window.run_finished, timeout=60000):
        assert ws.load_network(str(tmp_path / "deep.pt"), str(DATA))
    assert "hidden layer" in window.message_bar.text
