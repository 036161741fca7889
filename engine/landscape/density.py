"""The Hessian's spectral density by stochastic Lanczos quadrature (SLQ), from Hessian-vector
products only: for networks past the full Hessian (docs/MATH.md B12.5; Ghorbani, Krishnan & Xiao 2019).

The density is the spectral measure φ(λ) = (1/P) Σ_i δ(λ − λ_i). For a unit probe v,
vᵀ f(H) v = Σ_i (vᵀu_i)² f(λ_i), and E[(vᵀu_i)²] = 1/P for v = z/√P with Rademacher z: so each
probe's measure Σ_i (vᵀu_i)² δ(λ − λ_i) is an unbiased estimate of φ. Lanczos with m steps from v
builds the m×m tridiagonal T = Qᵀ H Q; its eigenvalues θ_k (the nodes) and the squared first
components τ_k of its eigenvectors (the weights) are the m-point Gauss quadrature of that
measure: Σ_k τ_k θ_k^j = vᵀ H^j v exactly for j ≤ 2m − 1. Hence, averaged over probes,
P·Σ τθ estimates tr H, P·Σ τθ² estimates Σλ² = ‖H‖_F², and the extreme nodes converge to the
extreme eigenvalues first. The plotted density replaces each node by a Gaussian of width σ.

Lanczos here keeps every vector and re-orthogonalises twice against all of them (classical
Gram–Schmidt, twice is enough): without it rounding makes ghost copies of the converged
extremes and spoils the weights. All probes run together, so each step is one batched HVP.
HVPs are reverse-over-reverse on a retained gradient graph, as in engine.landscape.hessian.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress
from engine.core.runtime import configure_torch_threads
from engine.landscape.compute import DTYPES, check_device

MAX_PROBES = 1000
MAX_STEPS = 1000
MAX_BASIS_FLOATS = 400_000_000  # probes × steps × P kept for re-orthogonalisation: 3.2 GB
GRID = 1001  # points of the smoothed density
SIGMA = 0.01  # the Gaussians' width as a share of the node range
# Past this many parameters one backward per probe beats torch's vmapped batch, as it did on
# 784—128—128—10 (118,282 parameters, 1,000 samples; benchmarks/README.md).
BATCHED_HVP_MAX_PARAMS = 20_000


def hvp_function(arch: Arch, theta, X, Y, kind: str = "sum", dtype: str = "float64", device: str = "cpu"):
    """``hvp(V)`` = H @ V for V (P,) or (m, P) tensors of ``dtype`` on ``device``, H at θ."""
    dev = check_device(device)
    t = torch.tensor(np.asarray(theta, float), dtype=DTYPES[dtype], device=dev, requires_grad=True)
    Xt = torch.as_tensor(np.asarray(X, float), dtype=DTYPES[dtype], device=dev)
    y = mlp.target_tensor(arch, Y, kind, DTYPES[dtype], dev)
    (g,) = torch.autograd.grad(mlp.loss_t(arch, t, Xt, y, kind), t, create_graph=True)

    def one(v: torch.Tensor) -> torch.Tensor:
        return torch.autograd.grad(g, t, v, retain_graph=True)[0]

    def hvp(V: torch.Tensor) -> torch.Tensor:
        if V.ndim == 1:
            return one(V)
        return torch.autograd.grad(g, t, V, retain_graph=True, is_grads_batched=True)[0]

    hvp.one = one
    hvp.batched = arch.n_params <= BATCHED_HVP_MAX_PARAMS
    return hvp


def _products(hvp, Q: torch.Tensor, message: str) -> Job[torch.Tensor]:
    """H @ each row of Q: one batched product for small nets; row by row for large ones (faster
    there, see BATCHED_HVP_MAX_PARAMS), yielding between rows so a job stays responsive."""
    if getattr(hvp, "batched", True):
        return hvp(Q)
    out, last = torch.empty_like(Q), time.perf_counter()
    for r in range(len(Q)):
        out[r] = hvp.one(Q[r])
        if time.perf_counter() - last > 0.05:
            last = time.perf_counter()
            yield Progress(float("nan"), message)
    return out


def probe_vectors(n_params: int, probes: int, seed: int = 0) -> np.ndarray:
    """The unit probes v = z/√P (probes, P), z Rademacher from ``np.random.default_rng(seed)``."""
    z = np.random.default_rng(seed).integers(0, 2, size=(probes, n_params)) * 2.0 - 1.0
    return z / np.sqrt(n_params)


@dataclass(frozen=True, eq=False)
class Density:
    """SLQ nodes and weights, and the smoothed density a view draws (what density.npz holds)."""

    nodes: np.ndarray  # (probes, steps): Ritz values θ_k of each probe; padding 0 where a probe stopped early
    weights: np.ndarray  # (probes, steps): τ_k, each row sums to 1; padding 0
    grid: np.ndarray  # (G,)
    density: np.ndarray  # (G,): (1/probes) Σ_p Σ_k τ_pk N(λ; θ_pk, σ²), integrates to ≈ 1
    sigma: float
    n_params: int
    steps_done: np.ndarray  # (probes,) Lanczos steps each probe ran (fewer when it found an invariant subspace)
    alphas: np.ndarray  # (probes, steps): the tridiagonal's diagonal
    betas: np.ndarray  # (probes, steps − 1): its off-diagonal
    seconds: float = 0.0

    def moment(self, j: int) -> np.ndarray:
        """Per probe Σ_k τ_k θ_k^j = vᵀH^j v (j ≤ 2·steps − 1)."""
        return (self.weights * self.nodes**j).sum(1)

    @property
    def trace(self) -> float:
        return float(self.n_params * self.moment(1).mean())

    @property
    def sum_squares(self) -> float:  # Σλ² = ‖H‖_F²
        return float(self.n_params * self.moment(2).mean())

    @property
    def extremes(self) -> tuple[float, float]:
        used = self.weights > 0
        return float(self.nodes[used].min()), float(self.nodes[used].max())


def lanczos(hvp, V0: torch.Tensor, steps: int, tol: float = 1e-10):
    """Batched Lanczos with full re-orthogonalisation from unit rows ``V0`` (b, P): returns the
    diagonals (b, steps), off-diagonals (b, steps − 1) and the steps each row ran, as a job.
    A row stops when its residual falls below ``tol`` × the largest |α| seen (an invariant
    subspace: its quadrature is then exact)."""
    b, n = V0.shape
    Q = torch.zeros(steps, b, n, dtype=V0.dtype, device=V0.device)
    alphas = torch.zeros(b, steps, dtype=V0.dtype, device=V0.device)
    betas = torch.zeros(b, max(steps - 1, 0), dtype=V0.dtype, device=V0.device)
    done = torch.full((b,), steps, dtype=torch.int64)
    alive = torch.ones(b, dtype=torch.bool, device=V0.device)
    q = V0.clone()
    scale = torch.zeros(b, dtype=V0.dtype, device=V0.device)
    last = time.perf_counter()
    for j in range(steps):
        Q[j] = q
        w = yield from _products(hvp, q, f"Lanczos step {j + 1}/{steps}")
        a = (q * w).sum(1)
        alphas[:, j] = torch.where(alive, a, torch.zeros_like(a))
        scale = torch.maximum(scale, a.abs())
        if j == steps - 1:
            break
        basis = Q[: j + 1]  # (j + 1, b, n)
        for _ in range(2):  # twice is enough (Kahan, Parlett)
            w = w - torch.einsum("jb,jbn->bn", torch.einsum("jbn,bn->jb", basis, w), basis)
            if time.perf_counter() - last > 0.05:
                last = time.perf_counter()
                yield Progress((j + 1) / steps, f"Lanczos step {j + 1}/{steps}: re-orthogonalising")
        beta = w.norm(dim=1)
        stop = alive & (beta <= tol * torch.clamp(scale, min=torch.finfo(V0.dtype).tiny))
        for r in torch.nonzero(stop).flatten().tolist():
            done[r] = j + 1
        alive = alive & ~stop
        betas[:, j] = torch.where(alive, beta, torch.zeros_like(beta))
        q = torch.where(alive[:, None], w / torch.clamp(beta, min=torch.finfo(V0.dtype).tiny)[:, None], q)
        if not alive.any():
            break
        if time.perf_counter() - last > 0.05:
            last = time.perf_counter()
            yield Progress((j + 1) / steps, f"Lanczos step {j + 1}/{steps}")
    return alphas.double().cpu().numpy(), betas.double().cpu().numpy(), done.numpy()


def quadrature(alphas: np.ndarray, betas: np.ndarray, done: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gauss quadrature of each row's tridiagonal: nodes and weights (b, steps), zero-padded."""
    b, m = alphas.shape
    nodes, weights = np.zeros((b, m)), np.zeros((b, m))
    for r in range(b):
        k = int(done[r])
        T = np.diag(alphas[r, :k]) + np.diag(betas[r, : k - 1], 1) + np.diag(betas[r, : k - 1], -1)
        theta, U = np.linalg.eigh(T)
        nodes[r, :k], weights[r, :k] = theta, U[0] ** 2
    return nodes, weights


