import math

import numpy as np
import pytest
import torch

from engine.core.errors import EngineInputError
from engine.topology.initialization import initial_params
from engine.topology.two_layer import (
    TwoLayerNet,
    TwoLayerParams,
    forward,
    gradients,
    init_params,
    loss,
    loss_and_grads,
    loss_and_grads_np,
    sample_init,
)

CASES = [
    dict(activation="relu", bias=False, loss="mse", e=1),
    dict(activation="leaky_relu", leaky_slope=0.2, bias=True, loss="mse", e=2),
    dict(activation="relu", bias=True, loss="bce", e=1),
    dict(activation="leaky_relu", leaky_slope=0.5, bias=False, loss="bce", e=3),
]


def _data(net, rng, n=40):
    X = rng.normal(size=(n, net.d))
    Y = rng.integers(0, 2, size=(n, net.e)).astype(float) if net.loss == "bce" else rng.normal(size=(n, net.e))
    return X, Y


@pytest.mark.parametrize("kw", CASES)
def test_gradients_match_finite_differences(kw):
    rng = np.random.default_rng(1)
    net = TwoLayerNet(d=3, l=4, **kw)
    p = init_params(net, "xavier_normal", rng)
    if net.bias:
        p.b1, p.b2 = rng.normal(size=net.l), rng.normal(size=net.e)
    X, Y = _data(net, rng)
    g = gradients(net, p, X, Y)
    eps = 1e-6
    for name in ("W1", "W2", "b1", "b2"):
        a = getattr(p, name)
        if a is None:
            assert getattr(g, name) is None
            continue
        fd = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            old = a[idx]
            a[idx] = old + eps
            up = loss(net, p, X, Y)
            a[idx] = old - eps
            down = loss(net, p, X, Y)
            a[idx] = old
            fd[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(getattr(g, name), fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("kw", CASES)
def test_numpy_twin_and_forward_agree_with_torch(kw):
    rng = np.random.default_rng(2)
    net = TwoLayerNet(d=2, l=3, **kw)
    p = init_params(net, "pytorch", rng)
    X, Y = _data(net, rng)
    args = [None if a is None else torch.tensor(a) for a in (p.W1, p.W2, p.b1, p.b2)]
    lt, *gt = loss_and_grads(net, torch.tensor(X), torch.tensor(Y), *args)
    ln, *gn = loss_and_grads_np(net, X, Y, p.W1, p.W2, p.b1, p.b2)
    assert ln == pytest.approx(float(lt), rel=1e-13)
    for a, b in zip(gt, gn):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-15)
    # forward by an independent per-sample loop
    F = forward(net, p, X)
    g = net.gamma
    for n in range(X.shape[0]):
        z = p.W1 @ X[n] + (0 if p.b1 is None else p.b1)
        f = p.W2 @ np.where(z > 0, z, g * z) + (0 if p.b2 is None else p.b2)
        np.testing.assert_allclose(F[n], f, rtol=1e-13)


@pytest.mark.parametrize(
    "scheme, w1_std, w2_std",
    [
        ("kaiming_normal", math.sqrt(2 / 5), math.sqrt(2 / 7)),
        ("xavier_normal", math.sqrt(2 / 12), math.sqrt(2 / 8)),
        ("kaiming_uniform", math.sqrt(6 / 5) / math.sqrt(3), math.sqrt(6 / 7) / math.sqrt(3)),
        ("xavier_uniform", math.sqrt(6 / 12) / math.sqrt(3), math.sqrt(6 / 8) / math.sqrt(3)),
        ("pytorch", 1 / math.sqrt(5) / math.sqrt(3), 1 / math.sqrt(7) / math.sqrt(3)),
    ],
)
def test_init_scales(scheme, w1_std, w2_std):
    net = TwoLayerNet(d=5, l=7, e=1)
    p = sample_init(net, scheme, np.random.default_rng(0), size=(4000,))
    assert p.W1.shape == (4000, 7, 5) and p.W2.shape == (4000, 1, 7)
    assert p.W1.std() == pytest.approx(w1_std, rel=0.02)
    assert p.W2.std() == pytest.approx(w2_std, rel=0.03)


def test_init_signs_rescale_and_bias():
    net = TwoLayerNet(d=2, l=3, e=1, bias=True)
    p = initial_params(net, "pytorch", 0, signs=[1, -1, 1], c=[0.5, -0.5, 0.0])
    assert np.array_equal(np.sign(p.W2[0]), [1, -1, 1])
    c = np.sum(p.W1**2, 1) + p.b1**2 - p.W2[0] ** 2
    np.testing.assert_allclose(c, [0.5, -0.5, 0.0], atol=1e-12)
    q = init_params(TwoLayerNet(2, 2), "uniform", 0, a=0.5)
    assert np.abs(q.W1).max() <= 0.5


def test_bad_config():
    for kw in (
        dict(d=0, l=1),
        dict(d=1, l=0),
        dict(d=1, l=1, e=0),
        dict(d=2, l=2, activation="tanh"),
        dict(d=2, l=2, loss="hinge"),
        dict(d=2, l=2, leaky_slope=2.0),
    ):
        with pytest.raises(EngineInputError):
            TwoLayerNet(**kw)
    with pytest.raises(EngineInputError, match="initialization"):
        init_params(TwoLayerNet(2, 2), "orthogonal")
    with pytest.raises(EngineInputError, match="signs"):
        init_params(TwoLayerNet(2, 2), signs=[1, 0])
    with pytest.raises(EngineInputError, match="X has shape"):
        loss(TwoLayerNet(2, 2), TwoLayerParams(np.zeros((2, 2)), np.zeros((1, 2))), np.zeros((3, 3)), np.zeros(3))
