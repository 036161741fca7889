"""netio: round trip and one clear error per kind of broken file."""

import io
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.io import netfile as netio


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(0)
    arch = mlp.Arch((2, 3, 1), "tanh", True)
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
    arch = mlp.Arch((2, 3, 2, 1), "sigmoid", False)  # 2—1—1—1 split twice in layer 1, once in layer 2
    base = mlp.Arch((2, 1, 1, 1), "sigmoid", False)
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
    arch = mlp.Arch((2, 3, 1, 1), "sigmoid")
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


# ------------------------------------------------------------ crafted .npz: headers and dtypes
def npy_bytes(array=None, *, shape=None, dtype=None) -> bytes:
    """One .npy member: a real array, or only a header declaring ``shape`` of ``dtype`` followed by
    64 bytes (so a reader that trusts the header would try to allocate the declared size)."""
    buffer = io.BytesIO()
    if array is not None:
        np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
        return buffer.getvalue()
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue() + b"\0" * 64


def crafted_npz(path, **members) -> Path:
    """An .npz written by hand with zipfile: a valid 2—3—1 sigmoid network and its data, with
    ``members`` (name -> .npy bytes) replacing or adding members."""
    rng = np.random.default_rng(0)
    valid = {
        "X": npy_bytes(rng.normal(size=(8, 2))),
        "Y": npy_bytes(rng.normal(size=(8, 1))),
        "activation": npy_bytes(np.array("sigmoid")),
        "W1": npy_bytes(rng.normal(size=(3, 2))),
        "W2": npy_bytes(rng.normal(size=(1, 3))),
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, data in {**valid, **members}.items():
            z.writestr(f"{name}.npy", data)
    return Path(path)


TB8 = (1_000_000, 1_000_000)  # float64: 8e12 bytes
BAD_MEMBERS = {
    "timedelta W1": ({"W1": npy_bytes(np.zeros((3, 2), dtype="m8[s]"))}, "W1 has dtype timedelta64"),
    "datetime X": ({"X": npy_bytes(np.zeros((8, 2), dtype="M8[D]"))}, "X has dtype datetime64"),
    "8 TB W1": ({"W1": npy_bytes(shape=TB8, dtype="<f8")}, r"W1 declares shape \(1000000, 1000000\).*limit is 2e\+09"),
    "2**40 rows of X": ({"X": npy_bytes(shape=(2**40, 2), dtype="<f8")}, r"X declares shape \(1099511627776, 2\)"),
    "8 TB extra": ({"note": npy_bytes(shape=TB8, dtype="<f8")}, "note declares shape"),
    "structured W1": ({"W1": npy_bytes(np.zeros(3, dtype=[("a", "<f8"), ("b", "<f8")]))}, "not plain numbers"),
    "three 1.9 GB arrays": (
        {k: npy_bytes(shape=(120_000_000, 2), dtype="<f8") for k in ("X", "Y", "note")},
        "together; the limit is 4e\\+09",
    ),
}
COMPLEX = {
    "complex W1": ({"W1": npy_bytes(np.ones((3, 2)) + 1j)}, "W1 has dtype complex128; expected real numbers"),
    "complex X": ({"X": npy_bytes(np.ones((8, 2), dtype=np.complex64))}, "X has dtype complex64; expected real"),
    "complex Y": ({"Y": npy_bytes(np.ones((8, 1)) * 1j)}, "Y has dtype complex128; expected real"),
}


@pytest.fixture
def no_data_read(monkeypatch):
    """Fails the test if any .npy data is read: header checks must refuse before that."""

    def read_array(*args, **kwargs):
        raise AssertionError("array data was read before the header was refused")

    monkeypatch.setattr(np.lib.format, "read_array", read_array)


@pytest.mark.parametrize("members,message", BAD_MEMBERS.values(), ids=BAD_MEMBERS)
def test_headers_are_refused_before_any_data_is_read(tmp_path, no_data_read, members, message):
    path = crafted_npz(tmp_path / "bad.npz", **members)
    with pytest.raises(EngineInputError, match=message) as error:
        netio.load_network(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


@pytest.mark.parametrize("members,message", COMPLEX.values(), ids=COMPLEX)
def test_complex_networks_are_refused(tmp_path, members, message):
    with pytest.raises(EngineInputError, match=message):
        netio.load_network(crafted_npz(tmp_path / "bad.npz", **members))


DATA_CASES = ["timedelta W1", "datetime X", "2**40 rows of X", "complex X", "complex Y"]


@pytest.mark.parametrize("case", DATA_CASES)
def test_data_files_are_checked_like_networks(tmp_path, case):
    """torch_state.load_data (--data of a state_dict or .pt2) and datasets.load_xy_file read only X
    and Y, through the same header check; complex data is refused, not cast."""
    from engine.core.datasets import load_xy_file
    from engine.io.torch_state import load_data

    members, message = {**BAD_MEMBERS, **COMPLEX}[case]
    path = crafted_npz(tmp_path / "bad.npz", **members)
    if "W1" in members:  # not a data array: the data loaders never look at it
        assert load_data(path)[0].shape == (8, 2) and load_xy_file(path)[0].shape == (8, 2)
        return
    expected = "complex" if "complex" in case else message
    for load in (load_data, load_xy_file):
        with pytest.raises(EngineInputError, match=expected) as error:
            load(path)
        assert "\n" not in str(error.value)


def test_data_loaders_refuse_complex_and_timedelta_instead_of_casting(tmp_path):
    from engine.core.datasets import load_xy_file
    from engine.io.torch_state import load_data

    for name, X in (("complex", np.ones((4, 2)) + 0j), ("timedelta", np.ones((4, 2), dtype="m8[s]"))):
        path = tmp_path / f"{name}.npz"
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("X.npy", npy_bytes(X))
            z.writestr("Y.npy", npy_bytes(np.ones(4)))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a ComplexWarning would mean a silent cast
            for load in (load_data, load_xy_file):
                with pytest.raises(EngineInputError, match=f"X.*{name}") as error:
                    load(path)
                assert "\n" not in str(error.value)


def test_crafted_but_valid_npz_loads(tmp_path):
    """The hand-written archive is a valid network: the refusals above are for the bad member."""
    net = netio.load_network(crafted_npz(tmp_path / "ok.npz"))
    assert net.arch == mlp.Arch((2, 3, 1), "sigmoid", False)
