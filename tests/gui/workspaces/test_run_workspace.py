"""The Training run tab in the real window: a run written while the window follows it shows each
new step; a finished run draws what was recorded (the loss, the sharpness and 2/η, each layer's
drift band, the checkpoints on their PCA plane, each computed here from the run read back); a
dead writer is said; the edge-of-stability preset draws the sharpness at 2/η."""

import json
import socket
import subprocess
import threading

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from torch import nn

from engine.core.mlp import unpack
from engine.runs import Recorder, open_run
from engine.runs import format as fmt
from gui.presets import apply_values

from ..conftest import save_screenshot, wait_until_idle

LR = 0.05


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 1))


class Writer:
    """SGD recorded into ``folder``, one step per ``step()``."""

    def __init__(self, folder, every=3):
        self.model = mlp()
        g = torch.Generator().manual_seed(1)
        self.X, self.Y = torch.randn(32, 3, generator=g), torch.randn(32, 1, generator=g)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR)
        self.rec = Recorder(folder, self.model, every=every, sharpness_every=every, sharpness_data=(self.X, self.Y))

    def step(self):
        self.opt.zero_grad()
        loss = ((self.model(self.X) - self.Y) ** 2).sum() / len(self.X)
        loss.backward()
        self.rec.step(loss=loss.item(), lr=LR)
        self.opt.step()

    def close(self):
        self.rec.close()


def finished_run(folder, steps=40):
    writer = Writer(folder)
    for _ in range(steps):
        writer.step()
    writer.close()
    return open_run(folder)


def drawn_loss(ws):
    x, y = ws.loss.curve.xData, ws.loss.curve.yData
    return (np.zeros(0), np.zeros(0)) if x is None else (np.asarray(x), np.asarray(y))


def test_a_run_being_written_shows_each_new_step(window, qtbot, tmp_path):
    """A writer thread appends a step, and waits until the window has drawn it before the next:
    the drawn loss is then the run's, step for step (the follow latency is measured in
    benchmarks/bench_follow.py)."""
    folder = tmp_path / "live"
    wait_until_idle(qtbot, window)  # the window's start-up jobs: a trace of theirs would catch this model's calls
    writer = Writer(folder)
    writer.step()
    writer.rec.flush()
    ws = window.workspaces["run"]
    window.open_run(str(folder))
    assert window.workspace is ws
    written, drawn_ok, stop = threading.Event(), threading.Event(), threading.Event()

    def write():
        for _ in range(8):
            drawn_ok.wait()
            drawn_ok.clear()
            if stop.is_set():
                return
            writer.step()
            written.set()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        for n in range(1, 10):
            qtbot.waitUntil(lambda n=n: len(drawn_loss(ws)[0]) == n, timeout=30000)
            run = open_run(folder)
            steps, loss = drawn_loss(ws)
            np.testing.assert_array_equal(steps, run.steps[:n])
            np.testing.assert_array_equal(loss, run.loss[:n])
            assert "following" in ws.status.text()
            drawn_ok.set()
    finally:
        stop.set()
        drawn_ok.set()
        thread.join()
    writer.close()
    qtbot.waitUntil(lambda: "finished" in ws.status.text(), timeout=30000)
    wait_until_idle(qtbot, window)
    assert ws.model.outcome == "succeeded"