def smoothed(nodes, weights, sigma: float | None = None, points: int = GRID) -> tuple[np.ndarray, np.ndarray, float]:
    """Grid, density (1/b) Σ τ N(λ; θ, σ²) and σ (default: SIGMA × the node range)."""
    used = weights > 0
    lo, hi = nodes[used].min(), nodes[used].max()
    width = max(hi - lo, 1e-12 * max(abs(lo), abs(hi), 1.0))
    sigma = SIGMA * width if sigma is None else float(sigma)
    grid = np.linspace(lo - 5 * sigma, hi + 5 * sigma, points)
    w, th = weights[used], nodes[used]
    dens = np.zeros(points)
    for start in range(0, len(th), 4096):  # (points, nodes) blocks
        z = (grid[:, None] - th[None, start : start + 4096]) / sigma
        dens += (np.exp(-0.5 * z * z) * w[None, start : start + 4096]).sum(1)
    return grid, dens / (len(nodes) * sigma * np.sqrt(2 * np.pi)), sigma


def density_job(
    arch: Arch, theta, X, Y, probes=10, steps=80, seed=0, kind="sum", sigma=None, dtype="float64", device="cpu"
) -> Job[Density]:
    """Job: an MLP's Hessian spectral density by SLQ with ``probes`` Rademacher probes
    (``probe_vectors``) × ``steps`` Lanczos steps, its products batched (``hvp_function``).

    Parameters
    ----------
    arch, theta, X, Y
        The network (``Arch`` and flat θ) and its data.
    probes, steps : int
        Probe vectors and Lanczos steps per probe (``check_slq``'s limits).
    seed : int
        The probes' seed.
    kind : str
        The loss: "sum", "mean" or "cross-entropy".
    sigma : float, optional
        The Gaussian smoothing's width; by default ``SIGMA`` × the range of the nodes.
    dtype, device : str
        "float64" or "float32"; "cpu" or "cuda".

    Returns
    -------
    Density
    """
    configure_torch_threads()
    check_slq(arch.n_params, probes, steps)
    if dtype not in DTYPES:
        raise EngineInputError(f"unknown dtype {dtype!r}; choose float64 or float32")
    X, _ = mlp.check_data(arch, X, Y, kind)
    hvp = hvp_function(arch, theta, X, Y, kind, dtype, device)
    return (yield from slq_job(hvp, arch.n_params, probes, steps, seed, sigma, DTYPES[dtype], check_device(device)))


