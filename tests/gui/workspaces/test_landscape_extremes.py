"""The toolkit tab's extreme-curvature plane (issue #57), its persistence diagram and basin map,
and ``landscape-lens show``'s drawing of a saved result. What each view draws is checked against
numbers computed here: the loss by a plain forward loop over the original CNN, the Hessian
dense, the persistence pairs by a union-find of this file's own, the basins by
engine.landscape.persistence.basin_map at the threshold the tree holds."""

import copy

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.landscape import directions as D
from engine.landscape import persistence as P
from gui.presets import apply_values
from gui.views.basin_map_view import basin_colors
from tests.models import export_cnn, trained_cnn, write_data

from ..conftest import save_screenshot, wait_until_idle
from .test_minima_workspace import open_quick

FLOAT64_REL = 1e-10


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cnn")
    model = trained_cnn(0)
    return {"model": model, "pt2": export_cnn(model, folder / "cnn.pt2"), "data": write_data(folder / "D.npz", n=12)}


def cnn_loss(model, data, theta) -> float:
    """Cross-entropy of ``model`` (eval mode, float64) with the flat parameters ``theta``."""
    net = copy.deepcopy(model).double().eval()
    torch.nn.utils.vector_to_parameters(torch.as_tensor(np.asarray(theta), dtype=torch.float64), net.parameters())
    arrays = np.load(data)
    X, Y = torch.from_numpy(arrays["X"]).double(), torch.from_numpy(arrays["Y"])
    with torch.no_grad():
        return float(torch.nn.functional.cross_entropy(net(X), Y))


def cnn_hessian_and_gradient(model, data):
    """The dense Hessian and the gradient of the CNN's loss at its own parameters (torch.func)."""
    net = copy.deepcopy(model).double().eval()
    names = [n for n, _ in net.named_parameters()]
    shapes = [p.shape for _, p in net.named_parameters()]
    theta = torch.cat([p.detach().reshape(-1) for _, p in net.named_parameters()])
    arrays = np.load(data)
    X, Y = torch.from_numpy(arrays["X"]).double(), torch.from_numpy(arrays["Y"])

    def loss(flat):
        parts = torch.split(flat, [int(np.prod(s)) for s in shapes])
        params = {n: p.reshape(s) for n, p, s in zip(names, parts, shapes)}
        return torch.nn.functional.cross_entropy(torch.func.functional_call(net, params, (X,)), Y)

    H = torch.func.hessian(loss)(theta).numpy()
    g = torch.func.grad(loss)(theta).numpy()
    return 0.5 * (H + H.T), g


def union_find_pairs(L: np.ndarray) -> list[tuple[float, float]]:
    """0-dimensional sublevel persistence of ``L`` (8 neighbours) by the textbook union-find: the
    vertices in (value, flat index) order, each joining its entered neighbours' components, the
    younger (higher minimum, then later index) dying at the vertex's value."""
    rows, cols = L.shape
    order = np.lexsort((np.arange(L.size), L.ravel()))
    parent, birth, pairs = {}, {}, []

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for v in order.tolist():
        r, c = divmod(v, cols)
        parent[v], birth[v] = v, (L.flat[v], v)
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                u = (r + dr) * cols + (c + dc)
                if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols and u in parent:
                    a, b = find(u), find(v)
                    if a != b:
                        elder, younger = (a, b) if birth[a] < birth[b] else (b, a)
                        if birth[younger][1] != v:  # a vertex joining its own fresh component: no pair
                            pairs.append((float(birth[younger][0]), float(L.flat[v])))
                        parent[younger] = elder
    pairs.append((float(L.min()), np.inf))
    return sorted(pairs)