def test_a_finished_run_draws_what_was_recorded(window, qtbot, tmp_path):
    wait_until_idle(qtbot, window)  # as above
    run = finished_run(tmp_path / "done")
    window.open_run(str(tmp_path / "done"))
    wait_until_idle(qtbot, window)
    ws = window.workspaces["run"]
    steps, loss = drawn_loss(ws)
    np.testing.assert_array_equal(steps, run.steps)
    np.testing.assert_array_equal(loss, run.loss)
    np.testing.assert_array_equal(ws.sharpness.curve.yData, run.sharpness)
    np.testing.assert_array_equal(ws.sharpness.edge.yData, np.full(len(run.sharpness), 2 / LR))
    assert "finished" in ws.status.text()
    # the drift bands: each layer's units' least and largest c(t) − c(0), and the 10-90 % band
    history = run.invariant_history()
    drawn = ws.drift.drawn()
    assert len(drawn) == len(run.layer_names) == 2
    for name, band in zip(run.layer_names, drawn):
        drift = history[name] - history[name][:1]
        np.testing.assert_array_equal(band["steps"], run.invariant_steps)
        np.testing.assert_allclose(band["low"], drift.min(1))
        np.testing.assert_allclose(band["high"], drift.max(1))
        np.testing.assert_allclose(band["q_high"], np.quantile(drift, 0.9, axis=1))
        most = int(np.argmax(np.abs(drift[-1])))
        assert f"{name} (rescaling" in ws.drift.getPlotItem().titleLabel.text
        assert f"#{most} " in ws.drift.getPlotItem().titleLabel.text
    # the path: its points lie as the checkpoints do on their top-two principal plane (the
    # pairwise distances of the drawn points are those of the projections computed here)
    flat = np.stack(
        [
            torch.cat([t.reshape(-1) for t in run.checkpoint(int(s)).values()]).double().numpy()
            for s in run.checkpoint_steps
        ]
    )
    centred = flat - flat.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    projected = centred @ vt[:2].T
    points = np.column_stack(ws.path.points.getData())
    assert len(points) == len(run.checkpoint_steps)
    distances = lambda p: np.linalg.norm(p[:, None] - p[None], axis=2)  # noqa: E731
    np.testing.assert_allclose(distances(points), distances(projected), atol=1e-9 * np.abs(projected).max())
    np.testing.assert_allclose(points[-1], 0, atol=1e-12)  # centred on the latest checkpoint
    np.testing.assert_allclose(np.column_stack(ws.path.latest.getData()), points[-1:])
    # a click on a checkpoint selects it
    spot = ws.path.points.points()[3]
    ws.path.points.sigClicked.emit(ws.path.points, [spot], None)
    assert ws.model.selected_step == int(run.checkpoint_steps[3])
    np.testing.assert_allclose(np.column_stack(ws.path.selected.getData()), points[3:4])
    assert f"step {ws.model.selected_step}" in window.message_bar.text
    assert window.replay_dock.label.text() == ws.replay_note  # no "no finished run" here
    save_screenshot(window, "training-run-finished")


def flat(state) -> np.ndarray:
    return torch.cat([t.reshape(-1) for t in state.values()]).double().numpy()


