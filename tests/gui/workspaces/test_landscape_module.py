"""The toolkit tab on any PyTorch model: a residual CNN with batch norm, exported with torch.export,
loaded through the tab's own File ▸ Load network action. What each page draws is recomputed here
with a plain eval-mode forward loop over the original module (float64), a dense Hessian and
numpy's SVD; a saved session draws the same in a fresh window with no job run (and in the dark
theme); a bad archive is one line and changes nothing."""

import copy
import threading

import numpy as np
import pyqtgraph as pg
import pytest
import torch
from PySide6.QtCore import QSettings

from gui import session
from gui.main_window import MainWindow
from gui.presets import apply_values
from tests.models import ResidualCNN, crafted_archives, export_cnn, trained_cnn, write_data

from ..conftest import fail_on_any_job_but_a_layout, save_screenshot, wait_until_idle
from .test_landscape_workspace import assert_contours_on_their_levels, assert_density_is_the_quadrature

# Both sides evaluate in float64 (ModuleLoss copies the exported weights into float64; the check
# runs the original module in .double()): what differs is only the order of the rounding in a few
# thousand operations a sample, ~1e-13 relative, far inside this bound.
FLOAT64_REL = 1e-10


@pytest.fixture(autouse=True)
def private_settings(tmp_path):
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "cfg"))
    QSettings().clear()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The CNN (batch norm with running statistics), a second one, four training checkpoints and
    the data, as a user brings them."""
    folder = tmp_path_factory.mktemp("cnn")
    model, other = trained_cnn(0), trained_cnn(1)
    generator = torch.Generator().manual_seed(5)
    drift = {k: torch.randn(p.shape, generator=generator) for k, p in model.named_parameters()}
    checkpoints = []
    for t in range(4):  # a made-up training run: θ_t drifts along a curve to the exported model
        state = dict(model.state_dict())
        for k, d in drift.items():
            state[k] = state[k] + 0.05 * (3 - t) * d + 0.02 * (3 - t) ** 2 * d.flip(-1)
        checkpoints.append(folder / f"ckpt_{t:03d}.pt")
        torch.save(state, checkpoints[-1])
    return {
        "model": model,
        "other": other,
        "pt2": export_cnn(model, folder / "cnn.pt2"),
        "pt2_b": export_cnn(other, folder / "cnn_b.pt2"),
        "data": write_data(folder / "D.npz", n=12),
        "checkpoints": checkpoints,
        "folder": folder,
    }


# ------------------------------------------------------------------ the independent evaluation
def data_tensors(files):
    arrays = np.load(files["data"])
    return torch.from_numpy(arrays["X"]).double(), torch.from_numpy(arrays["Y"])


def eval_loss(model, theta, files, state=None):
    """Cross-entropy and accuracy of ``model`` (eval mode, float64) with its parameters the flat
    ``theta`` (named_parameters order) and its buffers ``state``'s: one plain forward loop."""
    net = copy.deepcopy(model).double().eval()
    if state is not None:
        net.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in state.items()})
    torch.nn.utils.vector_to_parameters(torch.as_tensor(np.asarray(theta), dtype=torch.float64), net.parameters())
    X, Y = data_tensors(files)
    with torch.no_grad():
        logits = torch.cat([net(X[k : k + 5]) for k in range(0, len(X), 5)])
    return float(torch.nn.functional.cross_entropy(logits, Y)), float((logits.argmax(1) == Y).double().mean())


def flat(model_or_state) -> np.ndarray:
    named = model_or_state.named_parameters() if hasattr(model_or_state, "named_parameters") else None
    if named is not None:
        return torch.cat([p.detach().double().reshape(-1) for _, p in named]).numpy()
    names = [n for n, _ in ResidualCNN().named_parameters()]
    return torch.cat([model_or_state[n].double().reshape(-1) for n in names]).numpy()


# ------------------------------------------------------------------ driving the tab
@pytest.fixture
def toolkit(window):
    window.show_workspace("landscape")
    return window.workspaces["landscape"]