def assert_topology_drawn(ws, loss):
    """The diagram's points are the union-find's pairs; the map's colours are basin_map's labels
    at the tree's threshold (share × the loss range)."""
    share = ws.parameters["plane", "basin_share"]
    shift = ws.persistence.offset  # a diagram of nearly equal values is drawn relative to its lowest birth
    finite = [xy + shift for xy in ws.persistence.points.getData()]
    top = [xy + shift for xy in ws.persistence.infinite.getData()]
    drawn = sorted(zip(finite[0].tolist(), finite[1].tolist())) + [(float(top[0][0]), np.inf)]
    want = union_find_pairs(loss)
    assert np.allclose(sorted(drawn), want, rtol=1e-15, atol=0)
    assert [d for _, d in sorted(drawn)] == pytest.approx([d for _, d in want], rel=1e-15)
    # the global minimum's infinite death on the diagram's top edge, above every finite value
    assert top[1][0] > max(v for pair in want for v in pair if np.isfinite(v))
    assert top[1][0] == pytest.approx(ws.persistence.diagonal.getData()[1].max() + shift)
    threshold = share * float(np.ptp(loss))
    labels = P.basin_map(loss, threshold)
    image = ws.basins.image
    colours = image.lut[image.image]  # (rows β, columns α, 4): what the map shows
    np.testing.assert_array_equal(colours, basin_colors(labels).reshape(*labels.shape, 4).transpose(1, 0, 2))
    assert f"{len(np.unique(labels))} basin" in ws.basins.getPlotItem().titleLabel.text
    return labels


def test_extreme_plane_beside_a_random_one_on_a_cnn(window, qtbot, cnn, tmp_path, monkeypatch):
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    groups = {"plane": {"points": 9, "extent": 0.5, "directions": "hessian-extremes", "dip_directions": 12}}
    apply_values(ws.parameters, {"mode": "plane", **groups})
    ws.load_network(str(cnn["pt2"]), "", str(cnn["data"]))
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    r = ws.result
    plane, random, dips, e = r.plane, r.random_plane, r.dips, r.extremes
    model, data = cnn["model"], cnn["data"]
    # d1, d2: the dense Hessian's bottom and top eigenvectors
    H, g = cnn_hessian_and_gradient(model, data)
    values, vectors = np.linalg.eigh(H)
    assert abs(plane.d1 @ vectors[:, 0]) >= 0.999 and abs(plane.d2 @ vectors[:, -1]) >= 0.999
    assert e.bottom_eigenvalue == pytest.approx(values[0], abs=1e-6 * abs(values).max())
    assert e.gradient_norm == pytest.approx(np.linalg.norm(g), rel=1e-8)
    # both maps draw the loss at their grid points, over the same extent
    for view, p in ((ws.plane, plane), (ws.random_plane, random)):
        np.testing.assert_array_equal(p.alpha, plane.alpha)
        for i, j in ((0, 0), (4, 4), (2, 7)):
            want = cnn_loss(model, data, p.theta + p.alpha[i] * p.d1 + p.beta[j] * p.d2)
            assert view.image.image[j, i] == pytest.approx(want, rel=FLOAT64_REL)
    assert ws.random_plane.isVisible() and not ws.plane.surface_view.isVisible()
    # the random plane's directions are filter-normalised
    first = next(p for p in model.parameters() if p.ndim > 1)
    rows = first.detach().double().reshape(len(first), -1).norm(dim=1).numpy()
    piece = random.d1[: first.numel()].reshape(len(first), -1)
    np.testing.assert_allclose(np.linalg.norm(piece, axis=1), rows, rtol=1e-12)
    # the dips: each random direction's losses are the CNN's; the share the ones below L(θ)
    shapes = [tuple(p.shape) for p in model.parameters()]
    d = D.directions(shapes, plane.theta, 1, 0, "filter")[0]  # the first direction: seed 0's first draw
    for i in (0, len(dips.t) - 1):
        assert dips.losses[0, i] == pytest.approx(cnn_loss(model, data, plane.theta + dips.t[i] * d), rel=1e-9)
    below = int((dips.losses < cnn_loss(model, data, plane.theta) - 1e-12 * plane.L_star).any(axis=1).sum())
    text = ws.verdict.text()
    assert f"{below} of 12 random filter directions" in text
    assert "not a critical point" in text  # a CNN at its initialisation: ‖∇L‖ is far from 0
    # persistence diagram and basin map of the extreme plane, then a new threshold without a job
    assert_topology_drawn(ws, plane.loss)
    ws.parameters["plane", "basin_share"] = 0.3
    assert not window.controller.busy
    assert_topology_drawn(ws, plane.loss)
    ws.parameters["plane", "basin_share"] = 0.02
    for theme in ("light", "dark"):
        window.set_look(False, theme)
        qtbot.wait(50)
        save_screenshot(window, f"toolkit-extremes-cnn-{theme}")
    window.set_look(True, "light")
    qtbot.wait(50)
    save_screenshot(window, "toolkit-extremes-cnn-presentation")
    window.set_look(False, "light")
    # a saved session draws the same in a fresh window, with no job run
    from gui import session
    from gui.main_window import MainWindow

    from ..conftest import fail_on_any_job_but_a_layout

    path = tmp_path / "extremes.lens"
    session.write_session(path, session.capture_state(window))
    fail_on_any_job_but_a_layout(monkeypatch)
    fresh = MainWindow()
    qtbot.addWidget(fresh)
    fresh.resize(1600, 960)
    fresh.show()
    assert session.load_session(fresh, path), fresh.message_bar.text
    again = fresh.workspaces["landscape"]
    np.testing.assert_array_equal(again.random_plane.image.image, ws.random_plane.image.image)
    assert again.verdict.text() == text and again.random_plane.isVisible()
    assert_topology_drawn(again, plane.loss)


