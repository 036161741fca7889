"""``main.py landscape``: every export recomputed by numpy alone from the files it writes.

The recomputations read only network.npz and the mode's .npz (docs/EXPORTS.md, "Landscape
toolkit"), the way an outside script would.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.io import netfile as netio
from tests.engine.landscape import toolkit_numpy as ref
from tests.networks import strict_minimum_net
from tests.references import finite_difference_hessian

ROOT = Path(__file__).resolve().parents[1]


def run_main(*argv):
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


def network_from_files(out):
    """(θ, widths, bias, activation, X, Y) from network.npz alone, in the documented flat order."""
    with np.load(out / "network.npz") as z:
        n = max(int(k[1:]) for k in z.files if k.startswith("W") and k[1:].isdigit())
        bias = "b1" in z.files
        widths = (z["W1"].shape[1],) + tuple(z[f"W{l}"].shape[0] for l in range(1, n + 1))
        return ref.flat(z, n, bias), widths, bias, str(z["activation"]), z["X"], z["Y"]


def plane_losses_at(out, points, kind):
    theta, widths, bias, act, X, Y = network_from_files(out)
    with np.load(out / "plane.npz") as p:
        centre = p["center"] if "center" in p.files else p["theta"]
        return [
            (
                p["loss"][i, j],
                ref.loss(centre + p["alpha"][i] * p["d1"] + p["beta"][j] * p["d2"], widths, bias, act, X, Y, kind),
            )
            for i, j in points
        ]


def test_random_plane_interpolation_and_density_of_a_constructed_minimum(tmp_path):
    net = strict_minimum_net()
    a = netio.save_network(tmp_path / "a.npz", net.arch, net.params, net.X, net.Y)
    other = net.params + 0.2 * np.random.default_rng(0).normal(size=net.params.size)
    b = netio.save_network(tmp_path / "b.npz", net.arch, other, net.X, net.Y)
    out = tmp_path / "out"
    result = run_main(
        "landscape", str(a), "--out", str(out), "--plane", "9", "--extent", "0.5", "--directions", "filter",
        "--seed", "3", "--interpolate", str(b), "--points", "41", "--density", "--probes", "3", "--steps", "9",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["paper_b_hypotheses_met"] and summary["loss_kind"] == "sum"
    theta, widths, bias, act, X, Y = network_from_files(out)
    np.testing.assert_array_equal(theta, net.params)
    with np.load(out / "plane.npz") as p:
        np.testing.assert_array_equal(p["theta"], theta)
        assert p["loss"].shape == (9, 9) and p["d1"].shape == p["d2"].shape == theta.shape
        np.testing.assert_allclose(p["alpha"], np.linspace(-0.5, 0.5, 9))
        for d in (p["d1"], p["d2"]):  # filter norms: each row of each W_l like θ's
            for (W, _), (Wd, _) in zip(ref.layers(theta, widths, bias), ref.layers(d, widths, bias)):
                np.testing.assert_allclose(np.linalg.norm(Wd, axis=1), np.linalg.norm(W, axis=1), rtol=1e-12)
        row_norms = np.concatenate([np.linalg.norm(W, axis=1) for W, _ in ref.layers(theta, widths, bias)])
        np.testing.assert_allclose(p["theta_filter_norms"], row_norms, rtol=1e-12)
        assert p["loss"][4, 4] == pytest.approx(summary["plane"]["L_star"], rel=1e-12)
    for got, expect in plane_losses_at(out, [(0, 0), (4, 4), (8, 2), (3, 7)], "sum"):
        assert got == pytest.approx(expect, rel=1e-12)
    with np.load(out / "interp.npz") as r:
        assert r["alpha"].min() <= -0.5 and r["alpha"].max() >= 1.5 and r["loss"].shape == (41,)
        np.testing.assert_array_equal(r["theta_b"], other)
        for k in (0, 10, 25, 40):
            path = (1 - r["alpha"][k]) * r["theta_a"] + r["alpha"][k] * r["theta_b"]
            assert r["loss"][k] == pytest.approx(ref.loss(path, widths, bias, act, X, Y), rel=1e-12)
    with np.load(out / "density.npz") as d:
        assert d["nodes"].shape == d["weights"].shape == (3, 9)
        np.testing.assert_allclose(d["weights"].sum(1), 1, rtol=1e-12)
        H = finite_difference_hessian(lambda t: ref.loss(t, widths, bias, act, X, Y), theta, 1e-4)
        eigs = np.linalg.eigvalsh(H)  # 9 steps on 9 parameters: the whole spectrum
        assert d["nodes"].max() == pytest.approx(eigs[-1], rel=1e-5)
        assert abs(d["nodes"].min() - eigs[0]) < 1e-5 * eigs[-1]
    root = __import__("xml.etree.ElementTree", fromlist=["parse"]).parse(out / "plane.vts").getroot()
    assert root.find("StructuredGrid").get("WholeExtent") == "0 8 0 8 0 0"


def test_pca_planes_of_a_relu_classifier_with_cross_entropy(tmp_path):
    arch = mlp.landscape_arch((4, 6, 5, 3), "relu", True)
    rng = np.random.default_rng(1)
    theta = mlp.init_params(arch, rng, 1.5)
    X, labels = rng.normal(size=(30, 4)), rng.integers(0, 3, 30)
    Ws, bs = mlp.unpack(arch, theta)
    arrays = {f"W{l + 1}": W for l, W in enumerate(Ws)} | {f"b{l + 1}": b for l, b in enumerate(bs)}
    np.savez(tmp_path / "clf.npz", X=X, Y=labels[:, None], activation=np.array("relu"), **arrays)
    out = tmp_path / "pca"
    result = run_main(
        "landscape", str(tmp_path / "clf.npz"), "--out", str(out), "--loss", "cross-entropy", "--train", "30",
        "--compare", "gd,adam", "--lr", "0.05", "--plane", "7",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert not summary["paper_b_hypotheses_met"] and "theorems" in summary["paper_b_note"]
    with np.load(out / "plane.npz") as p:
        T, P = p["trajectory"].shape
        assert (T, P) == (31, arch.n_params) and p["trajectories"].shape == (2, T, P)
        center, comps = p["center"], p["pca_components"]
        np.testing.assert_array_equal(center, p["trajectory"][-1])
        np.testing.assert_allclose(comps @ comps.T, np.eye(2), atol=1e-12)
        np.testing.assert_allclose(p["path_xy"], (p["trajectory"] - center) @ comps.T, rtol=1e-10, atol=1e-13)
        M = np.concatenate([t - center for t in p["trajectories"]])
        s = np.linalg.svd(M - M.mean(0), compute_uv=False)
        np.testing.assert_allclose(p["pca_explained"], s[:2] ** 2 / (s**2).sum(), rtol=1e-8)
        assert list(p["optimizers"]) == ["gd", "adam"] and p["paths_xy"].shape == (2, T, 2)
    for got, expect in plane_losses_at(out, [(0, 0), (3, 3), (6, 1)], "cross-entropy"):
        assert got == pytest.approx(expect, rel=1e-12)


def test_a_state_dict_classifier_with_layer_directions_and_no_biases(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 4)).double()
    torch.save(model.state_dict(), tmp_path / "m.pt")
    rng = np.random.default_rng(2)
    X, labels = rng.normal(size=(20, 3)), rng.integers(0, 4, 20)
    np.savez(tmp_path / "data.npz", X=X, Y=labels)
    out = tmp_path / "sd"
    result = run_main(
        "landscape", str(tmp_path / "m.pt"), "--activation", "tanh", "--data", str(tmp_path / "data.npz"),
        "--out", str(out), "--loss", "mean", "--plane", "5", "--directions", "layer", "--ignore", "biases",
    )  # fmt: skip
    assert result.returncode != 0  # mean squared loss needs (N, 4) targets: labels do not fit
    assert "targets" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = run_main(
        "landscape", str(tmp_path / "m.pt"), "--activation", "tanh", "--data", str(tmp_path / "data.npz"),
        "--out", str(out), "--loss", "cross-entropy", "--plane", "5", "--directions", "layer", "--ignore", "biases",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    theta, widths, bias, act, Xf, Yf = network_from_files(out)
    with torch.no_grad():
        F = model(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(ref.outputs(theta, widths, bias, act, Xf), F, rtol=1e-12)
    with np.load(out / "plane.npz") as p:
        for d in (p["d1"], p["d2"]):
            for (W, _), (Wd, bd) in zip(ref.layers(theta, widths, bias), ref.layers(d, widths, bias)):
                assert np.linalg.norm(Wd) == pytest.approx(np.linalg.norm(W), rel=1e-12)
                assert not bd.any()
    for got, expect in plane_losses_at(out, [(0, 4), (2, 2)], "cross-entropy"):
        assert got == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--loss", "cross-entropy"], "e ≥ 2"),
        (["--compare", "gd,adam"], "--compare needs --train"),
        (["--compare", "gd,rmsprop", "--train", "3"], "expected distinct names"),
        (["--plane", "1"], "outside 2 .. 1001"),
    ],
)
def test_bad_requests_fail_in_one_line(tmp_path, extra, message):
    net = strict_minimum_net()
    a = netio.save_network(tmp_path / "a.npz", net.arch, net.params, net.X, net.Y)
    result = run_main("landscape", str(a), "--out", str(tmp_path / "o"), *extra)
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
