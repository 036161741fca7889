"""Loss-landscape slices and planes (MATH.md B8), evaluated in batches.

Slices use the structure θ + t d (``slice_losses``: large shared GEMMs plus one bmm per chunk of
directions); planes push rows of parameter vectors through ``deep.loss_batch``. Chunks of
~1,600 points keep activations in cache; never a Python loop over points
(benchmarks/bench_landscape.py measures the speed-up over one forward per point).
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from . import deep
from .deep import Arch
from .errors import EngineInputError
from .progress import Job, Progress
from .runtime import configure_torch_threads

DTYPES = {"float64": torch.float64, "float32": torch.float32}
# Points per chunk: whole directions of P points, as many as keep the activations in cache.
# On 2—21—21—1 with 20 samples, 8 directions of 101 points were fastest in float64 and 16 in
# float32 (half the bytes); twice that fell out of cache and ran ~1.5x slower.
DEFAULT_CHUNK = {"float64": 808, "float32": 1616}
# Chunks go to two Python threads with one torch thread each: 1.7x on 2 cores (K = 5000, P = 101),
# where two OpenMP threads inside each product collapsed 10–60x whenever the machine was busy.
WORKER_THREADS = min(2, os.cpu_count() or 1)


def random_directions(arch: Arch, theta, K: int, seed: int = 0, normalization: str = "unit") -> np.ndarray:
    """K Gaussian directions ``(K, P)``: unit norm, or per neuron (Li et al. 2018) each neuron's
    incoming block scaled to the norm of the same block of θ."""
    if K < 1:
        raise EngineInputError(f"number of directions K = {K} must be at least 1")
    d = np.random.default_rng(seed).standard_normal((K, arch.n_params))
    if normalization == "unit":
        return d / np.linalg.norm(d, axis=1, keepdims=True)
    if normalization == "neuron":
        theta = np.asarray(theta, float)
        for idx in arch.neuron_blocks():
            d[:, idx] *= np.linalg.norm(theta[idx]) / np.linalg.norm(d[:, idx], axis=1, keepdims=True)
        return d
    raise EngineInputError(f"unknown normalization {normalization!r}; choose 'unit' or 'neuron'")


def evaluate_job(n_items: int, compute: Callable[[int, int], np.ndarray], chunk: int,
                 threads: int = WORKER_THREADS) -> Job[np.ndarray]:
    """Run ``compute(i0, i1)`` (losses of items i0..i1, shape (i1 − i0, …)) chunk by chunk, so memory
    stays at one chunk per thread. With ``threads=2`` chunks run on two Python threads, each with one
    torch thread (torch releases the GIL inside its kernels)."""
    configure_torch_threads()
    bounds = [(i, min(i + chunk, n_items)) for i in range(0, n_items, chunk)]
    parts, done, last = [], 0, time.perf_counter()
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    try:
        for part in (pool.map(lambda b: compute(*b), bounds) if pool else (compute(*b) for b in bounds)):
            parts.append(part)
            done += len(part)
            if time.perf_counter() - last > 0.05 or done == n_items:
                last = time.perf_counter()
                yield Progress(done / n_items, f"{done}/{n_items}")
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    return np.concatenate(parts)


def _prepare(arch: Arch, X, Y, dtype: str):
    if dtype not in DTYPES:
        raise EngineInputError(f"unknown dtype {dtype!r}; choose float64 or float32")
    X, Y = deep.check_data(arch, X, Y)
    return deep.tensors(X, Y, dtype=DTYPES[dtype])


@torch.no_grad()
def slice_losses(arch: Arch, theta: torch.Tensor, d: torch.Tensor, t: torch.Tensor, X: torch.Tensor,
                 y: torch.Tensor) -> torch.Tensor:
    """L(θ + t_p d_k) for all k, p -> (k, P), hand-batched along the slice structure.

    The pre-activation of layer l at (k, p) is W A + t_p D_k A with A the layer's input. Stacking
    the shared W on each D_k makes both products one bmm with 2n rows and P·N columns per
    direction: large matmuls instead of k·P tiny ones (faster again than batching the points as
    independent parameter vectors), and one pass fewer over the activations than a separate
    ``W A`` GEMM plus a fused ``baddbmm`` (measured 2.8 against 3.5 µs a point in float64).
    """
    k, P, N = d.shape[0], t.shape[0], X.shape[0]
    a = None  # layer input as (k, n, P·N); the first layer's is X, shared
    for l in range(1, arch.n_layers + 1):
        blk = arch.block(f"W{l}")
        W, D = theta[blk.slice].reshape(blk.shape), d[:, blk.slice].reshape(k, *blk.shape)
        if a is None:  # (k, n, P, N), built contiguous so nothing is copied later
            z = torch.addcmul((W @ X.T)[None, :, None, :], (D @ X.T)[:, :, None, :], t[:, None])
        else:  # one bmm of [W; D_k] a (2n rows), then W a + t ⊙ D_k a
            both = torch.bmm(torch.cat([W.expand(k, -1, -1), D], 1), a).view(k, 2, -1, P, N)
            z = torch.addcmul(both[:, 0], both[:, 1], t[:, None])
        if arch.bias:
            b = arch.block(f"b{l}").slice
            z = z + theta[b][:, None, None] + t[:, None] * d[:, b][:, :, None, None]
        if l < arch.n_layers:
            a = deep.sigma_(arch.activation, z).view(k, -1, P * N)
    return ((z[:, 0] - y) ** 2).sum(-1)


@dataclass(frozen=True)
class Slices:
    t: np.ndarray         # (P,)
    curves: np.ndarray    # (K, P): L(θ + t d_k)
    envelope: np.ndarray  # (P,): min over directions
    L_star: float         # L(θ), float64
    envelope_gap: float   # min over t ≠ 0 of envelope − L*: ≥ 0 up to noise at a minimum, < 0 at a saddle
    frac_below: float     # fraction of curves that dip below L* anywhere
    n_below: int          # how many curves dip below L* (of K = len(curves))


def slices_job(arch: Arch, theta, X, Y, K: int = 5000, P: int = 101, T: float = 1.0,
               normalization: str = "unit", seed: int = 0, dtype: str = "float64", chunk: int | None = None,
               threads: int = WORKER_THREADS, directions: np.ndarray | None = None) -> Job[Slices]:
    """Curves L(θ + t d) for t ∈ [−T, T] along K random (or given) directions."""
    theta = np.asarray(theta, float)
    if P < 2:
        raise EngineInputError(f"number of points P = {P} must be at least 2")
    d = random_directions(arch, theta, K, seed, normalization) if directions is None else np.asarray(directions, float)
    if d.ndim != 2 or d.shape[1] != arch.n_params:
        raise EngineInputError(f"directions have shape {d.shape}; expected (K, {arch.n_params})")
    t = np.linspace(-T, T, P)
    K = len(d)

    Xt, yt = _prepare(arch, X, Y, dtype)
    as_t = lambda a: torch.as_tensor(a, dtype=DTYPES[dtype])
    theta_t, t_t = as_t(theta), as_t(t)
    compute = lambda i0, i1: slice_losses(arch, theta_t, as_t(d[i0:i1]), t_t, Xt, yt).double().numpy()
    chunk = chunk or DEFAULT_CHUNK[dtype]
    curves = yield from evaluate_job(K, compute, max(1, chunk // P), threads)
    L_star = deep.loss(arch, theta, X, Y)
    envelope = curves.min(0)
    off_zero = t != 0  # at t = 0 every curve equals L*, which would pin the gap to 0
    # At t = 0 every curve is L* up to rounding (the batched sum runs in another order than
    # deep.loss): only a dip beyond that rounding counts.
    below = (curves < L_star - 1e-12 * max(1.0, abs(L_star))).any(1)
    return Slices(t, curves, envelope, L_star, float(envelope[off_zero].min() - L_star),
                  float(below.mean()), int(below.sum()))


@dataclass(frozen=True)
class Plane:
    s: np.ndarray       # (n,) coordinate along d1
    t: np.ndarray       # (n,) coordinate along d2
    losses: np.ndarray  # (n, n): losses[i, j] = L(θ + s_i d1 + t_j d2)
    L_star: float


def plane_job(arch: Arch, theta, X, Y, d1, d2, n: int = 51, T: float = 1.0, dtype: str = "float64",
              threads: int = WORKER_THREADS) -> Job[Plane]:
    theta, d1, d2 = (np.asarray(a, float) for a in (theta, d1, d2))
    for name, d in (("d1", d1), ("d2", d2)):
        if d.shape != theta.shape:
            raise EngineInputError(f"direction {name} has shape {d.shape}; expected ({arch.n_params},)")
    s = np.linspace(-T, T, n)

    Xt, yt = _prepare(arch, X, Y, dtype)

    @torch.no_grad()
    def compute(i0, i1):
        i = np.arange(i0, i1)
        rows = torch.as_tensor(theta + s[i // n, None] * d1 + s[i % n, None] * d2, dtype=DTYPES[dtype])
        return deep.loss_batch(arch, rows, Xt, yt).double().numpy()

    flat = yield from evaluate_job(n * n, compute, 1600, threads)
    return Plane(s, s.copy(), flat.reshape(n, n), deep.loss(arch, theta, X, Y))


def losses_per_point(arch: Arch, thetas, X, Y) -> np.ndarray:
    """Reference: one forward per parameter vector (what per-point landscape tools do)."""
    return np.array([deep.loss(arch, th, X, Y) for th in np.asarray(thetas, float)])
