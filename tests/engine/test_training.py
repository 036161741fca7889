import numpy as np
import pytest

from engine.core.errors import EngineInputError
from engine.core.progress import run_to_completion
from engine.topology.invariants import component_label, rescale_to
from engine.topology.training import TrainConfig, Trajectory, train
from engine.topology.two_layer import ShallowNet, gradients, init_params


def _problem(bias=False, e=1, n=60, seed=0):
    rng = np.random.default_rng(seed)
    net = ShallowNet(d=2, l=3, e=e, bias=bias)
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
    net, p, X, Y = _problem()
    flow = run_to_completion(train(net, p, X, Y, TrainConfig("flow", lr=0.01, steps=200, stride=10)))
    assert flow.diverged_at is None and flow.W1.shape == (21, 3, 2)
    np.testing.assert_allclose(flow.c, np.broadcast_to(flow.c[0], flow.c.shape), rtol=1e-6)
    gd = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=0.001, steps=2000, stride=100)))
    np.testing.assert_allclose(gd.W1[-1], flow.W1[-1], atol=5e-3)  # GD → flow as h → 0
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
    net = ShallowNet(2, 2, 1)
    X = np.random.default_rng(0).uniform(0, 1, size=(200, 2))
    Y = -X.sum(1, keepdims=True)
    p = rescale_to(init_params(net, "uniform", 0, a=1.0, signs=[1, 1]), [-0.1, 0.1])
    p.W1 = np.abs(p.W1)
    tr = run_to_completion(train(net, p, X, Y, TrainConfig("gd", lr=0.01, steps=500, stride=1)))
    flips = [s for s, k in tr.sign_flips if k == 1]
    assert flips, "the free neuron should flip its output sign"
    s = flips[0]
    assert tr.W2[s - 1, 0, 1] > 0 > tr.W2[s, 0, 1]


@pytest.mark.parametrize("opt", ["adam", "momentum", "sgd"])
def test_other_optimizers_run_and_adam_breaks_conservation(opt):
    net, p, X, Y = _problem()
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