def test_a_click_on_a_checkpoint_runs_a_toolkit_mode_around_it(window, qtbot, tmp_path):
    """Click a checkpoint, choose the extreme-curvature plane, press Open in toolkit: the toolkit
    tab is shown and its plane is centred on that checkpoint's θ; the run is still followed while
    the toolkit's job runs (another tab's job does not stop it)."""
    wait_until_idle(qtbot, window)
    run = finished_run(tmp_path / "done", steps=30)
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(32, 3, generator=g), torch.randn(32, 1, generator=g)  # the Writer's data
    np.savez(tmp_path / "data.npz", X=X.numpy(), Y=Y.numpy())
    window.open_run(str(tmp_path / "done"))
    wait_until_idle(qtbot, window)
    ws = window.workspaces["run"]
    apply_values(ws.parameters, {"toolkit": {"mode": "extreme curvature plane (bottom and top eigenvectors)"}})
    apply_values(ws.parameters, {"toolkit": {"data": str(tmp_path / "data.npz"), "activation": "relu"}})
    toolkit = window.workspaces["landscape"]
    toolkit.parameters["plane", "points"] = 5
    toolkit.parameters["plane", "dip_directions"] = 4
    assert not ws.open_button.isEnabled()
    step = int(run.checkpoint_steps[4])
    at = int(np.flatnonzero(ws.path.steps == step)[0])
    spot = ws.path.points.points()[at]
    ws.path.points.sigClicked.emit(ws.path.points, [spot], None)
    assert ws.open_button.isEnabled() and str(step) in ws.open_button.text()
    qtbot.mouseClick(ws.open_button, Qt.MouseButton.LeftButton)
    assert window.workspace is toolkit
    wait_until_idle(qtbot, window, timeout_ms=300000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    r = toolkit.result
    assert r is not None and r.extremes is not None and r.random_plane is not None
    # the plane lies around the checkpoint's θ: paper B's flat layout holds its weights and biases
    Ws, bs = unpack(r.network.arch, np.asarray(r.plane.theta))
    state = run.checkpoint(step)
    layers = [k for k in state if k.endswith(".weight")]
    for W, b, name in zip(Ws, bs, layers):
        np.testing.assert_allclose(W, state[name].double().numpy(), rtol=0, atol=1e-7)
        np.testing.assert_allclose(b, state[name.replace("weight", "bias")].double().numpy(), rtol=0, atol=1e-7)
    assert r.plane.theta.size == flat(state).size  # nothing else in θ
    assert "curvature" in toolkit.plane.heatmap.getPlotItem().titleLabel.text
    save_screenshot(window, "training-run-checkpoint-in-toolkit")


def test_following_goes_on_while_another_tab_runs(window, qtbot, tmp_path):
    """A run followed on the Training run tab is not stopped by Run on another tab: steps written
    while the toolkit's job runs are drawn."""
    wait_until_idle(qtbot, window)
    writer = Writer(tmp_path / "live")
    writer.step()
    writer.rec.flush()
    window.open_run(str(tmp_path / "live"))
    ws = window.workspaces["run"]
    qtbot.waitUntil(lambda: len(drawn_loss(ws)[0]) == 1, timeout=30000)
    window.load_preset("fig3-free", run=False)
    window.workspaces["topology"].parameters["optimizer", "steps"] = 20
    window.run()
    for _ in range(4):
        writer.step()
    writer.rec.flush()
    qtbot.waitUntil(lambda: len(drawn_loss(ws)[0]) == 5, timeout=30000)
    assert "following" in ws.status.text() and window.controller.lane_busy("follow") and not ws.stop_button.isHidden()
    qtbot.mouseClick(ws.stop_button, Qt.MouseButton.LeftButton)
    assert "not followed" in ws.status.text() and ws.stop_button.isHidden()
    writer.close()
    wait_until_idle(qtbot, window, timeout_ms=120000)


def test_a_dead_writer_is_said(window, qtbot, tmp_path):
    folder = tmp_path / "killed"
    wait_until_idle(qtbot, window)  # as above
    finished_run(folder, steps=12)
    manifest = json.loads((folder / fmt.MANIFEST).read_text())
    fmt.write_json(folder / fmt.MANIFEST, {**manifest, "finished": False})
    gone = subprocess.Popen(["true"])
    gone.wait()
    (folder / fmt.LOCK).write_text(json.dumps({"pid": gone.pid, "host": socket.gethostname(), "started": ""}))
    window.open_run(str(folder))
    wait_until_idle(qtbot, window)
    assert "writer died" in window.workspaces["run"].status.text()


def test_a_folder_that_is_not_a_run_is_one_line(window, qtbot, tmp_path):
    window.open_run(str(tmp_path))
    wait_until_idle(qtbot, window)
    assert "not a run folder" in window.message_bar.text


def test_the_edge_of_stability_preset_draws_the_sharpness_at_two_over_eta(window, qtbot):
    """The preset trains in the window's process and the tab follows its run: the sharpness it
    draws is the run's recorded one, which over the last half of the run lies at 2/η."""
    window.load_preset("edge-of-stability", steps=800)
    wait_until_idle(qtbot, window, timeout_ms=600000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    ws = window.workspaces["run"]
    run = open_run(ws.shown.run.folder)
    assert run.finished and run.steps[-1] == 800
    np.testing.assert_array_equal(ws.sharpness.curve.xData, run.sharpness_steps)
    np.testing.assert_array_equal(ws.sharpness.curve.yData, run.sharpness)
    edge = 2 / 0.1
    np.testing.assert_array_equal(ws.sharpness.edge.yData, edge)
    late = run.sharpness[run.sharpness_steps >= 400]
    np.testing.assert_allclose(late, edge, rtol=0.05)
    assert run.sharpness[0] < 0.4 * edge
    np.testing.assert_array_equal(drawn_loss(ws)[1], run.loss)
    assert max(band["high"][-1] - band["low"][-1] for band in ws.drift.drawn()) > 0  # the step moved c
    save_screenshot(window, "training-run-edge-of-stability")


def test_screenshot_of_a_run(qapp, tmp_path, capsys):
    from PySide6.QtGui import QImage

    from gui.headless import screenshot

    finished_run(tmp_path / "run", steps=20)
    out = tmp_path / "run.png"
    assert screenshot(None, str(out), (1200, 800), None, run_dir=str(tmp_path / "run")) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1200, 800)
    pixels = np.array([[image.pixelColor(x, y).value() for x in range(0, 1200, 40)] for y in range(0, 800, 40)])
    assert pixels.std() > 10
    with pytest.raises(Exception, match="not a run folder"):
        screenshot(None, str(out), (1200, 800), None, run_dir=str(tmp_path))
