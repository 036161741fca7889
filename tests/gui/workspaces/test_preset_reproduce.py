"""A Fig. 3 preset run in the window and ``reproduce topo-toy`` give the same numbers.

The window's job is taken from the topology workspace exactly as Run takes it (make_job after
loading the preset). Quick reproduce draws 500 toy points where the presets draw 8000, so the
preset's "toy points" is set to 500 before the job is built; everything else is the preset's
own values, including its seed, which is handed to reproduce as --seed. The flow presets record
every 5th step where reproduce records every step, so their rows are compared with every 5th row
of the export.
"""

import numpy as np
import pytest

from engine.core.progress import run_to_completion
from engine.experiments import run_experiment
from engine.topology.reproduce import TOY_POINTS
from gui.present.training_setup import training_setup, values_of
from gui.presets import preset_named

PRESETS = {
    "fig3-obstructed": "obstructed_gd",
    "fig3-free": "free_gd",
    "fig3-obstructed-flow": "obstructed_flow",
    "fig3-free-flow": "free_flow",
}
SEED = 3


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory):
    out = tmp_path_factory.mktemp("topo-toy")
    run_to_completion(run_experiment("topo-toy", out, quick=True, seed=SEED))
    return out


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_run_agrees_with_reproduce_export(window, reproduced, preset):
    assert preset_named(preset).values["init"]["seed"] == SEED
    window.load_preset(preset, run=False)
    ws = window.workspaces["topology"]
    ws.parameters["data", "points"] = TOY_POINTS[True]
    stride = ws.parameters["optimizer", "stride"]
    presented = run_to_completion(ws.make_job())
    traj = presented.result
    with np.load(reproduced / f"traj_{PRESETS[preset]}.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(training_setup(values_of(ws.parameters)).X, z["X"])  # the same data points
        np.testing.assert_array_equal(traj.step, z["step"][::stride])
        for name in ("W1", "W2", "loss", "c"):
            np.testing.assert_allclose(getattr(traj, name), z[name][::stride], rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_array_equal(traj.W1[0], z["W1"][0])  # one initialization, bit for bit
