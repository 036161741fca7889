"""B11: a non-increasing path from a constructed minimum to a global one (docs/MATH.md B11).

``descending_path_job`` is the one pipeline (``reproduce nonattr-path`` and the GUI preset): the
Fig. 3 construction (engine.minima.pipeline), then the path. The result keeps the parameter vector at
every point of the path, so each loss on it can be recomputed from the exports.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import scipy_special
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.core.runtime import configure_torch_threads
from engine.minima.construction import Construction
from engine.minima.pipeline import Figure3Settings, construction_job


@dataclass(frozen=True)
class NonincreasingPath:
    s: np.ndarray  # (M,) path parameter: [0, 1] gather, [1, 2] re-point, [2, 3] descend
    points: np.ndarray  # (M, n_params) the parameter vector at every point of the path
    loss_path: np.ndarray  # (M,) L at each point
    loss_straight: np.ndarray  # (M,) L on the straight segment between the same endpoints
    condition_number: float  # of the last hidden layer's features (with bias column) on the samples
    path_error: float  # max |f(t) − (z + t (y − z))| along the descend stage
    monotone: bool  # loss never increases (up to 1e−12 relative)

    @property
    def theta_end(self) -> np.ndarray:
        return self.points[-1]


def _copies(rows: np.ndarray) -> bool:
    return bool((rows == rows[0]).all())


def nonincreasing_path(arch: Arch, theta, X, Y, n: int = 41) -> NonincreasingPath:
    """B11 by the robust route, for a net whose last two hidden layers consist of identical copies
    (a constructed minimum) and whose last hidden layer has ≥ N + 1 neurons: (A) gather the
    copies' outgoing weights, (B) re-point the freed copies to a constant and N − 1 staircase
    features, (C) move the output weights linearly so f(t) = z + t (y − z)."""
    X, y = mlp.check_data(arch, X, Y)
    N, L = len(X), arch.n_layers
    if L < 3 or arch.widths[L - 1] < N + 1 or arch.widths[L - 2] < 3:
        raise EngineInputError(
            f"path needs two hidden layers, the last ≥ N + 1 = {N + 1} wide and the one before "
            f"≥ 3 wide; got {arch.widths}"
        )
    c0 = float(mlp.sigma(arch.activation, mlp.tensors(np.zeros(1))[0])[0])
    if c0 == 0:
        raise EngineInputError(f"{arch.activation}(0) = 0 gives no constant feature; use sigmoid")
    theta0 = np.asarray(theta, float)
    Ws, bs = mlp.unpack(arch, theta0.copy())
    if not (_copies(Ws[L - 2]) and _copies(Ws[L - 3])):
        raise EngineInputError("the last two hidden layers must consist of identical copies (a constructed minimum)")
    # (A) gather: copies are identical, so only the sums of their outgoing weights matter.
    Ws[L - 1][0] = np.r_[Ws[L - 1][0].sum(), np.zeros(arch.widths[L - 1] - 1)]
    Ws[L - 2][0] = np.r_[Ws[L - 2][0].sum(), np.zeros(arch.widths[L - 2] - 1)]
    theta_a = mlp.pack(Ws, bs if arch.bias else None)
    # (B) re-point: previous layer copy 1 -> constant σ(0), copy 2 -> a monotone feature g = σ(s ω·h)
    _, _, acts = mlp.forward_batch(arch, mlp.tensors(theta_a)[0][None], mlp.tensors(X)[0], keep=True)
    h = X if L - 2 == 1 else acts[L - 3][0].T.numpy()
    omegas = np.random.default_rng(0).standard_normal((256, h.shape[1]))
    proj = np.sort(h @ omegas.T, axis=0)
    omega = omegas[np.argmax(np.diff(proj, axis=0).min(0) / np.ptp(proj, axis=0))]  # best-separating direction
    p = h @ omega
    s = 1 / p.std()
    Ws[L - 3][1], Ws[L - 3][2] = 0.0, s * omega
    if arch.bias:
        bs[L - 3][1:3] = 0.0
    g = np.sort(scipy_special.expit(s * p) if arch.activation == "sigmoid" else np.tanh(s * p))
    m, gap = (g[1:] + g[:-1]) / 2, np.diff(g)
    if gap.min() <= 0:
        raise EngineInputError("two samples coincide on every direction tried; the path needs distinct samples")
    kappa = 6 / gap
    rows = np.zeros((arch.widths[L - 1] - 1, arch.widths[L - 2]))
    rows[: N - 1, 2], rows[: N - 1, 1] = kappa, -kappa * m / c0  # staircases σ(κ_j (g − m_j)); row N−1 and on: σ(0)
    Ws[L - 2][1:] = rows
    if arch.bias:
        bs[L - 2][1:] = 0.0
    theta_b = mlp.pack(Ws, bs if arch.bias else None)
    # (C) descend: minimum-norm output-weight change realizing f(t) = z + t (y − z).
    _, _, acts = mlp.forward_batch(arch, mlp.tensors(theta_b)[0][None], mlp.tensors(X)[0], keep=True)
    H = acts[L - 1][0].T.numpy()
    if arch.bias:
        H = np.column_stack([H, np.ones(N)])
    sv = np.linalg.svd(H, compute_uv=False)
    cond = float(sv[0] / sv[N - 1])
    z = mlp.predict(arch, theta_b, X)
    delta = np.linalg.lstsq(H, y - z, rcond=None)[0]
    step = np.zeros(arch.n_params)
    step[arch.block(f"W{L}").slice] = delta[: arch.widths[L - 1]]
    if arch.bias:
        step[arch.block(f"b{L}").slice] = delta[-1]
    theta_end = theta_b + step
    u = np.linspace(0, 1, n)[:, None]
    path = np.vstack([theta0 + u * (theta_a - theta0), theta_a + u[1:] * (theta_b - theta_a), theta_b + u[1:] * step])
    straight = theta0 + np.linspace(0, 1, len(path))[:, None] * (theta_end - theta0)
    Xt, yt = mlp.tensors(X, y)
    import torch

    loss_path = mlp.loss_batch(arch, torch.as_tensor(path), Xt, yt).numpy()
    loss_straight = mlp.loss_batch(arch, torch.as_tensor(straight), Xt, yt).numpy()
    targets = z + u * (y - z)
    outputs = mlp.forward_batch(arch, torch.as_tensor(path[-n:]), Xt).numpy()
    return NonincreasingPath(
        np.linspace(0, 3, len(path)),
        path,
        loss_path,
        loss_straight,
        cond,
        float(np.abs(outputs - targets).max()),
        bool(np.all(np.diff(loss_path) <= 1e-12 * max(loss_path[0], 1.0))),
    )


@dataclass(frozen=True)
class DescendingPath:
    steps: tuple = ()  # construction Steps so far
    construction: Construction | None = None
    data_seed: int | None = None
    path: NonincreasingPath | None = None


def descending_path_job(s: Figure3Settings = Figure3Settings()) -> Job[DescendingPath]:
    """B11 starts from a constructed minimum: build it (``s``: always from its seed), then walk.
    Partials: the result so far."""
    configure_torch_threads()
    c, data_seed = yield from subjob(
        construction_job(s), 0.0, 0.85, "construction: ", partial=lambda steps: DescendingPath(steps)
    )
    result = DescendingPath(c.steps, c, data_seed)
    yield Progress(0.85, "construction done", result)
    path = yield from wait_for(lambda stop: nonincreasing_path(c.arch, c.params, c.X, c.Y), "non-increasing path")
    return replace(result, path=path)
