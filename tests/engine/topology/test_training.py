import numpy as np
import pytest
import torch

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.topology.invariants import component_label, rescale_to
from engine.topology.training import TrainConfig, Trajectory, train
from engine.topology.two_layer import TwoLayerNet, gradients, init_params


def _problem(bias=False, e=1, n=60, seed=0):
    rng = np.random.default_rng(seed)
    net = TwoLayerNet(d=2, l=3, e=e, bias=bias)
    X = rng.uniform(-1, 1, size=(n, 2))
    Y = np.column_stack([np.sin(2 * X[:, 0]) - X[:, 1]] * e)
    p = init_params(net, "kaiming_uniform", rng)
    return net, p, X, Y


@pytest.mark.parametrize("bias", [False, True])
def test_gd_drift_identity(bias):
    """c_k(t+1) − c_k(t) = h² (‖g1_k‖² − ‖g2_k‖²), with gradients recomputed independently."""
    net, p, X, Y = _problem(bias=bias, e=2)
    h = 0.05
    tr = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=h, steps=30)))
    for t in range(30):
        q = tr.final_params()
        q.W1, q.W2 = tr.W1[t], tr.W2[t]
        if bias:
            q.b1, q.b2 = tr.b1[t], tr.b2[t]
        g = gradients(net, q, X, Y)
        g1 = np.sum(g.W1**2, 1) + (g.b1**2 if bias else 0)
        expected = h**2 * (g1 - np.sum(g.W2**2, 0))
        np.testing.assert_allclose(tr.c[t + 1] - tr.c[t], expected, rtol=0, atol=1e-12)
        assert np.abs(expected).max() > 1e-8  # the identity is not trivially 0 = 0


def test_flow_conserves_c_and_matches_gd_for_small_steps():
    """GD → flow as h → 0, measured against how far the weights travel: over t = 2 the weights
    move ~0.8, GD with h = 0.001 ends within 5e-4 of the flow (1/1000 of the way), and its gap
    shrinks like h (Euler's global error is first order): h = 0.004 leaves ~4x the gap."""
    net, p, X, Y = _problem()
    flow = run_to_completion(train(net, p, X, Y, TrainConfig("flow", lr=0.01, steps=200, stride=10)))
    assert flow.diverged_at is None and flow.W1.shape == (21, 3, 2)
    np.testing.assert_allclose(flow.c, np.broadcast_to(flow.c[0], flow.c.shape), rtol=1e-6)
    moved = np.abs(flow.W1[-1] - flow.W1[0]).max()
    assert moved > 0.5  # 100x the old 5e-3 tolerance: matching GD is not matching a standstill
    gaps = {}
    for h in (0.004, 0.001):
        gd = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=h, steps=round(2 / h), stride=round(0.1 / h))))
        np.testing.assert_allclose(gd.step * h, flow.step * 0.01, rtol=0, atol=1e-12)  # rows at the same times
        gaps[h] = np.abs(gd.W1 - flow.W1).max()
    assert gaps[0.001] < 5e-4 < 1e-3 * moved
    assert 3.0 < gaps[0.004] / gaps[0.001] < 6.0  # first order in h (4.6 here)
    np.testing.assert_allclose(flow.time, flow.step * 0.01)
    assert flow.loss[-1] < flow.loss[0]


def test_labels_constant_along_trajectories():
    """Inside H(c) a pathological neuron (c < 0, e = 1) keeps its output sign: the label equals
    the sign vector of those weights at every recorded step, and never changes."""
    net, p, X, Y = _problem()
    p = rescale_to(p, [-0.3, 0.4, -0.2])
    for opt in ("gd", "flow"):
        tr = run_to_completion(train(net, p, X, Y, TrainConfig(opt, lr=0.02, steps=300, stride=3)))
        labels = component_label(tr.W1, tr.W2)
        signs = np.sign(tr.W2[:, 0, :]).astype(int)
        assert np.array_equal(labels[:, [0, 2]], signs[:, [0, 2]])
        assert np.all(labels == labels[0]) and np.all(labels[:, 1] == 0)
        assert all(k == 1 for _, k in tr.sign_flips)


def test_sign_flips_detected():
    net = TwoLayerNet(2, 2, 1)
    X = np.random.default_rng(0).uniform(0, 1, size=(200, 2))
    Y = -X.sum(1, keepdims=True)
    p = rescale_to(init_params(net, "uniform", 0, a=1.0, signs=[1, 1]), [-0.1, 0.1])
    p.W1 = np.abs(p.W1)
    tr = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=0.01, steps=500, stride=1)))
    flips = [s for s, k in tr.sign_flips if k == 1]
    assert flips, "the free neuron should flip its output sign"
    s = flips[0]
    assert tr.W2[s - 1, 0, 1] > 0 > tr.W2[s, 0, 1]


