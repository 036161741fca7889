"""Loss-landscape slices and planes (docs/MATH.md B8), evaluated in batches.

Both go through ``slice_kernel``, which uses the θ + t d structure: layer 1 costs two small GEMMs
for every t, and deeper layers one batched GEMM over each point's own weights W + t D. Chunks of a
few hundred points keep activations in cache; never a Python loop over points
(benchmarks/bench_landscape.py measures the speed-up over loss-landscapes and over one forward per
point).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, run_to_completion
from engine.core.runtime import configure_torch_threads
from engine.landscape.directions import gaussian_draws, unit_rows


class _Dtypes(Mapping):
    """ "float64" / "float32" -> the torch dtype, looked up when used (torch loads on first use)."""

    def __getitem__(self, name: str):
        if name not in ("float64", "float32"):
            raise KeyError(name)
        return getattr(torch, name)

    def __iter__(self):
        return iter(("float64", "float32"))

    def __len__(self) -> int:
        return 2


DTYPES = _Dtypes()
# Points per chunk: whole directions of P points. On 2—21—21—1 with 20 samples, 8 directions of
# 101 points were fastest in both dtypes (1–8 swept, interleaved): smaller chunks stay in the
# 512 KiB L2 but pay ~120 µs of torch call overhead each (float32: 2.56 µs a point at 1
# direction, 1.66–1.74 at 6–8).
DEFAULT_CHUNK = {"float64": 808, "float32": 808}
CUDA_CHUNK = 200_000  # on a GPU one launch per layer should cover many directions
# Two Python threads with one torch thread each (torch releases the GIL inside its kernels); two
# OpenMP threads inside each product collapsed 10–60x whenever the machine was busy. Choosing one
# thread when the machine is busy does not pay: with 4 other runnable tasks on the 2 cores, 2
# threads took 1.15–1.46 s against 1.45–2.03 s for 1 (K = 2000, float32), for the same CPU time,
# since dynamic chunking lets a preempted thread's share go to the other.
WORKER_THREADS = min(2, os.cpu_count() or 1)


def random_directions(arch: Arch, theta, K: int, seed: int = 0, normalization: str = "unit") -> np.ndarray:
    """K Gaussian directions ``(K, P)``: unit norm, or per neuron (Li et al. 2018) each neuron's
    incoming block scaled to the norm of the same block of θ. Li et al.'s filter and layer
    normalisations: engine.landscape.directions.directions (the same Gaussian draws), passed in
    as ``directions=``."""
    d = gaussian_draws(K, arch.n_params, seed, "number of directions K =")
    if normalization == "unit":
        return unit_rows(d)
    if normalization == "neuron":
        theta = np.asarray(theta, float)
        for idx in arch.neuron_blocks():
            d[:, idx] *= np.linalg.norm(theta[idx]) / np.linalg.norm(d[:, idx], axis=1, keepdims=True)
        return d
    raise EngineInputError(f"unknown normalization {normalization!r}; choose 'unit' or 'neuron'")


def evaluate_job(
    n_items: int, compute: Callable[[int, int], np.ndarray], chunk: int, threads: int = WORKER_THREADS
) -> Job[np.ndarray]:
    """Run ``compute(i0, i1)`` (losses of items i0..i1, shape (i1 − i0, …)) chunk by chunk, so memory
    stays at one chunk per thread. With ``threads=2`` chunks run on two Python threads, each with one
    torch thread (torch releases the GIL inside its kernels)."""
    configure_torch_threads()
    bounds = [(i, min(i + chunk, n_items)) for i in range(0, n_items, chunk)]
    threads = min(threads, len(bounds))
    parts, done, last = [], 0, time.perf_counter()
    pool = ThreadPoolExecutor(threads) if threads > 1 else None
    try:
        for part in pool.map(lambda b: compute(*b), bounds) if pool else (compute(*b) for b in bounds):
            parts.append(part)
            done += len(part)
            if time.perf_counter() - last > 0.05 or done == n_items:
                last = time.perf_counter()
                yield Progress(done / n_items, f"{done}/{n_items}")
    finally:
        if pool:
            pool.shutdown(cancel_futures=True)
    return np.concatenate(parts)


def check_device(device: str) -> torch.device:
    """ "cpu", or "cuda" when torch sees a GPU; anything else is a clear input error."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise EngineInputError(f"unknown device {device!r}; choose 'cpu' or 'cuda'") from None
    if dev.type not in ("cpu", "cuda"):
        raise EngineInputError(f"device {device!r} is not supported; choose 'cpu' or 'cuda'")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise EngineInputError(f"device {device!r}: this torch ({torch.__version__}) sees no CUDA GPU; use 'cpu'")
    return dev


