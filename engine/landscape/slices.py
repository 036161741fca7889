"""Loss-landscape slices (docs/MATH.md B8), evaluated in batches.

They go through ``slice_kernel``, which uses the θ + t d structure: layer 1 costs two small GEMMs
for every t, and deeper layers one batched GEMM over each point's own weights W + t D. Chunks of a
few hundred points keep activations in cache; never a Python loop over points
(benchmarks/bench_landscape.py measures the speed-up over loss-landscapes and over one forward per
point).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.lazy import torch
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, run_to_completion
from engine.core.runtime import configure_torch_threads
from engine.landscape.compute import DTYPES, WORKER_THREADS, check_device
from engine.landscape.directions import gaussian_draws, unit_rows

# Points per chunk: whole directions of P points, about 8 of them in float64 and twice that in
# float32, where the K = 5000 workload on 2—21—21—1 was fastest (benchmarks/README.md). Smaller
# chunks pay the fixed cost of a chunk's calls more often; larger ones leave the cache.
DEFAULT_CHUNK = {"float64": 808, "float32": 1616}
CUDA_CHUNK = 200_000  # on a GPU one launch per layer should cover many directions


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
    torch thread (torch releases the GIL inside its kernels): each takes the next chunk as it
    finishes one (a thread the scheduler holds back leaves its share to the other) and keeps what
    it computed, and the job's thread only wakes at its reporting interval to report. A future per
    chunk, with this thread woken to collect each, lost a share of the two threads' speed-up against
    the same chunks split in two (benchmarks/bench_landscape.py; benchmarks/README.md)."""
    configure_torch_threads()
    bounds = [(i, min(i + chunk, n_items)) for i in range(0, n_items, chunk)]
    parts: list = [None] * len(bounds)
    threads = min(threads, len(bounds))
    if threads <= 1:
        last = time.perf_counter()
        for i, b in enumerate(bounds):
            parts[i] = compute(*b)
            if time.perf_counter() - last > 0.05 or i == len(bounds) - 1:
                last = time.perf_counter()
                yield Progress(b[1] / n_items, f"{b[1]}/{n_items}")
        return np.concatenate(parts)
    queue, done_items, stop, errors = iter(range(len(bounds))), [0] * threads, threading.Event(), []

    def work(me: int) -> None:
        try:
            for i in queue:  # next() on a range iterator is atomic under the GIL
                if stop.is_set():
                    return
                parts[i] = compute(*bounds[i])
                done_items[me] += bounds[i][1] - bounds[i][0]
        except BaseException as error:  # re-raised in the job's thread below
            errors.append(error)
            stop.set()

    workers = [threading.Thread(target=work, args=(k,), name=f"engine-chunks-{k}", daemon=True) for k in range(threads)]
    for worker in workers:
        worker.start()
    try:
        while True:
            alive = [worker for worker in workers if worker.is_alive()]
            if alive:
                alive[0].join(0.05)
            done = sum(done_items)
            yield Progress(done / n_items, f"{done}/{n_items}")
            if not alive:
                break
    finally:  # also on a cancel (the job closed): no new chunk starts, the ones running end
        stop.set()
        for worker in workers:
            worker.join()
    if errors:
        raise errors[0]
    return np.concatenate(parts)


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
    and f = a wᵀ + t_p a dᵀ. What is beyond the floor (the activations and these products alone,
    benchmarks/bench_landscape.py) is those two passes, a chunk's Python and the loss: each
    thread keeps a plan per chunk size (``_Plan``: its buffers, their views and its products
    bound to them), so a chunk allocates nothing and makes ~12 calls. ``forward`` returns views
    of the plan's buffers, valid until the thread's next call.
    """
    theta, d, t, X, y = (a.detach() for a in (theta, d, t, X, y))  # the out= calls below record no graph
    theta, d = theta.reshape(-1, theta.shape[-1]), d.reshape(-1, d.shape[-1])
    L = arch.n_layers
    stacks = []  # per layer: the pair (for θ, for d) sliced by rows, and whether each is per row
    for l in range(1, L + 1):
        blk = arch.block(f"W{l}")
        W, D = (a[:, blk.slice].unflatten(-1, blk.shape) for a in (theta, d))
        b = arch.block(f"b{l}").slice if arch.bias else None
        if l == 1:  # (k|1, 1, N, n1): X Wᵀ + b and X Dᵀ + db
            pair = [(X @ M.mT + (0 if b is None else a[:, None, b]))[:, None] for M, a in ((W, theta), (D, d))]
        elif l < L:  # (k|1, 1, n_{l-1}, n_l), then the bias rows (k|1, 1, 1, n_l)
            pair = [transposed(W)[:, None], transposed(D)[:, None]]
            pair += [] if b is None else [theta[:, None, None, b], d[:, None, None, b]]
        else:  # (k, n_{L-1}, 2): [wᵀ | dᵀ], then the bias (k|1, 1)
            pair = [torch.cat(torch.broadcast_tensors(W.mT, D.mT), -1).contiguous()]
            pair += [] if b is None else [theta[:, b], d[:, b]]
        stacks.append([(a, a.shape[0] > 1) for a in pair])
    local = threading.local()  # each thread its own plans (evaluate_job may run two)
    activation = mlp.sigma_(arch.activation)
    tt, tcol = t[:, None, None], t[:, None]  # against (k, P, rows, cols) and (k, P, N)

    def plan(k: int) -> _Plan:
        plans = local.__dict__.setdefault("plans", {})
        if k not in plans:  # a short last chunk takes the first rows of a larger plan's buffers
            larger = [p for p in plans.values() if p.k > k]
            plans[k] = _Plan(arch, k, len(t), len(X), t.dtype, t.device, larger[0] if larger else None)
        return plans[k]

    def forward(i0: int, i1: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The outputs (k, P, N) and the last hidden layer's activations (k·P, N, n)."""
        run = plan(i1 - i0)
        first, *hidden, last = ([a[i0:i1] if per_row else a for a, per_row in layer] for layer in stacks)
        activation(torch.addcmul(*first, tt, out=run.a1))
        for (w, z, product), (WT, DT, *bias) in zip(run.hidden, hidden):
            torch.addcmul(WT, DT, tt, out=w)
            product()
            if bias:
                z += torch.addcmul(*bias, tt)
            activation(z)
        WD, *bias = last
        run.output(WD)
        f = torch.addcmul(*run.u, tcol, out=run.f)
        if bias:
            f += torch.addcmul(*bias, t)[..., None]
        return f, run.last

    def losses(i0: int, i1: int) -> torch.Tensor:
        return squared_errors(forward(i0, i1)[0], y)

    losses.forward = forward
    return losses


