"""The invariant-sets tab on a network that is not two-layer: a deep ReLU MLP as a .pt2 and as the
app's .npz is read in the job and shown per hidden layer; the dots drawn are each layer's c, the
✕ marks its locked units and the labels its law, all against engine.topology.unit_invariants."""

import html

import numpy as np
import pytest
import torch
from torch import nn

import resources
from engine.io.pt2_program import read_exported_module
from engine.topology.unit_invariants import layer_invariants

from ..conftest import save_screenshot

DATA = resources.path("data", "your-network.csv")  # two inputs, one output


def deep_mlp(seed: int = 3) -> nn.Sequential:
    """A 2-6-5-4-1 ReLU MLP with biases whose output weights, doubled, lock some last-layer units."""
    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(2, 6), nn.ReLU(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 1)
    ).double()
    with torch.no_grad():
        net[-1].weight.mul_(2.0)
    return net


def export_deep(path) -> object:
    """The MLP exported as the README tells users to (eval mode, a dynamic batch); its graph read back."""
    module = deep_mlp().eval()
    example = (torch.randn(8, 2, dtype=torch.float64),)
    dynamic = {"input": {0: torch.export.Dim("batch")}}
    torch.export.save(torch.export.export(module, example, dynamic_shapes=dynamic), path)
    return read_exported_module(path).module


def write_deep_npz(path) -> object:
    """The same MLP in the app's .npz (W1, b1, ..., activation, X, Y); the module it stands for."""
    module = deep_mlp()
    linears = [m for m in module if isinstance(m, nn.Linear)]
    arrays = {}
    for i, layer in enumerate(linears, 1):
        arrays[f"W{i}"] = layer.weight.detach().numpy()
        arrays[f"b{i}"] = layer.bias.detach().numpy()
    X = np.random.default_rng(0).normal(size=(12, 2))
    np.savez(path, activation="relu", X=X, Y=X[:, :1] * X[:, 1:], **arrays)
    return module


def assert_drawn_as(view, expected):
    """Each row's dots are the layer's c (in unit order), its ✕ the locked units, its label the law."""
    assert [r["name"] for r in view.rows] == [layer.name for layer in expected]
    assert len(view.dots) == len(expected) >= 3
    for i, layer in enumerate(expected):
        x, y = view.dots[i].getData()
        assert np.allclose(x, layer.c, rtol=1e-12, atol=0)
        assert np.all(np.abs(y + i) < 0.5)  # on its own row
        lx, _ = view.locks[i].getData()
        assert np.array_equal(lx, np.asarray(layer.c)[np.asarray(layer.locked, int)])
        assert view.rows[i]["locked"] == [int(k) for k in layer.locked]
        text = view.labels[i].textItem.toPlainText()
        assert f": {layer.law}," in text and f"{len(layer.locked)} locked" in text
        assert f"c < 0: {layer.negative_share:.0%}" in text
        assert html.escape(layer.reason) in view.caption.text()  # the law's reason, in the caption


@pytest.mark.parametrize("kind", ["pt2", "npz"])
def test_a_deep_network_file_shows_each_layers_c_its_law_and_locked_units(window, qtbot, tmp_path, kind):
    ws = window.workspaces["topology"]
    window.show_workspace("topology")
    path = tmp_path / f"deep.{kind}"
    module = export_deep(path) if kind == "pt2" else write_deep_npz(path)
    expected = layer_invariants(module)
    assert [layer.law for layer in expected] == ["rescaling"] * 3
    assert len(expected[-1].locked) > 0  # the seed gives the last hidden layer locked units to mark
    assert all(len(layer.locked) == 0 for layer in expected[:-1])
    with qtbot.waitSignal(window.run_finished, timeout=60000):
        assert ws.load_network(str(path), str(DATA) if kind == "pt2" else None)
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert ws.pages.currentWidget() is ws.layers and ws.gl_views() == []
    assert_drawn_as(ws.layers, expected)
    assert "no run" in ws.layers.caption.text() and "3 hidden layers" in ws.layers.caption.text()
    assert ws.timeline_length() == 0 and ws.session_state() == {}  # shown at its weights, not trained
    assert not ws.model.starting and ws.model.context is None  # nothing waits to be laid out
    if kind == "pt2":
        save_screenshot(ws, "topology_deep_layers")
    # Run from the panel's network file reads it in the worker process and shows the same, untrained
    ws.reset()
    assert ws.pages.currentWidget() is not ws.layers
    with qtbot.waitSignal(window.run_finished, timeout=120000):
        window.run(steps=5)
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert ws.pages.currentWidget() is ws.layers and ws.timeline_length() == 0
    assert_drawn_as(ws.layers, expected)


def test_a_two_layer_pt2_still_goes_to_the_quadrics(window, qtbot, tmp_path):
    """A .pt2 of paper A's shape is read by the two-layer reader as before, not as layers."""
    ws = window.workspaces["topology"]
    module = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).double()
    torch.export.save(torch.export.export(module, (torch.zeros(4, 2, dtype=torch.float64),)), tmp_path / "two.pt2")
    with qtbot.waitSignal(window.run_finished, timeout=60000):
        assert ws.load_network(str(tmp_path / "two.pt2"), str(DATA))
    assert window.last_outcome == "succeeded", window.message_bar.text
    assert ws.pages.currentWidget() is not ws.layers and len(ws.gl_views()) == 3


def test_a_cnn_pt2_is_read_as_layers_with_its_laws_and_a_linear_one_says_so(tmp_path):
    """Any architecture goes to the layers view, each law and reason as the engine gives them (the
    residual CNN's batch norms give ``scale``, not ``rescaling``); a linear model is one line."""
    from engine.core.errors import EngineInputError
    from engine.core.progress import run_to_completion
    from gui.present.layer_invariants import LayersShown, network_file_job
    from tests.models import export_cnn, trained_cnn

    path = export_cnn(trained_cnn(), tmp_path / "cnn.pt2")
    expected = layer_invariants(read_exported_module(path).module)
    shown = run_to_completion(network_file_job(path, None, None, None, None, None, 16))
    assert isinstance(shown, LayersShown)
    assert [(r["name"], r["law"], r["reason"]) for r in shown.rows] == [(x.name, x.law, x.reason) for x in expected]
    assert "scale" in {r["law"] for r in shown.rows}
    for row, layer in zip(shown.rows, expected):
        assert np.array_equal(row["c"], layer.c) and row["locked"] == [int(k) for k in layer.locked]
        assert row["band"] == tuple(np.percentile(layer.c, (10, 90))) and row["max"] == layer.c.max()
    linear = nn.Sequential(nn.Linear(2, 1)).double()
    torch.export.save(torch.export.export(linear, (torch.zeros(3, 2, dtype=torch.float64),)), tmp_path / "lin.pt2")
    with pytest.raises(EngineInputError, match="no hidden units"):
        run_to_completion(network_file_job(tmp_path / "lin.pt2", None, None, None, None, None, 16))
