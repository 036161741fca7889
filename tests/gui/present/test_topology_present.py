"""Paper A's view state (gui.present.topology, its meshes from gui.present.quadric_meshes) holds what
the engine's arrays say, computed here independently from the trajectory's weights; and the window,
running a preset, computes none of it on the GUI thread: every engine function the presenter calls
refuses to run there."""

import weakref

import numpy as np
import pytest

import gui.present.quadric_meshes as meshes_module
import gui.present.topology as present_module
import gui.present.topology_curves as curves_module
from engine.core.progress import run_to_completion
from engine.topology import invariants
from gui.panels.topology_parameters import PARAMETERS
from gui.present import Presented
from gui.present.quadric_meshes import surface_mesh
from gui.present.topology import present, setup_context, training_job
from gui.present.training_setup import Values, training_setup

from ..conftest import record_gui_thread_calls, wait_until_idle
from ..drawn import neuron_points

EPS32 = np.finfo(np.float32).eps


def values(**groups) -> Values:
    """The panel's defaults with ``groups`` over them, as a job reads them (no Parameter tree: a
    Qt object this test dropped would reach the cycle collector)."""

    def defaults(spec) -> Values:
        return Values({p["name"]: defaults(p["children"]) if p["type"] == "group" else p["value"] for p in spec})

    out = defaults(PARAMETERS)
    for group, fields in groups.items():
        dict.update(out[group], fields)
    return out


def run(v, steps: int) -> Presented:
    return run_to_completion(training_job(v, steps))


def test_the_job_builds_its_setup_and_presents_the_engine_s_trajectory():
    v = values(data={"points": 400}, init={"c": "-0.3, 0.2", "signs": "+, -", "seed": 5})
    presented = run(v, 60)
    traj, state = presented.result, presented.state
    assert state["step"] == traj.step[-1] == 60
    np.testing.assert_array_equal(traj.W1[0], training_setup(v).params.W1)  # the job drew the panel's weights
    for k, cell in enumerate(state["quadrics"]):
        want = neuron_points(traj, k).astype(np.float32)  # every row: 61 is below the decimation
        np.testing.assert_array_equal(cell["line"], want)
        np.testing.assert_array_equal(cell["start"], want[:1])
        np.testing.assert_array_equal(cell["head"], want[-1:])
        np.testing.assert_array_equal(cell["fraction"], traj.step / 60)
    # c_k = ‖w_k‖² − v_k² from the weights, and the drift plot's curves c_k(t) − c_k(0)
    c = np.sum(traj.W1**2, axis=2) - traj.W2[:, 0, :] ** 2
    np.testing.assert_allclose(state["c_now"], c[-1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(state["drift"]["drift"], c - c[:1], rtol=0, atol=1e-12)
    assert state["summary"]["c"] == pytest.approx(list(c[-1]), abs=1e-12)
    # the learned function: f(x) = Σ_k v_k relu(w_k·x) on the 28 × 28 grid over the data's box
    data = state["layout"]["data"]
    lo, hi = data["box"]
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 28), np.linspace(lo[1], hi[1], 28), indexing="ij")
    x = np.stack([gx, gy], axis=-1)
    f = np.maximum(x @ traj.W1[-1].T, 0) @ traj.W2[-1, 0]
    np.testing.assert_allclose(state["function"]["values"], f, rtol=1e-12, atol=1e-12)


def test_a_run_keeps_the_layout_it_was_previewed_with_and_only_that():
    """A run of the network the views were laid out for keeps that layout (the window then lays
    nothing out again); other initial weights, or another number of steps, lay out their own."""
    v = values(data={"points": 200}, init={"seed": 5})
    previewed = setup_context(training_setup(v, 40))
    laid_out = lambda v, steps: run_to_completion(training_job(v, steps, laid_out=previewed)).state["context"].layout  # noqa: E731
    assert laid_out(v, 40) is previewed.layout
    assert laid_out(values(data={"points": 200}, init={"seed": 6}), 40) is not previewed.layout
    assert laid_out(v, 41) is not previewed.layout  # the loss plot holds the run's steps


def test_plain_equal_compares_values_deeply():
    a = {"x": np.arange(3.0), "t": ("a", 1), "n": [None, {"m": np.float32([np.nan])}]}
    b = {"x": np.arange(3.0), "t": ("a", 1), "n": [None, {"m": np.float32([np.nan])}]}
    assert present_module.plain_equal(a, b)
    for changed in (
        {**b, "x": np.arange(3.0) + 1e-15 * np.arange(3)},
        {**b, "x": np.arange(3)},  # another dtype
        {**b, "t": ["a", 1]},
        {**b, "t": ("a", 1.0)},
        {**b, "n": [None]},
        {**b, "extra": 0},
    ):
        assert not present_module.plain_equal(a, changed)


def test_sign_changes_are_the_output_weights_own():
    v = values(data={"points": 2000}, init={"c": "-0.1, 0.1", "signs": "+, +", "seed": 3, "positive_inputs": True})
    presented = run(v, 300)  # fig3-free's network: neuron 2 flips its output sign
    traj, state = presented.result, presented.state
    sign = np.sign(traj.W2[:, 0, :])
    assert (sign[1:] != sign[:-1]).any()
    for k, cell in enumerate(state["quadrics"]):
        rows = np.flatnonzero(sign[1:, k] != sign[:-1, k]) + 1  # the first row showing each new sign
        shown = np.concatenate([cell["flips"], cell["jumps"]])
        np.testing.assert_array_equal(np.sort(shown[:, 2]), np.sort(traj.W2[rows, 0, k].astype(np.float32)))


