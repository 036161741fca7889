"""numpy references the tests hold the engine to: no torch, no engine forward pass."""

import numpy as np

from engine.core import mlp


def numpy_loss(arch, theta, X, Y) -> float:
    """The summed squared loss of the MLP written out in numpy (no torch, no engine forward, no
    slice kernel): the reference every device and dtype is held to."""
    Ws, bs = mlp.unpack(arch, np.asarray(theta, dtype=float))  # only the flat layout is shared
    act = {"sigmoid": lambda z: 1 / (1 + np.exp(-z)), "tanh": np.tanh}[arch.activation]
    a = np.asarray(X, dtype=float)
    for l, (W, b) in enumerate(zip(Ws, bs)):
        z = a @ W.T + (0.0 if b is None else b)
        a = z if l == len(Ws) - 1 else act(z)
    return float(np.sum((a[:, 0] - np.ravel(Y)) ** 2))


def finite_difference_hessian(f, theta, h=1e-4) -> np.ndarray:
    """H_ij from four-point second differences of f alone: error ~h²·f⁗ + ε·f/h² (~1e-8 here)."""
    n, E = len(theta), np.eye(len(theta)) * h
    H = np.empty((n, n))
    for i in range(n):
        for j in range(i, n):
            H[i, j] = H[j, i] = (
                f(theta + E[i] + E[j]) - f(theta + E[i] - E[j]) - f(theta - E[i] + E[j]) + f(theta - E[i] - E[j])
            ) / (4 * h * h)
    return H


def finite_difference_hessian_and_error(f, theta, h=1e-4) -> tuple[np.ndarray, float]:
    """The difference Hessian at step h and a bound on its error in the 2-norm, 2‖H_h − H_2h‖₂: the
    truncation grows 4× from h to 2h, and the rounding noise ε·f/h² (which depends on the CPU's
    floating-point kernels) is of the size of the difference itself. By Weyl, each eigenvalue of
    H_h lies within that bound of the true one."""
    H = finite_difference_hessian(f, theta, h)
    return H, 2 * float(np.linalg.norm(H - finite_difference_hessian(f, theta, 2 * h), 2))
