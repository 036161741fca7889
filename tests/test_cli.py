"""The command line, headless: JSON on stdout that matches the engine, one-line errors."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from engine import deep, netio
from engine.invariants import invariant_set_summary

ROOT = Path(__file__).resolve().parents[1]


def run_main(*argv):
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_invariant_set_accepts_negative_c_and_matches_the_engine():
    result = run_main("invariant-set", "--d", "2", "--e", "1", "--c", "-0.1,0.1,-2e-1")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == invariant_set_summary(2, 1, [-0.1, 0.1, -0.2], False)
    # l+ = 1, l- = 2 (e = 1): P(x) = (1 + x)·2·2, so beta = [4, 4]; 1 + l- effective components.
    assert printed["poincare"] == [4, 4] and printed["effective_components"] == 3


def test_inspect_prints_a_report_of_a_saved_network(tmp_path):
    arch = deep.Arch((2, 3, 1), "sigmoid", False)
    rng = np.random.default_rng(0)
    theta = deep.init_params(arch, rng, 1.0)
    X, Y = rng.normal(size=(8, 2)), rng.normal(size=(8, 1))
    path = netio.save_network(tmp_path / "net.npz", arch, theta, X, Y)
    result = run_main("inspect", str(path))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert abs(report["loss"] - deep.loss(arch, theta, X, Y)) < 1e-12


def test_inspect_refuses_a_corrupt_file_in_one_line(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    result = run_main("inspect", str(bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and str(bad) in result.stderr


def test_reproduce_nonattr_quick_writes_metrics_and_arrays(tmp_path):
    """Each nonattr target runs from the command line; verdicts are JSON strings, arrays load plain."""
    expected = {"nonattr-deep": "descent.npz", "nonattr-shallow": "descent.npz",
                "nonattr-infinity": "infinity.npz", "nonattr-path": "path.npz"}
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
