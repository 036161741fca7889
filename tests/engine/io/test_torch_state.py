"""torchio: a PyTorch MLP's state_dict loads as the same network as its .npz; unsafe or broken files are refused."""

import pickle
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.io import netfile as netio
from engine.io import torch_state as torchio


@pytest.fixture
def saved_mlp(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.Sigmoid(), nn.Linear(5, 4), nn.Sigmoid(), nn.Linear(4, 1)).double()
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(9, 3)), rng.normal(size=(9, 1))
    torch.save(model.state_dict(), tmp_path / "model.pt")
    np.savez(tmp_path / "data.npz", X=X, Y=Y)
    return model, X, Y, tmp_path


def model_loss(model, X, Y):
    return ((model(torch.from_numpy(X)) - torch.from_numpy(Y)) ** 2).sum()


def test_state_dict_gives_the_models_loss_gradient_and_hessian(saved_mlp):
    model, X, Y, d = saved_mlp
    net = torchio.load_state_dict_network(d / "model.pt", "sigmoid", d / "data.npz")
    assert net.arch == mlp.Arch((3, 5, 4, 1), "sigmoid", True)
    # the loss of the torch model itself, computed by torch's own modules
    assert mlp.loss(net.arch, net.params, net.X, net.Y) == pytest.approx(float(model_loss(model, X, Y)), rel=1e-12)
    # flat layout W1, b1, W2, b2, …: the model's parameter order, so its own Hessian is mlp.hessian
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]

    def loss_of_flat(flat):
        parts, pos = {}, 0
        for n, s in zip(names, shapes):
            parts[n], pos = flat[pos : pos + s.numel()].reshape(s), pos + s.numel()
        out = torch.func.functional_call(model, parts, (torch.from_numpy(X),))
        return ((out - torch.from_numpy(Y)) ** 2).sum()

    H_model = torch.autograd.functional.hessian(loss_of_flat, torch.from_numpy(net.params)).numpy()
    H = mlp.hessian(net.arch, net.params, net.X, net.Y)
    assert np.abs(H - H_model).max() < 1e-12 * np.abs(H).max()
    # and the project's .npz of the same weights is the same network to 1e-12
    npz = netio.load_network(netio.save_network(d / "same.npz", net.arch, net.params, X, Y))
    assert mlp.loss(npz.arch, npz.params, npz.X, npz.Y) == pytest.approx(
        mlp.loss(net.arch, net.params, X, Y), rel=1e-12
    )
    assert np.abs(mlp.hessian(npz.arch, npz.params, npz.X, npz.Y) - H).max() < 1e-12 * np.abs(H).max()


def test_named_layers_and_numeric_order(saved_mlp, tmp_path):
    model, X, Y, d = saved_mlp
    state = model.state_dict()
    reference = torchio.load_state_dict_network(d / "model.pt", "sigmoid", d / "data.npz")
    shuffled = {k: state[k] for k in ("4.weight", "0.bias", "2.weight", "4.bias", "0.weight", "2.bias")}
    renamed = {k.replace("0.", "fc1.").replace("2.", "fc2.").replace("4.", "fc10."): v for k, v in shuffled.items()}
    for i, sd in enumerate((shuffled, renamed)):
        torch.save(sd, tmp_path / f"m{i}.pt")
        net = torchio.load_state_dict_network(tmp_path / f"m{i}.pt", "sigmoid", d / "data.npz")
        assert np.array_equal(net.params, reference.params)


def test_csv_data_with_header(saved_mlp, tmp_path):
    model, X, Y, d = saved_mlp
    path = tmp_path / "data.csv"
    np.savetxt(path, np.hstack([X, Y]), delimiter=",", header="x1,x2,x3,y", comments="")
    net = torchio.load_state_dict_network(d / "model.pt", "sigmoid", path)
    assert np.array_equal(net.X, X) and np.array_equal(net.Y, Y)