def load(window, qtbot, ws, files, mode, **groups):
    """The CNN through the tab's own load action, as File ▸ Load network does after its dialog."""
    apply_values(ws.parameters, {"mode": mode, **groups})
    ws.load_network(str(files["pt2"]), "", str(files["data"]))
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    return ws.result


def reopened(qtbot, window, tmp_path, monkeypatch, name):
    """The session saved now, opened in a fresh window with no job allowed; shot in light and dark."""
    save_screenshot(window, f"{name}-light")
    path = tmp_path / f"{name}.lens"
    session.write_session(path, session.capture_state(window))
    fail_on_any_job_but_a_layout(monkeypatch)
    fresh = MainWindow()
    qtbot.addWidget(fresh)
    fresh.resize(1600, 960)
    fresh.show()
    assert session.load_session(fresh, path), fresh.message_bar.text
    again = fresh.workspaces["landscape"]
    assert fresh.workspace is again and again.shown.keys() == window.workspaces["landscape"].shown.keys()
    fresh.set_look(False, "dark")
    qtbot.wait(50)
    save_screenshot(fresh, f"{name}-dark")
    return again


# ------------------------------------------------------------------ the four pages
def test_filter_plane_of_a_loaded_cnn_is_its_loss(window, qtbot, toolkit, files, tmp_path, monkeypatch):
    ws = toolkit
    groups = {"plane": {"points": 9, "extent": 0.5, "directions": "filter", "ignore_biases": True, "seed": 3}}
    result = load(window, qtbot, ws, files, "plane", **groups)
    plane, model = result.plane, files["model"]
    assert result.network.param_names == tuple(n for n, _ in model.named_parameters())
    theta = flat(model)
    np.testing.assert_array_equal(plane.theta, theta)  # the archive's weights are the module's, exactly
    drawn = ws.plane.image.image  # rows: β, columns: α
    assert drawn.shape == (9, 9)
    for i, j in ((0, 0), (4, 4), (2, 7), (8, 1)):
        want, _ = eval_loss(model, theta + plane.alpha[i] * plane.d1 + plane.beta[j] * plane.d2, files)
        assert drawn[j, i] == pytest.approx(want, rel=FLOAT64_REL)
    assert plane.L_star == pytest.approx(eval_loss(model, theta, files)[0], rel=FLOAT64_REL)
    # Li et al.'s filter normalisation: every conv output channel and linear row of d1 has θ's
    # norm there; --ignore biasbn zeroes every 1-D parameter (biases, batch norm's weights)
    offset = 0
    for name, p in model.named_parameters():
        size = p.numel()
        for d in (plane.d1, plane.d2):
            piece = d[offset : offset + size].reshape(p.shape)
            if p.ndim == 1:
                assert not piece.any(), name
            else:
                rows = p.detach().double().reshape(len(p), -1).norm(dim=1).numpy()
                np.testing.assert_allclose(np.linalg.norm(piece.reshape(len(p), -1), axis=1), rows, rtol=1e-12)
        offset += size
    assert_contours_on_their_levels(ws.plane, plane.alpha, plane.beta, plane.loss)
    assert "cross-entropy" in ws.plane.heatmap.getPlotItem().titleLabel.text  # integer labels: the default

    again = reopened(qtbot, window, tmp_path, monkeypatch, "h9-plane")
    np.testing.assert_array_equal(again.plane.image.image, drawn)
    assert len(again.plane.isocurves) == len(ws.plane.isocurves) > 0


