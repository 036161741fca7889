"""The landscape toolkit on any nn.Module (engine.landscape.module_*), against plain PyTorch.

Every reference here is computed without the code under test: the original module in eval mode
with θ loaded by ``torch.nn.utils.vector_to_parameters`` and one plain forward over all the data,
dense Hessians by ``torch.autograd.functional.hessian``, numpy's SVD for the PCA plane.
"""

import threading
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.landscape import directions as MD
from engine.landscape.interpolation import module_interpolation_job
from engine.landscape.module_loss import VALUE_CHUNKS, ModuleLoss
from engine.landscape.operations import plane_job
from engine.landscape.plane import plane_row, points_job
from engine.landscape.trajectory_pca import check_count, checkpoint_plane_job
from tests.models import CLASSES, images, trained_cnn

EPS = np.finfo(np.float64).eps


@dataclass(frozen=True, eq=False)
class Net:  # what ModuleLoss reads of an engine.io.module_network.ModuleNetwork
    module: nn.Module
    X: np.ndarray
    Y: np.ndarray
    fixed_batch: int | None = None


def cnn_net(n=10, seed=0, fixed_batch=None) -> Net:
    labels = np.random.default_rng(seed).integers(0, CLASSES, n)
    return Net(trained_cnn(seed), images(n, seed + 1).numpy(), labels, fixed_batch)


def tiny_net(n=7, fixed_batch=None) -> Net:
    """Conv → batch norm → relu → linear: 57 parameters, small enough for a dense Hessian."""
    torch.manual_seed(3)
    module = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))
    module.train()
    with torch.no_grad():
        module(torch.randn(8, 1, 4, 4) * 2 + 1)  # running statistics away from 0 and 1
    X = torch.randn(n, 1, 4, 4, generator=torch.Generator().manual_seed(4)).numpy()
    return Net(module.eval(), X, np.random.default_rng(5).integers(0, 3, n), fixed_batch)


def reference_loss(net: Net, theta, kind: str) -> float:
    """The module itself, θ loaded into its parameters, one forward over all the data (float64)."""
    module = _copy64(net.module)
    torch.nn.utils.vector_to_parameters(torch.as_tensor(theta, dtype=torch.float64), module.parameters())
    with torch.no_grad():
        return _plain_loss(module(torch.as_tensor(net.X, dtype=torch.float64)), net.Y, kind)