@pytest.mark.parametrize("c", [0.37, -0.52, 0.0])
def test_surface_vertices_lie_on_the_quadric(c):
    extent = 2.0
    for sheet in surface_mesh(c, extent, 56)["sheets"]:
        w1, w2, v = sheet["vertices"].astype(np.float64).T
        # float32 vertices: each coordinate off by ≤ eps₃₂ |x| / 2, so r² − v² by ≤ eps₃₂ (r² + v²)
        np.testing.assert_array_less(np.abs(w1**2 + w2**2 - v**2 - c), 2 * EPS32 * (w1**2 + w2**2 + v**2) + 1e-30)
        assert sheet["faces"].max() < len(w1)
        np.testing.assert_allclose(np.linalg.norm(sheet["normals"], axis=1), 1, atol=1e-6)


def test_the_mesh_cache_keeps_reused_meshes_and_at_most_its_budget():
    """A live run re-meshes at a new c every few frames, all day: the cache must keep what a replay
    comes back to, not every mesh made. What it keeps is read from outside, by weak references."""
    extent = 7.3  # a frame no other test meshes at: every mesh below is made here
    first = surface_mesh(0.011, extent, 56)
    assert surface_mesh(0.011, extent, 56) is first  # reused, not re-meshed
    arrays = []
    for c in np.linspace(0.02, 0.9, 120):  # c > 0: one sheet, ~220 KB, 27 MB in all
        mesh = surface_mesh(float(c), extent, 56)
        arrays += [weakref.ref(a) for sheet in mesh["sheets"] for a in sheet.values()]
    one, last = meshes_module.mesh_bytes(mesh), weakref.ref(mesh["sheets"][0]["vertices"])
    del mesh, first
    held = sum(ref().nbytes for ref in arrays if ref() is not None)
    # the latest meshes, as many as the budget holds
    assert meshes_module.MESH_CACHE_BYTES - one <= held <= meshes_module.MESH_CACHE_BYTES
    assert surface_mesh(0.9, extent, 56)["sheets"][0]["vertices"] is last()


def test_the_reduced_view_state_is_the_norms_of_the_weights():
    v = values(network={"bias": True, "l": 3}, data={"points": 300}, init={"c": "", "signs": ""})
    traj = run(v, 40).result
    state = present(traj, setup_context(training_setup(v)))
    r = np.sqrt(np.sum(traj.W1**2, axis=2) + traj.b1**2)
    np.testing.assert_allclose(state["reduced"]["r"], r, rtol=1e-12)
    np.testing.assert_array_equal(state["reduced"]["v"], traj.W2[:, 0, :])


def test_a_live_run_keeps_its_meshes_while_c_stays():
    v = values(data={"points": 300}, optimizer={"name": "flow", "lr": 0.01}, init={"c": "-0.2, 0.3"})
    setup = training_setup(v)
    context = setup_context(setup)
    traj = run(v, 30).result
    first = present(traj, context)
    again = present(traj, context, first)
    assert all(a["surface"] is b["surface"] for a, b in zip(first["quadrics"], again["quadrics"]))
    clip = present(traj, context, first, mesh_quantum=2e-4)  # a clip's c, quantised: a function of c alone
    q = 2e-4 * context.layout["extent"] ** 2
    for cell, ck in zip(clip["quadrics"], traj.c[-1]):
        assert cell["surface"]["c"] == round(ck / q) * q


def test_applying_states_computes_nothing_on_the_gui_thread(window, qtbot, monkeypatch):
    """Run presets with every engine function the presenter calls refusing the GUI thread."""
    qtbot.wait(100)  # the window's first preview (a reset, on this thread) has been drawn
    on_gui = []
    names = ("reduced_coordinates", "training_setup", "train")  # training_setup: as training_job calls it
    record_gui_thread_calls(monkeypatch, present_module, names, on_gui)
    record_gui_thread_calls(monkeypatch, curves_module, ("forward",), on_gui)  # the learned function's
    record_gui_thread_calls(monkeypatch, meshes_module, ("quadric_sheets", "hyperbola"), on_gui)
    names = ("sign_flip_events", "component_label", "c_of", "poincare", "beta0")
    record_gui_thread_calls(monkeypatch, invariants, names, on_gui)
    for preset in ("fig3-free", "biases", "d1-input-signs"):
        window.load_preset(preset, steps=200)
        wait_until_idle(qtbot, window)
        assert window.last_outcome == "succeeded", window.message_bar.text
        ws = window.workspaces["topology"]
        assert ws.trajectory() is not None
        if preset == "biases":  # projections after fig3-free's quadrics: no surface is left behind
            assert ws.gl_views() and not any(view._surface or view._ghost for view in ws.gl_views())
    assert on_gui == []
    ws.show_frame(3)  # the replay presents a row here: the guards see that
    assert "sign_flip_events" in on_gui
