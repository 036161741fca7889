"""``main.py landscape MODEL.pt2 --hessian``: hessian.npz of an exported residual CNN with batch
norm, held to the dense Hessian of the original nn.Module (tests/engine/landscape/test_module_hessian.py's
reference), and its bad options refused in one line before anything is written."""

import json

import numpy as np
import pytest

from landscape_lens import cli
from tests.engine.landscape.test_module_hessian import dense_hessian
from tests.files import assert_landscape_refuses
from tests.models import CLASSES, export_cnn, images, trained_cnn

N = 8
EPS = np.finfo(np.float64).eps


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hessian")
    model = trained_cnn(0)
    X, Y = images(N).numpy(), np.random.default_rng(0).integers(0, CLASSES, N)
    np.savez(folder / "d.npz", X=X, Y=Y)
    return dict(model=model, X=X, Y=Y, data=folder / "d.npz", cnn=export_cnn(model, folder / "cnn.pt2"))


@pytest.fixture(autouse=True)
def keep_threads(monkeypatch):
    # in this process: keep the test run's thread settings (the command line would take every core)
    monkeypatch.setattr("engine.core.runtime.configure_torch_threads", lambda threads=1: None)


def test_hessian_npz_matches_the_dense_hessian_of_the_module(files, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [str(files["cnn"]), "--data", str(files["data"]), "--out", str(out), "--hessian", "--density"]
    argv += ["--top-k", "3", "--probes", "12", "--steps", "12", "--batch-size", "3", "--full-hessian"]
    assert cli.main(["landscape", *argv], prog="main.py") == 0
    summary = json.loads(capsys.readouterr().out)
    assert not (out / "plane.npz").exists()  # --hessian alone draws no plane
    f = np.load(out / "hessian.npz")
    H = dense_hessian(files["model"], files["X"], files["Y"])
    P = len(H)
    assert list(f["param_names"]) == [name for name, _ in files["model"].named_parameters()]
    assert f["theta"].shape == (P,) and f["eigenvectors"].shape == (P, 3) and f["hessian"].shape == (P, P)
    assert str(f["loss_kind"]) == "cross-entropy" and int(f["batch_size"]) == 3
    lam, U = np.linalg.eigh(H)
    gap = np.linalg.norm(f["hessian"] - H, 2)  # the products' operator against the dense reference
    np.testing.assert_allclose(f["spectrum"], lam, rtol=0, atol=gap + P * EPS * np.abs(lam).max())
    top = lam[::-1][:3]
    assert np.all(np.abs(f["eigenvalues"] - top) <= f["residuals"] + gap + P * EPS * np.abs(lam).max())
    assert np.all(np.abs(f["eigenvalues"] - top) <= 1e-3 * np.abs(top))
    assert np.all(np.abs(np.sum(f["eigenvectors"] * U[:, ::-1][:, :3], axis=0)) >= 0.999)
    assert len(f["trace_samples"]) == 12
    assert abs(float(f["trace"]) - np.trace(H)) <= 4 * float(f["trace_se"])
    assert summary["hessian"]["eigenvalues"] == pytest.approx(list(f["eigenvalues"]), rel=1e-15)
    d = np.load(out / "density.npz")
    assert d["nodes"].shape == (12, 12) and int(d["n_params"]) == P
    assert str(out / "density.npz") in summary["files"]


def test_the_bottom_eigenvalues_and_the_extreme_plane_from_the_command_line(files, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [str(files["cnn"]), "--data", str(files["data"]), "--out", str(out), "--hessian", "--probes", "4"]
    argv += ["--top-k", "1", "--bottom-k", "2", "--plane", "3", "--directions", "hessian-extremes"]
    assert cli.main(["landscape", *argv], prog="main.py") == 0
    summary = json.loads(capsys.readouterr().out)
    f = np.load(out / "hessian.npz")
    assert "hessian" not in f.files  # not asked for, and dearer than the estimates
    lam, U = np.linalg.eigh(dense_hessian(files["model"], files["X"], files["Y"]))
    scale = np.abs(lam).max()
    np.testing.assert_allclose(f["bottom_eigenvalues"], lam[:2], rtol=0, atol=1e-3 * scale)
    assert summary["hessian"]["bottom_eigenvalues"] == pytest.approx(list(f["bottom_eigenvalues"]), rel=1e-15)
    plane = np.load(out / "plane.npz")
    assert str(plane["normalization"]) == "hessian-extremes"
    assert abs(plane["d1"] @ U[:, 0]) >= 0.999 and abs(plane["d2"] @ U[:, -1]) >= 0.999


def test_bad_hessian_options_are_one_line_and_nothing_is_written(files, tmp_path, capsys):
    base = [str(files["cnn"]), "--data", str(files["data"])]
    cases = {
        "one probe": (base + ["--hessian", "--probes", "1"], "probes = 1"),
        "density without the Hessian": (base + ["--density"], "add --hessian"),
        "an MLP file": ([str(files["data"]), "--hessian"], "--hessian needs a model read as a module"),
    }
    assert_landscape_refuses(cases, tmp_path, capsys)