def test_extreme_plane_of_paper_b_network_says_its_verdict(window, qtbot):
    open_quick(window, qtbot, "nonattr-shallow")
    ws = window.workspaces["landscape"]
    window.show_workspace("landscape")
    groups = {"plane": {"points": 11, "extent": 0.5, "directions": "hessian-extremes", "dip_directions": 50}}
    apply_values(ws.parameters, {"mode": "plane", **groups})
    window.run()
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert window.last_outcome == "succeeded", window.message_bar.text
    r = ws.result
    net, e = r.network, r.extremes
    values, vectors = np.linalg.eigh(mlp.hessian(net.arch, net.params, net.X, net.Y))
    assert abs(r.plane.d1 @ vectors[:, 0]) >= 0.999 and abs(r.plane.d2 @ vectors[:, -1]) >= 0.999
    _, g = mlp.loss_and_grad(net.arch, net.params, net.X, net.Y)
    critical = np.linalg.norm(g) < 1e-8
    saddle = critical and values[0] + e.bottom_error < 0
    kind = "saddle" if saddle else ("minimum or flat" if critical else "not a critical point")
    assert ws.verdict.text().startswith(f"<b>{kind} (")
    drawn = ws.plane.image.image
    for i, j in ((0, 0), (5, 5), (3, 9)):
        theta = net.params + r.plane.alpha[i] * r.plane.d1 + r.plane.beta[j] * r.plane.d2
        assert drawn[j, i] == pytest.approx(mlp.loss(net.arch, theta, net.X, net.Y), rel=1e-10)
    assert_topology_drawn(ws, r.plane.loss)
    save_screenshot(window, "toolkit-extremes-paper-b")


def test_show_draws_a_saved_plane_without_a_job(window, qtbot, cnn, tmp_path, monkeypatch):
    from landscape_lens.cli import main
    from landscape_lens.commands.show import open_shown, saved_view

    from ..conftest import fail_on_any_job_but_a_layout

    out = tmp_path / "out"
    assert main(["landscape", str(cnn["pt2"]), "--data", str(cnn["data"]), "--plane", "7", "--out", str(out)]) == 0
    saved = np.load(out / "plane.npz")
    result, state = saved_view(out / "plane.npz")
    fail_on_any_job_but_a_layout(monkeypatch)
    open_shown(window, result, state)
    ws = window.workspaces["landscape"]
    assert window.workspace is ws
    np.testing.assert_array_equal(ws.plane.image.image, saved["loss"].T)
    assert_topology_drawn(ws, saved["loss"])
