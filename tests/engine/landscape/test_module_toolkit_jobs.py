"""engine.landscape.toolkit on any PyTorch model (module_mode_job), as the window runs it: the file
is read inside the job, every mode reports its progress, a cancel stops the points, and bad
files and settings are one line before any point is evaluated."""

import threading

import numpy as np
import pytest
import torch

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape.module_loss import ModuleLoss
from engine.landscape.toolkit import NetworkFile, ToolkitSettings, toolkit_job
from tests.models import export_cnn, trained_cnn, write_data


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cnn")
    data = write_data(folder / "D.npz", n=6)
    return NetworkFile(str(export_cnn(trained_cnn(0), folder / "cnn.pt2")), data=str(data)), folder


@pytest.fixture
def counted(monkeypatch):
    """Every ModuleLoss.loss call counted (the plane's points are such calls)."""
    calls = []
    original = ModuleLoss.loss

    def loss(self, *args, **kwargs):
        calls.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModuleLoss, "loss", loss)
    return calls


def test_a_plane_reports_each_point_and_a_cancel_stops_them(cnn, counted):
    file, _ = cnn
    job = toolkit_job(ToolkitSettings(mode="plane", kind="auto", points=41), file)
    seen = []
    for update in job:
        seen.append(update)
        if "plane point" in update.message and counted:
            break
    job.close()  # the window's cancel: GeneratorExit at the yield, the helper thread told to stop
    for thread in [t for t in threading.enumerate() if t.name == "engine-wait-for"]:
        thread.join()
    stopped_at = len(counted)
    assert 0 < stopped_at < 41 * 41
    fractions = [u.fraction for u in seen if np.isfinite(u.fraction)]
    assert fractions == sorted(fractions) and fractions[-1] < 1
    # after the helper thread ended, no point is evaluated any more
    assert len(counted) == stopped_at


def test_every_mode_runs_from_a_file_and_cross_entropy_is_the_default(cnn, tmp_path):
    file, folder = cnn
    model = trained_cnn(0)
    checkpoints = []
    for t in range(3):
        state = {
            k: v + 0.01 * (t + 1) * torch.randn_like(v) if v.is_floating_point() else v
            for k, v in model.state_dict().items()
        }
        checkpoints.append(str(tmp_path / f"c{t}.pt"))
        torch.save(state, checkpoints[-1])
    s = dict(kind="auto", points=5, interp_points=3, probes=2, lanczos_steps=4)
    plane = run_to_completion(toolkit_job(ToolkitSettings(mode="plane", **s), file)).plane
    assert plane.kind == "cross-entropy" and plane.loss.shape == (5, 5)
    pca = run_to_completion(toolkit_job(ToolkitSettings(mode="pca", **s), file, checkpoints=checkpoints)).pca
    assert pca.paths.shape == (1, 3, 2)
    line = run_to_completion(toolkit_job(ToolkitSettings(mode="interpolation", **s), file, file)).interpolation
    # the model to itself: a flat line at its own loss, all along
    np.testing.assert_allclose(line.loss, line.loss_a, rtol=1e-12)
    assert line.accuracy is not None
    result = run_to_completion(toolkit_job(ToolkitSettings(mode="density", **s), file))
    assert result.density is not None and len(result.hessian.eigenvalues) == 3


@pytest.mark.parametrize(
    "mode, extra, needle",
    [
        ("pca", {"checkpoints": ()}, "at least 3"),
        ("interpolation", {}, "second model"),
        ("plane", {"second": "x"}, "second file"),
    ],
)
def test_bad_settings_are_one_line_before_any_point(cnn, counted, mode, extra, needle):
    file, _ = cnn
    with pytest.raises(EngineInputError, match=needle) as error:
        run_to_completion(toolkit_job(ToolkitSettings(mode=mode, kind="auto", points=5), file, **extra))
    assert "\n" not in str(error.value)
    assert not counted


def test_a_bad_checkpoint_names_its_file(cnn, tmp_path):
    file, _ = cnn
    state = trained_cnn(0).state_dict()
    paths = []
    for t in range(3):
        torch.save(state if t != 1 else {**state, "extra.weight": torch.zeros(2)}, tmp_path / f"c{t}.pt")
        paths.append(str(tmp_path / f"c{t}.pt"))
    with pytest.raises(EngineInputError, match=r"c1\.pt.*extra\.weight"):
        run_to_completion(toolkit_job(ToolkitSettings(mode="pca", kind="auto", points=5), file, checkpoints=paths))


def test_a_state_dict_with_its_factory_is_the_same_model_as_its_export(cnn, tmp_path):
    file, _ = cnn
    torch.save(trained_cnn(0).state_dict(), tmp_path / "weights.pt")
    own = NetworkFile(str(tmp_path / "weights.pt"), data=file.data, model="tests.models:residual_cnn")
    s = ToolkitSettings(mode="plane", kind="auto", points=3, seed=4)
    a, b = (run_to_completion(toolkit_job(s, f)).plane for f in (file, own))
    np.testing.assert_array_equal(a.d1, b.d1)
    np.testing.assert_allclose(b.loss, a.loss, rtol=1e-12)  # the graph's ops and the module's, in float64


def test_a_hessian_plane_lies_along_the_dense_hessians_top_eigenvectors(cnn):
    file, _ = cnn
    model = trained_cnn(0).double().eval()
    arrays = np.load(file.data)
    X, Y = torch.from_numpy(arrays["X"]).double(), torch.from_numpy(arrays["Y"])
    named = list(model.named_parameters())

    def loss_of(theta):
        pieces = torch.split(theta, [p.numel() for _, p in named])
        params = {n: t.reshape(p.shape) for (n, p), t in zip(named, pieces)}
        return torch.nn.functional.cross_entropy(torch.func.functional_call(model, params, (X,)), Y)

    theta = torch.cat([p.detach().reshape(-1) for _, p in named])
    _, vectors = np.linalg.eigh(torch.autograd.functional.hessian(loss_of, theta).numpy())
    s = ToolkitSettings(mode="plane", kind="auto", points=3, normalization="hessian")
    plane = run_to_completion(toolkit_job(s, file)).plane
    assert plane.normalization == "hessian"
    for d, v in ((plane.d1, vectors[:, -1]), (plane.d2, vectors[:, -2])):
        assert abs(d @ v) / np.linalg.norm(d) >= 0.999
