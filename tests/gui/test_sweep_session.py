"""A Fig. 4 sweep cancelled part-way, then File ▸ Save session: the session saves no sweep result
(a partial has no settings to save; saving raised AttributeError, found by the soak), and opens
again with the map empty while the finished cells stay in the sweep's folder for Run to resume."""

import numpy as np

from .conftest import wait_until_idle


def test_saving_a_session_after_a_cancelled_sweep(window, qtbot, tmp_path):
    ws = window.workspaces["topology"]
    window.load_preset("fig4-breast-cancer", run=False)
    for name, value in {
        "inits": 2,
        "l_max": 4,
        "steps": 3000,
        "executor": "local",
        "folder": str(tmp_path / "s"),
    }.items():
        ws.parameters["fig4", name] = value
    window.run()
    partial = lambda: ws.model.result is not None and int(np.isfinite(ws.model.result.mean).sum()) > 0
    qtbot.waitUntil(partial, timeout=180000)
    window.cancel()
    wait_until_idle(qtbot, window, 120000)
    assert window.last_outcome == "cancelled"
    assert not hasattr(ws.model.result, "settings")  # a partial is shown
    path = tmp_path / "cancelled.lens"
    window.save_session(str(path))
    assert "could not save" not in window.message_bar.text, window.message_bar.text
    assert ws.session_state() == {}
    window.open_session(str(path))
    assert "cannot open" not in window.message_bar.text, window.message_bar.text
    assert list((tmp_path / "s" / "cells").glob("*.npz"))  # what Run resumes from
