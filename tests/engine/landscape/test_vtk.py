"""``main.py landscape``'s plane.vts read back by VTK itself (the ``vtk`` package, the reader
ParaView uses), not by the XML parser the writer was written against: its grid, points and loss
array against plane.npz."""

import numpy as np
import pytest

import main
from engine.io import netfile as netio
from tests.networks import strict_minimum_net

# The vtk package is in the test extra (pyproject.toml). Only its XML reader is loaded, not
# ``import vtk``, which loads VTK's rendering and OpenGL libraries into the tests' process.
vtk_io = pytest.importorskip("vtkmodules.vtkIOXML")
from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402


def read_vts(path):
    reader = vtk_io.vtkXMLStructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    assert reader.GetErrorCode() == 0, f"VTK could not read {path}"
    return reader.GetOutput()


def test_plane_vts_read_by_vtk_equals_plane_npz(tmp_path, capsys):
    net = strict_minimum_net()
    network = netio.save_network(tmp_path / "net.npz", net.arch, net.params, net.X, net.Y)
    out = tmp_path / "out"
    argv = ["landscape", str(network), "--out", str(out), "--plane", "7", "--extent", "0.5", "--seed", "2"]
    assert main.main(argv) == 0, capsys.readouterr().err
    grid = read_vts(out / "plane.vts")
    with np.load(out / "plane.npz") as p:
        alpha, beta, loss = p["alpha"], p["beta"], p["loss"]
    n_alpha, n_beta = loss.shape
    assert grid.GetExtent() == (0, n_alpha - 1, 0, n_beta - 1, 0, 0)
    assert grid.GetNumberOfPoints() == loss.size
    points = vtk_to_numpy(grid.GetPoints().GetData())
    values = vtk_to_numpy(grid.GetPointData().GetArray("loss"))
    # VTK's point order, first index fastest: point i + nα·j is (α_i, β_j, L_ij); 17 digits, so exact.
    A, B = np.meshgrid(alpha, beta, indexing="ij")
    expected = np.stack([A.T.ravel(), B.T.ravel(), loss.T.ravel()], axis=1)
    np.testing.assert_array_equal(points, expected)
    np.testing.assert_array_equal(values, loss.T.ravel())
    assert grid.GetPointData().GetScalars().GetName() == "loss"
    log_loss = vtk_to_numpy(grid.GetPointData().GetArray("log_loss"))
    np.testing.assert_allclose(log_loss, np.log10(loss.T.ravel()), rtol=1e-15)
    # The loss is not constant (a comparison of constants could not fail), and the centre is θ's loss.
    assert np.ptp(values) > 0 and values[n_alpha // 2 + n_alpha * (n_beta // 2)] == loss[n_alpha // 2, n_beta // 2]
