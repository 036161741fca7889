"""netio: round trip and one clear error per kind of broken file."""

import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.io import netfile as netio
from engine.minima import deep


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


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"W2": np.zeros((1, 4))}, "W2 has shape"),
        ({"X": np.zeros((5, 3))}, "X has shape"),
        ({"Y": np.zeros((4, 1))}, "Y has shape"),
        ({"b1": np.zeros(2)}, "b1 has shape"),
        ({"W1": np.full((3, 2), np.nan)}, "NaN"),
        ({"activation": np.array("relu")}, "relu"),
        ({"X": None}, "missing key 'X'"),
        ({"b2": None}, "missing key 'b2'"),
    ],
)
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


def test_history_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    arch = deep.Arch((2, 3, 2, 1), "sigmoid", False)  # 2—1—1—1 split twice in layer 1, once in layer 2
    base = deep.Arch((2, 1, 1, 1), "sigmoid", False)
    history = netio.History(
        base.widths, rng.normal(size=base.n_params), ((1, 0, 0.25, 1), (1, 1, -1.5, 2), (2, 0, 2.0, 1))
    )
    theta, X, Y = rng.normal(size=arch.n_params), rng.normal(size=(4, 2)), rng.normal(size=(4, 1))
    net = netio.load_network(
        netio.save_network(tmp_path / "h.npz", arch, theta, X, Y, history=history, note=np.ones(2))
    )
    h = net.history
    assert h.base_widths == base.widths and np.array_equal(h.base_params, history.base_params)
    assert h.splits == history.splits and all(type(v) is float for _, _, v, _ in h.splits)
    assert h.widths_after() == arch.widths and h.widths_after(1) == (2, 2, 1, 1)
    assert list(net.extras) == ["note"]  # history arrays are not extras
    assert netio.load_network(netio.save_network(tmp_path / "plain.npz", arch, theta, X, Y)).history is None


@pytest.mark.parametrize(
    "splits,message",
    [
        (((1, 0, 0.5, 1),), r"lead to widths \(2, 2, 1, 1\), but the network has \(2, 3, 1, 1\)"),
        (((3, 0, 0.5, 1), (1, 0, 0.5, 1)), "split 1 is in layer 3, not a hidden layer"),
        (((1, 1, 0.5, 1), (1, 0, 0.5, 2)), r"split 1 \(neuron 1, copy 1\) does not fit layer 1 of width 1"),
    ],
)
def test_inconsistent_history_is_refused(tmp_path, splits, message):
    rng = np.random.default_rng(5)
    arch = deep.Arch((2, 3, 1, 1), "sigmoid")
    history = netio.History((2, 1, 1, 1), np.zeros(4), splits)
    with pytest.raises(EngineInputError, match=message):  # refused when saving …
        netio.save_network(
            tmp_path / "h.npz", arch, np.zeros(arch.n_params), np.zeros((3, 2)), np.zeros(3), history=history
        )
    good = netio.History((2, 1, 1, 1), np.zeros(4), ((1, 0, 0.5, 1), (1, 0, 0.5, 2)))
    path = netio.save_network(
        tmp_path / "h.npz", arch, rng.normal(size=arch.n_params), np.zeros((3, 2)), np.zeros(3), history=good
    )
    rewrite(
        path,
        history_splits=np.array([s[::3][:1] + s[1:2] + s[3:] for s in splits], dtype=np.int64).reshape(-1, 3),
        history_lambdas=np.array([s[2] for s in splits]),
    )
    with pytest.raises(EngineInputError, match=message):  # … and when loading a file edited by hand
        netio.load_network(path)
    rewrite(path, history_lambdas=None)
    with pytest.raises(EngineInputError, match="history is incomplete, missing history_lambdas"):
        netio.load_network(path)