class Payload:
    """Unpickling this object calls open(marker, "w"): it creates the marker file."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


@pytest.mark.parametrize("writer", ["torch.save", "pickle.dump"])
def test_pickle_payload_is_refused_and_never_runs(saved_mlp, tmp_path, writer):
    model, X, Y, d = saved_mlp
    marker, control = tmp_path / "payload_ran", tmp_path / "control_ran"

    def write(path, marker_path):
        state = dict(model.state_dict(), extra=Payload(marker_path))
        if writer == "torch.save":
            torch.save(state, path)
        else:
            with open(path, "wb") as f:
                pickle.dump(state, f)

    write(tmp_path / "evil.pt", marker)
    expected = (
        "evil.pt: refused, not a plain state_dict of tensors: it would build io.open"
        if writer == "torch.save"
        else "evil.pt: not a readable PyTorch state_dict file"
    )  # torch.load reads torch.save's pickles only
    with pytest.raises(EngineInputError, match=expected):
        torchio.load_state_dict_network(tmp_path / "evil.pt", "sigmoid", d / "data.npz")
    assert not marker.exists()
    # the payload is live: an unrestricted load of the same kind of file does run it
    write(tmp_path / "control.pt", control)
    if writer == "torch.save":
        torch.load(tmp_path / "control.pt", weights_only=False)
    else:
        with open(tmp_path / "control.pt", "rb") as f:
            pickle.load(f)
    assert control.exists()


def test_broken_files_name_what_is_wrong(saved_mlp, tmp_path):
    model, X, Y, d = saved_mlp
    state = model.state_dict()

    def attempt(sd, activation="sigmoid", data=d / "data.npz"):
        torch.save(sd, tmp_path / "bad.pt")
        return torchio.load_state_dict_network(tmp_path / "bad.pt", activation, data)

    with pytest.raises(
        EngineInputError,
        match=r"layer '2' has weight shape \(4, 6\) \(takes 6 inputs\) but layer '0' before it has 5 outputs",
    ):
        attempt(dict(state, **{"2.weight": torch.zeros(4, 6, dtype=torch.float64)}))
    np.savez(tmp_path / "wide.npz", X=np.zeros((9, 2)), Y=Y)
    with pytest.raises(
        EngineInputError,
        match=r"the data has 2 input columns but the first layer '0' \(weight shape \(5, 3\)\) takes 3",
    ):
        attempt(state, data=tmp_path / "wide.npz")
    with pytest.raises(EngineInputError, match="unknown activation 'relu'"):
        attempt(state, activation="relu")
    with pytest.raises(EngineInputError, match="layer\\(s\\) 2 have no bias"):
        attempt({k: v for k, v in state.items() if k != "2.bias"})
    with pytest.raises(EngineInputError, match="'1.running_mean' is not an nn.Linear weight or bias"):
        attempt(dict(state, **{"1.running_mean": torch.zeros(5)}))
    with pytest.raises(EngineInputError, match="last layer '4' has 2 outputs"):
        attempt(dict(state, **{"4.weight": torch.zeros(2, 4, dtype=torch.float64), "4.bias": torch.zeros(2)}))
    for junk in ("not a torch file", "junk"):  # two different failures inside torch.load
        (tmp_path / "junk.pt").write_text(junk)
        with pytest.raises(EngineInputError, match="junk.pt: not a readable PyTorch state_dict file"):
            torchio.load_state_dict_network(tmp_path / "junk.pt", "sigmoid", d / "data.npz")


def test_a_torchscript_archive_is_refused_in_one_line_without_torchs_warning(saved_mlp):
    """torch.load warns (two lines) that it dispatches a TorchScript archive to torch.jit.load,
    then refuses it under weights_only: the command line must print the refusal alone."""
    model, _, _, d = saved_mlp
    script = d / "scripted.pt"
    torch.jit.save(torch.jit.trace(model, torch.zeros(1, 3, dtype=torch.float64)), script)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(EngineInputError, match="refused, a TorchScript archive") as refused:
            torchio.load_state_dict_network(script, "sigmoid", d / "data.npz")
    assert "\n" not in str(refused.value) and not [w for w in seen if "TorchScript" in str(w.message)]
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "main.py", "obstruction", str(script)], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "TorchScript archive" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "write,words",
    [
        (lambda path: path.write_bytes(pickle.dumps({"a": [1, 2, 3]}, protocol=4)), "not a readable PyTorch"),
        (lambda path: path.write_bytes(pickle.dumps({"a": [1, 2, 3]}, protocol=5)), "not a readable PyTorch"),
        (lambda path: torch.save([torch.zeros(2)], path), "expected a state_dict (a dict of tensors), got list"),
    ],
    ids=["pickle.dump protocol 4", "pickle.dump protocol 5", "torch.save of a list"],
)
def test_a_raw_pickle_is_refused_in_one_line_without_torchs_warning(saved_mlp, write, words):
    """A pickle that torch.save did not write makes torch's restricted unpickler warn, in two
    lines, that it may not read that protocol, above the refusal: the command line must print
    the refusal alone."""
    _, _, _, d = saved_mlp
    raw = d / "raw.pt"
    write(raw)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(EngineInputError, match=words.replace("(", r"\(").replace(")", r"\)")):
            torchio.load_state_dict_network(raw, "sigmoid", d / "data.npz")
    assert [str(w.message) for w in seen] == []
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "main.py", "inspect", str(raw), "--activation", "sigmoid", "--data", str(d / "data.npz")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert "Warning" not in done.stderr


def test_a_damaged_compressed_data_file_names_the_file_and_the_array(saved_mlp):
    """A byte flipped inside a deflated member of the data .npz (np.savez_compressed) is refused
    in one line naming the file and the array, not raised as zlib.error or a CRC error (or reads
    the same data)."""
    _, X, Y, d = saved_mlp
    np.savez_compressed(d / "packed.npz", X=X, Y=Y)
    with zipfile.ZipFile(d / "packed.npz") as z:
        info = z.getinfo("X.npy")
    raw = bytearray((d / "packed.npz").read_bytes())
    at = info.header_offset  # the local header's name and extra lengths (its extra is not the directory's)
    start = (
        at + 30 + int.from_bytes(raw[at + 26 : at + 28], "little") + int.from_bytes(raw[at + 28 : at + 30], "little")
    )
    refused = set()
    for position in range(start, start + info.compress_size):
        flipped = bytearray(raw)
        flipped[position] ^= 0xFF
        (d / "damaged.npz").write_bytes(flipped)
        try:
            net = torchio.load_state_dict_network(d / "model.pt", "sigmoid", d / "damaged.npz")
        except EngineInputError as error:
            message = str(error)
        else:  # deflate's last byte may hold only bits past the end of the stream
            assert np.array_equal(net.X, X), position
            continue
        assert "\n" not in message and "damaged.npz: cannot read array X: the file is damaged" in message, message
        refused.add(message.split("(")[1].split(":")[0])
    assert "zlib.error" in refused  # the case that escaped as a traceback