def test_checkpoints_path_on_their_pca_plane(window, qtbot, toolkit, files, tmp_path, monkeypatch):
    ws = toolkit
    listed = "; ".join(str(p) for p in files["checkpoints"])
    result = load(window, qtbot, ws, files, "pca", plane={"points": 7}, training={"checkpoints": listed})
    pca = result.pca
    states = [torch.load(p, weights_only=True) for p in files["checkpoints"]]
    params = np.stack([flat(s) for s in states])
    center = params[-1]
    # PCA by numpy's SVD of the centred θ_t − θ_T: the same plane, up to each axis' sign
    M = params - center
    _, _, Vt = np.linalg.svd(M - M.mean(0), full_matrices=False)
    np.testing.assert_allclose(np.abs(np.sum(Vt[:2] * pca.components, axis=1)), 1.0, atol=1e-10)
    lines = [item for item in ws.plane.paths if isinstance(item, pg.PlotDataItem) and item.name() == "checkpoints"]
    assert len(lines) == 1
    x, y = lines[0].getData()
    np.testing.assert_allclose(np.column_stack([x, y]), M @ pca.components.T, atol=1e-12)
    # the surface around the last checkpoint, with its batch norm statistics
    plane = pca.plane
    for i, j in ((0, 0), (3, 5)):
        point = center + plane.alpha[i] * pca.components[0] + plane.beta[j] * pca.components[1]
        want, _ = eval_loss(files["model"], point, files, states[-1])
        assert ws.plane.image.image[j, i] == pytest.approx(want, rel=FLOAT64_REL)
    label = ws.plane.heatmap.getPlotItem().getAxis("bottom").labelText
    assert f"{100 * pca.explained[0]:.1f} %" in label

    again = reopened(qtbot, window, tmp_path, monkeypatch, "h9-pca")
    x2, y2 = next(
        i for i in again.plane.paths if isinstance(i, pg.PlotDataItem) and i.name() == "checkpoints"
    ).getData()
    np.testing.assert_array_equal(x2, x)
    np.testing.assert_array_equal(y2, y)


def test_interpolation_draws_loss_barrier_and_accuracy(window, qtbot, toolkit, files, tmp_path, monkeypatch):
    ws = toolkit
    load(window, qtbot, ws, files, "interpolation", interpolation={"second": str(files["pt2_b"]), "points": 21})
    a, b = files["model"], files["other"]
    theta_a, theta_b = flat(a), flat(b)
    state_a, state_b = a.state_dict(), b.state_dict()
    x, loss = ws.interpolation.getPlotItem().listDataItems()[0].getData()
    x_acc, accuracy = ws.accuracy.getPlotItem().listDataItems()[0].getData()
    assert ws.accuracy.isVisible()
    np.testing.assert_array_equal(x, x_acc)
    assert x[0] == pytest.approx(-0.5) and x[-1] == pytest.approx(1.5)
    for k in (0, 5, 10, 15, 20):
        t = x[k]
        # batch norm's running statistics are interpolated with the weights: α = 0, 1 are the two models
        mixed = {
            n: (1 - t) * v.double() + t * state_b[n].double() if v.is_floating_point() else v
            for n, v in state_a.items()
        }
        want_loss, want_acc = eval_loss(a, (1 - t) * theta_a + t * theta_b, files, mixed)
        assert loss[k] == pytest.approx(want_loss, rel=FLOAT64_REL)
        assert accuracy[k] == pytest.approx(want_acc, abs=1e-15)  # a share of 12 labels
    ends = [eval_loss(a, theta_a, files), eval_loss(b, theta_b, files, state_b)]
    inside = (x >= 0) & (x <= 1)
    chord = lambda values, lo, hi: float((values - ((1 - x) * lo + x * hi))[inside].max())
    shown = ws.shown["interpolation"]
    assert shown["barrier"] == pytest.approx(chord(loss, ends[0][0], ends[1][0]), rel=1e-12)
    assert shown["accuracy_barrier"] == pytest.approx(chord(-accuracy, -ends[0][1], -ends[1][1]), abs=1e-15)
    assert f"{shown['barrier']:.3g}" in ws.interpolation.getPlotItem().titleLabel.text

    again = reopened(qtbot, window, tmp_path, monkeypatch, "h9-interpolation")
    np.testing.assert_array_equal(again.accuracy.getPlotItem().listDataItems()[0].getData()[1], accuracy)
    np.testing.assert_array_equal(again.interpolation.getPlotItem().listDataItems()[0].getData()[1], loss)
    assert again.accuracy.isVisibleTo(again)