class _Plan:
    """One thread's buffers for chunks of k rows, with the views and products bound to them once:
    a chunk then makes no views and parses no shapes. On the CPU the products go through numpy's
    BLAS (``blas_matmul``), here as numpy views of the same memory. ``within``: a plan for more
    rows, whose buffers' first k rows this one uses (no second set of buffers)."""

    def __init__(self, arch: Arch, k: int, P: int, N: int, dtype, device, within: _Plan | None = None):
        self.k, self.buffers = k, {}

        def new(name: str, *shape: int) -> torch.Tensor:
            whole = within.buffers[name][:k] if within else torch.empty(k, *shape, dtype=dtype, device=device)
            self.buffers[name] = whole
            return whole

        rows = lambda a: a.view(k * P, *a.shape[-2:])  # one matrix per point
        n = arch.widths
        self.a1 = a = new("a1", P, N, n[1])
        self.hidden = []  # per hidden product: (per-point weights, output, product)
        for l in range(2, arch.n_layers):
            w, z = new(f"w{l}", P, n[l - 1], n[l]), new(f"z{l}", P, N, n[l])
            self.hidden.append((w, z, _bound_matmul(rows(a), rows(w), rows(z))))
            a = z
        self.last = rows(a)  # (k·P, N, n): the activations the output layer reads
        u = new("u", P, N, 2)  # a [wᵀ | dᵀ]
        self.u = u[..., 0], u[..., 1]
        self.f = new("f", P, N)
        tall, u = a.view(k, P * N, -1), u.view(k, P * N, 2)
        if device.type == "cpu":
            tall_np, u_np = tall.numpy(), u.numpy()
            self.output = lambda WD: np.matmul(tall_np, WD.numpy(), out=u_np)
        else:
            self.output = lambda WD: torch.matmul(tall, WD, out=u)


def squared_errors(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Σ (f − y)² over the last axis, overwriting ``f`` (a plan's buffer): in place, with no
    temporary. ``linalg.vecdot`` multiplied into a fresh tensor and cost the float64 reference
    workload more than twice the CPU time, the subtraction included (benchmarks/bench_landscape.py)."""
    return torch.sum(f.sub_(y).square_(), -1)


def transposed(a: torch.Tensor) -> torch.Tensor:
    """``a.mT``, contiguous. On the CPU numpy makes the copy, several times faster than torch on
    paper B's many small blocks."""
    if a.device.type == "cpu":
        return torch.from_numpy(np.ascontiguousarray(a.mT.numpy()))
    return a.mT.contiguous()


def _bound_matmul(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> Callable[[], object]:
    """``blas_matmul(a, b, out)`` with its arguments bound: numpy views made once on the CPU."""
    if out.device.type == "cpu":
        a, b, out = a.numpy(), b.numpy(), out.numpy()
        return lambda: np.matmul(a, b, out=out)
    return lambda: torch.matmul(a, b, out=out)


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