def blas_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out = a @ b``, batched and broadcast as ``torch.matmul``. On the CPU the product goes
    through numpy's OpenBLAS, which releases the GIL: torch's MKL takes its AVX2 paths on AMD
    CPUs, and there its batched 21×21 @ 21×20 float64 products ran 4× slower (0.65 against
    2.6 ms a chunk of 808 points; a 1500² float64 matmul 49 against 45 GFLOP/s, float32 99
    against 64; benchmarks/bench_landscape.py prints both BLAS's rates)."""
    if out.device.type == "cpu":
        np.matmul(a.numpy(), b.numpy(), out=out.numpy())
    else:
        torch.matmul(a, b, out=out)
    return out


def slice_kernel(
    arch: Arch, theta: torch.Tensor, d: torch.Tensor, t: torch.Tensor, X: torch.Tensor, y: torch.Tensor
) -> Callable[[int, int], torch.Tensor]:
    """Prepare L(θ_k + t_p d_k) over the slice structure; returns ``losses(i0, i1)`` -> (i1 − i0, P)
    for rows i0..i1. ``theta`` and ``d`` are ``(params,)`` or ``(k, params)`` and broadcast
    against each other (a plane is a stack of slices, one base point per row, sharing d). One
    output (paper B's networks).

    Activations are laid out (k, P, N, n), samples by units, so that each point's layer is the
    row-major product a (N, n_{l-1}) @ wᵀ (n_{l-1}, n_l). Layer 1's pre-activation is
    X W1ᵀ + t_p X D1ᵀ: both products are made here, once for every row and every t (biases
    folded in). Hidden layers build each point's own weights wᵀ = Wᵀ + t_p Dᵀ (about one
    activation's worth of numbers) and run one batched GEMM of the network's true size. The
    output layer needs no per-point weights: a (P·N, n) @ [wᵀ | dᵀ] is one tall product per row,
    and f = a wᵀ + t_p a dᵀ. Buffers are kept per thread, so a chunk allocates almost nothing; it
    is ~15 calls, whose ~100 µs (busy machine) is why chunks hold several directions. ``forward``
    returns views of the buffers, valid until the thread's next call.
    """
    theta, d, t, X, y = (a.detach() for a in (theta, d, t, X, y))  # the out= calls below record no graph
    theta, d = theta.reshape(-1, theta.shape[-1]), d.reshape(-1, d.shape[-1])
    P, N, L = t.shape[0], X.shape[0], arch.n_layers
    tt = t[:, None, None]  # against (k, P, rows, cols)
    stacks = []  # per layer: the pair (for θ, for d) sliced by rows, and whether each is per row
    for l in range(1, L + 1):
        blk = arch.block(f"W{l}")
        W, D = (a[:, blk.slice].unflatten(-1, blk.shape) for a in (theta, d))
        b = arch.block(f"b{l}").slice if arch.bias else None
        if l == 1:  # (k|1, 1, N, n1): X Wᵀ + b and X Dᵀ + db
            pair = [(X @ M.mT + (0 if b is None else a[:, None, b]))[:, None] for M, a in ((W, theta), (D, d))]
        elif l < L:  # (k|1, 1, n_{l-1}, n_l), then the bias rows (k|1, 1, 1, n_l)
            pair = [W.mT.contiguous()[:, None], D.mT.contiguous()[:, None]]
            pair += [] if b is None else [theta[:, None, None, b], d[:, None, None, b]]
        else:  # (k, n_{L-1}, 2): [wᵀ | dᵀ], then the bias (k|1, 1)
            pair = [torch.cat(torch.broadcast_tensors(W.mT, D.mT), -1).contiguous()]
            pair += [] if b is None else [theta[:, b], d[:, b]]
        stacks.append([(a, a.shape[0] > 1) for a in pair])
    local = threading.local()  # each thread its own buffers (evaluate_job may run two)

    def buffers(k: int) -> list[torch.Tensor]:
        bufs = getattr(local, "bufs", None)
        if bufs is None or bufs[0].shape[0] < k:
            new = lambda *shape: torch.empty(*shape, dtype=t.dtype, device=t.device)
            n = arch.widths
            bufs = [new(k, P, N, n[1])]
            for l in range(2, L):
                bufs += [new(k, P, n[l - 1], n[l]), new(k, P, N, n[l])]
            bufs.append(new(k, P * N, 2))
            local.bufs = bufs
        return [b[:k] for b in bufs]

    def forward(i0: int, i1: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The outputs (k, P, N) and the last hidden layer's activations (k·P, N, n)."""
        k, bufs = i1 - i0, buffers(i1 - i0)
        first, *hidden, last = ([a[i0:i1] if per_row else a for a, per_row in layer] for layer in stacks)
        a = mlp.sigma_(arch.activation, torch.addcmul(*first, tt, out=bufs[0]))
        for j, (WT, DT, *bias) in enumerate(hidden):
            w, z = bufs[1 + 2 * j], bufs[2 + 2 * j]
            torch.addcmul(WT, DT, tt, out=w)
            blas_matmul(a.view(k * P, N, -1), w.view(k * P, *w.shape[-2:]), z.view(k * P, N, -1))
            if bias:
                z += torch.addcmul(*bias, tt)
            a = mlp.sigma_(arch.activation, z)
        WD, *bias = last
        u = blas_matmul(a.view(k, P * N, -1), WD, bufs[-1]).view(k, P, N, 2)
        f = torch.addcmul(u[..., 0], u[..., 1], t[:, None])
        if bias:
            f += torch.addcmul(*bias, t)[..., None]
        return f, a.view(k * P, N, -1)

    def losses(i0: int, i1: int) -> torch.Tensor:
        return forward(i0, i1)[0].sub_(y).square_().sum(-1)

    losses.forward = forward
    return losses


def slice_losses(
    arch: Arch, theta: torch.Tensor, d: torch.Tensor, t: torch.Tensor, X: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """L(θ_k + t_p d_k) for all rows k and all p -> (k, P) in one go (see ``slice_kernel``)."""
    rows = max(a.reshape(-1, a.shape[-1]).shape[0] for a in (theta, d))
    return slice_kernel(arch, theta, d, t, X, y)(0, rows)


def _curves_job(
    arch: Arch, theta, d, t, X, Y, dtype: str, chunk: int | None, threads: int, device: str
) -> Job[np.ndarray]:
    """``slice_kernel`` over all rows of θ/d (broadcast), chunk by chunk, as float64 numpy (k, P)."""
    if dtype not in DTYPES:
        raise EngineInputError(f"unknown dtype {dtype!r}; choose float64 or float32")
    dev = check_device(device)
    X, Y = mlp.check_data(arch, X, Y)
    as_t = lambda a: torch.as_tensor(np.asarray(a), dtype=DTYPES[dtype], device=dev)
    theta, d = np.atleast_2d(theta), np.atleast_2d(d)
    losses = slice_kernel(arch, as_t(theta), as_t(d), as_t(t), as_t(X), as_t(Y))
    compute = lambda i0, i1: losses(i0, i1).double().cpu().numpy()
    if dev.type == "cuda":  # one stream: Python threads would only queue launches behind each other
        chunk, threads = chunk or CUDA_CHUNK, 1
    per_chunk = max(1, (chunk or DEFAULT_CHUNK[dtype]) // len(t))
    return (yield from evaluate_job(max(len(theta), len(d)), compute, per_chunk, threads))


def loss_rounding(arch: Arch, theta, X, Y, dtype: str) -> float:
    """First-order bound on how far L(θ) computed in ``dtype`` can land from its exact value.

    A dot product of m terms rounds with error ≤ m·ε·Σ|terms| (the standard γ_m bound, also
    covering the rounding of θ + t d itself); σ adds ε·|σ| and passes its input's error on scaled
    by |σ'|; a layer passes its input's error on through |W|. Propagating these magnitudes gives
    each output's error bound E_α, and L = Σ_α r_α² then errs by at most 2 Σ_α |r_α| E_α plus
    N·ε·L for the N-term sum: ε times the terms summed times a loss-sized scale. Taken at θ, where
    the curves meet L*. In float32 it is ~2e-5 of L* at the constructed minimum of
    tests/engine/landscape/test_slices.py, whose curves a fixed 1e-12 all read as dipping below L*.
    """
    eps = torch.finfo(DTYPES[dtype]).eps
    theta, X = mlp.tensors(theta, X)
    Ws, bs = mlp.unpack(arch, theta)
    a = X.T
    err = eps * a.abs()  # the inputs, rounded to dtype
    for l, (W, b) in enumerate(zip(Ws, bs), 1):
        z = W @ a + (0 if b is None else b[:, None])
        terms = W.abs() @ a.abs() + (0 if b is None else b.abs()[:, None])
        err = W.abs() @ err + (W.shape[1] + 1) * eps * terms
        if l < arch.n_layers:
            a = mlp.sigma(arch.activation, z)
            err = mlp.sigma(arch.activation, z, 1).abs() * err + eps * a.abs()
    r = z[0] - torch.as_tensor(mlp.as_targets(Y))
    return float(2 * r.abs() @ err[0] + len(r) * eps * (r @ r))


@dataclass(frozen=True)
class Slices:
    t: np.ndarray  # (P,)
    curves: np.ndarray  # (K, P): L(θ + t d_k)
    envelope: np.ndarray  # (P,): min over directions
    L_star: float  # L(θ), float64
    # min over t ≠ 0 of envelope − L*: ≥ 0 at a minimum (a dip within ``tolerance`` reads 0), < 0 at a saddle
    envelope_gap: float
    frac_below: float  # fraction of curves that dip below L* by more than rounding
    n_below: int  # how many curves dip below L* (of K = len(curves))
    tolerance: float = 0.0  # the rounding allowance those two use (loss_rounding of dtype and float64)
    family: str = ""  # the direction family's name (engine.minima.dip_probability), "" for the default
    predicted: float | None = None  # predicted fraction of dipping curves (dᵀHd < 0), when known
    normalization: str = ""  # how the directions were scaled (engine.minima.pipeline.SliceSettings), "" if not said


def slices_job(
    arch: Arch,
    theta,
    X,
    Y,
    K: int = 5000,
    P: int = 101,
    T: float = 1.0,
    normalization: str = "unit",
    seed: int = 0,
    dtype: str = "float64",
    chunk: int | None = None,
    threads: int = WORKER_THREADS,
    directions: np.ndarray | None = None,
    device: str = "cpu",
) -> Job[Slices]:
    """Curves L(θ + t d) for t ∈ [−T, T] along K random (or given) directions. ``device`` "cuda"
    runs the kernel on a GPU (results come back as numpy)."""
    theta = np.asarray(theta, float)
    if P < 2:
        raise EngineInputError(f"number of points P = {P} must be at least 2")
    d = random_directions(arch, theta, K, seed, normalization) if directions is None else np.asarray(directions, float)
    if d.ndim != 2 or d.shape[1] != arch.n_params:
        raise EngineInputError(f"directions have shape {d.shape}; expected (K, {arch.n_params})")
    t = np.linspace(-T, T, P)
    curves = yield from _curves_job(arch, theta, d, t, X, Y, dtype, chunk, threads, device)
    return summarize(arch, theta, X, Y, t, curves, dtype)


def summarize(arch: Arch, theta, X, Y, t: np.ndarray, curves: np.ndarray, dtype: str) -> Slices:
    """``Slices`` of curves computed in ``dtype`` through θ: L*, the envelope and the dips."""
    L_star = mlp.loss(arch, theta, X, Y)
    envelope = curves.min(0)
    # Every curve is L* at t = 0 only up to rounding (another dtype, another summation order
    # than mlp.loss): only a dip beyond both evaluations' rounding counts.
    tol = loss_rounding(arch, theta, X, Y, dtype) + loss_rounding(arch, theta, X, Y, "float64")
    below = (curves < L_star - tol).any(1)
    gap = float(envelope[t != 0].min() - L_star)  # t = 0 would pin the gap to 0
    return Slices(
        t, curves, envelope, L_star, 0.0 if -tol <= gap < 0 else gap, float(below.mean()), int(below.sum()), tol
    )


@dataclass(frozen=True, eq=False)
class LambdaSlices:
    """Slices through θ(λ) = θ(λ₀) + (λ − λ₀) e along fixed directions, for any λ, from one pass.

    A split's λ moves only its pair's outgoing weights (engine.minima.construction.set_split_lambda).
    When the pair sits in the last hidden layer those are output weights, so along every slice
    the network's (one) output is affine in λ: f(λ) = f(λ₀) + (λ − λ₀) w δ, with w the pair's
    total outgoing weight and δ = a_new − a_origin their activations' difference. Keeping f(λ₀) and δ
    (one slice pass) makes each λ cost O(K·P·N) instead of a forward pass: the λ drag's preview.
    """

    arch: Arch
    theta: np.ndarray  # θ(λ₀)
    e: np.ndarray  # dθ/dλ
    lam0: float
    t: np.ndarray
    outputs: np.ndarray  # (K, P, N): f(λ₀) on every slice, in dtype
    delta: np.ndarray  # (K, P, N): a_new − a_origin
    total: float  # w
    X: np.ndarray
    Y: np.ndarray
    dtype: str

    def slices(self, lam: float, theta=None) -> Slices:
        """The slices at ``lam``; ``theta``: θ(λ) as the caller computes it (L* and the rounding
        allowance are taken there), by default θ(λ₀) + (λ − λ₀) e."""
        step = self.outputs.dtype.type((lam - self.lam0) * self.total)
        residual = self.outputs + step * self.delta - self.Y.astype(self.outputs.dtype)
        curves = np.square(residual).sum(-1).astype(float)
        theta = self.theta + (lam - self.lam0) * self.e if theta is None else theta
        return summarize(self.arch, theta, self.X, self.Y, self.t, curves, self.dtype)


def lambda_slices_job(
    arch: Arch,
    theta,
    e,
    lam0: float,
    pair: tuple[int, int],
    X,
    Y,
    directions: np.ndarray,
    P: int,
    T: float = 1.0,
    dtype: str = "float32",
    threads: int = WORKER_THREADS,
) -> Job[LambdaSlices]:
    """One slice pass through θ(λ₀) keeping what ``LambdaSlices`` needs; ``pair`` = (new, origin)
    indices in the last hidden layer, ``e`` = dθ/dλ (the pair's total outgoing weight w sits in
    e at the new neuron's output weight)."""
    if dtype not in DTYPES:
        raise EngineInputError(f"unknown dtype {dtype!r}; choose float64 or float32")
    out = arch.block(f"W{arch.n_layers}")
    total = float(np.asarray(e, float)[out.slice].reshape(out.shape)[0, pair[0]])
    X, Y = mlp.check_data(arch, X, Y)
    as_t = lambda a: torch.as_tensor(np.asarray(a), dtype=DTYPES[dtype])
    t = np.linspace(-T, T, P)
    forward = slice_kernel(arch, as_t(np.atleast_2d(theta)), as_t(directions), as_t(t), as_t(X), as_t(Y)).forward
    new, origin = pair

    def compute(i0, i1):  # (k, P, 2, N): the outputs and δ, one array per chunk
        f, a = forward(i0, i1)
        delta = (a[..., new] - a[..., origin]).view(f.shape)
        return torch.stack([f, delta], dim=2).numpy()

    per_chunk = max(1, DEFAULT_CHUNK[dtype] // P)
    parts = yield from evaluate_job(len(directions), compute, per_chunk, threads)
    return LambdaSlices(
        arch,
        np.asarray(theta, float),
        np.asarray(e, float),
        float(lam0),
        t,
        np.ascontiguousarray(parts[:, :, 0]),
        np.ascontiguousarray(parts[:, :, 1]),
        float(total),
        X,
        Y,
        dtype,
    )


def preview_slices(
    arch: Arch,
    theta,
    X,
    Y,
    directions: np.ndarray,
    P: int = 21,
    T: float = 1.0,
    dtype: str = "float32",
    threads: int = WORKER_THREADS,
    device: str = "cpu",
) -> Slices:
    """The λ slider's live preview: the same directions at a coarse t grid in float32, blocking
    (K = 5000, P = 21 on 2—21—21—1: see benchmarks/bench_landscape.py); refine with slices_job
    on release."""
    return run_to_completion(
        slices_job(arch, theta, X, Y, P=P, T=T, dtype=dtype, threads=threads, directions=directions, device=device)
    )


@dataclass(frozen=True)
class Plane:
    s: np.ndarray  # (n,) coordinate along d1
    t: np.ndarray  # (n,) coordinate along d2
    losses: np.ndarray  # (n, n): losses[i, j] = L(θ + s_i d1 + t_j d2)
    L_star: float
    labels: tuple = ()  # what d1 and d2 are, for the axes; () when the caller knows


def plane_job(
    arch: Arch,
    theta,
    X,
    Y,
    d1,
    d2,
    n: int = 51,
    T: float = 1.0,
    dtype: str = "float64",
    threads: int = WORKER_THREADS,
    device: str = "cpu",
) -> Job[Plane]:
    """Row i is the slice through θ + s_i d1 along d2, so the plane reuses ``slice_kernel``."""
    theta, d1, d2 = (np.asarray(a, float) for a in (theta, d1, d2))
    for name, d in (("d1", d1), ("d2", d2)):
        if d.shape != theta.shape:
            raise EngineInputError(f"direction {name} has shape {d.shape}; expected ({arch.n_params},)")
    s = np.linspace(-T, T, n)
    losses = yield from _curves_job(arch, theta + s[:, None] * d1, d2, s, X, Y, dtype, None, threads, device)
    return Plane(s, s.copy(), losses, mlp.loss(arch, theta, X, Y))


def losses_per_point(arch: Arch, thetas, X, Y, dtype: str = "float64") -> np.ndarray:
    """Reference: one forward per parameter vector (what per-point landscape tools do)."""
    Xt, yt = mlp.tensors(X, mlp.as_targets(Y), dtype=DTYPES[dtype])
    with torch.no_grad():
        return np.array(
            [
                float(mlp.loss_t(arch, torch.as_tensor(th, dtype=DTYPES[dtype]), Xt, yt))
                for th in np.asarray(thetas, float)
            ]
        )
