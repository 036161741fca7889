"""Paper B's tab drawn from view states made on the worker (gui/present/minima.py): the presenter
against the stages of the result itself, and the tab computing none of them on the GUI thread."""

import threading
from dataclasses import replace

import numpy as np

from engine.core.progress import Progress, run_to_completion
from gui.present import curve_density
from gui.present import minima as present
from gui.present.curve_density import curve_density as count_curves  # the real one: recounted here
from gui.present.minima import presented_job, stages

from ..actions import same
from ..conftest import record_gui_thread_calls, wait_until_idle
from ..workspaces.test_minima_workspace import open_quick


def two_partials_then(result):
    """A job that yields ``result`` with its slices missing, then whole, then returns it."""
    yield Progress(0.3, "built", replace(result, slices_min=None, saddle=None, path=None, plane=None))
    yield Progress(0.9, "sliced", result)
    return result


def off_gui(function, *args):
    out = []
    thread = threading.Thread(target=lambda: out.append(function(*args)))
    thread.start()
    thread.join()
    return out[0]


def test_every_state_holds_every_stage_so_a_dropped_partial_loses_nothing(window, qtbot):
    ws = open_quick(window, qtbot, "nonattr-fig3", {"construction": {"schedule": "1:1, 2:1"}})
    fig = ws.figure
    job = presented_job(two_partials_then(fig))
    first, second = next(job).partial, next(job).partial
    result = run_to_completion(job)
    want = stages(fig, {})
    assert set(first.state["stages"]) < set(want)
    # the second partial alone (the runner may drop the first for it) has every stage
    for state in (second.state, result.state):
        assert set(state["stages"]) == set(want)
        assert all(same(state["stages"][k], want[k]) for k in want)
    # each stage's data is made once, so the tab draws it once: the same object in each state
    shared = set(first.state["stages"])
    assert all(second.state["stages"][k] is first.state["stages"][k] for k in shared)
    assert result.state["current"] == sorted(want)
    # a kept job (a re-slice) does not present the fields the tab already shows
    drawn = {"steps": fig.steps, "construction": fig.construction}
    kept = run_to_completion(presented_job(two_partials_then(fig), drawn=drawn))
    assert not {"steps", "construction"} & set(kept.state["stages"]) and "slices_min" in kept.state["stages"]


def test_the_tab_computes_no_stage_on_the_gui_thread(window, qtbot, monkeypatch, tmp_path):
    """Run, drag λ (preview and probe), release (re-slice), zoom a slice view, reopen a session
    (the network made live again), with every presenter function and the slice views' curve
    counting recording a call on the GUI thread."""
    on_gui = []
    names = ("stages", "_field_stages", "preview_data", "probe_data", "probe_details", "slices_data", "slice_frame")
    record_gui_thread_calls(monkeypatch, present, names, on_gui)
    record_gui_thread_calls(monkeypatch, curve_density, ("curve_density",), on_gui)
    ws = open_quick(window, qtbot, "nonattr-fig3", {"construction": {"schedule": "1:1, 2:1"}})
    assert ws.figure is not None and "slices_saddle" in ws.shown
    ws.inspector.lam.set_value(3.0)
    ws.move_lambda(3.0)
    qtbot.waitUntil(lambda: "preview at λ = 3" in ws.shown["slices_saddle"]["title"], timeout=60000)
    ws.release_lambda(3.0)
    wait_until_idle(qtbot, window, 120000)
    assert "λ = 3" in ws.shown["slices_saddle"]["title"] and "preview" not in ws.shown["slices_saddle"]["title"]
    assert abs(ws.shown["probe"]["lam"] - 3.0) < 1e-9
    # each slice view shows the box its data framed
    for view, stage in ((ws.slice_min, "slices_min"), (ws.slice_saddle, "slices_saddle")):
        np.testing.assert_allclose(np.ravel(view.getViewBox().viewRange()), ws.shown[stage]["frame"], rtol=1e-9)
    # a zoom is counted for the new box on the raster lane, and the image shown is its counts
    view = ws.slice_saddle
    before = view.counts
    view.getViewBox().scaleBy((0.5, 0.5))
    qtbot.waitUntil(lambda: view.counts is not before and not ws.controller.lane_busy("raster"), timeout=10000)
    (x0, x1), (y0, y1) = view.getViewBox().viewRange()
    box = view.getViewBox()
    drawn = ws.shown["slices_saddle"]  # the curves the view shows: the model's state, not the view's
    t, losses = np.asarray(drawn["t"], float), np.asarray(drawn["losses"], float)
    want = count_curves(t, losses, (x0, x1), (y0, y1), round(box.width()), round(box.height()))
    np.testing.assert_array_equal(view.counts, want)
    np.testing.assert_array_equal(view.density.image, curve_density.density_indices(want))
    # drawn equals the result's own stages, computed here from the result (on a thread of the
    # test's, which the guards do not count)
    want = off_gui(stages, ws.figure, {})
    for stage in ("steps", "construction", "slices_min", "path", "slices_saddle", "plane"):
        assert same(ws.shown[stage], want[stage]), stage
    path = tmp_path / "minima.lens"
    window.save_session(str(path))
    saved = dict(ws.shown)
    window.reset()
    window.open_session(str(path))
    qtbot.waitUntil(lambda: not window.computing, timeout=120000)  # the preview lane makes it live
    assert ws.figure is not None and ws.inspector.lam.slider.isEnabled()
    assert set(ws.shown) == set(saved) and all(same(ws.shown[k], saved[k]) for k in saved)
    assert on_gui == []
