"""2-D planes on the MLP kernel (operations.plane_job with an MLPLoss), the toolkit's loss kinds
and the .vts writer, against numpy-only recomputation."""

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import operations, slices, vtk
from engine.landscape.losses import paper_b_hypotheses
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.plane import MLPLoss
from tests.engine.landscape import toolkit_numpy as ref

CASES = [
    ((3, 5, 4, 1), "sigmoid", False, "sum"),
    ((3, 5, 4, 3), "relu", True, "cross-entropy"),
    ((3, 6, 2), "tanh", True, "mean"),
    ((3, 4, 4, 2), "tanh", False, "sum"),
]


def data(arch, kind, n=9, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, arch.widths[0]))
    if kind == "cross-entropy":
        return X, rng.integers(0, arch.n_outputs, n)
    return X, rng.normal(size=(n, arch.n_outputs))


@pytest.mark.parametrize("widths, act, bias, kind", CASES)
def test_plane_losses_match_numpy_at_every_grid_point(widths, act, bias, kind):
    arch = mlp.landscape_arch(widths, act, bias)
    theta = mlp.init_params(arch, np.random.default_rng(1), 1.5)
    X, Y = data(arch, kind)
    r = run_to_completion(operations.plane_job(MLPLoss(arch, theta, X, Y, kind), 7, 0.8, seed=4))
    expect = np.array(
        [[ref.loss(r.theta + a * r.d1 + b * r.d2, widths, bias, act, X, Y, kind) for b in r.beta] for a in r.alpha]
    )
    np.testing.assert_allclose(r.loss, expect, rtol=1e-12, atol=1e-13)
    assert r.L_star == pytest.approx(ref.loss(theta, widths, bias, act, X, Y, kind), rel=1e-12)
    assert r.loss[3, 3] == pytest.approx(r.L_star, rel=1e-12)  # the grid's centre is θ
    np.testing.assert_allclose(r.alpha, np.linspace(-0.8, 0.8, 7))


def test_float32_plane_is_close_and_rows_match_the_slice_kernel():
    """Row i of the plane is the slice through θ + α_i d1 along d2: the slice kernel (θ + t D, a
    different order of products) gives it too."""
    arch = mlp.Arch((2, 4, 3, 1), "sigmoid", True)
    theta = mlp.init_params(arch, np.random.default_rng(2), 2.0)
    X, Y = data(arch, "sum", 12)
    r64 = run_to_completion(operations.plane_job(MLPLoss(arch, theta, X, Y), 9, directions="random", seed=1))
    rows = [
        run_to_completion(slices.slices_job(arch, theta + a * r64.d1, X, Y[:, 0], P=9, directions=r64.d2[None])).curves[
            0
        ]
        for a in r64.alpha
    ]
    np.testing.assert_allclose(r64.loss, rows, rtol=1e-12)
    r32 = run_to_completion(
        operations.plane_job(MLPLoss(arch, theta, X, Y, dtype="float32"), 9, directions="random", seed=1)
    )
    np.testing.assert_allclose(r32.loss, r64.loss, rtol=1e-4)


@pytest.mark.parametrize("widths, act, bias, kind", CASES)
def test_loss_kinds_and_gradients(widths, act, bias, kind):
    arch = mlp.landscape_arch(widths, act, bias)
    theta = mlp.init_params(arch, np.random.default_rng(3), 1.0)
    X, Y = data(arch, kind)
    value, g = mlp.loss_and_grad(arch, theta, X, Y, kind)
    assert value == pytest.approx(ref.loss(theta, widths, bias, act, X, Y, kind), rel=1e-12)
    h = 1e-6
    for i in np.random.default_rng(0).choice(arch.n_params, 6, replace=False):
        e = np.zeros(arch.n_params)
        e[i] = h
        fd = (
            ref.loss(theta + e, widths, bias, act, X, Y, kind) - ref.loss(theta - e, widths, bias, act, X, Y, kind)
        ) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-8)


def test_mean_is_sum_over_n_and_sum_is_unchanged_for_one_output():
    arch = mlp.Arch((2, 3, 1), "tanh", False)
    theta = mlp.init_params(arch, np.random.default_rng(4), 1.0)
    X, Y = data(arch, "sum", 10)
    s = mlp.loss(arch, theta, X, Y)
    assert mlp.loss(arch, theta, X, Y, "mean") == pytest.approx(s / 10, rel=1e-14)
    F = ref.outputs(theta, arch.widths, False, "tanh", X)
    assert s == pytest.approx(((F - Y) ** 2).sum(), rel=1e-13)


