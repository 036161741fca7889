"""The papers' lenses through ``import landscape_lens as ll``: each equals the command line's or an
independent computation from the weights themselves."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

import landscape_lens as ll
from engine.io.netfile import save_network


def sigmoid_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 3), nn.Sigmoid(), nn.Linear(3, 1)).double()


def test_inspect_of_a_module_equals_the_command_lines_report_of_its_file(tmp_path):
    from engine.core import mlp
    from engine.minima.report import inspect_and_split

    model = sigmoid_mlp()
    X, Y = torch.randn(15, 2, dtype=torch.float64), torch.randn(15, dtype=torch.float64)
    Ws = [model[0].weight.detach().numpy(), model[2].weight.detach().numpy()]
    bs = [model[0].bias.detach().numpy(), model[2].bias.detach().numpy()]
    arch = mlp.arch_of(Ws, bs, "sigmoid")
    path = save_network(tmp_path / "net.npz", arch, mlp.pack(Ws, bs), X.numpy(), Y.numpy())
    api = ll.inspect(model, (X, Y), progress=False)
    cli = inspect_and_split(path)
    for key in ("loss", "grad_norm", "critical_point", "n_params", "gamma_construction"):
        assert api[key] == cli[key], key
    assert api["hessian"] == cli["hessian"]
    assert ll.inspect(path, progress=False)["loss"] == cli["loss"]


def test_inspect_refuses_what_paper_b_does_not_cover():
    relu = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    with pytest.raises(ll.APIInputError, match="smooth activation"):
        ll.inspect(relu, (torch.randn(5, 2), torch.randn(5)))
    with pytest.raises(ll.APIInputError, match="Sequential"):
        ll.inspect(nn.Linear(2, 1), (torch.randn(5, 2), torch.randn(5)))


def test_invariants_equal_the_weights_sums_for_a_module_and_its_file(tmp_path):
    from engine.core import mlp

    torch.manual_seed(1)
    relu = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 1)).double()
    W = [m.weight.detach().numpy() for m in relu[0::2]]
    b = [m.bias.detach().numpy() for m in relu[0::2]]
    expected = [(W[k] ** 2).sum(1) + b[k] ** 2 - (W[k + 1] ** 2).sum(0) for k in range(2)]
    layers = ll.invariants(relu)
    assert [layer.name for layer in layers] == ["0.weight", "2.weight"]
    for layer, c in zip(layers, expected):
        np.testing.assert_allclose(layer.c, c, rtol=1e-12)
        assert layer.law == "rescaling"
    np.testing.assert_array_equal(layers[1].locked, np.flatnonzero(expected[1] < 0))
    arch = mlp.landscape_arch((3, 5, 4, 1), "relu", True)
    path = save_network(tmp_path / "relu.npz", arch, mlp.pack(W, b), np.zeros((2, 3)), np.zeros(2))
    for from_file, from_module in zip(ll.invariants(path), layers):
        np.testing.assert_allclose(from_file.c, from_module.c, rtol=1e-12)


def test_invariant_drift_over_checkpoints_equals_the_weights_differences():
    torch.manual_seed(2)
    relu = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1)).double()
    X, Y = torch.randn(30, 2, dtype=torch.float64), torch.randn(30, 1, dtype=torch.float64)
    opt = torch.optim.SGD(relu.parameters(), lr=0.05)
    states = []
    for _ in range(5):
        states.append(copy.deepcopy(relu.state_dict()))
        opt.zero_grad()
        ((relu(X) - Y) ** 2).mean().backward()
        opt.step()

    def c(state):
        w, bias, v = state["0.weight"].numpy(), state["0.bias"].numpy(), state["2.weight"].numpy()
        return (w**2).sum(1) + bias**2 - (v**2).sum(0)

    (name, drift), = ll.invariant_drift(relu, states)  # fmt: skip
    assert name == "0.weight"
    np.testing.assert_allclose(drift, np.stack([c(s) - c(states[0]) for s in states]), rtol=1e-12, atol=1e-15)


def test_persistence_of_a_plane_is_what_its_file_holds(tmp_path):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 1))
    plane = ll.plane(model, (torch.randn(20, 2), torch.randn(20)), points=15, extent=3.0, progress=False)
    pairs = ll.persistence(plane)
    assert np.isinf(pairs.death).sum() == 1 and pairs.birth.min() == plane.loss.min()
    with np.load(plane.save(tmp_path / "plane.npz"), allow_pickle=False) as z:
        for name in ("birth", "death", "birth_index", "death_index"):
            np.testing.assert_array_equal(z[f"persistence_{name}"], getattr(pairs, name))
    with pytest.raises(ll.APIInputError):
        ll.persistence(np.full((3, 3), np.nan))


def test_show_opens_the_window_on_the_saved_file_in_its_own_process(tmp_path, monkeypatch):
    import subprocess

    started = []

    class Window:
        def __init__(self, argv):
            started.append(argv)

        def wait(self):
            return 0

    monkeypatch.setattr(subprocess, "Popen", Window)
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    plane = ll.plane(model, (torch.randn(8, 2), torch.randn(8)), points=3, progress=False)
    ll.show(plane, wait=True)
    argv = started[0]
    assert argv[1:4] == ["-m", "landscape_lens", "show"]
    np.testing.assert_array_equal(ll.load(argv[4]).loss, plane.loss)
    with pytest.raises(ll.APIInputError, match="no such file"):
        ll.show(tmp_path / "missing.npz")
    with pytest.raises(ll.APIInputError, match="expected an API result"):
        ll.show(42)
