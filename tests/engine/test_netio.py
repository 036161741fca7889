"""netio: round trip and one clear error per kind of broken file."""
import numpy as np
import pytest

from engine import deep, netio
from engine.errors import EngineInputError


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(0)
    arch = deep.Arch((2, 3, 1), "tanh", True)
    theta = rng.normal(size=arch.n_params)
    X, Y = rng.normal(size=(5, 2)), rng.normal(size=(5, 1))
    path = netio.save_network(tmp_path / "net.npz", arch, theta, X, Y, descent_direction=np.ones(arch.n_params))
    return path, arch, theta, X, Y


def test_round_trip(saved):
    path, arch, theta, X, Y = saved
    net = netio.load_network(path)
    assert net.arch == arch and np.array_equal(net.params, theta)
    assert np.array_equal(net.X, X) and np.array_equal(net.Y, Y)
    assert list(net.extras) == ["descent_direction"]


def rewrite(path, **changes):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    for k in [k for k, v in changes.items() if v is None]:
        del arrays[k]
    np.savez(path, **arrays)


@pytest.mark.parametrize("changes,message", [
    ({"W2": np.zeros((1, 4))}, "W2 has shape"),
    ({"X": np.zeros((5, 3))}, "X has shape"),
    ({"Y": np.zeros((4, 1))}, "Y has shape"),
    ({"b1": np.zeros(2)}, "b1 has shape"),
    ({"W1": np.full((3, 2), np.nan)}, "NaN"),
    ({"activation": np.array("relu")}, "relu"),
    ({"X": None}, "missing key 'X'"),
    ({"b2": None}, "missing key 'b2'"),
])
def test_invalid_contents(saved, changes, message):
    path = saved[0]
    rewrite(path, **changes)
    with pytest.raises(EngineInputError, match=message):
        netio.load_network(path)


def test_not_a_zip_and_truncated(saved, tmp_path):
    path = saved[0]
    data = path.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.npz").write_text("not an archive")
    for bad in ("cut.npz", "text.npz"):
        with pytest.raises(EngineInputError, match="not a readable"):
            netio.load_network(tmp_path / bad)
