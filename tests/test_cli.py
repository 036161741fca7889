"""The command line, headless: JSON on stdout that matches the engine, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from engine.core import mlp
from engine.io import netfile as netio
from engine.topology.invariants import invariant_set_summary

from .references import finite_difference_hessian_and_error, numpy_loss

ROOT = Path(__file__).resolve().parents[1]


def run_main(*argv):
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_invariant_set_accepts_negative_c_and_matches_the_engine():
    result = run_main("invariant-set", "--d", "2", "--e", "1", "--c", "-0.1,0.1,-2e-1")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == invariant_set_summary(2, 1, [-0.1, 0.1, -0.2], False)
    # l+ = 1, l- = 2 (e = 1): P(x) = (1 + x)·2·2, so beta = [4, 4]; 1 + l- effective components.
    assert printed["poincare"] == [4, 4] and printed["effective_components"] == 3


def test_inspect_prints_a_report_of_a_saved_network(tmp_path):
    arch = mlp.Arch((2, 3, 1), "sigmoid", False)
    rng = np.random.default_rng(0)
    theta = mlp.init_params(arch, rng, 1.0)
    X, Y = rng.normal(size=(8, 2)), rng.normal(size=(8, 1))
    path = netio.save_network(tmp_path / "net.npz", arch, theta, X, Y)
    result = run_main("inspect", str(path))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert abs(report["loss"] - mlp.loss(arch, theta, X, Y)) < 1e-12


def test_inspect_refuses_a_corrupt_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    result = run_main("inspect", str(bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and str(bad) in result.stderr


def test_reproduce_nonattr_quick_writes_metrics_and_arrays(tmp_path):
    """Each nonattr target runs from the command line; verdicts are JSON strings, arrays load plain."""
    expected = {
        "nonattr-deep": "descent.npz",
        "nonattr-shallow": "descent.npz",
        "nonattr-infinity": "infinity.npz",
        "nonattr-path": "path.npz",
    }
    for name, arrays in expected.items():
        out = tmp_path / name
        result = run_main("reproduce", name, "--quick", "--out", str(out))
        assert result.returncode == 0, result.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics and np.load(out / arrays, allow_pickle=False).files
        if name in ("nonattr-deep", "nonattr-shallow"):
            assert metrics["saddle"]["verdict"] == "saddle"
    report = json.loads(run_main("inspect", str(tmp_path / "nonattr-deep" / "big_min.npz")).stdout)
    assert report["critical_point"] == "degenerate minimum candidate" and report["gamma_construction"]["possible"]


def _torch_state_dict_of_a_strict_minimum(tmp_path):
    """The tests' 2—3—1 strict minimum as torch.save(state_dict) + data.csv."""
    import torch

    from .networks import strict_minimum_net

    net = strict_minimum_net()
    Ws, _ = mlp.unpack(net.arch, net.params)
    model = torch.nn.Sequential(
        torch.nn.Linear(2, 3, bias=False), torch.nn.Sigmoid(), torch.nn.Linear(3, 1, bias=False)
    ).double()
    with torch.no_grad():
        model[0].weight.copy_(torch.as_tensor(Ws[0]))
        model[2].weight.copy_(torch.as_tensor(Ws[1]))
    torch.save(model.state_dict(), tmp_path / "net.pt")
    np.savetxt(tmp_path / "data.csv", np.column_stack([net.X, net.Y]), delimiter=",")
    return net


