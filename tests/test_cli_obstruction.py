"""``main.py obstruction``: one JSON object with the independent numbers; bad networks get one line, exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.engine.topology.test_obstruction import bad_networks, kunneth, numpy_c

ROOT = Path(__file__).resolve().parents[1]


def run_main(*argv):
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("d,l,e,bias", [(2, 4, 1, False), (3, 3, 2, True), (1, 5, 1, False)])
def test_obstruction_prints_the_numbers_of_a_random_torch_network(tmp_path, d, l, e, bias):
    torch.manual_seed(d + l + e)
    model = nn.Sequential(nn.Linear(d, l, bias=bias), nn.LeakyReLU(0.1), nn.Linear(l, e, bias=bias))
    with torch.no_grad():
        model[2].weight.mul_(torch.tensor([3.0 if k % 2 else 0.2 for k in range(l)]))
    torch.save(model.state_dict(), tmp_path / "net.pth")
    X = np.random.default_rng(0).normal(size=(30, d))
    with torch.no_grad():
        Y = model(torch.from_numpy(X).float()).double().numpy() + 0.1
    np.savez(tmp_path / "data.npz", X=X, Y=Y)
    result = run_main(
        "obstruction", str(tmp_path / "net.pth"), "--activation", "leaky_relu", "--slope", "0.1",
        "--data", str(tmp_path / "data.npz"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    c = numpy_c(model.state_dict())
    assert np.allclose(out["c"], c, rtol=0, atol=1e-12)
    assert out["poincare"] == kunneth(d, e, c, bias) and out["beta0"] == kunneth(d, e, c, bias)[0]
    assert out["locked"] == [k + 1 for k in range(l) if e == 1 and c[k] < 0]
    assert out["loss"] == pytest.approx(0.01, rel=1e-5)  # f is torch's, off by 0.1 everywhere
    assert (out["fit"] is None) == (e != 1)


def test_obstruction_trains_on_with_the_flow(tmp_path):
    from tests.engine.topology.test_obstruction import small_net_file

    path = small_net_file(tmp_path, bias=True)
    result = run_main("obstruction", str(path), "--train", "200", "--optimizer", "flow", "--lr", "0.01")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["max_abs_dc"] < 1e-7 and out["loss_end"] < out["loss_start"]
    assert len(out["c_end"]) == 3 and out["stayed_in_component"] is True


def test_every_bad_network_gets_one_line_and_exit_2(tmp_path):
    for name, (path, kwargs, pattern) in bad_networks(tmp_path).items():
        argv = ["obstruction", str(path)]
        if "activation" in kwargs:
            argv += ["--activation", kwargs["activation"]]
        if "data" in kwargs:
            argv += ["--data", str(kwargs["data"])]
        result = run_main(*argv)
        assert result.returncode == 2, (name, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and pattern in lines[0], (name, result.stderr)
        assert result.stdout == ""
    assert not (tmp_path / "ran").exists()


def test_train_without_data_is_one_line(tmp_path):
    torch.save(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).state_dict(), tmp_path / "n.pt")
    result = run_main("obstruction", str(tmp_path / "n.pt"), "--train", "10")
    assert result.returncode == 2 and "--train needs data" in result.stderr
