"""pt2io: an exported nn.Sequential loads as the same network, without unpickling anything."""

import numpy as np
import pytest
import torch
from torch import nn

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.io import pt2 as pt2io
from tests.files import pickled_pt2


def export(model, path, n_in):
    ep = torch.export.export(model, (torch.zeros(4, n_in, dtype=next(model.parameters()).dtype),))
    torch.export.save(ep, path)
    return path


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(9, 3)), rng.normal(size=(9, 1))
    np.savez(tmp_path / "data.npz", X=X, Y=Y)
    return X, Y, tmp_path / "data.npz"


@pytest.mark.parametrize(
    "dtype,activation,module", [(torch.float64, "tanh", nn.Tanh), (torch.float32, "sigmoid", nn.Sigmoid)]
)
def test_exported_sequential_gives_the_models_loss(tmp_path, data, dtype, activation, module):
    X, Y, data_path = data
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 5), module(), nn.Linear(5, 4), module(), nn.Linear(4, 1)).to(dtype)
    net = pt2io.load_exported_network(export(model, tmp_path / "m.pt2", 3), data_path)
    assert net.arch == mlp.Arch((3, 5, 4, 1), activation, True)
    model = model.double()  # the same weights, widened exactly; the loss in float64 on both sides
    want = float(((model(torch.from_numpy(X)) - torch.from_numpy(Y)) ** 2).sum())
    assert mlp.loss(net.arch, net.params, net.X, net.Y) == pytest.approx(want, rel=1e-12)


def test_unsupported_activation_and_missing_activation(tmp_path, data):
    _, _, data_path = data
    relu = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1)).double()
    with pytest.raises(EngineInputError, match="unsupported layer or activation 'relu'"):
        pt2io.load_exported_network(export(relu, tmp_path / "relu.pt2", 3), data_path)
    plain = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1)).double()
    with pytest.raises(EngineInputError, match="two Linear layers without an activation"):
        pt2io.load_exported_network(export(plain, tmp_path / "plain.pt2", 3), data_path)


def test_pickled_weights_are_refused_unread(tmp_path, data):
    _, _, data_path = data
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).double()
    good = export(model, tmp_path / "good.pt2", 3)
    marker = tmp_path / "payload_ran"
    pickled_pt2(good, tmp_path / "evil.pt2", marker)
    with pytest.raises(EngineInputError, match="refused: parameter '0.weight' is stored as a pickle"):
        pt2io.load_exported_network(tmp_path / "evil.pt2", data_path)
    assert not marker.exists()
    # the payload is live: torch.export.load runs it (then fails), which is why it is not used
    with pytest.raises(Exception):  # noqa: B017 -- any failure: the point is that it ran first
        torch.export.load(tmp_path / "evil.pt2")
    assert marker.exists()


def test_not_an_archive(tmp_path, data):
    (tmp_path / "x.pt2").write_text("nope")
    with pytest.raises(EngineInputError, match="x.pt2: not a readable torch.export archive"):
        pt2io.load_exported_network(tmp_path / "x.pt2", data[2])
