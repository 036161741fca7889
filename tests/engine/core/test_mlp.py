"""mlp.py: layout, loss against an independent numpy forward pass, batching, bad input."""

import numpy as np
import pytest
import torch

from engine.core import mlp
from engine.core.errors import EngineInputError


def numpy_loss(Ws, bs, act, X, y):
    a = X.T
    for l, W in enumerate(Ws):
        z = W @ a + (0 if bs is None else bs[l][:, None])
        a = z if l == len(Ws) - 1 else (1 / (1 + np.exp(-z)) if act == "sigmoid" else np.tanh(z))
    return ((a[0] - y) ** 2).sum()


@pytest.mark.parametrize("act,bias", [("sigmoid", False), ("tanh", True)])
def test_loss_matches_independent_numpy(act, bias):
    rng = np.random.default_rng(0)
    arch = mlp.Arch((3, 4, 2, 1), act, bias)
    Ws = [rng.normal(size=(4, 3)), rng.normal(size=(2, 4)), rng.normal(size=(1, 2))]
    bs = [rng.normal(size=4), rng.normal(size=2), rng.normal(size=1)] if bias else None
    theta = mlp.pack(Ws, bs)
    assert theta.size == arch.n_params
    X, y = rng.normal(size=(9, 3)), rng.normal(size=9)
    assert mlp.loss(arch, theta, X, y) == pytest.approx(numpy_loss(Ws, bs, act, X, y), rel=1e-13)
    back_W, back_b = mlp.unpack(arch, theta)
    assert np.array_equal(back_W[1], Ws[1]) and (not bias or np.array_equal(back_b[2], bs[2]))


def test_batched_loss_equals_single_and_gradient_matches_fd():
    rng = np.random.default_rng(1)
    arch = mlp.Arch((2, 3, 3, 1))
    X, y = rng.normal(size=(6, 2)), rng.normal(size=6)
    thetas = rng.normal(size=(5, arch.n_params))
    Xt, yt = mlp.tensors(X, y)
    batch = mlp.loss_batch(arch, torch.as_tensor(thetas), Xt, yt).numpy()
    assert np.allclose(batch, [mlp.loss(arch, t, X, y) for t in thetas], rtol=1e-13)
    _, g = mlp.loss_and_grad(arch, thetas[0], X, y)
    e = np.zeros(arch.n_params)
    e[4] = 1e-6
    fd = (mlp.loss(arch, thetas[0] + e, X, y) - mlp.loss(arch, thetas[0] - e, X, y)) / 2e-6
    assert g[4] == pytest.approx(fd, rel=1e-6)


def test_bad_input():
    with pytest.raises(EngineInputError, match="relu"):
        mlp.Arch((2, 3, 1), "relu")
    with pytest.raises(EngineInputError, match="output layer"):
        mlp.Arch((2, 3, 2))
    with pytest.raises(EngineInputError, match="expects"):
        mlp.check_data(mlp.Arch((2, 3, 1)), np.zeros((4, 3)), np.zeros(4))