def check_slq(n_params: int, probes: int, steps: int) -> None:
    """Refuse probe and step counts past the limits, and a Lanczos basis past memory."""
    if not 1 <= probes <= MAX_PROBES:
        raise EngineInputError(f"density probes {probes} must be within 1 .. {MAX_PROBES}")
    if not 1 <= steps <= MAX_STEPS:
        raise EngineInputError(f"Lanczos steps {steps} must be within 1 .. {MAX_STEPS}")
    if probes * steps * n_params > MAX_BASIS_FLOATS:
        raise EngineInputError(
            f"{probes} probes × {steps} steps × {n_params} parameters exceed the Lanczos basis limit of "
            f"{MAX_BASIS_FLOATS:g}"
        )


def slq_job(hvp, n_params: int, probes: int, steps: int, seed: int, sigma: float | None, dtype, device) -> Job[Density]:
    """Job: SLQ of any Hessian given as ``hvp`` (rows (b, P) of torch ``dtype`` on ``device`` to rows,
    as ``hvp_function``'s; its optional ``one`` and ``batched`` choose row-by-row products)."""
    began = time.perf_counter()
    check_slq(n_params, probes, steps)
    steps = min(steps, n_params)  # a Krylov space has at most P dimensions
    V0 = torch.as_tensor(probe_vectors(n_params, probes, seed), dtype=dtype, device=device)
    alphas, betas, done = yield from lanczos(hvp, V0, steps)
    nodes, weights = quadrature(alphas, betas, done)
    grid, dens, sigma = smoothed(nodes, weights, sigma)
    return Density(nodes, weights, grid, dens, sigma, n_params, done, alphas, betas, time.perf_counter() - began)