def _copy64(module: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(module).double().eval()


def _plain_loss(out: torch.Tensor, Y, kind: str):
    if kind == "cross-entropy":
        return nn.functional.cross_entropy(out, torch.as_tensor(Y, dtype=torch.int64))
    y = torch.as_tensor(np.asarray(Y, float)).reshape(out.shape)
    return ((out - y) ** 2).sum() / (len(out) if kind == "mean" else 1)


def dense_hessian(net: Net, theta, kind: str) -> np.ndarray:
    """The Hessian of the plain module's loss by torch.autograd.functional.hessian (reverse over
    reverse, formed whole), θ put into the parameters by torch.func.functional_call."""
    module = _copy64(net.module)
    names = [n for n, _ in module.named_parameters()]
    shapes = [p.shape for _, p in module.named_parameters()]
    buffers = dict(module.named_buffers())
    X = torch.as_tensor(net.X, dtype=torch.float64)

    def f(t):
        params, pos = {}, 0
        for name, shape in zip(names, shapes):
            params[name] = t[pos : pos + shape.numel()].reshape(shape)
            pos += shape.numel()
        return _plain_loss(torch.func.functional_call(module, {**params, **buffers}, (X,)), net.Y, kind)

    return torch.autograd.functional.hessian(f, torch.as_tensor(theta, dtype=torch.float64)).numpy()


def perturbed(loss: ModuleLoss, scale=0.05, seed=9) -> np.ndarray:
    theta = loss.theta.numpy()
    return theta + scale * np.random.default_rng(seed).standard_normal(theta.shape) * np.abs(theta).mean()


# ── ModuleLoss ─────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("kind", ["cross-entropy", "sum", "mean"])
def test_module_loss_is_the_plain_forward_loss_chunked_or_not(kind):
    net = cnn_net(11)
    if kind != "cross-entropy":  # squared losses on (N, e) targets
        net = Net(net.module, net.X, np.random.default_rng(2).normal(size=(11, CLASSES)))
    whole = ModuleLoss(net, kind)
    chunked = ModuleLoss(net, kind, batch_size=4)  # 4 + 4 + 3
    assert whole.names == tuple(n for n, _ in net.module.named_parameters())
    np.testing.assert_array_equal(
        whole.theta.numpy(), torch.nn.utils.parameters_to_vector(net.module.parameters()).detach().double().numpy()
    )
    for theta in (whole.theta.numpy(), perturbed(whole)):
        ref = float(reference_loss(net, theta, kind))
        # summation order differs (chunks, batched convolutions): rounding of a few ε per term
        tol = 1e3 * EPS * abs(ref)
        assert abs(whole.loss(theta) - ref) <= tol
        assert abs(chunked.loss(theta) - ref) <= tol


def test_a_value_takes_value_chunks_at_once_and_a_gradient_one_chunk():
    """A loss value alone (a plane's point) is evaluated ``VALUE_CHUNKS`` chunks at once, a
    gradient still ``batch_size`` samples at a time; the value is the plain forward's."""
    net = cnn_net(11)
    loss = ModuleLoss(net, "cross-entropy", batch_size=2)
    assert loss.value_batch == 2 * VALUE_CHUNKS < 11  # so the values too come in more than one chunk
    seen = []
    hook = loss.evaluated.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape[0]))
    try:
        theta = perturbed(loss)
        value = loss.loss(theta)
        sizes = [2 * VALUE_CHUNKS] * (11 // (2 * VALUE_CHUNKS)) + [11 % (2 * VALUE_CHUNKS)]
        assert seen == sizes
        seen.clear()
        g = loss.gradient(theta).numpy()
        assert seen == [2, 2, 2, 2, 2, 1]
    finally:
        hook.remove()
    ref = float(reference_loss(net, theta, "cross-entropy"))
    assert abs(value - ref) <= 1e3 * EPS * abs(ref)
    assert g.shape == (loss.n_params,) and np.abs(g).max() > 0  # its values: the dense-Hessian test below


class ViewsItsInput(nn.Module):
    """Flattens its image input with ``view``, which a channels-last batch cannot take."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(int(np.prod(images(1).shape[1:])), CLASSES)

    def forward(self, x):
        return self.head(x.view(len(x), -1))


def test_an_image_batch_is_channels_last_unless_the_model_cannot_take_it():
    conv = ModuleLoss(cnn_net(6), "cross-entropy", batch_size=4)
    assert conv.X.is_contiguous(memory_format=torch.channels_last) and not conv.X.is_contiguous()
    net = Net(ViewsItsInput().double(), images(6).numpy(), np.arange(6) % CLASSES)
    with pytest.raises(RuntimeError, match="view"):  # what the fallback is for
        net.module(torch.as_tensor(net.X, dtype=torch.float64).contiguous(memory_format=torch.channels_last))
    viewed = ModuleLoss(net, "cross-entropy", batch_size=4)
    assert viewed.X.is_contiguous()
    ref = float(reference_loss(net, viewed.theta.numpy(), "cross-entropy"))
    assert abs(viewed.loss() - ref) <= 1e3 * EPS * abs(ref)


def test_accuracy_is_the_share_of_argmax_hits():
    net = cnn_net(13)
    loss = ModuleLoss(net, "cross-entropy", batch_size=5)
    theta = perturbed(loss, 0.3)
    module = _copy64(net.module)
    torch.nn.utils.vector_to_parameters(torch.as_tensor(theta), module.parameters())
    with torch.no_grad():
        predicted = module(torch.as_tensor(net.X, dtype=torch.float64)).argmax(1).numpy()
    _, accuracy = loss.loss_and_accuracy(theta)
    assert accuracy == np.mean(predicted == net.Y)
    assert ModuleLoss(Net(net.module, net.X, np.zeros((13, CLASSES))), "mean").loss_and_accuracy()[1] is None


@pytest.mark.parametrize("kind", ["cross-entropy", "mean"])
def test_gradient_and_hvp_match_the_dense_hessian_chunked_and_unchunked(kind):
    net = tiny_net()
    if kind == "mean":
        net = Net(net.module, net.X, np.random.default_rng(6).normal(size=(len(net.X), 3)))
    loss = ModuleLoss(net, kind)
    theta = perturbed(loss)
    H = dense_hessian(net, theta, kind)
    V = np.random.default_rng(7).standard_normal((loss.n_params, 10))  # vmapped groups of 8 and 2
    # each entry of H V rounds by at most ~n ε Σ_j |H_ij V_j| (the dense product and ours alike)
    tol = 4 * loss.n_params * EPS * (np.abs(H) @ np.abs(V)) + 1e3 * EPS * np.abs(H).max()
    for batch_size in (None, 2, 3):  # one chunk; 2+2+2+1; 3+3+1
        ml = ModuleLoss(net, kind, batch_size=batch_size)
        assert np.all(np.abs(ml.hvp(theta, V).numpy() - H @ V) <= tol)
        assert np.all(np.abs(ml.hvp(theta, V[:, 0]).numpy() - H @ V[:, 0]) <= tol[:, 0])
    # the gradient against plain autograd: θ in the module's parameters, one backward
    module = _copy64(net.module)
    torch.nn.utils.vector_to_parameters(torch.as_tensor(theta), module.parameters())
    _plain_loss(module(torch.as_tensor(net.X, dtype=torch.float64)), net.Y, kind).backward()
    reference = torch.cat([p.grad.reshape(-1) for p in module.parameters()]).numpy()
    g = ModuleLoss(net, kind, batch_size=3).gradient(theta).numpy()
    np.testing.assert_allclose(g, reference, rtol=0, atol=1e3 * EPS * np.abs(reference).max())


def test_fixed_batch_feeds_exactly_that_batch_and_masks_the_ragged_last_chunk():
    net = tiny_net(n=7)
    seen = []
    fixed = ModuleLoss(Net(net.module, net.X, net.Y, fixed_batch=3), "cross-entropy")  # 3 + 3 + 1 (padded)
    # the module as evaluated: the user's, or its graph with batch norm folded into the convolutions
    hook = fixed.evaluated.register_forward_pre_hook(lambda m, args: seen.append(args[0].shape[0]))
    try:
        theta = perturbed(fixed)
        value = fixed.loss(theta)
        assert seen == [3, 3, 3]
        whole = ModuleLoss(net, "cross-entropy")
        V = np.random.default_rng(8).standard_normal((fixed.n_params, 2))
        H = dense_hessian(net, theta, "cross-entropy")
        tol = 4 * fixed.n_params * EPS * (np.abs(H) @ np.abs(V)) + 1e3 * EPS * np.abs(H).max()
        assert np.all(np.abs(fixed.hvp(theta, V).numpy() - H @ V) <= tol)
        assert abs(value - whole.loss(theta)) <= 1e3 * EPS * value
        assert abs(value - float(reference_loss(net, theta, "cross-entropy"))) <= 1e3 * EPS * value
    finally:
        hook.remove()


def test_module_loss_refuses_bad_input_in_one_line():
    net = tiny_net()
    cases = [
        (Net(net.module, net.X[:, :, :2], net.Y), "does not take inputs"),
        (Net(net.module, net.X, net.Y[:-1]), "samples but Y has"),
        (Net(net.module, net.X, net.Y + 3), "class labels"),
        (Net(net.module, net.X.astype(complex), net.Y), "dtype"),
        (Net(net.module, np.where(net.X > 2, np.nan, net.X), net.Y), "NaN"),
    ]
    for bad, text in cases:
        with pytest.raises(EngineInputError, match=text) as info:
            ModuleLoss(bad, "cross-entropy")
        assert "\n" not in str(info.value)
    with pytest.raises(EngineInputError, match="fixed batch of 3"):
        ModuleLoss(Net(net.module, net.X, net.Y, fixed_batch=3), "cross-entropy", batch_size=4)
    with pytest.raises(EngineInputError, match="batch-size"):
        ModuleLoss(net, "cross-entropy", batch_size=0)
    with pytest.raises(EngineInputError, match="shape"):
        ModuleLoss(net, "cross-entropy").loss(np.zeros(3))


# ── directions ─────────────────────────────────────────────────────────────────────────────────


def pieces(module: nn.Module, flat):
    """(name, parameter, the same tensor's piece of ``flat``), walking the module itself."""
    pos = 0
    for name, p in module.named_parameters():
        yield name, p.detach().double().numpy(), np.asarray(flat)[pos : pos + p.numel()].reshape(p.shape)
        pos += p.numel()


@pytest.mark.parametrize("ignore", ["none", "biasbn"])
def test_filter_directions_have_theta_norm_per_filter_and_biasbn_zeros(ignore):
    net = cnn_net()
    loss = ModuleLoss(net, "cross-entropy")
    d = MD.directions(loss.shapes, loss.theta.numpy(), 2, seed=4, normalization="filter", ignore=ignore)
    raw = np.random.default_rng(4).standard_normal((2, loss.n_params))
    kinds = set()
    for k in range(2):
        for (name, p, dk), (_, _, rk) in zip(pieces(net.module, d[k]), pieces(net.module, raw[k])):
            if p.ndim >= 2:  # conv output channels and linear rows: θ's norm, the raw draw's direction
                kinds.add(p.ndim)
                rows, draw = dk.reshape(len(p), -1), rk.reshape(len(p), -1)
                np.testing.assert_allclose(np.linalg.norm(rows, axis=1), np.linalg.norm(p.reshape(len(p), -1), axis=1))
                cos = (rows * draw).sum(1) / np.linalg.norm(rows, axis=1) / np.linalg.norm(draw, axis=1)
                np.testing.assert_allclose(cos, 1)
            elif ignore == "biasbn":
                assert not dk.any(), name  # biases and batch norm's weights and biases
            else:
                np.testing.assert_array_equal(dk, p)  # Li et al. copy the 1-D parameters
    assert kinds == {2, 4}  # the CNN has both kinds of weight
    norms = MD.filter_norms(loss.shapes, d[0])
    assert norms.shape == (sum(s[0] for s in loss.shapes if len(s) >= 2),)


def test_layer_and_random_directions():
    net = cnn_net()
    loss = ModuleLoss(net, "cross-entropy")
    theta = loss.theta.numpy()
    layer = MD.directions(loss.shapes, theta, 1, seed=2, normalization="layer", ignore="biasbn")[0]
    for _, p, dk in pieces(net.module, layer):
        np.testing.assert_allclose(np.linalg.norm(dk), np.linalg.norm(p) if p.ndim >= 2 else 0.0, atol=1e-15)
    rand = MD.directions(loss.shapes, theta, 2, seed=2, normalization="random", ignore="biasbn")
    np.testing.assert_allclose(np.linalg.norm(rand, axis=1), 1)
    assert all(not dk.any() for _, p, dk in pieces(net.module, rand[1]) if p.ndim < 2)
    with pytest.raises(EngineInputError, match="ignore"):
        MD.directions(loss.shapes, theta, 2, ignore="biases-and-more")


# ── plane, line, checkpoints ───────────────────────────────────────────────────────────────────


def test_filter_plane_of_a_residual_cnn_recomputes_at_every_grid_point():
    net = cnn_net(9)
    loss = ModuleLoss(net, "cross-entropy", batch_size=4)
    p = run_to_completion(plane_job(loss, 5, 0.8, "filter", "biasbn", seed=1))
    assert p.loss.shape == (5, 5)
    for i, a in enumerate(p.alpha):
        for j, b in enumerate(p.beta):
            ref = float(reference_loss(net, p.theta + a * p.d1 + b * p.d2, "cross-entropy"))
            # float64 throughout: rounding of a few ε per term, far inside the 1e-4
            assert abs(p.loss[i, j] - ref) <= 1e3 * EPS * ref
    assert p.L_star == pytest.approx(float(reference_loss(net, p.theta, "cross-entropy")), rel=1e3 * EPS)
    row = plane_row(loss, p.theta, p.d1, p.d2, p.alpha[2], p.beta)
    np.testing.assert_array_equal(row, p.loss[2])  # a row alone is the grid's row, bit for bit
    with pytest.raises(EngineInputError, match="points a side"):
        run_to_completion(plane_job(loss, 202))


def interpolated_reference(net_a: Net, net_b: Net, alpha, kind):
    """A loop over α: model A's module with (1 − α) A + α B loaded as its whole state_dict."""
    module = _copy64(net_a.module)
    a, b = net_a.module.state_dict(), net_b.module.state_dict()
    X = torch.as_tensor(net_a.X, dtype=torch.float64)
    losses, accuracy = [], []
    for t in alpha:
        mixed = {k: ((1 - t) * a[k].double() + t * b[k].double()) if a[k].is_floating_point() else a[k] for k in a}
        module.load_state_dict(mixed)
        with torch.no_grad():
            out = module(X)
        losses.append(float(_plain_loss(out, net_a.Y, kind)))
        accuracy.append(float((out.argmax(1).numpy() == net_a.Y).mean()))
    return np.array(losses), np.array(accuracy)


def test_interpolation_barrier_and_accuracy_against_a_direct_loop():
    net_a = cnn_net(12, seed=0)
    net_b = Net(trained_cnn(5), net_a.X, net_a.Y)
    loss = ModuleLoss(net_a, "cross-entropy", batch_size=5)
    b_state = net_b.module.state_dict()
    theta_b = torch.nn.utils.parameters_to_vector(net_b.module.parameters()).detach()
    buffers_b = {k: v for k, v in b_state.items() if k in loss.buffers}
    r = run_to_completion(module_interpolation_job(loss, theta_b, buffers_b, points=21))
    ref, acc = interpolated_reference(net_a, net_b, r.alpha, "cross-entropy")
    tol = 1e3 * EPS * np.abs(ref).max()
    np.testing.assert_allclose(r.loss, ref, rtol=0, atol=tol)
    np.testing.assert_array_equal(r.accuracy, acc)
    inside = (r.alpha >= 0) & (r.alpha <= 1)
    chord = (1 - r.alpha) * ref[np.isclose(r.alpha, 0)][0] + r.alpha * ref[np.isclose(r.alpha, 1)][0]
    assert r.barrier == pytest.approx((ref - chord)[inside].max(), abs=4 * tol)
    assert r.loss_b == pytest.approx(ref[np.isclose(r.alpha, 1)][0], abs=tol)  # B's own buffers at α = 1
    acc_chord = (1 - r.alpha) * acc[np.isclose(r.alpha, 0)][0] + r.alpha * acc[np.isclose(r.alpha, 1)][0]
    assert r.accuracy_barrier == pytest.approx((acc_chord - acc)[inside].max(), abs=1e-12)


def test_checkpoint_plane_is_numpy_svd_pca_of_the_checkpoints_minus_the_last():
    net = cnn_net(8)
    loss = ModuleLoss(net, "cross-entropy")
    rng = np.random.default_rng(11)
    final = net.module.state_dict()
    drift = lambda v, scale: v + scale * torch.as_tensor(rng.standard_normal(v.shape), dtype=v.dtype).abs()
    # a random walk ending at the model, its batch norm statistics (kept positive) drifting too
    states = [{k: drift(v, 0.1 * (4 - t)) if v.is_floating_point() else v for k, v in final.items()} for t in range(5)]
    r = run_to_completion(checkpoint_plane_job(loss, states, n=4))
    P = np.stack([np.concatenate([s[n].double().numpy().ravel() for n in loss.names]) for s in states])
    M = P - P[-1]
    _, sv, Vt = np.linalg.svd(M - M.mean(0), full_matrices=False)
    np.testing.assert_allclose(np.abs((r.components * Vt[:2]).sum(1)), 1, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r.explained, sv[:2] ** 2 / (sv**2).sum(), rtol=1e-10)
    np.testing.assert_allclose(r.paths[0], M @ r.components.T, rtol=0, atol=1e-10 * np.abs(M).max())
    np.testing.assert_array_equal(r.paths[0][-1], 0)
    # the surface uses the last checkpoint's buffers: its centre is that model's loss
    module = _copy64(net.module)
    module.load_state_dict(states[-1])
    centre = Net(module, net.X, net.Y)
    p = r.plane
    for i, j in ((0, 0), (3, 1), (2, 3)):
        ref = float(reference_loss(centre, p.theta + p.alpha[i] * p.d1 + p.beta[j] * p.d2, "cross-entropy"))
        assert abs(p.loss[i, j] - ref) <= 1e3 * EPS * ref
    own = r.runs[0].loss
    for t in (0, 2):
        module.load_state_dict(states[t])
        assert own[t] == pytest.approx(float(reference_loss(centre, P[t], "cross-entropy")), rel=1e3 * EPS)
    with pytest.raises(EngineInputError, match="at least 3 checkpoints"):
        run_to_completion(checkpoint_plane_job(loss, states[:2]))
    with pytest.raises(EngineInputError, match="trajectory limit"):
        check_count(1000, 10**6)  # before a single checkpoint is read


def test_points_job_yields_while_a_point_runs_and_a_close_stops_it_at_the_next_point():
    started, release, calls = threading.Event(), threading.Event(), []

    def evaluate(i):
        calls.append(i)
        if i == 1:  # the second point blocks until the test lets it go
            started.set()
            release.wait()
        return float(i), None

    job = points_job(5, evaluate)
    while not started.is_set():
        next(job)
    held = [next(job) for _ in range(3)]  # the job yields while the point runs
    assert [u.fraction for u in held] == [1 / 5] * 3 and held[-1].message == "point 1/5"
    job.close()
    release.set()
    for thread in threading.enumerate():
        if thread.name == "engine-wait-for":
            thread.join()
    assert calls == [0, 1]  # closed: no point after the one running
    values, accuracy = run_to_completion(points_job(3, lambda i: (i * 2.0, 0.5)))
    np.testing.assert_array_equal(values, [0, 2, 4])
    np.testing.assert_array_equal(accuracy, [0.5] * 3)


def test_two_threads_sharing_one_module_loss_get_their_own_points():
    # functional_call swaps the module's tensors while it runs: unguarded, two threads saw each
    # other's parameters (and the module's own float32 ones)
    from concurrent.futures import ThreadPoolExecutor

    loss = ModuleLoss(cnn_net(8), "cross-entropy", batch_size=2)
    thetas = [perturbed(loss, 0.5, seed) for seed in range(2)]
    serial = [loss.loss(t) for t in thetas]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda k: loss.loss(thetas[k % 2]), range(40)))
    assert results == [serial[k % 2] for k in range(40)]