def test_bad_losses_and_grids():
    arch = mlp.Arch((2, 3, 1), "tanh", False)
    theta = np.zeros(arch.n_params)
    X, Y = data(arch, "sum")
    with pytest.raises(EngineInputError, match="e ≥ 2"):
        mlp.loss(arch, theta, X, Y, "cross-entropy")
    wide = mlp.landscape_arch((2, 3, 3), "tanh", False)
    with pytest.raises(EngineInputError, match="integer class labels"):
        mlp.loss(wide, np.zeros(wide.n_params), X, np.full(len(X), 0.5), "cross-entropy")
    with pytest.raises(EngineInputError, match="plane size"):
        run_to_completion(operations.plane_job(MLPLoss(arch, theta, X, Y), 1))
    with pytest.raises(EngineInputError, match="unknown loss"):
        run_to_completion(operations.plane_job(MLPLoss(arch, theta, X, Y, "hinge"), 3))
    with pytest.raises(EngineInputError, match="both plane directions"):
        run_to_completion(operations.plane_job(MLPLoss(arch, theta, X, Y), 3, d1=theta))
    with pytest.raises(EngineInputError, match=r"direction d2 has shape \(2,\)"):
        run_to_completion(operations.plane_job(MLPLoss(arch, theta, X, Y), 3, d1=theta, d2=theta[:2]))


def test_paper_b_verdicts_say_when_their_hypotheses_are_unmet():
    assert paper_b_hypotheses("sum").met and paper_b_hypotheses("mean").met
    ce = paper_b_hypotheses("cross-entropy")
    assert not ce.met and "unmet" in ce.note
    assert not paper_b_hypotheses("sum", mlp.landscape_arch((2, 3, 4), "relu")).met


def test_vts_parses_back_to_the_plane(tmp_path):
    alpha, beta = np.linspace(-1, 1, 4), np.linspace(-2, 2, 3)
    loss = np.random.default_rng(0).random((4, 3)) * 10 ** np.arange(3)
    path = vtk.write_vts(tmp_path / "p.vts", alpha, beta, loss)
    root = ET.parse(path).getroot()
    assert root.get("type") == "StructuredGrid"
    grid = root.find("StructuredGrid")
    assert grid.get("WholeExtent") == "0 3 0 2 0 0"
    piece = grid.find("Piece")
    pts = np.array(piece.find("Points/DataArray").text.split(), float).reshape(-1, 3)
    values = {a.get("Name"): np.array(a.text.split(), float) for a in piece.find("PointData")}
    assert pts.shape == (12, 3)
    for j in range(3):  # VTK order: the first index fastest
        for i in range(4):
            x, y, z = pts[i + 4 * j]
            assert (x, y, z) == (alpha[i], beta[j], loss[i, j])  # 17 digits: exact
            assert values["loss"][i + 4 * j] == loss[i, j]
    np.testing.assert_allclose(values["log_loss"], np.log10(loss.T.ravel()))


@dataclass
class _Net:  # what ModuleLoss reads of a network: its module and data
    module: torch.nn.Module
    X: np.ndarray
    Y: np.ndarray
    fixed_batch: int | None = None


@pytest.mark.parametrize("widths, act, bias, kind", CASES)
def test_sequential_of_and_mlp_backend_are_inverses_and_both_kernels_give_one_plane(widths, act, bias, kind):
    """``sequential_of`` makes the module numpy's forward is; ``mlp_backend`` reads it back as the
    same MLPLoss; the one plane job then gives the same grid on the MLP kernel (random
    directions) and on the module kernel (the same directions given), and numpy agrees."""
    arch = mlp.landscape_arch(widths, act, bias)
    theta = mlp.init_params(arch, np.random.default_rng(5), 1.2)
    X, Y = data(arch, kind, n=6)
    module = operations.sequential_of(arch, theta)
    with torch.no_grad():
        out = module(torch.as_tensor(X)).numpy()
    np.testing.assert_allclose(out, ref.outputs(theta, widths, bias, act, X), rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(torch.nn.utils.parameters_to_vector(module.parameters()).detach().numpy(), theta)
    loss = ModuleLoss(_Net(module, X, Y if kind == "cross-entropy" else Y.reshape(len(X), -1)), kind)
    back = operations.mlp_backend(loss)
    assert back.arch == arch and back.kind == kind
    np.testing.assert_array_equal(back.theta, theta)
    fast = run_to_completion(operations.plane_job(loss, 4, 0.7, "random", seed=2))
    slow = run_to_completion(operations.plane_job(loss, 4, 0.7, "random", d1=fast.d1, d2=fast.d2))
    np.testing.assert_allclose(fast.loss, slow.loss, rtol=1e-12, atol=1e-13)
    expect = [
        [ref.loss(theta + a * fast.d1 + b * fast.d2, widths, bias, act, X, Y, kind) for b in fast.beta]
        for a in fast.alpha
    ]
    np.testing.assert_allclose(fast.loss, expect, rtol=1e-12, atol=1e-13)
    assert fast.L_star == pytest.approx(slow.L_star, rel=1e-13)
