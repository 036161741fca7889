"""The Fig. 4 page on a local Ray: it fills in as cells arrive, Cancel keeps the finished cells,
Run again computes only the rest, and the map equals the runner's own local sweep to the bit.
The Fig. 5 page on Ray draws the same Monte Carlo points as cell by cell in this process."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.core.progress import run_to_completion
from engine.sweeps import fig4
from engine.sweeps.runner import sweep_job

from ..conftest import save_screenshot, wait_until_idle

# Not importorskip: Ray is never imported in the window's process, not even by its tests.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")

SMALL = {"inits": 2, "l_max": 4, "steps": 1500, "lr": 0.1, "seed": 0}


def cells_on_disk(folder: Path) -> int:
    return len(list((folder / "cells").glob("*.npz"))) if (folder / "cells").exists() else 0


def test_fig4_fills_live_on_ray_cancels_keeping_cells_and_resumes(window, qtbot, tmp_path):
    ws = window.workspaces["topology"]
    window.load_preset("fig4-breast-cancer", run=False)
    for name, value in {**SMALL, "executor": "ray", "folder": str(tmp_path / "sweep")}.items():
        ws.parameters["fig4", name] = value
    total = sum(l + 1 for l in range(2, SMALL["l_max"] + 1))  # cells (l, l₊)
    window.run()
    # Live: the map shows some cells and not yet all (Ray's start-up takes seconds first).
    finite = lambda: 0 if ws.fig4.result is None else int(np.isfinite(ws.fig4.result.mean).sum())
    qtbot.waitUntil(lambda: 0 < finite() < total, timeout=180000)
    save_screenshot(window, "topology_fig4-on-ray-filling")
    caption = ws.fig4.caption.text()  # an ETA from the second arrival on (test_fig4_view)
    assert "/ 24 runs" in caption and ("ETA" in caption or "estimating" in caption), caption
    window.cancel()
    wait_until_idle(qtbot, window, 120000)
    assert window.last_outcome == "cancelled"
    kept = cells_on_disk(tmp_path / "sweep")
    assert 0 < kept < total, kept
    # Run again: only the missing cells are computed; the finished ones are read back unchanged.
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "sweep" / "cells").glob("*.npz")}
    window.run()
    wait_until_idle(qtbot, window, 300000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())
    assert cells_on_disk(tmp_path / "sweep") == total
    save_screenshot(window, "topology_fig4-on-ray-done")
    # The same grid through the runner in this process, from nothing: the same numbers, bit for bit.
    plan = fig4.plan("breast-cancer", range(2, SMALL["l_max"] + 1), SMALL["inits"], SMALL["steps"], SMALL["lr"])
    run = run_to_completion(sweep_job(plan, tmp_path / "local", executor="local"))
    local = fig4.assemble(run)
    shown = ws.fig4.result
    np.testing.assert_array_equal(shown.test_bce, local.test_bce)
    np.testing.assert_array_equal(shown.mean, local.mean)
    np.testing.assert_array_equal(shown.W1, local.W1)


def test_fig5_on_ray_draws_what_this_process_computes(window, qtbot, tmp_path):
    ws = window.workspaces["topology"]
    window.load_preset("fig5-probability", run=False)
    maps = {}
    for executor in ("ray", "local"):
        settings = {"d_max": 8, "l_max": 8, "mc_samples": 300, "mc_stride": 3, "seed": 1}
        for name, value in {**settings, "executor": executor, "folder": str(tmp_path / executor)}.items():
            ws.parameters["fig5", name] = value
        window.run()
        wait_until_idle(qtbot, window, 300000)
        assert window.last_outcome == "succeeded", window.message_bar.text
        maps[executor] = ws.fig5.result
        assert cells_on_disk(tmp_path / executor) == 2 * 9  # (d, l) ∈ {1, 4, 7}², for each of the two schemes
    save_screenshot(window, "topology_fig5-on-ray")
    for scheme, mc in maps["ray"].mc.items():
        assert mc.shape == (9, 4)
        np.testing.assert_array_equal(mc, maps["local"].mc[scheme])
        np.testing.assert_array_equal(maps["ray"].closed[scheme], maps["local"].closed[scheme])
    assert "ray" not in sys.modules  # Ray's driver ran in a process of its own (engine.sweeps.ray_driver)