def _torch_reference_steps(opt, p, X, Y, lr, steps, batch=None, seed=0, weight_decay=0.0):
    """The first ``steps`` iterates of torch.optim's optimizer on the ReLU net's mean squared loss,
    written here with autograd (not engine.topology.two_layer's hand-written gradients); "sgd"
    draws its first minibatch as documented: a torch.randperm with the config's seed."""
    W1, W2 = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (p.W1, p.W2))
    Xt, Yt = torch.from_numpy(X), torch.from_numpy(Y)
    if opt == "adam":
        optimizer = torch.optim.Adam([W1, W2], lr=lr, betas=(0.9, 0.999), weight_decay=weight_decay)
    else:
        optimizer = torch.optim.SGD([W1, W2], lr=lr, momentum=0.9 if opt == "momentum" else 0.0)
    rows = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))[:batch] if batch else slice(None)
    out = [(W1.detach().numpy().copy(), W2.detach().numpy().copy())]
    for _ in range(steps):
        optimizer.zero_grad()
        F = torch.relu(Xt[rows] @ W1.T) @ W2.T
        ((F - Yt[rows]) ** 2).mean().backward()
        optimizer.step()
        out.append((W1.detach().numpy().copy(), W2.detach().numpy().copy()))
    return out


@pytest.mark.parametrize("opt", ["adam", "momentum", "sgd"])
def test_other_optimizers_run_and_adam_breaks_conservation(opt):
    """First the update rule: three steps (one for sgd: its first minibatch) against torch.optim
    driven by autograd, to 1e-12 (the rule, its state and the gradients it is fed); then a run."""
    net, p, X, Y = _problem()
    steps = 1 if opt == "sgd" else 3
    first = run_to_completion(train(net, p, X, Y, TrainConfig(opt, lr=0.05, steps=steps, stride=1, batch_size=8)))
    ref = _torch_reference_steps(opt, p, X, Y, 0.05, steps, batch=8 if opt == "sgd" else None)
    for t, (W1, W2) in enumerate(ref):
        np.testing.assert_allclose(first.W1[t], W1, rtol=0, atol=1e-12)
        np.testing.assert_allclose(first.W2[t], W2, rtol=0, atol=1e-12)
    assert np.abs(first.W1[-1] - first.W1[0]).max() > 1e-3  # the steps moved: the comparison is not 0 = 0
    cfg = TrainConfig(opt, lr=0.05, steps=100, stride=10, batch_size=8, weight_decay=0.0)
    tr = run_to_completion(train(net, p, X, Y, cfg))
    assert tr.W1.shape == (11, 3, 2) and tr.loss[-1] < tr.loss[0]
    if opt == "adam":
        assert np.abs(tr.c[-1] - tr.c[0]).max() > 1e-3
    wd = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=0.05, steps=100, weight_decay=0.1)))
    assert np.all(np.abs(wd.c[-1]) < np.abs(wd.c[0]))  # decay shrinks every |c_k|


def test_divergence_keeps_trajectory():
    net, p, X, Y = _problem()
    tr = run_to_completion(train(net, p, X, 1e3 * Y, TrainConfig("gd", lr=50.0, steps=200)))
    assert tr.diverged_at is not None and "diverged" in tr.message
    assert tr.step[-1] < tr.diverged_at and np.all(np.isfinite(tr.W1))


def test_partials_are_stable_slices():
    net, p, X, Y = _problem()
    partials = []
    job = train(net, p, X, Y, TrainConfig("gd", lr=0.01, steps=400, stride=1))
    tr = run_to_completion(job, lambda u: partials.append((u.partial, u.partial.W1.copy())))
    assert len(partials) >= 400 // 20
    for snap, frozen in partials:
        assert isinstance(snap, Trajectory)
        np.testing.assert_array_equal(snap.W1, frozen)  # never mutated later
        np.testing.assert_array_equal(snap.W1, tr.W1[: len(snap.W1)])


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(lr=-0.1), "lr"),
        (dict(lr=float("nan")), "lr"),
        (dict(lr=float("inf")), "lr"),
        (dict(steps=-1), "steps"),
        (dict(stride=0), "stride"),
        (dict(optimizer="lbfgs"), "optimizer"),
        (dict(batch_size=0), "batch_size"),
        (dict(momentum=1.0), "momentum"),
        (dict(weight_decay=-1), "weight_decay"),
    ],
)
def test_bad_config(kw, match):
    with pytest.raises(EngineInputError, match=match):
        TrainConfig(**kw)


def test_bad_params_and_data():
    net, p, X, Y = _problem()
    with pytest.raises(EngineInputError, match="W1 has shape"):
        p.W1 = np.zeros((2, 2))
        next(train(net, p, X, Y, TrainConfig()))
    net, p, X, Y = _problem()
    with pytest.raises(EngineInputError, match="Y has shape"):
        next(train(net, p, X, Y[:5], TrainConfig()))
