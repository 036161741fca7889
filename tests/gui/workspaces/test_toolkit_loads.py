"""File ▸ Load network on the toolkit tab, one load after another: the network fields end as the
last file's when it loads, and as they were before the first when the last one fails, however
the earlier loads ended (the state machine found a good file's result shown under a bad file's
fields: the bad load, superseded, ended while the good one ran and put its fields back)."""

import numpy as np

import resources
from engine.core import mlp
from engine.io.netfile import save_network
from gui.workspaces.landscape import FILE_FIELDS

from ..conftest import wait_until_idle


def fields(ws) -> dict:
    return {name: ws.parameters["network", name] for name in FILE_FIELDS}


def good_and_bad(tmp_path):
    rng = np.random.default_rng(0)
    arch = mlp.Arch((2, 3, 1), "sigmoid")
    X = rng.normal(size=(12, 2))
    good = save_network(tmp_path / "mlp.npz", arch, mlp.init_params(arch, rng), X, np.tanh(X[:, 0]))
    bad = tmp_path / "garbage.pt"
    bad.write_bytes(rng.bytes(256))
    return str(good), str(bad)


def run_a_short_sweep(window, qtbot):
    """Paper A's Fig. 5 on the topology tab (few samples), run to its end: another tab's job."""
    window.load_preset("fig5-probability", run=False)
    window.workspaces["topology"].parameters["fig5", "mc_samples"] = 50
    window.run()
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    assert window.last_outcome == "succeeded", window.message_bar.text


def test_a_good_file_loaded_over_bad_ones_keeps_its_fields(window, qtbot, tmp_path):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    ws.parameters["plane", "points"] = 7
    good, bad = good_and_bad(tmp_path)
    data = str(resources.path("data/your-network.csv"))
    original = fields(ws)
    for _ in range(2):
        ws.load_network(bad, "relu", data)  # each superseded by the next before it can end
    ws.load_network(good)
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)  # run_finished comes one turn of the loop after the job's end
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert fields(ws) == {"source": "file", "path": good, "activation": "", "data": "", "model": ""}
    assert ws.result is not None and ws.result.network.params.shape == (mlp.Arch((2, 3, 1)).n_params,)
    # and a bad file loaded over bad ones leaves the fields as they were before the first
    ws.load_network(bad, "relu", data)
    ws.load_network(bad, "relu", data)
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    assert window.last_outcome == "failed"
    assert fields(ws) == {"source": "file", "path": good, "activation": "", "data": "", "model": ""}
    assert original["path"] != good


def test_a_missing_file_refused_during_a_load_leaves_that_load_its_fields(window, qtbot, tmp_path):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    ws.parameters["plane", "points"] = 7
    good, bad = good_and_bad(tmp_path)
    ws.load_network(good)
    loading = fields(ws)
    ws.load_network(str(tmp_path / "missing.npz"))  # refused at once, the good load goes on
    assert "does not exist" in window.message_bar.text
    assert fields(ws) == loading
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert fields(ws) == {"source": "file", "path": good, "activation": "", "data": "", "model": ""}


def test_a_load_another_tab_takes_over_from_puts_the_fields_back(window, qtbot, tmp_path):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    ws.parameters["plane", "points"] = 7
    good, _bad = good_and_bad(tmp_path)
    original = fields(ws)
    ws.load_network(good)
    window.load_preset("fig5-probability", run=False)  # the topology tab's sweep takes the lane
    window.workspaces["topology"].parameters["fig5", "d_max"] = 4
    window.workspaces["topology"].parameters["fig5", "l_max"] = 4
    window.workspaces["topology"].parameters["fig5", "mc_samples"] = 50
    window.run()
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert fields(ws) == original  # the file never loaded
    assert ws.result is None


def test_run_after_a_load_takes_its_file_as_the_users(window, qtbot, tmp_path):
    """The 20-minute soak's sequence: a file loaded, Run on it, another tab's sweep taking the
    lane, a second file loaded and cancelled. Run read the first file, so the fields go back to
    it, not to what they were before it (the tab kept the first load pending until the lane was
    idle, and the cancelled load restored the fields from before both)."""
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    ws.parameters["plane", "points"] = 7
    good, _bad = good_and_bad(tmp_path)
    data = str(resources.path("data/your-network.csv"))
    first = str(resources.path("networks/your-network.pt"))
    started = []
    window.controller.run_started.connect(lambda owner, keep: started.append((owner.key, keep)))
    ws.load_network(first, "relu", data)
    window.run()  # this tab's Run, on the loaded file
    qtbot.waitUntil(lambda: ("landscape", False) in started, timeout=60000)
    window.load_preset("fig5-probability", run=False)
    window.workspaces["topology"].parameters["fig5", "mc_samples"] = 50
    window.run()
    qtbot.waitUntil(lambda: window.controller.owner is window.workspaces["topology"], timeout=60000)
    window.show_workspace("landscape")
    ws.load_network(good)
    window.cancel()
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    assert fields(ws) == {"source": "file", "path": first, "activation": "relu", "data": data, "model": ""}


def test_a_toolkit_preset_opened_over_a_load_keeps_its_own_fields(window, qtbot, tmp_path):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    good, _bad = good_and_bad(tmp_path)
    ws.load_network(good)
    window.load_preset("toolkit-plane", run=False)  # discards the load
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    preset = fields(ws)
    assert preset["path"] == "networks/your-network.pt" and preset["activation"] == "relu"
    # and a later job's ending does not take the discarded load's "before" back either
    run_a_short_sweep(window, qtbot)
    assert fields(ws) == preset


def test_reset_during_a_load_puts_the_fields_back(window, qtbot, tmp_path):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    good, _bad = good_and_bad(tmp_path)
    original = fields(ws)
    ws.load_network(good)
    window.reset()
    assert fields(ws) == original
    wait_until_idle(qtbot, window, 120000)
    qtbot.wait(50)
    assert fields(ws) == original and ws.result is None


def test_a_session_saved_during_a_load_opens_with_its_own_fields(window, qtbot, tmp_path):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    good, _bad = good_and_bad(tmp_path)
    ws.load_network(good)
    saved = fields(ws)
    window.save_session(str(tmp_path / "mid-load.lens"))
    window.open_session(str(tmp_path / "mid-load.lens"))  # drops the load, then applies the session
    assert "Opened session" in window.message_bar.text
    run_a_short_sweep(window, qtbot)  # and no later job's ending undoes the dropped load
    assert fields(ws) == saved