def test_density_with_the_cnns_top_eigenvalues_and_trace(window, qtbot, toolkit, files, tmp_path, monkeypatch):
    ws = toolkit
    result = load(window, qtbot, ws, files, "density", density={"probes": 3, "steps": 20})
    d, h = result.density, result.hessian
    assert_density_is_the_quadrature(ws.density, d)
    # the dense Hessian of the original module, by autograd
    model, (X, Y) = copy.deepcopy(files["model"]).double().eval(), data_tensors(files)
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]

    def loss_of(theta):
        params = {n: t.reshape(s) for n, t, s in zip(names, torch.split(theta, sizes), shapes)}
        return torch.nn.functional.cross_entropy(torch.func.functional_call(model, params, (X,)), Y)

    H = torch.autograd.functional.hessian(loss_of, torch.from_numpy(flat(model))).numpy()
    eigs = np.linalg.eigvalsh(0.5 * (H + H.T))[::-1]
    # a Ritz pair with residual r has an eigenvalue within ‖r‖ (symmetric H): the top three are those
    np.testing.assert_array_less(np.abs(h.eigenvalues - eigs[:3]), h.residuals + 1e-10 * eigs[0])
    assert abs(h.trace - np.trace(H)) <= 4 * h.trace_se + 1e-10 * abs(np.trace(H))
    lo, hi = d.extremes  # Ritz values lie inside the spectrum
    assert eigs[-1] - 1e-8 * eigs[0] <= lo and hi <= eigs[0] + 1e-8 * eigs[0]
    title = ws.density.getPlotItem().titleLabel.text
    assert f"{h.eigenvalues[0]:.4g}" in title and f"{h.trace:.4g}" in title

    again = reopened(qtbot, window, tmp_path, monkeypatch, "h9-density")
    np.testing.assert_array_equal(again.density.curve.getData()[1], ws.density.curve.getData()[1])
    assert again.density.getPlotItem().titleLabel.text == title


# ------------------------------------------------------------------ bad files
def test_a_bad_archive_is_one_line_and_changes_nothing(window, qtbot, toolkit, files, tmp_path):
    ws = toolkit
    load(window, qtbot, ws, files, "plane", plane={"points": 5})
    drawn, shown = ws.plane.image.image.copy(), ws.shown
    marker = tmp_path / "ran"
    broken = tmp_path / "broken.pt2"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    bad = [crafted_archives(files["pt2"], tmp_path, marker)["pickled_weight"], broken]
    for path in bad:
        ws.load_network(str(path), "", str(files["data"]))
        wait_until_idle(qtbot, window, timeout_ms=120000)
        qtbot.waitUntil(lambda: ws.parameters["network", "path"] == str(files["pt2"]), timeout=5000)
        assert window.last_outcome == "failed"
        text = window.message_bar.text
        assert text and len(text.splitlines()) == 1 and "Traceback" not in text, text
        assert str(path.name) in text, text
        assert ws.shown is shown
        np.testing.assert_array_equal(ws.plane.image.image, drawn)
    assert not marker.exists()


def test_cancelling_a_load_stops_its_points_and_keeps_what_was_shown(window, qtbot, toolkit, files):
    ws = toolkit
    load(window, qtbot, ws, files, "plane", plane={"points": 5})
    shown, drawn = ws.shown, ws.plane.image.image.copy()
    apply_values(ws.parameters, {"plane": {"points": 201}})  # 40,401 passes over the data: minutes
    ws.load_network(str(files["pt2_b"]), "", str(files["data"]))
    qtbot.waitUntil(lambda: "plane point" in window.status_label.text(), timeout=120000)
    window.cancel()
    wait_until_idle(qtbot, window, timeout_ms=120000)
    assert window.last_outcome == "cancelled"
    # the helper thread evaluating the points sees the stop and ends
    qtbot.waitUntil(lambda: not any(t.name == "engine-wait-for" for t in threading.enumerate()), timeout=60000)
    qtbot.waitUntil(lambda: ws.parameters["network", "path"] == str(files["pt2"]), timeout=5000)
    assert ws.shown is shown
    np.testing.assert_array_equal(ws.plane.image.image, drawn)
