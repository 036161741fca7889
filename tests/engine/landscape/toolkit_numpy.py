"""numpy-only references for the landscape toolkit's tests: no torch, no engine import.

They read networks the way docs/EXPORTS.md tells an outside script to: W1, b1, …, X, Y,
activation in network.npz, and θ = concatenate(W1.ravel(), b1, W2.ravel(), b2, …).
"""

import numpy as np

ACT = {
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
    "tanh": np.tanh,
    "relu": lambda z: np.maximum(z, 0),
}


def layers(theta, widths, bias):
    """[(W_l, b_l or None)] from the flat vector, in the documented order."""
    out, pos = [], 0
    for n_in, n_out in zip(widths, widths[1:]):
        W = theta[pos : pos + n_in * n_out].reshape(n_out, n_in)
        pos += n_in * n_out
        b = None
        if bias:
            b = theta[pos : pos + n_out]
            pos += n_out
        out.append((W, b))
    assert pos == len(theta)
    return out


def flat(arrays, n_layers, bias):
    parts = []
    for l in range(1, n_layers + 1):
        parts.append(np.asarray(arrays[f"W{l}"], float).ravel())
        if bias:
            parts.append(np.asarray(arrays[f"b{l}"], float))
    return np.concatenate(parts)


def outputs(theta, widths, bias, activation, X):
    a = np.asarray(X, float)
    L = layers(theta, widths, bias)
    for l, (W, b) in enumerate(L):
        z = a @ W.T + (0 if b is None else b)
        a = ACT[activation](z) if l < len(L) - 1 else z
    return a  # (N, e)


def loss(theta, widths, bias, activation, X, Y, kind="sum"):
    F = outputs(theta, widths, bias, activation, X)
    if kind == "cross-entropy":
        labels = np.asarray(Y).reshape(-1).astype(int)
        m = F.max(1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(F - m).sum(1))
        return float(np.mean(lse - F[np.arange(len(F)), labels]))
    Y = np.asarray(Y, float).reshape(F.shape)
    s = float(((F - Y) ** 2).sum())
    return s / len(F) if kind == "mean" else s