def test_inspect_a_state_dict_splits_and_writes_a_construction(tmp_path):
    net = _torch_state_dict_of_a_strict_minimum(tmp_path)
    plain = run_main(
        "inspect", str(tmp_path / "net.pt"), "--activation", "sigmoid", "--data", str(tmp_path / "data.csv")
    )
    assert plain.returncode == 0, plain.stderr
    report = json.loads(plain.stdout)
    assert (
        report["critical_point"] == "strict minimum"
        and abs(report["loss"] - mlp.loss(net.arch, net.params, net.X, net.Y)) < 1e-12
    )
    assert report["hessian"]["method"] == "full" and report["hessian"]["trace_stderr"] == 0
    H = mlp.hessian(net.arch, net.params, net.X, net.Y)
    assert abs(report["hessian"]["trace"] - np.trace(H)) < 1e-9 * abs(np.trace(H))
    layer, neuron = report["gamma_construction"]["neurons"][0]  # counted from 1, as --split takes it
    out = tmp_path / "split.npz"
    split = run_main(
        "inspect",
        str(tmp_path / "net.pt"),
        "--activation",
        "sigmoid",
        "--data",
        str(tmp_path / "data.csv"),
        "--split",
        f"{layer},{neuron}",
        "--lambda",
        "0.5",
        "--out",
        str(out),
    )
    assert split.returncode == 0, split.stderr
    written = json.loads(split.stdout)
    assert written["widths"] == [2, 4, 1]
    history = netio.load_network(out).history
    assert history.base_widths == (2, 3, 1) and history.splits == ((layer, neuron - 1, 0.5, 3),)  # array indices
    # The verdict, held to the written network's own Hessian, from second differences of a numpy
    # loss: λ = 0.5 inside I = (0, 1) (B positive definite) must give a minimum (no negative
    # eigenvalue), a non-attracting region; λ = 1.5 outside I a saddle (a clearly negative one).
    assert (
        report["neurons"][neuron - 1]["B"] == "positive definite" and report["neurons"][neuron - 1]["neuron"] == neuron
    )
    outside = tmp_path / "split_outside.npz"
    done = run_main(
        *("inspect", str(tmp_path / "net.pt"), "--activation", "sigmoid", "--data", str(tmp_path / "data.csv")),
        *("--split", f"{layer},{neuron}", "--lambda", "1.5", "--out", str(outside)),
    )
    assert done.returncode == 0, done.stderr
    for path, printed, verdict in (
        (out, written, "non-attracting region of local minima"),
        (outside, json.loads(done.stdout), "saddle"),
    ):
        saved = netio.load_network(path)
        f = lambda p: numpy_loss(saved.arch, p, saved.X, saved.Y)
        fd_hessian, error = finite_difference_hessian_and_error(f, saved.params)
        fd = np.linalg.eigvalsh(fd_hessian)
        assert error < 1e-6 * np.abs(fd).max()  # sharp enough to say anything
        # One eigenvalue the differences cannot tell from 0 (the λ line: L is constant along it, at
        # every λ); every other one lies farther from 0 than their error, so its sign is certain.
        off_zero = np.sort(np.abs(fd))
        assert off_zero[0] <= error and off_zero[1] > 2 * error
        assert printed["split"]["verdict"] == verdict
        assert (verdict == "saddle") == (fd[0] < -error)


def test_inspect_bad_files_and_flags_fail_in_one_line(tmp_path):
    _torch_state_dict_of_a_strict_minimum(tmp_path)
    pt, data = str(tmp_path / "net.pt"), str(tmp_path / "data.csv")
    for argv, says in [
        ((pt, "--data", data), "activation"),
        ((pt, "--activation", "sigmoid"), "data"),
        ((pt, "--activation", "cosine", "--data", data), "cosine"),
        ((pt, "--activation", "sigmoid", "--data", data, "--split", "1,0"), "--lambda"),
        (
            (
                pt,
                "--activation",
                "sigmoid",
                "--data",
                data,
                "--split",
                "1,9",
                "--lambda",
                "0.5",
                "--out",
                str(tmp_path / "o.npz"),
            ),
            "neuron 9",
        ),
        ((str(tmp_path / "data.csv"),), "unknown network format"),
    ]:
        result = run_main("inspect", *argv)
        assert result.returncode == 2, (argv, result.stdout)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and "Traceback" not in result.stderr, (argv, result.stderr)
    bad_split = run_main("inspect", pt, "--split", "one")
    assert bad_split.returncode == 2 and "LAYER,NEURON" in bad_split.stderr
