"""``landscape-lens show FILE.npz``: each result file ``landscape`` writes (a plane, a PCA plane, an
interpolation, a Hessian with its density) drawn in the toolkit tab and saved with ``--out``,
under Xvfb; a file it cannot draw is one line and status 2."""

from pathlib import Path

import numpy as np
import pytest

from landscape_lens.cli import main

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
MLP = [str(RESOURCES / "networks/your-network.pt"), "--activation", "relu"]
MLP += ["--data", str(RESOURCES / "data/your-network.csv"), "--no-vts"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from tests.models import export_cnn, trained_cnn, write_data

    out = tmp_path_factory.mktemp("results")
    assert main(["landscape", *MLP, "--plane", "9", "--out", str(out / "plane")]) == 0
    assert main(["landscape", *MLP, "--train", "12", "--plane", "7", "--out", str(out / "pca")]) == 0
    assert main(["landscape", *MLP, "--interpolate", MLP[0], "--points", "11", "--out", str(out / "line")]) == 0
    pt2, data = export_cnn(trained_cnn(0), out / "cnn.pt2"), write_data(out / "D.npz", n=8)
    hessian = ["--hessian", "--density", "--probes", "2", "--steps", "8", "--top-k", "1"]
    assert main(["landscape", str(pt2), "--data", str(data), *hessian, "--out", str(out / "h")]) == 0
    return {
        "plane": out / "plane/plane.npz",
        "pca": out / "pca/plane.npz",
        "interpolation": out / "line/interp.npz",
        "density": out / "h/hessian.npz",
    }


@pytest.mark.parametrize("mode", ["plane", "pca", "interpolation", "density"])
def test_show_draws_each_saved_result(files, mode, tmp_path, capsys):
    from landscape_lens.commands.show import saved_view

    result, state = saved_view(files[mode])
    assert result.mode == state["mode"] == mode
    if mode in ("plane", "pca"):
        saved = np.load(files[mode])
        np.testing.assert_array_equal(state["plane"]["loss"], saved["loss"])
        assert "persistence" in state
    png = tmp_path / f"{mode}.png"
    assert main(["show", str(files[mode]), "--out", str(png), "--size", "1200x800"]) == 0
    assert png.stat().st_size > 0 and "wrote" in capsys.readouterr().out


def test_show_refuses_what_it_cannot_draw(tmp_path, capsys):
    bad = tmp_path / "other.npz"
    np.savez(bad, something=np.zeros(3))
    assert main(["show", str(bad)]) == 2
    assert "holds none of plane.npz" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "missing.npz")]) == 2
    assert main(["show", str(bad), "--out", str(tmp_path / "x.jpg")]) == 2
