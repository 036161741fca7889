"""``import landscape_lens as ll`` on a small residual CNN with batch norm, each result checked
against an independent float64 computation: the model evaluated the plain way (eval mode, θ put in
by ``vector_to_parameters``, one forward over all the data) and its Hessian formed whole by
``torch.func.hessian`` and diagonalised by numpy."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn import functional as F

import landscape_lens as ll
from tests.models import CLASSES, export_cnn, images, trained_cnn

ROOT = Path(__file__).resolve().parents[1]
N = 24


@pytest.fixture(scope="module")
def setup():
    model = trained_cnn(0)
    X = images(N)
    Y = torch.as_tensor(np.random.default_rng(0).integers(0, CLASSES, N))
    return model, X, Y


def reference_model(model):
    """A float64 copy in eval mode: the independent evaluation."""
    import copy

    return copy.deepcopy(model).double().eval()


def reference_loss(m64, theta, X, Y) -> float:
    torch.nn.utils.vector_to_parameters(torch.as_tensor(theta, dtype=torch.float64), m64.parameters())
    with torch.no_grad():
        return float(F.cross_entropy(m64(X.double()), Y))


def reference_hessian(model, X, Y) -> np.ndarray:
    m64 = reference_model(model)
    names = [n for n, _ in m64.named_parameters()]
    params = [p.detach() for p in m64.parameters()]
    buffers = dict(m64.named_buffers())
    theta = torch.cat([p.reshape(-1) for p in params])

    def loss(flat):
        parts = flat.split([p.numel() for p in params])
        state = {n: v.view(p.shape) for n, v, p in zip(names, parts, params)}
        return F.cross_entropy(torch.func.functional_call(m64, {**state, **buffers}, (X.double(),)), Y)

    return torch.func.hessian(loss)(theta).numpy()


def test_plane_equals_the_model_evaluated_at_every_point(setup):
    model, X, Y = setup
    p = ll.plane(model, (X, Y), points=5, extent=0.5, seed=3, progress=False)
    assert p.loss.shape == (5, 5) and p.kind == "cross-entropy"
    assert p.param_names == tuple(n for n, _ in model.named_parameters())
    m64 = reference_model(model)
    expected = np.array([[reference_loss(m64, p.theta + a * p.d1 + b * p.d2, X, Y) for b in p.beta] for a in p.alpha])
    np.testing.assert_allclose(p.loss, expected, rtol=1e-6)
    assert p.L_star == pytest.approx(reference_loss(m64, p.theta, X, Y), rel=1e-12)
    # the caller's module is untouched: still float32, its own parameters
    assert next(model.parameters()).dtype == torch.float32 and not model.training


def test_a_data_loader_and_a_loss_callable_give_the_tensors_plane(setup):
    model, X, Y = setup
    options = dict(points=4, extent=0.5, seed=1, progress=False)
    tensors = ll.plane(model, (X, Y), **options)
    # batches of 7, 7, 7 and 3 samples: different sizes are handled, not refused
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=7)
    np.testing.assert_allclose(ll.plane(model, loader, **options).loss, tensors.loss, rtol=1e-10, atol=0)
    dataset = torch.utils.data.TensorDataset(X, Y)
    np.testing.assert_allclose(ll.plane(model, dataset, **options).loss, tensors.loss, rtol=1e-10, atol=0)

    def mean_cross_entropy(net, batch):  # by hand: log-sum-exp minus the label's logit, averaged
        x, y = batch
        logits = net(x)
        return (torch.logsumexp(logits, 1) - logits.gather(1, y[:, None])[:, 0]).mean()

    custom = ll.plane(model, loader, loss=mean_cross_entropy, **options)
    np.testing.assert_allclose(custom.loss, tensors.loss, rtol=1e-10, atol=0)


def test_a_loss_callable_takes_models_returning_dicts(setup):
    model, X, Y = setup

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = model

        def forward(self, x):
            return {"logits": self.net(x), "aux": x.mean()}

    loss = lambda net, batch: F.cross_entropy(net(batch[0])["logits"], batch[1])
    got = ll.plane(Wrapped(), (X, Y), loss=loss, points=3, extent=0.2, progress=False)
    plain = ll.plane(model, (X, Y), points=3, extent=0.2, progress=False)
    np.testing.assert_allclose(got.loss, plain.loss, rtol=1e-10)


def test_hessian_eigenvalues_and_trace_agree_with_the_formed_hessian(setup):
    model, X, Y = setup
    H = reference_hessian(model, X, Y)
    exact = np.linalg.eigvalsh(H)
    h = ll.hessian(model, (X, Y), top_k=2, probes=200, seed=0, progress=False)
    scale = abs(exact[-1])
    np.testing.assert_allclose(h.eigenvalues, exact[::-1][:2], atol=1e-3 * scale)
    assert abs(h.trace - exact.sum()) <= max(0.05 * abs(exact.sum()), 4 * h.trace_se)
    assert h.param_names == tuple(n for n, _ in model.named_parameters())


def test_bottom_eigenvalue_agrees_with_the_formed_hessian(setup):
    model, X, Y = setup
    from engine.landscape import module_hessian

    if "bottom_k" not in module_hessian.module_hessian_job.__code__.co_varnames:
        pytest.fail("module_hessian_job takes no bottom_k")
    exact = np.linalg.eigvalsh(reference_hessian(model, X, Y))
    h = ll.hessian(model, (X, Y), top_k=1, bottom_k=1, probes=4, progress=False)
    assert h.bottom_eigenvalues[0] == pytest.approx(exact[0], abs=1e-3 * abs(exact[-1]))


def test_the_full_hessian_is_formed_only_when_asked(setup):
    model, X, Y = setup
    cheap = ll.hessian(model, (X, Y), top_k=1, probes=4, full=False, progress=False)
    assert cheap.hessian is None and cheap.n_hvp < cheap.n_params
    formed = ll.hessian(model, (X, Y), top_k=1, probes=4, full=True, progress=False)
    np.testing.assert_allclose(formed.hessian, reference_hessian(model, X, Y), atol=1e-10)


def test_interpolation_equals_the_models_mixed_by_hand(setup):
    model, X, Y = setup
    other = trained_cnn(3)
    line = ll.interpolation(model, other, (X, Y), points=5, progress=False)
    m64 = reference_model(model)
    a, b = line.theta_a, line.theta_b
    for alpha, value in zip(line.alpha, line.loss):
        m64.load_state_dict(
            {
                k: (1 - alpha) * va.double() + alpha * vb.double() if va.is_floating_point() else va
                for (k, va), vb in zip(model.state_dict().items(), other.state_dict().values())
            }
        )
        expected = reference_loss(m64, (1 - alpha) * a + alpha * b, X, Y)
        assert value == pytest.approx(expected, rel=1e-9)
    assert line.accuracy is not None and line.accuracy.shape == (5,)


def test_trajectory_plane_of_checkpoints(setup):
    model, X, Y = setup
    rng = np.random.default_rng(0)
    states = [
        {k: v + 0.05 * t * torch.as_tensor(rng.random(v.shape), dtype=v.dtype) if v.is_floating_point() else v
         for k, v in model.state_dict().items()}
        for t in range(4)
    ]  # fmt: skip
    r = ll.trajectory_plane(states, model, (X, Y), points=4, progress=False)
    assert r.path.shape == (4, 2) and r.plane.loss.shape == (4, 4)
    m64 = reference_model(model)
    m64.load_state_dict(states[1])
    theta_1 = torch.nn.utils.parameters_to_vector(m64.parameters()).detach().numpy()
    assert r.path_loss[1] == pytest.approx(reference_loss(m64, theta_1, X, Y), rel=1e-10)


def test_every_result_round_trips_through_its_file(setup, tmp_path):
    model, X, Y = setup
    results = {
        "plane": ll.plane(model, (X, Y), points=3, progress=False),
        "hessian": ll.hessian(
            model, (X, Y), top_k=1, probes=3, density=True, density_probes=2, steps=5, progress=False
        ),
        "line": ll.interpolation(model, trained_cnn(3), (X, Y), points=3, progress=False),
    }
    states = [{k: v * (1 + 0.1 * t) for k, v in model.state_dict().items()} for t in range(3)]
    results["pca"] = ll.trajectory_plane(states, model, (X, Y), points=3, progress=False)
    for name, result in results.items():
        path = result.save(tmp_path / f"{name}.npz")
        back = ll.load(path)
        assert type(back) is type(result)
        with np.load(path, allow_pickle=False) as z:
            written = {k: z[k] for k in z.files}
        back.save(tmp_path / f"{name}-again.npz")
        with np.load(tmp_path / f"{name}-again.npz", allow_pickle=False) as z:
            assert set(z.files) == set(written)
            for k in z.files:
                np.testing.assert_array_equal(z[k], written[k], err_msg=f"{name}: {k}")
        assert back.param_names == result.param_names and back.param_shapes == result.param_shapes


def test_plots_are_figures(setup):
    from matplotlib.figure import Figure

    model, X, Y = setup
    p = ll.plane(model, (X, Y), points=3, progress=False)
    fig = p.plot()
    assert isinstance(fig, Figure) and fig.axes[0].collections  # the heatmap is drawn


def test_an_mlp_takes_the_batched_kernel_and_gets_the_same_numbers():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.Tanh(), torch.nn.Linear(6, 6), torch.nn.Tanh(),
                              torch.nn.Linear(6, 1))  # fmt: skip
    X, Y = torch.randn(30, 3), torch.randn(30)
    fast = ll.plane(mlp, (X, Y), loss="sum", points=6, progress=False)
    general = ll.plane(mlp, (X, Y), points=6, progress=False, loss=lambda m, b: ((m(b[0])[:, 0] - b[1]) ** 2).mean())
    np.testing.assert_allclose(fast.loss, general.loss * len(X), rtol=1e-12)
    np.testing.assert_array_equal(fast.d1, general.d1)


def test_the_command_line_on_the_exported_model_equals_the_api(setup, tmp_path):
    model, X, Y = setup
    pt2 = export_cnn(model, tmp_path / "cnn.pt2")
    np.savez(tmp_path / "d.npz", X=X.numpy(), Y=Y.numpy())
    out = tmp_path / "out"
    argv = [sys.executable, "main.py", "landscape", str(pt2), "--data", str(tmp_path / "d.npz"), "--out", str(out)]
    done = subprocess.run([*argv, "--plane", "4", "--seed", "2"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["plane"]
    api = ll.plane(model, (X, Y), points=4, seed=2, progress=False)
    from_file = ll.plane(pt2, tmp_path / "d.npz", points=4, seed=2, progress=False)
    cli = ll.load(out / "plane.npz")
    np.testing.assert_allclose(cli.loss, api.loss, rtol=1e-10, atol=0)
    np.testing.assert_allclose(from_file.loss, api.loss, rtol=1e-10, atol=0)
    assert cli.param_names == api.param_names


def test_importing_the_library_leaves_the_process_alone():
    """``import landscape_lens`` before torch must not change torch's threads for the user's training."""
    code = "import os; os.environ.pop('OMP_NUM_THREADS', None); import landscape_lens as ll, torch; "
    code += "print(os.environ.get('OMP_NUM_THREADS'), torch.get_num_threads())"
    plain = "import os; os.environ.pop('OMP_NUM_THREADS', None); import torch; print(None, torch.get_num_threads())"
    outputs = [
        subprocess.run([sys.executable, "-c", c], cwd=ROOT, capture_output=True, text=True, timeout=300).stdout
        for c in (code, plain)
    ]
    assert outputs[0] == outputs[1] and outputs[0].startswith("None ")
